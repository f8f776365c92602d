"""The kill budget's allocation, worked by hand (predictors.models.budget)."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.models import allocate, apply_allocation

LEVELS = (0.9, 0.99)


def _month():
    """200 jobs asking 1 unit for one hour each; stratum a: 0.4 at p90, 0.5 at p99 (frees 60 or 50);
    stratum b: 0.0 at p90, 0.95 at p99 (frees 100 or 5)."""
    pred = np.vstack([np.tile([0.4, 0.5], (100, 1)), np.tile([0.0, 0.95], (100, 1))])
    strata = np.array(["a"] * 100 + ["b"] * 100, dtype=object)
    return {"memory": pred}, {"memory": np.ones(200)}, {"memory": strata}, {"memory": np.ones(200)}


def test_the_budget_goes_where_a_kill_buys_most():
    preds, asked, strata, weight = _month()
    # hulls: a: (1 kill, 50) then (10, 60): 50 a kill, then 10/9; b: (1, 5) lies under the line to (10, 100):
    # one step of 10 a kill.  11 kills: a's first step (1), then b's (10); a's second (9 more) does not fit
    got = allocate(preds, asked, strata, weight, LEVELS, 11.0)
    assert got.level("memory", "a") == 0.99 and got.level("memory", "b") == 0.9
    assert got.expected_kills == pytest.approx(11.0)
    # 5 kills: a's first step only; b's step of 10 does not fit, and closes b
    got = allocate(preds, asked, strata, weight, LEVELS, 5.0)
    assert got.level("memory", "a") == 0.99 and got.level("memory", "b") is None
    assert got.expected_kills == pytest.approx(1.0)
    # 20 kills: everything at p90
    got = allocate(preds, asked, strata, weight, LEVELS, 20.0)
    assert got.level("memory", "a") == 0.9 and got.level("memory", "b") == 0.9
    assert got.expected_kills == pytest.approx(20.0)


def test_applied_allocation_keeps_the_request_where_the_budget_did_not_reach():
    preds, asked, strata, weight = _month()
    got = apply_allocation(allocate(preds, asked, strata, weight, LEVELS, 5.0), preds, strata, LEVELS)
    v = got["memory"]
    assert (v[:100] == 0.5).all() and np.isnan(v[100:]).all()


def test_resources_compare_through_their_scale():
    pred = np.tile([0.5, 0.5], (100, 1))
    preds = {"memory": pred, "cpus": pred}
    strata = {k: np.array(["s"] * 100, dtype=object) for k in preds}
    ones = {k: np.ones(100) for k in preds}
    # both free 50 at p99 (1 expected kill each); memory is worth 10 times less: a budget of one kill goes to cpus
    got = allocate(preds, ones, strata, ones, LEVELS, 1.0, scale={"memory": 0.1, "cpus": 1.0})
    assert got.level("cpus", "s") == 0.99 and got.level("memory", "s") is None


def test_a_kill_is_priced_in_what_it_wastes():
    """a: 100 jobs asking 1 unit, 0.4 at p90 and 0.5 at p99; c: 100 jobs asking 10, 9.5 at p90 and 9.9 at p99;
    every job one hour.  Gross, a frees 60 / 50 and c 50 / 10; a kill wastes the cut amount for the run, so
    net of (1 − τ) × Σ predicted: a 60 − 4 = 56 at p90 and 50 − 0.5 = 49.5 at p99; c 50 − 95 < 0 at p90 (never
    taken) and 10 − 9.9 = 0.1 at p99."""
    pred = np.vstack([np.tile([0.4, 0.5], (100, 1)), np.tile([9.5, 9.9], (100, 1))])
    preds = {"memory": pred}
    asked = {"memory": np.r_[np.ones(100), np.full(100, 10.0)]}
    strata = {"memory": np.array(["a"] * 100 + ["c"] * 100, dtype=object)}
    weight = {"memory": np.ones(200)}
    # gross: a's hull (1, 50), (10, 60); c's (1, 10), (10, 50): steps 50, 10, 40/9, 10/9 a kill; 11 kills take
    # a's first, c's two (c at p90) and leave a at p99
    gross = allocate(preds, asked, strata, weight, LEVELS, 11.0)
    assert gross.level("memory", "a") == 0.99 and gross.level("memory", "c") == 0.9
    # net: a's hull (1, 49.5), (10, 56): steps 49.5 and 6.5/9 = 0.72; c's only (1, 0.1): 0.1 a kill; 11 kills take
    # a to p90 first, then c's step at p99
    net = allocate(preds, asked, strata, weight, LEVELS, 11.0, kill_cost=True)
    assert net.level("memory", "a") == 0.9 and net.level("memory", "c") == 0.99
    assert net.expected_kills == pytest.approx(11.0)
    row = {r["stratum"]: r for r in net.rows}
    assert row["a"]["freed"] == pytest.approx(56.0) and row["c"]["freed"] == pytest.approx(0.1)
    # with a budget of 10 the c step no longer fits once a took 10
    assert allocate(preds, asked, strata, weight, LEVELS, 10.0, kill_cost=True).level("memory", "c") is None
