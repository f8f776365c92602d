"""The ingest stage: read every input into one canonical job table, with its ledger and quarantine."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .detect import READABLE, detect_format, expand_paths
from .ledger import Quarantine, ReadResult, ledger_dict
from .schema import conform, empty_jobs
from .store import write_store
from .textio import InputError


@dataclass
class IngestResult:
    jobs: pd.DataFrame
    ledger: dict
    quarantine: Quarantine
    out: Path | None = None
    skipped: list = field(default_factory=list)
    cluster_shape: Path | None = None


def read_file(path: Path, fmt: str, *, cluster: str | None = None, timezone: str = "UTC") -> ReadResult:
    """Dispatch one file to its ``read_<source>()``."""
    if fmt == "sacct":
        from .read_sacct import read_sacct

        return read_sacct(path, cluster=cluster, timezone=timezone)
    if fmt == "sacct-json":
        from .read_sacct_json import read_sacct_json

        return read_sacct_json(path, cluster=cluster)
    if fmt == "swf":
        from .read_swf import read_swf

        return read_swf(path, cluster=cluster)
    raise InputError(f"{path}: no reader for format {fmt!r}")


def read_inputs(paths, *, cluster: str | None = None, fmt: str = "auto", timezone: str = "UTC") -> IngestResult:
    """Read files and folders; files in a folder that hold no accounting records are listed as skipped.

    A file named directly must be readable in the given (or detected) format, else :class:`InputError`.
    """
    named = {Path(p) for p in paths if not Path(p).is_dir()}
    files = expand_paths(paths)
    frames, ledgers, skipped = [], [], []
    quarantine = Quarantine()
    for f in files:
        kind = detect_format(f) if fmt == "auto" else fmt
        if kind not in READABLE:
            if f in named:
                raise InputError(f"{f}: not a recognised accounting format (detected {kind!r}); "
                                 "use --format sacct|sacct-json|swf")
            skipped.append({"file": str(f), "detected": kind})
            continue
        result = read_file(f, kind, cluster=cluster, timezone=timezone)
        frames.append(result.jobs)
        ledgers.append(result.ledger)
        quarantine.extend(result.quarantine.rows)
    if not ledgers:
        raise InputError("no accounting file among the inputs: " + ", ".join(str(p) for p in paths))
    frames = [f for f in frames if len(f)]
    jobs = conform(pd.concat(frames, ignore_index=True)) if frames else empty_jobs()
    ledger = ledger_dict(ledgers)
    ledger["skipped_files"] = skipped
    shapes = [Path(s["file"]) for s in skipped if s["detected"] == "toml" and _is_cluster_shape(Path(s["file"]))]
    return IngestResult(jobs=jobs, ledger=ledger, quarantine=quarantine, skipped=skipped,
                        cluster_shape=shapes[0] if len(shapes) == 1 else None)


def _is_cluster_shape(path: Path) -> bool:
    import tomllib

    try:
        return "node_groups" in tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def ingest(paths, out, *, cluster: str | None = None, fmt: str = "auto", timezone: str = "UTC") -> IngestResult:
    """Read the inputs and write the store in ``out``: jobs.parquet, ledger.json, quarantine.csv, reclaim.duckdb."""
    result = read_inputs(paths, cluster=cluster, fmt=fmt, timezone=timezone)
    result.out = Path(out)
    write_store(result.out, result.jobs, result.ledger, result.quarantine)
    return result
