"""Occupancy (what was allocated) and utilisation (what was used of it), hour by hour.

Each job's allocation is an interval [start, end).  Resource-seconds per hour come from the exact overlap of
every interval with every hour, without a loop over jobs: with G(t) = Σ a·clip(t − start, 0, end − start),
the hour [h, h+1) holds G(h+1) − G(h), and G at all hour boundaries is two sorted cumulative sums.
Use is spread evenly over a job's run (its mean rate), so utilisation per hour is an estimate; the
totals over the period are exact.  Occupancy divides by the capacity of the cluster shape.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

HOUR = 3600


def _integral(t: np.ndarray, start: np.ndarray, end: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """G(t) for every t: Σ amount × overlap of [start, end) with (−∞, t)."""
    def part(points):
        order = np.argsort(points, kind="stable")
        p, a = points[order], amount[order]
        ca = np.concatenate([[0.0], np.cumsum(a)])
        cap = np.concatenate([[0.0], np.cumsum(a * p)])
        k = np.searchsorted(p, t, side="left")
        return t * ca[k] - cap[k]

    return part(start) - part(end)


def hourly(start_s: np.ndarray, end_s: np.ndarray, amounts: dict[str, np.ndarray], t0: int, t1: int) -> pd.DataFrame:
    """Resource-seconds per hour from ``t0`` to ``t1`` (epoch seconds, hour-aligned) for each named amount."""
    edges = np.arange(t0, t1 + HOUR, HOUR, dtype=float)
    out = {"hour": pd.to_datetime(edges[:-1], unit="s", utc=True)}
    for name, a in amounts.items():
        a = np.nan_to_num(np.asarray(a, dtype=float))
        g = _integral(edges, start_s, end_s, a)
        out[name] = np.diff(g)
    return pd.DataFrame(out)


def occupancy(waste: pd.DataFrame, capacity: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per hour and partition: allocated and used core-, GPU- and memory-seconds, occupancy and utilisation."""
    ok = waste["start_time"].notna() & waste["end_time"].notna() & (waste["elapsed_s"] > 0)
    w = waste[ok]
    if w.empty:
        return pd.DataFrame()
    start = w["start_time"].astype("int64").to_numpy() / 1e9
    end = w["end_time"].astype("int64").to_numpy() / 1e9
    t0 = int(np.floor(start.min() / HOUR) * HOUR)
    t1 = int(np.ceil(end.max() / HOUR) * HOUR)
    frames = []
    for part, idx in w.groupby("partition", sort=True).indices.items():
        el = w["elapsed_s"].to_numpy()[idx]

        def rate(col, idx=idx, el=el):
            return w[col].to_numpy(dtype=float)[idx] / el
        known_cpu = w["cpu_usage_known"].to_numpy()[idx]
        known_gpu = w["gpu_usage_known"].to_numpy()[idx]
        h = hourly(start[idx], end[idx], {
            "core_s_alloc": w["alloc_cpus"].to_numpy()[idx],
            "core_s_alloc_known": np.where(known_cpu, w["alloc_cpus"].to_numpy()[idx], 0),
            "core_s_used": np.where(known_cpu, rate("core_s_used"), 0),
            "gpu_s_alloc": w["alloc_gpus"].to_numpy()[idx],
            "gpu_s_alloc_known": np.where(known_gpu, w["alloc_gpus"].to_numpy()[idx], 0),
            "gpu_s_used": np.where(known_gpu, rate("gpu_s_used"), 0),
            "mem_byte_s_alloc": w["mem_alloc_bytes"].to_numpy()[idx],
        }, t0, t1)
        h.insert(1, "partition", part)
        frames.append(h)
    occ = pd.concat(frames, ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        occ["cpu_utilisation"] = occ["core_s_used"] / occ["core_s_alloc_known"]
        occ["gpu_utilisation"] = occ["gpu_s_used"] / occ["gpu_s_alloc_known"]
    if capacity is not None:
        cap = capacity.reindex(occ["partition"].to_numpy())
        with np.errstate(divide="ignore", invalid="ignore"):
            occ["cpu_occupancy"] = occ["core_s_alloc"].to_numpy() / (cap["cpus_total"].to_numpy() * HOUR)
            occ["gpu_occupancy"] = np.where(cap["gpus_total"].to_numpy() > 0,
                                            occ["gpu_s_alloc"].to_numpy() / (cap["gpus_total"].to_numpy() * HOUR),
                                            np.nan)
    return occ


def occupancy_totals(occ: pd.DataFrame, capacity: pd.DataFrame | None) -> dict:
    """Whole-period occupancy and utilisation, overall and per partition."""
    if occ.empty:
        return {}
    hours = occ["hour"].nunique()
    per = occ.groupby("partition").sum(numeric_only=True)
    out = {"hours": int(hours), "partitions": {}}
    for part, r in per.iterrows():
        d = {"core_hours_alloc": float(r["core_s_alloc"] / HOUR), "gpu_hours_alloc": float(r["gpu_s_alloc"] / HOUR),
             "cpu_utilisation": _div(r["core_s_used"], r["core_s_alloc_known"]),
             "gpu_utilisation": _div(r["gpu_s_used"], r["gpu_s_alloc_known"])}
        if capacity is not None and part in capacity.index:
            c = capacity.loc[part]
            d["cpu_occupancy"] = _div(r["core_s_alloc"], c["cpus_total"] * HOUR * hours)
            d["gpu_occupancy"] = _div(r["gpu_s_alloc"], c["gpus_total"] * HOUR * hours)
        out["partitions"][str(part)] = d
    if capacity is not None:
        tot = per.sum()
        out["cpu_occupancy"] = _div(tot["core_s_alloc"], capacity["cpus_total"].sum() * HOUR * hours)
        out["gpu_occupancy"] = _div(tot["gpu_s_alloc"], capacity["gpus_total"].sum() * HOUR * hours)
    return out


def _div(a, b):
    return float(a / b) if b and b > 0 else None
