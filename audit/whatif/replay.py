"""Replay a canonical job table on the cluster model under one policy (``reclaim simulate``).

The pandas side of the boundary: the canonical table goes through :mod:`audit.whatif.to_simulator` into plain
simulator records, the simulator runs (it never sees pandas), and its per-job records come back here to be
written as ``replay/jobs.parquet`` beside ``replay/metrics.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..cluster_shape import pool_procs
from ..textio import InputError
from .to_simulator import to_cluster, to_jobs


def replay(table: pd.DataFrame, *, policy: str = "easy", procs: int | None = None, cluster_shape=None,
           out=None) -> dict:
    """Replay the jobs under ``policy``; return the metrics (and write ``out/replay/`` when ``out`` is given).

    With ``procs`` the cluster is one pool of that many processors and jobs are never killed at their
    requested time (the Parallel Workloads Archive convention); otherwise the cluster shape (a TOML path)
    with per-node CPUs, memory and GPUs, and jobs are killed at their limits.  A shape that is one pool
    (``procs = P``, as an SWF header's ``MaxProcs`` declares it) is replayed as ``procs`` is.
    """
    from simulator import simulate as run

    if procs is None and cluster_shape is None:
        raise InputError("no cluster shape among the inputs: pass --cluster-shape FILE or --procs P")
    if procs is None and (pool := pool_procs(cluster_shape)):  # one pool of processors (an SWF header's)
        procs = pool
    converted = to_jobs(table, procs=procs)
    cluster = to_cluster({"procs": procs} if procs else cluster_shape)
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
