"""Folding step lines (``.batch``, ``.extern``, ``.0``…) into their job: CPU time and peak memory.

The rules (also in docs/glossary.md):

* ``cpu_used_s``: the allocation line's ``TotalCPU`` (sacct prints the sum over the job's steps there);
  when that is empty, the sum of the steps' ``TotalCPU``.
* A step's memory: ``TRESUsageInTot`` ``mem=`` (the sum over the step's tasks of each task's peak) when
  present; else ``AveRSS × NTasks`` (the same sum, from the mean); else ``MaxRSS`` (the largest single task:
  a lower bound when the step ran more than one task, flagged ``maxrss_single_task``).
* ``mem_peak_bytes``: the largest step memory over the job's steps (steps of a batch script run one
  after another; the ``.extern`` step only holds the job's adopted processes).  With no step lines, the
  allocation line's own ``MaxRSS`` if any.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...units import parse_duration, parse_int, parse_size, tres_value


def step_usage(cols: dict, idx: np.ndarray) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Per-row usage values for the rows ``idx`` and the bad masks of the usage fields."""
    bad: dict[str, np.ndarray] = {}
    n = len(idx)
    out = pd.DataFrame(index=np.arange(n))

    def take(name):
        return cols[name].take(idx) if name in cols else None

    for name, parser, key in (
        ("TotalCPU", lambda a: parse_duration(a), "cpu_s"),
        ("MaxRSS", lambda a: parse_size(a, "K"), "maxrss"),
        ("AveRSS", lambda a: parse_size(a, "K"), "averss"),
        ("NTasks", lambda a: parse_int(a), "ntasks"),
    ):
        col = take(name)
        if col is None:
            out[key] = np.nan
            continue
        val, b = parser(col)
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
    ave_total = out["averss"].to_numpy() * out["ntasks"].to_numpy()
    mem = np.where(np.isnan(mem), ave_total, mem)
    single = np.isnan(mem) & ~np.isnan(out["maxrss"].to_numpy())
    mem = np.where(np.isnan(mem), out["maxrss"].to_numpy(), mem)
    out["mem"] = mem
    out["single_task_only"] = single & (np.nan_to_num(out["ntasks"].to_numpy(), nan=1.0) > 1)
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
        "single_task_only": g["single_task_only"].any(),
        "n_steps": g.size(),
    }).reindex(np.arange(nj))
    cpu = job_usage["cpu_s"].to_numpy()
    cpu = np.where(np.isnan(cpu), agg["step_cpu_s"].to_numpy(), cpu)
    mem = agg["step_mem"].to_numpy()
    own = job_usage["mem"].to_numpy()
    mem = np.where(np.isnan(mem), own, mem)
    return pd.DataFrame({
        "cpu_used_s": cpu,
        "mem_peak_bytes": mem,
        "mem_from_batch_only": ~np.isnan(agg["step_mem"].to_numpy()) & np.isnan(agg["numbered_mem"].to_numpy()),
        "single_task_only": agg["single_task_only"].fillna(False).to_numpy(dtype=bool),
        "n_steps": agg["n_steps"].fillna(0).to_numpy(dtype=int),
    })
