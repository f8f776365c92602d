"""Does accuracy improve as history accumulates?  Two curves on one fixed set of test weeks.

- :func:`history_curve`: the model refitted weekly on only the last ``d`` days before each origin, for
  growing ``d`` (None = all history so far);
- :func:`cadence_curve`: all history, refitted every ``r`` weeks, for growing ``r``.

Both score the same jobs (those submitted from ``start_days`` after the first submission on, once
calibrated), so differences come from the history the model saw, not from the test set.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .evaluate import evaluate_jobs
from .features import epoch_s

DAY_S = 86400.0


def _row(ev, **key) -> dict:
    t = ev.metrics[ev.metrics["model"] == "lightgbm"].iloc[0]
    return {**key, "jobs": int(t["jobs"]), "coverage": t["coverage"], "pinball": t["pinball"],
            "overprov_ratio": t["overprov_ratio"], "recovered_fraction": t["recovered_fraction"]}


def _start(jobs: pd.DataFrame, start_days: float) -> float:
    return float(np.nanmin(epoch_s(jobs["submit_time"]))) + start_days * DAY_S


def history_curve(jobs: pd.DataFrame, target: str, level: float = 0.9, *, train_days=(7, 28, 91, None),
                  start_days: float = 182.0, **options) -> pd.DataFrame:
    """LightGBM's metrics at ``level`` when trained on the last ``d`` days only, for each ``d``."""
    start = _start(jobs, start_days)
    rows = [_row(evaluate_jobs(jobs, target, (level,), models=["lightgbm"], train_days=d, start_s=start, **options),
                 train_days=d if d is not None else "all") for d in train_days]
    return pd.DataFrame(rows)


def cadence_curve(jobs: pd.DataFrame, target: str, level: float = 0.9, *, retrain_every=(1, 4, 13),
                  start_days: float = 182.0, **options) -> pd.DataFrame:
    """LightGBM's metrics at ``level`` when refitted every ``r`` weekly folds, for each ``r``."""
    start = _start(jobs, start_days)
    rows = [_row(evaluate_jobs(jobs, target, (level,), models=["lightgbm"], retrain_every=r, start_s=start,
                               **options), retrain_every=r) for r in retrain_every]
    return pd.DataFrame(rows)
