"""Right-sized requests for the audit: each job's calibrated predicted need, from its past only.

:func:`right_size` runs the rolling origin (LightGBM, conformalised, capped at the request) for every
target the table has data for and returns one row per job with ``pred_<column>_p<level>`` columns, e.g.
``pred_elapsed_s_p90``, ``pred_mem_peak_bytes_p99``, ``pred_cpus_used_p50``.  A job gets NaN where it
was not predicted: it is not eligible for the target (never ran, unknown use, no GPU), or it was
submitted during the warm-up (the first ``warmup_days``).  The first week after it has no out-of-sample
predictions to calibrate on yet, so it is calibrated by a split of its own history (``split_calibration``:
a model fitted on the first 70 % of the jobs that ended before the origin, residuals on the rest).  A last
test window shorter than half a window (``min_last_share``; a month's last two or three days) is predicted
with the window before it, by that window's models: a refit there would cost a fit on the most history for
the fewest jobs (a third of the fitting time of a 30-day month).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..features import TARGETS, eligible
from .lineup import default_models
from .rolling import RollingForecaster

KEY = ("cluster", "job_id")


def level_label(level: float) -> str:
    """0.9 → ``p90``, 0.5 → ``p50``, 0.995 → ``p99.5``."""
    pct = round(level * 100, 6)
    return f"p{int(pct)}" if pct == int(pct) else f"p{pct:g}"


def right_size(jobs: pd.DataFrame, levels=(0.5, 0.9, 0.99), *, targets=None, model: str = "lightgbm",
               min_jobs: int = 500, n_estimators: int = 60, num_threads: int = 1, random_state: int = 0,
               warmup_days: float = 7.0, split_calibration: bool = True, min_last_share: float = 0.5,
               **rolling) -> pd.DataFrame:
    """Per job (same order as ``jobs``): ``cluster``, ``job_id`` and the calibrated prediction per target and
    level.  Targets with fewer than ``min_jobs`` eligible jobs are left out."""
    levels = tuple(float(x) for x in levels)
    out = pd.DataFrame({k: jobs[k].to_numpy() for k in KEY if k in jobs.columns})
    base = jobs.reset_index(drop=True)
    for target in targets or TARGETS:
        if eligible(base, target).sum() < min_jobs:
            continue
        est = default_models(levels, target, n_estimators=n_estimators, num_threads=num_threads,
                             random_state=random_state, only=[model])
        res = RollingForecaster(est, levels, warmup_days=warmup_days, split_calibration=split_calibration,
                                min_last_share=min_last_share,
                                **rolling).run(base, target)
        got = res.jobs
        stem = TARGETS[target].column
        for lv in levels:
            col = np.full(len(jobs), np.nan)
            ok = got["scored"].to_numpy()
            col[got.loc[ok, "row"].to_numpy(dtype=np.int64)] = got.loc[ok, f"{model}@{lv}"].to_numpy()
            out[f"pred_{stem}_{level_label(lv)}"] = col
    return out


def last_two(jobs: pd.DataFrame) -> np.ndarray:
    """Run-time predictions after Tsafrir, Etsion & Feitelson (2007), per job (same order as ``jobs``):
    the mean run time of the user's two most recent jobs that ended before this one was submitted,
    capped at its time limit; its time limit when the user has fewer than two such jobs (NaN when it
    has none either)."""
    from ..features import codes, epoch_s, past_stats

    submit = epoch_s(jobs["submit_time"])
    end = epoch_s(jobs["end_time"])
    run = pd.to_numeric(jobs["elapsed_s"], errors="coerce").astype("float64").to_numpy(na_value=np.nan)
    limit = pd.to_numeric(jobs["time_limit_s"], errors="coerce").astype("float64").to_numpy(na_value=np.nan)
    known = np.isfinite(run) & np.isfinite(end)
    stats = past_stats(codes(jobs["user"]), submit, np.where(known, end, np.inf), np.where(known, run, np.nan),
                       window=2, quantiles=())
    mean = (stats["last1"] + stats["last2"]) / 2.0
    return np.where(np.isfinite(mean), np.fmin(mean, limit), limit)
