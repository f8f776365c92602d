"""Leakage: what is predicted for a job may depend only on jobs that ended before it was submitted.

The check perturbs everything measured about jobs ending after a cut and requires the features and
predictions of jobs submitted before the cut to stay identical.  Planted leaks must make it fail.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from predictors.features.leakage import future_changes
from predictors.features.submission import submission_features
from predictors.features.targets import TARGETS, actual
from predictors.models import rolling
from predictors.models.baselines import LastTwoBaseline
from predictors.models.quantile_gbm import QuantileGBM
from predictors.models.quantile_hurdle import HurdleQuantileGBM
from predictors.models.rolling import RollingForecaster


def _cut(jobs: pd.DataFrame) -> pd.Timestamp:
    return jobs["submit_time"].quantile(0.6)


@pytest.mark.parametrize("target", list(TARGETS))
def test_features_never_read_the_future(small_month, target):
    assert future_changes(lambda j: submission_features(j, target), small_month, _cut(small_month)) == []


def test_planted_future_mean_is_caught(small_month):
    def leaky(j):
        f = submission_features(j, "memory")
        y = pd.Series(actual(j, "memory"))
        f["user_all_time_mean"] = y.groupby(j["user"].to_numpy()).transform("mean").to_numpy()
        return f

    assert future_changes(leaky, small_month, _cut(small_month)) == ["user_all_time_mean"]


def test_planted_running_jobs_are_caught(small_month):
    """History from jobs *submitted* (not ended) before the job: still-running jobs leak their outcome."""
    from predictors.features.history import past_stats
    from predictors.features.submission import codes, epoch_s

    def leaky(j):
        f = submission_features(j, "walltime")
        s = epoch_s(j["submit_time"])
        st = past_stats(codes(j["user"]), s + 1.0, s, actual(j, "walltime"))
        f["user_last1_by_submit"] = st["last1"]
        return f

    assert "user_last1_by_submit" in future_changes(leaky, small_month, _cut(small_month))


def _models():
    # both calibrations: by level for the hurdle model's curve, by shift for a calibrated model without one
    return {"last_two": LastTwoBaseline((0.5, 0.9)),
            "lightgbm": HurdleQuantileGBM((0.5, 0.9), n_estimators=15, log_offset=float(2**20), num_threads=1),
            "quantreg": QuantileGBM((0.5, 0.9), n_estimators=15, log_offset=float(2**20), num_threads=1)}


def _rolling(jobs):
    f = RollingForecaster(_models(), (0.5, 0.9), warmup_days=3, test_days=1, cal_days=3, min_cal=50,
                          split_calibration=True)
    out = f.run(jobs, "memory").jobs
    return out[["submit_s", "scored", "last_two@0.5", "lightgbm@0.5", "lightgbm@0.9", "lightgbm_raw@0.9",
                "lightgbm_nocap@0.9", "quantreg@0.9", "quantreg_nocap@0.9"]]


def test_rolling_predictions_never_read_the_future(small_month):
    cut = _cut(small_month)
    got = _rolling(small_month)
    assert got.loc[got["submit_s"] < cut.timestamp(), "scored"].sum() > 500  # the check has something to check
    assert future_changes(_rolling, small_month, cut) == []


def test_training_on_submitted_jobs_is_caught(small_month, monkeypatch):
    """A harness that trains on jobs submitted (not ended) before the origin must fail the check."""
    monkeypatch.setattr(rolling, "train_mask", lambda end, submit, origin, days=None: np.asarray(submit) < origin)
    changed = future_changes(_rolling, small_month, _cut(small_month))
    assert "lightgbm_raw@0.9" in changed


def _rolling_early(jobs):
    """The habit candidates from the first origin (calibrated on every ended job, the warm-up's too), the model
    from its own warm-up."""
    from predictors.models.lineup import default_models

    names = ("lightgbm", "habit_t", "habit_max")
    f = RollingForecaster(default_models((0.5, 0.9), "memory", n_estimators=15, only=names), (0.5, 0.9),
                          warmup_days=2, model_warmup_days=4, test_days=1, cal_days=3, min_cal=50,
                          split_calibration=True, calibrated=names, select=names)
    out = f.run(jobs, "memory").jobs
    return out[["submit_s", "scored", "best@0.5", "best@0.9", "habit_t@0.9", "habit_max@0.9", "lightgbm@0.9"]]


def test_habit_candidates_before_the_models_never_read_the_future(small_month):
    start = small_month["submit_time"].min()
    cut = start + pd.Timedelta(days=3)  # inside the folds the habit candidates have alone
    got = _rolling_early(small_month)
    before = got["submit_s"] < cut.timestamp()
    assert got.loc[before, "scored"].sum() > 300  # the check has something to check
    assert got.loc[before & got["scored"], "lightgbm@0.9"].isna().all()  # no model before its warm-up
    assert future_changes(_rolling_early, small_month, cut) == []
