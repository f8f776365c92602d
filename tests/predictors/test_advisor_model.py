"""The advisor's model: tabled history figures equal those computed on the whole history, a saved and loaded
model predicts as the fitted one, and the calibrated risk of a request reads as the share of jobs above it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from predictors.advisor.job_request import job_row
from predictors.advisor.model import AdvisorModel, is_current, load_model, save_model, store_fingerprint
from predictors.advisor.sbatch import parse_sbatch
from predictors.features.submission import submission_features
from predictors.features.tables import TableIndex, feature_tables, job_features
from predictors.features.targets import TARGETS


def _scripts(h: pd.DataFrame):
    u = str(h["user"].value_counts().index[0])
    last = h[h["user"] == u].iloc[-1]
    habitual = (f"#!/bin/bash\n#SBATCH -J {last.job_name} -t {int(last.time_limit_s) // 60} -c {int(last.req_cpus)} "
                f"--mem={int(last.req_mem_bytes) // 2**20} -p {last.partition}\nsrun x\n")
    return [(habitual, u, True), ("#!/bin/bash\n#SBATCH -J relax_3 -t 61 -c 3 --mem=8G\nsrun x\n", u, False),
            ("#!/bin/bash\n#SBATCH -J brand_new -t 60 --gpus=a100:2 --mem=8G\nsrun x\n", "nobody", False),
            ("#!/bin/bash\n#SBATCH -J relax_3 -t 60 -c 4\nsrun x\n", None, False)]


@pytest.mark.parametrize("target", list(TARGETS))
def test_tabled_features_equal_those_of_the_whole_history(small_month, target):
    h = small_month
    q = h["end_time"].max() + pd.Timedelta(seconds=1)
    _, tables = feature_tables(h, target, q)
    index = TableIndex(tables)
    for text, user, same_shape in _scripts(h):
        job = job_row(parse_sbatch(text), user=user, submit_time=q)
        fast = job_features(job, target, index)
        full = submission_features(pd.concat([h, job], ignore_index=True), target).iloc[[-1]].reset_index(drop=True)
        assert list(fast.columns) == list(full.columns)
        for c in full.columns:
            if pd.api.types.is_numeric_dtype(full[c]):
                np.testing.assert_allclose(fast[c].astype(float), full[c].astype(float), rtol=1e-12, equal_nan=True,
                                           err_msg=c)
            else:
                assert fast[c].astype(object).equals(full[c].astype(object)), c
        if same_shape and target in ("walltime", "memory", "cpus"):  # the look-up by request shape is exercised
            assert fast["usershape_count"].iloc[0] > 0


@pytest.fixture(scope="module")
def fitted(small_month):
    return AdvisorModel(n_estimators=20).fit(small_month)


def test_saved_model_predicts_as_fitted(fitted, small_month, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    small_month.to_parquet(store / "jobs.parquet")
    save_model(fitted, store / "model", fingerprint=store_fingerprint(store))
    assert is_current(store)
    loaded = load_model(store / "model")
    assert set(loaded.targets_) == set(fitted.targets_)
    for text, user, _ in _scripts(small_month):
        job = job_row(parse_sbatch(text), user=user, submit_time=fitted.query_time_)
        for name, t in fitted.targets_.items():
            a, b = t.curve(job), loaded.targets_[name].curve(job)
            np.testing.assert_allclose(b, a, rtol=1e-9)
            assert loaded.targets_[name].quantile(b, 0.9) == pytest.approx(t.quantile(a, 0.9), rel=1e-9)
    u = str(small_month["user"].value_counts().index[0])
    assert len(loaded.user_history(u)) == (small_month["user"] == u).sum()
    small_month.head(10).to_parquet(store / "jobs.parquet")
    assert not is_current(store)  # another version of the jobs: the model is stale


def test_risk_is_the_share_of_calibration_jobs_past_the_request():
    """Hand-built: scores 0..9 (positions along each job's curve); a request at position 4.5 of this job's curve
    has 5 of the 10 calibration jobs beyond it: (1 + 5) / 11; at position 5, 5 reach it (5 itself counts)."""
    from predictors.advisor.model import TargetModel

    t = TargetModel("memory", None, np.arange(10.0), 0, 10, [], pd.DataFrame())
    curve = np.arange(1.0, 53.0)  # value k + 1 at position k
    r, bound = t.risk(curve, 5.5)
    assert r == pytest.approx(6 / 11) and bound == "about"
    assert t.risk(curve, 6.0) == (pytest.approx(6 / 11), "about")
    assert t.risk(curve, 0.5) == (pytest.approx(11 / 11), "at least")
    assert t.risk(curve, 100.0) == (pytest.approx(1 / 11), "at most")
    # the quantile at 0.5 is the 6th smallest score, position 5: the curve's value there
    assert t.quantile(curve, 0.5) == pytest.approx(6.0)


def test_a_run_still_going_is_a_lower_bound_of_its_score():
    """Hand-built: as above, with the score at 3 a run still going (at least 3).  Kaplan–Meier: survival 7/10
    after 0, 1, 2; then 7/10 · 5/6 after 4, 7/10 · 4/6 after 5, …  A request at position 4.5 is reached with
    probability 7/12: (1 + 10 · 7/12) / 11; the median is the first score where F reaches 0.5 · 11/10 = 0.55,
    6 (F = 1 − 7/10 · 3/6 = 0.65)."""
    from predictors.advisor.model import TargetModel

    observed = np.ones(10, dtype=bool)
    observed[3] = False
    t = TargetModel("walltime", None, np.arange(10.0), 0, 10, [], pd.DataFrame(), observed=observed)
    curve = np.arange(1.0, 53.0)
    assert t.risk(curve, 5.5) == (pytest.approx((1 + 10 * 7 / 12) / 11), "about")
    assert t.quantile(curve, 0.5) == pytest.approx(7.0)


def test_runs_still_going_at_the_end_of_the_history_calibrate_the_advice(tmp_path):
    """Planted: one habit's runs last 2-100 % of a five-day limit, uniformly, submitted over 40 days; the runs
    still going on day 40 are logged RUNNING (no end, their run so far).  The advised median run is the true one,
    51 % of the limit, and so is the risk of asking 60 % of it, within the model's error; without the runs still
    going, the window's long runs are missing and both fall short (0.42 of the limit, a risk of 0.33)."""
    from audit.job_table import conform

    from .histories import T0, group

    rng = np.random.default_rng(12)
    limit = 5 * 86400
    h = group(rng, "ann", "md", 2000, limit_s=limit, time_use=(0.02, 1.0), days=(0.0, 40.0))
    now = T0 + pd.Timedelta(days=40)
    going = (h["end_time"] > now).to_numpy()
    h.loc[going, "state"] = "RUNNING"
    h.loc[going, "elapsed_s"] = ((now - h.loc[going, "start_time"]).dt.total_seconds()).astype(np.int64)
    h.loc[going, "end_time"] = pd.NaT
    h = conform(h)
    assert going.sum() > 50
    job = job_row(parse_sbatch(f"#!/bin/bash\n#SBATCH -J md_1 -t {limit // 60} -c 4 --mem=16G\nsrun x\n"), user="ann",
                  submit_time=now)
    medians, risks = {}, {}
    for name, history in (("with", h), ("without", h[h["state"] != "RUNNING"])):
        t = AdvisorModel(n_estimators=20, targets=("walltime",)).fit(history.reset_index(drop=True)).targets_["walltime"]
        medians[name] = t.quantile(t.curve(job), 0.5) / limit
        risks[name] = t.risk(t.curve(job), 0.6 * limit)[0]
    assert abs(medians["with"] - 0.51) <= 0.05, medians
    assert medians["without"] < medians["with"] - 0.05, medians
    # a run reaches 60 % of its limit with probability 0.4 / 0.98 = 0.408
    assert abs(risks["with"] - 0.408) <= 0.05 and risks["without"] < risks["with"] - 0.05, risks
    saved = tmp_path / "model"
    fitted = AdvisorModel(n_estimators=20, targets=("walltime",)).fit(h)
    save_model(fitted, saved)
    loaded = load_model(saved).targets_["walltime"]
    assert (~loaded.observed).sum() == (~fitted.targets_["walltime"].observed).sum() > 0
