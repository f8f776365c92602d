"""Rolling-origin splits in time order: train on what ended before the origin, test on the next week.

A job's need is known only once it has ended, so the training set at origin ``o`` is the jobs with
``end < o`` (not those *submitted* before ``o``: a job still running at ``o`` would leak its future).
The test set is the jobs submitted in ``[o, o + test_days)``.  Nothing is ever shuffled.
"""

from __future__ import annotations

import numpy as np

DAY_S = 86400.0


def origins(submit_s: np.ndarray, *, warmup_days: float = 28.0, test_days: float = 7.0,
            min_last_share: float = 0.0) -> np.ndarray:
    """Fold origins: the first submission + ``warmup_days``, then every ``test_days`` up to the last submission.
    A last window whose submissions span less than ``min_last_share`` of ``test_days`` is joined to the one
    before (no origin of its own: see :func:`fold_of`'s ``open_last``)."""
    s = np.asarray(submit_s, dtype=np.float64)
    s = s[np.isfinite(s)]
    if not len(s):
        return np.empty(0)
    first = s.min() + warmup_days * DAY_S
    if first > s.max():
        return np.empty(0)
    k = int(np.floor((s.max() - first) / (test_days * DAY_S))) + 1
    out = first + np.arange(k) * test_days * DAY_S
    if k > 1 and s.max() - out[-1] < min_last_share * test_days * DAY_S:
        out = out[:-1]
    return out


def fold_of(submit_s: np.ndarray, origin_s: np.ndarray, test_days: float = 7.0, *, open_last: bool = False) -> np.ndarray:
    """Index of the fold whose test week holds each job's submission; -1 before the first origin (and past
    the last week, unless ``open_last``: the last fold then holds every later submission, as when a short
    last window was joined to it)."""
    if not len(origin_s):
        return np.full(len(submit_s), -1)
    f = np.floor((np.asarray(submit_s, dtype=np.float64) - origin_s[0]) / (test_days * DAY_S))
    f = np.where(np.isfinite(f) & (f >= 0), f, -1).astype(np.int64)
    if open_last:
        return np.minimum(f, len(origin_s) - 1)
    return np.where(f < len(origin_s), f, -1)


def train_mask(end_s: np.ndarray, submit_s: np.ndarray, origin: float, train_days: float | None = None) -> np.ndarray:
    """Jobs whose need is known at ``origin`` (ended strictly before it), optionally only the recent ones."""
    m = np.asarray(end_s) < origin
    if train_days is not None:
        m &= np.asarray(submit_s) >= origin - train_days * DAY_S
    return m


def calibration_mask(end_s: np.ndarray, submit_s: np.ndarray, predicted: np.ndarray, origin: float,
                     cal_days: float) -> np.ndarray:
    """Jobs of the trailing window that already have an out-of-sample prediction and ended before ``origin``."""
    return predicted & (np.asarray(end_s) < origin) & (np.asarray(submit_s) >= origin - cal_days * DAY_S)
