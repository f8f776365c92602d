"""Every real sacct and SWF file ingests through the CLI with exit 0 and a balanced ledger."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from audit.cli import main
from audit.job_table import JOB_COLUMNS

from .conftest import TRACES


def _real_files():
    if not TRACES.exists():
        return []
    files = sorted((TRACES / "sacct").rglob("*.log")) + sorted((TRACES / "swf").glob("*.swf*"))
    return [pytest.param(f, id=str(f.relative_to(TRACES))) for f in files]


@pytest.mark.shared
@pytest.mark.parametrize("path", _real_files() or [pytest.param(None, marks=pytest.mark.skip("no traces"))])
def test_real_file_ingests_balanced(path, tmp_path):
    res = CliRunner().invoke(main, ["ingest", str(path), "--out", str(tmp_path / "store")])
    assert res.exit_code == 0, res.output
    ledger = json.loads((tmp_path / "store" / "ledger.json").read_text())
    assert ledger["balanced"]
    for f in ledger["files"]:
        assert f["read"] == f["used"] + f["folded"] + f["quarantined"]
    jobs = pd.read_parquet(tmp_path / "store" / "jobs.parquet")
    assert list(jobs.columns) == list(JOB_COLUMNS)
    assert len(jobs) == ledger["totals"]["jobs_emitted"]
    assert "files:" in res.output and "jobs:" in res.output


@pytest.mark.shared
def test_json_folder_ingests_balanced(tmp_path):
    folder = TRACES / "sacct" / "slurmrestd-json"
    if not folder.exists():
        pytest.skip("no slurmrestd json traces")
    pytest.importorskip("audit.readers.sacct.json_jobs")
    res = CliRunner().invoke(main, ["ingest", str(folder), "--out", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "s" / "ledger.json").read_text())["balanced"]


def test_unreadable_file_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(main, ["ingest", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "missing.txt" in res.output and "no such file" in res.output


def test_unknown_format_named_directly_is_an_error(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello world\n")
    res = CliRunner().invoke(main, ["ingest", str(f), "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "notes.txt" in res.output


def test_store_registers_duckdb_table(tmp_path):
    import duckdb

    f = tmp_path / "sacct.txt"
    f.write_text("JobID|State|Elapsed|NCPUS\n1|COMPLETED|00:10:00|4\n2|FAILED|00:00:05|1\nbad|X|Y|Z\n")
    res = CliRunner().invoke(main, ["ingest", str(f), "--out", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    con = duckdb.connect(str(tmp_path / "s" / "reclaim.duckdb"), read_only=True)
    assert con.execute("select count(*), sum(elapsed_s) from jobs").fetchone() == (2, 605)
    assert con.execute("select field from quarantine").fetchall() == [("JobID",)]
    q = (tmp_path / "s" / "quarantine.csv").read_text().splitlines()
    assert q[0] == "file,line,field,reason,raw" and ",4,JobID," in q[1]
