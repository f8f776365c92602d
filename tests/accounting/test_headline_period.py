"""The period a summary covers: first submission to last end, and for a log with no end time at all (an SWF
trace without waits) to the latest submission plus run time."""

from __future__ import annotations

import pandas as pd
import pytest

from audit.accounting import account_jobs
from audit.readers.swf import read_swf


def _swf(tmp_path, wait: int):
    f = tmp_path / "t.swf"
    f.write_text("; UnixStartTime: 1000000000\n; MaxProcs: 8\n"
                 f"1 0 {wait} 3600 4 -1 -1 4 7200 -1 1 1 1 -1 -1 1 -1 -1\n"
                 f"2 7200 {wait} 1800 2 -1 -1 2 3600 -1 1 1 1 -1 -1 1 -1 -1\n")
    return read_swf(f).jobs


def test_a_log_with_end_times_ends_at_the_last_end(tmp_path):
    s = account_jobs(_swf(tmp_path, 600)).summary
    t0 = pd.Timestamp(1_000_000_000, unit="s", tz="UTC")
    assert pd.Timestamp(s["period_end"]) == t0 + pd.Timedelta(seconds=7200 + 600 + 1800)
    assert s["period_hours"] == pytest.approx((7200 + 600 + 1800) / 3600)


def test_a_log_without_end_times_ends_no_earlier_than_its_last_submission_and_run(tmp_path):
    jobs = _swf(tmp_path, -1)
    assert jobs["end_time"].isna().all()
    s = account_jobs(jobs).summary
    t0 = pd.Timestamp(1_000_000_000, unit="s", tz="UTC")
    assert pd.Timestamp(s["period_end"]) == t0 + pd.Timedelta(seconds=7200 + 1800)
    assert s["period_hours"] == pytest.approx(2.5)


def test_no_book_prices_the_idle_of_a_log_whose_use_is_unknown(tmp_path):
    """No CPU time or memory recorded (SWF fields 6 and 7 at -1): the idle is unknown at every price book, as
    the headline's, not $0."""
    s = account_jobs(_swf(tmp_path, 600)).summary
    assert s["cost_usd_idle"] is None and s["waste_share"] is None
    assert s["cost_by_book"] and all(b["cost_usd_idle"] is None and b["cost_usd_idle_per_month"] is None
                                     for b in s["cost_by_book"].values())
    assert all(b["cost_usd_alloc"] > 0 for b in s["cost_by_book"].values())
