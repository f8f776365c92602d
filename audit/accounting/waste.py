"""Per-job accounting (``waste.parquet``): allocated against used, resource by resource, with units in the names.

* CPU: ``core_s_alloc`` = alloc_cpus × elapsed_s; ``core_s_used`` = cpu_used_s; idle = alloc − used.
* Memory: ``mem_byte_s_alloc`` = alloc_mem_bytes (request when unknown) × elapsed_s; ``mem_byte_s_peak`` =
  mem_peak_bytes × elapsed_s (the peak held for the whole run, so idle memory is a lower bound).
* GPU: ``gpu_s_alloc`` = alloc_gpus × elapsed_s; ``gpu_s_used`` = gpu_s_alloc × gpu_util_mean.
* GPU memory: ``gpu_mem_bytes_held`` = alloc_gpus × memory per GPU of its type (cluster shape; null
  without one); ``gpu_mem_bytes_peak`` = gpu_mem_peak_bytes (summed over held GPUs).
* Walltime: ``walltime_s_unused`` = time_limit_s − elapsed_s.  It costs queue position (backfill cannot
  use the promised time), not node time, and is never priced or added to the idle figures.

Unknown use stays unknown: ``*_used``/``*_peak``/``*_idle`` are NaN and ``*_usage_known`` False.
Dollars, per-resource view (each idle unit priced on its own, as OpenCost does):
``cost_usd_{cpu,mem,gpu}_{alloc,idle}``.  Dominant-resource view: ``cost_usd_dominant`` = the largest of
the job's CPU, memory and GPU shares of its nodes × the nodes' hourly price × hours (needs the cluster
shape).  The two views answer different questions and are never added together.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..families import job_family
from .shape import gpu_memory_by_type, node_shape_by_partition

GiB = float(2**30)
FAILED_STATES = ("OUT_OF_MEMORY", "TIMEOUT", "NODE_FAIL", "FAILED", "PREEMPTED")


def _f(s: pd.Series) -> np.ndarray:
    return s.astype("Float64").to_numpy(dtype="float64", na_value=np.nan)


def _has(caveats: pd.Series, code: str) -> np.ndarray:
    return caveats.fillna("").astype(str).str.contains(code, regex=False).to_numpy()


def per_job_waste(jobs: pd.DataFrame, price_book=None, shape: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per job of the canonical table: see the module notes for every column."""
    elapsed = np.nan_to_num(_f(jobs["elapsed_s"]))
    cpus = np.nan_to_num(_f(jobs["alloc_cpus"]))
    cpu_used = _f(jobs["cpu_used_s"])
    cpu_used = np.where(_has(jobs["caveats"], "totalcpu_zero"), np.nan, cpu_used)
    mem = _f(jobs["alloc_mem_bytes"])
    mem = np.nan_to_num(np.where(np.isnan(mem), _f(jobs["req_mem_bytes"]), mem))
    peak = _f(jobs["mem_peak_bytes"])
    gpus = np.nan_to_num(_f(jobs["alloc_gpus"]))
    util = np.where(gpus > 0, _f(jobs["gpu_util_mean"]), np.nan)
    limit = _f(jobs["time_limit_s"])
    state = jobs["state"].astype("string")
    out = pd.DataFrame({
        "job_id": jobs["job_id"].to_numpy(),
        "cluster": jobs["cluster"].to_numpy(),
        "user": jobs["user"].fillna("(none)").to_numpy(),
        "account": jobs["account"].fillna("(none)").to_numpy(),
        "partition": jobs["partition"].fillna("(none)").to_numpy(),
        "qos": jobs["qos"].fillna("(none)").to_numpy(),
        "gpu_type": jobs["gpu_type"].where(gpus > 0).fillna("(none)").to_numpy(),
        "job_family": job_family(jobs["job_name"]).to_numpy(),
        "month": _month(jobs),
        "state": state.to_numpy(),
        "start_time": jobs["start_time"].to_numpy(),
        "end_time": jobs["end_time"].to_numpy(),
        "elapsed_s": elapsed,
        "alloc_cpus": cpus,
        "alloc_gpus": gpus,
        "core_s_alloc": cpus * elapsed,
        "core_s_used": cpu_used,
        "mem_byte_s_alloc": mem * elapsed,
        "mem_byte_s_peak": peak * elapsed,
        "gpu_s_alloc": gpus * elapsed,
        "gpu_s_used": gpus * elapsed * util,
        "walltime_s_limit": limit,
        "walltime_s_unused": np.where(np.isnan(limit), np.nan, np.maximum(limit - elapsed, 0)),
    })
    out["core_s_idle"] = out["core_s_alloc"] - out["core_s_used"]
    out["mem_byte_s_idle"] = np.maximum(out["mem_byte_s_alloc"] - out["mem_byte_s_peak"], 0).where(
        out["mem_byte_s_peak"].notna())
    out["gpu_s_idle"] = out["gpu_s_alloc"] - out["gpu_s_used"]
    out["cpu_usage_known"] = ~np.isnan(cpu_used)
    out["mem_usage_known"] = ~np.isnan(peak)
    out["gpu_usage_known"] = (gpus > 0) & ~np.isnan(util)
    out["mem_peak_bytes"] = peak
    out["mem_alloc_bytes"] = mem
    out["gpu_mem_bytes_peak"] = _f(jobs["gpu_mem_peak_bytes"])
    out["gpu_mem_bytes_held"] = _gpu_mem_held(jobs, gpus, shape)
    out["failed"] = state.isin(FAILED_STATES).fillna(False).to_numpy(dtype=bool)
    if price_book is not None:
        _add_costs(out, jobs, price_book, shape)
    return out


def _month(jobs: pd.DataFrame) -> np.ndarray:
    t = jobs["start_time"].fillna(jobs["submit_time"])
    return t.dt.strftime("%Y-%m").fillna("(unknown)").to_numpy()


def _gpu_mem_held(jobs, gpus, shape) -> np.ndarray:
    if shape is None:
        return np.full(len(jobs), np.nan)
    per = gpu_memory_by_type(shape)
    per_gpu = jobs["gpu_type"].map(per).astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
    return np.where(gpus > 0, gpus * per_gpu, 0.0)


def _add_costs(out: pd.DataFrame, jobs: pd.DataFrame, book, shape) -> None:
    gpu_jobs = out["alloc_gpus"] > 0
    book.check_gpu_types(out.loc[gpu_jobs, "gpu_type"].unique())
    types = out.loc[gpu_jobs, "gpu_type"].unique()
    gpu_price = out["gpu_type"].map({t: book.gpu_price(t).usd_per_hour for t in types}).astype(float).fillna(0.0)
    h = 1 / 3600.0
    out["cost_usd_cpu_alloc"] = out["core_s_alloc"] * h * book.cpu.usd_per_hour
    out["cost_usd_cpu_idle"] = out["core_s_idle"] * h * book.cpu.usd_per_hour
    out["cost_usd_mem_alloc"] = out["mem_byte_s_alloc"] / GiB * h * book.memory.usd_per_hour
    out["cost_usd_mem_idle"] = out["mem_byte_s_idle"] / GiB * h * book.memory.usd_per_hour
    out["cost_usd_gpu_alloc"] = out["gpu_s_alloc"] * h * gpu_price
    out["cost_usd_gpu_idle"] = (out["gpu_s_idle"] * h * gpu_price).where(gpu_jobs, 0.0)
    out["cost_usd_alloc"] = out["cost_usd_cpu_alloc"] + out["cost_usd_mem_alloc"] + out["cost_usd_gpu_alloc"]
    out["cost_usd_dominant"] = _dominant_cost(out, jobs, book, shape)


def _dominant_cost(out: pd.DataFrame, jobs: pd.DataFrame, book, shape) -> np.ndarray:
    """The share of its nodes a job blocks (largest of CPU, memory, GPU shares) × the nodes' price × hours."""
    if shape is None:
        return np.full(len(out), np.nan)
    node = node_shape_by_partition(shape).reindex(jobs["partition"].astype(object).to_numpy())
    ncpu = node["cpus"].to_numpy(dtype=float)
    nmem = node["mem_bytes"].to_numpy(dtype=float)
    ngpu = node["gpus"].to_numpy(dtype=float)
    gtype = node["gpu_type"].to_numpy(dtype=object)
    gprice = np.array([book.gpu[t].usd_per_hour if isinstance(t, str) and t in book.gpu else 0.0 for t in gtype])
    node_usd_h = ncpu * book.cpu.usd_per_hour + nmem / GiB * book.memory.usd_per_hour + ngpu * gprice
    nodes = np.maximum(np.nan_to_num(_f(jobs["alloc_nodes"]), nan=1.0), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.vstack([
            out["alloc_cpus"].to_numpy() / (nodes * ncpu),
            out["mem_alloc_bytes"].to_numpy() / (nodes * nmem),
            np.where(ngpu > 0, out["alloc_gpus"].to_numpy() / (nodes * ngpu), 0.0),
        ])
    share = np.clip(np.nanmax(np.where(np.isfinite(shares), shares, np.nan), axis=0), 0, 1)
    return share * nodes * node_usd_h * out["elapsed_s"].to_numpy() / 3600.0
