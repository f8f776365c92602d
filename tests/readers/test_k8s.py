"""Kubernetes pods and nodes dumps: hand-built ``kubectl get … -o json`` fixtures with hand-computed rows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.cluster_shape import toml_text
from audit.job_table import STATES
from audit.kubernetes import parse_quantity
from audit.node_table import shape_dict
from audit.readers.detect import detect_format
from audit.readers.k8s.nodes import read_k8s_nodes
from audit.readers.k8s.pods import read_k8s_pods
from tests.profiles import examples

GiB = 2**30


def container(name, requests=None, limits=None, **kw):
    c = {"name": name, "image": f"registry.example.org/{name}:1.0", "resources": {}}
    if requests:
        c["resources"]["requests"] = requests
    if limits:
        c["resources"]["limits"] = limits
    c.update(kw)
    return c


def terminated(reason, code, start, end):
    return {"terminated": {"reason": reason, "exitCode": code, "startedAt": start, "finishedAt": end,
                           "containerID": "containerd://abc"}}


def pod(name, ns="ml-team", *, phase="Succeeded", node="gpu-node-1", containers=None, init=None, created=None,
        started=None, statuses=None, owner=None, labels=None, selector=None, reason=None, conditions=None,
        uid=None, qos="Burstable"):
    meta = {"name": name, "namespace": ns, "uid": uid or f"uid-{name}", "creationTimestamp": created or
            "2025-03-01T10:00:00Z", "labels": labels or {}, "resourceVersion": "123"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": owner[0], "name": owner[1], "uid": "o-1",
                                    "controller": True, "blockOwnerDeletion": True}]
    spec = {"containers": containers or [container("main", {"cpu": "1", "memory": "1Gi"})],
            "serviceAccountName": "default", "restartPolicy": "OnFailure", "schedulerName": "default-scheduler"}
    if node:
        spec["nodeName"] = node
    if init:
        spec["initContainers"] = init
    if selector:
        spec["nodeSelector"] = selector
    status = {"phase": phase, "qosClass": qos, "hostIP": "10.0.0.5", "podIP": "10.1.2.3"}
    if started:
        status["startTime"] = started
    if statuses is not None:
        status["containerStatuses"] = statuses
    if reason:
        status["reason"] = reason
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def status(name, state, restarts=0, last=None):
    s = {"name": name, "ready": False, "restartCount": restarts, "image": "x", "imageID": "y", "state": state}
    s["lastState"] = last or {}
    return s


def pods_list(items):
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def build_pods():
    t0, t1, t2 = "2025-03-01T10:01:00Z", "2025-03-01T11:01:00Z", "2025-03-01T12:01:00Z"
    gpu = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}
    return [
        # 1: a training pod holding 2 GPUs for one hour
        pod("train-a", containers=[container("trainer", gpu, {"memory": "64Gi", "nvidia.com/gpu": "2"})],
            started=t0, statuses=[status("trainer", terminated("Completed", 0, t0, t1))],
            selector={"cloud.google.com/gke-nodepool": "a100-pool"}),
        # 2: OOMKilled once, restarted, then completed
        pod("etl-b", ns="data", node="cpu-node-1", started=t0,
            containers=[container("etl", {"cpu": "500m", "memory": "2Gi"}, {"memory": "2Gi"})],
            init=[container("fetch", {"cpu": "2", "memory": "512Mi"})],
            statuses=[status("etl", terminated("Completed", 0, "2025-03-01T10:20:00Z", t1), restarts=1,
                             last=terminated("OOMKilled", 137, t0, "2025-03-01T10:19:30Z"))]),
        # 3: killed by the OOM killer for good
        pod("etl-c", ns="data", node="cpu-node-1", phase="Failed", started=t0,
            containers=[container("etl", {"cpu": "1", "memory": "1Gi"}, {"memory": "1Gi"})],
            statuses=[status("etl", terminated("OOMKilled", 137, t0, "2025-03-01T10:31:00Z"))]),
        # 4 and 5: two pods of one Job (a failed attempt, then a successful one), 1 GPU each
        pod("sweep-7-abcde", owner=("Job", "sweep-7"), labels={"job-name": "sweep-7"}, phase="Failed", started=t0,
            containers=[container("w", {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"})],
            statuses=[status("w", terminated("Error", 1, t0, t1))]),
        pod("sweep-7-fghij", owner=("Job", "sweep-7"), labels={"job-name": "sweep-7"}, started=t1,
            containers=[container("w", {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"})],
            statuses=[status("w", terminated("Completed", 0, t1, t2))]),
        # 6: still running, on a MIG slice
        pod("notebook-x", ns="research", phase="Running", node="gpu-node-2", started=t0,
            containers=[container("nb", {"cpu": "2", "memory": "8Gi"}, {"nvidia.com/mig-1g.10gb": "1"})],
            statuses=[status("nb", {"running": {"startedAt": t0}})]),
        # 7: a quantity that does not parse
        pod("broken-q", containers=[container("m", {"cpu": "lots", "memory": "1Gi"})], started=t0,
            statuses=[status("m", terminated("Completed", 0, t0, t1))]),
        # 8: no name
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "x"}, "spec": {}, "status": {}},
        # 9: preempted by the scheduler
        pod("low-prio", ns="ml-team", phase="Failed", started=t0, reason="",
            conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
            containers=[container("w", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})],
            statuses=[status("w", terminated("Error", 143, t0, "2025-03-01T10:11:00Z"))]),
        # 10: still pending (no node)
        pod("queued", ns="ml-team", phase="Pending", node=None,
            containers=[container("w", {"cpu": "1", "memory": "1Gi"})], statuses=[]),
    ]


@pytest.fixture()
def pods_file(tmp_path):
    p = tmp_path / "pods.json"
    p.write_text(json.dumps(pods_list(build_pods()), indent=4))
    return p


def test_quantities():
    vals, bad = parse_quantity(["500m", "8", "64Gi", "1.5G", "129e6", "512Mi", "", None, "lots", "1k"])
    assert list(vals[:6]) == [0.5, 8, 64 * GiB, 1.5e9, 129e6, 512 * 2**20]
    assert list(bad) == [False] * 8 + [True, False]
    assert vals[9] == 1000


def test_detected(pods_file):
    assert detect_format(pods_file) == "k8s-pods"


def test_pods_rows(pods_file):
    r = read_k8s_pods(pods_file, cluster="gke-1")
    led = r.ledger
    assert (led.read, led.used, led.folded, led.quarantined) == (10, 7, 1, 2) and led.balanced
    assert {q[2] for q in r.quarantine.rows} == {"resources", "metadata.name"}
    j = r.jobs.set_index("job_id")
    a = j.loc["ml-team/train-a"]
    assert (a.alloc_gpus, a.alloc_cpus, a.alloc_mem_bytes, a.elapsed_s) == (2, 8, 64 * GiB, 3600)
    assert a.state == "COMPLETED" and a.account == "ml-team" and a.partition == "a100-pool" and a.qos == "Burstable"
    assert a.node_list == "gpu-node-1" and a.cluster == "gke-1" and "no_gpu_telemetry" in a.caveats
    b = j.loc["data/etl-b"]
    # effective CPU request: max(500m app → 0.5, init 2) = 2; memory max(2Gi, 512Mi)
    assert (b.alloc_cpus, b.alloc_mem_bytes, b.state) == (2, 2 * GiB, "COMPLETED")
    assert "pod_restarted" in b.caveats
    c = j.loc["data/etl-c"]
    assert (c.state, c.exit_code, c.signal, c.elapsed_s) == ("OUT_OF_MEMORY", 137, 9, 1800)
    s = j.loc["ml-team/Job/sweep-7"]
    assert s.job_name == "sweep-7" and s.elapsed_s == 7200 and s.alloc_gpus == 1
    assert s.state == "FAILED"  # the most serious of its pods
    assert s.alloc_gpus * s.elapsed_s == 2 * 3600  # GPU-seconds equal the sum over its pods
    nb = j.loc["research/notebook-x"]
    assert (nb.state, nb.alloc_gpus) == ("RUNNING", 1) and pd.isna(nb.gpu_type)
    assert pd.isna(nb.end_time) and "gpu_shared" in nb.caveats and "end_unknown" in nb.caveats
    assert j.loc["ml-team/low-prio"].state == "PREEMPTED"
    q = j.loc["ml-team/queued"]
    assert q.state == "PENDING" and pd.isna(q.start_time) and pd.isna(q.alloc_cpus) and q.req_cpus == 1
    pm = r.pods.set_index("pod")
    assert pm.loc["sweep-7-abcde", "job_id"] == "ml-team/Job/sweep-7"


def test_pods_ungrouped(pods_file):
    r = read_k8s_pods(pods_file, group_by_owner=False)
    assert r.ledger.used == 8 and r.ledger.folded == 0 and r.ledger.balanced


def node(name, *, cpu="63900m", mem="503Gi", gpus=None, labels=None):
    alloc = {"cpu": cpu, "memory": mem, "pods": "110", "ephemeral-storage": "95Gi"}
    if gpus is not None:
        alloc["nvidia.com/gpu"] = gpus
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def build_nodes():
    gfd = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.memory": "81920",
           "nvidia.com/gpu.count": "8", "cloud.google.com/gke-nodepool": "a100-pool",
           "topology.kubernetes.io/zone": "us-central1-a", "topology.kubernetes.io/region": "us-central1",
           "node.kubernetes.io/instance-type": "a2-ultragpu-8g", "example.org/rack": "r12"}
    return [
        node("gpu-node-1", gpus="8", labels=gfd),
        node("gpu-node-2", gpus="8", labels=gfd),
        node("cpu-node-1", cpu="15890m", mem="58Gi", labels={"cloud.google.com/gke-nodepool": "default-pool"}),
        node("bad-node", cpu="many"),
    ]


def test_nodes_shape(tmp_path):
    p = tmp_path / "nodes.json"
    p.write_text(json.dumps(pods_list(build_nodes())))
    assert detect_format(p) == "k8s-nodes"
    r = read_k8s_nodes(p)
    assert (r.ledger.read, r.ledger.used, r.ledger.quarantined) == (4, 3, 1) and r.ledger.balanced
    n = r.nodes.set_index("node")
    g = n.loc["gpu-node-1"]
    assert (g.cpus, g.mem_bytes, g.gpus, g.gpu_type, g.gpu_mem_bytes) == (63, 503 * GiB, 8, "a100", 80 * GiB)
    assert (g.pool, g.zone, g.rack, g.instance_type) == ("a100-pool", "us-central1-a", "r12", "a2-ultragpu-8g")
    spec = shape_dict(r.nodes, "gke-1")
    import tomllib

    from audit.accounting.shape import partition_capacity, shape_frame
    from audit.cluster_shape import load_cluster_shape

    cap = partition_capacity(shape_frame(load_cluster_shape(tomllib.loads(toml_text(spec)))))
    assert cap.loc["a100-pool", "gpus_total"] == 16 and cap.loc["default-pool", "cpus_total"] == 15


def dcgm_pod_json(pod_name, ns, node_name, start, hours, util):
    """A ``query_range`` matrix of dcgm-exporter series labelled with the pod (Kubernetes pod mapping)."""
    t0 = int(pd.Timestamp(start).timestamp())
    times = list(range(t0, t0 + int(hours * 3600), 60))
    result = [{"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": node_name, "gpu": str(g), "UUID": f"GPU-{g}",
                          "pod": pod_name, "namespace": ns, "container": "trainer"},
               "values": [[t, str(util)] for t in times]} for g in range(2)]
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def test_mixed_audit_slurm_and_k8s_side_by_side(tmp_path):
    from audit.pipeline import audit

    from ..conftest import ROOT

    week = ROOT / "sample_traces" / "week"
    if not (week / "sacct.txt").exists():
        pytest.skip("sample week absent")
    k8s = tmp_path / "k8s"
    k8s.mkdir()
    (k8s / "pods.json").write_text(json.dumps(pods_list(build_pods())))
    (k8s / "nodes.json").write_text(json.dumps(pods_list(build_nodes())))
    (k8s / "dcgm.json").write_text(json.dumps(dcgm_pod_json("train-a", "ml-team", "gpu-node-1",
                                                            "2025-03-01T10:01:00Z", 1, 35)))
    res = audit([week, k8s], tmp_path / "run", whatif=False, advisor_model=False)  # the readers side by side
    jobs = pd.read_parquet(tmp_path / "run" / "jobs.parquet")
    a = jobs.set_index("job_id").loc["ml-team/train-a"]
    assert a.gpu_util_mean == pytest.approx(0.35) and "no_gpu_telemetry" not in (a.caveats or "")
    assert a.partition == "a100-pool"  # the pool of its node, from the nodes dump
    parts = res.summary["occupancy"]["partitions"]
    assert {"a100-pool", "default-pool", "gpu-a100", "gpu-h100", "cpu"} <= set(parts)
    assert (tmp_path / "run" / "telemetry.parquet").exists() and (tmp_path / "run" / "cluster_shape.toml").exists()
    import duckdb

    con = duckdb.connect(str(tmp_path / "run" / "reclaim.duckdb"))
    n = con.execute("SELECT count(*) FROM telemetry WHERE pod = 'train-a'").fetchone()[0]
    con.close()
    assert n == 2 * 60
    assert res.ingest.ledger["balanced"]


_quantity = st.one_of(st.sampled_from(["500m", "2", "1.5", "64Gi", "1e3", "lots", "", "-1", "7Ki", "0"]),
                      st.text(max_size=6))


@settings(max_examples=examples(40))
@given(st.lists(st.tuples(_quantity, _quantity, st.sampled_from(["Succeeded", "Failed", "Running", "Pending",
                                                                 "Unknown", "Weird"]), st.booleans()),
                min_size=1, max_size=8))
def test_pods_with_random_quantities_are_all_accounted(tmp_path, specs):
    items = []
    for i, (cpu, mem, phase, owned) in enumerate(specs):
        items.append(pod(f"p{i}", phase=phase, started="2025-03-01T10:01:00Z",
                         containers=[container("c", {"cpu": cpu, "memory": mem})],
                         owner=("Job", "j") if owned else None,
                         statuses=[status("c", terminated("Completed", 0, "2025-03-01T10:01:00Z",
                                                          "2025-03-01T10:31:00Z"))]))
    p = tmp_path / "pods.json"
    p.write_text(json.dumps(pods_list(items)))
    r = read_k8s_pods(p)
    assert r.ledger.balanced and r.ledger.read == len(specs)
    assert r.ledger.used == r.ledger.jobs_emitted == len(r.jobs)
    assert len(r.quarantine.rows) == r.ledger.quarantined
    assert {q[2] for q in r.quarantine.rows} <= {"resources", "status.phase"}
    assert r.ledger.quarantined >= sum(1 for s in specs if s[2] == "Weird")
    kept_owned = len(specs) - r.ledger.quarantined - sum(1 for s in r.jobs["job_id"] if "/Job/" not in s)
    assert r.ledger.folded == max(kept_owned - 1, 0)  # every kept pod of Job j folds into one row
    assert set(r.jobs["state"]) <= set(STATES)


def test_dcgm_by_pod_reaches_the_owning_job_row(tmp_path):
    """dcgm-exporter labels samples with the pod; pods of one Job fold into one row through the pods map."""
    from audit.readers.prometheus import read_prometheus
    from audit.telemetry.join import join_telemetry

    p = tmp_path / "pods.json"
    p.write_text(json.dumps(pods_list(build_pods())))
    r = read_k8s_pods(p)
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps(dcgm_pod_json("sweep-7-abcde", "ml-team", "gpu-node-1", "2025-03-01T10:01:00Z", 1, 20)))
    b.write_text(json.dumps(dcgm_pod_json("sweep-7-fghij", "ml-team", "gpu-node-1", "2025-03-01T11:01:00Z", 1, 60)))
    tel = pd.concat([read_prometheus(a).telemetry, read_prometheus(b).telemetry], ignore_index=True)
    out = join_telemetry(r.jobs, tel, pods=r.pods)
    st = out.job_stats.set_index("job_id").loc["ml-team/Job/sweep-7"]
    assert st.join_path == "label" and st.gpu_util_mean == pytest.approx(0.40) and st.gpu_samples == 2 * 2 * 60


def _ksm_series(name, labels, times, values):
    return {"metric": {"__name__": name, "job": "kube-state-metrics", "instance": "ksm:8080", **labels},
            "values": [[int(t), str(v)] for t, v in zip(times, values, strict=True)]}


def build_kube_state(t0):
    """kube-state-metrics history of three pods, one minute apart, as Prometheus would return it."""
    grid = np.arange(t0, t0 + 3600, 60)
    a_alive = grid[grid < t0 + 1800]  # pod a was deleted after it completed
    series = [
        _ksm_series("kube_pod_info", {"namespace": "ml", "pod": "a-x1", "uid": "ua", "node": "gpu-node-1",
                                      "created_by_kind": "Job", "created_by_name": "a"}, a_alive, [1] * len(a_alive)),
        _ksm_series("kube_pod_info", {"namespace": "ml", "pod": "b", "uid": "ub", "node": "gpu-node-2",
                                      "created_by_kind": "<none>", "created_by_name": "<none>"}, grid, [1] * len(grid)),
        _ksm_series("kube_pod_info", {"namespace": "etl", "pod": "c", "uid": "uc", "node": "cpu-node-1"},
                    grid[:10], [1] * 10),
        _ksm_series("kube_pod_created", {"namespace": "ml", "pod": "a-x1"}, a_alive, [t0] * len(a_alive)),
        _ksm_series("kube_pod_start_time", {"namespace": "ml", "pod": "a-x1"}, a_alive, [t0 + 60] * len(a_alive)),
        _ksm_series("kube_pod_completion_time", {"namespace": "ml", "pod": "a-x1"}, a_alive[-3:], [t0 + 1700] * 3),
        _ksm_series("kube_pod_status_phase", {"namespace": "ml", "pod": "a-x1", "phase": "Running"}, a_alive,
                    (a_alive < t0 + 1700).astype(int)),
        _ksm_series("kube_pod_status_phase", {"namespace": "ml", "pod": "a-x1", "phase": "Succeeded"}, a_alive,
                    (a_alive >= t0 + 1700).astype(int)),
        _ksm_series("kube_pod_container_resource_requests", {"namespace": "ml", "pod": "a-x1", "container": "w",
                                                             "resource": "cpu", "unit": "core"}, a_alive, [1.5] * len(a_alive)),
        _ksm_series("kube_pod_container_resource_requests", {"namespace": "ml", "pod": "a-x1", "container": "side",
                                                             "resource": "cpu", "unit": "core"}, a_alive, [0.5] * len(a_alive)),
        _ksm_series("kube_pod_container_resource_requests", {"namespace": "ml", "pod": "a-x1", "container": "w",
                                                             "resource": "memory", "unit": "byte"}, a_alive,
                    [4 * GiB] * len(a_alive)),
        _ksm_series("kube_pod_container_resource_requests", {"namespace": "ml", "pod": "a-x1", "container": "w",
                                                             "resource": "nvidia_com_gpu", "unit": "integer"}, a_alive,
                    [1] * len(a_alive)),
        _ksm_series("kube_pod_status_phase", {"namespace": "ml", "pod": "b", "phase": "Running"}, grid, [1] * len(grid)),
        _ksm_series("kube_pod_start_time", {"namespace": "ml", "pod": "b"}, grid, [t0] * len(grid)),
        _ksm_series("kube_pod_status_phase", {"namespace": "etl", "pod": "c", "phase": "Failed"}, grid[:10], [1] * 10),
        _ksm_series("kube_pod_start_time", {"namespace": "etl", "pod": "c"}, grid[:10], [t0] * 10),
        _ksm_series("kube_pod_container_status_last_terminated_reason", {"namespace": "etl", "pod": "c",
                                                                         "container": "e", "reason": "OOMKilled"},
                    grid[:10], [1] * 10),
        _ksm_series("kube_pod_container_status_restarts_total", {"namespace": "etl", "pod": "c", "container": "e"},
                    grid[:10], [0] * 5 + [1] * 5),
    ]
    return {"status": "success", "data": {"resultType": "matrix", "result": series}}


def test_kube_state_metrics_only_cluster(tmp_path):
    """No pods dump: kube-state-metrics history gives the pods (gone ones too) and DCGM joins by pod."""
    from audit.ingest import read_inputs

    t0 = 1_740_823_200
    d = tmp_path / "prom"
    d.mkdir()
    (d / "ksm.json").write_text(json.dumps(build_kube_state(t0)))
    dcgm = dcgm_pod_json("a-x1", "ml", "gpu-node-1", pd.Timestamp(t0 + 60, unit="s", tz="UTC").isoformat(), 0.45, 70)
    dcgm["data"]["result"] = dcgm["data"]["result"][:1]
    (d / "dcgm.json").write_text(json.dumps(dcgm))
    ing = read_inputs([d])
    assert ing.ledger["balanced"]
    j = ing.jobs.set_index("job_id")
    assert set(j.index) == {"ml/a-x1", "ml/b", "etl/c"} and (j["source"] == "k8s-metrics").all()
    a = j.loc["ml/a-x1"]
    assert (a.state, a.alloc_cpus, a.alloc_mem_bytes, a.alloc_gpus, a.node_list) == ("COMPLETED", 2, 4 * GiB, 1,
                                                                                      "gpu-node-1")
    assert a.elapsed_s == 1640 and a.job_name == "a" and a.gpu_util_mean == pytest.approx(0.70)
    assert "no_gpu_telemetry" not in a.caveats and "telemetry" in a.caveats
    b = j.loc["ml/b"]
    assert b.state == "RUNNING" and pd.isna(b.end_time) and "end_unknown" in b.caveats
    c = j.loc["etl/c"]
    assert c.state == "OUT_OF_MEMORY" and c.end_time == pd.Timestamp(t0 + 540, unit="s", tz="UTC")
    assert {"end_from_last_sample", "pod_restarted"} <= set(c.caveats.split(";"))
    ksm = next(f for f in ing.ledger["files"] if f["file"].endswith("ksm.json"))
    assert ksm["jobs_emitted"] == 3


def test_millicore_and_shared_requests_are_exact(tmp_path):
    """Issue 14: a pod asking 3152m CPU holds 3.152 CPUs, not 4; a Job of two such pods, one hour each,
    holds 3.152 CPUs on the time-weighted mean (2 x 3.152 x 3600 core-s in all)."""
    from audit.accounting import account_jobs
    from audit.readers.k8s.pods import read_k8s_pods

    t0, t1, t2 = "2025-03-01T10:00:00Z", "2025-03-01T11:00:00Z", "2025-03-01T12:00:00Z"
    items = [
        pod("infer-1", containers=[container("m", {"cpu": "3152m", "memory": "1Gi"})], started=t0,
            statuses=[status("m", terminated("Completed", 0, t0, t1))]),
        pod("batch-1-a", owner=("Job", "batch-1"), labels={"job-name": "batch-1"}, started=t0,
            containers=[container("w", {"cpu": "250m", "memory": "1Gi"}), container("s", {"cpu": "0.1"})],
            statuses=[status("w", terminated("Completed", 0, t0, t1))]),
        pod("batch-1-b", owner=("Job", "batch-1"), labels={"job-name": "batch-1"}, started=t1,
            containers=[container("w", {"cpu": "250m", "memory": "1Gi"}), container("s", {"cpu": "0.1"})],
            statuses=[status("w", terminated("Completed", 0, t1, t2))]),
    ]
    p = tmp_path / "pods.json"
    p.write_text(json.dumps(pods_list(items)))
    jobs = read_k8s_pods(p).jobs.set_index("job_id")
    assert jobs.loc["ml-team/infer-1", "req_cpus"] == 3.152 == jobs.loc["ml-team/infer-1", "alloc_cpus"]
    assert jobs.loc["ml-team/Job/batch-1", "alloc_cpus"] == 0.35  # 250m + 0.1 per pod, the two one after another
    waste = account_jobs(jobs.reset_index()).waste.set_index("job_id")
    assert waste.loc["ml-team/infer-1", "core_s_alloc"] == pytest.approx(3.152 * 3600, rel=1e-12)
    assert waste.loc["ml-team/Job/batch-1", "core_s_alloc"] == pytest.approx(2 * 0.35 * 3600, rel=1e-12)
