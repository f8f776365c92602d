"""Readers for the Alibaba GPU cluster traces (``../shared/traces/k8s/``).

- ``read_alibaba_pods``: ``openb_pod_list_*.csv`` (alibaba/clusterdata, cluster-trace-gpu-v2023): one row per
  pod with ``cpu_milli``, ``memory_mib``, ``num_gpu``, ``gpu_milli`` (a GPU share in thousandths when
  ``num_gpu`` is 1), ``gpu_spec``, ``qos``, ``pod_phase`` and creation/scheduled/deletion times in seconds from
  an undisclosed origin.  Requests only: ``no_usage_fields`` (and ``no_gpu_telemetry`` on GPU pods); a share
  under 1000 gives ``gpu_shared``; ``gpu_spec`` is a placement constraint (``V100M16|V100M32``), not the GPU
  the pod got, so ``gpu_type`` stays unknown; times are read as seconds after 1970-01-01 UTC (``relative_times``).
- ``read_alibaba_nodes``: ``openb_node_list_*.csv`` (``sn, cpu_milli, memory_mib, gpu, model``) → nodes.
- ``read_alibaba_genai``: the GenAI 2026 per-pod series (``pod_gpu_duty_cycle`` percent,
  ``pod_gpu_memory_used_bytes``, ``pod_memory_util`` a fraction of the limit), plain CSV or ``.tar.gz`` with
  ``value, timestamp_anon, container_ip``: the pod is the container IP hash; the metric is the member's name.

Ledgers: one record per CSV row; a row whose numbers or times do not parse is quarantined (field named).
"""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..job_table import caveats_from_masks, conform, empty_jobs
from ..ledger import FileLedger, Quarantine, ReadResult, record_quarantine
from ..node_table import NODE_COLUMNS, NodesResult
from ..telemetry_table import TelemetryResult, conform_telemetry, empty_telemetry, epoch_to_utc
from ..textio import InputError, read_bytes

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
PHASE = {"Succeeded": "COMPLETED", "Failed": "FAILED", "Running": "RUNNING", "Pending": "PENDING"}
POOL = "openb"


def _csv(path, required, fmt: str) -> tuple[pd.DataFrame, FileLedger, Quarantine]:
    name = str(path)
    raw = read_bytes(path)
    try:
        df = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: not a CSV file: {exc}") from exc
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InputError(f"{name}: line 1: missing columns {missing}")
    ledger = FileLedger(file=name, format=fmt, read=len(df), structural=1)
    df["_line"] = np.arange(len(df)) + 2
    return df, ledger, Quarantine()


def _numbers(df, cols, ledger, quarantine, optional=()) -> tuple[pd.DataFrame, np.ndarray]:
    """Parse ``cols`` as numbers; quarantine rows where a required one fails (first failing field named)."""
    num = pd.DataFrame({c: pd.to_numeric(df[c].replace("", np.nan), errors="coerce") for c in cols})
    bad = np.zeros(len(df), dtype=bool)
    field_of = np.full(len(df), "", dtype=object)
    for c in cols:
        present = (df[c] != "").to_numpy()
        b = (num[c].isna().to_numpy() & (present | (c not in optional))) & ~bad
        field_of[b] = c
        bad |= b
    raw = df.drop(columns=["_line"]).astype(str).agg(",".join, axis=1).to_numpy() if bad.any() else None
    for k in np.flatnonzero(bad):
        record_quarantine(ledger, quarantine, int(df["_line"].iloc[k]), field_of[k], "not a number", raw[k])
    return num, bad


def read_alibaba_pods(path, *, cluster: str | None = None) -> ReadResult:
    df, ledger, quarantine = _csv(path, POD_COLUMNS, "alibaba-pods")
    if df.empty:
        return ReadResult(empty_jobs(), ledger, quarantine)
    num, bad = _numbers(df, ["cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time",
                             "scheduled_time"], ledger, quarantine, optional=("scheduled_time", "deletion_time"))
    phase = df["pod_phase"].map(PHASE)
    bad_phase = phase.isna().to_numpy() & ~bad
    for k in np.flatnonzero(bad_phase):
        record_quarantine(ledger, quarantine, int(df["_line"].iloc[k]), "pod_phase", "unknown phase",
                          ",".join(df.iloc[k, :len(POD_COLUMNS)].astype(str)))
    keep = ~(bad | bad_phase)
    df, num, phase = df[keep].reset_index(drop=True), num[keep].reset_index(drop=True), phase[keep].reset_index(drop=True)
    ledger.used = ledger.jobs_emitted = len(df)
    n = len(df)
    gpus = num["num_gpu"].to_numpy()
    milli = num["gpu_milli"].to_numpy()
    shared = (gpus == 1) & (milli < 1000)
    # exact shares: 3152 millicores are 3.152 CPUs, gpu_milli 460 on one GPU is 0.46 of it
    gpus = np.where(shared, milli / 1000.0, gpus)
    cpus = num["cpu_milli"].to_numpy() / 1000.0
    exact = lambda x: pd.array(np.where(np.isfinite(x), x, np.nan), dtype="Float64")  # noqa: E731
    start = num["scheduled_time"].to_numpy()
    end = num["deletion_time"].to_numpy()
    end = np.where(np.isfinite(start), end, np.nan)
    ints = lambda x: pd.array(np.where(np.isfinite(x), np.round(x), np.nan), dtype="Float64").astype("Int64")  # noqa: E731
    held = np.isfinite(start)
    out = pd.DataFrame({
        "cluster": cluster or "alibaba-openb", "job_id": df["name"], "job_id_raw": df["name"],
        "source": "alibaba-pods", "source_file": str(path), "source_line": df["_line"].astype("Int64"),
        "partition": POOL, "qos": df["qos"].replace("", None), "job_name": df["name"],
        "submit_time": epoch_to_utc(num["creation_time"]), "eligible_time": epoch_to_utc(num["creation_time"]),
        "start_time": epoch_to_utc(start), "end_time": epoch_to_utc(end),
        "elapsed_s": ints(end - start), "state": phase,
        "req_nodes": 1, "req_cpus": exact(cpus), "req_mem_bytes": ints(num["memory_mib"].to_numpy() * 2**20),
        "req_gpus": exact(gpus), "gpu_type": None,
        "alloc_nodes": ints(np.where(held, 1, np.nan)), "alloc_cpus": exact(np.where(held, cpus, np.nan)),
        "alloc_mem_bytes": ints(np.where(held, num["memory_mib"].to_numpy() * 2**20, np.nan)),
        "alloc_gpus": exact(np.where(held, gpus, np.nan)),
        "caveats": caveats_from_masks(n, {"no_usage_fields": np.ones(n, dtype=bool),
                                          "no_gpu_telemetry": gpus > 0, "gpu_shared": shared,
                                          "relative_times": np.ones(n, dtype=bool)}),
    })
    return ReadResult(conform(out), ledger, quarantine)


def read_alibaba_nodes(path, *, cluster: str | None = None) -> NodesResult:
    df, ledger, quarantine = _csv(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model"), "alibaba-nodes")
    num, bad = _numbers(df, ["cpu_milli", "memory_mib", "gpu"], ledger, quarantine)
    df, num = df[~bad].reset_index(drop=True), num[~bad].reset_index(drop=True)
    ledger.used = len(df)
    nodes = pd.DataFrame({
        "cluster": cluster or "alibaba-openb", "node": df["sn"], "pool": POOL,
        "cpus": (num["cpu_milli"] // 1000).astype("int64"), "mem_bytes": (num["memory_mib"] * 2**20).astype("int64"),
        "gpus": num["gpu"].astype("int64"), "gpu_type": df["model"].replace("", None).str.lower(),
        "gpu_mem_bytes": df["model"].str.extract(r"M(\d+)$")[0].astype("float64").fillna(0).mul(2**30).astype("int64"),
        "zone": None, "region": None, "rack": None, "instance_type": None,
    })
    return NodesResult(nodes[list(NODE_COLUMNS)], ledger, quarantine)


def _genai_members(path) -> list[tuple[str, bytes]]:
    p = Path(path)
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b" or raw[257:262] == b"ustar":
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:*") as tar:
                return [(m.name, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
        except tarfile.TarError:
            return [(p.name, read_bytes(path))]
    return [(p.name, raw)]


def read_alibaba_genai(path, *, cluster: str | None = None) -> TelemetryResult:
    """Per-pod GPU duty cycle / GPU memory / memory utilisation series (CSV or a tar.gz of one)."""
    name = str(path)
    ledger = FileLedger(file=name, format="alibaba-genai")
    quarantine = Quarantine()
    frames = []
    for member, data in _genai_members(path):
        df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        if not {"value", "timestamp_anon", "container_ip"} <= set(df.columns):
            raise InputError(f"{name}: {member}: line 1: expected value, timestamp_anon, container_ip")
        metric = re.sub(r"(_anon)?\.csv$", "", Path(member).name)
        ledger.read += len(df)
        ledger.structural += 1
        df["_line"] = np.arange(len(df)) + 2
        num, bad = _numbers(df, ["value", "timestamp_anon"], ledger, quarantine)
        pod = df["container_ip"].replace({"": None, "None": None, "NULL": None})
        bad_pod = pod.isna().to_numpy() & ~bad
        for k in np.flatnonzero(bad_pod):
            record_quarantine(ledger, quarantine, int(df["_line"].iloc[k]), "container_ip", "missing",
                              ",".join(df.iloc[k, :3].astype(str)))
        keep = ~(bad | bad_pod)
        ledger.used += int(keep.sum())
        frames.append(pd.DataFrame({"metric": metric, "pod": pod[keep].to_numpy(),
                                    "time": epoch_to_utc(num["timestamp_anon"][keep]).to_numpy(),
                                    "value": num["value"][keep].to_numpy(dtype="float64")}))
    if not frames:
        return TelemetryResult(empty_telemetry(), ledger, quarantine)
    tel = pd.concat(frames, ignore_index=True)
    tel["cluster"] = cluster or "alibaba-genai"
    return TelemetryResult(conform_telemetry(tel), ledger, quarantine)
