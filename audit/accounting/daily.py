"""Occupancy against utilisation day by day, per partition and its GPU type (``occupancy_daily.csv``), and the
GPU types held (``gpu_types.csv``): sums of the hourly ``occupancy.parquet`` and of ``waste.parquet``.

A day's occupancy is what was allocated over the partition's capacity × the hours of that day in the period;
utilisation is what was used of what was allocated, over the jobs with known use.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .shape import node_shape_by_partition

H = 3600.0
DAILY_COLUMNS = ("day", "partition", "gpu_type", "hours", "core_hours_alloc", "cpu_occupancy", "cpu_utilisation",
                 "gpu_hours_alloc", "gpu_occupancy", "gpu_utilisation")


def _div(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / b, np.nan)


def daily(occ: pd.DataFrame, capacity: pd.DataFrame | None, shape: pd.DataFrame | None) -> pd.DataFrame:
    """One row per day and partition (``DAILY_COLUMNS``)."""
    if occ is None or occ.empty:
        return pd.DataFrame(columns=list(DAILY_COLUMNS))
    day = occ["hour"].dt.strftime("%Y-%m-%d")
    sums = ["core_s_alloc", "core_s_alloc_known", "core_s_used", "gpu_s_alloc", "gpu_s_alloc_known", "gpu_s_used"]
    g = occ.assign(day=day.to_numpy())[["day", "partition", *sums]].groupby(["day", "partition"], sort=True)
    d = g.sum()
    d["hours"] = g.size()
    d = d.reset_index()
    out = pd.DataFrame({"day": d["day"], "partition": d["partition"].astype(str)})
    types = node_shape_by_partition(shape)["gpu_type"] if shape is not None else pd.Series(dtype=object)
    out["gpu_type"] = out["partition"].map(types).astype(object).fillna("(none)").replace("", "(none)")
    out["hours"] = d["hours"].astype(int)
    out["core_hours_alloc"] = d["core_s_alloc"] / H
    out["gpu_hours_alloc"] = d["gpu_s_alloc"] / H
    out["cpu_utilisation"] = _div(d["core_s_used"], d["core_s_alloc_known"])
    out["gpu_utilisation"] = _div(d["gpu_s_used"], d["gpu_s_alloc_known"])
    if capacity is not None:
        cap = capacity.reindex(out["partition"].to_numpy())
        out["cpu_occupancy"] = _div(d["core_s_alloc"], cap["cpus_total"].to_numpy() * H * d["hours"].to_numpy())
        out["gpu_occupancy"] = _div(d["gpu_s_alloc"], cap["gpus_total"].to_numpy() * H * d["hours"].to_numpy())
    else:
        out["cpu_occupancy"] = np.nan
        out["gpu_occupancy"] = np.nan
    return out[list(DAILY_COLUMNS)]


def gpu_types(waste: pd.DataFrame, shape: pd.DataFrame | None) -> pd.DataFrame:
    """Per GPU type: GPUs in the cluster, jobs, GPU-hours allocated, used (known) and idle, utilisation, USD."""
    gpu = waste[waste["alloc_gpus"] > 0]
    cols = ["gpu_type", "gpus", "jobs", "gpu_hours_alloc", "gpu_hours_used", "gpu_utilisation", "cost_usd_alloc"]
    if gpu.empty:
        return pd.DataFrame(columns=cols)
    known = gpu["gpu_usage_known"].to_numpy(dtype=bool)
    frame = pd.DataFrame({"gpu_type": gpu["gpu_type"].astype(str).to_numpy(),
                          "alloc": gpu["gpu_s_alloc"].to_numpy(dtype=float) / H,
                          "alloc_known": np.where(known, gpu["gpu_s_alloc"].to_numpy(dtype=float), 0.0) / H,
                          "used": np.where(known, gpu["gpu_s_used"].to_numpy(dtype=float), 0.0) / H,
                          "usd": gpu["cost_usd_gpu_alloc"].to_numpy(dtype=float) if "cost_usd_gpu_alloc" in gpu
                          else np.nan})
    g = frame.groupby("gpu_type", sort=True)
    out = pd.DataFrame({"jobs": g.size(), "gpu_hours_alloc": g["alloc"].sum(), "gpu_hours_used": g["used"].sum(),
                        "alloc_known": g["alloc_known"].sum(), "cost_usd_alloc": g["usd"].sum(min_count=1)})
    out["gpu_utilisation"] = _div(out["gpu_hours_used"], out["alloc_known"])
    if shape is not None:
        s = shape.drop_duplicates("group")
        s = s[s["gpus"] > 0]
        counts = (s["count"] * s["gpus"]).groupby(s["gpu_type"].astype(str)).sum()
        out["gpus"] = counts.reindex(out.index)
    else:
        out["gpus"] = np.nan
    return out.reset_index()[cols]
