"""``habit_t``: the empirical-Bayes prior against planted ones, and the predictive bound's coverage where the
planted model holds (its level, by theory)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special

from predictors.models.habit_t import HabitT, fit_prior

LEVELS = (0.5, 0.9, 0.99)


def _planted(rng, habits: int, d0: float, s0: float):
    """Habit spreads from the scaled inverse χ² prior (d₀, s₀²) that ``fit_prior`` assumes, and 3 to 20 jobs each."""
    n = rng.integers(3, 21, habits)
    sigma2 = d0 * s0**2 / rng.chisquare(d0, habits) if np.isfinite(d0) else np.full(habits, s0**2)
    return n, sigma2


def test_fit_prior_recovers_a_planted_prior():
    rng = np.random.default_rng(3)
    n, sigma2 = _planted(rng, 20_000, d0=4.0, s0=0.5)
    s2 = sigma2 * rng.chisquare(n - 1) / (n - 1)  # each habit's sample variance
    d0, s0sq = fit_prior(s2, n - 1)
    assert d0 == pytest.approx(4.0, rel=0.1)
    assert s0sq == pytest.approx(0.25, rel=0.05)


def test_one_spread_for_every_habit_is_a_prior_of_infinite_weight():
    rng = np.random.default_rng(4)
    n = rng.integers(3, 21, 20_000)
    s2 = 0.09 * rng.chisquare(n - 1) / (n - 1)
    d0, s0sq = fit_prior(s2, n - 1)
    assert d0 > 200  # the variances spread no more than their sampling error (+inf when exactly so)
    assert s0sq == pytest.approx(0.09, rel=0.03)


def _frame(rng, habits: int, d0: float, s0: float):
    """Each habit's history of logit shares (centre anywhere in −3..1) and its next job's share."""
    n, sigma2 = _planted(rng, habits, d0, s0)
    centre = rng.uniform(-3.0, 1.0, habits)
    sd = np.sqrt(sigma2)
    hist = centre[:, None] + sd[:, None] * rng.standard_normal((habits, 20))
    hist = np.where(np.arange(20)[None, :] < n[:, None], hist, np.nan)
    nxt = centre + sd * rng.standard_normal(habits)
    req = np.full(habits, 64.0)
    X = pd.DataFrame({"habit_count": n.astype(float), "habit_share_n": n.astype(float),
                      "habit_share_mean": np.nanmean(hist, axis=1), "habit_share_sd": np.nanstd(hist, axis=1, ddof=1),
                      "request": req})
    return X, req * special.expit(nxt)


def test_the_predictive_bound_covers_its_level_where_the_planted_model_holds():
    rng = np.random.default_rng(5)
    X, y = _frame(rng, 40_000, d0=6.0, s0=0.4)
    est = HabitT(LEVELS).fit(X, y)
    assert est.prior_df_ == pytest.approx(6.0, rel=0.15)
    got = est.predict(X)
    for j, lv in enumerate(LEVELS):
        # Student's t about the mean, the spread shrunk to the prior: the posterior predictive, exact at its level
        assert (y <= got[:, j]).mean() == pytest.approx(lv, abs=0.01), lv


def test_a_habit_without_history_gets_its_request_and_without_a_request_no_prediction():
    X = pd.DataFrame({"habit_count": [0.0, 1.0, 5.0, 5.0], "habit_share_n": [0.0, 1.0, 5.0, 5.0],
                      "habit_share_mean": [np.nan, -1.0, -1.0, -1.0], "habit_share_sd": [np.nan, np.nan, 0.2, 0.2],
                      "request": [8.0, 8.0, 8.0, np.nan]})
    est = HabitT(LEVELS, min_history=2).fit(X, np.array([1.0, 2.0, 3.0, 4.0]))
    got = est.predict(X)
    assert (got[0] == 8.0).all() and (got[1] == 8.0).all()  # fewer than two ended jobs: the request
    assert (np.diff(got[2]) >= 0).all() and got[2, 0] == pytest.approx(8.0 * special.expit(-1.0))  # median: the mean
    assert np.isnan(got[3]).all()  # no request: no share to read, no prediction (the median of needs covers half)


def test_fit_returns_self_and_learns_only_trailing_underscore_attributes():
    X = pd.DataFrame({"habit_count": [3.0] * 4, "habit_share_n": [3.0] * 4, "habit_share_mean": [0.0] * 4,
                      "habit_share_sd": [0.1, 0.2, 0.3, 0.4], "request": [4.0] * 4})
    est = HabitT(LEVELS)
    before = dict(vars(est))
    assert est.fit(X, np.ones(4)) is est
    assert {k for k in vars(est) if k not in before} == {"levels_", "prior_df_", "prior_var_"}
