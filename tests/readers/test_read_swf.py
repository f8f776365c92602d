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


ROW = "-1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1"


def test_line_breaks_blanks_and_comments_are_counted_as_the_text_has_them(tmp_path):
    """Lines end in CR LF, blank and comment lines sit between the jobs, fields are split by tabs and runs of
    spaces: line numbers count every line (1-based), the blank and comment ones are structural."""
    f = tmp_path / "crlf.swf"
    f.write_bytes(("; UnixStartTime: 1000000000\r\n\r\n   \r\n"
                   f"1 0 5 10 2 {ROW}\r\n"
                   "; a note between jobs\r\n"
                   f"\t2  3\t5 10 2 {ROW}   \r\n").encode())
    r = read_swf(f)
    assert r.jobs["job_id"].tolist() == ["1", "2"]
    assert r.jobs["source_line"].tolist() == [4, 6]
    assert r.jobs["submit_time"].tolist() == [pd.Timestamp(1_000_000_000, unit="s", tz="UTC"),
                                              pd.Timestamp(1_000_000_003, unit="s", tz="UTC")]
    assert r.ledger.read == 2 and r.ledger.structural == 4 and r.ledger.used == 2 and r.ledger.balanced


def test_text_that_is_not_ascii_reads_as_the_same_table(tmp_path):
    """A header with a non-ASCII character (read line by line) gives the table the ASCII file gives."""
    body = f"1 0 5 10 2 {ROW}\n2 3 5 10 2 {ROW}\n"
    plain, accented = tmp_path / "plain.swf", tmp_path / "accented.swf"
    plain.write_text("; Note: cafe\n" + body, encoding="utf-8")
    accented.write_text("; Note: caf\u00e9\n" + body, encoding="utf-8")
    a, b = read_swf(plain), read_swf(accented)
    pd.testing.assert_frame_equal(a.jobs.drop(columns=["source_file", "cluster"]),
                                  b.jobs.drop(columns=["source_file", "cluster"]))
    assert b.jobs["source_line"].tolist() == [2, 3] and b.ledger.structural == 1


def test_a_value_that_is_no_number_of_seconds_is_quarantined(tmp_path):
    """``inf`` and ``nan`` parse as floats but are no run time or processor count: the line is quarantined
    (it used to stop the run when turned into a time)."""
    f = tmp_path / "inf.swf"
    f.write_text(HEADER + f"1 0 5 10 2 {ROW}\n2 0 5 inf 2 {ROW}\n3 0 5 10 nan {ROW}\n")
    r = read_swf(f)
    assert r.jobs["job_id"].tolist() == ["1"]
    assert [(q[1], q[2], q[3]) for q in r.quarantine.rows] == [(4, "run", "not a number"),
                                                                (5, "alloc_procs", "not a number")]
    assert r.ledger.read == 3 and r.ledger.quarantined == 2 and r.ledger.balanced


def test_the_header_declares_one_pool_of_its_processors(tmp_path):
    f = tmp_path / "t.swf"
    f.write_text(HEADER + "7 100 20 300 4 250 1024 4 600 2048 1 3 5 9 2 1 -1 -1\n")
    shape = read_swf(f).cluster_shape
    assert shape["procs"] == 8 and "MaxProcs 8" in shape["inferred"]
    for header in ("; MaxProcs: -1\n", "; MaxProcs: 2.5\n", "; MaxNodes: 8\n", ""):
        f.write_text(header + "7 100 20 300 4 250 1024 4 600 2048 1 3 5 9 2 1 -1 -1\n")
        assert read_swf(f).cluster_shape is None, header


def test_kth_header_declares_its_hundred_processors():
    assert read_swf(trace("swf", "KTH-SP2-1996-2.1-cln.swf.gz")).cluster_shape["procs"] == 100
