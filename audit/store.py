"""The store: one folder per run with jobs.parquet, ledger.json, quarantine.csv and reclaim.duckdb."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .job_table import JOB_COLUMNS
from .ledger import Quarantine


def write_store(out: Path, jobs: pd.DataFrame, ledger: dict, quarantine: Quarantine) -> None:
    """Write the store's files.  The ``jobs`` table of ``reclaim.duckdb`` is built from the same Arrow table as
    jobs.parquet while the Parquet file is written (both release the interpreter), rather than read back from it
    afterwards: the file's bytes are ``DataFrame.to_parquet``'s, and the table's schema the same as one read from it."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "ledger.json").write_text(json.dumps(ledger, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    quarantine.write_csv(out / "quarantine.csv")
    table = pa.Table.from_pandas(jobs, preserve_index=False)  # what ``DataFrame.to_parquet(index=False)`` writes
    with ThreadPoolExecutor(max_workers=1) as pool:
        tables = pool.submit(_register_tables, out, table)
        pq.write_table(table, out / "jobs.parquet")
        tables.result()


def _register_tables(out: Path, jobs: pa.Table) -> None:
    con = duckdb.connect(str(out / "reclaim.duckdb"))
    try:
        con.register("jobs_written", jobs)
        con.execute("CREATE OR REPLACE TABLE jobs AS SELECT * FROM jobs_written")
        con.unregister("jobs_written")
        con.execute("CREATE OR REPLACE TABLE quarantine AS SELECT * FROM read_csv(?, header=true, all_varchar=true)",
                    [str(out / "quarantine.csv")])
    finally:
        con.close()


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
