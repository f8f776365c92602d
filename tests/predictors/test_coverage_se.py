"""The standard error of a coverage share when a habit's jobs miss together (``metrics.coverage_se``), against
a hand-worked case, the binomial formula, and the spread of coverage over many planted months."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.models import coverage_se


def test_four_habits_of_ten_jobs_by_hand():
    # three habits covered whole, one missed whole: coverage 0.75; the habits' residual sums are 2.5, 2.5, 2.5
    # and -7.5, so sqrt(4/3 * (3 * 6.25 + 56.25)) / 40 = sqrt(100) / 40 = 0.25
    covered = np.repeat([1.0, 1.0, 1.0, 0.0], 10)
    groups = np.repeat([7, 3, 9, 1], 10)
    assert coverage_se(covered, groups) == pytest.approx(0.25)
    # the same 40 jobs as if independent: sqrt(0.75 * 0.25 / 39)
    assert coverage_se(covered, np.arange(40)) == pytest.approx(np.sqrt(0.75 * 0.25 / 39))


def test_one_group_or_none_gives_no_estimate():
    assert np.isnan(coverage_se(np.array([1.0, 0.0]), np.array([5, 5])))
    assert np.isnan(coverage_se(np.array([]), np.array([])))


def test_it_matches_the_spread_of_coverage_over_planted_months():
    # 200 habits of 1 to 60 jobs; each habit's bound covers all its jobs or, with probability 0.1, misses them
    # all (a burst); coverage's standard deviation over 2,000 such months is the truth the estimate is held to
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 61, 200)
    groups = np.repeat(np.arange(200), sizes)
    covs, ses = [], []
    for _ in range(2000):
        hit = np.repeat(rng.random(200) >= 0.1, sizes).astype(float)
        covs.append(hit.mean())
        ses.append(coverage_se(hit, groups))
    truth = float(np.std(covs))
    assert np.mean(ses) == pytest.approx(truth, rel=0.05)
    # the binomial formula, which takes the jobs as independent, is several times too small here
    n = len(groups)
    assert np.sqrt(0.9 * 0.1 / n) < truth / 4
