"""The kill rule for every job's first attempt at once (simulator.kills.first_kills) gives what the engine's
own rule, :func:`simulator.kills.attempt`, gives job by job, and the hand-worked cases of the module text."""

from __future__ import annotations

import itertools
import math

import numpy as np

from simulator.kills import COMPLETED, attempt, first_kills

GIB = 2**30


def test_hand_worked_kills():
    # run 100 s; peak 2 GiB under a 1 GiB limit: crossed at 100 × 1/2 = 50 s; stretched 2×, at 100 s.  Run 100 s
    # stretched 3× against a 250 s limit: stopped at 250 s.  Peak within its memory, 200 s within 3600 s: completes
    got = first_kills(np.array([100.0, 100.0, 100.0, 200.0]), np.array([1.0, 2.0, 3.0, 1.0]),
                      np.array([3600.0, 3600.0, 250.0, 3600.0]), np.array([GIB, GIB, 4 * GIB, 4 * GIB]),
                      np.array([2 * GIB, 2 * GIB, GIB, 3 * GIB]))
    assert got[:3].tolist() == [50.0, 100.0, 250.0] and math.isnan(got[3])
    # not killed at the limit (a processor pool): the stretched run completes
    assert math.isnan(first_kills(np.array([100.0]), np.array([3.0]), np.array([250.0]), np.array([0]),
                                  np.array([0]), kill_at_limit=False)[0])


def test_every_case_agrees_with_the_engines_rule():
    cases = list(itertools.product((0.0, 60.0, 100.0), (1.0, 1.5, 3.0), (50.0, 150.0, math.inf),
                                   (0, GIB, 2 * GIB), (0, GIB, 2 * GIB)))
    run, stretch, limit, mem, peak = (np.array(x, dtype=float) for x in zip(*cases, strict=True))
    got = first_kills(run, stretch, limit, mem.astype(np.int64), peak.astype(np.int64))
    for k, (r, s, lim, m, p) in enumerate(cases):
        end, outcome = attempt(r * s, 0.0, r, lim, int(m), int(p), None, s)
        if outcome == COMPLETED:
            assert math.isnan(got[k]), cases[k]
        else:
            assert got[k] == end, cases[k]
