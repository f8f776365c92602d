"""Headline accounting: allocated vs used core-hours, memory GiB-hours, GPU-hours, failed work and dollars.

Every figure is a sum over the per-job rows of ``waste.parquet`` (:mod:`audit.accounting.waste`); the definitions
are in docs/glossary.md ("Headline figures").  Figures of use cover only the jobs whose use is known;
each ``*_efficiency`` is used / allocated over those same jobs, and each ``jobs_with_*_usage`` says how many.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .failed import failed_totals
from .waste import per_job_waste

H = 3600.0
GiB_H = 2**30 * 3600.0


def _known_sum(values: np.ndarray, known: np.ndarray):
    """Sum over the jobs whose use is known; None (unknown, not zero) when no job's use is known."""
    return float(np.asarray(values, float)[known].sum()) if known.any() else None


def _ratio(a, b):
    return float(a / b) if a is not None and b and b > 0 else None


def last_ends(jobs: pd.DataFrame) -> pd.Series:
    """When each job ended, for the period's end: its end time; where the log records none for any job (an SWF
    trace with no wait times, so no start), its submission plus its run time, the earliest it can have ended."""
    ends = jobs["end_time"]
    if not ends.isna().all() or "elapsed_s" not in jobs:
        return ends
    run = pd.to_timedelta(pd.to_numeric(jobs["elapsed_s"], errors="coerce").astype("float64"), unit="s")
    return jobs["submit_time"] + run


def summarise(waste: pd.DataFrame, jobs: pd.DataFrame, price_book=None) -> dict:
    """The headline figures (plain floats and ints, JSON-ready) under the stable keys of the glossary."""
    ck = waste["cpu_usage_known"].to_numpy()
    mk = waste["mem_usage_known"].to_numpy()
    gk = waste["gpu_usage_known"].to_numpy()
    core_alloc = waste["core_s_alloc"].to_numpy() / H
    mem_alloc = waste["mem_byte_s_alloc"].to_numpy() / GiB_H
    gpu_alloc = waste["gpu_s_alloc"].to_numpy() / H
    core_used = _known_sum(waste["core_s_used"].to_numpy() / H, ck)
    mem_peak = _known_sum(waste["mem_byte_s_peak"].to_numpy() / GiB_H, mk)
    gpu_used = _known_sum(waste["gpu_s_used"].to_numpy() / H, gk)
    starts, ends = jobs["submit_time"], last_ends(jobs)
    states = jobs["state"].fillna("UNKNOWN").value_counts().sort_index()
    failed = failed_totals(waste)
    out = {
        "cluster": ", ".join(sorted(jobs["cluster"].dropna().unique().tolist())) or "unknown",
        "period_start": None if starts.isna().all() else starts.min().isoformat(),
        "period_end": None if ends.isna().all() else ends.max().isoformat(),
        "jobs": int(len(jobs)),
        "states": {str(k): int(v) for k, v in states.items()},
        "core_hours_alloc": float(core_alloc.sum()),
        "core_hours_used": core_used,
        "cpu_efficiency": _ratio(core_used, core_alloc[ck].sum()),
        "jobs_with_cpu_usage": int(ck.sum()),
        "mem_gib_hours_alloc": float(mem_alloc.sum()),
        "mem_gib_hours_peak": mem_peak,
        "mem_efficiency": _ratio(mem_peak, mem_alloc[mk].sum()),
        "jobs_with_mem_usage": int(mk.sum()),
        "gpu_hours_alloc": float(gpu_alloc.sum()),
        "gpu_hours_used": gpu_used,
        "gpu_efficiency": _ratio(gpu_used, gpu_alloc[gk].sum()),
        "jobs_with_gpu_usage": int(gk.sum()),
        "gpu_mem_gib_hours_held": _nan_none(np.nansum(waste["gpu_mem_bytes_held"] * waste["elapsed_s"]) / GiB_H
                                             if waste["gpu_mem_bytes_held"].notna().any() else None),
        "walltime_hours_requested": float(np.nansum(waste["walltime_s_limit"]) / H),
        "walltime_hours_unused": float(np.nansum(waste["walltime_s_unused"]) / H),
        "failed_hours_by_state": {s: v["core_hours"] for s, v in failed.items()},
        "failed_gpu_hours_by_state": {s: v["gpu_hours"] for s, v in failed.items()},
        "failed_jobs_by_state": {s: v["jobs"] for s, v in failed.items()},
    }
    if price_book is not None and "cost_usd_alloc" in waste:
        idle = waste[["cost_usd_cpu_idle", "cost_usd_mem_idle", "cost_usd_gpu_idle"]].sum(min_count=1)
        out.update({
            "price_book": price_book.name,
            "price_book_date": price_book.date,
            "cost_usd_alloc": float(waste["cost_usd_alloc"].sum()),
            "cost_usd_cpu_alloc": float(waste["cost_usd_cpu_alloc"].sum()),
            "cost_usd_mem_alloc": float(waste["cost_usd_mem_alloc"].sum()),
            "cost_usd_gpu_alloc": float(waste["cost_usd_gpu_alloc"].sum()),
            "cost_usd_idle": float(np.nansum(idle.to_numpy(dtype=float))) if (ck | mk | gk).any() else None,
            "cost_usd_cpu_idle": _nan_none(idle["cost_usd_cpu_idle"]),
            "cost_usd_mem_idle": _nan_none(idle["cost_usd_mem_idle"]),
            "cost_usd_gpu_idle": _nan_none(idle["cost_usd_gpu_idle"]) if gk.any() else None,
            "cost_usd_alloc_usage_unknown": float(
                waste["cost_usd_cpu_alloc"][~ck].sum() + waste["cost_usd_mem_alloc"][~mk].sum()
                + waste["cost_usd_gpu_alloc"][(waste["alloc_gpus"] > 0).to_numpy() & ~gk].sum()),
            "cost_usd_dominant": _nan_none(waste["cost_usd_dominant"].sum(min_count=1)),
        })
    return out


def _nan_none(x):
    return None if x is None or (isinstance(x, float) and np.isnan(x)) or pd.isna(x) else float(x)


def headline(jobs: pd.DataFrame, price_book=None, shape=None) -> dict:
    """The headline figures of a canonical job table."""
    return summarise(per_job_waste(jobs, price_book, shape), jobs, price_book)
