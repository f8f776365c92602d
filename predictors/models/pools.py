"""Calibration pools: whose scores may calibrate the bounds a fold is issued.

A calibration job's score is exchangeable with a test job's only when the same models predicted both.  Under
refits every few folds, the models refitted at the last origin have predicted few jobs yet; the models before
them go on predicting every job beside them (in shadow), so that until the new models have scores enough of
their own in a stratum, that stratum's bounds come from the models before, calibrated on their own scores
(those they issued, and those they gave in shadow).  A stratum where neither has enough reads every model's
scores, as a single pool would.  So does every stratum once the models before learned from a calibration
window's worth of history or more: a refit then adds little to what they knew, and the larger pool calibrates
better (measured on a real log of 3.5 years, docs/predictors.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Pool:
    """Calibration jobs (``rows``, a mask over the jobs) and where their scores and the test jobs' inputs are read:
    ``"issued"``, the predictions the jobs were issued; ``"before"``, those of generation ``before`` (issued by it,
    or given in shadow after the next refit: ``generation`` says which); ``"split"``, a split calibration's
    (``split_inputs``, at the pool's rows in order).  A group is calibrated on the pool where it has ``least``
    ended jobs."""

    rows: np.ndarray
    least: int
    source: str = "issued"
    generation: np.ndarray | None = None
    before: int = -1
    split_inputs: dict | None = None

    def inputs(self, model: str, idx: np.ndarray, issued: dict, shadows: dict) -> np.ndarray:
        """The calibration inputs of jobs ``idx`` (rows of this pool)."""
        if self.source == "before":
            own = (self.generation[idx] == self.before)[:, None]
            return np.where(own, issued[model][idx], shadows[model][idx])
        if self.source == "split":
            return self.split_inputs[model][np.cumsum(self.rows)[idx] - 1]
        return issued[model][idx]

    def test_inputs(self, model: str, test: np.ndarray, issued: dict, shadows: dict) -> np.ndarray:
        """What the calibrated bounds of jobs ``test`` are read from: the predictions of this pool's models."""
        return shadows[model][test] if self.source == "before" else issued[model][test]
