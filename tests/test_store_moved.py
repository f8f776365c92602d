"""A store's ``reclaim.duckdb`` answers where it was written (from any working directory), and after its folder is
moved or copied elsewhere, opened with the folder as DuckDB's file search path; its ``jobs`` is a view of the
jobs.parquet beside it, with the Parquet file's columns and rows."""

from __future__ import annotations

import shutil

import duckdb
import pandas as pd
import pytest

from audit.ingest import ingest
from audit.store import connect

SACCT = "JobID|State|Elapsed|NCPUS\n1|COMPLETED|00:10:00|4\n2|FAILED|00:00:05|1\nbad|X|Y|Z\n"


@pytest.fixture
def store(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text(SACCT)
    out = tmp_path / "store"
    ingest([f], out)
    return out


def test_in_place_from_another_directory(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    con = duckdb.connect(str(store / "reclaim.duckdb"), read_only=True)
    # 600 s + 5 s over the two jobs read; the third line is quarantined
    assert con.execute("SELECT count(*), sum(elapsed_s) FROM jobs").fetchone() == (2, 605)
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    con.close()
    assert kinds == {"jobs": "VIEW", "quarantine": "BASE TABLE"}


@pytest.mark.parametrize("how", ["move", "copy"])
def test_moved_store_answers(store, tmp_path, monkeypatch, how):
    elsewhere = tmp_path / "sent" / "store"
    elsewhere.parent.mkdir()
    if how == "move":
        shutil.move(str(store), str(elsewhere))
    else:
        shutil.copytree(store, elsewhere)
        (store / "jobs.parquet").unlink()  # the original's file is not what the copy reads
    monkeypatch.chdir(tmp_path)
    con = connect(elsewhere)
    got = con.execute("SELECT job_id, elapsed_s FROM jobs ORDER BY job_id").fetchall()
    quarantined = con.execute("SELECT line, field FROM quarantine").fetchall()
    con.close()
    assert got == [("1", 600), ("2", 5)]
    assert quarantined == [("4", "JobID")]
    # the duckdb shell's way: the search path set in SQL
    con = duckdb.connect(str(elsewhere / "reclaim.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(elsewhere)])
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (2,)
    con.close()


def test_view_has_the_parquet_columns_and_rows(store):
    con = connect(store)
    view = con.execute("SELECT * FROM jobs").df()
    con.close()
    table = pd.read_parquet(store / "jobs.parquet")
    assert list(view.columns) == list(table.columns) and len(view) == len(table) == 2


def test_reingest_replaces_an_earlier_jobs_table(store, tmp_path):
    """A store written when ``jobs`` was a table is rewritten with the view."""
    con = duckdb.connect(str(store / "reclaim.duckdb"))
    con.execute("DROP VIEW jobs")
    con.execute("CREATE TABLE jobs AS SELECT 1 AS x")
    con.close()
    ingest([tmp_path / "sacct.txt"], store)
    con = duckdb.connect(str(store / "reclaim.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (2,)
    assert con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = 'jobs'").fetchone() == (
        "VIEW",)
    con.close()
