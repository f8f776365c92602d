"""Failed work and a one-line diagnosis per failed job, from the data we have (and saying when it cannot tell).

Similar jobs are the same user's jobs of the same job-name family; their 95th percentile peak memory (or
run time) is the evidence for a suggested request, rounded up to a whole GiB (or to the next 15 minutes)
with a 10 % margin.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .waste import FAILED_STATES, GiB

SIMILAR_MIN = 3
MARGIN = 1.10


def _gib(x: float) -> str:
    return f"{x / GiB:.1f} GiB"


def _hours(s: float) -> str:
    return f"{s / 3600:.2f} h"


def _similar_quantile(waste: pd.DataFrame, column: str, q: float = 0.95) -> pd.Series:
    """Per job: the q-quantile of ``column`` over the other jobs of the same user and family (NaN if too few)."""
    ok = waste[column].notna()
    key = waste["user"].astype(str) + "\x00" + waste["job_family"].astype(str)
    grouped = waste.loc[ok, column].groupby(key[ok])
    stats = pd.DataFrame({"n": grouped.size(), "q": grouped.quantile(q)})
    joined = stats.reindex(key.to_numpy())
    return pd.Series(np.where(joined["n"].to_numpy() >= SIMILAR_MIN, joined["q"].to_numpy(), np.nan),
                     index=waste.index)


def diagnose(waste: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """Failed jobs with the resources they held and a plain-words diagnosis."""
    failed = waste["failed"].to_numpy()
    req_mem = jobs["req_mem_bytes"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    peak = waste["mem_peak_bytes"].to_numpy(dtype=float)
    sim_mem = _similar_quantile(waste.assign(_m=np.where(waste["state"] == "COMPLETED", peak, np.nan)), "_m")
    el = waste["elapsed_s"].to_numpy(dtype=float)
    sim_time = _similar_quantile(waste.assign(_t=np.where(waste["state"] == "COMPLETED", el, np.nan)), "_t")
    rows = []
    for i in np.flatnonzero(failed):
        rows.append(_one(waste.iloc[i], req_mem[i], peak[i], sim_mem.iat[i], sim_time.iat[i]))
    out = waste.loc[failed, ["job_id", "user", "account", "partition", "state", "elapsed_s", "core_s_alloc",
                             "gpu_s_alloc", "mem_byte_s_alloc"]].copy()
    out["diagnosis"] = rows
    return out.reset_index(drop=True)


def _one(w, req_mem, peak, sim_mem, sim_time) -> str:
    state = w["state"]
    if state == "OUT_OF_MEMORY":
        if np.isnan(peak) or np.isnan(req_mem):
            head = "OOM: the data has no memory peak or request for this job"
        else:
            head = f"OOM: peak {_gib(peak)} reached the {_gib(req_mem)} request"
        if not np.isnan(sim_mem):
            ask = np.ceil(sim_mem * MARGIN / GiB)
            return f"{head}; similar jobs peak at {_gib(sim_mem)} — request {ask:.0f} GiB"
        return f"{head}; too few similar completed jobs to suggest a request"
    if state == "TIMEOUT":
        limit = w["walltime_s_limit"]
        head = f"TIMEOUT: ran {_hours(w['elapsed_s'])} into its {_hours(limit)} limit" if not np.isnan(limit) \
            else "TIMEOUT: the time limit is not in the data"
        if not np.isnan(sim_time):
            ask = np.ceil(sim_time * MARGIN / 900) * 900
            return f"{head}; similar jobs finish in {_hours(sim_time)} — request {_hours(ask)}"
        return f"{head}; too few similar completed jobs to suggest a limit"
    if state == "NODE_FAIL":
        return "NODE_FAIL: a node failed under the job; not the job's fault — resubmit (consider checkpointing)"
    if state == "PREEMPTED":
        return "PREEMPTED: a higher-priority job took the resources; lost work unless the job checkpoints"
    return "FAILED: the job exited non-zero; the accounting data cannot tell why"


def failed_totals(waste: pd.DataFrame) -> dict:
    """Allocated core-hours (and GPU-hours, jobs) of failed jobs, by state, for every failed state."""
    by = {}
    for s in FAILED_STATES + ("CANCELLED",):
        on = (waste["state"] == s).to_numpy()
        by[s] = {"jobs": int(on.sum()), "core_hours": float(waste["core_s_alloc"][on].sum() / 3600),
                 "gpu_hours": float(waste["gpu_s_alloc"][on].sum() / 3600)}
    return by
