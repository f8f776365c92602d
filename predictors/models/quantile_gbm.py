"""LightGBM quantile regression: one booster per level on log(need + offset), non-crossing by cumulative max."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..features import CATEGORICAL
from .base import Estimator, check_levels, inverse_log, log_transform, non_crossing


def category_vocab(X: pd.DataFrame, columns) -> dict[str, pd.Index]:
    """The values each categorical column takes in the training data (sorted: stable codes)."""
    return {c: pd.Index(sorted(X[c].dropna().astype(str).unique())) for c in columns if c in X}


def encode(X: pd.DataFrame, vocab: dict[str, pd.Index], numeric: list[str]) -> pd.DataFrame:
    """Numeric columns as float, categoricals as pandas categories of the training vocabulary (unseen → NaN)."""
    out = {c: X[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in numeric}
    for c, cats in vocab.items():
        vals = X[c].astype("string").to_numpy(dtype=object, na_value=None)
        out[c] = pd.Categorical.from_codes(cats.get_indexer(vals), categories=cats)
    return pd.DataFrame(out)


class QuantileGBM(Estimator):
    """Gradient-boosted quantile regression.

    ``log_offset``: models fit log(y + offset) (quantiles commute with increasing transforms), None for y.
    ``num_threads`` and ``random_state`` fix the result: LightGBM runs deterministically.
    """

    def __init__(self, levels=(0.5, 0.9, 0.99), *, n_estimators: int = 100, learning_rate: float = 0.1,
                 num_leaves: int = 31, min_child_samples: int = 40, max_bin: int = 127, subsample: float = 1.0,
                 log_offset: float | None = 1.0, categorical=CATEGORICAL, num_threads: int = 1,
                 random_state: int = 0):
        self.levels = levels
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.max_bin = max_bin
        self.subsample = subsample
        self.log_offset = log_offset
        self.categorical = categorical
        self.num_threads = num_threads
        self.random_state = random_state

    def _params(self, alpha: float) -> dict:
        return {"objective": "quantile", "alpha": alpha, "learning_rate": self.learning_rate,
                "num_leaves": self.num_leaves, "min_data_in_leaf": self.min_child_samples, "max_bin": self.max_bin,
                "bagging_fraction": self.subsample, "bagging_freq": 1 if self.subsample < 1 else 0,
                "num_threads": self.num_threads, "seed": self.random_state, "deterministic": True,
                "force_row_wise": True, "verbose": -1, "cat_smooth": 10.0, "min_data_per_group": 50,
                "max_cat_to_onehot": 8}

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> QuantileGBM:
        import lightgbm as lgb

        self.levels_ = check_levels(self.levels)
        y = np.asarray(y, dtype=np.float64)
        z = y if self.log_offset is None else log_transform(y, self.log_offset)
        self.vocab_ = category_vocab(X, self.categorical)
        self.numeric_ = [c for c in X.columns if c not in self.vocab_ and c not in self.categorical]
        data = encode(X, self.vocab_, self.numeric_)
        ds = lgb.Dataset(data, z, categorical_feature=list(self.vocab_), free_raw_data=False,
                         params={"max_bin": self.max_bin, "verbose": -1})
        self.boosters_ = [lgb.train(self._params(a), ds, num_boost_round=self.n_estimators) for a in self.levels_]
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        data = encode(X, self.vocab_, self.numeric_)
        # category codes as floats (unseen → NaN): the boosters know which columns are categorical
        for c in self.vocab_:
            data[c] = np.where(data[c].cat.codes.to_numpy() >= 0, data[c].cat.codes.to_numpy(), np.nan)
        arr = data.to_numpy(dtype=np.float64)
        z = np.column_stack([b.predict(arr, num_threads=self.num_threads) for b in self.boosters_])
        z = non_crossing(z)
        return z if self.log_offset is None else inverse_log(z, self.log_offset)
