"""The store: one folder per run with jobs.parquet, ledger.json, quarantine.csv and reclaim.duckdb (its ``jobs`` a
view of jobs.parquet, its ``quarantine`` a table)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .job_table import JOB_COLUMNS
from .ledger import Quarantine


def write_store(out: Path, jobs: pd.DataFrame, ledger: dict, quarantine: Quarantine) -> None:
    """Write the store's files.  jobs.parquet holds ``DataFrame.to_parquet(index=False)``'s bytes; in
    ``reclaim.duckdb``, ``jobs`` is a view that reads it in place (:data:`PARQUET_VIEW`) and ``quarantine`` a table."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "ledger.json").write_text(json.dumps(ledger, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    quarantine.write_csv(out / "quarantine.csv")
    table = pa.Table.from_pandas(jobs, preserve_index=False)  # what ``DataFrame.to_parquet(index=False)`` writes
    pq.write_table(table, out / "jobs.parquet")
    del table
    _register_tables(out)


#: a view of a Parquet file of the store: by its absolute path, or, when the connection has a file search path
#: (DuckDB's ``file_search_path``, which a store moved or sent elsewhere is opened with: :func:`connect`), by its
#: name in that path.  A view, not a copy: DuckDB's compressed copy of a month of jobs took longer to write than
#: all the rest of ingest
PARQUET_VIEW = ("CREATE VIEW {name} AS SELECT * FROM read_parquet(CASE WHEN current_setting('file_search_path') = '' "
                "THEN '{path}' ELSE '{file}' END)")


def create_parquet_view(con, name: str, path: Path) -> None:
    """``name`` in ``con`` a view of the Parquet file ``path`` of the store (:data:`PARQUET_VIEW`), in place of
    whatever an earlier run left under that name."""
    drop(con, name)
    literal = str(Path(path).resolve()).replace("'", "''")
    con.execute(PARQUET_VIEW.format(name=name, path=literal, file=Path(path).name.replace("'", "''")))


def drop(con, name: str) -> None:
    """Drop the table or view ``name`` if there is one."""
    found = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?", [name]).fetchall()
    for (kind,) in found:
        con.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} {name}")


def _register_tables(out: Path) -> None:
    con = duckdb.connect(str(out / "reclaim.duckdb"))
    try:
        create_parquet_view(con, "jobs", out / "jobs.parquet")
        con.execute("CREATE OR REPLACE TABLE quarantine AS SELECT * FROM read_csv(?, header=true, all_varchar=true)",
                    [str(out / "quarantine.csv")])
    finally:
        con.close()


def connect(store, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """``reclaim.duckdb`` of a store wherever the folder now is: opened with the folder as DuckDB's file search
    path, so that its ``jobs`` view reads the jobs.parquet beside it (the SQL equivalent, in the ``duckdb`` shell:
    ``SET file_search_path = 'DIR';``)."""
    folder = Path(store).resolve()
    return duckdb.connect(str(folder / "reclaim.duckdb"), read_only=read_only,
                          config={"file_search_path": str(folder)})


def read_jobs(store: Path) -> pd.DataFrame:
    """The canonical job table of an ingested store."""
    path = Path(store) / "jobs.parquet"
    if not path.exists():
        from .textio import InputError

        raise InputError(f"{store}: no jobs.parquet (run `reclaim ingest` first)")
    df = pd.read_parquet(path)
    missing = set(JOB_COLUMNS) - set(df.columns)
    if missing:
        from .textio import InputError

        raise InputError(f"{path}: missing canonical columns {sorted(missing)}")
    return df


def read_ledger(store: Path) -> dict:
    return json.loads((Path(store) / "ledger.json").read_text(encoding="utf-8"))
