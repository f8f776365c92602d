"""Estimators against planted ground truth and hand-computed cases; scikit-learn conventions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from predictors.models.baselines import (
    KRRBaseline,
    LastTwoBaseline,
    RequestBaseline,
    UserMeanBaseline,
    VPABaseline,
)
from predictors.models.conformal import ConformalCalibrator, adaptive_levels, conformal_shift
from predictors.models.lineup import default_models
from predictors.models.quantile_gbm import QuantileGBM
from predictors.models.quantile_linear import LinearQuantile


def planted(n: int, seed: int):
    """log y = 1 + 0.8 log request + 0.5 · g(user) + σ(x) ε: the true τ-quantile is known in closed form."""
    rng = np.random.default_rng(seed)
    req = np.exp(rng.uniform(2, 8, n))
    user = rng.integers(0, 20, n)
    ueff = np.linspace(-1, 1, 20)[user]
    sigma = np.where(user % 2 == 0, 0.3, 0.8)
    mu = 1 + 0.8 * np.log(req) + 0.5 * ueff
    y = np.exp(mu + sigma * rng.standard_normal(n))
    X = pd.DataFrame({"user": pd.array([f"u{u}" for u in user], dtype="string"), "request": req,
                      "user_count": 5.0, "noise": rng.standard_normal(n)})
    for c in ("user_last1", "user_last2", "user_mean", "user_q90", "userreq_last1", "family_q50"):
        X[c] = np.nan
    return X, y, mu, sigma


def true_quantile(mu, sigma, level):
    return np.exp(mu + sigma * norm.ppf(level))


@pytest.mark.parametrize("make", [lambda: QuantileGBM((0.5, 0.9), n_estimators=10, num_threads=1),
                                  lambda: LinearQuantile((0.5, 0.9)), lambda: RequestBaseline((0.9,)),
                                  lambda: VPABaseline((0.9,), margin=1.2)])
def test_conventions(make):
    est = make()
    params = est.get_params()
    assert not any(k.endswith("_") for k in vars(est))  # nothing learned in __init__
    assert est.clone().get_params() == params
    X, y, _, _ = planted(300, 0)
    assert est.fit(X, y) is est
    assert any(k.endswith("_") for k in vars(est))
    with pytest.raises(ValueError):
        est.set_params(no_such_parameter=1)


def test_lightgbm_recovers_planted_quantiles_and_never_crosses():
    X, y, mu, sigma = planted(20_000, 1)
    Xt, yt, mut, st = planted(5_000, 2)
    m = QuantileGBM((0.5, 0.9, 0.99), n_estimators=150, num_threads=1, random_state=3).fit(X, y)
    p = m.predict(Xt)
    assert (np.diff(p, axis=1) >= 0).all()
    for j, lv in enumerate((0.5, 0.9)):
        cov = np.mean(yt <= p[:, j])
        assert abs(cov - lv) < 0.03, (lv, cov)
        ratio = np.median(p[:, j] / true_quantile(mut, st, lv))
        assert 0.85 < ratio < 1.15
    # determinism: the same seed gives the same model
    p2 = QuantileGBM((0.5, 0.9, 0.99), n_estimators=150, num_threads=1, random_state=3).fit(X, y).predict(Xt)
    np.testing.assert_array_equal(p, p2)


def test_lightgbm_unseen_user_still_predicts():
    X, y, _, _ = planted(3000, 4)
    m = QuantileGBM((0.9,), n_estimators=20, num_threads=1).fit(X, y)
    Xn = X.head(5).copy()
    Xn["user"] = pd.array(["never-seen"] * 5, dtype="string")
    assert np.isfinite(m.predict(Xn)).all()


def test_quantreg_recovers_the_planted_slope():
    rng = np.random.default_rng(5)
    n = 8000
    req = np.exp(rng.uniform(2, 8, n))
    y = np.exp(0.5 + 0.7 * np.log(req + 1) + 0.4 * rng.standard_normal(n)) - 1
    X = pd.DataFrame({"request": req, "user_count": 0.0})
    m = LinearQuantile((0.5, 0.9), history=(), log_offset=1.0).fit(X, y)
    # columns: intercept, log request (the cold-start indicator is constant and dropped)
    assert m.coef_[0, 1] == pytest.approx(0.7, abs=0.02)
    assert m.coef_[1, 0] - m.coef_[0, 0] == pytest.approx(0.4 * norm.ppf(0.9), abs=0.04)


def test_baselines_by_hand():
    X = pd.DataFrame({"request": [100.0, 100.0, np.nan], "user_mean": [10.0, np.nan, np.nan],
                      "user_last1": [8.0, 30.0, np.nan], "user_last2": [12.0, np.nan, np.nan],
                      "user_vpa": [20.0, np.nan, np.nan], "user_krr": [40.0, np.nan, np.nan]})
    y = np.array([1.0, 2.0, 7.0])
    assert RequestBaseline((0.5, 0.9)).fit(X, y).predict(X)[:, 1].tolist()[:2] == [100.0, 100.0]
    assert UserMeanBaseline((0.9,)).fit(X, y).predict(X)[:, 0].tolist() == [10.0, 100.0, 2.0]  # fallback: median y
    assert LastTwoBaseline((0.9,)).fit(X, y).predict(X)[:, 0].tolist() == [10.0, 30.0, 2.0]
    assert VPABaseline((0.9,)).fit(X, y).predict(X)[0, 0] == pytest.approx(23.0)
    assert KRRBaseline((0.9,)).fit(X, y).predict(X)[0, 0] == pytest.approx(46.0)


def test_conformal_shift_by_hand():
    s = np.arange(1, 20, dtype=float)  # n = 19 scores 1..19
    assert conformal_shift(s, 0.9) == 18.0  # ceil(20 · 0.9) = 18th smallest
    assert conformal_shift(s, 0.5) == 10.0
    assert math.isinf(conformal_shift(s, 0.99))  # ceil(20 · 0.99) = 20 > n


def test_conformal_coverage_on_exchangeable_data():
    """Split-conformal guarantee: coverage ≥ τ on average, and < τ + 1/(n+1) + sampling noise."""
    rng = np.random.default_rng(7)
    covs = []
    for _ in range(200):
        y = np.exp(rng.standard_normal(400))
        pred = np.full((400, 1), 0.5)  # a deliberately bad constant model
        c = ConformalCalibrator((0.9,), log_offset=0.0, cap=False).fit(pred[:200], y[:200])
        covs.append(np.mean(y[200:] <= c.transform(pred[200:])[:, 0]))
    assert 0.9 <= np.mean(covs) < 0.9 + 1 / 201 + 0.01


def test_conformal_cap_accounts_for_jobs_over_their_request():
    y = np.array([1.0, 2, 3, 4, 50])
    req = np.array([10.0, 10, 10, 10, 10])  # the last job exceeded its request: a capped prediction never covers it
    c = ConformalCalibrator((0.5,), log_offset=0.0).fit(np.ones((5, 1)), y, req)
    assert c.shift_[0] == pytest.approx(np.log(3.0))
    out = c.transform(np.array([[1.0], [100.0]]), np.array([10.0, 10.0]))
    assert out[:, 0].tolist() == pytest.approx([3.0, 10.0])


def test_adaptive_levels_move_against_the_error():
    y = np.array([1.0, 1.0, 1.0, 1.0])
    q = np.array([[0.5], [2.0], [2.0], [2.0]])  # 3 of 4 covered at level 0.9: raise the level
    up = adaptive_levels((0.9,), y, q, 0.5)
    assert up[0] == pytest.approx(0.9 + 0.5 * 0.36 * (0.9 - 0.75))  # the step at 0.9: gain × 4 × 0.9 × 0.1
    assert adaptive_levels((0.9,), y, np.full((4, 1), 2.0), 1.0)[0] == pytest.approx(0.9 - 0.36 * 0.1)
    assert adaptive_levels((0.9,), y, np.full((4, 1), 0.1), 5.0)[0] == 0.999  # clipped


def test_the_step_shrinks_with_the_variance_of_a_share():
    y = np.ones(100)
    q = np.where(np.arange(100)[:, None] < 10, 0.5, 2.0) * np.ones((1, 3))  # 90 of 100 covered at each level
    got = adaptive_levels((0.5, 0.95, 0.99), y, q, 0.2)
    assert got == pytest.approx([0.5 + 0.2 * 1.0 * (0.5 - 0.9), 0.95 + 0.2 * 0.19 * 0.05, 0.99 + 0.2 * 0.0396 * 0.09])


def test_the_lowest_level_is_lowered_as_readily_as_it_is_raised():
    y = np.ones(4)
    over = np.array([[0.5], [2.0], [2.0], [2.0]])  # 3 of 4 covered at level 0.5: lower it
    assert adaptive_levels((0.5,), y, over, 0.5)[0] == pytest.approx(0.5 - 0.5 * 0.25)  # 4τ(1 − τ) is 1 at 0.5
    under = np.array([[0.5], [0.5], [0.5], [2.0]])  # 1 of 4: raise it by as much
    assert adaptive_levels((0.5,), y, under, 0.5)[0] == pytest.approx(0.5 + 0.5 * 0.25)
    assert adaptive_levels((0.5,), y, np.full((4, 1), 2.0), 1.0)[0] == 0.25  # clipped


def test_default_lineup_names():
    assert list(default_models((0.9,), "walltime")) == ["request", "user_mean", "last_two", "vpa", "krr",
                                                         "habit_max", "habit_krr", "habit_vpa", "habit_autopilot",
                                                         "habit_t", "quantreg", "lightgbm"]
    with pytest.raises(ValueError):
        default_models((0.9,), "walltime", only=["nope"])
