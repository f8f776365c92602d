"""Right-sized requests for the audit: each job's calibrated predicted need, from its past only.

:func:`right_size` runs the rolling origin for every target the table has data for and returns one row per
job with ``pred_<column>_p<level>`` columns, e.g. ``pred_elapsed_s_p90``, ``pred_mem_peak_bytes_p99``,
``pred_cpus_used_p50``.  The candidates are LightGBM, ``habit_t`` (``lineup.HABIT_MODELS``) and the site rules
on each job's habit (``lineup.HABIT_RULES``), each conformalised stratum by stratum and capped at the request; per
fold and stratum
the candidate whose bounds held least on that stratum's jobs of earlier folds gives the prediction at every
level (``rolling``), and ``stratum_<column>`` and ``source_<column>_p<level>`` say which stratum and candidate.  A job gets NaN where it
was not predicted: it is not eligible for the target (never ran, unknown use, no GPU), or it was
submitted during the warm-up (the first ``warmup_days``).  With ``model_warmup_days`` (passed on to
``rolling``) the candidates that read the habit's own past alone issue every bound from the first origin, and
the models join from that later one.  The first week after the warm-up has no out-of-sample
predictions to calibrate on yet, so it is calibrated by a split of its own history (``split_calibration``:
a model fitted on the first 70 % of the jobs that ended before the origin, residuals on the rest).  A last
test window shorter than half a window (``min_last_share``; a month's last two or three days) is predicted
with the window before it, by that window's models: a refit there would cost a fit on the most history for
the fewest jobs (a third of the fitting time of a 30-day month).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..features import TARGETS, eligible, habit_history, request
from .lineup import HABIT_MODELS, HABIT_RULES, default_models
from .rolling import RollingForecaster

KEY = ("cluster", "job_id")


def level_label(level: float) -> str:
    """0.9 → ``p90``, 0.5 → ``p50``, 0.995 → ``p99.5``."""
    pct = round(level * 100, 6)
    return f"p{int(pct)}" if pct == int(pct) else f"p{pct:g}"


def right_size(jobs: pd.DataFrame, levels=(0.5, 0.9, 0.99), *, targets=None, model: str = "lightgbm",
               rules=HABIT_MODELS + tuple(HABIT_RULES), min_jobs: int = 500, n_estimators: int = 60, num_threads: int = 1, random_state: int = 0,
               warmup_days: float = 7.0, split_calibration: bool = True, min_last_share: float = 0.5,
               **rolling) -> pd.DataFrame:
    """Per job (same order as ``jobs``): ``cluster``, ``job_id`` and the calibrated prediction per target and
    level (and its stratum and source).  Targets with fewer than ``min_jobs`` eligible jobs are left out;
    ``rules=()`` weighs the model alone."""
    levels = tuple(float(x) for x in levels)
    out = pd.DataFrame({k: jobs[k].to_numpy() for k in KEY if k in jobs.columns})
    base = jobs.reset_index(drop=True)
    for target in targets or TARGETS:
        if eligible(base, target).sum() < min_jobs:
            continue
        candidates = (model, *rules)
        est = default_models(levels, target, n_estimators=n_estimators, num_threads=num_threads,
                             random_state=random_state, only=candidates)
        res = RollingForecaster(est, levels, warmup_days=warmup_days, split_calibration=split_calibration,
                                min_last_share=min_last_share, calibrated=candidates, select=candidates,
                                uncapped=False,
                                **rolling).run(base, target)
        got = res.jobs
        stem = TARGETS[target].column
        ok = got["scored"].to_numpy()
        at = got.loc[ok, "row"].to_numpy(dtype=np.int64)
        stratum = np.full(len(jobs), None, dtype=object)
        stratum[at] = got.loc[ok, "stratum"].to_numpy()
        out[f"stratum_{stem}"] = pd.array(stratum, dtype="string")
        for lv in levels:
            col = np.full(len(jobs), np.nan)
            col[at] = got.loc[ok, f"best@{lv}"].to_numpy()
            out[f"pred_{stem}_{level_label(lv)}"] = col
            src = np.full(len(jobs), None, dtype=object)
            src[at] = got.loc[ok, f"best_source@{lv}"].to_numpy()
            out[f"source_{stem}_{level_label(lv)}"] = pd.array(src, dtype="string")
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


def rule_predictions(jobs: pd.DataFrame, rule: str, targets=("memory", "cpus", "gpus", "walltime")) -> dict:
    """A site rule alone (``lineup.HABIT_RULES``: e.g. ``habit_max``, the habit's largest past need plus 20 %
    once two of its jobs ended) as right-sized requests: ``{target: values}`` in the order of ``jobs``, capped
    at the request; NaN (the request is kept) where the habit has too little history or the job is not
    eligible for the target."""
    stat, margin, min_history = HABIT_RULES[rule]
    base = jobs.reset_index(drop=True)
    out = {}
    for target in targets:
        ok = eligible(base, target)
        if not ok.any():
            continue
        h = habit_history(base, target)
        n = h["habit_count"].to_numpy(dtype=np.float64)
        v = np.where(n >= min_history, h[f"habit_{stat}"].to_numpy(dtype=np.float64) * margin, np.nan)
        req = request(base, target)
        v = np.where(np.isfinite(req), np.fmin(v, req), v)
        out[target] = np.where(ok, v, np.nan)
    return out
