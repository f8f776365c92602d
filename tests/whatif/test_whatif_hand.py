"""Recoverable capacity on hand-built months, every figure worked by hand."""

import numpy as np
import pandas as pd
import pytest

from audit.job_table import conform
from audit.whatif.month import build_month
from audit.whatif.replays import Replay, Setting, run
from audit.whatif.runner import Runner
from audit.whatif.scenarios import Scenario, requests_for
from audit.whatif.search import Bisection
from audit.whatif.sweep import Options, sweep
from simulator import Cluster, NodeGroup, Partition

GB = 1024**3
T0 = pd.Timestamp("2026-10-05", tz="UTC")
S = pd.Timedelta(seconds=1)


def table(rows):
    """rows: (job, submit s, run s, cpus, mem GiB asked, peak GiB, cpu s used)."""
    return conform(pd.DataFrame({
        "job_id": [str(r[0]) for r in rows], "job_id_raw": [str(r[0]) for r in rows],
        "user": "u", "account": "a", "partition": "cpu", "state": "COMPLETED",
        "submit_time": [T0 + r[1] * S for r in rows], "start_time": [T0 + r[1] * S for r in rows],
        "end_time": [T0 + (r[1] + r[2]) * S for r in rows], "elapsed_s": [r[2] for r in rows],
        "time_limit_s": 3600, "req_nodes": 1, "alloc_nodes": 1, "req_cpus": [r[3] for r in rows],
        "alloc_cpus": [r[3] for r in rows], "req_mem_bytes": [r[4] * GB for r in rows],
        "alloc_mem_bytes": [r[4] * GB for r in rows], "req_gpus": 0, "alloc_gpus": 0,
        "mem_peak_bytes": [r[5] * GB for r in rows], "cpu_used_s": [float(r[6]) for r in rows],
    }))


CLUSTER = Cluster(groups=(NodeGroup("n", 2, cpus=4, mem_bytes=8 * GB),), partitions=(Partition("cpu", ("n",)),))
# USD per node-hour: 4 cores at 0.05 and 8 GiB at 0.005
PRICES = {"book": {"n": 4 * 0.05 + 8 * 0.005}}


def sharing_month():
    # A and B ask 1 core and 6 GiB each and peak at 2 GiB, both submitted at 0 for 100 s: as asked,
    # two 8 GiB nodes hold them at once and one node cannot (6 + 6 > 8), so B would wait 100 s.
    t = table([(1, 0, 100, 1, 6, 2, 100), (2, 0, 100, 1, 6, 2, 100)])
    preds = {0.9: {"memory": np.array([3 * GB, 3 * GB], dtype=float)}}  # 3 + 3 ≤ 8: they share a node
    month, _ = build_month(t, CLUSTER, preds)
    return Setting(month=month, cluster=CLUSTER)


def test_right_sized_memory_lets_two_jobs_share_a_node_and_frees_one():
    setting = sharing_month()
    opts = Options(risk=(0.9,), modes=("enforce",), replicates=0, headroom=False, policies=("easy",))
    with Runner(serial=True) as runner:
        sw = sweep(setting, runner, opts, PRICES)
    # actual on one node: B waits 100 s > today's p95 of 0 s, so actual keeps both nodes
    assert sw.capacity["actual"]["nodes_kept"] == 2 and sw.capacity["actual"]["nodes_recovered"] == 0
    for name in ("oracle", "rightsized@0.9/enforce"):
        cap = sw.capacity[name]
        assert (cap["nodes_kept"], cap["nodes_recovered"], cap["share_recovered"]) == (1, 1, 0.5)
        assert cap["dollars"]["book"]["usd_per_month"] == pytest.approx(0.24 * 8766 / 12)
        assert cap["dollars"]["book"]["usd_per_year"] == pytest.approx(0.24 * 8766)
    assert sw.full["rightsized@0.9/enforce"]["kills_oom"] == 0
    assert sw.recommended == "rightsized@0.9/enforce"


def test_a_job_under_sized_at_the_median_is_killed_rerun_and_its_lost_hours_counted():
    # One job: 1 core, asks 6 GiB, peaks at 2 GiB, runs 100 s.  At q = 0.5 it is given 1 GiB: use grows
    # linearly to 2 GiB, so it crosses 1 GiB at 100 × 1/2 = 50 s and is killed OUT_OF_MEMORY; re-run with
    # its 6 GiB it completes at 50 + 100 = 150 s.  Lost: 50 s of 1 core and of 1 GiB.
    t = table([(1, 0, 100, 1, 6, 2, 100)])
    month, _ = build_month(t, CLUSTER, {0.5: {"memory": np.array([GB], dtype=float)}})
    setting = Setting(month=month, cluster=CLUSTER)
    res = run(Replay(Scenario("rightsized", level=0.5), keep_jobs=True), setting)
    jobs = res["jobs"]
    assert jobs["kills_oom"].tolist() == [1] and jobs["attempts"].tolist() == [2]
    assert jobs["end_s"].tolist() == [150.0] and jobs["req_mem_bytes"].tolist() == [GB]
    m = run(Replay(Scenario("rightsized", level=0.5)), setting)
    assert m["kills_oom"] == 1 and m["reruns"] == 1
    assert m["lost_cpu_hours"] == pytest.approx(50 / 3600)
    assert m["lost_mem_gib_hours"] == pytest.approx(50 / 3600)
    assert m["core_hours_held"] == pytest.approx(150 / 3600)


def test_requests_never_exceed_what_was_asked_and_round_up():
    t = table([(1, 0, 100, 4, 6, 2, 150), (2, 0, 100, 4, 6, 2, 150)])
    preds = {0.9: {"memory": np.array([2.5 * GB, 9 * GB]), "cpus": np.array([1.2, 7.0]),
                   "walltime": np.array([61.0, 1e9])}}
    month, _ = build_month(t, CLUSTER, preds)
    for mode in ("enforce", "advise"):
        r = requests_for(month, Scenario("rightsized", level=0.9, mode=mode))
        assert r.mem.tolist() == [3 * GB, 6 * GB]             # whole GiB; never above the 6 GiB asked
        assert r.cpus.tolist() == [2, 4]                       # whole cores, up; never above the 4 asked
        assert r.stretch.tolist() == [1.0, 1.0]                # 1.5 cores busy: 2 cores keep the pace
    enforce = requests_for(month, Scenario("rightsized", level=0.9))
    assert enforce.limit.tolist() == [120.0, 3600.0]           # whole minutes; never above the hour asked
    advise = requests_for(month, Scenario("rightsized", level=0.9, mode="advise"))
    assert advise.limit.tolist() == [3600.0, 3600.0] and advise.estimate.tolist() == [120.0, 3600.0]
    assert advise.estimate_after.tolist() == [3600.0, 3600.0]


def test_bisection_finds_the_smallest_passing_value():
    b = Bisection(1, 100)
    while (n := b.probe()) is not None:
        b.tell(n, n >= 37)
    assert b.answer == 37 and len(b.tried) <= 7
    checked = Bisection(1, 10, check_hi=True)
    checked.tell(checked.probe(), False)
    assert checked.answer is None and checked.done


def test_gallop_finds_the_smallest_passing_value_near_its_guess():
    from audit.whatif.search import Gallop

    for answer in (1, 36, 37, 38, 41, 60, 100):
        g = Gallop(1, 100, 37)
        while (n := g.probe()) is not None:
            g.tell(n, n >= answer)
        assert g.answer == answer, answer
    g = Gallop(1, 100, 37)
    while (n := g.probe()) is not None:
        g.tell(n, n >= 38)
    assert len(g.tried) == 2  # 37 fails, 38 passes
    never = Gallop(1, 10, 5)
    while (n := never.probe()) is not None:
        never.tell(n, False)
    assert never.answer is None


def pods_table(cpus, gpus, run=100):
    """Pods asking fractional CPUs and shares of a GPU, all submitted at T0 for ``run`` s."""
    n = len(cpus)
    return conform(pd.DataFrame({
        "job_id": [str(k + 1) for k in range(n)], "job_id_raw": [str(k + 1) for k in range(n)], "user": "u",
        "account": "a", "state": "COMPLETED", "gpu_type": "a100", "submit_time": [T0] * n, "start_time": [T0] * n, "elapsed_s": [run] * n,
        "time_limit_s": 3600, "req_nodes": 1, "alloc_nodes": 1, "req_cpus": cpus, "alloc_cpus": cpus,
        "req_gpus": gpus, "alloc_gpus": gpus, "req_mem_bytes": [GB] * n, "alloc_mem_bytes": [GB] * n,
    }))


GPU_NODE = Cluster(groups=(NodeGroup("g", 1, cpus=8, mem_bytes=32 * GB, gpus=1, gpu_type="a100"),))


def test_a_month_of_gpu_shares_replays_and_reports_in_gpus():
    # 0.46 and 0.46 share the one GPU on [0, 100); 0.5 runs on [100, 200): 1.42 GPU × 100 s held over a
    # 200 s makespan on 1 GPU, occupancy 142 / 200; each pod holds 0.75 CPU
    month, _ = build_month(pods_table([0.75] * 3, [0.46, 0.46, 0.5]), GPU_NODE)
    assert (month.cpu_unit, month.gpu_unit) == (1000, 1000)
    m = run(Replay(Scenario("actual")), Setting(month=month, cluster=GPU_NODE))
    assert m["mean_wait_s"] == pytest.approx(100 / 3)
    assert m["gpu_hours_held"] == pytest.approx(142 / 3600) and m["core_hours_held"] == pytest.approx(225 / 3600)
    a100 = m["gpu_types"]["a100"]
    assert a100["gpus"] == 1 and a100["gpu_hours_held"] == pytest.approx(142 / 3600)
    assert a100["occupancy"] == pytest.approx(142 / 200) and m["occupancy_gpus"] == pytest.approx(142 / 200)
    assert m["gpu_hours_by_account"] == {"a": pytest.approx(142 / 3600)}
    jobs = run(Replay(Scenario("actual"), keep_jobs=True), Setting(month=month, cluster=GPU_NODE))["jobs"]
    assert jobs["req_gpus"].tolist() == [0.46, 0.46, 0.5] and jobs["req_cpus"].tolist() == [0.75] * 3


def test_right_sizing_a_month_in_millis_rounds_to_whole_cores_and_gpus_never_above_the_ask():
    # job 1 asks 3.152 CPUs and 2 GPUs, predicted 1.2 cores and 0.3 GPU: 2 cores (2000 m) and 1 GPU (1000 m);
    # job 2 asks 0.75 CPU and 0.46 GPU, predicted 0.3 and 0.2: whole ones are more than it asked, so it
    # keeps 750 m and 460 m
    t = pods_table([3.152, 0.75], [2.0, 0.46])
    preds = {0.9: {"cpus": np.array([1.2, 0.3]), "gpus": np.array([0.3, 0.2])}}
    month, _ = build_month(t, GPU_NODE, preds)
    r = requests_for(month, Scenario("rightsized", 0.9))
    assert r.cpus.tolist() == [2000, 750] and r.gpus.tolist() == [1000, 460]


def test_a_search_told_the_full_pool_passes_never_replays_it():
    # 96 nodes, started one below the top.  The answer is 96: 95 fails and, the full pool being known to
    # pass, the search ends after one replay.  The answer 90: 95, 94, 92 pass, 88 fails, then 90 passes
    # and 89 fails: six replays, none of them at 96.
    from audit.whatif.capacity import PoolSearch, Target

    for answer, replays in ((96, [95]), (90, [95, 94, 92, 88, 90, 89])):
        s = PoolSearch(("x", 0), None, Target(1.0, 1.0, 0), 96, 50, near=95, full_passes=True)
        tried = []
        while (n := s.probe()) is not None:
            tried.append(n)
            s.bisection.tell(n, n >= answer)
        assert (s.answer, tried) == (answer, replays)


def test_right_sized_search_starts_between_actual_and_oracle():
    # actual keeps 96 nodes at a busiest occupancy of 0.80, oracle 64 at 0.60; a scenario at 0.70 lies
    # half way: it starts at 96 - 32 * 0.5 = 80; one busier than actual starts at actual's 96, one idler
    # than oracle at oracle's 64; no oracle answer (or no spread), no start.
    from audit.whatif.capacity import between_guess

    per = {"actual": {0: {"occupancy_cpus": 0.8}}, "oracle": {0: {"occupancy_mem": 0.6}},
           "half": {0: {"occupancy_gpus": 0.7}}, "busy": {0: {"occupancy_cpus": 0.9}},
           "idle": {0: {"occupancy_cpus": 0.5}}}
    answers = {"actual": {0: 96}, "oracle": {0: 64}}
    assert [between_guess(0, k, answers, per, 96) for k in ("half", "busy", "idle")] == [80, 96, 64]
    assert between_guess(0, "half", {"actual": {0: 96}, "oracle": {0: None}}, per, 96) is None
    flat = {**per, "oracle": {0: {"occupancy_cpus": 0.8}}}
    assert between_guess(0, "half", answers, flat, 96) is None


def test_a_run_logged_past_its_limit_is_not_killed_at_the_limit_it_outran():
    # Job 1 asks an hour and the log shows it ran 3,630 s (30 s of kill grace): under actual it replays with
    # 3,630 s as its limit.  A prediction of two hours, or of the hour asked (a predictor capped at the
    # request), is that limit, not the 3,600 s asked, so enforce gives it 3,630 s and the replay has no kill;
    # a prediction of 3,000 s (whole minutes: 3,000) kills it at 3,000 s and re-runs it with its own 3,630 s:
    # it ends at 3,000 + 3,630 = 6,630 s.
    t = table([(1, 0, 3630, 1, 1, 1, 3630)])
    for pred, limit, kills, end in ((7200.0, 3630.0, 0, 3630.0), (3600.0, 3630.0, 0, 3630.0),
                                    (3000.0, 3000.0, 1, 6630.0)):
        month, _ = build_month(t, CLUSTER, {0.9: {"walltime": np.array([pred])}})
        r = requests_for(month, Scenario("rightsized", level=0.9))
        assert r.limit.tolist() == [limit]
        res = run(Replay(Scenario("rightsized", level=0.9), keep_jobs=True), Setting(month=month, cluster=CLUSTER))
        assert res["jobs"]["kills_timeout"].tolist() == [kills] and res["jobs"]["end_s"].tolist() == [end]


def test_sums_by_key_name_keys_as_text_in_order():
    from audit.whatif.replays import _sum_by

    keys = np.array(["b", "a", 1, "1", None, float("nan"), "a"], dtype=object)
    assert _sum_by(keys, np.arange(7.0)) == {"1": 5.0, "None": 4.0, "a": 7.0, "b": 0.0, "nan": 5.0}
    assert _sum_by(np.array(["x", 2, "2", "x"], dtype=object), np.array([0.5, 1.0, 2.0, 0.25])) == {"2": 3.0, "x": 0.75}
    assert _sum_by(np.zeros(0, dtype=object), np.zeros(0)) == {}


def test_the_level_within_tolerance_is_shaken_while_the_other_levels_are_searched():
    # At q = 0.5 both jobs get 1 GiB and are killed (peak 2 GiB): out of a zero tolerance.  At q = 0.9
    # (3 GiB) they share a node: it recovers one of the two nodes, is recommended, and its two shaken
    # copies are searched on the same stream as the 0.5 level's search.
    t = table([(1, 0, 100, 1, 6, 2, 100), (2, 0, 100, 1, 6, 2, 100)])
    preds = {0.5: {"memory": np.array([GB, GB], dtype=float)}, 0.9: {"memory": np.array([3 * GB, 3 * GB], dtype=float)}}
    month, _ = build_month(t, CLUSTER, preds)
    setting = Setting(month=month, cluster=CLUSTER)
    opts = Options(risk=(0.5, 0.9), modes=("enforce",), replicates=2, tolerance=0.0, headroom=False,
                   policies=("easy",))
    with Runner(serial=True) as runner:
        sw = sweep(setting, runner, opts, PRICES)
    rows = {r["scenario"]: r for r in sw.tradeoff}
    assert rows["rightsized@0.5/enforce"]["kills"] == 2 and not rows["rightsized@0.5/enforce"]["within_tolerance"]
    assert rows["rightsized@0.9/enforce"]["kills"] == 0 and rows["rightsized@0.9/enforce"]["nodes_recovered"] == 1
    assert sw.recommended == "rightsized@0.9/enforce"
    assert sw.shaken["scenario"] == sw.recommended and sw.shaken["replicates"] == 2
    assert set(sw.capacity) == {"actual", "oracle", "rightsized@0.5/enforce", "rightsized@0.9/enforce"}
    assert set(sw.stages) >= {"replay", "capacity", "shaken"}


def test_the_recommendation_weighs_the_contenders_on_the_shaken_copies():
    # Within a tolerance of 1 % of 1,000 jobs: the 0.99 level (4 kills) recovers 3 nodes on the month as it ran,
    # the kill budget (8 kills) 2; the 0.5 level (50 kills) is out.  On five shaken copies the 0.99 level
    # recovers 4, 1, 4, 4, 3 and the budget 3, 4, 6, 7, 3: over the month and its copies 19 / 6 against 25 / 6.
    from audit.whatif.sweep import contenders, mean_recovered, tradeoff_rows

    a = Scenario("rightsized", level=0.99, mode="advise")
    b = Scenario("rightsized", mode="advise", predictor="budget")
    c = Scenario("rightsized", level=0.5, mode="advise")
    full = {s.name: {"kills_oom": k, "kills_timeout": 0, "jobs": 1000, "lost_gpu_hours": 0.0, "lost_cpu_hours": 0.0}
            for s, k in ((a, 4), (b, 8), (c, 50))}
    cap = {s.name: {"nodes_recovered": n, "share_recovered": n / 100} for s, n in ((a, 3), (b, 2), (c, 9))}
    rows, rec = tradeoff_rows([a, b, c], full, cap, 0.01)
    assert rec == a.name  # the month as it ran alone
    # the leader first; the budget too once the leader's 5th percentile over its copies is 2 nodes or fewer
    assert contenders(rows) == [a.name]
    assert contenders(rows, 1.9) == contenders(rows, 2) == [a.name, b.name] and contenders(rows, 2.5) == [a.name]
    means = {a.name: mean_recovered(3, {1: 4, 2: 1, 3: 4, 4: 4, 5: 3}),
             b.name: mean_recovered(2, {1: 3, 2: 4, 3: 6, 4: 7, 5: 3})}
    assert means == {a.name: 19 / 6, b.name: 25 / 6}
    rows, rec = tradeoff_rows([a, b, c], full, cap, 0.01, means)
    assert rec == b.name
    assert {r["scenario"]: r["nodes_recovered_mean"] for r in rows} == {**means, c.name: None}
    # equal averages: the month as it ran, then the safer level
    rows, rec = tradeoff_rows([a, b, c], full, cap, 0.01, {a.name: 3.5, b.name: 3.5})
    assert rec == a.name
    assert mean_recovered(2, {1: 3, 2: None}) is None


def test_at_most_three_contenders_are_shaken_the_most_recovered_first():
    from audit.whatif.sweep import CONTENDERS, contenders

    rows = [{"scenario": f"s{k}", "nodes_recovered": n, "level": lv, "mode": "advise", "within_tolerance": ok}
            for k, (n, lv, ok) in enumerate([(1, 0.99, True), (4, 0.9, True), (4, 0.95, True), (9, 0.5, False),
                                              (2, None, True), (None, 0.8, True)])]
    # s3 is out of tolerance; of the others, 4 nodes at 0.95 before 4 at 0.9 (the safer first), then 2
    assert contenders(rows) == ["s2"]
    assert contenders(rows, 3) == ["s2", "s1"]
    assert CONTENDERS == 3 and contenders(rows, 0) == ["s2", "s1", "s4"]


def test_a_scenario_the_copies_cannot_tell_from_the_leader_is_shaken_too():
    # Peak 2 GiB, node 6 GiB: at q = 0.5 (2.5 GiB) and q = 0.9 (3 GiB) both jobs share one node, nothing is
    # killed, and each level recovers one of the two nodes.  The leader (0.9, the safer of the tie) recovers 1 on
    # both copies, so its 5th percentile is 1 and the 0.5 level, at 1 too, is searched on the same copies; their
    # averages tie, and the safer level is recommended.
    t = table([(1, 0, 100, 1, 6, 2, 100), (2, 0, 100, 1, 6, 2, 100)])
    preds = {0.5: {"memory": np.array([2.5 * GB, 2.5 * GB])}, 0.9: {"memory": np.array([3 * GB, 3 * GB])}}
    month, _ = build_month(t, CLUSTER, preds)
    opts = Options(risk=(0.5, 0.9), modes=("enforce",), replicates=2, tolerance=0.0, headroom=False,
                   policies=("easy",))
    with Runner(serial=True) as runner:
        sw = sweep(Setting(month=month, cluster=CLUSTER), runner, opts, PRICES)
    assert {r["scenario"]: (r["nodes_recovered"], r["kills"]) for r in sw.tradeoff} == {
        "rightsized@0.5/enforce": (1, 0), "rightsized@0.9/enforce": (1, 0)}
    assert sw.means == {"rightsized@0.9/enforce": 1.0, "rightsized@0.5/enforce": 1.0}
    assert sw.recommended == "rightsized@0.9/enforce" and sw.shaken["scenario"] == sw.recommended
    assert sw.shaken["nodes_recovered"] == {1: 1, 2: 1}


def test_the_kills_counted_before_the_replay_are_the_replays_own():
    """Four jobs, limit 3600 s, on one partition of 4-core 8 GiB nodes; the predictions cut them so:
    1: peak 2 GiB, given 1 GiB: use grows to its peak over its 100 s, so it crosses 1 GiB at 50 s: killed;
    2: keeps 4 cores busy for 1,000 s, given 2: stretched to 2,000 s, within its limit: not killed;
    3: keeps 4 cores busy for 2,000 s, given 2: stretched to 4,000 s, killed at its limit, 3,600 s;
    4: peak 2 GiB, given 2 GiB, 1 core busy of 1 given: not killed."""
    from audit.whatif.scenarios import killed_after

    t = table([(1, 0, 100, 1, 6, 2, 100), (2, 0, 1000, 4, 4, 1, 4000), (3, 0, 2000, 4, 4, 1, 8000),
               (4, 0, 100, 1, 4, 2, 100)])
    preds = {"budget/advise": {"memory": np.array([GB, np.nan, np.nan, 2 * GB], dtype=float),
                               "cpus": np.array([np.nan, 2.0, 2.0, 1.0])}}
    month, _ = build_month(t, CLUSTER, preds)
    scenario = Scenario("rightsized", mode="advise", predictor="budget")
    after = killed_after(month, requests_for(month, scenario))
    assert after[[0, 2]].tolist() == [50.0, 3600.0] and np.isnan(after[[1, 3]]).all()
    # without a kill at the limit (a processor pool), only memory kills
    after = killed_after(month, requests_for(month, scenario), kill_at_limit=False)
    assert after[0] == 50.0 and np.isnan(after[1:]).all()
    res = run(Replay(scenario, keep_jobs=True), Setting(month=month, cluster=CLUSTER))
    jobs = res["jobs"]
    assert (jobs["kills_oom"] + jobs["kills_timeout"]).tolist() == [1, 0, 1, 0]
    m = run(Replay(scenario), Setting(month=month, cluster=CLUSTER))
    # the hours lost are those of the killed attempts: 50 s of 1 core, 3,600 s of 2 cores
    assert m["lost_cpu_hours"] == pytest.approx((50 + 2 * 3600) / 3600)


def test_the_gpu_hours_a_kill_loses_are_counted_as_the_replay_counts_them():
    # one job on 2 nodes asking 3 GPUs and 16 GiB, peaking at 8 GiB over its 100 s, given 4 GiB: it crosses 4 GiB
    # at 50 s and is killed; 3 GPUs on 2 nodes are 2 a node, so its attempt held 4 GPUs for 50 s
    from audit.whatif.scenarios import held_gpus, killed_after

    t = table([(1, 0, 100, 2, 16, 8, 200)])
    t["req_gpus"], t["alloc_gpus"], t["gpu_type"], t["req_nodes"], t["alloc_nodes"] = 3, 3, "a100", 2, 2
    gpus = Cluster(groups=(NodeGroup("g", 2, cpus=4, mem_bytes=8 * GB, gpus=2, gpu_type="a100"),),
                   partitions=(Partition("cpu", ("g",)),))
    month, _ = build_month(t, gpus, {"budget/advise": {"memory": np.array([4 * GB], dtype=float)}})
    scenario = Scenario("rightsized", mode="advise", predictor="budget")
    r = requests_for(month, scenario)
    after = killed_after(month, r)
    assert after.tolist() == [50.0] and held_gpus(month, r.gpus).tolist() == [4.0]
    m = run(Replay(scenario), Setting(month=month, cluster=gpus))
    assert m["lost_gpu_hours"] == pytest.approx(4 * 50 / 3600)
