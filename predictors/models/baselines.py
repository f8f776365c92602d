"""What sites do today, as estimators: each predicts one value per job, the same at every level.

All read columns of :func:`predictors.features.submission_features`; where a rule has no history for a
user (cold start) it falls back to the job's request, and to the training median when there is none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Estimator, check_levels


class _Rule(Estimator):
    column: str = "request"
    margin: float = 1.0

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> _Rule:
        y = np.asarray(y, dtype=np.float64)
        self.levels_ = check_levels(self.levels)
        self.fallback_ = float(np.nanmedian(y)) if np.isfinite(y).any() else 0.0
        return self

    def _point(self, X: pd.DataFrame) -> np.ndarray:
        return X[self.column].to_numpy(dtype=np.float64, na_value=np.nan) * self.margin

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        p = self._point(X)
        req = X["request"].to_numpy(dtype=np.float64, na_value=np.nan)
        p = np.where(np.isfinite(p), p, req)
        p = np.where(np.isfinite(p), p, self.fallback_)
        return np.repeat(p[:, None], len(self.levels_), axis=1)


class RequestBaseline(_Rule):
    """The user's own request."""

    def __init__(self, levels=(0.9,)):
        self.levels = levels


class UserMeanBaseline(_Rule):
    """The mean of all the user's past jobs (what sites compute from sacct today)."""

    column = "user_mean"

    def __init__(self, levels=(0.9,)):
        self.levels = levels


class LastTwoBaseline(_Rule):
    """The average of the user's last two runs (Tsafrir, Etsion & Feitelson 2007); one run if only one."""

    def __init__(self, levels=(0.9,)):
        self.levels = levels

    def _point(self, X: pd.DataFrame) -> np.ndarray:
        a = X["user_last1"].to_numpy(dtype=np.float64, na_value=np.nan)
        b = X["user_last2"].to_numpy(dtype=np.float64, na_value=np.nan)
        return np.where(np.isfinite(b), (a + b) / 2.0, a)


class VPABaseline(_Rule):
    """Kubernetes VPA style: the 90th percentile of the user's jobs of the last 8 days, plus 15 %."""

    column = "user_vpa"

    def __init__(self, levels=(0.9,), margin: float = 1.15):
        self.levels = levels
        self.margin = margin


class KRRBaseline(_Rule):
    """KRR style: the largest value among the user's jobs of the last 14 days, plus 15 %."""

    column = "user_krr"

    def __init__(self, levels=(0.9,), margin: float = 1.15):
        self.levels = levels
        self.margin = margin


class HabitRule(_Rule):
    """A site rule on the job's habit (user, job family, request shape; ``predictors.features.habits``): a
    statistic of the habit's past need times ``margin`` once ``min_history`` of its jobs have ended, else the
    request.  ``stat``: ``max`` (the last 20), ``krr`` (largest of the last 14 days), ``vpa`` (90th percentile of
    the last 8 days) or ``autopilot`` (98th percentile of a histogram decaying with a 48 h half-life)."""

    reads_habits = True  # it reads the habit columns of ``predictors.features.habit_history``

    def __init__(self, levels=(0.9,), *, stat: str = "max", margin: float = 1.2, min_history: int = 2):
        self.levels = levels
        self.stat = stat
        self.margin = margin
        self.min_history = min_history

    def _point(self, X: pd.DataFrame) -> np.ndarray:
        v = X[f"habit_{self.stat}"].to_numpy(dtype=np.float64, na_value=np.nan)
        n = X["habit_count"].to_numpy(dtype=np.float64, na_value=0.0)
        return np.where(n >= self.min_history, v * self.margin, np.nan)
