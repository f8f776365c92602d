"""``reclaim simulate``: replay a trace or an ingested store on the cluster model under one policy.

The pandas side of the boundary: the canonical table goes through :mod:`audit.to_simulator` into plain
simulator records, the simulator runs (it never sees pandas), and its per-job records come back here to be
written as ``replay/jobs.parquet`` beside ``replay/metrics.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .ingest import read_inputs
from .store import read_jobs
from .textio import InputError
from .to_simulator import to_cluster, to_jobs


def _table(paths, fmt: str, timezone: str) -> tuple[pd.DataFrame, Path | None]:
    """The canonical table of a store folder (with jobs.parquet) or of trace files; and a cluster shape found."""
    paths = [Path(p) for p in paths]
    if len(paths) == 1 and (paths[0] / "jobs.parquet").exists():
        shape = paths[0] / "cluster_shape.toml"
        return read_jobs(paths[0]), shape if shape.exists() else None
    ing = read_inputs(paths, fmt=fmt, timezone=timezone)
    return ing.jobs, ing.cluster_shape


def simulate(paths, *, policy: str = "easy", procs: int | None = None, cluster_shape=None, out=None,
             fmt: str = "auto", timezone: str = "UTC") -> dict:
    """Replay the jobs under ``policy``; return the metrics (and write ``out/replay/`` when ``out`` is given).

    With ``procs`` the cluster is one pool of that many processors and jobs are never killed at their
    requested time (the Parallel Workloads Archive convention); otherwise the cluster shape (given, or
    found among the inputs) with per-node CPUs, memory and GPUs, and jobs are killed at their limits.
    """
    from simulator import simulate as run

    table, found = _table(paths, fmt, timezone)
    if procs is None and cluster_shape is None and found is None:
        raise InputError("no cluster shape among the inputs: pass --cluster-shape FILE or --procs P")
    converted = to_jobs(table, procs=procs)
    cluster = to_cluster({"procs": procs} if procs else (cluster_shape or found))
    result, metrics = run(converted.jobs, cluster, policy, kill_at_limit=procs is None)
    metrics = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in metrics.items()}
    metrics["dropped"] = dict(converted.dropped)
    if out is not None:
        folder = Path(out) / "replay"
        folder.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({
            "job_id": result.id, "submit_s": result.submit, "start_s": result.start, "end_s": result.end,
            "wait_s": result.wait, "attempts": result.attempts, "state": result.state,
        }).to_parquet(folder / "jobs.parquet", index=False)
        (folder / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True, default=str) + "\n",
                                             encoding="utf-8")
    return metrics
