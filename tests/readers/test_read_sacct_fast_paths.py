"""The fast paths of sacct text reading give what the line-by-line reading gives: blank lines and lines of empty
fields in an otherwise regular dump, a gzip-compressed dump, and timestamps read as a table of bytes (calendar
rules: leap years, month lengths; epoch seconds from GNU ``date -u -d … +%s``)."""

from __future__ import annotations

import gzip

import numpy as np
import pyarrow as pa

from audit.readers.sacct.shapes import _iso_seconds, parse_iso_utc
from audit.readers.sacct.text import read_sacct

HEADER = "JobID|State|Elapsed|NCPUS\n"


def test_blank_line_between_records_is_structural(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text(HEADER + "1|COMPLETED|00:10:00|4\n\n2|FAILED|00:00:05|1\n")
    r = read_sacct(f)
    led = r.ledger
    # 4 lines: the header and the blank line are structural, the two jobs used
    assert (led.read, led.used, led.structural, led.quarantined) == (2, 2, 2, 0)
    assert r.jobs["job_id"].tolist() == ["1", "2"]
    assert r.jobs["elapsed_s"].tolist() == [600, 5]
    assert r.jobs["source_line"].tolist() == [2, 4]


def test_trailing_blank_lines_are_structural(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text(HEADER + "1|COMPLETED|00:10:00|4\n\n\n")
    led = read_sacct(f).ledger
    assert (led.read, led.used, led.structural, led.quarantined) == (1, 1, 3, 0)


def test_line_of_empty_fields_is_quarantined(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text(HEADER + "1|COMPLETED|00:10:00|4\n|||\n2|FAILED|00:00:05|1\n")
    r = read_sacct(f)
    led = r.ledger
    assert (led.read, led.used, led.structural, led.quarantined) == (3, 2, 1, 1)
    ((_, line, field, _, raw),) = r.quarantine.rows
    assert (line, field, raw) == (3, "JobID", "|||")


def test_gzip_dump_reads_as_the_plain_one(tmp_path):
    text = HEADER + "1|COMPLETED|00:10:00|4\n2|TIMEOUT|1-00:00:00|8\n"
    plain, packed = tmp_path / "sacct.txt", tmp_path / "sacct.txt.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    a, b = read_sacct(plain), read_sacct(packed)
    assert b.jobs["elapsed_s"].tolist() == [600, 86400]
    assert a.jobs.drop(columns="source_file").equals(b.jobs.drop(columns="source_file"))
    assert (b.ledger.read, b.ledger.used, b.ledger.structural) == (2, 2, 1)


def test_iso_table_of_bytes_calendar():
    text = ["2000-02-29T12:00:00", "1901-01-01T00:00:00", "2199-12-31T23:59:59", "2024-04-30T08:15:30",
            "2024-01-01T24:00:00", "Unknown"]
    val, bad = parse_iso_utc(pa.array(text))
    # 2000 is a leap year (divisible by 400); 24:00 is no clock time
    want = np.array([951825600, -2177452800, 7258118399, 1714464930, "NaT", "NaT"], dtype="datetime64[s]")
    np.testing.assert_array_equal(val, want)
    assert bad.tolist() == [False, False, False, False, True, False]


def test_iso_rows_not_of_the_calendar_are_left_to_the_general_parser():
    rows = ["2100-02-29T00:00:00", "2024-04-31T00:00:00", "2024-02-29T00:00:00", "1900-12-31T23:59:59",
            "2200-01-01T00:00:00", "2024-13-01T00:00:00", "2024-00-10T00:00:00", "2024-01-00T00:00:00",
            "2024-01-01T00:60:00", "2024-01-01 00:00:00"]
    table = np.frombuffer("".join(rows).encode(), dtype=np.uint8).reshape(len(rows), 19)
    secs, ok = _iso_seconds(table)
    # 2100 is no leap year (divisible by 100, not by 400), April has 30 days, 2024 is a leap year; the years read
    # here are 1901 to 2199
    assert ok.tolist() == [False, False, True, False, False, False, False, False, False, False]
    assert secs[2] == 1709164800  # date -u -d 2024-02-29T00:00:00Z +%s


def test_iso_every_entry_the_same_width():
    val, bad = parse_iso_utc(pa.array(["2016-12-01T00:00:04", "1969-12-31T23:59:59"] * 40))
    assert val[:2].astype(np.int64).tolist() == [1480550404, -1] and not bad.any()
