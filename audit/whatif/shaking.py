"""Input shaking (Tsafrir, Ouaknine & Feitelson, "Reducing performance evaluation sensitivity and
variability by input shaking", MASCOTS 2007): replay the same month with every submission moved by
a small random amount, and read a result's spread over the shaken copies as its interval.
"""

from __future__ import annotations

import numpy as np

SHAKE_S = 300.0  # submissions move by up to ±5 minutes


def shaken_submits(submit: np.ndarray, seed: int, *, shake_s: float = SHAKE_S) -> np.ndarray:
    """``submit`` with each time moved uniformly within ``±shake_s`` (never before the first
    submission); replicate ``seed`` gives the same times on every machine."""
    rng = np.random.default_rng(seed)
    moved = submit + rng.uniform(-shake_s, shake_s, size=len(submit))
    return np.maximum(moved, submit.min()) if len(submit) else moved


def interval(values, low: float = 5.0, high: float = 95.0) -> tuple:
    """The ``low``-th and ``high``-th percentiles of ``values`` (``(None, None)`` when there are none)."""
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    if not len(v):
        return None, None
    return float(np.percentile(v, low)), float(np.percentile(v, high))
