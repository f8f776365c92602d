"""sacct text in any field order, ``-p`` (a trailing delimiter) and any ``--delimiter``: hand-built dumps of the
same two jobs, each value worked out by hand below."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from click.testing import CliRunner

from audit.cli import main
from audit.readers.detect import detect_format
from audit.readers.sacct.text import read_sacct
from audit.textio import InputError

MiB = 2**20

#: two jobs, one with a step, as sacct prints them field by field
FIELDS = {
    "JobID": ["42", "42.batch", "43"],
    "JobIDRaw": ["42", "42.batch", "43"],
    "State": ["COMPLETED", "COMPLETED", "FAILED"],
    "AllocCPUS": ["4", "4", "2"],
    "Elapsed": ["01:00:00", "01:00:00", "00:10:00"],
    "Timelimit": ["02:00:00", "", "UNLIMITED"],
    "ReqMem": ["4000Mc", "", "16000Mn"],
    "NNodes": ["1", "1", "1"],
    "TotalCPU": ["02:00:00", "02:00:00", "00:05:00"],
    "MaxRSS": ["", "1024000K", ""],
    "NTasks": ["", "1", ""],
    "AdminComment": ["", "", ""],
}
#: the rows every layout below must give: worked by hand from FIELDS
EXPECTED = pd.DataFrame({
    "job_id": ["42", "43"],
    "state": ["COMPLETED", "FAILED"],
    "alloc_cpus": [4.0, 2.0],
    "elapsed_s": [3600, 600],
    "time_limit_s": [7200, None],
    "req_mem_bytes": [4000 * 4 * MiB, 16000 * MiB],  # 4000 MiB per CPU x 4 CPUs; 16000 MiB per node x 1 node
    "cpu_used_s": [7200.0, 300.0],
    "mem_peak_bytes": [1024000 * 1024, None],  # the batch step's MaxRSS (one task)
    "source_line": [2, 4],  # line 1 is the header; 42.batch is line 3
})


def _dump(order, delim="|", trailing=False, header=True) -> str:
    rows = [list(order)] if header else []
    rows += [[FIELDS[name][k] for name in order] for k in range(3)]
    end = delim if trailing else ""
    return "".join(delim.join(r) + end + "\n" for r in rows)


def _check(jobs: pd.DataFrame, source_line=True) -> None:
    got = jobs.set_index("job_id")
    for _, want in EXPECTED.iterrows():
        row = got.loc[want["job_id"]]
        for col in EXPECTED.columns:
            if col == "job_id" or (col == "source_line" and not source_line):
                continue
            if pd.isna(want[col]):
                assert pd.isna(row[col]), (want["job_id"], col, row[col])
            else:
                assert row[col] == want[col], (want["job_id"], col, row[col])


def _read(tmp_path, text, **kw):
    f = tmp_path / "sacct.txt"
    f.write_text(text, encoding="utf-8")
    return read_sacct(f, **kw), f


REPORTSEFF = sorted(FIELDS, key=str.lower)  # reportseff asks for its fields in alphabetical order
JOBID_LAST = [n for n in FIELDS if n != "JobID"] + ["JobID"]
JOBID_MIDDLE = ["State", "AllocCPUS", "Elapsed", "Timelimit", "ReqMem", "JobID", "JobIDRaw", "NNodes", "TotalCPU",
                "MaxRSS", "NTasks", "AdminComment"]


@pytest.mark.parametrize("order", [list(FIELDS), JOBID_LAST, JOBID_MIDDLE, REPORTSEFF],
                         ids=["jobid-first", "jobid-last", "jobid-middle", "admincomment-first"])
def test_any_field_order_is_detected_and_read(tmp_path, order):
    res, f = _read(tmp_path, _dump(order))
    assert detect_format(f) == "sacct"
    _check(res.jobs)
    led = res.ledger
    assert (led.read, led.used, led.folded, led.quarantined, led.structural) == (3, 2, 1, 0, 1)


def test_every_rotation_of_the_fields(tmp_path):
    names = list(FIELDS)
    for k in range(len(names)):
        res, _ = _read(tmp_path, _dump(names[k:] + names[:k]))
        _check(res.jobs)


def test_header_case_as_printed_or_not(tmp_path):
    order = [n.lower() for n in REPORTSEFF]
    res, f = _read(tmp_path, _dump(REPORTSEFF).replace("|".join(REPORTSEFF), "|".join(order), 1))
    assert detect_format(f) == "sacct"
    _check(res.jobs)


def test_parsable_with_trailing_delimiter(tmp_path):
    res, f = _read(tmp_path, _dump(REPORTSEFF, trailing=True))
    assert detect_format(f) == "sacct"
    _check(res.jobs)
    assert res.ledger.quarantined == 0


def test_custom_delimiter_needs_to_be_named(tmp_path):
    text = _dump(JOBID_MIDDLE, delim=";")
    res, _ = _read(tmp_path, text, delimiter=";")
    _check(res.jobs)
    with pytest.raises(InputError, match="no header line"):
        _read(tmp_path, text)  # read with "|", the line is one field


def test_custom_delimiter_from_the_command_line(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text(_dump(REPORTSEFF, delim="#", trailing=True), encoding="utf-8")
    out = tmp_path / "store"
    r = CliRunner().invoke(main, ["ingest", str(src), "--out", str(out), "--format", "sacct", "--delimiter", "#"])
    assert r.exit_code == 0, r.output
    _check(pd.read_parquet(out / "jobs.parquet"))


def test_the_reportseff_order_was_refused_before(tmp_path):
    # the case: with --format sacct the reportseff header read as "no header line and 12 fields"
    src = tmp_path / "in.txt"
    src.write_text(_dump(REPORTSEFF), encoding="utf-8")
    r = CliRunner().invoke(main, ["ingest", str(src), "--out", str(tmp_path / "s"), "--format", "sacct"])
    assert r.exit_code == 0, r.output


def test_multi_character_delimiter(tmp_path):
    res, _ = _read(tmp_path, _dump(JOBID_LAST, delim="^|^"))
    _check(res.jobs)


def test_line_by_line_path_gives_the_same_rows(tmp_path):
    # a blank line and a carriage return send the file down the line-by-line path; values and ledger agree
    text = _dump(JOBID_MIDDLE)
    lines = text.splitlines()
    res, _ = _read(tmp_path, "\r\n".join(lines[:2] + [""] + lines[2:]) + "\r\n")
    exp = EXPECTED.assign(source_line=[2, 5])
    got = res.jobs.set_index("job_id")
    assert got.loc["42", "source_line"] == exp["source_line"][0] and got.loc["43", "source_line"] == 5
    _check(res.jobs, source_line=False)
    assert (res.ledger.read, res.ledger.structural) == (3, 2)


def test_repeated_headers_of_concatenated_dumps(tmp_path):
    text = _dump(REPORTSEFF)
    lines = text.splitlines()
    res, _ = _read(tmp_path, "\n".join(lines[:3] + [lines[0]] + lines[3:]) + "\n")
    assert (res.ledger.read, res.ledger.structural, res.ledger.quarantined) == (3, 2, 0)
    got = res.jobs.set_index("job_id")
    assert got.loc["43", "source_line"] == 5  # after the second header line


def test_headerless_known_order_with_trailing_delimiter(tmp_path):
    # the 26-field XDMoD order as sacct -p --noheader prints it
    line = ("7|7|c1|cpu|normal|acct|grp|100|alice|1000|2024-03-01T10:00:00|2024-03-01T10:00:00|"
            "2024-03-01T10:05:00|2024-03-01T11:05:00|01:00:00|0:0|COMPLETED|1|4|4|4000Mc|cpu=4,node=1|"
            "billing=4,cpu=4,mem=16000M,node=1|02:00:00|n01|job|")
    res, f = _read(tmp_path, line + "\n")
    assert detect_format(f) == "sacct"
    j = res.jobs.iloc[0]
    assert (j["job_id"], j["alloc_cpus"], j["elapsed_s"], j["job_name"]) == ("7", 4, 3600, "job")


def test_a_bad_line_is_quarantined_with_its_number_in_any_order(tmp_path):
    text = _dump(JOBID_LAST)
    lines = text.splitlines()
    res, _ = _read(tmp_path, "\n".join(lines[:2] + ["only|three|fields"] + lines[2:]) + "\n")
    q = res.quarantine.rows
    assert [(r[1], r[2]) for r in q] == [(3, "line")]  # (file, line, field, reason, raw)
    assert res.ledger.balanced and res.ledger.read == 4
    _check(res.jobs, source_line=False)


def test_header_without_jobid_is_an_error(tmp_path):
    order = [n for n in FIELDS if n not in ("JobID", "JobIDRaw")]
    with pytest.raises(InputError, match="no JobID"):
        _read(tmp_path, "|".join(order) + "\n" + "|".join(FIELDS[n][0] for n in order) + "\n")


def test_permutations_of_a_small_header(tmp_path):
    small = ["JobID", "AllocCPUS", "Elapsed", "TotalCPU"]
    values = {"JobID": "5", "AllocCPUS": "2", "Elapsed": "00:30:00", "TotalCPU": "00:45:00"}
    for order in itertools.permutations(small):
        res, _ = _read(tmp_path, "|".join(order) + "\n" + "|".join(values[n] for n in order) + "\n")
        j = res.jobs.iloc[0]
        assert (j["job_id"], j["alloc_cpus"], j["elapsed_s"], j["cpu_used_s"]) == ("5", 2, 1800, 2700.0)
