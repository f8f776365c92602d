"""The Alibaba GPU traces in ../shared/traces/k8s: pod and node lists (2023) and GenAI per-pod series (2026),
checked against counts taken from the files with the standard library."""

from __future__ import annotations

import csv
import io
import math
import tarfile
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from audit.ingest import read_inputs
from audit.readers.alibaba import read_alibaba_genai, read_alibaba_nodes, read_alibaba_pods
from audit.readers.detect import detect_format

K8S = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "k8s"
GPU23 = K8S / "alibaba-gpu-2023"
GENAI = K8S / "alibaba-genai-2026"
GiB = 2**30


def _need(p: Path) -> Path:
    if not p.exists():
        pytest.skip(f"{p.name} absent")
    return p


def _rows(p: Path) -> list[dict]:
    with open(p, newline="") as fh:
        return list(csv.DictReader(fh))


def test_pod_list():
    p = _need(GPU23 / "openb_pod_list_default.csv")
    assert detect_format(p) == "alibaba-pods"
    rows = _rows(p)
    r = read_alibaba_pods(p)
    assert r.ledger.balanced and r.ledger.used == len(rows) == len(r.jobs) == 8152 and r.ledger.quarantined == 0
    phases = Counter(x["pod_phase"] for x in rows)
    states = r.jobs["state"].value_counts().to_dict()
    assert states == {"RUNNING": phases["Running"], "FAILED": phases["Failed"], "PENDING": phases["Pending"],
                      "COMPLETED": phases["Succeeded"]}
    shared = sum(1 for x in rows if x["num_gpu"] == "1" and int(x["gpu_milli"]) < 1000)
    assert r.jobs["caveats"].str.contains("gpu_shared").sum() == shared
    # GPU-hours held: a pod sharing a GPU (num_gpu 1, gpu_milli under 1000) holds its share of it
    gpu_hours = sum(_gpu_share(x) * (int(x["deletion_time"]) - int(x["scheduled_time"]))
                    for x in rows if x["scheduled_time"]) / 3600
    got = (r.jobs["alloc_gpus"].astype("Float64") * r.jobs["elapsed_s"].astype("Float64")).sum() / 3600
    assert got == pytest.approx(gpu_hours, rel=1e-12)
    one = r.jobs.set_index("job_id").loc["openb-pod-0001"]  # 6000 millicores, gpu_milli 460 of one GPU
    assert (one.alloc_cpus, one.alloc_mem_bytes, one.alloc_gpus, one.qos) == (6, 12 * GiB, 0.46, "LS")
    assert one.start_time == pd.Timestamp(427061, unit="s", tz="UTC")
    assert {"relative_times", "no_usage_fields", "no_gpu_telemetry", "gpu_shared"} <= set(one.caveats.split(";"))
    never = r.jobs[r.jobs["state"] == "PENDING"]
    assert never["start_time"].isna().all() and never["alloc_gpus"].isna().all()


def _gpu_share(x) -> Fraction:
    return Fraction(int(x["gpu_milli"]), 1000) if x["num_gpu"] == "1" and int(x["gpu_milli"]) < 1000 \
        else Fraction(int(x["num_gpu"]))


def test_pod_list_requests_sum_to_the_csv_columns():
    """Issue 14: exact requests, not rounded up.  The CSV's own sums, in exact fractions: 85,436.012 CPUs
    (88,697 when each pod is rounded up to whole CPUs), 303,546,211 MiB, 6,086.8 GPUs (7,433 counting a shared GPU
    as a whole one)."""
    p = _need(GPU23 / "openb_pod_list_default.csv")
    rows = _rows(p)
    jobs = read_alibaba_pods(p).jobs
    cpus = sum(Fraction(int(x["cpu_milli"]), 1000) for x in rows)
    mem = sum(int(x["memory_mib"]) for x in rows) * 2**20
    gpus = sum(_gpu_share(x) for x in rows)
    assert (cpus, gpus) == (Fraction(85436012, 1000), Fraction(60868, 10))
    assert sum(-(-int(x["cpu_milli"]) // 1000) for x in rows) == 88697
    assert sum(int(x["num_gpu"]) for x in rows) == 7433
    # each row's float is the nearest to its exact share; their correctly rounded sum is the exact sum's float
    assert math.fsum(jobs["req_cpus"].astype("float64")) == float(cpus)
    assert math.fsum(jobs["req_gpus"].astype("float64")) == float(gpus)
    assert int(jobs["req_mem_bytes"].sum()) == mem
    assert round(float(jobs["req_cpus"].sum()), 6) == 85436.012 and round(float(jobs["req_gpus"].sum()), 6) == 6086.8


def test_node_list():
    p = _need(GPU23 / "openb_node_list_all_node.csv")
    assert detect_format(p) == "alibaba-nodes"
    rows = _rows(p)
    r = read_alibaba_nodes(p)
    assert r.ledger.balanced and len(r.nodes) == len(rows) == 1523
    assert r.nodes["gpus"].sum() == sum(int(x["gpu"]) for x in rows)
    v = r.nodes.set_index("node")
    v32 = next(x for x in rows if x["model"] == "V100M32")
    assert v.loc[v32["sn"], "gpu_mem_bytes"] == 32 * GiB and v.loc[v32["sn"], "gpu_type"] == "v100m32"


def _member_rows(p: Path) -> list[list[str]]:
    with tarfile.open(p) as tar:
        m = tar.getmembers()[0]
        text = tar.extractfile(m).read().decode()
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("name,metric", [("pod_gpu_duty_cycle_anon.tar.gz", "pod_gpu_duty_cycle"),
                                         ("pod_gpu_memory_used_bytes_anon.tar.gz", "pod_gpu_memory_used_bytes"),
                                         ("pod_memory_util_anon.tar.gz", "pod_memory_util")])
def test_genai_series(name, metric):
    p = _need(GENAI / name)
    assert detect_format(p) == "alibaba-genai"
    rows = _member_rows(p)
    header, body = rows[0], rows[1:]
    ip = header.index("container_ip")
    missing = sum(1 for x in body if x[ip] in ("", "None", "NULL"))
    r = read_alibaba_genai(p)
    assert r.ledger.balanced and r.ledger.read == len(body) and r.ledger.quarantined == missing
    t = r.telemetry
    assert set(t["metric"]) == {metric} and len(t) == len(body) - missing
    assert t["pod"].nunique() == len({x[ip] for x in body if x[ip] not in ("", "None", "NULL")})
    vi = header.index("value")
    assert t["value"].sum() == pytest.approx(sum(float(x[vi]) for x in body if x[ip] not in ("", "None", "NULL")))


def test_real_k8s_folder_ingests_balanced():
    _need(K8S)
    ing = read_inputs([K8S])
    assert ing.ledger["balanced"]
    formats = {f["format"] for f in ing.ledger["files"]}
    assert {"alibaba-pods", "alibaba-nodes", "alibaba-genai", "prometheus-json", "prometheus-text"} <= formats
    assert len(ing.jobs) == 8152 and ing.nodes is not None and len(ing.nodes) == 1523
    assert {s["detected"] for s in ing.skipped} <= {"unknown", "json"}  # READMEs and status.json
