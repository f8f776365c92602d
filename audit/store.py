"""The store: one folder per run with jobs.parquet, ledger.json, quarantine.csv and reclaim.duckdb."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd

from .job_table import JOB_COLUMNS
from .ledger import Quarantine


def write_store(out: Path, jobs: pd.DataFrame, ledger: dict, quarantine: Quarantine) -> None:
    out.mkdir(parents=True, exist_ok=True)
    jobs.to_parquet(out / "jobs.parquet", index=False)
    (out / "ledger.json").write_text(json.dumps(ledger, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    quarantine.write_csv(out / "quarantine.csv")
    register(out)


def register(out: Path) -> None:
    """(Re)create the ``jobs`` and ``quarantine`` tables of ``out/reclaim.duckdb`` from the files beside it."""
    con = duckdb.connect(str(out / "reclaim.duckdb"))
    try:
        con.execute("CREATE OR REPLACE TABLE jobs AS SELECT * FROM read_parquet(?)", [str(out / "jobs.parquet")])
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
