"""The estimator conventions shared by every predictor (scikit-learn style, without the dependency).

Constructors only store their arguments; ``fit`` learns attributes ending in ``_`` and returns ``self``;
``predict`` returns an array of shape (jobs, levels), non-decreasing along the levels.
"""

from __future__ import annotations

import inspect

import numpy as np


class Estimator:
    """``get_params`` / ``set_params`` / ``clone`` from the constructor's signature."""

    def get_params(self) -> dict:
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {n: getattr(self, n) for n in names}

    def set_params(self, **params) -> Estimator:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"{type(self).__name__} has no parameter {k!r}")
            setattr(self, k, v)
        return self

    def clone(self) -> Estimator:
        return type(self)(**self.get_params())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def check_levels(levels) -> tuple[float, ...]:
    lv = tuple(float(x) for x in levels)
    if not lv or any(not 0.0 < x < 1.0 for x in lv):
        raise ValueError(f"quantile levels must lie strictly between 0 and 1, got {levels!r}")
    if list(lv) != sorted(set(lv)):
        raise ValueError(f"quantile levels must be increasing and distinct, got {levels!r}")
    return lv


def non_crossing(pred: np.ndarray) -> np.ndarray:
    """Cumulative maximum along the levels: a higher level never predicts less than a lower one."""
    return np.fmax.accumulate(pred, axis=1)


def log_transform(y: np.ndarray, offset: float) -> np.ndarray:
    return np.log(np.clip(y, 0.0, None) + offset)


def inverse_log(z: np.ndarray, offset: float) -> np.ndarray:
    return np.clip(np.exp(z) - offset, 0.0, None)
