"""Where the oracle's capacity went, worked by hand on a month of two pools: each pool's gap is counted in its
own binding resource, and the causes add up to the node gap."""

import numpy as np
import pandas as pd
import pytest

from audit.job_table import conform
from audit.whatif.gap import gap_of
from audit.whatif.month import build_month
from audit.whatif.replays import Setting
from audit.whatif.scenarios import Scenario
from simulator import Cluster, NodeGroup, Partition

GB = 1024**3
T0 = pd.Timestamp("2026-10-05", tz="UTC")
RUN = 360_000  # 100 h: each job runs the whole month

# pool "c": 2 nodes of 4 cores and 8 GiB; pool "b": 2 nodes of 4 cores and 64 GiB
CLUSTER = Cluster(groups=(NodeGroup("c", 2, cpus=4, mem_bytes=8 * GB), NodeGroup("b", 2, cpus=4, mem_bytes=64 * GB)),
                  partitions=(Partition("cpu", ("c",)), Partition("big", ("b",))))


def month():
    # job 1 (cpu): asks 4 cores and 8 GiB, peaks at 2 GiB, keeps its 4 cores busy; the scenario gives it 5 GiB
    # job 2 (big): asks 4 cores and 64 GiB, peaks at 64 GiB, keeps 1 core busy; the scenario gives it 2 cores
    rows = [(1, "cpu", 4, 8, 2, 4 * RUN), (2, "big", 4, 64, 64, RUN)]
    t = conform(pd.DataFrame({
        "job_id": [str(r[0]) for r in rows], "job_id_raw": [str(r[0]) for r in rows], "user": "u", "account": "a",
        "partition": [r[1] for r in rows], "state": "COMPLETED", "submit_time": T0, "start_time": T0,
        "end_time": T0 + pd.Timedelta(seconds=RUN), "elapsed_s": RUN, "time_limit_s": 2 * RUN, "req_nodes": 1,
        "alloc_nodes": 1, "req_cpus": [r[2] for r in rows], "alloc_cpus": [r[2] for r in rows],
        "req_mem_bytes": [r[3] * GB for r in rows], "alloc_mem_bytes": [r[3] * GB for r in rows], "req_gpus": 0,
        "alloc_gpus": 0, "mem_peak_bytes": [r[4] * GB for r in rows], "cpu_used_s": [float(r[5]) for r in rows]}))
    preds = {0.9: {"memory": np.array([5 * GB, np.nan]), "cpus": np.array([np.nan, 2.0])}}
    # job 1's memory was predicted from its history; job 2 is a cold start
    history = {"memory": [True, False], "cpus": [False, False]}
    m, _ = build_month(t, CLUSTER, preds, history=history)
    assert m.cpus.tolist() == [4, 4] and m.mem.tolist() == [8 * GB, 64 * GB]
    return Setting(month=m, cluster=CLUSTER)


def test_each_pool_is_counted_in_its_own_binding_resource():
    setting = month()
    pools = {"+".join(names): k for k, names in enumerate(CLUSTER.pools())}
    cpu, big = pools["c"], pools["b"]
    s = Scenario("rightsized", level=0.9)
    capacity = {"oracle": {"nodes_total": 4, "nodes_recovered": 2, "recovered_by_group": {"c": 1, "b": 1}},
                s.name: {"nodes_total": 4, "nodes_recovered": 1, "recovered_by_group": {"c": 0, "b": 1}}}
    pools_full = {"oracle": {cpu: {"lost_mem_gib_hours": 0.0}, big: {"lost_cpu_hours": 0.0}},
                  s.name: {cpu: {"lost_mem_gib_hours": 60.0}, big: {"lost_cpu_hours": 0.0}}}
    gap = gap_of(s, setting, {}, capacity, setting.month.history, pools_full, [cpu, big])
    rows = {r["pool"]: r for r in gap["by_pool"]}
    # pool c: the oracle cuts job 1's memory by 6 GiB over 100 h = 600 GiB-h, 600 / (8 GiB x 100 h) = 0.75 of a
    # node's worth, and no core: memory binds.  1 node recovered for 0.75: 4/3 nodes per node's worth, so a node
    # is 8 x 100 / (4/3) = 600 GiB-h.  The scenario holds 3 GiB more than the oracle over 100 h, from a history:
    # 300 / 600 = 0.5 of a node to the spread; 60 GiB-h lost to kills, 0.1; the rest of the 1-node gap, 0.4.
    c = rows["c"]
    assert (c["binding_resource"], c["oracle_nodes_recovered"], c["nodes_recovered"]) == ("memory", 1, 0)
    assert c["oracle_nodes_worth"] == pytest.approx(0.75) and c["nodes_per_node_worth"] == pytest.approx(4 / 3)
    assert (c["no_history"], c["prediction_spread"]) == (0.0, pytest.approx(0.5))
    assert (c["kills_reruns"], c["service_rule"]) == (pytest.approx(0.1), pytest.approx(0.4))
    # pool b: the oracle cuts job 2's cores from 4 to 1, 300 core-h = 0.75 of a node's 400, and no memory: cores
    # bind.  Both recover its node; the scenario's 2 cores hold 100 core-h more, for a cold start: 100 / 300 =
    # 1/3 of a node to no history, and -1/3 to the service rule, since the gap is 0.
    b = rows["b"]
    assert (b["binding_resource"], b["nodes_gap"]) == ("cores", 0)
    assert (b["no_history"], b["prediction_spread"]) == (pytest.approx(1 / 3), 0.0)
    assert b["service_rule"] == pytest.approx(-1 / 3)
    # the cluster's causes are the sums; counted over the whole cluster, cores would bind (0.75 of an average
    # node's worth against memory's 600 / (36 GiB x 100 h) = 0.17) and job 1's memory would count for nothing
    causes = {r["cause"]: r["nodes"] for r in gap["by_cause"]}
    assert causes == {"no_history": pytest.approx(1 / 3), "prediction_spread": pytest.approx(0.5),
                      "kills_reruns": pytest.approx(0.1), "service_rule": pytest.approx(0.4 - 1 / 3)}
    assert sum(causes.values()) == pytest.approx(gap["nodes_gap"]) and gap["nodes_gap"] == 1
