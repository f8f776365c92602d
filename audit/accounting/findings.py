"""Findings: the jobs that waste capacity in the ways operators already look for, after Princeton's Job Defense
Shield alerts, each with its jobs, users, resource-hours, dollars and the fix.

Each finding is a test on one job's row of ``waste.parquet`` (and the canonical table), run only where the
figures it needs are known (``measured`` counts those jobs), against a threshold of :class:`Thresholds`
(``[findings]`` of the report config; defaults in docs/report.md):

* ``zero_gpu_util``: GPUs held with a mean utilisation under ``zero_gpu_util_below`` (0.5 %): all their
  GPU-hours, priced at the GPU price.
* ``low_gpu_util``: mean GPU utilisation under ``low_gpu_util_below`` (15 %), the zero ones apart: the idle
  GPU-hours, priced.
* ``gpu_memory_low``: peak GPU memory at most ``gpu_mem_share_below`` (25 %) of the memory held (a smaller
  GPU or a MIG slice would do): the GPU-hours held; dollars are the GPU cost × the share of memory never used.
* ``excess_cpu_memory``: peak memory under ``cpu_mem_ratio_below`` (35 %) of the allocation, for allocations
  of ``cpu_mem_min_gib`` (4 GiB) or more: the unused GiB-hours, priced.
* ``excess_time_limit``: completed jobs that used under ``time_ratio_below`` (20 %) of their time limit: the
  unused core-hours of the limit (cores × (limit − run)).  A time limit costs queue position, not node
  time, so it is not priced.
* ``serial_many_cores``: CPU jobs of ``serial_min_cores`` (4) cores or more that kept at most
  ``serial_busy_cores_max`` (1.1) busy on average: the core-hours of all cores but one, priced.
* ``multinode_fewer_nodes``: jobs on more nodes than their cores, memory and GPUs need on the partition's
  node type (needs the cluster shape): the node-hours of the extra nodes; not priced (the job's own
  resources cost the same on fewer nodes; the gain is whole nodes left to others).
* ``cores_per_gpu``, ``memory_per_gpu``: GPU jobs holding more cores (memory) per GPU than
  ``per_gpu_factor`` (1.0) × the node's share per GPU (needs the cluster shape): the excess core-hours
  (GiB-hours), priced.
* ``failed_work``: jobs that ended OUT_OF_MEMORY, TIMEOUT, NODE_FAIL, FAILED or PREEMPTED, at any run time:
  the core-hours held, priced at the whole allocated cost; by cause in :func:`failed_by_cause`.

Jobs that ran ``min_run_time_min`` (61 minutes) or less are left out of every finding but failed work, as
the alerts do.  A job can show in several findings; their dollars overlap and are never added together.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from .shape import node_shape_by_partition
from .waste import FAILED_STATES, GiB

H = 3600.0


@dataclass(frozen=True)
class Thresholds:
    """Thresholds of the findings (``[findings]`` of the report config)."""

    min_run_time_min: float = 61.0
    zero_gpu_util_below: float = 0.005
    low_gpu_util_below: float = 0.15
    gpu_mem_share_below: float = 0.25
    cpu_mem_ratio_below: float = 0.35
    cpu_mem_min_gib: float = 4.0
    time_ratio_below: float = 0.2
    serial_min_cores: float = 4.0
    serial_busy_cores_max: float = 1.1
    per_gpu_factor: float = 1.0

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


#: finding → (title, unit of its resource-hours, the fix)
FINDINGS = {
    "zero_gpu_util": ("GPUs allocated at zero utilisation", "GPU-h",
                      "Check the code runs on the GPU (a CUDA build, the device visible) before asking for one; "
                      "cancel jobs whose GPUs sit idle."),
    "low_gpu_util": ("Low GPU utilisation", "GPU-h",
                     "Profile the input pipeline and batch size; ask for fewer GPUs, or share them (MPS, MIG)."),
    "gpu_memory_low": ("GPU memory far below the device", "GPU-h",
                       "A smaller GPU or a MIG slice holds this memory: ask for one."),
    "excess_cpu_memory": ("Excess CPU memory", "GiB-h",
                          "Ask for the peak plus a margin (the recommendations give the figure per job family)."),
    "excess_time_limit": ("Excess time limits", "core-h",
                          "Set the time limit near the run time plus a margin: shorter limits start sooner "
                          "through backfill."),
    "serial_many_cores": ("Serial codes on many cores", "core-h",
                          "Ask for one core (--ntasks=1 --cpus-per-task=1), or parallelise the code."),
    "multinode_fewer_nodes": ("Multi-node jobs that fit on fewer nodes", "node-h",
                              "Pack the tasks onto fewer nodes (--nodes, --ntasks-per-node)."),
    "cores_per_gpu": ("Too many cores per GPU", "core-h",
                      "Ask for at most the node's cores per GPU, so the other GPUs of the node stay usable."),
    "memory_per_gpu": ("Too much memory per GPU", "GiB-h",
                       "Ask for at most the node's memory per GPU, so the other GPUs of the node stay usable."),
    "failed_work": ("Failed work", "core-h",
                    "Fix the cause per state (see failed work by cause): memory and time requests for "
                    "OUT_OF_MEMORY and TIMEOUT, checkpoints for NODE_FAIL and PREEMPTED."),
}

CAUSE_FIX = {
    "OUT_OF_MEMORY": "Ask for the peak of similar completed jobs plus a margin (failed_jobs.csv names it).",
    "TIMEOUT": "Ask for the run time of similar completed jobs plus a margin, or checkpoint and resubmit.",
    "NODE_FAIL": "Not the job's fault: resubmit; checkpoint long jobs.",
    "FAILED": "Read the job's error output: the accounting data cannot tell why it exited non-zero.",
    "PREEMPTED": "Checkpoint, or run in a QOS that is not preempted.",
}

JOB_COLUMNS = ("job_id", "user", "account", "partition", "finding", "resource_hours", "usd")


def _f(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").astype("float64").to_numpy(na_value=np.nan)


@dataclass
class Findings:
    """``table``: one row per finding; ``jobs``: one row per job and finding (``JOB_COLUMNS``);
    ``by_cause``: failed work by final state; ``by_account``: per account (top level of the path) and finding."""

    table: pd.DataFrame
    jobs: pd.DataFrame
    by_cause: pd.DataFrame
    by_account: pd.DataFrame

    def summary(self) -> list[dict]:
        return [{k: (None if pd.isna(v) else (v.item() if hasattr(v, "item") else v)) for k, v in r.items()}
                for r in self.table.to_dict("records")]


def _node_shape(waste: pd.DataFrame, shape: pd.DataFrame | None) -> pd.DataFrame | None:
    if shape is None:
        return None
    return node_shape_by_partition(shape).reindex(waste["partition"].astype(object).to_numpy())


def flag_jobs(waste: pd.DataFrame, jobs: pd.DataFrame, book, shape: pd.DataFrame | None = None,
              t: Thresholds | None = None) -> tuple[dict, dict]:
    """Per finding: ``(flagged, resource_hours, usd)`` arrays over the jobs, and how many jobs were measured."""
    t = t or Thresholds()
    el = waste["elapsed_s"].to_numpy(dtype=float)
    long_enough = el > t.min_run_time_min * 60.0
    gpus = waste["alloc_gpus"].to_numpy(dtype=float)
    cpus = waste["alloc_cpus"].to_numpy(dtype=float)
    mem = waste["mem_alloc_bytes"].to_numpy(dtype=float)
    cpu_usd = book.cpu.usd_per_hour if book is not None else np.nan
    mem_usd = book.memory.usd_per_hour if book is not None else np.nan

    def cost(col):
        return waste[col].to_numpy(dtype=float) if col in waste else np.full(len(waste), np.nan)

    gpu_known = waste["gpu_usage_known"].to_numpy(dtype=bool) & long_enough
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(gpu_known, waste["gpu_s_used"].to_numpy(dtype=float) / waste["gpu_s_alloc"].to_numpy(dtype=float),
                        np.nan)
    out, measured = {}, {}
    zero = gpu_known & (util < t.zero_gpu_util_below)
    out["zero_gpu_util"] = (zero, waste["gpu_s_alloc"].to_numpy(dtype=float) / H, cost("cost_usd_gpu_alloc"))
    measured["zero_gpu_util"] = gpu_known
    low = gpu_known & ~zero & (util < t.low_gpu_util_below)
    out["low_gpu_util"] = (low, waste["gpu_s_idle"].to_numpy(dtype=float) / H, cost("cost_usd_gpu_idle"))
    measured["low_gpu_util"] = gpu_known & ~zero

    held = waste["gpu_mem_bytes_held"].to_numpy(dtype=float)
    peak_g = waste["gpu_mem_bytes_peak"].to_numpy(dtype=float)
    gm_known = (gpus > 0) & long_enough & np.isfinite(held) & (held > 0) & np.isfinite(peak_g)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(gm_known, peak_g / held, np.nan)
    gm = gm_known & ~zero & (share <= t.gpu_mem_share_below)
    out["gpu_memory_low"] = (gm, waste["gpu_s_alloc"].to_numpy(dtype=float) / H,
                             cost("cost_usd_gpu_alloc") * (1.0 - np.nan_to_num(share)))
    measured["gpu_memory_low"] = gm_known & ~zero

    mem_known = waste["mem_usage_known"].to_numpy(dtype=bool) & long_enough & (mem >= t.cpu_mem_min_gib * GiB)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(mem_known, waste["mem_peak_bytes"].to_numpy(dtype=float) / mem, np.nan)
    xm = mem_known & (ratio < t.cpu_mem_ratio_below)
    out["excess_cpu_memory"] = (xm, waste["mem_byte_s_idle"].to_numpy(dtype=float) / GiB / H, cost("cost_usd_mem_idle"))
    measured["excess_cpu_memory"] = mem_known

    limit = waste["walltime_s_limit"].to_numpy(dtype=float)
    done = (waste["state"].astype(str) == "COMPLETED").to_numpy() & long_enough & np.isfinite(limit) & (limit > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tr = np.where(done, el / limit, np.nan)
    xt = done & (tr < t.time_ratio_below)
    out["excess_time_limit"] = (xt, cpus * np.maximum(limit - el, 0) / H, np.full(len(waste), np.nan))
    measured["excess_time_limit"] = done

    cpu_known = waste["cpu_usage_known"].to_numpy(dtype=bool) & long_enough & (gpus == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        busy = np.where(cpu_known, waste["core_s_used"].to_numpy(dtype=float) / el, np.nan)
    sm = cpu_known & (cpus >= t.serial_min_cores) & (busy <= t.serial_busy_cores_max)
    extra_core_h = np.maximum(cpus - 1, 0) * el / H
    out["serial_many_cores"] = (sm, extra_core_h, extra_core_h * cpu_usd)
    measured["serial_many_cores"] = cpu_known & (cpus >= t.serial_min_cores)

    node = _node_shape(waste, shape)
    nan = np.full(len(waste), np.nan)
    if node is not None:
        ncpu, nmem, ngpu = (node[c].to_numpy(dtype=float) for c in ("cpus", "mem_bytes", "gpus"))
        nodes = _f(jobs["alloc_nodes"]) if "alloc_nodes" in jobs else nan
        typed = np.isfinite(ncpu) & (ncpu > 0) & np.isfinite(nodes) & long_enough
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.fmax(np.ceil(cpus / ncpu), np.ceil(mem / nmem))
            need = np.fmax(need, np.where(ngpu > 0, np.ceil(gpus / ngpu), 0))
        need = np.maximum(np.nan_to_num(need, nan=1.0), 1.0)
        mn_known = typed & (nodes > 1)
        mn = mn_known & (need < nodes)
        out["multinode_fewer_nodes"] = (mn, np.where(mn, nodes - need, 0) * el / H, nan)
        measured["multinode_fewer_nodes"] = mn_known
        g_known = (gpus > 0) & typed & (ngpu > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            fair_c = t.per_gpu_factor * ncpu / ngpu * gpus
            fair_m = t.per_gpu_factor * nmem / ngpu * gpus
        xc = g_known & (cpus > fair_c)
        xc_h = np.where(xc, cpus - fair_c, 0) * el / H
        out["cores_per_gpu"] = (xc, xc_h, xc_h * cpu_usd)
        xg = g_known & (mem > fair_m)
        xg_h = np.where(xg, mem - fair_m, 0) / GiB * el / H
        out["memory_per_gpu"] = (xg, xg_h, xg_h * mem_usd)
        measured["cores_per_gpu"] = measured["memory_per_gpu"] = g_known
    else:
        for name in ("multinode_fewer_nodes", "cores_per_gpu", "memory_per_gpu"):
            out[name] = (np.zeros(len(waste), bool), nan, nan)
            measured[name] = None  # not measured: needs the cluster shape

    failed = waste["failed"].to_numpy(dtype=bool)
    out["failed_work"] = (failed, waste["core_s_alloc"].to_numpy(dtype=float) / H, cost("cost_usd_alloc"))
    measured["failed_work"] = np.ones(len(waste), bool)
    return out, measured


def _sum(x: np.ndarray):
    return float(np.nansum(x)) if np.isfinite(x).any() else None


def find(waste: pd.DataFrame, jobs: pd.DataFrame, book=None, shape: pd.DataFrame | None = None,
         thresholds: Thresholds | None = None) -> Findings:
    """Every finding of the month: the table, the jobs flagged, failed work by cause, and per account."""
    flags, measured = flag_jobs(waste, jobs, book, shape, thresholds)
    users = waste["user"].astype(str).to_numpy()
    rows, frames = [], []
    for name, (on, hours, usd) in flags.items():
        title, unit, fix = FINDINGS[name]
        m = measured[name]
        priced = name not in ("excess_time_limit", "multinode_fewer_nodes")
        rows.append({
            "finding": name, "title": title, "jobs": int(on.sum()), "users": int(len(set(users[on]))),
            "resource_hours": _sum(np.where(on, hours, 0.0)) if m is not None else None, "unit": unit,
            "usd": (_sum(np.where(on, usd, 0.0)) if book is not None else None) if priced and m is not None else None,
            "priced": priced, "measured_jobs": None if m is None else int(m.sum()), "fix": fix,
        })
        idx = np.flatnonzero(on)
        if idx.size:
            frames.append(pd.DataFrame({
                "job_id": waste["job_id"].to_numpy()[idx], "user": users[idx],
                "account": waste["account"].astype(str).to_numpy()[idx],
                "partition": waste["partition"].astype(str).to_numpy()[idx], "finding": name,
                "resource_hours": hours[idx], "usd": usd[idx] if priced else np.nan}))
    table = pd.DataFrame(rows)
    flagged = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(JOB_COLUMNS))
    return Findings(table=table, jobs=flagged, by_cause=failed_by_cause(waste), by_account=by_account(flagged))


def failed_by_cause(waste: pd.DataFrame) -> pd.DataFrame:
    """Failed work per final state: jobs, users, core- and GPU-hours held, allocated dollars, the fix."""
    rows = []
    for state in FAILED_STATES:
        on = (waste["state"].astype(str) == state).to_numpy()
        usd = waste["cost_usd_alloc"].to_numpy(dtype=float)[on].sum() if "cost_usd_alloc" in waste else np.nan
        rows.append({"cause": state, "jobs": int(on.sum()), "users": int(waste["user"][on].nunique()),
                     "core_hours": float(waste["core_s_alloc"].to_numpy(dtype=float)[on].sum() / H),
                     "gpu_hours": float(waste["gpu_s_alloc"].to_numpy(dtype=float)[on].sum() / H),
                     "usd": None if np.isnan(usd) else float(usd), "fix": CAUSE_FIX[state]})
    return pd.DataFrame(rows)


def by_account(flagged: pd.DataFrame) -> pd.DataFrame:
    """Per account (each path prefix rolls up to its top level) and finding: jobs, users, resource-hours, USD."""
    cols = ["account", "finding", "jobs", "users", "resource_hours", "usd"]
    if flagged.empty:
        return pd.DataFrame(columns=cols)
    top = flagged.assign(account=flagged["account"].astype(str).str.split("/").str[0])
    g = top.groupby(["account", "finding"], sort=True)
    out = pd.DataFrame({"jobs": g.size(), "users": g["user"].nunique(),
                        "resource_hours": g["resource_hours"].sum(min_count=1), "usd": g["usd"].sum(min_count=1)})
    return out.reset_index()[cols]
