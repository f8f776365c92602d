"""Write the telemetry join's per-job figures into the job table, and keep its ``caveats`` column honest.

Telemetry fills only what the accounting left unknown (a jobstats summary or sacct usage wins); a filled GPU
figure removes ``no_gpu_telemetry``; filled CPU and memory remove ``no_usage_fields``; a cgroup CPU counter
replaces a TotalCPU of 0 flagged ``totalcpu_zero`` (and removes the flag).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..job_table import CAVEATS, conform


def add_caveat(caveats: pd.Series, mask, code: str) -> pd.Series:
    """Append ``code`` to the ``;``-joined caveats where ``mask`` holds (once)."""
    if code not in CAVEATS:
        raise KeyError(f"undocumented caveat code {code!r}")
    m = np.asarray(mask, dtype=bool)
    cur = caveats.astype("object").where(caveats.notna(), "").astype(str)
    has = cur.str.split(";").apply(lambda xs: code in xs) if m.any() else pd.Series(False, index=cur.index)
    m = m & ~has.to_numpy()
    out = cur.copy()
    out[m] = np.where(out[m] == "", code, out[m] + ";" + code)
    return out.where(out != "", None).astype("string")


def drop_caveat(caveats: pd.Series, mask, code: str) -> pd.Series:
    """Remove ``code`` from the caveats where ``mask`` holds."""
    m = np.asarray(mask, dtype=bool)
    cur = caveats.astype("object").where(caveats.notna(), "").astype(str)
    out = cur.copy()
    if m.any():
        out[m] = out[m].str.split(";").apply(lambda xs: ";".join(x for x in xs if x and x != code))
    return out.where(out != "", None).astype("string")


def apply_stats(jobs: pd.DataFrame, stats: pd.DataFrame, partial_below: float = 0.9) -> pd.DataFrame:
    """The job table with telemetry figures filled in where unknown, and caveats updated."""
    out = jobs.copy()
    util = stats["gpu_util_mean"]
    fill_util = (util.notna() & out["gpu_util_mean"].isna()).to_numpy(dtype=bool)
    fill_gmem = (stats["gpu_mem_peak_bytes"].notna() & out["gpu_mem_peak_bytes"].isna()).to_numpy(dtype=bool)
    mpi_zero = out["caveats"].fillna("").str.split(";").apply(lambda xs: "totalcpu_zero" in xs).to_numpy(dtype=bool)
    # TotalCPU 0 from MPI outside Slurm's accounting is unknown use: the job's cgroup counter knows better
    fill_cpu = (stats["cpu_used_s"].notna() & (out["cpu_used_s"].isna() | mpi_zero)).to_numpy(dtype=bool)
    fill_mem = (stats["mem_peak_bytes"].notna() & out["mem_peak_bytes"].isna()).to_numpy(dtype=bool)
    out.loc[fill_util, "gpu_util_mean"] = util[fill_util].to_numpy()
    out.loc[fill_gmem, "gpu_mem_peak_bytes"] = stats["gpu_mem_peak_bytes"][fill_gmem].to_numpy()
    out.loc[fill_cpu, "cpu_used_s"] = stats["cpu_used_s"][fill_cpu].to_numpy()
    out.loc[fill_mem, "mem_peak_bytes"] = stats["mem_peak_bytes"][fill_mem].to_numpy()
    cav = out["caveats"]
    cav = drop_caveat(cav, fill_util, "no_gpu_telemetry")
    cav = drop_caveat(cav, fill_cpu & mpi_zero, "totalcpu_zero")
    cav = add_caveat(cav, fill_util | fill_gmem | fill_cpu | fill_mem, "telemetry")
    path = stats["join_path"].fillna("").to_numpy()
    cav = add_caveat(cav, fill_util & (path == "node_time"), "telemetry_node_attributed")
    cover = stats["gpu_coverage"].to_numpy(dtype="float64", na_value=np.nan)
    due = stats["_due"].to_numpy(dtype="float64") if "_due" in stats else np.full(len(stats), np.nan)
    with np.errstate(invalid="ignore"):
        gpus = jobs["alloc_gpus"].to_numpy(dtype="float64", na_value=0)
        partial = fill_util & (cover < partial_below) & (due >= 2 * np.maximum(gpus, 1))
    cav = add_caveat(cav, partial, "telemetry_partial")
    sm = (stats["gpu_util_metric"].fillna("") == "DCGM_FI_PROF_SM_ACTIVE").to_numpy()
    cav = add_caveat(cav, fill_util & sm, "gpu_util_sm_active")
    usage_now = (out["cpu_used_s"].notna() & out["mem_peak_bytes"].notna()).to_numpy()
    cav = drop_caveat(cav, usage_now & (fill_cpu | fill_mem), "no_usage_fields")
    out["caveats"] = cav
    return conform(out)
