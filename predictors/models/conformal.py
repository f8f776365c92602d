"""Conformalised quantile regression (Romano, Patterson & Candès 2019), one-sided, on a trailing window.

For an upper quantile at level τ the conformity score of a calibration job is
``s = log(y + offset) − log(q̂(x) + offset)``; the shift is the ⌈(n + 1)τ⌉-th smallest score, and the
calibrated prediction is ``(q̂ + offset) · exp(shift) − offset``.  With ``cap`` the prediction is then
clipped to the job's request (a right-sized request never exceeds the original): a job whose need
exceeded its request can never be covered, so its score is +∞ and the shift accounts for it.
Under exchangeability of calibration and test jobs the coverage is at least τ; on a time series the
trailing window keeps it close to τ as the workload drifts.  What drift is left is corrected in the
spirit of adaptive conformal inference (Gibbs & Candès 2021), scale-free: the level used for the shift
is ``τ + gain · (τ − c)``, with ``c`` the share of already-observed calibrated test jobs that were
covered, so that a history of under-coverage raises the level and over-coverage lowers it.  (ACI's own
update sums the per-job errors; with tens of thousands of jobs a week that sum overreacts.)
"""

from __future__ import annotations

import math

import numpy as np

from .base import Estimator, check_levels, non_crossing
from .censored import km_quantile, km_share_at_most


def conformal_shift(scores: np.ndarray, level: float, observed: np.ndarray | None = None) -> float:
    """The ⌈(n + 1)·level⌉-th smallest score (+∞ when n is too small for that level or it is infinite).  With
    ``observed`` False for some, those scores are lower bounds (a job still running) and the shift is their
    Kaplan–Meier quantile (:func:`.censored.km_quantile`)."""
    if observed is not None and not np.all(observed):
        return km_quantile(scores, observed, level)
    s = np.sort(np.asarray(scores, dtype=np.float64))
    n = len(s)
    k = math.ceil((n + 1) * level - 1e-9)  # (99 + 1) × 0.07 is 7.000000000000001 in floating point
    return float(s[k - 1]) if 1 <= k <= n else math.inf


def scores(y: np.ndarray, pred: np.ndarray, offset: float, request: np.ndarray | None = None) -> np.ndarray:
    """Log-ratio conformity scores; +∞ where a capped prediction could not reach ``y``."""
    s = np.log(np.clip(y, 0, None) + offset) - np.log(np.clip(pred, 0, None) + offset)
    if request is not None:
        s = np.where(np.isfinite(request) & (y > request), np.inf, s)
    return s


def apply_shift(pred: np.ndarray, shift: np.ndarray, offset: float, request: np.ndarray | None = None) -> np.ndarray:
    """Shifted (and capped) predictions, shape (jobs, levels), still non-crossing."""
    with np.errstate(over="ignore"):
        out = (np.clip(pred, 0, None) + offset) * np.exp(shift)[None, :] - offset
    out = np.clip(out, 0, None)
    if request is not None:
        out = np.where(np.isfinite(request)[:, None], np.fmin(out, request[:, None]), out)
    return non_crossing(out)


#: the lowest level the adaptive level may take, and where a quantile curve read for calibration by level starts
LOWEST_LEVEL = 0.25


def adaptive_levels(levels, y_seen: np.ndarray, pred_seen: np.ndarray, gain: float, *, lowest: float = LOWEST_LEVEL,
                    highest: float = 0.999, observed: np.ndarray | None = None) -> np.ndarray:
    """Levels ``τ + gain · 4τ(1 − τ) · (τ − share of observed jobs with y ≤ q)``, per level, clipped to
    [lowest, highest]: ``gain`` is the step at τ = 0.5, and the step shrinks with τ(1 − τ), the variance of a
    share.  A coverage strays from τ by chance as √(τ(1 − τ) / n), so a fixed tolerance around τ (±0.02) is
    threatened most at the middle levels and least near 1, where a step in level also costs the most capacity
    (a bound's climb through the tail of the need).  A steady deviation ``d`` left by the calibration is brought
    down to ``d / (1 + gain · 4τ(1 − τ))``.  ``lowest`` lies well below the lowest level so that a level is
    lowered as readily as it is raised: a floor at the lowest level itself would correct its under-coverage and
    never its over-coverage.  With ``observed`` False for some jobs, their ``y`` is a lower bound (still
    running) and the share is the Kaplan–Meier one."""
    lv = np.asarray(levels, dtype=np.float64)
    if gain == 0 or not len(y_seen):
        return lv
    if observed is not None and not np.all(observed):
        covered = np.array([km_share_at_most(y_seen - pred_seen[:, j], observed) for j in range(len(lv))])
    else:
        covered = (y_seen[:, None] <= pred_seen).mean(axis=0)
    step = gain * 4.0 * lv * (1.0 - lv)
    return np.clip(lv + step * (lv - covered), np.minimum(lowest, lv), np.maximum(highest, lv))


class ConformalCalibrator(Estimator):
    """Learns one multiplicative shift per level from calibration jobs' out-of-sample predictions.

    ``cap``: clip calibrated predictions to the request (passed to ``fit`` and ``transform``).
    """

    def __init__(self, levels=(0.5, 0.9, 0.99), *, log_offset: float = 1.0, cap: bool = True):
        self.levels = levels
        self.log_offset = log_offset
        self.cap = cap

    def fit(self, pred: np.ndarray, y: np.ndarray, request: np.ndarray | None = None,
            effective_levels=None, observed: np.ndarray | None = None) -> ConformalCalibrator:
        """``effective_levels`` (e.g. from :func:`adaptive_levels`) replaces the levels used for the shifts;
        ``observed`` False marks a ``y`` that is only a lower bound (a job still running)."""
        self.levels_ = check_levels(self.levels)
        eff = self.levels_ if effective_levels is None else tuple(float(x) for x in effective_levels)
        req = request if self.cap else None
        self.shift_ = np.array([conformal_shift(scores(y, pred[:, j], self.log_offset, req), a, observed)
                                for j, a in enumerate(eff)])
        self.n_calibration_ = len(y)
        return self

    def transform(self, pred: np.ndarray, request: np.ndarray | None = None) -> np.ndarray:
        return apply_shift(pred, self.shift_, self.log_offset, request if self.cap else None)


#: the levels a quantile curve is read at for calibration by level: from ``LOWEST_LEVEL``, so that a curve
#: whose median runs high out of sample (drift, a stratum the model knows little of) is calibrated down to a
#: bound that covers half the jobs, and the adaptive level can be lowered along it as far as it is raised
CURVE_LEVELS = (LOWEST_LEVEL, 0.3, 0.35, 0.4, 0.45) + tuple(round(0.5 + 0.01 * i, 2) for i in range(50)) + (0.995, 0.999)


def _with_request(curve: np.ndarray, request: np.ndarray | None) -> np.ndarray:
    """The curve capped at the request, with the request as one more column (unknown request: +∞)."""
    c = np.asarray(curve, dtype=np.float64)
    if request is None:
        return c
    top = np.where(np.isfinite(request), request, np.inf)
    return np.column_stack([np.fmin(c, top[:, None]), top])


def level_scores(y: np.ndarray, curve: np.ndarray, request: np.ndarray | None = None) -> np.ndarray:
    """Fractional position along the curve where it first covers ``y`` (linear between columns; 0 below the
    first).  With ``request`` the curve is capped at the request, which follows as one more column; +∞ where
    nothing covers."""
    c = _with_request(curve, request)
    y = np.asarray(y, dtype=np.float64)
    ok = y[:, None] <= c
    k = ok.argmax(axis=1)
    rows = np.arange(len(y))
    lo = c[rows, np.maximum(k - 1, 0)]
    hi = c[rows, k]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(hi > lo, (y - lo) / (hi - lo), 1.0)
    s = np.where(k == 0, 0.0, k - 1 + np.clip(frac, 0.0, 1.0))
    return np.where(ok.any(axis=1), s, np.inf)


def read_curve(curve: np.ndarray, index: np.ndarray, request: np.ndarray | None = None) -> np.ndarray:
    """Predictions at fractional curve positions ``index`` (one per level), linear between columns; past the
    last column: the last column (with ``request``: the request, and nothing above it)."""
    c = _with_request(curve, request)
    n, g = c.shape
    out = np.empty((n, len(index)))
    for j, t in enumerate(index):
        t = min(float(t), g - 1.0)
        k = min(int(np.floor(t)), g - 2) if g > 1 else 0
        f = t - k
        out[:, j] = c[:, k] if f == 0 or g == 1 else c[:, k] * (1.0 - f) + c[:, k + 1] * f
    if request is not None:
        out = np.where(np.isfinite(request)[:, None], np.fmin(out, request[:, None]), out)
    return non_crossing(out)


class LevelCalibrator(Estimator):
    """Calibration by level (nested conformal prediction, Gupta, Kuchibhotla & Ramdas 2022).

    The model's quantile curve, read at ``CURVE_LEVELS``, is a nested family of upper bounds; a calibration
    job's score is the position along its curve (fractional, linear between levels) where the curve first
    reaches its need.  For a stated level τ the calibrated prediction is the curve at the ⌈(n + 1)τ⌉-th
    smallest score: coverage ≥ τ under exchangeability, as for the shift,
    but each job keeps the shape of its own predicted distribution (a job the model is sure of moves little,
    an uncertain one a lot).  ``cap``: past the curve's top comes the request, and predictions never exceed it;
    uncapped, a level the curve cannot reach reads its top (then the level is not guaranteed).
    """

    def __init__(self, levels=(0.5, 0.9, 0.99), *, cap: bool = True):
        self.levels = levels
        self.cap = cap

    def fit(self, curve: np.ndarray, y: np.ndarray, request: np.ndarray | None = None,
            effective_levels=None, observed: np.ndarray | None = None) -> LevelCalibrator:
        """As :meth:`ConformalCalibrator.fit`."""
        self.levels_ = check_levels(self.levels)
        eff = self.levels_ if effective_levels is None else tuple(float(x) for x in effective_levels)
        s = level_scores(y, curve, request if self.cap else None)
        self.index_ = np.array([conformal_shift(s, a, observed) for a in eff])
        self.n_calibration_ = len(y)
        return self

    def transform(self, curve: np.ndarray, request: np.ndarray | None = None) -> np.ndarray:
        return read_curve(curve, self.index_, request if self.cap else None)
