"""Accuracy of quantile predictions: exact definitions (also in docs/predictors.md).

For test jobs i with actual need y_i, prediction q_i at level τ, request r_i and weight w_i
(elapsed time for resources, 1 for walltime):

- ``coverage`` = share of jobs with y_i ≤ q_i;  ``under_rate`` = share with y_i > q_i (= 1 − coverage):
  jobs a request of q_i would have killed or starved;
- ``overprov_ratio`` = median over jobs with y_i > 0 of q_i / y_i;
- ``recovered_fraction`` = 1 − Σ q_i·w_i / Σ r_i·w_i over jobs with a known request;
- ``pinball`` = mean of ρ_τ(y_i − q_i), ρ_τ(u) = max(τu, (τ − 1)u), in the target's unit;
- ``coverage_se`` = the standard error of a coverage share when jobs miss in groups (a habit's jobs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

METRICS = ("coverage", "under_rate", "overprov_ratio", "recovered_fraction", "pinball")


def pinball(y: np.ndarray, q: np.ndarray, level: float) -> float:
    u = np.asarray(y, dtype=np.float64) - np.asarray(q, dtype=np.float64)
    return float(np.mean(np.maximum(level * u, (level - 1.0) * u))) if len(u) else float("nan")


def coverage(y: np.ndarray, q: np.ndarray) -> float:
    return float(np.mean(y <= q)) if len(y) else float("nan")


def overprov_ratio(y: np.ndarray, q: np.ndarray) -> float:
    pos = y > 0
    return float(np.median(q[pos] / y[pos])) if pos.any() else float("nan")


def recovered_fraction(q: np.ndarray, request: np.ndarray, w: np.ndarray) -> float:
    known = np.isfinite(request) & np.isfinite(q)
    den = float(np.sum(request[known] * w[known]))
    return 1.0 - float(np.sum(q[known] * w[known])) / den if den > 0 else float("nan")


def coverage_se(covered: np.ndarray, groups: np.ndarray) -> float | np.ndarray:
    """Standard error of a coverage share whose jobs come in ``groups`` that miss together (a habit's jobs share
    one history, so one bound set too low misses a burst of them): the cluster-robust (sandwich) estimate
    ``sqrt(k / (k − 1) · Σ_g (Σ_{i∈g} (c_i − ĉ))²) / n`` over the ``k`` groups of the ``n`` jobs, which is the
    binomial ``sqrt(ĉ(1 − ĉ) / (n − 1))`` when every job is a group of its own (NaN under two groups).
    ``covered`` of shape (jobs, columns) gives one per column."""
    c = np.asarray(covered, dtype=np.float64)
    n = len(c)
    if n == 0:
        return float("nan") if c.ndim == 1 else np.full(c.shape[1:], np.nan)
    _, g = np.unique(np.asarray(groups), return_inverse=True)
    k = int(g.max()) + 1
    if k < 2:
        return float("nan") if c.ndim == 1 else np.full(c.shape[1:], np.nan)
    order = np.argsort(g, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(g[order]) != 0])
    e = np.add.reduceat(c[order] - c.mean(axis=0), starts, axis=0)  # each group's sum of deviations
    se = np.sqrt(k / (k - 1) * np.sum(e * e, axis=0)) / n
    return float(se) if c.ndim == 1 else se


def metric_set(y: np.ndarray, q: np.ndarray, request: np.ndarray, w: np.ndarray, level: float) -> dict:
    """All five metrics for one model at one level."""
    cov = coverage(y, q)
    return {"coverage": cov, "under_rate": 1.0 - cov if len(y) else float("nan"),
            "overprov_ratio": overprov_ratio(y, q), "recovered_fraction": recovered_fraction(q, request, w),
            "pinball": pinball(y, q, level)}


def metric_table(frame: pd.DataFrame, models, levels, by: str | None = None, *, min_jobs: int = 1) -> pd.DataFrame:
    """Long table: one row per (group, model, level) with ``jobs`` and the five metrics.

    ``frame`` holds ``y``, ``request``, ``w`` and one column ``MODEL@LEVEL`` per prediction.
    """
    groups = [("all", frame)] if by is None else list(frame.groupby(by, sort=True, dropna=False))
    rows = []
    for key, g in groups:
        if by is not None and len(g) < min_jobs:
            continue
        y, r, w = (g[c].to_numpy(dtype=np.float64) for c in ("y", "request", "w"))
        for m in models:
            for lv in levels:
                q = g[f"{m}@{lv}"].to_numpy(dtype=np.float64)
                rows.append({"group": key, "model": m, "level": lv, "jobs": len(g), **metric_set(y, q, r, w, lv)})
    return pd.DataFrame(rows, columns=["group", "model", "level", "jobs", *METRICS])


def precision_recall(flag: np.ndarray, failed: np.ndarray) -> dict:
    """Precision and recall of a boolean flag against boolean ground truth."""
    flag, failed = np.asarray(flag, dtype=bool), np.asarray(failed, dtype=bool)
    tp = int(np.sum(flag & failed))
    return {"flagged": int(flag.sum()), "failed": int(failed.sum()), "true_positives": tp,
            "precision": tp / int(flag.sum()) if flag.any() else float("nan"),
            "recall": tp / int(failed.sum()) if failed.any() else float("nan"),
            "base_rate": float(failed.mean()) if len(failed) else float("nan")}
