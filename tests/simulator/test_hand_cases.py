"""Hand-checked schedules: each expected start time was worked out on paper from the policy's rules."""

import math

import pytest

from simulator import (
    EASY,
    FIFO,
    Budget,
    Cluster,
    Conservative,
    FairTree,
    Job,
    Multifactor,
    NodeGroup,
    Partition,
    Pool,
    Retry,
    Simulator,
    metrics,
    replay_as_logged,
)
from simulator.result import RESERVATION

GB = 1024**3


def starts(result):
    return result.starts_by_id()


def held_nodes(result, job_id):
    """Node tuples held by each attempt of ``job_id``, in start order."""
    pos = int(list(result.id).index(job_id))
    k = [int(x) for x in (result.a_job == pos).nonzero()[0]]
    k.sort(key=lambda x: result.a_start[x])
    return [result.a_nodes[x] for x in k]


def provenance_jobs():
    # PROVENANCE.md: (id submit procs run req) 1 0 2 10 10 · 2 1 4 5 5 · 3 2 2 5 5 · 4 3 1 20 20
    rows = [(1, 0, 2, 10, 10), (2, 1, 4, 5, 5), (3, 2, 2, 5, 5), (4, 3, 1, 20, 20)]
    return [Job(id=i, submit=s, cpus=p, run=r, limit=q) for i, s, p, r, q in rows]


def test_easy_provenance_case():
    r = Simulator(Pool(4), EASY()).run(provenance_jobs())
    assert starts(r) == {1: 0.0, 3: 2.0, 2: 10.0, 4: 15.0}


def test_fifo_provenance_case():
    # FIFO: 2 waits for 1 (10), 3 for 2 (15), 4 fits beside 3 at 15.
    r = Simulator(Pool(4), FIFO()).run(provenance_jobs())
    assert starts(r) == {1: 0.0, 2: 10.0, 3: 15.0, 4: 15.0}


def test_easy_wait_reasons():
    r = Simulator(Pool(4), EASY()).run(provenance_jobs())
    rec = {x.id: x for x in r.records()}
    # job 4 fits at t=7 (job 3 ended) but would hold a processor past job 2's reservation at 10
    assert rec[4].waits["reservation"] >= 1
    assert rec[2].waits["resources"] >= 1
    assert r.reasons[:, RESERVATION].sum() == rec[4].waits["reservation"]


def easy_vs_conservative_jobs():
    rows = [(1, 0, 3, 10), (2, 1, 2, 10), (3, 2, 4, 10), (4, 3, 1, 30), (5, 4, 1, 5)]
    return [Job(id=i, submit=s, cpus=p, run=r, limit=r) for i, s, p, r in rows]


def test_conservative_protects_every_reservation():
    # J2 reserved [10,20), J3 [20,30): J4 (1 proc, 30 s) would overlap J3, so it goes to 30;
    # J5 (1 proc, 5 s) fits in the free processor during [4,9).
    r = Simulator(Pool(4), Conservative()).run(easy_vs_conservative_jobs())
    assert starts(r) == {1: 0.0, 2: 10.0, 3: 20.0, 4: 30.0, 5: 4.0}


def test_easy_protects_only_the_head():
    # Head J2 (shadow 10, extra 2): J4 backfills at 3 in the extra and delays J3 to 33;
    # J5 fits at 10 and ends by J3's shadow (33).
    r = Simulator(Pool(4), EASY()).run(easy_vs_conservative_jobs())
    assert starts(r) == {1: 0.0, 4: 3.0, 2: 10.0, 5: 10.0, 3: 33.0}


def test_easy_depth_zero_is_fifo():
    jobs = easy_vs_conservative_jobs()
    a = Simulator(Pool(4), EASY(depth=0)).run(jobs)
    b = Simulator(Pool(4), FIFO()).run(jobs)
    assert starts(a) == starts(b)


def four_nodes(**kw):
    return Cluster(groups=(NodeGroup("n", count=4, cpus=4, mem_bytes=16 * GB, **kw),))


def test_gang_start_waits_for_every_node():
    # A fills node 0; B needs 4 nodes × 2 CPUs: 12 CPUs are free but only 3 nodes, so B waits for A;
    # C (3 CPUs) finds no node with 3 free while B holds 2 of every node's 4.
    jobs = [Job(1, 0, 10, nodes=1, cpus=4), Job(2, 1, 5, nodes=4, cpus=2), Job(3, 2, 5, nodes=1, cpus=3)]
    r = Simulator(four_nodes(), FIFO()).run(jobs)
    assert starts(r) == {1: 0.0, 2: 10.0, 3: 15.0}
    r = Simulator(Pool(16), FIFO()).run(jobs)  # the pool has no nodes: B starts at once
    assert starts(r)[2] == 1.0


def test_topology_prefer_and_require():
    cluster = four_nodes(nodes_per_switch=2)  # switches {0,1} and {2,3}
    jobs = [Job(1, 0, 100, cpus=4), Job(2, 1, 10, nodes=2, cpus=4)]
    loose = Simulator(cluster, FIFO()).run(jobs)
    assert held_nodes(loose, 2) == [(1, 2)]
    prefer = Simulator(cluster, FIFO(), topology="prefer").run(jobs)
    assert held_nodes(prefer, 2) == [(2, 3)]
    # with nodes 0 and 2 busy no switch has two free nodes: prefer spreads, require waits
    from simulator import Partition

    cluster = Cluster(groups=(NodeGroup("a", 2, cpus=4, switch="s0"), NodeGroup("b", 2, cpus=4, switch="s1")),
                      partitions=(Partition("pa", ("a",)), Partition("pb", ("b",))))
    jobs = [Job(1, 0, 100, cpus=4, partition="pa"), Job(2, 0, 50, cpus=4, partition="pb"),
            Job(3, 1, 10, nodes=2, cpus=4)]
    busy = Simulator(cluster, FIFO(), topology="prefer").run(jobs)
    assert held_nodes(busy, 1) == [(0,)] and held_nodes(busy, 2) == [(2,)]
    assert starts(busy)[3] == 1.0 and held_nodes(busy, 3) == [(1, 3)]
    strict = Simulator(cluster, FIFO(), topology="require").run(jobs)
    assert starts(strict)[3] == 50.0 and held_nodes(strict, 3) == [(2, 3)]


def test_best_fit_keeps_the_big_node_free():
    cluster = Cluster(groups=(NodeGroup("big", 1, cpus=8), NodeGroup("small", 1, cpus=2)))
    jobs = [Job(1, 0, 100, cpus=2), Job(2, 1, 10, cpus=8)]
    first = Simulator(cluster, FIFO(), fit="first").run(jobs)
    best = Simulator(cluster, FIFO(), fit="best").run(jobs)
    assert starts(first) == {1: 0.0, 2: 100.0}
    assert starts(best) == {1: 0.0, 2: 1.0}


def test_partitions_restrict_nodes():
    from simulator import Partition

    cluster = Cluster(groups=(NodeGroup("cpu", 1, cpus=4), NodeGroup("gpu", 1, cpus=4, gpus=2)),
                      partitions=(Partition("gpu", ("gpu",)),))
    jobs = [Job(1, 0, 10, cpus=1, gpus=1, partition="gpu"), Job(2, 0, 10, cpus=4, partition="gpu"),
            Job(3, 0, 10, cpus=4, gpus=3)]
    r = Simulator(cluster, FIFO()).run(jobs)
    assert held_nodes(r, 1) == [(1,)]
    assert starts(r)[2] == 10.0  # only the gpu node is in its partition
    assert r.state[2] == "REJECTED"  # 3 GPUs on one node never fit


def test_fair_tree_factors_by_hand():
    # LF_A = (1/4)/(10/20) = 0.5, LF_B = (3/4)/(10/20) = 1.5 → B first; in B, u3 (no usage) before u2.
    tree = FairTree(shares={"A": 1, "B": 3})
    tree.charge("A", "u1", 10.0)
    tree.charge("B", "u2", 10.0)
    tree.touch("B", "u3")
    f = tree.factors()
    assert f == {"B:u3": 1.0, "B:u2": pytest.approx(2 / 3), "A:u1": pytest.approx(1 / 3)}


def test_fair_tree_decay_half_life():
    tree = FairTree(half_life_s=100.0)
    tree.decay(0.0)
    tree.charge("A", "u", 8.0)
    tree.decay(200.0)
    assert tree.total_usage() == pytest.approx(2.0)


def test_fairshare_orders_the_light_user_first():
    # a1 runs 0–100 on the only processor; a2 (lower id) and b1 both wait from 50.  At 100 user a
    # has used 100 s and b nothing, so b1 goes first although a2 was submitted first.
    jobs = [Job(1, 0, 100, account="A", user="a"), Job(2, 50, 10, account="A", user="a"),
            Job(3, 50, 10, account="B", user="b")]
    order = Multifactor(FairTree(), age_weight=0.0, calc_period_s=0.0)
    r = Simulator(Pool(1), EASY(order=order)).run(jobs)
    assert starts(r) == {1: 0.0, 3: 100.0, 2: 110.0}
    plain = Simulator(Pool(1), EASY()).run(jobs)
    assert starts(plain) == {1: 0.0, 2: 100.0, 3: 110.0}


def gpu_node():
    return Cluster(groups=(NodeGroup("g", 1, cpus=4, mem_bytes=64 * GB, gpus=4),))


def test_budget_preempts_spare_capacity_job():
    # S (min runtime 0) runs 0–…; budgeted B arrives at 10 and preempts it.  Resumable S resumes at
    # 30 with 90 s left plus a 5 s restart: ends 125.
    jobs = [Job(1, 0, 100, cpus=4, gpus=4, account="Q", min_runtime=0.0, resumable=True),
            Job(2, 10, 20, cpus=4, gpus=4, account="P", min_runtime=50.0)]
    r = Simulator(gpu_node(), Budget({"P": 1.0}), restart_cost_s=5.0).run(jobs)
    assert starts(r) == {1: 0.0, 2: 10.0}
    assert r.end.tolist() == [125.0, 30.0]
    assert r.preemptions.tolist() == [1, 0]
    m = metrics(r)
    assert m["preemptions"] == 1
    assert m["lost_gpu_hours"] == pytest.approx(4 * 5 / 3600)  # only the restart overhead


def test_budget_preemption_not_resumable_loses_the_run():
    jobs = [Job(1, 0, 100, cpus=4, gpus=4, account="Q", min_runtime=0.0),
            Job(2, 10, 20, cpus=4, gpus=4, account="P", min_runtime=50.0)]
    r = Simulator(gpu_node(), Budget({"P": 1.0})).run(jobs)
    assert r.end.tolist() == [130.0, 30.0]
    assert metrics(r)["lost_gpu_hours"] == pytest.approx(4 * 10 / 3600)


def test_budget_protects_minimum_runtime():
    # X (project Q, no share → over budget) declares 30 s protected; P's job arriving at 10 must wait
    # until X has run 30 s, then preempts it.
    jobs = [Job(1, 0, 100, cpus=4, gpus=4, account="Q", min_runtime=30.0),
            Job(2, 10, 20, cpus=4, gpus=4, account="P", min_runtime=50.0)]
    r = Simulator(gpu_node(), Budget({"P": 1.0})).run(jobs)
    assert starts(r) == {1: 0.0, 2: 30.0}
    assert r.end.tolist() == [150.0, 50.0]
    # a job that declares no minimum runtime is never preempted
    jobs[0] = Job(1, 0, 100, cpus=4, gpus=4, account="Q")
    r = Simulator(gpu_node(), Budget({"P": 1.0})).run(jobs)
    assert starts(r) == {1: 0.0, 2: 100.0}


def test_budget_favours_projects_under_share():
    # P has used its whole share by 100 (4 GPUs × 100 s of a 400 GPU-s window entitlement): R's job
    # goes before P's second job although it was submitted later; P's job waits with reason budget.
    cluster = gpu_node()
    jobs = [Job(1, 0, 100, cpus=4, gpus=4, account="P", min_runtime=10.0),
            Job(2, 50, 10, cpus=4, gpus=4, account="P", min_runtime=10.0),
            Job(3, 60, 10, cpus=4, gpus=4, account="R", min_runtime=10.0)]
    policy = Budget({"P": 0.5, "R": 0.5}, window_s=200.0, calc_period_s=0.0, preempt=False)
    r = Simulator(cluster, policy).run(jobs)
    assert starts(r) == {1: 0.0, 3: 100.0, 2: 110.0}
    assert r.records()[1].waits["budget"] >= 1


def test_oom_kill_and_rerun_with_original_request():
    # Peak 4 GB, given 2 GB: linear ramp crosses 2 GB at 100 × 2/4 = 50 s; re-run with 8 GB.
    cluster = Cluster(groups=(NodeGroup("n", 1, cpus=4, mem_bytes=16 * GB),))
    jobs = [Job(1, 0, 100, cpus=2, mem=2 * GB, orig_mem=8 * GB, mem_peak=4 * GB)]
    r = Simulator(cluster).run(jobs)
    rec = r.records()[0]
    assert rec.kills == ((50.0, "OUT_OF_MEMORY"),)
    assert (rec.start, rec.end, rec.attempts, rec.state) == (0.0, 150.0, 2, "COMPLETED")
    assert r.a_mem.tolist() == [2 * GB, 8 * GB]
    assert metrics(r)["lost_cpu_hours"] == pytest.approx(2 * 50 / 3600)


def test_oom_crossing_from_telemetry():
    cluster = Cluster(groups=(NodeGroup("n", 1, cpus=4, mem_bytes=16 * GB),))
    trace = ((0.0, 10.0, 30.0, 90.0), (GB, GB, 3 * GB, 4 * GB))
    jobs = [Job(1, 0, 100, mem=2 * GB, orig_mem=8 * GB, mem_peak=4 * GB, mem_trace=trace)]
    r = Simulator(cluster).run(jobs)
    assert r.records()[0].kills == ((30.0, "OUT_OF_MEMORY"),)


def test_timeout_kill_and_rerun():
    jobs = [Job(1, 0, 100, limit=60, orig_limit=200), Job(2, 1, 10, limit=10)]
    r = Simulator(Pool(1)).run(jobs)
    rec = {x.id: x for x in r.records()}
    assert rec[1].kills == ((60.0, "TIMEOUT"),)
    # FIFO: job 2 (queued at 1) goes before the re-submission of job 1 (queued at 60)
    assert rec[2].start == 60.0
    assert (rec[1].end, rec[1].attempts) == (170.0, 2)


def test_escalation_rule_and_attempt_cap():
    cluster = Cluster(groups=(NodeGroup("n", 1, cpus=4, mem_bytes=16 * GB),))
    jobs = [Job(1, 0, 100, mem=1 * GB, mem_peak=3 * GB)]
    r = Simulator(cluster, retry=Retry(rule="escalate", factor=2.0)).run(jobs)
    # 1 GB: OOM at 33.3 s; 2 GB: OOM at 66.7 s into the second run; 4 GB completes
    assert r.a_mem.tolist() == [GB, 2 * GB, 4 * GB]
    assert r.a_end.tolist() == pytest.approx([100 / 3, 100 / 3 + 200 / 3, 100 / 3 + 200 / 3 + 100])
    capped = Simulator(cluster, retry=Retry(rule="escalate", max_attempts=2)).run(jobs)
    assert capped.state.tolist() == ["OUT_OF_MEMORY"] and capped.a_mem.tolist() == [GB, 2 * GB]
    same = Simulator(cluster).run(jobs)  # the original request is the one that failed: no re-run
    assert same.state.tolist() == ["OUT_OF_MEMORY"] and same.attempts.tolist() == [1]
    assert metrics(same)["jobs_failed"] == 1


def test_no_kill_at_limit_runs_past_the_estimate():
    jobs = [Job(1, 0, 100, limit=60)]
    r = Simulator(Pool(1), kill_at_limit=False).run(jobs)
    assert r.end.tolist() == [100.0] and r.attempts.tolist() == [1]


def test_equal_time_events_are_applied_before_one_pass():
    # At t=10 job 1 ends and jobs 3 (id 3) and 2 (id 2) arrive: one pass sees all; FIFO by id.
    jobs = [Job(1, 0, 10, cpus=4), Job(3, 10, 5, cpus=2), Job(2, 10, 5, cpus=4)]
    r = Simulator(Pool(4), FIFO()).run(jobs)
    assert starts(r) == {1: 0.0, 2: 10.0, 3: 15.0}
    assert r.passes == 4  # one per distinct time: 0, 10, 15, 20 (t=10 holds three events)


def test_replay_as_logged():
    jobs = [Job(1, 0, 10, cpus=4, logged_start=5.0), Job(2, 1, 10, cpus=4, logged_start=7.0)]
    r = replay_as_logged(jobs, Pool(4))
    assert r.start.tolist() == [5.0, 7.0] and r.wait.tolist() == [5.0, 6.0]
    assert metrics(r)["peak_occupancy_cpus"] == 2.0  # the log overlaps them: flagged, not hidden


def test_same_inputs_same_result():
    import numpy as np

    rng = np.random.default_rng(3)
    jobs = [Job(int(k), float(t), float(r), cpus=int(c), limit=float(r) * 2, account=f"a{k % 3}", user=f"u{k % 5}")
            for k, (t, r, c) in enumerate(zip(np.cumsum(rng.exponential(5, 300)), rng.exponential(40, 300),
                                              rng.integers(1, 9, 300), strict=True))]
    for policy in (lambda: EASY(order=Multifactor()), lambda: Conservative()):
        a = Simulator(Pool(8), policy()).run(jobs)
        b = Simulator(Pool(8), policy()).run(list(reversed(jobs)))
        assert a.start.tolist() == b.start.tolist()
        assert a.id.tolist() == b.id.tolist()


def test_bad_job_is_named():
    with pytest.raises(ValueError, match="job 7.*'run'"):
        Simulator(Pool(4)).run([Job(7, 0, -1)])
    assert math.isinf(Job(1, 0, 1).limit)


def test_simulate_by_policy_name():
    from simulator import POLICY_NAMES, simulate

    for name in POLICY_NAMES:
        result, m = simulate(provenance_jobs(), Pool(4), name)
        assert m["policy"] == name and m["jobs_completed"] == 4 and m["wall_s"] >= 0
    _, m = simulate(provenance_jobs(), Pool(4), "easy")
    assert m["mean_wait_s"] == (0 + 9 + 0 + 12) / 4
    with pytest.raises(ValueError, match="unknown policy 'sjf'"):
        simulate(provenance_jobs(), Pool(4), "sjf")


ISSUE_TRACE = ("(1,35,0,1,15) (2,0,0,1,1) (3,12,2,1,15) (4,0,0,1,1) (5,0,0,1,1) (6,2,2,1,9) (7,0,0,1,1) (8,0,0,1,1) "
               "(9,11,0,3,1) (10,0,0,2,1) (11,0,0,1,1) (12,0,0,1,1) (13,10,24,4,31) (14,0,0,1,1) (15,0,0,1,1) "
               "(16,10,16,1,16) (17,0,0,1,1) (18,10,10,2,23) (19,0,0,1,1) (20,0,0,1,1) (21,0,0,1,1) (22,10,2,2,15)")


def tie_trace():
    """(id, submit, run, cpus, limit) on a pool of 6; the scheduler's estimate is the limit."""
    rows = [tuple(int(x) for x in t.strip("()").split(",")) for t in ISSUE_TRACE.split()]
    return [Job(id=i, submit=float(s), run=float(r), cpus=c, limit=float(q)) for i, s, r, c, q in rows]


def test_easy_tie_at_the_shadow_time_by_hand():
    """Worked on paper (pool of 6; E = estimated end = start + limit).

    t=0: the 14 zero-length jobs run and end at 0 (several passes at t=0).  t=2: job 6 runs 2-4.
    t=10: 13 (4 CPUs, E=41) and 16 (1, E=26) start; 18 (2 CPUs) is the head: releasing 16 at 26
    gives 2 free, so shadow 26, extra 0; 22 (2 CPUs) does not fit (1 free).  t=11: 9 (3 CPUs) does
    not fit.  t=12: 3 (1 CPU, E=27 > 26) fits but not in the extra (0): held by the reservation.
    t=26: 16 ends; 18 starts (E=49); the head is 22: releasing 13 at 41 gives 4, shadow 41, extra 2;
    nothing else fits (0 free).  t=34: 13 ends (4 free); 22 starts (E=49); the head is 9 (3 CPUs):
    running by (E, start order) are 18 (49), 22 (49); releasing 18 gives 2 + 2 = 4: shadow 49,
    extra 1; 3 (1 CPU, E=34+15=49 ≤ 49) ends by the shadow time and starts, 1 free.
    t=35: 1 arrives (1 CPU, E=50 > 49).  Running: 18, 22, 3, all E=49, in that start order.
    Releasing 18 gives 1 + 2 = 3 = the head's need: shadow 49, extra 0, so job 1 (late) may not
    start; it starts at 36 when 18, 22 and 3 end and the head 9 starts too (6 free: 3 + 1).
    The pass kept from t=34 still held extra 1: it had taken job 3 (estimated to end exactly at the
    shadow time) as released before the head fits, which the rule only does for the jobs up to 18.
    Releasing every job estimated to end at the shadow time (``release_ties=True``): extra at t=35 is
    1 + 2 + 2 + 1 − 3 = 3, and job 1 starts at 35.
    """
    expected = {1: 36.0, 3: 34.0, 6: 2.0, 9: 36.0, 13: 10.0, 16: 10.0, 18: 26.0, 22: 34.0}
    got = starts(Simulator(Pool(6), EASY()).run(tie_trace()))
    assert {k: got[k] for k in expected} == expected
    assert all(got[k] == 0.0 for k in got if k not in expected)
    ties = starts(Simulator(Pool(6), EASY(release_ties=True)).run(tie_trace()))
    assert ties == {**got, 1: 35.0}


def test_fewer_cores_than_used_stretch_the_run_and_the_rerun_gets_the_request_back():
    # 4 cores asked, 2 given (stretch 2): 100 s of work takes 200 s > the 150 s limit, TIMEOUT at 150;
    # re-run with the request its user made (4 cores, limit 300, 8 GiB) at its own pace: 100 s.
    cluster = Cluster(groups=(NodeGroup("n", 1, cpus=4, mem_bytes=16 * GB),))
    jobs = [Job(1, 0, 100, cpus=2, orig_cpus=4, stretch=2.0, limit=150, orig_limit=300, mem=GB,
                orig_mem=8 * GB, mem_peak=GB)]
    r = Simulator(cluster).run(jobs)
    assert r.records()[0].kills == ((150.0, "TIMEOUT"),)
    assert r.a_cpus.tolist() == [2, 4] and r.a_mem.tolist() == [GB, 8 * GB]
    assert (r.end[0], r.attempts[0], r.state[0]) == (250.0, 2, "COMPLETED")
    # memory follows the work: a 4 GiB peak under a 2 GiB limit is crossed halfway through the work,
    # which at stretch 2 is 100 s into the attempt
    oom = [Job(1, 0, 100, cpus=2, orig_cpus=4, stretch=2.0, mem=2 * GB, orig_mem=8 * GB, mem_peak=4 * GB)]
    assert Simulator(cluster).run(oom).records()[0].kills == ((100.0, "OUT_OF_MEMORY"),)


def test_a_job_outliving_its_predicted_estimate_gets_its_limit_as_estimate():
    # Pool of 4.  A (2 CPUs, run 10) is planned at 5 s, its limit 20 s.  B (4 CPUs) arrives at 1 and is
    # the head: shadow 5 (A's estimate), extra 2 + 2 − 4 = 0.  C (2 CPUs, estimate 4) arrives at 2:
    # 2 + 4 = 6 > 5 and no extra, so it waits.  At 5 A outlives its estimate: the estimate becomes 20,
    # the shadow 20, and C (5 + 4 = 9 ≤ 20) backfills at 5.  A ends at 10, B runs 10-15.
    jobs = [Job(1, 0, 10, cpus=2, limit=20, estimate=5, estimate_after=20), Job(2, 1, 5, cpus=4, limit=5),
            Job(3, 2, 4, cpus=2, limit=4)]
    assert starts(Simulator(Pool(4), EASY()).run(jobs)) == {1: 0.0, 2: 10.0, 3: 5.0}
    # without the revision the plan stays at 5 (in the past after 5): C waits for B and runs at 15
    plain = [Job(1, 0, 10, cpus=2, limit=20, estimate=5), *jobs[1:]]
    assert starts(Simulator(Pool(4), EASY()).run(plain)) == {1: 0.0, 2: 10.0, 3: 15.0}


def test_cluster_counts_and_pools():
    c = Cluster(groups=(NodeGroup("g1", 4, cpus=8, gpus=4), NodeGroup("g2", 2, cpus=8, gpus=8),
                        NodeGroup("c", 10, cpus=64), NodeGroup("x", 1, cpus=2)),
                partitions=(Partition("gpu", ("g1", "g2")), Partition("cpu", ("c",))))
    assert c.pools() == (("g1", "g2"), ("c",), ("x",))
    small = c.with_counts({"g1": 2, "c": 5})
    assert [g.count for g in small.groups] == [2, 2, 5, 1] and small.partitions == c.partitions
    with pytest.raises(ValueError, match="g2"):
        c.with_counts({"g2": 0})


def test_give_up_once_the_wait_target_is_missed():
    # Pool of 1, five 10 s jobs submitted at 0: waits 0, 10, 20, 30, 40.  With a 15 s target and at
    # most one late job allowed, the run stops at t=20, when jobs 3, 4 and 5 are still queued > 15 s.
    from simulator import GiveUp

    jobs = [Job(i, 0, 10) for i in range(1, 6)]
    full = Simulator(Pool(1)).run(jobs)
    assert full.wait.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0] and not full.gave_up
    cut = Simulator(Pool(1), give_up=GiveUp(wait_s=15.0, jobs=1)).run(jobs)
    assert cut.gave_up and cut.start[:2].tolist() == [0.0, 10.0] and (cut.state[2:] == "PENDING").all()
    assert not Simulator(Pool(1), give_up=GiveUp(wait_s=15.0, jobs=3)).run(jobs).gave_up


def test_give_up_once_the_mean_bounded_slowdown_is_out_of_reach():
    # The same five jobs end at 10, 20, 30, 40, 50: bounded slowdowns 1, 2, 3, 4, 5, mean 3.  Against a
    # target of 2 the five may exceed 1 by 5 in all: the excess is 0, 1, 3, 6 as jobs 1-4 end, so the run
    # stops at 40 with job 5 never started.  Against a target of 3 the excess ends at 10 = (3 - 1) * 5:
    # the mean is exactly on target and the run goes to its end.
    from simulator import GiveUp

    jobs = [Job(i, 0, 10) for i in range(1, 6)]
    cut = Simulator(Pool(1), give_up=GiveUp(wait_s=1e9, jobs=5, slowdown=2.0)).run(jobs)
    assert cut.gave_up and cut.end[:4].tolist() == [10.0, 20.0, 30.0, 40.0] and cut.state[4] == "PENDING"
    whole = Simulator(Pool(1), give_up=GiveUp(wait_s=1e9, jobs=5, slowdown=3.0)).run(jobs)
    assert not whole.gave_up and (whole.state == "COMPLETED").all()


def test_metrics_of_a_run_given_up_before_any_job_ended():
    # Pool of 1: job 1 runs 0-100; jobs 2-4 queue from 0, job 5 comes at 50.  With a 15 s wait target and
    # one late job allowed the run stops at 50, job 1 still running: no job has ended, so the run spans its
    # one start (makespan 0), without a warning.
    import warnings

    from simulator import GiveUp
    from simulator.metrics import metrics

    jobs = [Job(1, 0, 100), *[Job(i, 0, 10) for i in range(2, 5)], Job(5, 50, 10)]
    cut = Simulator(Pool(1), give_up=GiveUp(wait_s=15.0, jobs=1)).run(jobs)
    assert cut.gave_up and cut.state.tolist() == ["RUNNING"] + ["PENDING"] * 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = metrics(cut)
    assert m["makespan_s"] == 0.0 and m["jobs_started"] == 1 and m["jobs_completed"] == 0


def test_easy_backfills_shortest_first_under_sjf():
    # Pool of 4.  A (2 CPUs, 10 s) runs; B (4 CPUs) is the head at 1: shadow 10, extra 0, 2 free.
    # At 2, C (2 CPUs, 8 s: ends by 10) and D (1 CPU, 3 s) arrive.  In queue order C takes both free
    # CPUs and D waits for B (10-15); shortest first D starts, C no longer fits, and once D ends at 5
    # C would end after the shadow time: it waits for B.
    jobs = [Job(1, 0, 10, cpus=2, limit=10), Job(2, 1, 5, cpus=4, limit=5), Job(3, 2, 8, cpus=2, limit=8),
            Job(4, 2, 3, cpus=1, limit=3)]
    assert starts(Simulator(Pool(4), EASY()).run(jobs)) == {1: 0.0, 2: 10.0, 3: 2.0, 4: 15.0}
    assert starts(Simulator(Pool(4), EASY(backfill_order="sjf")).run(jobs)) == {1: 0.0, 2: 10.0, 3: 15.0, 4: 2.0}
    cluster = Cluster(groups=(NodeGroup("n", 1, cpus=4),))
    assert starts(Simulator(cluster, EASY(backfill_order="sjf")).run(jobs)) == {1: 0.0, 2: 10.0, 3: 15.0, 4: 2.0}
