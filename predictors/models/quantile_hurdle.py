"""Quantiles of need relative to the request, with the jobs that use all of their request apart.

A job's need is often a fraction of what it asked for, and a sizeable share of jobs use (or are killed
at) their whole request: for walltime, the runs that reach their limit; for cores, jobs that keep every
core busy.  One quantile model of the need must then learn both a point mass at the request and a
continuous fraction below it.  This model keeps them apart (a hurdle model):

- a LightGBM classifier gives ``p``, the probability that the job's need reaches ``hit_fraction`` of its
  request;
- LightGBM quantile boosters, fitted on the other jobs, give quantiles of ``log(need + c) − log(request + c)``
  on a grid of levels.

The need's quantile at level τ < 1 − p is the other jobs' quantile at ``τ / (1 − p)`` (interpolated on the
grid, rising from the grid's top to the request past it).  A job that uses 95 % of its request is taken to
need all of it (nobody would cut a request by a few per cent and risk the run), so at τ ≥ 1 − p the need is
the request, or the hitting jobs' own quantile at ``(τ − (1 − p)) / p`` where that is more: runs killed at
their limit are recorded a little over it (the scheduler's grace time), which is what the risk of a
request reads, and whether a job is killed or stops just short is mostly its user's habit.  So the
hitting jobs get quantile boosters of their own (``hit_boosters_`` at ``HIT_GRID``), or, with fewer than
``min_hits`` of them, one set of quantiles for all (``hit_quantiles_``).  Jobs without a request are
modelled as ``log(need + c)`` by the same boosters.  :meth:`predict_at` gives the whole quantile curve,
which calibration by level (``conformal.LevelCalibrator``) reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..features import CATEGORICAL, HIT_FRACTION
from .base import Estimator, check_levels, inverse_log, log_transform, non_crossing
from .conformal import LOWEST_LEVEL
from .quantile_gbm import category_vocab, encode

#: levels of the boosters fitted on the jobs that do not use all of their request (from the lowest level a
#: curve is read at for calibration: below its first level the curve is flat)
GRID = (LOWEST_LEVEL, 0.5, 0.8, 0.9, 0.95, 0.99)
#: levels at which the need (relative to the request) of the jobs that use all of their request is kept
HIT_LEVELS = np.linspace(0.0, 1.0, 51)
#: levels of the boosters fitted on the jobs that use all of their request (when there are ``min_hits`` of them)
HIT_GRID = (0.1, 0.3, 0.5, 0.7, 0.9, 0.99)


def log_request(X: pd.DataFrame, offset: float) -> np.ndarray:
    """log(request + offset), 0 where the request is unknown."""
    r = X["request"].to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(np.isfinite(r), np.log(np.clip(r, 0.0, None) + offset), 0.0)


def hits(X: pd.DataFrame, y: np.ndarray, fraction: float) -> np.ndarray:
    """Jobs whose need reached ``fraction`` of a known, positive request."""
    r = X["request"].to_numpy(dtype=np.float64, na_value=np.nan)
    return np.isfinite(r) & (r > 0) & (np.asarray(y, dtype=np.float64) >= fraction * r)


def interp_rows(v: np.ndarray, levels: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's quantiles ``q`` (jobs × levels) read at its own level ``v``, linear between levels and flat
    past either end; ``q`` of one row serves every job."""
    levels = np.asarray(levels, dtype=np.float64)
    q = np.broadcast_to(np.atleast_2d(q), (len(v), len(levels)))
    k = np.clip(np.searchsorted(levels, v), 1, len(levels) - 1)
    lo, hi = levels[k - 1], levels[k]
    w = np.clip((v - lo) / (hi - lo), 0.0, 1.0)
    rows = np.arange(len(v))
    return q[rows, k - 1] * (1.0 - w) + q[rows, k] * w


def curve_on_grid(z_grid: np.ndarray, grid: np.ndarray, p: np.ndarray, z_low: np.ndarray, hit_levels: np.ndarray,
                  hit_q: np.ndarray, alphas) -> np.ndarray:
    """Mixture quantiles in log space, jobs × ``alphas``.

    ``z_grid`` (jobs × grid): quantiles of the jobs that do not hit; ``p``: each job's hit probability;
    ``hit_q``: quantiles of the hitting jobs at ``hit_levels``, one row for all jobs or one per job;
    ``z_low``: the least a hitting job is taken to need (the request, 0 in log ratio; the grid's top for a
    job that cannot hit).  Level α < 1 − p reads the grid at α / (1 − p), interpolated, and rises from the
    grid's top to ``z_low`` past it; level α ≥ 1 − p reads the hitting jobs' quantile at (α − (1 − p)) / p,
    or ``z_low`` if more.
    """
    rows = np.arange(len(p))
    out = np.empty((len(p), len(alphas)))
    for j, a in enumerate(alphas):
        t = a / np.clip(1.0 - p, 1e-9, None)
        k = np.clip(np.searchsorted(grid, t), 1, len(grid) - 1)
        w = np.clip((t - grid[k - 1]) / (grid[k] - grid[k - 1]), 0.0, 1.0)
        z = z_grid[rows, k - 1] * (1.0 - w) + z_grid[rows, k] * w
        top = np.clip((t - grid[-1]) / (1.0 - grid[-1]), 0.0, 1.0)
        z = np.where(t > grid[-1], z_grid[:, -1] * (1.0 - top) + z_low * top, z)
        with np.errstate(invalid="ignore", divide="ignore"):
            v = np.where(p > 0, (a - (1.0 - p)) / p, 0.0)
        z = np.where(t >= 1.0, np.fmax(interp_rows(v, hit_levels, hit_q), z_low), z)
        out[:, j] = np.where(t < grid[0], z_grid[:, 0], z)
    return non_crossing(out)


class HurdleQuantileGBM(Estimator):
    """Quantile regression of need relative to the request, with a classifier for jobs that use all of it.

    ``log_offset``: the target's offset c; ``hit_fraction``: need ≥ this share of the request counts as
    using all of it.  ``num_threads`` (training) and ``random_state`` fix the result; prediction, row by row,
    gives the same result on any number of threads (``predict_threads``).
    """

    def __init__(self, levels=(0.5, 0.9, 0.99), *, grid=GRID, hit_grid=HIT_GRID, min_hits: int = 500,
                 hit_fraction: float = HIT_FRACTION, n_estimators: int = 60, classifier_rounds: int = 150,
                 classifier_learning_rate: float = 0.05, hit_rounds: int = 30, hit_learning_rate: float = 0.3,
                 learning_rate: float = 0.15, num_leaves: int = 15, min_child_samples: int = 40, max_bin: int = 127,
                 log_offset: float = 1.0, categorical=CATEGORICAL, num_threads: int = 1, predict_threads: int = 2,
                 random_state: int = 0):
        self.levels = levels
        self.grid = grid
        self.hit_grid = hit_grid
        self.min_hits = min_hits
        self.hit_fraction = hit_fraction
        self.n_estimators = n_estimators
        self.classifier_rounds = classifier_rounds
        self.classifier_learning_rate = classifier_learning_rate
        self.hit_rounds = hit_rounds
        self.hit_learning_rate = hit_learning_rate
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.max_bin = max_bin
        self.log_offset = log_offset
        self.categorical = categorical
        self.num_threads = num_threads
        self.predict_threads = predict_threads
        self.random_state = random_state

    def _params(self, objective: str, alpha: float | None = None) -> dict:
        p = {"objective": objective, "learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
             "min_data_in_leaf": self.min_child_samples, "max_bin": self.max_bin, "num_threads": self.num_threads,
             "seed": self.random_state, "deterministic": True, "force_row_wise": True, "verbose": -1,
             "cat_smooth": 50.0, "cat_l2": 50.0, "feature_fraction": 0.7, "min_data_per_group": 50,
             "max_cat_to_onehot": 8}
        return p if alpha is None else {**p, "alpha": alpha}

    def _dataset(self, data: pd.DataFrame, label: np.ndarray):
        import lightgbm as lgb

        return lgb.Dataset(data, label, categorical_feature=list(self.vocab_), free_raw_data=False,
                           params={"max_bin": self.max_bin, "verbose": -1})

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> HurdleQuantileGBM:
        import lightgbm as lgb  # here, not at the top: a fitted model can predict with forests (predictors.trees)

        self.levels_ = check_levels(self.levels)
        self.grid_ = np.asarray(check_levels(self.grid))
        self.hit_grid_ = np.asarray(check_levels(self.hit_grid))
        y = np.asarray(y, dtype=np.float64)
        z = log_transform(y, self.log_offset) - log_request(X, self.log_offset)
        hit = hits(X, y, self.hit_fraction)
        self.vocab_ = category_vocab(X, self.categorical)
        self.numeric_ = [c for c in X.columns if c not in self.vocab_ and c not in self.categorical]
        data = encode(X, self.vocab_, self.numeric_)
        self.hit_rate_ = float(hit.mean())
        self.hit_quantiles_ = np.quantile(z[hit], HIT_LEVELS) if hit.any() else np.zeros(len(HIT_LEVELS))
        binary = {**self._params("binary"), "learning_rate": self.classifier_learning_rate}
        self.classifier_ = (lgb.train(binary, self._dataset(data, hit.astype(np.float64)),
                                      num_boost_round=self.classifier_rounds) if 0 < hit.sum() < len(hit) else None)
        rest = ~hit if (~hit).sum() >= 2 else np.ones(len(y), dtype=bool)
        ds = self._dataset(data[rest].reset_index(drop=True), z[rest])
        self.boosters_ = [lgb.train(self._params("quantile", a), ds, num_boost_round=self.n_estimators)
                          for a in self.grid_]
        self.hit_boosters_ = []
        if hit.sum() >= self.min_hits:
            dh = self._dataset(data[hit].reset_index(drop=True), z[hit])
            self.hit_boosters_ = [lgb.train({**self._params("quantile", a), "learning_rate": self.hit_learning_rate},
                                            dh, num_boost_round=self.hit_rounds) for a in self.hit_grid_]
        return self

    def _parts(self, X: pd.DataFrame, top: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Hit probability, the other jobs' quantiles and, where a level up to ``top`` reaches the hit region
        (p ≥ 1 − top), the hitting jobs' quantiles (NaN elsewhere)."""
        data = encode(X, self.vocab_, self.numeric_)
        for c in self.vocab_:  # category codes as floats (unseen → NaN)
            codes = data[c].cat.codes.to_numpy()
            data[c] = np.where(codes >= 0, codes, np.nan)
        arr = np.ascontiguousarray(data.to_numpy(dtype=np.float64))
        k = self.predict_threads
        p = (self.classifier_.predict(arr, num_threads=k) if self.classifier_ is not None
             else np.full(len(X), self.hit_rate_))
        z = non_crossing(np.column_stack([b.predict(arr, num_threads=k) for b in self.boosters_]))
        zh = None
        if self.hit_boosters_:
            zh = np.full((len(X), len(self.hit_boosters_)), np.nan)
            need = p >= 1.0 - top - 1e-9  # a margin for rounding: elsewhere no level reaches the hit region
            if need.any():
                sub = arr[need]
                zh[need] = non_crossing(np.column_stack([b.predict(sub, num_threads=k) for b in self.hit_boosters_]))
        return p, z, zh

    def predict_at(self, X: pd.DataFrame, alphas) -> np.ndarray:
        """Quantiles of the need at any levels ``alphas`` (jobs × levels, non-decreasing)."""
        alphas = np.asarray(alphas, dtype=np.float64)
        p, zg, zh = self._parts(X, float(alphas.max()) if alphas.size else 0.0)
        base = log_request(X, self.log_offset)
        known = X["request"].to_numpy(dtype=np.float64, na_value=np.nan) > 0
        z_low = np.where(known, 0.0, zg[:, -1])  # a job that may hit rises to its request
        hit_levels, hit_q = (HIT_LEVELS, self.hit_quantiles_) if zh is None else (self.hit_grid_, zh)
        z = curve_on_grid(zg, self.grid_, np.where(known, p, 0.0), z_low, hit_levels, hit_q, alphas)
        return inverse_log(z + base[:, None], self.log_offset)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.predict_at(X, self.levels_)
