"""What the kill budget prices a cut at: the bound as the replay gives it, and the share of its stratum's cuts
that were outgrown before the job was submitted (audit.whatif.budget), worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from audit.whatif.budget import as_replayed, observed_risk

GIB = 2**30
LEVELS = (0.9, 0.99)


def test_bounds_are_priced_as_the_replay_gives_them():
    nodes = np.array([1, 2, 1])
    cpus = as_replayed("cpus", np.array([[1.2, 1.8], [0.4, 0.9], [7.5, 9.0]]), np.array([4, 8, 8]), nodes)
    # up to whole cores, one a node at least, never above the request
    assert cpus.tolist() == [[2, 2], [2, 2], [8, 8]]
    mem = as_replayed("memory", np.array([[2.5 * GIB, 3.0 * GIB]]), np.array([16 * GIB]), np.array([2]))
    # 1.25 GiB and 1.5 GiB a node take 2 GiB a node, on both nodes
    assert mem.tolist() == [[4 * GIB, 4 * GIB]]
    gpus = as_replayed("gpus", np.array([[0.3, 1.2], [0.0, 0.0]]), np.array([1, 4]), np.array([1, 1]))
    assert gpus.tolist() == [[1, 1], [1, 1]]  # a GPU job keeps one GPU; 1.2 GPUs do not fit in one asked
    wall = as_replayed("walltime", np.array([[61.0, np.nan]]), np.array([3600.0]), np.array([1]))
    assert wall[0, 0] == 120.0 and np.isnan(wall[0, 1])


def _stratum(n: int, every: int):
    """``n`` jobs of one stratum a minute apart, each ending 30 s after its submission, asking 10, bound 4 at p90
    and 6 at p99; every ``every``-th job needs 8 (outgrowing both), the others 3."""
    submit = np.arange(n) * 60.0
    need = np.where(np.arange(n) % every == 0, 8.0, 3.0)
    bounds = np.tile([4.0, 6.0], (n, 1))
    return bounds, need, np.full(n, 10.0), np.array(["s"] * n, dtype=object), submit, submit + 30.0


def test_the_risk_of_a_cut_is_what_its_stratum_measured_shrunk_to_the_level():
    bounds, need, asked, stratum, submit, end = _stratum(2000, 10)  # 10 % of the cuts outgrown, at either level
    r = observed_risk(bounds, need, asked, stratum, submit, end, LEVELS)
    # the first job: nothing ended before it, so the level's own 1 − τ
    assert r[0].tolist() == pytest.approx([0.1, 0.01])
    # the last: 1,999 cuts ended, 200 outgrown: (200 + 1) / (1,999 + 1 / (1 − τ))
    assert r[-1, 1] == pytest.approx(201 / (1999 + 100))
    assert r[-1, 0] == pytest.approx(201 / (1999 + 10))
    # the jobs ended before a submission only: the second job sees the first (outgrown) alone
    assert r[1, 1] == pytest.approx(2 / (1 + 100))
    assert (np.diff(r, axis=1) <= 0).all()  # never less at a lower level


def test_a_job_left_at_its_request_does_not_count_and_other_strata_do_not_mix():
    bounds, need, asked, stratum, submit, end = _stratum(400, 4)
    bounds[200:] = 10.0  # the second half left at the request: not cut, so not counted
    stratum[::2] = "t"   # another stratum, its own count
    r = observed_risk(bounds, need, asked, stratum, submit, end, LEVELS)
    # job 399 (stratum s): of s's jobs before it, those cut are the odd ones below 200: 100, of which the ones
    # needing 8 (every fourth job is even, so none of s's)
    assert r[399, 1] == pytest.approx(1 / (100 + 100))
    # job 398 (stratum t): t's cut jobs are the even ones below 200, half of them outgrown (multiples of 4)
    assert r[398, 1] == pytest.approx((50 + 1) / (100 + 100))


def test_a_short_run_outgrowing_its_cores_is_not_a_kill():
    """A job short of cores runs longer, and is killed only once that passes its own limit."""
    bounds, need, asked, stratum, submit, end = _stratum(2000, 10)
    run = np.where(np.arange(2000) % 20 == 0, 100.0, 10.0)  # half the outgrown jobs run 100 s, half 10 s
    limit = np.full(2000, 150.0)
    r = observed_risk(bounds, need, asked, stratum, submit, end, LEVELS, run_s=run, limit_s=limit)
    # stretched by 8 / 4 (p90) the 100 s runs take 200 s, past 150 s: killed; the 10 s runs take 20 s; at p99
    # (8 / 6) 133 s, within the limit: no kill
    assert r[-1, 0] == pytest.approx((100 + 1) / (1999 + 10))
    assert r[-1, 1] == pytest.approx(1 / (1999 + 100))


def test_the_budget_takes_the_most_spend_whose_counted_kills_fit():
    from audit.whatif.budget import GRID, largest_within

    seen = []

    def spend(jobs):  # a planted count: the replay kills 1.3 times what was expected
        seen.append(jobs)
        return ("alloc", int(1.3 * jobs), 0.0)

    spent, got = largest_within(spend, 400.0)
    # 400 × 1.05^-5 = 313.4 expects 407 kills, over; 400 × 1.05^-6 = 298.5 expects 388
    assert spent == pytest.approx(400.0 * GRID**-6) and got == ("alloc", 388, 0.0)
    assert len(seen) <= 8  # bisected, not walked
    # nothing fits: nothing spent
    assert largest_within(lambda jobs: ("alloc", 10**6, 0.0), 400.0) == (0.0, ("alloc", 10**6, 0.0))
    assert largest_within(lambda jobs: ("alloc", 0, 0.0), 0.0) == (0.0, ("alloc", 0, 0.0))
    # a count that runs low: more than the budget is spent in expectation
    spent, _ = largest_within(lambda jobs: ("alloc", int(0.5 * jobs), 0.0), 400.0)
    assert spent == pytest.approx(400.0 * GRID**14)  # 400 × 1.05^14 = 792, 396 kills; 1.05^15: 416
    # a budget of GPU-hours as well: each expected kill loses 2 GPU-hours, 500 allowed, so 250 expected at most
    spent, got = largest_within(lambda jobs: ("alloc", int(jobs), 2.0 * jobs), 400.0, 500.0)
    assert spent == pytest.approx(400.0 * GRID**-10) and got[-1] <= 500.0 < 2.0 * 400.0 * GRID**-9
