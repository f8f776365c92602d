"""A leakage check: nothing known only after a time may change what was predicted before it.

``future_changes(build, jobs, cut)`` perturbs every usage figure (elapsed time, CPU time, memory and GPU
use, state) of the jobs that ended at or after ``cut`` and rebuilds; the output rows of jobs submitted
before ``cut`` must not change.  Any feature, model or calibration that reads the future fails it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

USAGE = ("elapsed_s", "cpu_used_s", "mem_peak_bytes", "gpu_util_mean", "gpu_mem_peak_bytes")


def perturb_future(jobs: pd.DataFrame, cut: pd.Timestamp, seed: int = 0) -> pd.DataFrame:
    """A copy where jobs ending at or after ``cut`` have their usage scaled by random factors in [0.3, 3]
    (kept positive and, for GPU utilisation, within [0, 1]) and their state shuffled among themselves."""
    rng = np.random.default_rng(seed)
    out = jobs.copy()
    late = (out["end_time"] >= cut).to_numpy(dtype=bool)
    n = int(late.sum())
    for col in USAGE:
        if col not in out:
            continue
        v = pd.to_numeric(out[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan).copy()
        f = np.exp(rng.uniform(np.log(0.3), np.log(3.0), n))
        new = v[late] * f
        if col == "gpu_util_mean":
            new = np.clip(new, 0.0, 1.0)
        elif col == "elapsed_s":
            new = np.maximum(np.round(new), 1.0)
        v[late] = np.where(np.isfinite(v[late]), new, np.nan)
        s = pd.Series(v, index=out.index)
        out[col] = (s.round() if str(out[col].dtype) == "Int64" else s).astype(out[col].dtype)
    if "state" in out and n:
        st = out["state"].to_numpy(dtype=object, na_value=None).copy()
        st[late] = rng.permutation(st[late])
        out["state"] = pd.array(st, dtype=jobs["state"].dtype)
    return out


def future_changes(build, jobs: pd.DataFrame, cut: pd.Timestamp, seed: int = 0) -> list[str]:
    """Columns of ``build(jobs)`` whose value changed for some job submitted before ``cut``.

    ``build`` returns a frame with one row per job of ``jobs`` (same order) or with a ``submit_s`` column.
    """
    a = build(jobs)
    b = build(perturb_future(jobs, cut, seed))
    if "submit_s" in a:
        early_a = a["submit_s"].to_numpy() < cut.timestamp()
        early_b = b["submit_s"].to_numpy() < cut.timestamp()
    else:
        early_a = early_b = (jobs["submit_time"] < cut).to_numpy(dtype=bool)
    a, b = a[early_a].reset_index(drop=True), b[early_b].reset_index(drop=True)
    if len(a) != len(b):
        return ["<rows>"]
    changed = []
    for c in a.columns:
        x, y = a[c], b[c]
        if x.dtype.kind in "fiu" or str(x.dtype) in ("Float64", "Int64"):
            xv = x.to_numpy(dtype=np.float64, na_value=np.nan)
            yv = y.to_numpy(dtype=np.float64, na_value=np.nan)
            same = (xv == yv) | (np.isnan(xv) & np.isnan(yv))
        else:
            same = (x.astype("string").fillna("<na>") == y.astype("string").fillna("<na>")).to_numpy()
        if not same.all():
            changed.append(c)
    return changed
