"""Scores of jobs still running: right-censored, read by the Kaplan–Meier estimator.

A run-time bound is calibrated on the jobs that ended before the origin.  Of the jobs submitted in the last
days, the long runs have not ended yet, so the ended ones are the short ones, and their scores set the shift
too low exactly where runs are long (under-coverage of the long-run strata until they end).  A job still
running at the origin is not unknown: it has run ``e`` seconds, so its need is at least ``e`` and its score at
least the score of ``e`` (every score is increasing in the need).  Such a score is right-censored, and the
Kaplan–Meier estimator (Kaplan & Meier 1958) gives the distribution of the scores with the censored ones in
it.  That a run's length does not depend on when it started relative to the origin is what makes the
censoring independent, as the estimator requires.  Conformalised survival analysis (Candès, Lei & Ren 2023)
calibrates run-time bounds under censoring in the same spirit.

Without a censored score both functions reduce exactly to the conformal ones: the ⌈(n + 1)τ⌉-th smallest
score, and the share covered.
"""

from __future__ import annotations

import math

import numpy as np


def km_cdf(scores: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, F)``: the Kaplan–Meier distribution function of ``scores`` (a censored one, ``observed``
    False, is a lower bound) at each distinct observed score, in increasing order (ties: observed first, so a
    score censored at ``v`` is still at risk at ``v``)."""
    s = np.asarray(scores, dtype=np.float64)
    d = np.asarray(observed, dtype=bool)
    order = np.lexsort((~d, s))
    s, d = s[order], d[order]
    at_risk = len(s) - np.arange(len(s))
    # one factor (1 − 1/at risk) per observed score: k tied observed scores among n at risk give (1 − k/n)
    survival = np.cumprod(np.where(d, 1.0 - 1.0 / at_risk, 1.0))
    values, F = s[d], 1.0 - survival[d]
    last = np.append(values[1:] != values[:-1], True) if len(values) else np.zeros(0, dtype=bool)
    return values[last], F[last]


def km_quantile(scores: np.ndarray, observed: np.ndarray, level: float) -> float:
    """The smallest observed score at which the Kaplan–Meier distribution reaches ``level · (n + 1) / n``
    (n scores in all): with every score observed, the ⌈(n + 1)·level⌉-th smallest; +∞ where it never
    reaches it (too few scores for that level, or the last ones censored)."""
    n = len(scores)
    if not n:
        return math.inf
    values, F = km_cdf(scores, observed)
    k = np.searchsorted(F, level * (n + 1) / n - 1e-9, side="left")  # F carries rounding of ~n · 1e-16
    return float(values[k]) if k < len(values) else math.inf


def km_share_at_most(scores: np.ndarray, observed: np.ndarray, at: float = 0.0) -> float:
    """The Kaplan–Meier probability that a score is at most ``at``: with every score observed, the share
    at most ``at``.  A censored score above ``at`` counts as above it; one at or below leaves the estimator
    to spread it over the scores above its bound."""
    if not len(scores):
        return math.nan
    values, F = km_cdf(scores, observed)
    k = np.searchsorted(values, at, side="right")
    return float(F[k - 1]) if k else 0.0
