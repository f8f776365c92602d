"""Job steps (.extern, .batch, srun .0 .1 …) with their CPU time and memory, and each job's planted peak.

Memory model (the definitions truth.json uses, docs/synthetic.md):
* a step's memory total is the sum over its tasks of each task's peak RSS = ``AveRSS x NTasks`` =
  the ``mem`` entry of its ``TRESUsageInTot``; ``MaxRSS`` is the largest task;
* ``.extern`` and ``.batch`` run for the whole job; srun steps run one after another inside it;
* the job's peak (``mem_peak_bytes``) is the largest simultaneous total: extern + batch + the largest
  srun step (all steps are concurrent with extern and batch, srun steps never overlap each other).
CPU: a job's used CPU time is ``cpu_eff x alloc_cpus x elapsed``; with srun steps the batch shell gets
0.5 % and the srun steps share the rest in proportion to their duration; ``TotalCPU`` of the
allocation line is the sum over its steps.  MPI jobs started outside srun record 0 everywhere.
"""

from __future__ import annotations

import numpy as np

KIB = 1024
MAX_STEP_EFF = 0.99   # no step uses more than 99 % of its cores over its own duration


def job_memory(jobs: dict) -> dict:
    """Per job: allocated memory (bytes, job total), working-set peak (KiB, job total) before step split."""
    alloc_mib = jobs["mem_pn_mib"] * jobs["nodes"]
    alloc_bytes = alloc_mib.astype(np.int64) * 2**20
    work_kib = np.floor(alloc_mib * 1024 / jobs["mem_ratio"]).astype(np.int64)
    oom = jobs["state"] == "OUT_OF_MEMORY"
    work_kib[oom] = alloc_mib[oom] * 1024 - jobs["extern_rss_kib"][oom] * jobs["nodes"][oom] \
        - jobs["batch_rss_kib"][oom] * (jobs["srun_steps"][oom] > 0)
    return {"alloc_mem_bytes": alloc_bytes, "work_kib": np.maximum(work_kib, 1024)}


def build_steps(rng: np.random.Generator, jobs: dict, start: np.ndarray) -> dict:
    """The step table (one entry per step line) and per-job totals (cpu_used_ms, mem_peak_kib…)."""
    n = len(start)
    started = start >= 0
    het1 = (jobs["sub_type"] == 2) & (jobs["task"] == 1)
    nodes = jobs["nodes"]
    cpus = jobs["alloc_cpus"]
    el = jobs["elapsed_s"]
    mem = job_memory(jobs)
    srun = np.where(started, jobs["srun_steps"], 0)
    has_batch = started & ~het1
    has_ext = started

    # --- CPU time, ms
    used_ms = np.round(jobs["cpu_eff"] * cpus * el * 1000).astype(np.int64)
    used_ms[~started] = 0
    zero = jobs["totalcpu_zero"] & started
    true_ms = used_ms.copy()
    used_ms[zero] = 0
    ext_ms = np.where(has_ext & ~zero, rng.integers(1, 6, n), 0)
    batch_ms = np.where(srun > 0, np.maximum(used_ms // 200, 3), used_ms)
    batch_ms = np.minimum(batch_ms, np.floor(jobs["cpus_pn"] * el * 1000 * MAX_STEP_EFF).astype(np.int64))
    batch_ms = np.where(has_batch, batch_ms, 0)
    batch_ms[zero] = 0
    srun_total_ms = np.where(srun > 0, used_ms - np.where(has_batch, batch_ms, 0), 0)
    srun_total_ms = np.maximum(srun_total_ms, 0)

    # --- srun step layout: sequential slices of the job
    sj = np.repeat(np.arange(n), srun)
    sk = np.arange(len(sj)) - np.repeat(np.cumsum(srun) - srun, srun)
    w = rng.uniform(0.5, 1.5, len(sj))
    wsum = np.bincount(sj, weights=w, minlength=n)
    share = w / wsum[sj]
    cs = np.cumsum(share)
    first_idx = (np.cumsum(srun) - srun)[srun > 0]
    cum_share = cs - np.repeat(cs[first_idx] - share[first_idx], srun[srun > 0]) if len(sj) else cs
    lead = np.minimum(np.maximum(el // 100, 1), 30)  # srun starts a few seconds after the batch script
    span = np.maximum(el - lead, 0)
    s_start = start[sj] + lead[sj] + np.floor(span[sj] * (cum_share - share)).astype(np.int64)
    s_end = start[sj] + lead[sj] + np.floor(span[sj] * cum_share).astype(np.int64)
    last = sk == srun[sj] - 1
    s_end[last] = start[sj][last] + el[sj][last]
    # CPU time in proportion to each step's whole-second duration, never above its cores x duration
    dur = s_end - s_start
    dsum = np.bincount(sj, weights=dur, minlength=n)
    s_ms = np.floor(srun_total_ms[sj] * dur / np.maximum(dsum[sj], 1)).astype(np.int64)
    s_ms = np.minimum(s_ms, np.floor(cpus[sj] * dur * 1000 * MAX_STEP_EFF).astype(np.int64))
    # sacct prints whole seconds from an hour up: keep such steps whole so the allocation line is their sum
    s_ms = _printable(s_ms)
    batch_ms = _printable(batch_ms)
    srun_total_ms = np.bincount(sj, weights=s_ms, minlength=n).astype(np.int64)
    mpi = jobs["mpi"][sj]
    # MPI: one task per core; multi-node GPU jobs: one task per GPU; other steps one task per node
    gpus = (jobs["gpus_pn"] * nodes)[sj]
    s_tasks = np.where(mpi, np.where(gpus > 0, gpus, cpus[sj]), nodes[sj])
    s_nodes = nodes[sj]
    s_cpus = cpus[sj]

    # --- memory, KiB
    work = mem["work_kib"]
    ext_task = jobs["extern_rss_kib"]
    ext_total = np.where(has_ext, ext_task * nodes, 0)
    batch_rss = np.where(srun > 0, jobs["batch_rss_kib"], work)
    batch_rss = np.where(has_batch, batch_rss, 0)
    # srun steps: the largest holds the working set; the others a share of it
    frac = rng.uniform(0.3, 1.0, len(sj))
    top = np.zeros(len(sj), dtype=bool)
    if len(sj):
        order = np.lexsort((-w, sj))
        first_of_job = np.ones(len(order), dtype=bool)
        first_of_job[1:] = sj[order][1:] != sj[order][:-1]
        top[order[first_of_job]] = True
    frac[top] = 1.0
    per_task = np.maximum(np.floor(work[sj] * frac / s_tasks).astype(np.int64), 1)
    s_total = per_task * s_tasks
    s_max = np.where(s_tasks > 1, np.floor(per_task * 1.1).astype(np.int64), per_task)
    srun_peak = np.zeros(n, dtype=np.int64)
    if len(sj):
        np.maximum.at(srun_peak, sj, s_total)
    peak_kib = ext_total + batch_rss + srun_peak
    cpu_used_ms = np.where(has_batch, batch_ms, 0) + ext_ms + srun_total_ms
    return {
        "cpu_used_ms": cpu_used_ms,
        "cpu_true_ms": np.where(zero, true_ms, cpu_used_ms),   # differs only where TotalCPU is a planted 0
        "mem_peak_kib": peak_kib,
        "alloc_mem_bytes": mem["alloc_mem_bytes"],
        "has_batch": has_batch, "has_ext": has_ext,
        "ext_ms": ext_ms, "batch_ms": batch_ms, "ext_rss_kib": ext_task, "batch_rss_kib": batch_rss,
        "srun": {"job": sj, "k": sk, "start": s_start, "end": s_end, "ms": s_ms, "tasks": s_tasks,
                 "nodes": s_nodes, "cpus": s_cpus, "ave_kib": per_task, "max_kib": s_max, "total_kib": s_total,
                 "last": last},
    }


def _printable(ms: np.ndarray) -> np.ndarray:
    """CPU times of an hour or more lose their milliseconds, as sacct prints them."""
    return np.where(ms >= 3_600_000, ms // 1000 * 1000, ms)
