"""Properties on random traces (hypothesis): no node resource is ever over-allocated; every attempt
starts once, never before its submission or re-submission, and a job's attempts never overlap;
EASY never starts the head job later than its reservation."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator import EASY, FIFO, Budget, Cluster, Conservative, Job, Multifactor, NodeGroup, Pool, Simulator
from simulator.occupancy import step

GB = 1024**3
CLUSTER = Cluster(groups=(NodeGroup("a", 2, cpus=4, mem_bytes=8 * GB, gpus=2, nodes_per_switch=1),
                          NodeGroup("b", 2, cpus=8, mem_bytes=16 * GB, switch="s")))
POOL = Pool(6)


@st.composite
def traces(draw, max_nodes=3, kills=True):
    n = draw(st.integers(1, 25))
    jobs = []
    for k in range(n):
        run = draw(st.integers(0, 40))
        limit = draw(st.integers(max(1, run if not kills else 1), 60))
        peak = draw(st.integers(0, 8)) * GB
        mem = draw(st.integers(0, 8)) * GB if kills else max(peak, GB)
        jobs.append(Job(
            id=k + 1, submit=float(draw(st.integers(0, 60))), run=float(run), nodes=draw(st.integers(1, max_nodes)),
            cpus=draw(st.integers(1, 4)), mem=mem, gpus=draw(st.integers(0, 2)), limit=float(limit),
            mem_peak=peak, orig_mem=8 * GB, orig_limit=60.0, account=draw(st.sampled_from(["p", "q", "r"])),
            user=draw(st.sampled_from(["u", "v"])), min_runtime=draw(st.sampled_from([0.0, 5.0, float("nan")])),
            resumable=draw(st.booleans()),
        ))
    return jobs


POLICIES = {
    "fifo": lambda: FIFO(),
    "easy": lambda: EASY(),
    "easy-depth": lambda: EASY(depth=2),
    "conservative": lambda: Conservative(),
    "fairshare": lambda: EASY(order=Multifactor(calc_period_s=0.0)),
    "budget": lambda: Budget({"p": 0.5, "q": 0.25}, window_s=100.0, calc_period_s=0.0),
}


def check_attempts(r):
    for pos in range(len(r.id)):
        k = np.flatnonzero(r.a_job == pos)
        assert len(k) == r.attempts[pos]
        k = k[np.argsort(r.a_start[k], kind="stable")]
        starts, ends, queued = r.a_start[k], r.a_end[k], r.a_queued[k]
        assert (queued >= r.submit[pos]).all()
        assert (starts >= queued).all()
        assert (ends >= starts).all()
        assert (starts[1:] >= ends[:-1]).all() and (queued[1:] >= ends[:-1]).all()
        if len(k):
            assert starts[0] == r.start[pos]


def check_nodes(r, model_capacity):
    per_node = {}
    for a in range(len(r.a_job)):
        nodes = r.a_nodes[a]
        width = len(nodes)
        for node in nodes:
            per_node.setdefault(node, []).append(
                (r.a_start[a], r.a_end[a], r.a_cpus[a] // width, r.a_mem[a] // width, r.a_gpus[a] // width))
    for node, rows in per_node.items():
        rows = np.array(rows, dtype=np.float64)
        for col, cap in zip((2, 3, 4), model_capacity[node], strict=True):
            _, level = step(rows[:, 0], rows[:, 1], rows[:, col])
            assert level.max() <= cap


CAPS = [(4, 8 * GB, 2)] * 2 + [(8, 16 * GB, 0)] * 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=traces(), policy=st.sampled_from(sorted(POLICIES)), fit=st.sampled_from(["first", "best"]),
       topology=st.sampled_from(["none", "prefer", "require"]))
def test_nodes_never_over_allocated(jobs, policy, fit, topology):
    r = Simulator(CLUSTER, POLICIES[policy](), fit=fit, topology=topology, restart_cost_s=2.0).run(jobs)
    check_nodes(r, CAPS)
    check_attempts(r)
    assert set(r.state.tolist()) <= {"COMPLETED", "OUT_OF_MEMORY", "TIMEOUT", "REJECTED"}


@settings(max_examples=60, deadline=None)
@given(jobs=traces(max_nodes=1), policy=st.sampled_from(sorted(POLICIES)))
def test_pool_never_over_allocated(jobs, policy):
    r = Simulator(POOL, POLICIES[policy](), kill_at_limit=policy != "budget").run(jobs)
    _, level = step(r.a_start, r.a_end, r.a_cpus)
    assert len(level) == 0 or level.max() <= POOL.procs
    check_attempts(r)


@settings(max_examples=80, deadline=None)
@given(jobs=traces(kills=False), cluster=st.sampled_from(["pool", "nodes"]))
def test_easy_head_never_later_than_reservation(jobs, cluster):
    policy = EASY(record=True)
    target = POOL if cluster == "pool" else CLUSTER
    if cluster == "pool":
        jobs = [Job(j.id, j.submit, j.run, cpus=j.cpus, limit=j.limit) for j in jobs]
    r = Simulator(target, policy).run(jobs)
    starts = r.starts_by_id()
    assert (r.attempts[r.state != "REJECTED"] == 1).all()
    for job_id, shadow in policy.reservations.items():
        assert starts[job_id] <= shadow


class _FullPasses(EASY):
    """EASY that forgets its reservation before every pass: every pass is a full textbook pass."""

    def schedule(self, ctx):
        self._cache = None
        super().schedule(ctx)


@settings(max_examples=60, deadline=None)
@given(jobs=traces(max_nodes=1, kills=False))
def test_incremental_easy_passes_equal_full_passes_on_a_pool(jobs):
    pool_jobs = [Job(j.id, j.submit, j.run, cpus=j.cpus, limit=j.limit) for j in jobs]
    fast = Simulator(POOL, EASY()).run(pool_jobs)
    full = Simulator(POOL, _FullPasses()).run(pool_jobs)
    assert fast.start.tolist() == full.start.tolist()
    assert fast.reasons.tolist() == full.reasons.tolist()


@settings(max_examples=80, deadline=None)
@given(jobs=traces(kills=False), cluster=st.sampled_from(["pool", "nodes"]))
def test_conservative_never_starts_a_job_after_its_first_reservation(jobs, cluster):
    # estimates are upper bounds (run ≤ limit, killed at the limit), and a job re-placed at a pass
    # finds its old slot free again, so reservations only move earlier
    target = POOL if cluster == "pool" else CLUSTER
    if cluster == "pool":
        jobs = [Job(j.id, j.submit, j.run, cpus=j.cpus, limit=j.limit) for j in jobs]
    policy = Conservative(record=True)
    r = Simulator(target, policy).run(jobs)
    starts = r.starts_by_id()
    for job_id, reserved in policy.reservations.items():
        assert starts[job_id] <= reserved
