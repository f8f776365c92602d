"""Allocation-only sacct dumps (one line per job, the ``sacct -X`` / XDMoD shape): the fixed-shape byte readers and
the once-per-distinct-value parsing give the values worked by hand here, and bad fields are still quarantined with
their file, line and field."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.readers.sacct.shapes import parse_clock, parse_iso_utc, plain_numbers
from audit.readers.sacct.text import read_sacct
from audit.units import parse_duration, parse_timestamp
from tests.profiles import examples

MIB = 1024**2


def test_clock_shapes_hand_worked():
    text = ["00:00:00", "01:02:03", "1-02:03:04", "12-00:00:01", "05:06.5", "2-12", "30", "UNLIMITED", "",
            "1-2x:00:00", " 01:00:00"]
    val, bad = parse_clock(pa.array(text))
    # 1 h 2 min 3 s; 1 d 2 h 3 min 4 s = 86400 + 7200 + 180 + 4; 12 d + 1 s; 5 min 6.5 s; 2 d 12 h; 30 min
    want = [0, 3723, 93784, 1036801, 306.5, 216000, 1800, np.nan, np.nan, np.nan, 3600]
    np.testing.assert_array_equal(val, want)
    assert bad.tolist() == [False] * 9 + [True, False]


def test_iso_timestamps_hand_worked():
    text = ["2016-12-01T00:00:00", "2016-02-29T23:59:59", "Unknown", "1480550400", "", "2016-13-01T00:00:00"]
    val, bad = parse_iso_utc(pa.array(text))
    # epoch seconds from `date -u -d 2016-12-01T00:00:00Z +%s` and `date -u -d @1456790399`
    want = np.array([1480550400, 1456790399, "NaT", 1480550400, "NaT", "NaT"], dtype="datetime64[s]")
    np.testing.assert_array_equal(val, want)
    assert bad.tolist() == [False, False, False, False, False, True]


def test_plain_numbers():
    assert plain_numbers(pa.array(["1", "20", "300"]))
    assert not plain_numbers(pa.array(["1", "20_3"]))
    assert not plain_numbers(pa.array(["1", ""]))
    assert not plain_numbers(pa.array(["1", None]))
    assert not plain_numbers(pa.array(["1", "٣"]))


SHAPES = st.text(alphabet="0123456789:-T. x", max_size=22)


@settings(max_examples=examples(100))
@given(st.lists(st.one_of(SHAPES, st.sampled_from(["01:02:03", "3-04:05:06", "2016-12-01T00:00:00"])), min_size=1))
def test_byte_readers_agree_with_the_general_parsers(entries):
    a = pa.array(entries)
    for fast, general in ((parse_clock, parse_duration), (parse_iso_utc, lambda x: parse_timestamp(x, "UTC"))):
        v1, b1 = fast(a)
        v2, b2 = general(a)
        np.testing.assert_array_equal(v1, v2)
        assert b1.tolist() == b2.tolist()


def _line(job, state="COMPLETED", elapsed="01:00:00", reqmem="4000Mc", alloc="billing=8,cpu=8,mem=32000M,node=1",
          exit_code="0:0"):
    return "|".join([
        str(job), str(job), "c1", "cpu", "normal", "acct", "grp", "100", "u1", "1000",
        "2024-01-01T00:00:00", "2024-01-01T00:00:00", "2024-01-01T00:10:00", "2024-01-01T01:10:00", elapsed,
        exit_code, state, "1", "8", "8", reqmem, "cpu=8,node=1", alloc, "2-00:00:00", "n01", "job",
    ])


def test_allocation_only_dump(tmp_path):
    """200 jobs of a few repeated shapes (enough for the per-distinct-value path), three of them with a bad field."""
    lines = []
    for k in range(200):
        job = 5000 + k
        if k % 4 == 1:
            lines.append(_line(job, state="CANCELLED by 42", reqmem="2147486648Mn", exit_code="0:15",
                               alloc="billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=32000M,node=1"))
        elif k % 4 == 2:
            lines.append(_line(job, state="TIMEOUT", elapsed="1-02:03:04", reqmem="16G"))
        else:
            lines.append(_line(job))
    lines[100] = _line(5100, elapsed="1-2x:00:00")
    lines[150] = _line(5150, state="BOGUS")
    lines[170] = _line(5170, alloc="cpu=x,node=1")
    f = tmp_path / "alloc.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = read_sacct(f)
    led = r.ledger
    assert (led.read, led.used, led.quarantined) == (200, 197, 3) and led.balanced
    assert sorted((row[1], row[2]) for row in r.quarantine.rows) == [(101, "Elapsed"), (151, "State"),
                                                                       (171, "AllocTRES")]
    jobs = r.jobs.set_index("job_id")
    plain, cancelled, timeout = jobs.loc["5000"], jobs.loc["5001"], jobs.loc["5002"]
    assert plain["state"] == "COMPLETED" and plain["elapsed_s"] == 3600 and plain["time_limit_s"] == 2 * 86400
    assert plain["req_mem_bytes"] == 4000 * MIB * 8  # 4000 MB per CPU × 8 CPUs
    assert plain["alloc_mem_bytes"] == 32000 * MIB and plain["alloc_gpus"] == 0 and plain["exit_code"] == 0
    assert cancelled["state"] == "CANCELLED" and cancelled["signal"] == 15
    assert cancelled["req_mem_bytes"] == 3000 * MIB * 8  # 2**31 + 3000: the legacy per-CPU flag, 3000 MB per CPU
    assert cancelled["alloc_gpus"] == 2 and cancelled["gpu_type"] == "a100"
    assert timeout["state"] == "TIMEOUT" and timeout["elapsed_s"] == 93784
    assert timeout["req_mem_bytes"] == 16 * 1024**3 and "reqmem_assumed_total" in timeout["caveats"]
    assert str(plain["start_time"]) == "2024-01-01 00:10:00+00:00"
    assert plain["source_file"] == str(f) and plain["source_line"] == 1
    assert jobs.loc["5003", "source_line"] == 4
