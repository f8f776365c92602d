"""The job table a predictor reads: one given, a store's ``jobs.parquet``, or trace files read by a reader handed
in (the main CLI hands audit's readers; predictors parse no input format themselves)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def load_jobs(source, read=None) -> pd.DataFrame:
    """A canonical job table from a DataFrame, a store folder (``jobs.parquet``) or trace files and folders.

    ``read`` (paths → job table) reads trace files; without it a source that is not a store is an
    :class:`~audit.textio.InputError` naming it."""
    if isinstance(source, pd.DataFrame):
        return source
    paths = [Path(p) for p in (source if isinstance(source, list | tuple) else [source])]
    if len(paths) == 1 and (paths[0] / "jobs.parquet").exists():
        from audit.store import read_jobs

        return read_jobs(paths[0])
    if read is None:
        from audit.textio import InputError

        raise InputError(f"{paths[0]}: not a store (no jobs.parquet): ingest it first (`reclaim ingest … --out STORE`)")
    return read(paths)
