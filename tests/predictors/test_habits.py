"""Habit histories and strata, worked by hand (predictors.features.habits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit.job_table import conform
from predictors.features import habit_history, members, parent, sizes, strata
from predictors.features.habits import decayed_quantile

GIB = 2**30
T0 = pd.Timestamp("2026-01-01", tz="UTC")
DAY = pd.Timedelta(days=1)


def _jobs(rows) -> pd.DataFrame:
    """``rows``: (user, name, mem_gib asked, submit day, end day, peak GiB)."""
    frame = pd.DataFrame([{
        "cluster": "hand", "job_id": f"j{i}", "source": "hand", "user": u, "account": "a", "partition": "p",
        "qos": "normal", "job_name": name, "submit_time": T0 + s * DAY, "start_time": T0 + s * DAY,
        "end_time": T0 + e * DAY, "elapsed_s": int((e - s) * 86400), "time_limit_s": 7 * 86400, "state": "COMPLETED",
        "exit_code": 0, "req_nodes": 1, "req_cpus": 4, "req_mem_bytes": int(asked * GIB), "req_gpus": 0,
        "alloc_nodes": 1, "alloc_cpus": 4, "alloc_mem_bytes": int(asked * GIB), "alloc_gpus": 0,
        "cpu_used_s": 1.0, "mem_peak_bytes": int(peak * GIB)} for i, (u, name, asked, s, e, peak) in enumerate(rows)])
    return conform(frame)


def test_a_habit_sees_only_its_own_ended_jobs():
    jobs = _jobs([
        ("ann", "run_1", 16, 0.0, 1.0, 4),    # 0: ended day 1
        ("ann", "run_2", 16, 0.5, 2.0, 8),    # 1: same habit (family run_#), submitted before job 0 ended
        ("ann", "run_3", 16, 1.5, 30.0, 15),  # 2: still running at every later submission
        ("ann", "run_4", 32, 2.5, 3.0, 30),   # 3: another request: another habit
        ("bob", "run_5", 16, 2.5, 3.0, 1),    # 4: another user
        ("ann", "run_6", 16, 20.0, 21.0, 5),  # 5: sees jobs 0 and 1 (ended days 1, 2), not 2; 18 days after the last
    ])
    h = habit_history(jobs, "memory")
    assert h["habit_count"].tolist() == [0, 0, 1, 0, 0, 2]
    assert h.loc[5, "habit_max"] == pytest.approx(8 * GIB)
    assert h.loc[5, "habit_last1"] == pytest.approx(8 * GIB)
    assert np.isnan(h.loc[5, "habit_krr"])  # nothing ended in the last 14 days
    assert h.loc[2, "habit_krr"] == pytest.approx(4 * GIB)  # submitted day 1.5: job 0 only
    sd = np.std(np.log(np.array([4, 8]) * GIB + 2**20), ddof=1)  # memory's log offset is 1 MiB
    assert h.loc[5, "habit_logsd"] == pytest.approx(sd)
    assert np.isnan(h.loc[1, "habit_logsd"])  # one value has no spread
    share = np.log(np.array([4, 8]) / 16 / (1 - np.array([4, 8]) / 16))  # logit of 4 and 8 GiB of the 16 asked
    assert h.loc[5, "habit_share_n"] == 2
    assert h.loc[5, "habit_share_mean"] == pytest.approx(share.mean())
    assert h.loc[5, "habit_share_sd"] == pytest.approx(np.std(share, ddof=1))
    assert h.loc[2, "habit_share_mean"] == pytest.approx(np.log(4 / 12)) and np.isnan(h.loc[2, "habit_share_sd"])


def test_decayed_quantile_by_hand():
    values = np.array([[1.0, 2.0, 3.0, np.nan]])
    ages = np.array([[0.0, 48 * 3600.0, 96 * 3600.0, 0.0]])  # weights 1, 0.5, 0.25 (half-life 48 h)
    assert decayed_quantile(values, ages, 0.98, 48 * 3600.0)[0] == 3.0  # 1.715 of 1.75 needs all three
    assert decayed_quantile(values, ages, 0.5, 48 * 3600.0)[0] == 1.0   # 0.875: the first weighs 1
    assert decayed_quantile(values, ages, 0.8, 48 * 3600.0)[0] == 2.0   # 1.4: 1 + 0.5
    assert np.isnan(decayed_quantile(np.full((1, 3), np.nan), np.zeros((1, 3)), 0.5, 1.0)[0])


def test_strata_by_history_strength_and_dispersion():
    h = pd.DataFrame({"habit_count": [0, 1, 2, 5, 9, 10, 30, 50],
                      "habit_logsd": [np.nan, np.nan, 0.0, 0.3, 0.1, 0.05, 0.39, 0.41]})
    assert list(strata(h)) == ["cold", "cold", "short_tight", "short_loose", "short_tight", "long_tight",
                               "long_spread", "long_wide"]


def test_size_classes_by_hand():
    # asked x limit: 1x10, 2x10, 3x10, 4x10, 5x10 and one without a limit (the longest seen, 10)
    asked = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, np.nan])
    limit = np.array([10.0, 10.0, 10.0, 10.0, 10.0, np.nan, 10.0])
    got = sizes(asked, limit, classes=2)  # one cut: the median of 10, 20, ..., 60 is 35
    assert list(got) == ["q1", "q1", "q1", "q2", "q2", "q2", None]
    assert list(sizes(np.array([1.0, 1.0]), None, classes=5)) == ["q1", "q1"]  # ties stay together


def test_a_stratum_borrows_from_its_history_stratum_then_its_class():
    h = pd.DataFrame({"habit_count": [0, 12], "habit_logsd": [np.nan, 0.2]})
    got = strata(h, np.array(["q5", "q1"], dtype=object))
    assert list(got) == ["cold/q5", "long_spread/q1"]
    assert [parent("long_spread/q1"), parent("long_spread"), parent("long"), parent("cold")] == \
        ["long_spread", "long", None, None]
    s = np.array(["long_spread/q1", "long_spread/q2", "long_wide/q1", "short_tight/q1"], dtype=object)
    assert list(members("long_spread", s)) == [True, True, False, False]
    assert list(members("long", s)) == [True, True, True, False]
    assert list(members("long_spread/q2", s)) == [False, True, False, False]
