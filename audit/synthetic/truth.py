"""Planted ground truth from the generator's own records (never from reading its files back).

Definitions (docs/synthetic.md), per job row, with elapsed_s the run time of the allocation:
  core_hours_alloc   = alloc_cpus x elapsed_s / 3600
  core_hours_used    = TotalCPU of the allocation line / 3600 (what sacct records; 0 for MPI jobs
                       started outside srun: core_hours_used_true adds their real use)
  mem_gib_hours_alloc = alloc_mem_bytes x elapsed_s / 2**30 / 3600
  mem_gib_hours_peak  = mem_peak_bytes x elapsed_s / 2**30 / 3600
  gpu_hours_alloc    = alloc_gpus x elapsed_s / 3600
  gpu_hours_used     = alloc_gpus x elapsed_s x gpu_util_mean / 3600
  gpu_mem_gib_hours_alloc = alloc_gpus x GPU memory x elapsed_s / 2**30 / 3600
  gpu_mem_gib_hours_peak  = gpu_mem_peak_bytes (sum over held GPUs of each one's peak) x elapsed_s / 2**30 / 3600
"""

from __future__ import annotations

import numpy as np
import pandas as pd

H = 3600.0
GIB = float(2**30)
FAILED_STATES = ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL", "PREEMPTED")


def job_truth_frame(t: dict) -> pd.DataFrame:
    """The per-job truth table (also written as truth_jobs.csv)."""
    return pd.DataFrame({
        "job_id": t["job_id"], "account": t["account"], "partition": t["partition"], "state": t["state"],
        "start": t["start"], "end": t["end"], "elapsed_s": t["elapsed_s"], "limit_s": t["limit_s"], "alloc_cpus": t["alloc_cpus"],
        "alloc_mem_bytes": t["alloc_mem_bytes"], "alloc_gpus": t["alloc_gpus"],
        "cpu_used_s": np.round(t["cpu_used_ms"] / 1000.0, 3), "cpu_true_s": np.round(t["cpu_true_ms"] / 1000.0, 3),
        "mem_peak_bytes": t["mem_peak_bytes"], "gpu_util_mean": np.round(t["gpu_util_mean"], 6),
        "gpu_mem_peak_bytes": t["gpu_mem_peak_bytes"], "gpu_mem_max_per_gpu_bytes": t["gpu_mem_max_per_gpu_bytes"],
        "gpu_samples": t["gpu_samples"], "jobstats": t["jobstats"], "totalcpu_zero": t["totalcpu_zero"],
    })


def _hours(df: pd.DataFrame) -> pd.DataFrame:
    el = df["elapsed_s"].astype(float)
    util = df["gpu_util_mean"].fillna(0.0)
    return pd.DataFrame({
        "jobs": 1,
        "core_hours_alloc": df["alloc_cpus"] * el / H,
        "core_hours_used": df["cpu_used_s"] / H,
        "core_hours_used_true": df["cpu_true_s"] / H,
        "mem_gib_hours_alloc": df["alloc_mem_bytes"] * el / GIB / H,
        "mem_gib_hours_peak": df["mem_peak_bytes"] * el / GIB / H,
        "gpu_hours_alloc": df["alloc_gpus"] * el / H,
        "gpu_hours_used": df["alloc_gpus"] * el * util / H,
        "gpu_mem_gib_hours_alloc": df["gpu_mem_alloc_bytes"] * el / GIB / H,
        "gpu_mem_gib_hours_peak": df["gpu_mem_peak_bytes"].fillna(0) * el / GIB / H,
    }, index=df.index)


def _round(d: dict) -> dict:
    return {k: int(v) if k == "jobs" else round(float(v), 6) for k, v in d.items()}


def truth_totals(df: pd.DataFrame, extra: dict, jobstats_short_s: int = 60) -> dict:
    hours = _hours(df)
    totals = _round(hours.sum().to_dict())
    gpu = df["alloc_gpus"] > 0
    summary = df["jobstats"].astype(bool) & (df["elapsed_s"] >= jobstats_short_s)
    gpu_cols = ["jobs", "gpu_hours_alloc", "gpu_hours_used", "gpu_mem_gib_hours_alloc", "gpu_mem_gib_hours_peak"]
    by_source = {
        "jobstats": _round(hours[gpu & summary][gpu_cols].sum().to_dict()),
        "telemetry_only": _round(hours[gpu & ~summary][gpu_cols].sum().to_dict()),
    }
    by_account = {a: _round(g.sum().to_dict()) for a, g in hours.groupby(df["account"], sort=True)}
    failed = {}
    for s in FAILED_STATES:
        on = df["state"] == s
        failed[s] = _round(hours[on][["jobs", "core_hours_alloc", "gpu_hours_alloc", "mem_gib_hours_alloc"]].sum()
                           .to_dict()) | {"elapsed_hours": round(float(df["elapsed_s"][on].sum()) / H, 6)}
    out = {
        "definitions": "docs/synthetic.md#ground-truth",
        "totals": totals,
        "gpu_by_usage_source": by_source,
        "failed_by_state": failed,
        "failed_hours_by_state": {s: failed[s]["core_hours_alloc"] for s in FAILED_STATES},
        "failed_gpu_hours_by_state": {s: failed[s]["gpu_hours_alloc"] for s in FAILED_STATES},
        "per_account": by_account,
        "state_counts": {s: int(c) for s, c in df["state"].value_counts().sort_index().items()},
    }
    out.update(extra)
    return out


#: the history rules whose coverage and cut truth.json plants: (name, margin over the largest past peak, ended jobs needed)
HISTORY_RULES = (("max_past_peak_x1.2_after_2", 0.2, 2), ("max_past_peak_x1.5_after_3", 0.5, 3))
MIN_GROUP = 10


def _segmented_past_max(g: np.ndarray, submit: np.ndarray, end: np.ndarray, value: np.ndarray) -> tuple:
    """Per job: how many jobs of its group ended strictly before it was submitted, and the largest ``value``
    among them (0 when none); vectorised over groups by one sort on (group, end)."""
    order = np.lexsort((end, g))
    gs, es, vs = g[order], end[order], value[order]
    t0 = min(int(submit.min(initial=0)), int(end.min(initial=0)))
    span = max(int(submit.max(initial=0)), int(end.max(initial=0))) - t0 + 1
    key_end = gs.astype(np.int64) * span + (es - t0)
    pos = np.searchsorted(key_end, g.astype(np.int64) * span + (submit - t0), side="left")
    first = np.searchsorted(gs, g, side="left")
    count = pos - first
    # running max within each group: ranks keep the key exact in int64
    levels, rank = np.unique(vs, return_inverse=True)
    base = gs.astype(np.int64) * (len(levels) + 1)
    run = np.maximum.accumulate(base + rank.astype(np.int64)) - base
    past = np.where(count > 0, levels[run[np.maximum(pos - 1, 0)]], 0.0)
    return count, past


def within_habit(t: dict, settings: dict, forced: dict) -> dict:
    """The spread of use the generated month shows inside habits, measured on the generator's records.

    Groups are (user, job name, partition, CPUs, memory, nodes, GPUs, time limit) over the jobs that ran,
    kept when they hold at least ten jobs.  ``t`` has per job: ``user, job_name, partition, cpus, mem_bytes``
    (the request, job total), ``nodes, gpus, limit_s, start`` (−1 never started), ``elapsed_s, submit,
    state, mem_peak_bytes, cpu_true_s, single_thread``.
    """
    ran = np.asarray(t["start"]) >= 0
    df = pd.DataFrame({k: np.asarray(t[k])[ran] for k in (
        "user", "job_name", "partition", "cpus", "mem_bytes", "nodes", "gpus", "limit_s", "start", "elapsed_s",
        "submit", "state", "mem_peak_bytes", "cpu_true_s", "single_thread")})
    key = ["user", "job_name", "partition", "cpus", "mem_bytes", "nodes", "gpus", "limit_s"]
    g = df.groupby(key, sort=True).ngroup().to_numpy() if len(df) else np.zeros(0, dtype=np.int64)
    req = df["mem_bytes"].to_numpy(dtype=np.float64)
    peak = df["mem_peak_bytes"].to_numpy(dtype=np.float64)
    el = df["elapsed_s"].to_numpy(dtype=np.float64)

    def median_sd(values: np.ndarray, on: np.ndarray) -> tuple[float | None, int]:
        s = pd.Series(values[on]).groupby(g[on])
        sd = s.std()[s.size() >= MIN_GROUP]
        return (round(float(sd.median()), 6) if len(sd) else None), int(len(sd))

    mem_on = (peak > 0) & (req > 0)
    mem_sd, mem_groups = median_sd(np.log(np.where(mem_on, peak, 1.0) / np.where(mem_on, req, 1.0)), mem_on)
    done = (df["state"].to_numpy() == "COMPLETED") & (el >= 60)
    run_sd, run_groups = median_sd(np.log(np.maximum(el, 1.0)), done)
    eff = df["cpu_true_s"].to_numpy(dtype=np.float64) / np.maximum(df["cpus"].to_numpy(dtype=np.float64) * el, 1e-9)
    eff_ok = (el >= 60) & (eff > 0) & (eff < 1) & ~df["single_thread"].to_numpy(dtype=bool)
    e = np.clip(eff, 1e-6, 1 - 1e-6)
    cpu_sd, cpu_groups = median_sd(np.log(e / (1 - e)), eff_ok)

    rules = {}
    held_req = float((req * el).sum())
    if len(df):
        submit = df["submit"].to_numpy(dtype=np.int64)
        end = df["start"].to_numpy(dtype=np.int64) + df["elapsed_s"].to_numpy(dtype=np.int64)
        count, past = _segmented_past_max(g, submit, end, peak)
        for name, margin, after in HISTORY_RULES:
            held = np.where(count >= after, np.minimum((1.0 + margin) * past, req), req)
            rules[name] = {"margin": margin, "ended_jobs_needed": after,
                           "covered_share": round(float((held >= peak).mean()), 6),
                           "mem_gib_hours_cut": round(1.0 - float((held * el).sum()) / held_req, 6) if held_req else None}
        rules["oracle"] = {"mem_gib_hours_cut": round(1.0 - float((peak * el).sum()) / held_req, 6) if held_req else None}
    return {
        "definitions": "docs/synthetic.md#spread-of-use-within-habits",
        "settings": {k: float(v) for k, v in sorted(settings.items())},
        "forced": {"OUT_OF_MEMORY": int(np.asarray(forced["forced_oom"]).sum()),
                   "TIMEOUT": int((np.asarray(forced["forced_timeout"]) & ~np.asarray(forced["forced_oom"])).sum())},
        "measured": {
            "min_group_jobs": MIN_GROUP,
            "memory_groups": mem_groups,
            "memory_log_sd_median": mem_sd,
            "memory_peak_to_request_median": round(float(np.median(peak[mem_on] / req[mem_on])), 6) if mem_on.any() else None,
            "run_groups": run_groups,
            "run_log_sd_median": run_sd,
            "cpu_efficiency_groups": cpu_groups,
            "cpu_efficiency_logit_sd_median": cpu_sd,
        },
        "history_rules": rules,
    }
