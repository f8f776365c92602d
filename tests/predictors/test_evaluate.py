"""The evaluation harness, right-sizing and the CLI: on KTH-SP2 (real) and a generated month (planted)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from predictors.cli import predict
from predictors.evaluate import evaluate, evaluate_jobs, parse_levels
from predictors.features.splits import DAY_S
from predictors.models.rightsize import right_size

from .conftest import swf_jobs

FAST = {"n_estimators": 40, "retrain_every": 4}


@pytest.mark.shared
def test_kth_walltime_calibrated_and_better_than_history_baselines():
    jobs = swf_jobs("KTH-SP2-1996-2.1-cln.swf.gz")
    ev = evaluate_jobs(jobs, "walltime", (0.9,), models=["user_mean", "last_two", "lightgbm"], **FAST)
    m = ev.metrics.set_index("model")
    assert m.loc["lightgbm", "jobs"] > 20_000
    assert 0.88 <= m.loc["lightgbm", "coverage"] <= 0.92
    assert m.loc["lightgbm", "pinball"] < m.loc["last_two", "pinball"]
    assert m.loc["lightgbm", "pinball"] < m.loc["user_mean", "pinball"]
    # every tested job was predicted only by a model fitted on jobs that ended before its week began
    jt = ev.rolling.jobs
    folds = ev.rolling.folds.dropna(subset=["train_jobs"])
    first = jt[jt["scored"]]["fold"].min()
    assert (folds["origin"].diff().dropna() == pd.Timedelta(days=28)).all()
    assert jt.loc[jt["fold"] >= first, "scored"].mean() > 0.99


def test_rolling_origin_is_in_time_order(small_month):
    ev = evaluate_jobs(small_month, "memory", (0.5, 0.9), models=["request", "lightgbm"], n_estimators=20,
                       warmup_days=3, test_days=1, cal_days=3, min_cal=50)
    jt, folds = ev.rolling.jobs, ev.rolling.folds
    origin = folds["origin"].map(lambda t: t.timestamp()).to_numpy()
    tested = jt[jt["fold"] >= 0]
    o = origin[tested["fold"].to_numpy()]
    assert (tested["submit_s"] >= o).all() and (tested["submit_s"] < o + DAY_S).all()
    assert (np.diff(origin) == DAY_S).all()
    # the request baseline covers every job that stayed within its request
    m = ev.metrics.set_index(["model", "level"])
    assert m.loc[("request", 0.9), "recovered_fraction"] == 0.0
    assert m.loc[("request", 0.9), "coverage"] == pytest.approx(
        np.mean(jt.loc[jt["scored"], "y"] <= jt.loc[jt["scored"], "request"]))
    # calibrated memory quantiles: in the band, and they recover memory-hours the requests held
    assert 0.86 <= m.loc[("lightgbm", 0.9), "coverage"] <= 0.94
    assert m.loc[("lightgbm", 0.9), "recovered_fraction"] > 0.05
    # levels never cross, calibrated or not
    assert (jt["lightgbm@0.9"] >= jt["lightgbm@0.5"]).where(jt["scored"], True).all()
    assert set(ev.breakdowns) >= {"partition", "cold_user", "cold_family"}
    # evaluate calibrates by history stratum alone (the size classes serve the what-if's kill budget)
    assert not jt.loc[jt["scored"], "stratum"].astype(str).str.contains("/").any()


def test_parse_levels():
    assert parse_levels("0.9,0.5") == (["0.5", "0.9"], (0.5, 0.9))
    for bad in ("0.5,x", "1.2", "0.5,0.5", ""):
        with pytest.raises(ValueError):
            parse_levels(bad)


def test_right_size_columns_and_past_only(small_month):
    out = right_size(small_month, levels=(0.5, 0.9), targets=["memory", "cpus"], n_estimators=15,
                     warmup_days=3, test_days=1, cal_days=3, min_cal=50)
    assert list(out.columns) == ["cluster", "job_id", "stratum_mem_peak_bytes",
                                 "pred_mem_peak_bytes_p50", "source_mem_peak_bytes_p50",
                                 "pred_mem_peak_bytes_p90", "source_mem_peak_bytes_p90", "stratum_cpus_used",
                                 "pred_cpus_used_p50", "source_cpus_used_p50", "pred_cpus_used_p90",
                                 "source_cpus_used_p90"]
    got = out["pred_mem_peak_bytes_p90"].notna()
    st = out.loc[got, "stratum_mem_peak_bytes"].str.split("/", n=1)
    assert set(st.str[0]) <= {"cold", "short_tight", "short_loose", "long_tight", "long_spread", "long_wide"}
    assert set(st.str[1]) <= {"q1", "q2", "q3", "q4", "q5"}  # the size class within it
    assert set(out.loc[got, "source_mem_peak_bytes_p90"]) <= {"lightgbm", "habit_t", "habit_max", "habit_krr",
                                                              "habit_vpa", "habit_autopilot"}
    assert len(out) == len(small_month)
    early = (small_month["submit_time"] < small_month["submit_time"].min() + pd.Timedelta(days=3)).to_numpy()
    assert out.loc[early, "pred_mem_peak_bytes_p90"].isna().all()  # burn-in: no history, no prediction
    got = out["pred_mem_peak_bytes_p90"].notna()
    assert got.mean() > 0.4
    assert (out.loc[got, "pred_mem_peak_bytes_p90"] >= out.loc[got, "pred_mem_peak_bytes_p50"]).all()
    req = small_month["req_mem_bytes"].astype("float64").to_numpy()
    assert (out.loc[got, "pred_mem_peak_bytes_p90"].to_numpy() <= req[got.to_numpy()] + 1e-6).all()


def test_cli_json_shape(small_month, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    small_month.to_parquet(store / "jobs.parquet", index=False)
    res = CliRunner().invoke(predict, ["evaluate", str(store), "--target", "cpus", "--quantiles", "0.5,0.90",
                                       "--json", "--models", "request,last_two,lightgbm", "--warmup-days", "3",
                                       "--n-estimators", "20",
                                       "--test-days", "1", "--cal-days", "3"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert set(d) == {"target", "jobs_tested", "models", "coverage_by_stratum"}
    assert d["target"] == "cpus" and d["jobs_tested"] > 0
    for model, per in d["coverage_by_stratum"].items():  # every stratum's jobs add up to those tested
        for level, strata in per.items():
            assert sum(v["jobs"] for v in strata.values()) == d["jobs_tested"], (model, level)
            assert all(1 <= v["habits"] <= v["jobs"] for v in strata.values()), (model, level)
            assert all(v["se"] is None or 0 <= v["se"] <= 0.5 for v in strata.values()), (model, level)
    assert list(d["models"]) == ["request", "last_two", "lightgbm", "lightgbm_capped"]
    # capped at the request, the right-sized request can only release requested resource-hours
    assert all(v["recovered_fraction"] >= 0 for v in d["models"]["lightgbm_capped"].values())
    assert list(d["models"]["lightgbm"]) == ["0.5", "0.90"]
    assert set(d["models"]["lightgbm"]["0.90"]) == {"coverage", "under_rate", "overprov_ratio",
                                                    "recovered_fraction", "pinball"}
    text = CliRunner().invoke(predict, ["evaluate", str(store), "--target", "cpus", "--models", "request,lightgbm",
                                        "--n-estimators", "10", "--breakdown", "partition",
                                        "--warmup-days", "3", "--test-days", "1", "--cal-days", "3"])
    assert text.exit_code == 0 and "lightgbm" in text.output and "coverage" in text.output
    bad = CliRunner().invoke(predict, ["evaluate", str(store), "--quantiles", "0.5,2"])
    assert bad.exit_code == 2 and "quantiles" in bad.output


def test_library_evaluate_matches_cli_shape(small_month):
    d = evaluate(small_month, "walltime", "0.9", models=["request"], warmup_days=3, test_days=1, cal_days=3)
    assert list(d["models"]["request"]) == ["0.9"]


@pytest.mark.shared
def test_kth_accuracy_improves_with_history():
    from predictors.evaluate import history_curve

    jobs = swf_jobs("KTH-SP2-1996-2.1-cln.swf.gz")
    c = history_curve(jobs, "walltime", 0.9, train_days=(7, None), start_days=182, n_estimators=40, retrain_every=4)
    assert c["jobs"].nunique() == 1  # the same test jobs for both
    # modelled relative to the request, a week of jobs already gets most of the way; all history still wins
    assert c.loc[1, "pinball"] < 0.98 * c.loc[0, "pinball"]


def test_too_little_history_gives_empty_metrics_not_an_error(small_month):
    d = evaluate(small_month.head(100), "memory", "0.9", models=["request", "lightgbm"])
    assert d["jobs_tested"] == 0
    assert d["models"]["lightgbm"]["0.9"] == dict.fromkeys(("coverage", "under_rate", "overprov_ratio",
                                                            "recovered_fraction", "pinball"))
