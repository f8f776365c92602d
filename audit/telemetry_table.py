"""The long telemetry table: one row per sample, joined to jobs later (:mod:`audit.telemetry_join`).

Columns (DESIGN.md, plus the labels the join needs): ``cluster, node, gpu_index, metric, time, value``
and ``job_label`` (a job id the exporter wrote on the series: ``hpc_job``, cgroup ``jobid``),
``pod``, ``namespace``, ``container`` (Kubernetes series), ``uuid`` (the GPU's UUID), ``resource``
(``kube_pod_container_resource_requests``) and ``cgroup`` (the cgroup path of cgroup-exporter series).  Readers of telemetry return a :class:`TelemetryResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .ledger import FileLedger, Quarantine

UTC_NS = "datetime64[ns, UTC]"

#: column -> pandas dtype
TELEMETRY_COLUMNS: dict[str, str] = {
    "cluster": "string",
    "node": "string",
    "gpu_index": "Int64",
    "metric": "string",
    "time": UTC_NS,
    "value": "float64",
    "job_label": "string",
    "pod": "string",
    "namespace": "string",
    "container": "string",
    "uuid": "string",
    "resource": "string",
    "cgroup": "string",
}

#: GPU utilisation metrics, most preferred first (SM activity over duty cycle); values in percent or 0–1
GPU_UTIL_METRICS = ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL")
#: GPU memory used, MiB (DCGM) or bytes (per-pod series)
GPU_MEM_METRICS = {"DCGM_FI_DEV_FB_USED": 2**20, "pod_gpu_memory_used_bytes": 1}
CPU_COUNTER_METRICS = ("container_cpu_usage_seconds_total", "pod_cpu_usage_seconds_total")
MEM_GAUGE_METRICS = ("container_memory_working_set_bytes", "pod_memory_working_set_bytes")


@dataclass
class TelemetryResult:
    """What every telemetry reader returns: samples in the long table, the file's ledger and quarantine.

    ``holds`` (optional) maps jobs to the GPUs they held: ``job_id, node, gpu_index`` (a prolog record).
    """

    telemetry: pd.DataFrame
    ledger: FileLedger
    quarantine: Quarantine
    holds: pd.DataFrame | None = None
    extra: dict = field(default_factory=dict)


def empty_telemetry() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in TELEMETRY_COLUMNS.items()})


def conform_telemetry(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with exactly the telemetry columns, in order, with their dtypes (missing columns null)."""
    extra = set(df.columns) - set(TELEMETRY_COLUMNS)
    if extra:
        raise ValueError(f"columns outside the telemetry table: {sorted(extra)}")
    n = len(df)
    out = {}
    for col, dtype in TELEMETRY_COLUMNS.items():
        if col in df.columns:
            s = df[col]
            if dtype == UTC_NS:
                s = pd.to_datetime(s, utc=True).astype(UTC_NS)
            else:
                s = s.astype(dtype)
        elif dtype == UTC_NS:
            s = pd.Series(np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")).dt.tz_localize("UTC")
        else:
            s = pd.Series(pd.array([None] * n, dtype=dtype))
        out[col] = s.reset_index(drop=True)
    return pd.DataFrame(out)


def epoch_to_utc(seconds) -> pd.Series:
    """Epoch seconds (float) → UTC timestamps with nanosecond precision kept to the microsecond."""
    sec = np.asarray(seconds, dtype="float64")
    known = np.isfinite(sec)
    ns = np.where(known, np.round(np.where(known, sec, 0.0) * 1e6), 0).astype("int64") * 1000
    out = pd.Series(pd.to_datetime(ns, unit="ns", utc=True))
    return out.where(known)
