"""Replay as logged: every job starts at its logged start time and runs its logged run time, whatever
the cluster's free resources (the accounting baseline against which policies are compared)."""

from __future__ import annotations

import numpy as np

from .records import Job, Jobs
from .result import REASONS, SimResult, whole_units


def replay_as_logged(jobs, cluster) -> SimResult:
    """One completed attempt per job on ``[logged_start, logged_start + run)``; jobs with no logged
    start are left PENDING.  Held resources are the request (nodes × per-node request)."""
    if not isinstance(jobs, Jobs):
        jobs = Jobs.from_records(jobs if not isinstance(jobs, Job) else [jobs])
    c = jobs.columns
    order = np.lexsort((c["id"], c["submit"]))
    col = {k: v[order] for k, v in c.items()}
    n = len(order)
    start = col["logged_start"]
    has = ~np.isnan(start)
    end = np.where(has, start + col["run"], np.nan)
    k = np.flatnonzero(has)
    nodes = col["nodes"][k]
    zero_i = np.zeros(n, dtype=np.int64)
    return SimResult(
        id=col["id"], submit=col["submit"], run=col["run"], start=start, end=end, wait=start - col["submit"],
        attempts=has.astype(np.int64), ooms=zero_i, timeouts=zero_i.copy(), preemptions=zero_i.copy(),
        state=np.where(has, "COMPLETED", "PENDING"),
        reasons=np.zeros((n, len(REASONS)), dtype=np.int64), user=col["user"], account=col["account"],
        gpu_type=col["gpu_type"], cpu_util=col["cpu_util"], gpu_util=col["gpu_util"], mem_peak=col["mem_peak"] * col["nodes"],
        resumable=col["resumable"], a_job=k, a_queued=col["submit"][k], a_start=start[k], a_end=end[k],
        a_outcome=np.full(len(k), "COMPLETED"), a_cpus=whole_units(col["cpus"][k] * nodes, jobs.cpu_unit),
        a_mem=col["mem"][k] * nodes, a_gpus=whole_units(col["gpus"][k] * nodes, jobs.gpu_unit),
        a_overhead=np.zeros(len(k)),
        a_nodes=np.empty(len(k), dtype=object),
        capacity=cluster.capacity(), passes=0, wall_s=0.0,
    )
