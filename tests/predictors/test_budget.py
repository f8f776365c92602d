"""The kill budget's allocation, job by job, worked by hand (predictors.models.budget)."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.models import allocate, apply_allocation

LEVELS = (0.9, 0.99)


def _month():
    """200 jobs asking 1 unit for one hour each; stratum a: 0.4 at p90, 0.5 at p99 (frees 0.6 or 0.5 a job);
    stratum b: 0.0 at p90, 0.95 at p99 (frees 1.0 or 0.05 a job)."""
    pred = np.vstack([np.tile([0.4, 0.5], (100, 1)), np.tile([0.0, 0.95], (100, 1))])
    strata = np.array(["a"] * 100 + ["b"] * 100, dtype=object)
    return {"memory": pred}, {"memory": np.ones(200)}, {"memory": strata}, {"memory": np.ones(200)}


def _levels(got, lo, hi):
    return got.chosen["memory"][lo:hi]


def test_the_budget_goes_where_a_kill_buys_most():
    preds, asked, strata, weight = _month()
    # a job of a: hull (0.01 kills, 0.5) at 50 a kill, then (0.1, 0.6) at 0.1 / 0.09 = 1.1 a kill; a job of b:
    # (0.01, 0.05) lies under the line to (0.1, 1.0): one step at 10 a kill.  11 kills: the 100 first steps of a
    # (1 kill), then the 100 of b (10); no second step of a fits
    got = allocate(preds, asked, strata, weight, LEVELS, 11.0)
    assert (_levels(got, 0, 100) == 0.99).all() and (_levels(got, 100, 200) == 0.9).all()
    assert got.expected_kills == pytest.approx(11.0)
    # 5 kills: a's first steps (1 kill), then b's steps of 0.1 while they fit: 40 jobs of b, in job order
    got = allocate(preds, asked, strata, weight, LEVELS, 5.0)
    assert (_levels(got, 0, 100) == 0.99).all()
    assert (_levels(got, 100, 140) == 0.9).all() and np.isnan(_levels(got, 140, 200)).all()
    assert got.expected_kills == pytest.approx(5.0)
    # 20 kills: everything at p90
    got = allocate(preds, asked, strata, weight, LEVELS, 20.0)
    assert (got.chosen["memory"] == 0.9).all()
    assert got.expected_kills == pytest.approx(20.0)


def test_a_kill_that_costs_more_of_the_budget_is_bought_later():
    preds, asked, strata, weight = _month()
    # b's jobs 100-149 cost 20 jobs a kill (a second budget, of GPU-hours, binds them): their step frees 10 / 20
    # = 0.5 a unit spent, less than a's second step (1.1).  11 units: a's first steps (1), b's 50 cheap jobs (5),
    # then a's second steps, 0.09 a job: 55 fit in the 5 left; none of b's dear jobs
    cost = {"memory": np.r_[np.ones(100), np.full(50, 20.0), np.ones(50)]}
    got = allocate(preds, asked, strata, weight, LEVELS, 11.0, cost=cost)
    assert np.isnan(_levels(got, 100, 150)).all() and (_levels(got, 150, 200) == 0.9).all()
    assert (_levels(got, 0, 55) == 0.9).all() and (_levels(got, 55, 100) == 0.99).all()
    # the expected kills are kills: 1 + 5 + 55 × 0.09
    assert got.expected_kills == pytest.approx(1.0 + 5.0 + 55 * 0.09)


def test_the_rows_say_per_stratum_what_was_chosen():
    preds, asked, strata, weight = _month()
    rows = {r["stratum"]: r for r in allocate(preds, asked, strata, weight, LEVELS, 5.0).rows}
    assert rows["a"]["levels"] == {"0.99": 100} and rows["a"]["cut_jobs"] == 100
    assert rows["b"]["levels"] == {"request": 60, "0.9": 40} and rows["b"]["cut_jobs"] == 40
    assert rows["a"]["expected_kills"] == pytest.approx(1.0) and rows["b"]["expected_kills"] == pytest.approx(4.0)
    assert rows["a"]["freed"] == pytest.approx(50.0) and rows["b"]["freed"] == pytest.approx(40.0)


def test_applied_allocation_keeps_the_request_where_the_budget_did_not_reach():
    preds, asked, strata, weight = _month()
    got = apply_allocation(allocate(preds, asked, strata, weight, LEVELS, 5.0), preds, LEVELS)
    v = got["memory"]
    assert (v[:100] == 0.5).all() and (v[100:140] == 0.0).all() and np.isnan(v[140:]).all()


def test_a_large_job_is_cut_before_a_small_one_at_the_same_risk():
    """Two jobs of one stratum with the same prediction (half their request at p90): the one that may hold it ten
    times longer frees ten times more per kill, so a budget of one increment goes to it."""
    preds = {"memory": np.tile([0.5, 1.0], (2, 1))}
    asked = {"memory": np.ones(2)}
    strata = {"memory": np.array(["s", "s"], dtype=object)}
    got = allocate(preds, asked, strata, {"memory": np.array([1.0, 10.0])}, LEVELS, 0.1)
    assert np.isnan(got.chosen["memory"][0]) and got.chosen["memory"][1] == 0.9


def test_resources_compare_through_their_scale():
    pred = np.tile([0.5, 0.5], (100, 1))
    preds = {"memory": pred, "cpus": pred}
    strata = {k: np.array(["s"] * 100, dtype=object) for k in preds}
    ones = {k: np.ones(100) for k in preds}
    # every job frees 0.5 at p99 (0.01 expected kills); memory is worth 10 times less: a budget of one kill goes
    # to the 100 jobs' cores
    got = allocate(preds, ones, strata, ones, LEVELS, 1.0, scale={"memory": 0.1, "cpus": 1.0})
    assert (got.chosen["cpus"] == 0.99).all() and np.isnan(got.chosen["memory"]).all()


def test_a_kill_is_priced_in_what_it_wastes():
    """a: 100 jobs asking 1 unit, 0.4 at p90 and 0.5 at p99, a kill wasting 1 (the whole attempt); c: 100 jobs
    asking 10, 9.5 at p90 and 9.9 at p99, a kill wasting 5.  Gross, a job of a frees 0.6 / 0.5 and one of c
    0.5 / 0.1; net of (1 − τ) × waste: a 0.6 − 0.1 = 0.5 at p90 and 0.5 − 0.01 = 0.49 at p99; c 0.5 − 0.5 = 0 at
    p90 (nothing gained: never taken) and 0.1 − 0.05 = 0.05 at p99."""
    pred = np.vstack([np.tile([0.4, 0.5], (100, 1)), np.tile([9.5, 9.9], (100, 1))])
    preds = {"memory": pred}
    asked = {"memory": np.r_[np.ones(100), np.full(100, 10.0)]}
    strata = {"memory": np.array(["a"] * 100 + ["c"] * 100, dtype=object)}
    weight = {"memory": np.ones(200)}
    waste = {"memory": np.r_[np.ones(100), np.full(100, 5.0)]}
    # gross, per job: a (0.01, 0.5), (0.1, 0.6); c (0.01, 0.1), (0.1, 0.5): steps 50, 10, 40/9, 10/9 a kill;
    # 11 kills take a's first steps (1), c's first (1) and c's second (9): c at p90, a at p99
    gross = allocate(preds, asked, strata, weight, LEVELS, 11.0)
    assert (gross.chosen["memory"][:100] == 0.99).all() and (gross.chosen["memory"][100:] == 0.9).all()
    # net: a (0.01, 0.49), (0.1, 0.5): steps 49 and 0.01 / 0.09 = 0.11 a kill; c only (0.01, 0.05): 5 a kill;
    # 11 kills take a's first (1), c's (1), then a's second steps (9)
    net = allocate(preds, asked, strata, weight, LEVELS, 11.0, waste=waste)
    assert (net.chosen["memory"][:100] == 0.9).all() and (net.chosen["memory"][100:] == 0.99).all()
    assert net.expected_kills == pytest.approx(11.0)
    row = {r["stratum"]: r for r in net.rows}
    assert row["a"]["freed"] == pytest.approx(50.0) and row["c"]["freed"] == pytest.approx(5.0)
    # 10 kills: after the first two steps 8 are left, 0.09 a job: 88 jobs of a at p90, 12 at p99
    got = allocate(preds, asked, strata, weight, LEVELS, 10.0, waste=waste).chosen["memory"]
    assert (got[:88] == 0.9).all() and (got[88:100] == 0.99).all() and (got[100:] == 0.99).all()


def test_a_job_without_a_prediction_or_stratum_keeps_its_request():
    preds = {"memory": np.array([[0.1, 0.2], [np.nan, np.nan], [0.1, 0.2]])}
    strata = {"memory": np.array(["s", "s", None], dtype=object)}
    got = allocate(preds, {"memory": np.ones(3)}, strata, {"memory": np.ones(3)}, LEVELS, 10.0)
    assert got.chosen["memory"][0] == 0.9 and np.isnan(got.chosen["memory"][1:]).all()
    assert [r["jobs"] for r in got.rows] == [1]


def test_a_job_whose_cuts_miss_more_often_is_cut_later():
    """Each job's own expected kills (``risk``) price its cut: stratum a's jobs measured to miss five times as often
    at p99 as the level says cost five times as much of the budget there, so b's are bought first."""
    preds, asked, strata, weight = _month()
    preds = {"memory": np.tile([0.4, 0.5], (200, 1))}  # every job frees 0.6 at p90 or 0.5 at p99
    risk = np.tile([0.1, 0.01], (200, 1))
    risk[:100, 1] = 0.05
    got = allocate(preds, asked, strata, weight, LEVELS, 1.0, risk={"memory": risk})
    # b's p99 steps: 50 a kill (100 of them, 1 kill in all); a's: 10 a kill; nothing else fits
    assert np.isnan(_levels(got, 0, 100)).all() and (_levels(got, 100, 200) == 0.99).all()
    assert got.expected_kills == pytest.approx(1.0)
    rows = {r["stratum"]: r for r in got.rows}
    assert rows["b"]["expected_kills"] == pytest.approx(1.0) and rows["a"]["expected_kills"] == 0.0
    # with 6 kills, a's p99 steps (5 kills) come next, before any p90 step (0.1 / 0.09 = 1.1 a kill)
    got = allocate(preds, asked, strata, weight, LEVELS, 6.0, risk={"memory": risk})
    assert (got.chosen["memory"] == 0.99).all() and got.expected_kills == pytest.approx(6.0)
