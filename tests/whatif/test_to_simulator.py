"""The canonical-table → simulator converter and the cluster-shape reader."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit.job_table import conform
from audit.whatif.to_simulator import to_cluster, to_jobs
from simulator import Cluster, Pool

GB = 1024**3


def table():
    t = pd.Timestamp("2024-01-01", tz="UTC")
    s = pd.Timedelta(seconds=1)
    return conform(pd.DataFrame({
        "job_id": ["12", "10", "11", "13"],
        "job_id_raw": ["12", "10", "11", "13"],
        "user": ["u", "v", None, "w"],
        "account": ["org/a", "org/b", "org/a", "org/b"],
        "submit_time": [t + 5 * s, t + 5 * s, t, t + 9 * s],
        "start_time": [t + 7 * s, t + 6 * s, t + 3 * s, pd.NaT],
        "elapsed_s": [100, 50, 10, None],
        "time_limit_s": [200, None, 60, 10],
        "req_nodes": [2, 1, None, 1],
        "req_cpus": [8, 3, 2, 1],
        "req_mem_bytes": [16 * GB, GB, None, GB],
        "req_gpus": [4, 0, None, 0],
        "mem_peak_bytes": [10 * GB, None, None, None],
        "cpu_used_s": [400.0, None, 20.0, None],
    }))


def test_to_jobs_per_node_requests_and_order():
    out = to_jobs(table())
    j = out.jobs
    assert out.dropped == {"no_submit_time": 0, "no_run_time": 1, "unknown_cpus": 0}
    assert j["id"].tolist() == [11, 10, 12]  # submit time, then job number
    assert j["submit"].tolist() == [0.0, 5.0, 5.0]
    assert j["logged_start"].tolist() == [3.0, 6.0, 7.0]
    row = 2  # job 12: 2 nodes, 8 CPUs, 16 GiB, 4 GPUs in total
    assert (j["nodes"][row], j["cpus"][row], j["mem"][row], j["gpus"][row]) == (2, 4, 8 * GB, 2)
    assert j["mem_peak"][row] == 5 * GB
    assert j["cpu_util"][row] == pytest.approx(400 / (100 * 8))
    assert math.isinf(j["limit"][1]) and j["estimate"][1] == 50.0  # no limit: the scheduler sees the run
    assert j["estimate"][0] == 60.0
    assert j["user"].tolist() == ["", "v", "u"]


def test_to_jobs_pool_drops_wide_jobs_and_ignores_memory():
    out = to_jobs(table(), procs=4)
    assert out.dropped["wider_than_pool"] == 1
    assert out.jobs["id"].tolist() == [11, 10]
    assert (out.jobs["mem"] == 0).all() and (out.jobs["nodes"] == 1).all()


def test_swf_jobs_with_unknown_processors_are_dropped_and_counted(tmp_path):
    """SWF fields 5 (allocated) and 8 (requested processors) both -1: the job cannot be replayed."""
    from audit.readers.swf import read_swf

    path = tmp_path / "t.swf"
    path.write_text(
        "; MaxProcs: 8\n"
        "1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 5 0 10 -1 -1 -1 -1 20 -1 1 1 1 -1 -1 -1 -1 -1\n"   # processors unknown
        "3 6 0 10 -1 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n"    # requested known: kept
        "4 7 0 10 16 -1 -1 16 20 -1 1 1 1 -1 -1 -1 -1 -1\n"   # wider than the pool
    )
    out = to_jobs(read_swf(path).jobs, procs=8)
    assert out.dropped == {"no_submit_time": 0, "no_run_time": 0, "unknown_cpus": 1, "wider_than_pool": 1}
    assert out.jobs["id"].tolist() == [1, 3]
    assert out.jobs["cpus"].tolist() == [4, 2]
    assert to_jobs(read_swf(path).jobs).dropped["unknown_cpus"] == 1


def test_to_cluster_from_toml(tmp_path):
    spec = tmp_path / "c.toml"
    spec.write_text("""
[[node_groups]]
name = "cpu"
count = 10
cpus = 64
mem_bytes = 274877906944
nodes_per_switch = 5

[[node_groups]]
name = "gpu"
count = 2
cpus = 32
mem_bytes = 549755813888
gpus = 8
gpu_type = "a100"
gpu_mem_bytes = 85899345920
switch = "ib1"

[[partitions]]
name = "gpu"
groups = ["gpu"]
""")
    c = to_cluster(spec)
    assert isinstance(c, Cluster)
    assert c.capacity() == {"cpus": 10 * 64 + 2 * 32, "mem_bytes": 10 * 256 * GB + 2 * 512 * GB, "gpus": 16}
    assert c.partitions[0].groups == ("gpu",)
    assert to_cluster({"procs": 100}) == Pool(100)


def test_to_cluster_errors_name_the_entry():
    with pytest.raises(ValueError, match=r"spec: node_groups\[1\]: missing 'cpus'"):
        to_cluster({"node_groups": [{"name": "a", "count": 1, "cpus": 1}, {"name": "b", "count": 1}]},
                   source="spec")
    with pytest.raises(ValueError, match="unknown node groups"):
        to_cluster({"node_groups": [{"name": "a", "count": 1, "cpus": 1}],
                    "partitions": [{"name": "p", "groups": ["zz"]}]})
    with pytest.raises(ValueError, match="unknown keys"):
        to_cluster({"node_groups": [{"name": "a", "count": 1, "cpus": 1, "cores": 2}]})


def test_converted_jobs_run():
    from simulator import FIFO, Simulator

    out = to_jobs(table())
    cluster = to_cluster({"node_groups": [{"name": "n", "count": 2, "cpus": 8, "mem_bytes": 32 * GB, "gpus": 4}]})
    r = Simulator(cluster, FIFO()).run(out.jobs)
    assert (r.state == "COMPLETED").all()
    assert np.array_equal(r.id, out.jobs["id"])


def test_logged_overrun_keeps_its_estimate_and_is_not_killed_again():
    t = table()
    t.loc[2, "elapsed_s"] = 90  # job 11 ran 90 s against a 60 s limit (a logged TIMEOUT)
    j = to_jobs(t).jobs
    assert (j["estimate"][0], j["limit"][0], j["run"][0]) == (60.0, 90.0, 90.0)


def pods(cpus, gpus, run=100, nodes=None):
    """Alibaba-like pods (the canonical table keeps their exact shares), all submitted at T0."""
    t = pd.Timestamp("2024-01-01", tz="UTC")
    n = len(cpus)
    return conform(pd.DataFrame({
        "job_id": [str(k + 1) for k in range(n)], "job_id_raw": [str(k + 1) for k in range(n)], "user": "u",
        "account": "a", "submit_time": [t] * n, "start_time": [t] * n, "elapsed_s": [run] * n,
        "time_limit_s": 3600, "req_nodes": nodes or [1] * n, "req_cpus": cpus, "req_gpus": gpus,
        "alloc_gpus": gpus, "req_mem_bytes": [GB] * n,
    }))


def test_fractional_requests_are_counted_in_millis():
    # issue 14: the table keeps 3.152 CPUs and 0.46 GPU; the replay asks 3152 millicores and 460 milli-GPUs.
    # A 2-node job of 6.5 CPUs and 1.5 GPUs asks 6500 / 2 = 3250 millicores and 1500 / 2 = 750 milli-GPUs a node
    tab = pods([3.152, 6.5], [0.46, 1.5], nodes=[1, 2])
    assert tab["req_cpus"].tolist() == [3.152, 6.5]
    j = to_jobs(tab).jobs
    assert (j.cpu_unit, j.gpu_unit) == (1000, 1000)
    assert j["cpus"].tolist() == [3152, 3250] and j["gpus"].tolist() == [460, 750]
    # a pod of 1.5 GPUs on one node takes two whole devices
    assert to_jobs(pods([1.0], [1.5])).jobs["gpus"].tolist() == [2000]


def test_alibaba_like_pods_give_the_exact_millis():
    # 3152m CPU, 0.46 GPU; 88m CPU and no GPU; 2 CPUs and a whole GPU (whole units, now in millis)
    j = to_jobs(pods([3.152, 0.088, 2.0], [0.46, 0.0, 1.0])).jobs
    assert j["cpus"].tolist() == [3152, 88, 2000] and j["gpus"].tolist() == [460, 0, 1000]


def test_whole_requests_stay_whole_units():
    j = to_jobs(table()).jobs
    assert (j.cpu_unit, j.gpu_unit) == (1, 1)
    # fractional CPUs but whole GPUs: only CPUs go to millis
    j = to_jobs(pods([0.5, 4.0], [0.0, 2.0])).jobs
    assert (j.cpu_unit, j.gpu_unit) == (1000, 1) and j["cpus"].tolist() == [500, 4000] and j["gpus"].tolist() == [0, 2]


def test_whole_totals_keep_whole_units_per_node_in_millis():
    # 5 CPUs on 2 nodes stay ceil(5 / 2) = 3 CPUs a node, as on whole counts; 3 GPUs on 2 nodes 2 a node;
    # the 0.5 CPU pod puts the table in millicores and the 0.25 GPU pod in milli-GPUs
    j = to_jobs(pods([5.0, 0.5], [3.0, 0.25], nodes=[2, 1])).jobs
    assert j["cpus"].tolist() == [3000, 500] and j["gpus"].tolist() == [2000, 250]


def test_shared_gpu_pods_replay_packed_on_one_device():
    # one node with one GPU: 0.46 + 0.46 share the device from 0; 0.5 waits until both end at 100
    cluster = to_cluster({"node_groups": [{"name": "n", "count": 1, "cpus": 8, "mem_bytes": 32 * GB, "gpus": 1}]})
    from simulator import EASY, Simulator, metrics

    r = Simulator(cluster, EASY()).run(to_jobs(pods([0.75, 0.75, 0.75], [0.46, 0.46, 0.5])).jobs)
    assert r.start.tolist() == [0.0, 0.0, 100.0]
    m = metrics(r)
    assert m["gpu_hours_held"] == pytest.approx(1.42 * 100 / 3600)
    assert m["core_hours_held"] == pytest.approx(3 * 0.75 * 100 / 3600)


def test_four_three_quarter_cpu_pods_share_a_three_cpu_node():
    # 4 × 0.75 = 3 CPUs run at once; the fifth starts at 100 (rounded up to whole CPUs only 3 would fit)
    cluster = to_cluster({"node_groups": [{"name": "n", "count": 1, "cpus": 3, "mem_bytes": 32 * GB}]})
    from simulator import EASY, Simulator

    r = Simulator(cluster, EASY()).run(to_jobs(pods([0.75] * 5, [0.0] * 5)).jobs)
    assert r.start.tolist() == [0.0, 0.0, 0.0, 0.0, 100.0]


ALIBABA = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "k8s" / "alibaba-gpu-2023"


@pytest.mark.skipif(not (ALIBABA / "openb_pod_list_default.csv").exists(), reason="../shared/traces absent")
def test_the_alibaba_pod_list_replays_holding_exactly_the_shares_it_asked():
    # every pod with a run time fits the node list at once (no wait), so the replay holds each pod's exact
    # share for its run: the GPU-hours and core-hours held are the table's request × elapsed summed
    from audit.node_table import shape_dict
    from audit.readers.alibaba import read_alibaba_nodes, read_alibaba_pods
    from simulator import EASY, Simulator, metrics

    pods = read_alibaba_pods(ALIBABA / "openb_pod_list_default.csv").jobs
    nodes = read_alibaba_nodes(ALIBABA / "openb_node_list_all_node.csv").nodes
    out = to_jobs(pods)
    assert (out.jobs.cpu_unit, out.jobs.gpu_unit) == (1000, 1000)
    m = metrics(Simulator(to_cluster(shape_dict(nodes)), EASY()).run(out.jobs))
    ran = pods["elapsed_s"].notna()
    hours = pods["elapsed_s"][ran].astype(float) / 3600
    assert m["jobs_started"] == ran.sum() and m["mean_wait_s"] == 0.0
    assert m["gpu_hours_held"] == pytest.approx(float((pods["req_gpus"][ran].astype(float) * hours).sum()), rel=1e-9)
    assert m["core_hours_held"] == pytest.approx(float((pods["req_cpus"][ran].astype(float) * hours).sum()), rel=1e-9)
