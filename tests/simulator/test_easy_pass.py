"""The compiled EASY pass on nodes (simulator.policies.easy_pass) against the Python pass it replaces."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import EASY, Cluster, Job, NodeGroup, Partition, Pool, Simulator
from simulator.nodes import node_model
from simulator.policies import easy
from tests.profiles import examples
from tests.simulator.test_properties import (
    CLUSTER,
    EASY_FAMILY,
    GB,
    PARTITIONED,
    assert_same_schedule,
    in_millis,
    in_python,
    inner,
    traces,
)


@settings(max_examples=examples(200))
@given(jobs=traces(partitions=True), cluster=st.sampled_from(["plain", "partitioned"]),
       policy=st.sampled_from(sorted(EASY_FAMILY)), topology=st.sampled_from(["none", "prefer"]),
       restart=st.sampled_from([0.0, 2.0]))
def test_the_compiled_pass_schedules_as_the_python_pass(jobs, cluster, policy, topology, restart):
    target = CLUSTER if cluster == "plain" else PARTITIONED
    kw = dict(topology=topology, restart_cost_s=restart)
    compiled = Simulator(target, EASY_FAMILY[policy](), **kw).run(jobs)
    python = Simulator(target, in_python(EASY_FAMILY[policy]()), **kw).run(jobs)
    assert_same_schedule(compiled, python)


# nodes whose memory runs out before their cores: a pass's fits turn on the memory asked
MEMORY_BOUND = Cluster(
    groups=(NodeGroup("a", 2, cpus=16, mem_bytes=8 * GB, gpus=2), NodeGroup("b", 2, cpus=16, mem_bytes=6 * GB)),
    partitions=(Partition("gpu", ("a",)), Partition("cpu", ("b",)), Partition("edge", ("a", "b"))),
)


@st.composite
def crowded(draw):
    """Many jobs of few shapes (CPUs, GPUs, nodes) but many memories, most submitted at once, with kills
    and re-runs at the original request: long queues in which a pass meets the same shape again and again."""
    jobs = []
    for k in range(draw(st.integers(20, 70))):
        run = draw(st.integers(1, 30))
        advised = draw(st.booleans())
        limit = draw(st.integers(1, 40))
        jobs.append(Job(
            id=k + 1, submit=float(draw(st.sampled_from([0, 0, 0, 5, 20]))), run=float(run),
            nodes=draw(st.sampled_from([1, 1, 2])), cpus=draw(st.sampled_from([1, 2])),
            mem=draw(st.integers(0, 16)) * GB // 2, gpus=draw(st.sampled_from([0, 0, 1])), limit=float(limit),
            mem_peak=draw(st.integers(0, 8)) * GB, orig_mem=8 * GB, orig_limit=60.0,
            orig_cpus=draw(st.sampled_from([-1, 2, 3])),
            estimate=float(draw(st.integers(1, limit))) if advised else float("nan"),
            estimate_after=float(limit) if advised else float("nan"),
            partition=draw(st.sampled_from(["gpu", "cpu", "edge"])),
        ))
    return jobs


@settings(max_examples=examples(100))
@given(jobs=crowded(), policy=st.sampled_from(["easy", "easy-ties", "easy-sjf", "fairshare"]))
def test_the_compiled_pass_schedules_long_queues_as_the_python_pass(jobs, policy):
    """The pass's per-shape memo (what did not fit, or did, earlier in the pass) changes nothing."""
    compiled = Simulator(MEMORY_BOUND, EASY_FAMILY[policy]()).run(jobs)
    assert_same_schedule(compiled, Simulator(MEMORY_BOUND, in_python(EASY_FAMILY[policy]())).run(jobs))


def mirrored(policy):
    """``policy`` checking, before each pass, that its running index holds what the context holds."""
    easy = inner(policy)
    schedule = policy.schedule

    def checked(ctx):
        index = easy._index
        assert index is not None
        k = index.count
        gone = set(zip(index.gone_e[: index.gone].tolist(), index.gone_s[: index.gone].tolist(), strict=True))
        entries = [(e, s, j) for e, s, j in zip(index.ends[:k].tolist(), index.seqs[:k].tolist(),
                                                index.jobs[:k].tolist(), strict=True) if (e, s) not in gone]
        assert len(entries) == k - len(gone)  # the stale entries are those of the attempts stopped since
        running = sorted(ctx.running_key[j] for j in range(ctx.n) if ctx.token[j] >= 0)
        assert entries == running
        if ctx.keep_running:
            assert running == ctx.running
        for _, _, j in running:
            alloc = ctx.alloc[j]
            off = int(index.node_off[j])
            assert index.node_pool[off : off + len(alloc[2])].tolist() == list(alloc[2])
            assert tuple(index.held[j].tolist()) == tuple(alloc[3])
        for j in ctx.queue:
            assert tuple(index.need[j].tolist()) == ctx.req[j].need_t and index.est[j] == ctx.est[j]
        schedule(ctx)

    policy.schedule = checked
    return policy


@settings(max_examples=examples(100))
@given(jobs=traces(partitions=True), policy=st.sampled_from(sorted(EASY_FAMILY)))
def test_the_running_index_follows_starts_stops_requeues_and_revisions(jobs, policy):
    r = Simulator(PARTITIONED, mirrored(EASY_FAMILY[policy]()), restart_cost_s=2.0).run(jobs)
    assert np.isfinite(r.end[r.state == "COMPLETED"]).all()


def test_the_pass_is_compiled_only_where_it_is_the_python_pass_exactly():
    cluster = Cluster(groups=(NodeGroup("a", 2, cpus=4, mem_bytes=8 * GB, gpus=2),))
    assert easy.compilable(node_model(cluster))
    assert easy.compilable(node_model(cluster, topology="prefer"))
    assert not easy.compilable(node_model(cluster, fit="best"))
    assert not easy.compilable(node_model(cluster, topology="require"))
    assert not easy.compilable(node_model(cluster, gpu_unit=1000))  # GPU devices shared
    assert not easy.compilable(Simulator(Pool(4)).model())


@settings(max_examples=examples(50))
@given(jobs=traces(partitions=True, shares=True))
def test_shared_gpus_keep_the_python_pass(jobs):
    jobs = in_millis(jobs)
    policy = EASY()
    r = Simulator(CLUSTER, policy).run(jobs)
    assert policy._index is None
    assert_same_schedule(r, Simulator(CLUSTER, in_python(EASY())).run(jobs))
