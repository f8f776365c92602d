"""The SWF reader: field mapping by hand, malformed lines quarantined with their line and field."""

from __future__ import annotations

import pandas as pd

from audit.readers.swf import read_swf

from ..conftest import trace

HEADER = "; UnixStartTime: 1000000000\n; MaxProcs: 8\n"


def test_fields_map_to_the_canonical_table(tmp_path):
    f = tmp_path / "t.swf"
    f.write_text(HEADER + "7 100 20 300 4 250 1024 4 600 2048 1 3 5 9 2 1 -1 -1\n")
    r = read_swf(f)
    j = r.jobs.iloc[0]
    t0 = pd.Timestamp(1_000_000_000, unit="s", tz="UTC")
    assert j["job_id"] == "7" and j["source_line"] == 3 and j["user"] == "3" and j["account"] == "5"
    assert j["submit_time"] == t0 + pd.Timedelta(seconds=100)
    assert j["start_time"] == t0 + pd.Timedelta(seconds=120)
    assert j["end_time"] == t0 + pd.Timedelta(seconds=420)
    assert j["elapsed_s"] == 300 and j["time_limit_s"] == 600 and j["alloc_cpus"] == 4 and j["req_cpus"] == 4
    assert j["cpu_used_s"] == 250 * 4  # field 6 is average CPU time per processor
    assert j["mem_peak_bytes"] == 1024 * 1024 * 4 and j["req_mem_bytes"] == 2048 * 1024 * 4
    assert j["state"] == "COMPLETED" and j["qos"] == "2" and j["partition"] == "1" and j["job_name"] == "9"
    assert r.ledger.structural == 2 and r.ledger.balanced


def test_malformed_lines_quarantined(tmp_path):
    f = tmp_path / "bad.swf"
    f.write_text(HEADER + "1 0 5 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n"
                 "2 0 5 10 x -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n"
                 "3 0 5 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1\n\n"
                 "4 0 5 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1 9\n")
    r = read_swf(f)
    assert r.ledger.read == 4 and r.ledger.used == 1 and r.ledger.quarantined == 3 and r.ledger.balanced
    assert [(q[1], q[2]) for q in r.quarantine.rows] == [(4, "alloc_procs"), (5, "line"), (7, "line")]
    assert r.jobs["job_id"].tolist() == ["1"] and pd.isna(r.jobs["cpu_used_s"].iloc[0])


def test_kth_header_and_counts():
    r = read_swf(trace("swf", "KTH-SP2-1996-2.1-cln.swf.gz"))
    assert len(r.jobs) == 27_992 and r.ledger.quarantined == 0
    assert r.jobs["submit_time"].min() >= pd.Timestamp(843480031, unit="s", tz="UTC")
