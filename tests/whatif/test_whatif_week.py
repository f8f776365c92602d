"""The what-if sweep on the generated week (sample_traces/week), held to its planted truth (truth.json),
and on KTH-SP2 against Tsafrir, Etsion & Feitelson's EASY++ result."""

import json
from pathlib import Path

import numpy as np
import pytest

from audit.ingest import ingest, read_table
from audit.whatif import Options, whatif
from audit.whatif.budget import quantile_atom

ROOT = Path(__file__).resolve().parents[2]
WEEK = ROOT / "sample_traces" / "week"
KTH = ROOT / ".." / "shared" / "traces" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    store = tmp_path_factory.mktemp("week")
    ingest([WEEK], store)
    table, shape = read_table([store])
    opts = Options(replicates=2, headroom=False, policies=("easy",))
    result = whatif(table, cluster_shape=shape, out=store, options=opts, serial=True, quiet=True)
    return result, store


def test_oracle_recovers_at_least_as_much_as_every_level(week):
    cap = week[0].summary["capacity"]
    rightsized = [v["nodes_recovered"] for k, v in cap.items() if k.startswith("rightsized@")]
    assert len(rightsized) == 11 and all(cap["oracle"]["nodes_recovered"] >= n for n in rightsized)


def test_kills_rise_as_the_level_falls(week):
    s = week[0].summary["scenarios"]
    for mode in ("enforce", "advise"):
        kills = [s[f"rightsized@{q}/{mode}"]["kills_oom"] + s[f"rightsized@{q}/{mode}"]["kills_timeout"]
                 for q in (0.99, 0.95, 0.9, 0.8, 0.5)]
        assert kills == sorted(kills) and kills[0] < kills[-1], (mode, kills)
    assert s["actual"]["kills_oom"] + s["actual"]["kills_timeout"] == 0
    assert s["oracle"]["kills_oom"] + s["oracle"]["kills_timeout"] == 0


def test_oracle_memory_held_falls_by_the_planted_unused_share(week):
    truth = json.loads((WEEK / "truth.json").read_text())["totals"]
    s = week[0].summary["scenarios"]
    planted = truth["mem_gib_hours_peak"] / truth["mem_gib_hours_alloc"]
    held = s["oracle"]["mem_gib_hours_held"] / s["actual"]["mem_gib_hours_held"]
    assert held == pytest.approx(planted, rel=0.01)


def test_capacity_probes_hold_each_search_answer(week):
    s = week[0].summary
    for name, cap in s["capacity"].items():
        rows = s["capacity_probes"][name]
        assert rows and all(r["nodes"] >= 1 for r in rows)
        if not cap["pools_missing_service"]:
            for pool in {r["pool"] for r in rows}:
                passing = [r["nodes"] for r in rows if r["pool"] == pool and r["passed"]]
                assert passing, (name, pool)
    assert (week[1] / "predictions.parquet").exists()


def test_files_and_stable_keys(week):
    result, store = week
    folder = store / "whatif"
    for name in ("summary.json", "scenarios.parquet", "jobs.parquet", "capacity.csv", "tradeoff.csv"):
        assert (folder / name).exists(), name
    s = json.loads((folder / "summary.json").read_text())
    assert set(s) == {"jobs", "dropped", "cluster", "options", "prediction_coverage", "fidelity", "scenarios",
                      "capacity", "capacity_probes", "tradeoff", "recommended", "shaken", "headroom", "policies",
                      "price_book", "price_books", "replays", "kill_budget", "coverage_by_stratum",
                      "gap"}  # the keys docs/glossary.md documents
    import pandas as pd

    jobs = pd.read_parquet(folder / "jobs.parquet")
    assert len(jobs) == 13 * s["jobs"] and jobs["scenario"].nunique() == 13
    assert len(pd.read_parquet(folder / "scenarios.parquet")) == 13
    rec = s["recommended"]
    assert rec is None or rec["kills"] <= 0.01 * s["jobs"]
    assert s["fidelity"]["logged_mean_wait_s"] > 0


@pytest.mark.shared
def test_easy_plus_plus_improves_bounded_slowdown_on_kth_sp2():
    if not KTH.exists():
        pytest.skip(f"{KTH} not present")
    table, _ = read_table([KTH])
    opts = Options(predictor="last_two", modes=("advise",), backfill_order="sjf", capacity_search=False,
                   replicates=0, headroom=False, policies=("easy",))
    s = whatif(table, procs=100, options=opts, serial=True, quiet=True).summary
    easy = s["policies"]["easy"]
    plus = s["scenarios"]["rightsized@last_two/advise"]
    assert easy["mean_wait_s"] == pytest.approx(6_427.5, rel=0.01)  # the PROVENANCE reference for EASY
    assert plus["mean_bounded_slowdown"] < 0.8 * easy["mean_bounded_slowdown"]
    assert plus["mean_wait_s"] < easy["mean_wait_s"]


def test_the_kill_budget_spends_no_more_than_it_has(week):
    s = week[0].summary
    assert list(s["kill_budget"]) == ["advise"]  # replayed in advise when advise is swept
    for mode in ("advise",):
        b = s["kill_budget"][mode]
        assert b["budget_jobs"] == pytest.approx(0.01 * s["jobs"])
        assert b["expected_kills"] <= b["allowed_jobs"] + 1e-9
        assert b["expected_kills"] == pytest.approx(sum(r["expected_kills"] for r in b["allocation"]))
        # the kills counted before the replay are the replay's own, within the budget
        row = next(r for r in s["tradeoff"] if r["scenario"] == f"rightsized@budget/{mode}")
        assert row["kills"] == b["counted_kills"] <= b["budget_jobs"]
    # advise: the time limit is the job's own, so the time estimate spends nothing; memory kills, and cores or
    # GPUs short of the need stretch the run past its own limit, so those three spend it
    spent = {r["target"] for r in s["kill_budget"]["advise"]["allocation"]}
    assert "walltime" not in spent and spent <= {"memory", "cpus", "gpus"}
    assert {"memory", "cpus"} <= spent


def test_the_advise_budget_plans_with_the_median_run_time(week):
    """Under advise a run-time prediction only plans (a job outliving it keeps its own limit), so the budget's
    estimate is the median prediction, as the per-level scenario at 0.5 plans with, not the sweep's safest."""
    import pandas as pd

    from audit.whatif.budget import budget_predictions, plan_level
    from audit.whatif.scenarios import as_replayed
    from audit.whatif.to_simulator import node_counts, to_cluster

    assert plan_level((0.5, 0.8, 0.99)) == 0.5 and plan_level((0.9, 0.99)) == 0.9 and plan_level((0.3, 0.7)) == 0.7
    store = week[1]
    table, shape = read_table([store])
    frame = pd.read_parquet(store / "predictions.parquet")
    values, alloc = budget_predictions(table, frame, Options().risk, 0.01, to_cluster(shape), ("advise",))
    limit = pd.to_numeric(table["time_limit_s"]).to_numpy(dtype=float)
    median = as_replayed("walltime", frame["pred_elapsed_s_p50"].to_numpy(), limit, node_counts(table).astype(float))
    np.testing.assert_array_equal(values["budget/advise"]["walltime"], median)
    assert np.isfinite(median).sum() > 1000 and alloc["advise"]["plan_level"] == {"walltime": 0.5}


def test_a_budget_of_gpu_hours_keeps_the_gpu_hours_the_kills_lose_within_it(week):
    """``--gpu-hours-budget``: the kills may lose at most that share of the GPU-hours the month asked, besides the
    share of jobs; the jobs' budget alone loses more here, so the GPU-hours bind."""
    import pandas as pd

    from audit.whatif.budget import budget_predictions
    from audit.whatif.to_simulator import to_cluster

    store = week[1]
    table, shape = read_table([store])
    frame = pd.read_parquet(store / "predictions.parquet")
    cluster = to_cluster(shape)
    _, alone = budget_predictions(table, frame, Options().risk, 0.01, cluster, ("advise",))
    a = alone["advise"]
    assert a["gpu_hours_budget"] is None and a["counted_gpu_hours_lost"] > 0
    asked = (pd.to_numeric(table["alloc_gpus"].fillna(table["req_gpus"])).fillna(0).to_numpy(dtype=float)
             * pd.to_numeric(table["elapsed_s"]).to_numpy(dtype=float)).sum() / 3600
    share = 0.25 * a["counted_gpu_hours_lost"] / asked
    _, capped = budget_predictions(table, frame, Options().risk, 0.01, cluster, ("advise",), gpu_hours=share)
    c = capped["advise"]
    assert c["gpu_hours_allowed"] == pytest.approx(share * asked, rel=0.02)
    assert c["counted_gpu_hours_lost"] <= c["gpu_hours_allowed"]
    # the cap binds; ``allowed_jobs`` is spent in the kills' costs (a GPU job's kill costs more under the cap), so
    # the two spends are not in the same units
    assert c["counted_gpu_hours_lost"] < a["counted_gpu_hours_lost"]
    assert c["counted_kills"] <= a["counted_kills"] <= a["budget_jobs"]


def test_the_kill_budget_is_a_share_of_the_jobs_the_replay_keeps(week):
    """The tolerance counts kills over the jobs replayed, so the budget is a share of those: a log's rows with no
    submit time or no core count are not replayed, and cannot be killed."""
    import pandas as pd

    from audit.whatif.budget import budget_predictions
    from audit.whatif.to_simulator import to_cluster

    store = week[1]
    table, shape = read_table([store])
    frame = pd.read_parquet(store / "predictions.parquet")
    table["submit_time"] = table["submit_time"].mask(np.arange(len(table)) % 50 == 0)    # 50 rows
    for col in ("req_cpus", "alloc_cpus"):
        table[col] = table[col].mask(np.arange(len(table)) % 50 == 1)                   # 50 more
    _, alloc = budget_predictions(table, frame, Options().risk, 0.01, to_cluster(shape), ("advise",))
    assert alloc["advise"]["budget_jobs"] == pytest.approx(0.01 * (len(table) - 100))


def test_coverage_is_reported_per_stratum(week):
    cov = week[0].summary["coverage_by_stratum"]["memory"]
    for lv, row in cov.items():
        assert sum(v["jobs"] for k, v in row.items() if k != "all") == row["all"]["jobs"]
        assert 0.0 <= row["all"]["coverage"] <= 1.0
        for v in row.values():
            # the level's quantile of need: fewer than the level below it, at least the level through it
            assert v["below_quantile"] < float(lv) <= v["through_quantile"]
            # never more habits than jobs; with a job per habit the error is the binomial one
            assert 1 <= v["habits"] <= v["jobs"]
            c = v["coverage"]
            if v["se"] is not None and v["habits"] == v["jobs"]:
                assert v["se"] == pytest.approx(np.sqrt(c * (1 - c) / (v["jobs"] - 1)))


def test_the_gap_agrees_with_the_replays_own_accounting(week):
    s = week[0].summary
    gap = s["gap"]
    if gap is None:
        pytest.skip("no scenario recommended on this week")
    mem = next(r for r in gap["by_resource"] if r["resource"] == "memory")
    # the simulator sums what each attempt held; actual and the oracle are never killed, so held = asked
    assert mem["asked"] == pytest.approx(s["scenarios"]["actual"]["mem_gib_hours_held"], rel=1e-6)
    assert mem["oracle"] == pytest.approx(s["scenarios"]["oracle"]["mem_gib_hours_held"], rel=1e-6)
    assert mem["gap"] == pytest.approx(mem["no_history"] + mem["prediction_spread"])
    assert sum(c["nodes"] for c in gap["by_cause"]) == pytest.approx(gap["nodes_gap"])
    assert gap["nodes_gap"] == gap["oracle_nodes_recovered"] - gap["nodes_recovered"]


def test_an_atom_of_need_is_found_at_its_quantile():
    # nine jobs need one whole GPU, one needs half: half of them cannot be covered, a bound covers 1 or 10 in 10
    assert quantile_atom(np.array([0.5] + [1.0] * 9), 0.5) == (0.1, 1.0)
    assert quantile_atom(np.array([0.5] + [1.0] * 9), 0.1) == (0.0, 0.1)
    # needs all distinct: the quantile is one job's, the shares straddle the level by one job
    assert quantile_atom(np.arange(1.0, 101.0), 0.9) == (0.89, 0.9)
    assert quantile_atom(np.arange(1.0, 101.0), 0.07) == (0.06, 0.07)  # not the 8th: 100 × 0.07 rounds up
    assert np.isnan(quantile_atom(np.array([]), 0.5)[0])
