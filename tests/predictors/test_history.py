"""Past-only history against a brute-force oracle written as the definition reads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.job_table import conform
from predictors.features.history import past_stats
from predictors.features.submission import in_flight, submission_features
from tests.profiles import examples


def brute(group, submit, end, value, window, age=None):
    """For each job: the group's values that ended strictly before its submission, oldest first."""
    out = []
    for g, s in zip(group, submit, strict=True):
        ok = [(e, v) for gg, e, v in zip(group, end, value, strict=True)
              if gg == g and g >= 0 and np.isfinite(v) and np.floor(e) < np.floor(s)
              and (age is None or np.floor(e) >= np.floor(s - age))]
        ok.sort(key=lambda t: t[0])
        out.append([v for _, v in ok])
    return out


def test_hand_case():
    # user 0: jobs ending at 10 and 20 with values 1 and 3; a job submitted at 20 sees only the first
    group = np.array([0, 0, 0, 1])
    submit = np.array([0.0, 5.0, 20.0, 25.0])
    end = np.array([10.0, 20.0, 30.0, 26.0])
    value = np.array([1.0, 3.0, 5.0, 7.0])
    s = past_stats(group, submit, end, value, window=5)
    np.testing.assert_array_equal(s["count"], [0, 0, 1, 0])
    assert s["last1"][2] == 1.0 and np.isnan(s["last2"][2])
    assert np.isnan(s["mean"][0]) and s["mean"][2] == 1.0
    assert s["since_last_s"][2] == 10.0
    # user 1's own value never enters its history, nor does user 0's
    assert np.isnan(s["last1"][3])


def test_last_two_and_mean_after_many():
    group = np.zeros(6, dtype=int)
    end = np.arange(1, 7, dtype=float) * 10
    submit = end - 5
    value = np.array([1, 2, 3, 4, 5, 6], dtype=float)
    s = past_stats(group, np.append(submit[:-1], 100.0), end, value, window=3)
    # the last job (submitted at 100) sees all six... except itself (it ends at 60 < 100: it is in the past
    # of its own submission only if it ended before it, which cannot happen for real data)
    assert s["last1"][-1] == 6 and s["last2"][-1] == 5
    assert s["q50"][-1] == 5.0  # median of the last three (4, 5, 6)
    assert s["max"][-1] == 6.0
    assert s["mean"][-1] == pytest.approx(3.5)


@settings(max_examples=examples(60))
@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(0, 50), st.integers(0, 40),
                          st.one_of(st.none(), st.floats(0, 100, allow_nan=False))), min_size=1, max_size=40),
       st.integers(1, 6))
def test_matches_brute_force(rows, window):
    group = np.array([r[0] for r in rows])
    submit = np.array([float(r[1]) for r in rows])
    end = submit + np.array([float(r[2]) for r in rows])
    value = np.array([np.nan if r[3] is None else r[3] for r in rows])
    s = past_stats(group, submit, end, value, window=window, quantiles=(0.5, 0.9),
                   age_windows={"recent_max": (15.0, "max", 0), "recent_q9": (15.0, 0.9, 64),
                                "recent_n": (15.0, "count", 0)})
    hist = brute(group, submit, end, value, window)
    recent = brute(group, submit, end, value, window, age=15.0)
    for i, h in enumerate(hist):
        assert s["count"][i] == len(h)
        if h:
            assert s["mean"][i] == pytest.approx(np.mean(h))
            assert s["last1"][i] == h[-1]
            w = h[-window:]
            assert s["q50"][i] == pytest.approx(np.quantile(w, 0.5))
            assert s["q90"][i] == pytest.approx(np.quantile(w, 0.9))
            assert s["max"][i] == max(w)
            assert s["wmean"][i] == pytest.approx(np.mean(w))
        else:
            assert np.isnan(s["mean"][i]) and np.isnan(s["last1"][i]) and np.isnan(s["max"][i])
            assert np.isnan(s["wmean"][i])
        if len(h) >= 2:
            assert s["last2"][i] == h[-2]
        r = recent[i]
        assert s["recent_n"][i] == len(r)
        if r:
            assert s["recent_max"][i] == max(r)
            assert s["recent_q9"][i] == pytest.approx(np.quantile(r, 0.9))
        else:
            assert np.isnan(s["recent_max"][i]) and np.isnan(s["recent_q9"][i])


def test_in_flight_by_hand():
    # user 0 submits at 0, 10, 20; the first ends at 15, the second at 40: the third sees one in flight
    group = np.array([0, 0, 0, 1, -1])
    submit = np.array([0.0, 10.0, 20.0, 12.0, 30.0])
    end = np.array([15.0, 40.0, 25.0, 50.0, 35.0])
    got = in_flight(group, submit, end)
    np.testing.assert_array_equal(got[:4], [0, 1, 1, 0])
    assert np.isnan(got[4])


def test_same_shape_history_and_hit_share():
    # one user, two request shapes: the history of a shape reads only that shape's past runs
    t = pd.Timestamp("2026-01-05", tz="UTC")
    jobs = pd.DataFrame({
        "cluster": "c", "job_id": ["1", "2", "3", "4"], "user": ["a"] * 4, "account": "x", "partition": "p",
        "job_name": ["run"] * 4, "state": "COMPLETED",
        "time_limit_s": [3600, 600, 3600, 600], "req_cpus": 4, "alloc_cpus": 4, "req_nodes": 1,
        "submit_time": [t, t + pd.Timedelta(seconds=10), t + pd.Timedelta(hours=3), t + pd.Timedelta(hours=4)],
        "elapsed_s": [3500, 599, 100, 50]})
    jobs["start_time"] = jobs["submit_time"]
    jobs["end_time"] = jobs["submit_time"] + pd.to_timedelta(jobs["elapsed_s"], unit="s")
    jobs = conform(jobs)
    X = submission_features(jobs, "walltime")
    assert X["usershape_last1"].iloc[2] == 3500.0 and X["usershape_last1"].iloc[3] == 599.0
    assert X["user_last1"].iloc[3] == 100.0
    # both earlier runs used ≥ 95 % of their limit; by the fourth job one of three had
    assert X["user_hit_share"].iloc[2] == 1.0 and X["user_hit_share"].iloc[3] == pytest.approx(2 / 3)
    assert X["usershape_in_flight"].iloc[1] == 0 and X["user_in_flight"].iloc[1] == 1
