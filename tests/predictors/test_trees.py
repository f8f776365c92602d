"""Forests read from LightGBM's text form predict what LightGBM itself predicts, row by row."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

from predictors.models.trees import Forest


def _data(n=3000, seed=3):
    rng = np.random.default_rng(seed)
    cat = rng.integers(0, 40, n).astype(float)
    x1 = rng.standard_normal(n)
    x2 = np.where(rng.random(n) < 0.2, np.nan, rng.exponential(2.0, n))
    x3 = np.where(rng.random(n) < 0.3, 0.0, rng.standard_normal(n))
    y = np.sin(x1) + (cat % 7) * 0.3 + np.nan_to_num(x2, nan=-1.0) * 0.2 + x3 + 0.1 * rng.standard_normal(n)
    X = pd.DataFrame({"cat": pd.Categorical.from_codes(cat.astype(int), categories=[f"c{i}" for i in range(40)]),
                      "x1": x1, "x2": x2, "x3": x3})
    return X, y, np.column_stack([cat, x1, x2, x3])


@pytest.mark.parametrize("params", [
    {"objective": "quantile", "alpha": 0.9},
    {"objective": "binary"},
    {"objective": "quantile", "alpha": 0.5, "zero_as_missing": True},
    {"objective": "regression", "use_missing": False},
])
def test_forest_predicts_as_lightgbm(params):
    X, y, arr = _data()
    label = (y > np.median(y)).astype(float) if params["objective"] == "binary" else y
    ds = lgb.Dataset(X, label, categorical_feature=["cat"], params={"verbose": -1, "max_bin": 63})
    booster = lgb.train({**params, "num_leaves": 15, "verbose": -1, "min_data_per_group": 20, "cat_smooth": 5,
                         "max_cat_to_onehot": 4, "deterministic": True, "num_threads": 1}, ds, num_boost_round=40)
    forest = Forest(booster.model_to_string())
    probe = arr.copy()
    probe[:50, 0] = np.nan   # an unseen category reaches the model as NaN
    probe[50:60, 0] = 99.0   # a code past every bitset
    probe[60:70, 1] = np.nan
    want = booster.predict(probe, num_threads=1)
    np.testing.assert_allclose(forest.predict(probe), want, rtol=1e-12, atol=1e-12)
    for i in (0, 55, 65, 100):  # the one-row walk agrees with the array pass
        np.testing.assert_allclose(forest.predict(probe[i:i + 1]), want[i:i + 1], rtol=1e-12, atol=1e-12)


def test_forest_refuses_the_wrong_width():
    X, y, arr = _data(500)
    booster = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), num_boost_round=3)
    with pytest.raises(ValueError, match="features"):
        Forest(booster.model_to_string()).predict(arr[:, :3])
