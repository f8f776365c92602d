"""What we predict per job, what the user asked for it, and how a job weighs in resource-hours.

| target | actual need | request | weight |
|---|---|---|---|
| ``walltime`` | ``elapsed_s``, at most ``time_limit_s`` (a run past its limit is the kill grace) | ``time_limit_s`` | 1 |
| ``memory`` | ``mem_peak_bytes`` | ``req_mem_bytes`` (else ``alloc_mem_bytes``) | ``elapsed_s`` |
| ``cpus`` | ``cpu_used_s / elapsed_s`` (cores busy on average) | ``req_cpus`` (else ``alloc_cpus``) | ``elapsed_s`` |
| ``gpus`` | ``ceil(alloc_gpus × gpu_util_mean)`` (whole GPUs that carry the mean load) | ``req_gpus`` (else ``alloc_gpus``) | ``elapsed_s`` |
| ``gpu_memory`` | ``gpu_mem_peak_bytes`` | ``alloc_gpus ×`` the card's memory | ``elapsed_s`` |
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

GiB = 2**30

#: memory per card by GPU type (lower-case substring match); a site passes its own through ``gpu_memory_bytes``
GPU_MEMORY_BYTES = {"h100": 80 * GiB, "a100": 80 * GiB, "h200": 141 * GiB, "l40s": 48 * GiB, "a40": 48 * GiB,
                    "a10": 24 * GiB, "v100": 32 * GiB, "p100": 16 * GiB, "t4": 16 * GiB, "mi250": 128 * GiB}


@dataclass(frozen=True)
class Target:
    name: str
    column: str       # stem of the prediction columns (units in the name)
    unit: str
    log_offset: float  # models work on log(value + offset): quantiles survive any increasing transform
    weighted: bool     # resource-hours weigh each job by its elapsed time


TARGETS: dict[str, Target] = {
    "walltime": Target("walltime", "elapsed_s", "s", 1.0, False),
    "memory": Target("memory", "mem_peak_bytes", "bytes", float(2**20), True),
    "cpus": Target("cpus", "cpus_used", "cores", 0.01, True),
    "gpus": Target("gpus", "gpus_needed", "GPUs", 0.1, True),
    "gpu_memory": Target("gpu_memory", "gpu_mem_peak_bytes", "bytes", float(2**20), True),
}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(TARGETS)}") from None


def _f(jobs: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(jobs[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def _first(*arrays: np.ndarray) -> np.ndarray:
    out = arrays[0].copy()
    for a in arrays[1:]:
        out = np.where(np.isfinite(out), out, a)
    return out


def _has_caveat(jobs: pd.DataFrame, code: str) -> np.ndarray:
    cav = jobs["caveats"].astype("string").fillna("")
    return cav.str.contains(code, regex=False).to_numpy(dtype=bool)


def actual(jobs: pd.DataFrame, target: str) -> np.ndarray:
    """The job's actual need, NaN where it is unknown."""
    get_target(target)
    elapsed = _f(jobs, "elapsed_s")
    ran = elapsed > 0
    if target == "walltime":
        # a run stopped at its limit needed at least the limit: the seconds past it (the scheduler's kill grace,
        # Slurm's OverTimeLimit and KillWait) are not need, so the need is censored at the limit and a bound at
        # the limit covers it, as the request itself does
        limit = _f(jobs, "time_limit_s")
        return np.where(ran, np.where(np.isfinite(limit) & (limit > 0), np.fmin(elapsed, limit), elapsed), np.nan)
    if target == "memory":
        return np.where(ran, _f(jobs, "mem_peak_bytes"), np.nan)
    if target == "cpus":
        cpu = _f(jobs, "cpu_used_s")
        unknown = _has_caveat(jobs, "totalcpu_zero") | _has_caveat(jobs, "no_usage_fields")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(ran & ~unknown, cpu / elapsed, np.nan)
    gpus = _f(jobs, "alloc_gpus")
    gpu_job = ran & (gpus > 0)
    if target == "gpus":
        return np.where(gpu_job, np.ceil(gpus * _f(jobs, "gpu_util_mean") - 1e-9).clip(min=0), np.nan)
    return np.where(gpu_job, _f(jobs, "gpu_mem_peak_bytes"), np.nan)


def need_so_far(target: str, start_s: np.ndarray, limit_s: np.ndarray, at_s: float) -> np.ndarray | None:
    """What is known at ``at_s`` of the need of a job started before it and still running: a lower bound, NaN
    where none is known (not started).  Only a run time is known while it runs (its run so far, at most its
    limit, as :func:`actual` caps it); for every other target None: a peak or a mean is known when the job ends."""
    if get_target(target).name != "walltime":
        return None
    start = np.asarray(start_s, dtype=np.float64)
    limit = np.asarray(limit_s, dtype=np.float64)
    ran = np.where(start < at_s, at_s - start, np.nan)
    return np.where(np.isfinite(limit) & (limit > 0), np.minimum(ran, limit), ran)  # NaN stays NaN


def card_memory(gpu_type: pd.Series, table: dict | None = None) -> np.ndarray:
    """Memory per GPU from its type (first table key contained in the lower-cased type), NaN when unknown."""
    table = GPU_MEMORY_BYTES if table is None else table
    t = gpu_type.astype("string").str.lower().fillna("")
    out = np.full(len(t), np.nan)
    for key in sorted(table, key=len, reverse=True):
        hit = t.str.contains(key, regex=False).to_numpy(dtype=bool) & np.isnan(out)
        out[hit] = float(table[key])
    return out


def request(jobs: pd.DataFrame, target: str, *, gpu_memory_bytes: dict | None = None) -> np.ndarray:
    """What the user asked for, in the target's unit; NaN where unknown (or unlimited)."""
    get_target(target)
    if target == "walltime":
        return _f(jobs, "time_limit_s")
    if target == "memory":
        return _first(_f(jobs, "req_mem_bytes"), _f(jobs, "alloc_mem_bytes"))
    if target == "cpus":
        return _first(_f(jobs, "req_cpus"), _f(jobs, "alloc_cpus"))
    if target == "gpus":
        return _first(_f(jobs, "req_gpus"), _f(jobs, "alloc_gpus"))
    return _first(_f(jobs, "alloc_gpus"), _f(jobs, "req_gpus")) * card_memory(jobs["gpu_type"], gpu_memory_bytes)


def weight(jobs: pd.DataFrame, target: str) -> np.ndarray:
    """Weight of a job in resource-hours sums: its elapsed time for resources, 1 for walltime."""
    if not get_target(target).weighted:
        return np.ones(len(jobs))
    return np.nan_to_num(_f(jobs, "elapsed_s"), nan=0.0)


def eligible(jobs: pd.DataFrame, target: str) -> np.ndarray:
    """Jobs that ran, whose actual need is known and whose submit and end times are known."""
    y = actual(jobs, target)
    times = jobs["submit_time"].notna().to_numpy() & jobs["end_time"].notna().to_numpy()
    return np.isfinite(y) & (y >= 0) & times
