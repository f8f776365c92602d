"""Run-time bounds calibrated with the jobs still running (predictors.models.censored) and on the scores of the
models that issue them (predictors.models.pools): the Kaplan–Meier estimator against statsmodels' and a
hand-worked one, and a planted month of long runs whose bounds cover their level before and after each refit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictors.features import need_so_far
from predictors.models import RollingForecaster, conformal_shift, default_models
from predictors.models.censored import km_cdf, km_quantile, km_share_at_most
from predictors.models.pools import Pool

from .histories import group, history


def test_kaplan_meier_by_hand():
    # events at 1, 2, 3, 4 and one run still going at 2.5: S = 4/5, 3/5, then 3/5 · 1/2, then 0
    scores = np.array([3.0, 1.0, 2.5, 4.0, 2.0])
    observed = np.array([True, True, False, True, True])
    values, F = km_cdf(scores, observed)
    assert values.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert np.allclose(F, [0.2, 0.4, 0.7, 1.0])
    # level 0.5 with the finite-sample factor (n + 1) / n = 6/5: the first F >= 0.6 is at 3
    assert km_quantile(scores, observed, 0.5) == 3.0
    assert km_share_at_most(scores, observed, 2.7) == pytest.approx(0.4)
    assert km_share_at_most(scores, observed, 0.5) == 0.0
    # the last score censored: the distribution never reaches 0.9 · 6/5
    assert km_quantile(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([True] * 4 + [False]), 0.9) == math.inf


def test_kaplan_meier_agrees_with_statsmodels():
    survfunc = pytest.importorskip("statsmodels.duration.survfunc")
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(5, 300))
        t = rng.exponential(1.0, n).round(2)  # rounded: ties among events and censorings
        c = rng.exponential(2.0, n).round(2)
        scores, observed = np.minimum(t, c), t <= c
        values, F = km_cdf(scores, observed)
        sm = survfunc.SurvfuncRight(scores, observed.astype(int))
        assert np.allclose(values, np.unique(scores[observed]))
        assert np.allclose(F, 1.0 - sm.surv_prob)


def test_without_censoring_it_is_the_conformal_quantile():
    rng = np.random.default_rng(4)
    for n in (1, 9, 99, 100, 1000):
        s = rng.normal(size=n)
        for level in (0.07, 0.5, 0.9, 0.99):
            assert km_quantile(s, np.ones(n, bool), level) == conformal_shift(s, level)
            assert km_share_at_most(s, np.ones(n, bool), 0.1) == pytest.approx(np.mean(s <= 0.1), abs=1e-12)


def test_need_so_far_is_the_run_so_far_at_most_the_limit():
    start = np.array([0.0, 50.0, 100.0, np.nan, 10.0])
    limit = np.array([1000.0, 20.0, 1000.0, 1000.0, np.nan])
    got = need_so_far("walltime", start, limit, 100.0)
    assert np.allclose(got, [100.0, 20.0, np.nan, np.nan, 90.0], equal_nan=True)
    assert need_so_far("memory", start, limit, 100.0) is None


LEVELS = (0.5, 0.9)


@pytest.fixture(scope="module")
def long_runs():
    rng = np.random.default_rng(8)
    # one habit of runs anywhere from 2 % to 100 % of a three-day limit, one of short ones; 30 days
    return history(group(rng, "ann", "md", 3000, limit_s=3 * 86400, time_use=(0.02, 1.0), days=(0.0, 30.0)),
                   group(rng, "bob", "post", 3000, limit_s=3600, time_use=(0.2, 0.6), days=(0.0, 30.0)))


def test_long_runs_are_covered_at_their_level_before_and_after_a_refit(long_runs):
    names = ("lightgbm", "habit_max")
    est = default_models(LEVELS, "walltime", n_estimators=20, only=names)
    got = RollingForecaster(est, LEVELS, warmup_days=2.0, test_days=1.0, retrain_every=10, split_calibration=True,
                            calibrated=names, select=names).run(long_runs, "walltime").jobs
    s = got[got["scored"] & (got["user"] == "ann")]
    day = (s["submit_s"] - got["submit_s"].min()) / 86400
    # a run's need is uniform over 2-100 % of the limit: the bound at 0.5 covers half of the runs, at 0.9 nine
    # in ten, over the days the first models learned from two days of short runs alone (calibrated on the runs
    # still going, they covered 0.39 at 0.5 without them), and after each refit (calibrated on the refitted
    # models' residuals of the first ones, 0.541 at 0.5)
    for window in (day < 12, (day >= 12) & (day < 22), day >= 22):
        g = s[window]
        for lv in LEVELS:
            cover = float((g["y"] <= g[f"best@{lv}"] * (1 + 1e-9)).mean())
            # binomial noise of 800-1,000 jobs: 0.016 to 0.018 at 0.5, 0.01 at 0.9
            assert abs(cover - lv) <= 0.035, (window.mean(), lv, cover)


def test_a_pool_reads_the_predictions_of_its_own_models():
    issued = {"m": np.array([[1.0], [2.0], [3.0], [4.0]])}
    shadows = {"m": np.array([[np.nan], [np.nan], [30.0], [40.0]])}
    generation = np.array([0, 1, 2, 2])  # jobs 0 and 1 issued by the models of folds 0 and 1, 2 and 3 by fold 2's
    before = Pool(np.array([False, True, True, False]), 50, "before", generation=generation, before=1)
    # fold 1's models issued job 1's bound and gave job 2's in shadow
    assert before.inputs("m", np.array([1, 2]), issued, shadows).ravel().tolist() == [2.0, 30.0]
    assert before.test_inputs("m", np.array([3]), issued, shadows).ravel().tolist() == [40.0]
    assert Pool(np.ones(4, bool), 50).inputs("m", np.array([2]), issued, shadows).ravel().tolist() == [3.0]
    split = Pool(np.array([False, True, False, True]), 50, "split", split_inputs={"m": np.array([[7.0], [8.0]])})
    assert split.inputs("m", np.array([3, 1]), issued, shadows).ravel().tolist() == [8.0, 7.0]
