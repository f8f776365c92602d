"""Headline accounting: allocated vs used core-hours, memory GiB-hours and GPU-hours.

Definitions (docs/glossary.md, "Headline figures"):

* ``core_hours_alloc`` = Σ alloc_cpus × elapsed_s / 3600 over all jobs;
  ``core_hours_used`` = Σ cpu_used_s / 3600 over jobs whose CPU use is known;
  ``cpu_efficiency`` = used / allocated over those same jobs only.
* ``mem_gib_hours_alloc`` = Σ alloc_mem_bytes (request when unknown) × elapsed_s / 2**30 / 3600;
  ``mem_gib_hours_peak`` = Σ mem_peak_bytes × elapsed_s / 2**30 / 3600 over jobs with a known peak
  (peak held for the whole run: an upper bound on memory used); ``mem_efficiency`` over those jobs.
* ``gpu_hours_alloc`` = Σ alloc_gpus × elapsed_s / 3600;
  ``gpu_hours_used`` = Σ alloc_gpus × gpu_util_mean × elapsed_s / 3600 over jobs with known GPU use.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

GiB = 2**30


def _f(s: pd.Series) -> np.ndarray:
    return s.astype("Float64").to_numpy(dtype="float64", na_value=np.nan)


def _ratio(a: float, b: float):
    return float(a / b) if b > 0 else None


def _known_sum(values: np.ndarray, known: np.ndarray):
    """Sum over the jobs whose use is known; None (unknown, not zero) when no job's use is known."""
    return float(values[known].sum()) if known.any() else None


def headline(jobs: pd.DataFrame) -> dict:
    """The summary figures of a canonical job table (plain floats and ints, JSON-ready)."""
    elapsed = np.nan_to_num(_f(jobs["elapsed_s"]))
    cav = jobs["caveats"].fillna("").astype(str)
    cpus = np.nan_to_num(_f(jobs["alloc_cpus"]))
    cpu_used = _f(jobs["cpu_used_s"])
    cpu_used = np.where(cav.str.contains("totalcpu_zero", regex=False).to_numpy(), np.nan, cpu_used)
    cpu_known = ~np.isnan(cpu_used)
    core_alloc = cpus * elapsed / 3600
    mem = _f(jobs["alloc_mem_bytes"])
    mem = np.nan_to_num(np.where(np.isnan(mem), _f(jobs["req_mem_bytes"]), mem))
    mem_alloc = mem * elapsed / GiB / 3600
    peak = _f(jobs["mem_peak_bytes"])
    peak_known = ~np.isnan(peak)
    mem_peak = np.nan_to_num(peak) * elapsed / GiB / 3600
    gpus = np.nan_to_num(_f(jobs["alloc_gpus"]))
    util = _f(jobs["gpu_util_mean"])
    gpu_known = ~np.isnan(util) & (gpus > 0)
    gpu_alloc = gpus * elapsed / 3600
    gpu_used = np.nan_to_num(util) * gpu_alloc
    starts, ends = jobs["submit_time"], jobs["end_time"]
    states = jobs["state"].fillna("UNKNOWN").value_counts().sort_index()
    return {
        "cluster": ", ".join(sorted(jobs["cluster"].dropna().unique().tolist())) or "unknown",
        "period_start": None if starts.isna().all() else starts.min().isoformat(),
        "period_end": None if ends.isna().all() else ends.max().isoformat(),
        "jobs": int(len(jobs)),
        "states": {str(k): int(v) for k, v in states.items()},
        "core_hours_alloc": float(core_alloc.sum()),
        "core_hours_used": _known_sum(np.where(cpu_known, cpu_used, 0) / 3600, cpu_known),
        "cpu_efficiency": _ratio(np.nansum(np.where(cpu_known, cpu_used, 0)) / 3600, core_alloc[cpu_known].sum()),
        "jobs_with_cpu_usage": int(cpu_known.sum()),
        "mem_gib_hours_alloc": float(mem_alloc.sum()),
        "mem_gib_hours_peak": _known_sum(mem_peak, peak_known),
        "mem_efficiency": _ratio(mem_peak[peak_known].sum(), mem_alloc[peak_known].sum()),
        "jobs_with_mem_usage": int(peak_known.sum()),
        "gpu_hours_alloc": float(gpu_alloc.sum()),
        "gpu_hours_used": _known_sum(gpu_used, gpu_known),
        "gpu_efficiency": _ratio(gpu_used[gpu_known].sum(), gpu_alloc[gpu_known].sum()),
        "jobs_with_gpu_usage": int(gpu_known.sum()),
    }
