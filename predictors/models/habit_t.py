"""The habit's predictive distribution of its next job's share of the request (``habit_t``).

A job of a habit (user, job family, request shape) uses a share of its request; in logit space the shares of a
habit's jobs scatter about the habit's own centre, each habit with its own spread.  From the habit's last jobs
(``predictors.features.habit_history``: ``habit_share_n``, ``habit_share_mean``, ``habit_share_sd``) the next
job's share is predicted by Student's t about their mean, its scale the habit's standard deviation shrunk
towards a prior learned from every habit (empirical Bayes, Smyth 2004: the sample variances, each with
``n − 1`` degrees of freedom, are fitted by a scaled F distribution; a habit's posterior variance is
``(d₀ s₀² + (n − 1) s²) / (d₀ + n − 1)``, with ``d₀ + n − 1`` degrees of freedom), times ``√(1 + 1/n)`` for the
uncertainty of the mean.  So a habit of a few jobs borrows the spread of habits at large, a long one keeps its
own, and two identical jobs do not claim a spread of zero.

The quantile at level τ is ``request × expit(mean + t_τ × scale)``; a job whose habit has fewer than
``min_history`` ended jobs gets its request; where the request is unknown (a log that records none) there is no
share to read, and no prediction (NaN): the candidates that read the need itself predict those jobs.
Calibrated by level (``conformal.LevelCalibrator``) on its curve, the bound is normalised conformal prediction:
the score of a job is its position in its own habit's predictive distribution, so one calibration serves
habits of every spread.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from .base import Estimator, check_levels, non_crossing


def fit_prior(s2: np.ndarray, df: np.ndarray) -> tuple[float, float]:
    """``(d₀, s₀²)`` of the scaled F distribution that sample variances ``s2`` (with ``df`` degrees of freedom)
    follow (Smyth 2004, limma's ``fitFDist``, by moments of log s²); ``d₀`` is +∞ where the variances spread no more
    than their own sampling error does.  A zero variance is moved off zero by 1e-5 of the median, as limma does."""
    s2 = np.asarray(s2, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    ok = np.isfinite(s2) & np.isfinite(df) & (df > 0)
    s2, df = np.clip(s2[ok], 0.0, None), df[ok]
    if len(s2) < 2:
        return np.inf, float(np.mean(s2)) if len(s2) else 1.0
    mid = float(np.median(s2))
    s2 = s2 + 1e-5 * (mid if mid > 0 else 1.0)
    e = np.log(s2) - special.digamma(df / 2) + np.log(df / 2)
    emean = float(e.mean())
    evar = float(np.mean((e - emean) ** 2) * len(e) / (len(e) - 1) - np.mean(special.polygamma(1, df / 2)))
    if evar <= 0:
        return np.inf, float(np.exp(emean))
    half = optimize.brentq(lambda x: special.polygamma(1, x) - evar, 1e-8, 1e8)
    d0 = 2.0 * half
    return d0, float(np.exp(emean + special.digamma(d0 / 2) - np.log(d0 / 2)))


class HabitT(Estimator):
    """Student's t of the habit's logit share of the request, its spread shrunk to a prior (module text);
    ``fit`` learns ``prior_df_`` and ``prior_var_``."""

    reads_habits = True  # it reads the habit columns of ``predictors.features.habit_history``

    def __init__(self, levels=(0.9,), *, min_history: int = 2):
        self.levels = levels
        self.min_history = min_history

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> HabitT:
        y = np.asarray(y, dtype=np.float64)
        self.levels_ = check_levels(self.levels)
        n = X["habit_share_n"].to_numpy(dtype=np.float64, na_value=0.0)
        sd = X["habit_share_sd"].to_numpy(dtype=np.float64, na_value=np.nan)
        on = (n >= 2) & np.isfinite(sd)
        self.prior_df_, self.prior_var_ = fit_prior(sd[on] ** 2, n[on] - 1)
        return self

    def predict_at(self, X: pd.DataFrame, levels) -> np.ndarray:
        lv = np.asarray(levels, dtype=np.float64)
        n = X["habit_share_n"].to_numpy(dtype=np.float64, na_value=0.0)
        mean = X["habit_share_mean"].to_numpy(dtype=np.float64, na_value=np.nan)
        sd = X["habit_share_sd"].to_numpy(dtype=np.float64, na_value=0.0)
        count = X["habit_count"].to_numpy(dtype=np.float64, na_value=0.0)
        req = X["request"].to_numpy(dtype=np.float64, na_value=np.nan)
        d = np.maximum(n - 1, 0.0)
        if np.isinf(self.prior_df_):
            var, df = np.full(len(n), self.prior_var_), np.full(len(n), np.inf)
        else:
            var = (self.prior_df_ * self.prior_var_ + d * sd ** 2) / (self.prior_df_ + d)
            df = self.prior_df_ + d
        scale = np.sqrt(var * (1.0 + 1.0 / np.maximum(n, 1.0)))
        with np.errstate(invalid="ignore"):
            x = mean[:, None] + stats.t.ppf(lv[None, :], df[:, None]) * scale[:, None]
            v = req[:, None] * special.expit(x)
        top = req[:, None]
        ok = (count >= self.min_history) & (n >= 1) & np.isfinite(mean) & np.isfinite(req)
        return non_crossing(np.where(ok[:, None] & np.isfinite(v), v, top))

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.predict_at(X, self.levels_)
