"""Folding step lines (``.batch``, ``.extern``, ``.0``…) into their job: CPU time and peak memory.

The rules (also in docs/glossary.md):

* ``cpu_used_s``: the allocation line's ``TotalCPU`` (sacct prints the sum over the job's steps there);
  when that is empty, the sum of the steps' ``TotalCPU``.
* A step's memory: ``TRESUsageInTot`` ``mem=`` (the sum over the step's tasks of each task's peak) when
  present; else ``AveRSS × NTasks`` (the same sum, from the mean); else, from ``MaxRSS`` (the largest single
  task's peak) and the tasks on each node, ``MaxRSS × ⌈NTasks / NNodes⌉`` per node (reportseff's rule: an
  upper bound, every task on the node as large as the largest) times the step's ``NNodes`` (the job's total
  is the sum over nodes of each node's peak), flagged ``maxrss_times_tasks``; a step of one task on one node
  is exact.  When the tasks per node are unknown (no ``NTasks``, or several tasks and no ``NNodes``) the
  step's memory is ``MaxRSS`` alone, a lower bound flagged ``maxrss_single_task``.
* ``mem_peak_bytes``: the largest step memory over the job's steps (steps of a batch script run one
  after another; the ``.extern`` step only holds the job's adopted processes); the row carries the bound
  flag of the step that gave it.  With no step lines, the allocation line's own figure by the same rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...units import parse_duration, parse_int, parse_size, tres_value
from .distinct import per_distinct
from .lines import take_rows


def step_usage(cols: dict, idx: np.ndarray) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Per-row usage values for the rows ``idx`` and the bad masks of the usage fields."""
    bad: dict[str, np.ndarray] = {}
    n = len(idx)
    out = pd.DataFrame(index=np.arange(n))

    def take(name):
        return take_rows(cols[name], idx) if name in cols else None

    for name, parser, key in (
        ("TotalCPU", lambda a: parse_duration(a), "cpu_s"),
        ("MaxRSS", lambda a: parse_size(a, "K"), "maxrss"),
        ("AveRSS", lambda a: parse_size(a, "K"), "averss"),
        ("NTasks", lambda a: parse_int(a), "ntasks"),
        ("NNodes", lambda a: parse_int(a), "nnodes"),
    ):
        col = take(name)
        if col is None:
            out[key] = np.nan
            continue
        val, b = per_distinct(parser, col)
        out[key] = val
        bad[name] = b
    tot = take("TRESUsageInTot")
    if tot is not None:
        val, b = parse_size(tres_value(tot, "mem"), "")
        out["tresmem"] = val
        bad["TRESUsageInTot"] = b
    else:
        out["tresmem"] = np.nan
    mem = out["tresmem"].to_numpy()
    ntasks = out["ntasks"].to_numpy()
    nnodes = out["nnodes"].to_numpy()
    maxrss = out["maxrss"].to_numpy()
    mem = np.where(np.isnan(mem), out["averss"].to_numpy() * ntasks, mem)
    from_maxrss = np.isnan(mem) & ~np.isnan(maxrss)
    # tasks on a node: NTasks spread over the step's NNodes (the most loaded node); one task needs no NNodes
    with np.errstate(invalid="ignore", divide="ignore"):
        per_node = np.where(ntasks == 1, 1.0, np.ceil(ntasks / np.where(nnodes > 0, nnodes, np.nan)))
    nodes = np.where(ntasks == 1, np.where(nnodes > 0, nnodes, 1.0), nnodes)
    known = from_maxrss & ~np.isnan(per_node) & (nodes > 0)
    mem = np.where(known, maxrss * per_node * nodes, mem)
    mem = np.where(from_maxrss & ~known, maxrss, mem)
    out["mem"] = mem
    out["upper_bound"] = known & (per_node * nodes > 1)
    out["single_task_only"] = from_maxrss & ~known
    return out, bad


def fold(job_pos: np.ndarray, step_parent: np.ndarray, step_names: np.ndarray, job_usage: pd.DataFrame,
         step_usage_df: pd.DataFrame) -> pd.DataFrame:
    """Combine step usage into one row per job (indexed by job position 0..len(job_pos)-1).

    ``step_parent`` gives, for each step row, the position of its job in ``job_pos``.
    """
    nj = len(job_pos)
    st = step_usage_df.assign(parent=step_parent, name=step_names)
    numbered = ~pd.Series(step_names).isin(["batch", "extern", "interactive"]).to_numpy()
    st["numbered_mem"] = np.where(numbered, st["mem"], np.nan)
    g = st.groupby("parent", sort=False)
    agg = pd.DataFrame({
        "step_cpu_s": g["cpu_s"].sum(min_count=1),
        "step_mem": g["mem"].max(),
        "numbered_mem": g["numbered_mem"].max(),
        "n_steps": g.size(),
    }).reindex(np.arange(nj))
    # the bound carried by the job's figure is that of the step that gave it (the first such on a tie)
    top = st[st["mem"].notna()].sort_values("mem", ascending=False, kind="stable").drop_duplicates("parent")
    for flag in ("single_task_only", "upper_bound"):
        agg[flag] = pd.Series(top[flag].to_numpy(dtype=bool), index=top["parent"].to_numpy()).reindex(
            np.arange(nj), fill_value=False).to_numpy(dtype=bool)
    cpu = job_usage["cpu_s"].to_numpy()
    cpu = np.where(np.isnan(cpu), agg["step_cpu_s"].to_numpy(), cpu)
    mem = agg["step_mem"].to_numpy()
    own = job_usage["mem"].to_numpy()
    own_used = np.isnan(mem) & ~np.isnan(own)
    mem = np.where(np.isnan(mem), own, mem)
    single = np.where(own_used, job_usage["single_task_only"].to_numpy(dtype=bool), agg["single_task_only"])
    upper = np.where(own_used, job_usage["upper_bound"].to_numpy(dtype=bool), agg["upper_bound"])
    return pd.DataFrame({
        "cpu_used_s": cpu,
        "mem_peak_bytes": mem,
        "mem_from_batch_only": ~np.isnan(agg["step_mem"].to_numpy()) & np.isnan(agg["numbered_mem"].to_numpy()),
        "single_task_only": single.astype(bool),
        "upper_bound": upper.astype(bool),
        "n_steps": agg["n_steps"].fillna(0).to_numpy(dtype=int),
    })
