"""Totals by user, account (hierarchical paths roll up), partition, QOS, GPU type, job family and month,
and the top-N lists.  Every aggregate is a plain sum of ``waste.parquet`` rows, so group totals add up
to the whole exactly (each account level separately)."""

from __future__ import annotations

import numpy as np
import pandas as pd

DIMENSIONS = ("user", "partition", "qos", "gpu_type", "job_family", "month")
SUMS = ("core_s_alloc", "core_s_used", "core_s_idle", "mem_byte_s_alloc", "mem_byte_s_peak", "gpu_s_alloc",
        "gpu_s_used", "gpu_s_idle", "cost_usd_alloc", "cost_usd_cpu_idle", "cost_usd_mem_idle", "cost_usd_gpu_idle",
        "cost_usd_dominant")
HOURS = 3600.0
GiB_H = 2**30 * 3600.0


def account_prefixes(account: pd.Series) -> pd.DataFrame:
    """One row per (job position, account path prefix): ``org/team/p`` → ``org``, ``org/team``, ``org/team/p``."""
    acc = account.astype("string").fillna("(none)").reset_index(drop=True)
    parts = acc.str.split("/")
    depth = parts.str.len()
    out = []
    for k in range(int(depth.max()) if len(depth) else 0):
        has = (depth > k).to_numpy()
        out.append(pd.DataFrame({"pos": acc.index[has], "account_path": parts[has].str[: k + 1].str.join("/"),
                                 "level": k + 1}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=["pos", "account_path", "level"])


def _sums(w: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in SUMS if c in w.columns]
    base = w[cols].copy()
    base["jobs"] = 1
    base["failed_jobs"] = w["failed"].astype(int)
    base["failed_core_s"] = np.where(w["failed"], w["core_s_alloc"], 0.0)
    base["core_s_alloc_known"] = np.where(w["cpu_usage_known"], w["core_s_alloc"], 0.0)
    base["gpu_s_alloc_known"] = np.where(w["gpu_usage_known"], w["gpu_s_alloc"], 0.0)
    base["mem_byte_s_alloc_known"] = np.where(w["mem_usage_known"], w["mem_byte_s_alloc"], 0.0)
    return base


def _finish(g: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame(index=g.index)
    out["jobs"] = g["jobs"]
    out["core_hours_alloc"] = g["core_s_alloc"] / HOURS
    out["core_hours_used"] = g["core_s_used"] / HOURS
    out["cpu_efficiency"] = g["core_s_used"] / g["core_s_alloc_known"].replace(0, np.nan)
    out["mem_gib_hours_alloc"] = g["mem_byte_s_alloc"] / GiB_H
    out["mem_gib_hours_peak"] = g["mem_byte_s_peak"] / GiB_H
    out["mem_efficiency"] = g["mem_byte_s_peak"] / g["mem_byte_s_alloc_known"].replace(0, np.nan)
    out["gpu_hours_alloc"] = g["gpu_s_alloc"] / HOURS
    out["gpu_hours_used"] = g["gpu_s_used"] / HOURS
    out["gpu_hours_idle"] = g["gpu_s_idle"] / HOURS
    out["gpu_efficiency"] = g["gpu_s_used"] / g["gpu_s_alloc_known"].replace(0, np.nan)
    out["failed_jobs"] = g["failed_jobs"]
    out["failed_core_hours"] = g["failed_core_s"] / HOURS
    if "cost_usd_alloc" in g:
        out["cost_usd_alloc"] = g["cost_usd_alloc"]
        out["cost_usd_idle"] = g["cost_usd_cpu_idle"] + g["cost_usd_mem_idle"] + g["cost_usd_gpu_idle"]
        out["cost_usd_dominant"] = g["cost_usd_dominant"]
    return out


def aggregate(waste: pd.DataFrame, by: str) -> pd.DataFrame:
    """Totals per value of ``by`` (a dimension, or ``account`` with every path prefix as its own row)."""
    base = _sums(waste)
    if by == "account":
        pre = account_prefixes(waste["account"])
        rows = base.reset_index(drop=True).iloc[pre["pos"].to_numpy()].reset_index(drop=True)
        rows["account_path"] = pre["account_path"].to_numpy()
        rows["level"] = pre["level"].to_numpy()
        g = rows.groupby(["level", "account_path"], sort=True).sum(min_count=1)
    else:
        g = base.groupby(waste[by].to_numpy(), sort=True).sum(min_count=1)
        g.index.name = by
    return _finish(g).reset_index()


def all_aggregates(waste: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {by: aggregate(waste, by) for by in ("account",) + DIMENSIONS}


def top_n(waste: pd.DataFrame, jobs: pd.DataFrame, n: int = 10) -> dict[str, pd.DataFrame]:
    """The users with the most idle GPU-hours, the worst memory over-requests and the most failed work."""
    by_user = aggregate(waste, "user")
    idle_gpu = by_user[by_user["gpu_hours_idle"] > 0].nlargest(n, "gpu_hours_idle")[
        ["user", "jobs", "gpu_hours_alloc", "gpu_hours_used", "gpu_hours_idle", "gpu_efficiency"]]
    req = jobs["req_mem_bytes"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    peak = waste["mem_peak_bytes"].to_numpy(dtype=float)
    mem = waste.assign(req_gib=req / 2**30, peak_gib=peak / 2**30)
    with np.errstate(divide="ignore", invalid="ignore"):
        mem["over_request"] = np.where(peak > 0, req / peak, np.nan)
    mem = mem[mem["over_request"].notna() & (mem["req_gib"] >= 1)]
    mem["unused_gib_hours"] = (mem["req_gib"] - mem["peak_gib"]).clip(lower=0) * mem["elapsed_s"] / HOURS
    worst_mem = mem.nlargest(n, "unused_gib_hours")[
        ["job_id", "user", "req_gib", "peak_gib", "over_request", "unused_gib_hours"]]
    failed = by_user[by_user["failed_core_hours"] > 0].nlargest(n, "failed_core_hours")[
        ["user", "failed_jobs", "failed_core_hours", "jobs"]]
    return {"idle_gpu_hours_by_user": idle_gpu.reset_index(drop=True),
            "memory_over_request_jobs": worst_mem.reset_index(drop=True),
            "failed_work_by_user": failed.reset_index(drop=True)}


def efficiency_distribution(eff: pd.DataFrame) -> dict:
    """Quantiles of per-job CPU, memory and time efficiency (known values only) and how many are known.

    CPU and memory efficiencies above 100 % (``usage_exceeds_allocation``) are left out and counted apart."""
    out = {}
    for col in ("cpu_eff", "mem_eff", "time_eff"):
        v = eff[col].to_numpy(dtype=float)
        v = v[~np.isnan(v)]
        over = int((v > 1.0).sum()) if col != "time_eff" else 0
        if over:
            v = v[v <= 1.0]
        out[col] = {"known": int(v.size), "unknown": int(len(eff) - v.size - over)}
        if col != "time_eff":
            out[col]["exceeds_allocation"] = over
        if v.size:
            out[col].update({f"p{q}": float(np.quantile(v, q / 100)) for q in (10, 25, 50, 75, 90)})
    return out


def account_users(waste: pd.DataFrame) -> pd.DataFrame:
    """Totals per top-level account (the first part of the path) and user (``aggregates/by_account_user.csv``)."""
    top = waste["account"].astype(str).str.split("/").str[0].to_numpy()
    base = _sums(waste)
    g = base.groupby([top, waste["user"].astype(str).to_numpy()], sort=True).sum(min_count=1)
    g.index.names = ["account", "user"]
    return _finish(g).reset_index()
