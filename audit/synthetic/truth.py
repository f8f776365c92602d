"""Planted ground truth from the generator's own records (never from reading its files back).

Definitions (docs/synthetic.md), per job row, with elapsed_s the run time of the allocation:
  core_hours_alloc   = alloc_cpus x elapsed_s / 3600
  core_hours_used    = TotalCPU of the allocation line / 3600 (what sacct records; 0 for MPI jobs
                       started outside srun: core_hours_used_true adds their real use)
  mem_gib_hours_alloc = alloc_mem_bytes x elapsed_s / 2**30 / 3600
  mem_gib_hours_peak  = mem_peak_bytes x elapsed_s / 2**30 / 3600
  gpu_hours_alloc    = alloc_gpus x elapsed_s / 3600
  gpu_hours_used     = alloc_gpus x elapsed_s x gpu_util_mean / 3600
  gpu_mem_gib_hours_alloc = alloc_gpus x GPU memory x elapsed_s / 2**30 / 3600
  gpu_mem_gib_hours_peak  = gpu_mem_peak_bytes (sum over held GPUs of each one's peak) x elapsed_s / 2**30 / 3600
"""

from __future__ import annotations

import numpy as np
import pandas as pd

H = 3600.0
GIB = float(2**30)
FAILED_STATES = ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL", "PREEMPTED")


def job_truth_frame(t: dict) -> pd.DataFrame:
    """The per-job truth table (also written as truth_jobs.csv)."""
    return pd.DataFrame({
        "job_id": t["job_id"], "account": t["account"], "partition": t["partition"], "state": t["state"],
        "start": t["start"], "end": t["end"], "elapsed_s": t["elapsed_s"], "limit_s": t["limit_s"], "alloc_cpus": t["alloc_cpus"],
        "alloc_mem_bytes": t["alloc_mem_bytes"], "alloc_gpus": t["alloc_gpus"],
        "cpu_used_s": np.round(t["cpu_used_ms"] / 1000.0, 3), "cpu_true_s": np.round(t["cpu_true_ms"] / 1000.0, 3),
        "mem_peak_bytes": t["mem_peak_bytes"], "gpu_util_mean": np.round(t["gpu_util_mean"], 6),
        "gpu_mem_peak_bytes": t["gpu_mem_peak_bytes"], "gpu_mem_max_per_gpu_bytes": t["gpu_mem_max_per_gpu_bytes"],
        "gpu_samples": t["gpu_samples"], "jobstats": t["jobstats"], "totalcpu_zero": t["totalcpu_zero"],
    })


def _hours(df: pd.DataFrame) -> pd.DataFrame:
    el = df["elapsed_s"].astype(float)
    util = df["gpu_util_mean"].fillna(0.0)
    return pd.DataFrame({
        "jobs": 1,
        "core_hours_alloc": df["alloc_cpus"] * el / H,
        "core_hours_used": df["cpu_used_s"] / H,
        "core_hours_used_true": df["cpu_true_s"] / H,
        "mem_gib_hours_alloc": df["alloc_mem_bytes"] * el / GIB / H,
        "mem_gib_hours_peak": df["mem_peak_bytes"] * el / GIB / H,
        "gpu_hours_alloc": df["alloc_gpus"] * el / H,
        "gpu_hours_used": df["alloc_gpus"] * el * util / H,
        "gpu_mem_gib_hours_alloc": df["gpu_mem_alloc_bytes"] * el / GIB / H,
        "gpu_mem_gib_hours_peak": df["gpu_mem_peak_bytes"].fillna(0) * el / GIB / H,
    }, index=df.index)


def _round(d: dict) -> dict:
    return {k: int(v) if k == "jobs" else round(float(v), 6) for k, v in d.items()}


def truth_totals(df: pd.DataFrame, extra: dict, jobstats_short_s: int = 60) -> dict:
    hours = _hours(df)
    totals = _round(hours.sum().to_dict())
    gpu = df["alloc_gpus"] > 0
    summary = df["jobstats"].astype(bool) & (df["elapsed_s"] >= jobstats_short_s)
    gpu_cols = ["jobs", "gpu_hours_alloc", "gpu_hours_used", "gpu_mem_gib_hours_alloc", "gpu_mem_gib_hours_peak"]
    by_source = {
        "jobstats": _round(hours[gpu & summary][gpu_cols].sum().to_dict()),
        "telemetry_only": _round(hours[gpu & ~summary][gpu_cols].sum().to_dict()),
    }
    by_account = {a: _round(g.sum().to_dict()) for a, g in hours.groupby(df["account"], sort=True)}
    failed = {}
    for s in FAILED_STATES:
        on = df["state"] == s
        failed[s] = _round(hours[on][["jobs", "core_hours_alloc", "gpu_hours_alloc", "mem_gib_hours_alloc"]].sum()
                           .to_dict()) | {"elapsed_hours": round(float(df["elapsed_s"][on].sum()) / H, 6)}
    out = {
        "definitions": "docs/synthetic.md#ground-truth",
        "totals": totals,
        "gpu_by_usage_source": by_source,
        "failed_by_state": failed,
        "failed_hours_by_state": {s: failed[s]["core_hours_alloc"] for s in FAILED_STATES},
        "failed_gpu_hours_by_state": {s: failed[s]["gpu_hours_alloc"] for s in FAILED_STATES},
        "per_account": by_account,
        "state_counts": {s: int(c) for s, c in df["state"].value_counts().sort_index().items()},
    }
    out.update(extra)
    return out
