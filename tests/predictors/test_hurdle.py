"""The hurdle quantile model and calibration by level, against planted mixtures with known quantiles."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from predictors.models.conformal import CURVE_LEVELS, LevelCalibrator, level_scores, read_curve
from predictors.models.quantile_hurdle import HurdleQuantileGBM, curve_on_grid


def planted(n: int, seed: int):
    """A user u uses all of its request with probability p_u; otherwise log(need / request) ~ N(m_u, s_u)."""
    rng = np.random.default_rng(seed)
    req = np.exp(rng.uniform(4, 10, n))
    user = rng.integers(0, 10, n)
    p = np.linspace(0.0, 0.3, 10)[user]
    m = np.linspace(-3.0, -1.2, 10)[user]
    s = np.where(user % 2 == 0, 0.2, 0.5)
    hit = rng.random(n) < p
    y = np.where(hit, req, req * np.exp(m + s * rng.standard_normal(n)))
    X = pd.DataFrame({"user": pd.array([f"u{u}" for u in user], dtype="string"), "request": req,
                      "noise": rng.standard_normal(n)})
    return X, y, req, p, m, s


def true_quantile(req, p, m, s, level):
    t = level / (1 - p)
    return np.where(t >= 1, req, req * np.exp(m + s * norm.ppf(np.clip(t, 1e-9, 1 - 1e-9))))


def test_conventions():
    est = HurdleQuantileGBM((0.5, 0.9), n_estimators=10)
    params = est.get_params()
    assert not any(k.endswith("_") for k in vars(est))
    X, y, *_ = planted(500, 0)
    assert est.fit(X, y) is est
    assert est.clone().get_params() == params
    assert {"classifier_", "boosters_", "hit_rate_", "hit_quantiles_"} <= set(vars(est))


def test_recovers_planted_mixture_quantiles():
    X, y, *_ = planted(30_000, 1)
    Xt, yt, rt, pt, mt, st = planted(8_000, 2)
    est = HurdleQuantileGBM((0.5, 0.8, 0.9, 0.99), n_estimators=150, random_state=3).fit(X, y)
    pred = est.predict(Xt)
    assert (np.diff(pred, axis=1) >= 0).all()
    assert est.hit_rate_ == pytest.approx(0.15, abs=0.02)
    for j, lv in enumerate((0.5, 0.8, 0.9)):
        assert abs(np.mean(yt <= pred[:, j]) - lv) < 0.03, lv
        truth = true_quantile(rt, pt, mt, st, lv)
        assert 0.85 < np.median(pred[:, j] / truth) < 1.15, lv
    # users whose need reaches the request more often than 1 − τ: the τ-quantile is the request itself
    sure = pt > 0.2
    assert np.median(pred[sure, 2] / rt[sure]) == pytest.approx(1.0, abs=0.03)
    curve = est.predict_at(Xt, CURVE_LEVELS)
    assert curve.shape == (len(Xt), len(CURVE_LEVELS)) and (np.diff(curve, axis=1) >= 0).all()
    np.testing.assert_allclose(curve[:, CURVE_LEVELS.index(0.9)], pred[:, 2])


def test_curve_on_grid_by_hand():
    grid = np.array([0.5, 0.9, 0.99])
    z = np.array([[0.0, 1.0, 2.0]])
    hl, hq = np.array([0.0, 0.5, 1.0]), np.array([5.0, 6.0, 7.0])
    # no hits: the grid itself, interpolated between its levels
    out = curve_on_grid(z, grid, np.array([0.0]), np.array([5.0]), hl, hq, np.array([0.5, 0.7, 0.9]))
    np.testing.assert_allclose(out, [[0.0, 0.5, 1.0]])
    # p = 0.1: level 0.45 of all jobs is level 0.5 of those that do not hit; 0.95 is the hitting jobs' median,
    # 0.8955 (= 0.995 × 0.9) lies halfway from the grid's top to z_low
    out = curve_on_grid(z, grid, np.array([0.1]), np.array([5.0]), hl, hq, np.array([0.45, 0.8955, 0.95, 1.0]))
    np.testing.assert_allclose(out, [[0.0, 3.5, 6.0, 7.0]])
    # hitting jobs' quantiles below z_low read z_low (a job that hits needs at least its request)
    out = curve_on_grid(z, grid, np.array([0.1]), np.array([6.5]), hl, hq, np.array([0.95, 1.0]))
    np.testing.assert_allclose(out, [[6.5, 7.0]])


def test_risk_of_the_request_is_the_share_of_jobs_over_it():
    """Hitting jobs split: 60 % end just under the request, 40 % are killed a little over it.  The curve must
    then cross the request at level 1 − 0.4 p, not 1 − p."""
    rng = np.random.default_rng(4)
    n = 20_000
    req = np.full(n, 1000.0)
    hit = rng.random(n) < 0.2
    over = rng.random(n) < 0.4
    y = np.where(hit, np.where(over, 1010.0, 970.0), req * np.exp(-2 + 0.3 * rng.standard_normal(n)))
    X = pd.DataFrame({"user": pd.array(["u"] * n, dtype="string"), "request": req, "noise": rng.standard_normal(n)})
    est = HurdleQuantileGBM((0.5, 0.9), n_estimators=30).fit(X, y)
    curve = est.predict_at(X.head(1), CURVE_LEVELS)[0]
    crossing = CURVE_LEVELS[int(np.argmax(curve > 1000.0))]
    assert crossing == pytest.approx(1 - 0.4 * 0.2, abs=0.015)


def test_level_scores_and_read_curve_by_hand():
    curve = np.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0], [1.0, 2.0, 4.0], [1.0, 2.0, 4.0]])
    y = np.array([0.5, 1.5, 3.0, 9.0])
    np.testing.assert_allclose(level_scores(y, curve), [0, 0.5, 1.5, np.inf])
    req = np.array([10.0, 10.0, 3.0, 8.0])
    # capped at the request: the third job's curve is [1, 2, 3 | 3], reached at 2; the fourth exceeds its request
    np.testing.assert_allclose(level_scores(y, curve, req), [0, 0.5, 2, np.inf])
    np.testing.assert_array_equal(level_scores(np.array([3.5]), curve[:1], np.array([3.5])), [2])
    out = read_curve(curve, np.array([1, 3]), req)
    np.testing.assert_allclose(out, [[2, 10], [2, 10], [2, 3], [2, 8]])
    out = read_curve(curve, np.array([0.5, 1.25, np.inf]))
    np.testing.assert_allclose(out[:, :2], [[1.5, 2.5]] * 4)
    np.testing.assert_allclose(out[:, 2], 4.0)  # uncapped, past the top: the top


def test_level_calibration_covers_on_exchangeable_data():
    """Nested conformal guarantee: coverage ≥ τ on average, even with a badly scaled curve."""
    rng = np.random.default_rng(5)
    lv = np.asarray(CURVE_LEVELS)
    covs = []
    for _ in range(200):
        sigma = rng.uniform(0.2, 2.0, 400)
        y = np.exp(sigma * rng.standard_normal(400))
        curve = np.exp(0.5 * sigma[:, None] * norm.ppf(lv)[None, :])  # half the true spread
        c = LevelCalibrator((0.9,), cap=False).fit(curve[:200], y[:200])
        covs.append(np.mean(y[200:] <= c.transform(curve[200:])[:, 0]))
    assert 0.9 <= np.mean(covs) < 0.9 + 1 / 201 + 0.015


def test_level_calibration_keeps_each_jobs_shape():
    """A curve with the right shape but the wrong level is moved to the right level, not scaled."""
    rng = np.random.default_rng(6)
    n = 20_000
    sigma = np.where(rng.random(n) < 0.5, 0.1, 1.0)
    y = np.exp(sigma * rng.standard_normal(n))
    lv = np.asarray(CURVE_LEVELS)
    curve = np.exp(sigma[:, None] * norm.ppf(np.clip(lv - 0.2, 0.01, None))[None, :])  # reads 0.2 too low
    c = LevelCalibrator((0.7,), cap=False).fit(curve[: n // 2], y[: n // 2])
    q = c.transform(curve[n // 2:])[:, 0]
    s, yt = sigma[n // 2:], y[n // 2:]
    for sg in (0.1, 1.0):  # each spread covered at 0.7, which a single multiplicative shift cannot do
        assert abs(np.mean(yt[s == sg] <= q[s == sg]) - 0.7) < 0.03
    assert math.isfinite(q.max())


def test_level_calibration_lowers_a_curve_that_reads_high():
    """A curve whose median is the truth's 0.7-quantile (a stratum the model knows little of, or drift) is
    calibrated down to a bound that covers half the jobs: the curve is read from level 0.25, so the bound at 0.5
    can lie below the curve's own median.  The planted truth is lognormal, so the bound's coverage is known."""
    rng = np.random.default_rng(7)
    n = 20_000
    sigma = rng.uniform(0.2, 1.0, n)
    y = np.exp(sigma * rng.standard_normal(n))
    lv = np.asarray(CURVE_LEVELS)
    assert lv[0] <= 0.25
    curve = np.exp(sigma[:, None] * norm.ppf(np.clip(lv + 0.2, None, 0.999))[None, :])  # reads 0.2 too high
    c = LevelCalibrator((0.5, 0.9), cap=False).fit(curve[: n // 2], y[: n // 2])
    q = c.transform(curve[n // 2:])
    assert abs(np.mean(y[n // 2:] <= q[:, 0]) - 0.5) < 0.02
    assert abs(np.mean(y[n // 2:] <= q[:, 1]) - 0.9) < 0.02
    # and the hurdle model's own curve goes on below its median
    X, yy, *_ = planted(3_000, 9)
    est = HurdleQuantileGBM((0.5, 0.9), n_estimators=20).fit(X, yy)
    low = est.predict_at(X, CURVE_LEVELS)
    assert np.mean(low[:, 0] < low[:, CURVE_LEVELS.index(0.5)]) > 0.9


def test_prediction_threads_do_not_change_the_result():
    X, y, *_ = planted(3_000, 8)
    est = HurdleQuantileGBM((0.5, 0.9), n_estimators=20).fit(X, y)
    one = est.set_params(predict_threads=1).predict_at(X, CURVE_LEVELS)
    two = est.set_params(predict_threads=2).predict_at(X, CURVE_LEVELS)
    np.testing.assert_array_equal(one, two)


def test_hit_region_is_conditional():
    """Half the users' jobs that reach their limit are recorded 10 % over it (killed after a grace time),
    the others' stop at 97 % of it: the hit region of each job follows its own user."""
    rng = np.random.default_rng(5)
    n = 12_000
    req = np.exp(rng.uniform(5, 9, n))
    user = rng.integers(0, 6, n)
    hit = rng.random(n) < 0.3
    over = user % 2 == 0
    y = np.where(hit, np.where(over, 1.1, 0.97) * req, req * np.exp(-2 + 0.3 * rng.standard_normal(n)))
    X = pd.DataFrame({"user": pd.array([f"u{u}" for u in user], dtype="string"), "request": req})
    est = HurdleQuantileGBM((0.5, 0.95), n_estimators=60, random_state=0).fit(X, y)
    assert len(est.hit_boosters_) == len(est.hit_grid)
    q95 = est.predict(X)[:, 1] / req
    assert np.median(q95[over]) == pytest.approx(1.1, abs=0.02)
    assert np.median(q95[~over]) == pytest.approx(1.0, abs=0.005)  # at least the request
    assert np.mean(y[over] <= est.predict(X)[over, 1]) > 0.93
    # too few hitting jobs for boosters of their own: one set of quantiles serves every job
    few = HurdleQuantileGBM((0.5, 0.95), n_estimators=20, min_hits=n, random_state=0).fit(X, y)
    assert few.hit_boosters_ == []
    g = few.predict(X)[:, 1] / req
    assert np.ptp(g[hit & over]) < 0.2 and abs(np.median(g[over]) - np.median(g[~over])) < 0.02
