"""``reclaim ingest``: read every input (the readers, then the telemetry stage) into one canonical job table, with
its ledger and quarantine, and write the store."""

from __future__ import annotations

import tomllib
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import pandas as pd

from .cluster_shape import is_cluster_shape
from .job_table import conform, empty_jobs
from .ledger import Quarantine, ledger_dict
from .node_table import conform_placements
from .readers import (
    NODES,
    READABLE,
    TELEMETRY,
    detect_format,
    expand_paths,
    is_pilot_tarball,
    read_jobs_file,
    read_pilot,
)
from .shape_inference import infer_shape
from .store import read_jobs, write_store
from .telemetry import TelemetryInputs, clear_telemetry_store, write_telemetry_store
from .textio import InputError


@dataclass
class IngestResult:
    jobs: pd.DataFrame
    ledger: dict
    quarantine: Quarantine
    out: Path | None = None
    skipped: list = field(default_factory=list)
    cluster_shape: Path | dict | None = None  # a shape file among the inputs, or a shape dict (a pilot's, inferred)
    declared_shape: dict | None = None  # the one shape the files declare (an SWF header's MaxProcs), or None
    telemetry: pd.DataFrame | None = None
    job_telemetry: pd.DataFrame | None = None
    nodes: pd.DataFrame | None = None
    placements: pd.DataFrame | None = None


def read_inputs(paths, *, cluster: str | None = None, fmt: str = "auto", timezone: str = "UTC",
                telemetry_out: Path | None = None, extract_to: Path | None = None, stage=None,
                delimiter: str | None = None, cluster_shape=None) -> IngestResult:
    """Read files and folders; files in a folder that hold nothing we read are listed as skipped.

    A file named directly must be readable in the given (or detected) format, else :class:`InputError`.
    Telemetry is joined to the jobs after they are read; with ``telemetry_out`` its samples are streamed
    into that Parquet file instead of being kept (``IngestResult.telemetry`` is then None).  A pilot
    tarball (``reclaim collect``) is extracted into ``extract_to`` (a temporary folder when None), checked
    against its manifest and read as the files it lists; a job found in two daily chunks is kept once.
    ``stage(name)`` (a context manager, e.g. :meth:`audit.progress.Progress.stage`) times the telemetry join
    as ``telemetry``.
    ``delimiter`` is sacct text's field delimiter (``sacct --delimiter``), for files read as sacct text.
    ``cluster_shape`` (a TOML path or dict) is the shape to use; without it, one among the inputs, else a pilot's or
    a node list's, else the one the accounting's node lists show (:mod:`audit.shape_inference`, marked
    ``inferred``), else the one the files themselves declare, where they all declare the same (an SWF header's
    ``MaxProcs``: one pool of processors, marked ``inferred`` too).  ``IngestResult.ledger["cluster_shape"]``
    says which (:func:`shape_provenance`).
    """
    with ExitStack() as stack:
        pilots, paths = _open_pilots(paths, extract_to, stack)
        result = _read_inputs(paths, cluster=cluster, fmt=fmt, timezone=timezone, telemetry_out=telemetry_out,
                              named_pilot_files=[f for p in pilots for f in p.files], stage=stage,
                              delimiter=delimiter)
        if pilots:
            result = _pilot_result(result, pilots, keep_paths=extract_to is not None, timezone=timezone)
        if cluster_shape is not None:
            result.cluster_shape = cluster_shape
        elif result.cluster_shape is None and (result.nodes is None or not len(result.nodes)):
            # no shape among the inputs: the one the accounting's node lists show (audit.shape_inference), else
            # the one the files declare (an SWF header's processors)
            result.cluster_shape = infer_shape(result.jobs, result.placements) or result.declared_shape
        result.ledger["cluster_shape"] = shape_provenance(result.cluster_shape, result.nodes,
                                                         given=cluster_shape is not None)
        return result


def shape_provenance(shape, nodes=None, *, given: bool = False) -> dict | None:
    """Where the run's cluster shape came from, for the ledger and the report's data-quality appendix:
    ``source`` (``given``: named by the user; ``input``: a shape file among the inputs; ``pilot``: a collector's
    node list; ``nodes``: a Kubernetes or Alibaba node list; ``inferred``: the accounting's node lists;
    ``declared``: the accounting files' own header, a pool of ``procs`` processors), and for an inferred or
    declared shape what it rests on (and an inferred one's node groups)."""
    if shape is None:
        return None if nodes is None or not len(nodes) else {"source": "nodes", "nodes": int(len(nodes))}
    if isinstance(shape, dict) and shape.get("inferred") and shape.get("procs") and not shape.get("node_groups"):
        return {"source": "declared", "basis": shape["inferred"], "procs": int(shape["procs"])}
    if isinstance(shape, dict) and shape.get("inferred"):
        groups = [{k: g.get(k) for k in ("name", "count", "cpus", "mem_bytes", "gpus", "gpu_type", "partitions")}
                  for g in shape.get("node_groups", [])]
        return {"source": "inferred", "basis": shape["inferred"], "nodes": sum(g["count"] for g in groups),
                "node_groups": groups}
    if given:
        return {"source": "given", "file": str(shape) if not isinstance(shape, dict) else None}
    return {"source": "pilot" if isinstance(shape, dict) else "input",
            "file": None if isinstance(shape, dict) else str(shape)}


def _open_pilots(paths, extract_to, stack) -> tuple[list, list]:
    pilots, out = [], []
    for p in paths:
        if not is_pilot_tarball(p):
            out.append(p)
            continue
        base = Path(extract_to) if extract_to is not None else Path(stack.enter_context(TemporaryDirectory()))
        pilot = read_pilot(p, base)
        pilots.append(pilot)
        out += pilot.files
    return pilots, out


#: pilots whose accounting files hold more than the window (whole days, a whole history): their jobs that ended
#: outside it are left out
WHOLE_FILES = ("pbs", "lsf", "sge")


def _pilot_result(result: IngestResult, pilots: list, keep_paths: bool, timezone: str = "UTC") -> IngestResult:
    """Jobs found in two daily chunks (sacct's window has a few minutes' slack) kept once, from the later; of a
    PBS, LSF or Grid Engine pilot, whose copied files hold whole days or the whole history, the jobs that ended
    outside its window (the manifest's ``since``/``until``, the cluster's local time) left out and counted."""
    jobs = result.jobs
    dup = jobs.duplicated(subset=["cluster", "job_id"], keep="last").to_numpy()
    outside = np.zeros(len(jobs), dtype=bool)
    for p in pilots:
        if p.manifest.get("kind") not in WHOLE_FILES or not p.manifest.get("since") or not p.manifest.get("until"):
            continue
        mine = jobs["source_file"].astype("string").fillna("").str.startswith(str(p.folder)).to_numpy(dtype=bool)
        since, until = (pd.Timestamp(p.manifest[k]).tz_localize(timezone).tz_convert("UTC") for k in ("since", "until"))
        end = jobs["end_time"]
        outside |= mine & ((end < since) | (end >= until)).fillna(False).to_numpy(dtype=bool)
    result.jobs = jobs.loc[~dup & ~outside].reset_index(drop=True)
    result.ledger["pilot"] = {
        "tarballs": [{"file": str(p.tarball), "kind": p.manifest.get("kind"), "since": p.manifest.get("since"),
                      "until": p.manifest.get("until"), "commands": len(p.manifest.get("commands", [])),
                      "failed_commands": p.manifest.get("failed", 0)} for p in pilots],
        "duplicate_jobs_dropped": int(dup.sum()),
        "outside_window_jobs": int((outside & ~dup).sum()),
    }
    shapes = [p.shape for p in pilots if p.shape is not None]
    if result.cluster_shape is None and len(shapes) == 1:
        # a temporary folder is gone once the inputs are read: then the shape travels as its table
        result.cluster_shape = shapes[0] if keep_paths else tomllib.loads(shapes[0].read_text(encoding="utf-8"))
    return result


def _read_inputs(paths, *, cluster, fmt, timezone, telemetry_out, named_pilot_files, stage=None,
                 delimiter=None) -> IngestResult:
    named = {Path(p) for p in paths if not Path(p).is_dir()} | set(named_pilot_files)
    files = expand_paths(paths)
    frames, ledgers, skipped, placed, declared = [], [], [], [], []
    quarantine = Quarantine()
    extra = TelemetryInputs(cluster=cluster, sink=telemetry_out)
    for f in files:
        kind = detect_format(f) if fmt == "auto" else fmt
        if kind in TELEMETRY or kind in NODES:
            extra.take(f, kind)
            continue
        if kind not in READABLE:
            if f in named and not (kind == "toml" and is_cluster_shape(f)):  # a named shape is taken as the shape
                raise InputError(f"{f}: not a recognised accounting format (detected {kind!r}); "
                                 "use --format sacct|sacct-json|swf|pbs|lsf|sge")
            skipped.append({"file": str(f), "detected": kind})
            continue
        result = read_jobs_file(f, kind, cluster=cluster, timezone=timezone, delimiter=delimiter)
        frames.append(result.jobs)
        ledgers.append(result.ledger)
        quarantine.extend(result.quarantine.rows)
        if getattr(result, "pods", None) is not None:
            extra.pods.append(result.pods)
        if result.placements is not None and len(result.placements):
            placed.append(conform_placements(result.placements))
        declared.append(getattr(result, "cluster_shape", None))
    if not ledgers and not extra.ledgers and not extra.pending:
        raise InputError("no accounting file among the inputs: " + ", ".join(str(p) for p in paths))
    frames = [f for f in frames if len(f)]
    jobs = conform(pd.concat(frames, ignore_index=True)) if frames else empty_jobs()
    jobs = _fold_deleted_elsewhere(jobs, ledgers)
    timing = stage("telemetry") if stage is not None and (extra.pending or extra.ledgers) else nullcontext()
    with timing:
        joined = extra.attach(jobs)
    quarantine.extend(joined.quarantine.rows)
    ledger = ledger_dict(ledgers + joined.ledgers)
    ledger["skipped_files"] = skipped
    if joined.summary:
        ledger["telemetry"] = joined.summary
    shapes = [Path(s["file"]) for s in skipped if s["detected"] == "toml" and is_cluster_shape(s["file"])]
    return IngestResult(jobs=joined.jobs, ledger=ledger, quarantine=quarantine, skipped=skipped,
                        cluster_shape=shapes[0] if len(shapes) == 1 else None,
                        declared_shape=_one_declared(declared),
                        telemetry=joined.telemetry, job_telemetry=joined.job_stats, nodes=joined.nodes,
                        placements=pd.concat(placed, ignore_index=True) if placed else None)


def _one_declared(shapes: list) -> dict | None:
    """The shape every accounting file declares, where each declares one and all the same machine (the same
    processors); None otherwise: files from two machines, or one that declares nothing, have no one shape."""
    procs = {s.get("procs") if s else None for s in shapes}
    return shapes[0] if shapes and len(procs) == 1 and None not in procs else None


def _fold_deleted_elsewhere(jobs: pd.DataFrame, ledgers: list) -> pd.DataFrame:
    """A PBS job deleted while it ran just before midnight has its ``D`` record in one day's file and its ``E`` in
    the next: the first file alone reads it as deleted before it ran (``pbs_deleted_before_run``).  Such a row is
    folded into the job's row from the other file (counted as folded in its own file's ledger), never counted
    twice; the job's row, ended with a non-zero exit after that D record, is CANCELLED (as the reader reads a D and
    an E of one file)."""
    if not len(jobs) or "caveats" not in jobs:
        return jobs
    flagged = jobs["caveats"].astype("string").str.contains("pbs_deleted_before_run", regex=False).fillna(False)
    flagged = flagged.to_numpy(dtype=bool)
    if not flagged.any():
        return jobs
    key = jobs["cluster"].astype("string").fillna("") + "\x1f" + jobs["job_id"].astype("string").fillna("")
    ran = set(key[~flagged])
    drop = flagged & key.isin(ran).to_numpy(dtype=bool)
    if not drop.any():
        return jobs
    # the reader's rule, across files: a job that ended with a non-zero exit after a D record was deleted
    deleted = set(key[drop])
    failed = ~flagged & key.isin(deleted).to_numpy(dtype=bool) & (jobs["state"] == "FAILED").to_numpy(dtype=bool)
    if failed.any():
        jobs = jobs.copy()
        jobs.loc[failed, "state"] = "CANCELLED"
    by_file = {led.file: led for led in ledgers}
    for name, n in jobs.loc[drop, "source_file"].astype(str).value_counts().items():
        led = by_file.get(name)
        if led is not None:
            led.used -= int(n)
            led.folded += int(n)
            led.jobs_emitted -= int(n)
    return jobs.loc[~drop].reset_index(drop=True)


def ingest(paths, out, *, cluster: str | None = None, fmt: str = "auto", timezone: str = "UTC",
           pseudonyms=None, stage=None, extract_to=None, delimiter: str | None = None,
           cluster_shape=None) -> IngestResult:
    """Read the inputs and write the store in ``out``: jobs.parquet, ledger.json, quarantine.csv, reclaim.duckdb.
    A pilot tarball among the inputs is unpacked into ``extract_to`` (default ``out/pilot``; with
    ``pseudonyms``, a temporary folder, so that no raw export with real names is left among the outputs).

    ``pseudonyms`` (:class:`audit.anonymise.Pseudonyms`): users and accounts are replaced before anything but
    the streamed telemetry is written, and that is rewritten with its labels scrubbed.  ``cluster_shape``: as for
    :func:`read_inputs`; the store keeps the shape used as ``cluster_shape.toml``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clear_telemetry_store(out)
    with ExitStack() as stack:
        if extract_to is None:
            extract_to = (Path(stack.enter_context(TemporaryDirectory(prefix="reclaim-pilot-")))
                          if pseudonyms is not None else out / "pilot")
        result = read_inputs(paths, cluster=cluster, fmt=fmt, timezone=timezone,
                             telemetry_out=out / "telemetry.parquet", stage=stage, extract_to=Path(extract_to),
                             delimiter=delimiter, cluster_shape=cluster_shape)
        result.out = out
        if pseudonyms is not None:
            _anonymise(result, pseudonyms, out)
        write_store(result.out, result.jobs, result.ledger, result.quarantine)
        shape = write_telemetry_store(result.out, result.telemetry, result.job_telemetry, result.nodes,
                                      result.cluster_shape)  # a shape from a temporary folder is copied here
    if shape is not None:
        result.cluster_shape = shape
    return result


def _anonymise(result: IngestResult, p, out: Path) -> None:
    from .anonymise import anonymise_frame, anonymise_jobs, anonymise_parquet, anonymise_quarantine

    result.jobs = anonymise_jobs(result.jobs, p)
    result.quarantine = Quarantine(rows=anonymise_quarantine(result.quarantine.rows, p))
    result.telemetry = anonymise_frame(result.telemetry, p)
    anonymise_parquet(out / "telemetry.parquet", p)


def read_table(paths, *, fmt: str = "auto", timezone: str = "UTC") -> tuple[pd.DataFrame, Path | None]:
    """The canonical table of a store folder (with jobs.parquet) or of trace files; and a cluster shape found
    (the store's ``cluster_shape.toml``, or one among the inputs)."""
    paths = [Path(p) for p in paths]
    if len(paths) == 1 and (paths[0] / "jobs.parquet").exists():
        shape = paths[0] / "cluster_shape.toml"
        return read_jobs(paths[0]), shape if shape.exists() else None
    ing = read_inputs(paths, fmt=fmt, timezone=timezone)
    return ing.jobs, ing.cluster_shape
