"""The compiled pool replay (simulator.pool_replay, simulator.pool_kernel) against the engine it stands in for.

A run on one pool under FIFO or EASY in which every attempt completes takes the compiled replay; with the
policy's ``compiled=False`` the same run goes through the engine's event loop and the Python passes.  Both
must give the same result array for array: starts, ends, waits, states, pass counts, wait reasons and the
attempt log in the same order.  The hand-worked case is the EASY example of ../shared/traces/PROVENANCE.md
(P=4; id submit procs run requested: 1 0 2 10 10 · 2 1 4 5 5 · 3 2 2 5 5 · 4 3 1 20 20 → starts 1@0, 3@2,
2@10, 4@15), its wait reasons worked pass by pass below.
"""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import (
    EASY,
    FIFO,
    Cluster,
    GiveUp,
    Job,
    Jobs,
    Multifactor,
    NodeGroup,
    Pool,
    Simulator,
    metrics,
)
from simulator.pool_replay import pool_plan
from tests.profiles import examples

POLICIES = {
    "fifo": lambda compiled: FIFO(compiled=compiled),
    "easy": lambda compiled: EASY(compiled=compiled),
    "easy-ties": lambda compiled: EASY(release_ties=True, compiled=compiled),
    "easy-depth": lambda compiled: EASY(depth=2, compiled=compiled),
    "easy-depth0": lambda compiled: EASY(depth=0, compiled=compiled),
}


def assert_same_result(a, b):
    """Every field of two results equal, arrays with their dtypes (the wall time aside)."""
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "wall_s":
            continue
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            if x.dtype == object:
                assert x.tolist() == y.tolist(), f.name
            else:
                assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f.name
        else:
            assert x == y, f.name


def both(cluster, policy: str, jobs, **options):
    """``(compiled, python)``: the run through the compiled replay and through the engine."""
    compiled = Simulator(cluster, POLICIES[policy](True), **options)
    assert pool_plan(compiled, jobs if isinstance(jobs, Jobs) else Jobs.from_records(jobs)) is not None
    return compiled.run(jobs), Simulator(cluster, POLICIES[policy](False), **options).run(jobs)


PROVENANCE_EASY = [
    Job(1, 0.0, 10.0, cpus=2, limit=10.0),
    Job(2, 1.0, 5.0, cpus=4, limit=5.0),
    Job(3, 2.0, 5.0, cpus=2, limit=5.0),
    Job(4, 3.0, 20.0, cpus=1, limit=20.0),
]


def test_the_hand_worked_easy_case():
    """Passes at 0, 1, 2, 3 (submissions), 7, 10, 15, 35 (ends).  At 1 job 2 (4 procs) is the head, reserved
    at 10 with no extra; at 2 job 3 (ends by 7) backfills; at 3 nothing is free, so job 4 is not examined; at 7
    job 4 fits now but would end at 27, past the shadow time, with no extra: held by the reservation; at 10 job
    2 starts and job 4 waits for resources; at 15 it starts.  Job 2 waited 4 passes (2 to 5), each for
    resources; job 4 waited 3 (4 to 6): one with no note (priority: it was never examined), one for the
    reservation, one for resources."""
    compiled, python = both(Pool(4), "easy", PROVENANCE_EASY, kill_at_limit=False)
    assert compiled.starts_by_id() == {1: 0.0, 2: 10.0, 3: 2.0, 4: 15.0}
    assert compiled.end.tolist() == [10.0, 15.0, 7.0, 35.0]
    assert compiled.passes == 8
    # resources, priority, reservation, budget
    assert compiled.reasons.tolist() == [[0, 0, 0, 0], [4, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]]
    assert compiled.a_job.tolist() == [2, 0, 1, 3]  # attempts in the order they ended
    assert_same_result(compiled, python)


def test_the_hand_worked_case_under_fifo():
    """FIFO: job 2 waits for job 1 (10), jobs 3 and 4 queue behind it: 3 and 4 start at 15."""
    compiled, python = both(Pool(4), "fifo", PROVENANCE_EASY, kill_at_limit=False)
    assert compiled.starts_by_id() == {1: 0.0, 2: 10.0, 3: 15.0, 4: 15.0}
    assert_same_result(compiled, python)


@st.composite
def pool_traces(draw):
    """Jobs for a pool of 6 processors that run to completion: limits at or above the (stretched) run, estimates
    above or below it (a job may outlive its estimate; it is not killed), some wider than the pool (rejected),
    some asking no processor, many submitted at the same instants (ties in ends and estimated ends)."""
    jobs = []
    for k in range(draw(st.integers(1, 30))):
        run = float(draw(st.integers(0, 40)))
        stretch = draw(st.sampled_from([1.0, 1.0, 1.5, 2.0]))
        limit = float(draw(st.integers(int(math.ceil(run * stretch)), 90))) or 1.0
        estimate = draw(st.sampled_from([math.nan, float(draw(st.integers(1, 60)))]))
        jobs.append(Job(
            id=k + 1, submit=float(draw(st.sampled_from([0, 0, 5, 10, draw(st.integers(0, 60))]))), run=run,
            nodes=draw(st.integers(1, 2)), cpus=draw(st.sampled_from([0, 1, 1, 2, 3, 4, 7])), limit=limit,
            estimate=estimate, stretch=stretch, user=draw(st.sampled_from(["u", "v"])),
            account=draw(st.sampled_from(["p", "q"])), cpu_util=draw(st.sampled_from([1.0, 0.5])),
        ))
    return jobs


@settings(max_examples=examples(300))
@given(jobs=pool_traces(), policy=st.sampled_from(sorted(POLICIES)), kill=st.booleans(),
       millis=st.booleans())
def test_the_compiled_replay_gives_the_engines_result(jobs, policy, kill, millis):
    table = Jobs.from_records(jobs, cpu_unit=1000 if millis else 1)
    if millis:  # the same whole requests counted in millicores
        table.columns["cpus"] = table.columns["cpus"] * 1000
    compiled, python = both(Pool(6), policy, table, kill_at_limit=kill)
    assert_same_result(compiled, python)
    assert metrics(compiled) == metrics(python)


def test_runs_that_need_the_engine_do_not_take_the_compiled_replay():
    jobs = Jobs.from_records(PROVENANCE_EASY)
    ok = Simulator(Pool(4), EASY())
    assert pool_plan(ok, jobs) is not None
    nodes = Cluster(groups=(NodeGroup("n", 2, cpus=4),))
    refused = [
        Simulator(Pool(4), EASY(compiled=False)),
        Simulator(Pool(4), FIFO(compiled=False)),
        Simulator(Pool(4), EASY(backfill_order="sjf")),
        Simulator(Pool(4), EASY(record=True)),
        Simulator(Pool(4), EASY(order=Multifactor())),
        Simulator(Pool(4), EASY(), give_up=GiveUp(wait_s=1.0, jobs=0)),
        Simulator(nodes, EASY()),
    ]
    for sim in refused:
        assert pool_plan(sim, jobs) is None
    replaced = EASY()
    replaced.schedule = replaced.schedule  # a pass set on the object itself (as tests that forget do)
    assert pool_plan(Simulator(Pool(4), replaced), jobs) is None


def test_a_run_with_kills_or_moving_estimates_takes_the_engine():
    killed = [Job(1, 0.0, 10.0, cpus=2, limit=5.0)]
    assert pool_plan(Simulator(Pool(4), EASY()), Jobs.from_records(killed)) is None
    result = Simulator(Pool(4), EASY()).run(killed)
    assert result.state.tolist() == ["TIMEOUT"]
    # not killed at the limit (the Standard Workload Format rule): it completes, compiled
    assert pool_plan(Simulator(Pool(4), EASY(), kill_at_limit=False), Jobs.from_records(killed)) is not None
    out_of_memory = [Job(1, 0.0, 10.0, cpus=2, mem=1, mem_peak=2)]
    assert pool_plan(Simulator(Pool(4), EASY()), Jobs.from_records(out_of_memory)) is None
    revised = [Job(1, 0.0, 10.0, cpus=2, estimate=5.0, estimate_after=20.0)]
    assert pool_plan(Simulator(Pool(4), EASY()), Jobs.from_records(revised)) is None
    # a job wider than the pool never starts: what it would do does not matter
    wide = [Job(1, 0.0, 10.0, cpus=8, limit=5.0), *PROVENANCE_EASY[1:]]
    assert pool_plan(Simulator(Pool(4), EASY()), Jobs.from_records(wide)) is not None
    compiled, python = both(Pool(4), "easy", wide)
    assert compiled.state.tolist()[0] == "REJECTED"
    assert_same_result(compiled, python)


def test_an_empty_run():
    compiled, python = both(Pool(4), "easy", Jobs.from_arrays(id=[], submit=[], run=[]))
    assert len(compiled) == 0 and compiled.passes == 0
    assert_same_result(compiled, python)


@pytest.mark.shared
@pytest.mark.parametrize("policy", ["easy", "fifo", "easy-ties"])
def test_kth_sp2_compiled_as_in_the_engine(policy):
    """The KTH-SP2 trace (28k jobs on 100 processors, never killed), compiled and through the engine."""
    from audit.readers.swf import read_swf
    from audit.whatif.to_simulator import to_jobs

    from ..conftest import trace

    jobs = to_jobs(read_swf(trace("swf", "KTH-SP2-1996-2.1-cln.swf.gz")).jobs, procs=100).jobs
    compiled, python = both(Pool(100), policy, jobs, kill_at_limit=False)
    assert_same_result(compiled, python)
    if policy == "easy":
        assert metrics(compiled)["mean_wait_s"] == pytest.approx(6_427.5, rel=1e-2)  # PROVENANCE.md
