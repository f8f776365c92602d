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
