"""The screen of a backfill pass (:mod:`simulator.screen`) against the placement it stands in for:
"at least ``nodes`` nodes of the partition each hold the per-node need" is exactly ``fits`` finding a
placement where the model says so, and never refuses a request ``fits`` can place otherwise; EASY
replays the same schedule with and without screening."""

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import EASY, Budget, Simulator
from simulator.nodes import node_model
from simulator.policies import easy
from simulator.screen import Screen, fit_counts
from tests.profiles import examples
from tests.simulator.test_properties import (
    CLUSTER,
    GB,
    PARTITIONED,
    PARTITIONS,
    assert_same_schedule,
    in_python,
    traces,
)


def test_a_gang_fits_where_enough_nodes_each_hold_its_share():
    model = node_model(CLUSTER)  # nodes a0 a1 (4 CPUs, 8 GiB, 2 GPUs), b0 b1 (8 CPUs, 16 GiB)
    free = model.initial()
    free[0, 2] = 3  # b0 keeps 3 CPUs
    reqs = [model.request(3, 4, GB, 0, ""), model.request(4, 4, GB, 0, ""), model.request(1, 8, GB, 0, ""),
            model.request(2, 1, 0, 2, ""), model.request(1, 1, 9 * GB, 0, "")]
    got = fit_counts(free, model.shapes()[[r.num for r in reqs]], model.part_masks).tolist()
    # three nodes hold 4 CPUs (b0 has 3 left); only b1 holds 8; a0 and a1 hold 2 GPUs; 9 GiB only on b
    assert got == [True, False, True, True, True]
    assert got == [model.fits(free, r) is not None for r in reqs]


@st.composite
def states(draw, cluster, shares=False):
    """A model of ``cluster``, a free state in it, and requests to screen."""
    gpu_unit = 1000 if shares else 1
    topology = draw(st.sampled_from(["none", "prefer", "require"]))
    model = node_model(cluster, fit=draw(st.sampled_from(["first", "best"])), topology=topology, gpu_unit=gpu_unit)
    free = model.initial()
    for _ in range(draw(st.integers(0, 8))):  # take some random fitting requests
        r = model.request(draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(0, 16)) * GB,
                          draw(st.sampled_from([0, 1, 2])) * gpu_unit if not shares else draw(st.sampled_from([0, 300, 500, 1000])),
                          draw(st.sampled_from(PARTITIONS)))
        a = model.fits(free, r)
        if a is not None:
            model.take(free, a)
    reqs = [model.request(draw(st.integers(1, 4)), draw(st.integers(1, 8)), draw(st.integers(0, 16)) * GB,
                          draw(st.sampled_from([0, 1, 2])) * gpu_unit if not shares else draw(st.sampled_from([0, 460, 1000, 2000])),
                          draw(st.sampled_from(PARTITIONS))) for _ in range(draw(st.integers(1, 12)))]
    return model, free, reqs


@settings(max_examples=examples(200))
@given(case=st.one_of(states(CLUSTER), states(PARTITIONED), states(CLUSTER, shares=True)))
def test_the_screen_answers_as_placement_does(case):
    model, free, reqs = case
    screen = Screen(model, reqs, list(range(len(reqs))), range(len(reqs)))
    for k, r in enumerate(reqs):
        placed = model.fits(free, r) is not None
        said, _ = screen.answer(k, free, free)
        if model.counts_exact:
            assert said is placed
        else:  # a refusal is sure, a pass must still be placed
            assert said in (False, None)
            assert said is None or not placed


@settings(max_examples=examples(100))
@given(jobs=traces(partitions=True), cluster=st.sampled_from(["plain", "partitioned"]),
       policy=st.sampled_from(["easy", "sjf", "budget"]), fit=st.sampled_from(["first", "best"]),
       topology=st.sampled_from(["none", "prefer", "require"]))
def test_easy_schedules_the_same_with_and_without_screening(jobs, cluster, policy, fit, topology):
    target = CLUSTER if cluster == "plain" else PARTITIONED
    build = {"easy": EASY, "sjf": lambda: EASY(backfill_order="sjf"),
             "budget": lambda: Budget({"p": 0.5, "q": 0.25}, window_s=100.0, calc_period_s=0.0)}[policy]

    def make():  # the screen is part of the Python pass
        return in_python(build())

    kw = dict(fit=fit, topology=topology)
    with mock.patch.object(easy, "SCREEN_FROM", 1), mock.patch.object(easy, "SCREEN_AFTER", 0):
        screened = Simulator(target, make(), **kw).run(jobs)
    with mock.patch.object(easy, "SCREEN_FROM", 10**9):
        plain = Simulator(target, make(), **kw).run(jobs)
    assert_same_schedule(screened, plain)
    assert np.isfinite(screened.end[screened.state == "COMPLETED"]).all()
