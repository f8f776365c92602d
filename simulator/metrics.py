"""Summary metrics of a run (all vectorised over the result arrays).

Definitions (docs/simulator.md): wait = first start − submission; bounded slowdown =
max(1, (end − submit) / max(run, τ)) with τ = 10 s, over completed jobs; makespan = last end −
first submission; throughput = completed jobs per hour of makespan; occupancy = time-averaged
held / capacity over the makespan; utilisation = time-averaged used / capacity; delivered GPU-hours
= GPU-hours held by an account's attempts (completed or not); entitled = its budget share × the
cluster's GPU-hours over the makespan; lost work = resource-seconds of attempts that were killed or
preempted without resuming, plus the restart overhead paid by resumed ones; held resource-hours =
resources held × attempt length, summed over attempts; re-runs = attempts beyond each job's first;
wait passes = scheduling passes waited, summed over jobs, by reason.
"""

from __future__ import annotations

import numpy as np

from .occupancy import occupancy
from .result import REASONS

TAU_S = 10.0


def lost_seconds(result) -> np.ndarray:
    """Seconds of each attempt's run that were wasted."""
    r = result
    dur = r.a_end - r.a_start
    killed = (r.a_outcome == "OUT_OF_MEMORY") | (r.a_outcome == "TIMEOUT")
    preempted = r.a_outcome == "PREEMPTED"
    resumable = r.resumable[r.a_job] if len(r.a_job) else np.zeros(0, dtype=bool)
    whole = killed | (preempted & ~resumable)
    return np.where(whole, dur, np.minimum(r.a_overhead, dur))


def metrics(result, *, shares: dict | None = None, tau_s: float = TAU_S, accounts: bool = True) -> dict:
    """The run's summary (module text); ``accounts=False`` leaves out ``gpu_hours_by_account``."""
    r = result
    started = ~np.isnan(r.start)
    done = r.state == "COMPLETED"
    waits = r.wait[started]
    t0 = float(r.submit.min()) if len(r.submit) else 0.0
    ended = ~np.isnan(r.end)
    # the last end; where every job that started still runs at the horizon, the last start
    t1 = float(r.end[ended].max()) if ended.any() else float(r.start[started].max()) if started.any() else t0
    span = t1 - t0
    out = {
        "jobs": int(len(r.id)),
        "jobs_started": int(started.sum()),
        "jobs_completed": int(done.sum()),
        "jobs_rejected": int((r.state == "REJECTED").sum()),
        "jobs_pending": int((r.state == "PENDING").sum()),
        "jobs_failed": int((started & ~done & (r.state != "RUNNING")).sum()),
        "mean_wait_s": float(waits.mean()) if len(waits) else 0.0,
        "median_wait_s": float(np.median(waits)) if len(waits) else 0.0,
        "p95_wait_s": float(np.percentile(waits, 95)) if len(waits) else 0.0,
        "p99_wait_s": float(np.percentile(waits, 99)) if len(waits) else 0.0,
        "max_wait_s": float(waits.max()) if len(waits) else 0.0,
    }
    resp = (r.end - r.submit)[done]
    bsld = np.maximum(1.0, resp / np.maximum(r.run[done], tau_s))
    out["mean_bounded_slowdown"] = float(bsld.mean()) if len(bsld) else 0.0
    out["makespan_s"] = span
    out["throughput_jobs_per_h"] = float(done.sum() / (span / 3600.0)) if span > 0 else 0.0
    occ = occupancy(r)
    caps = {"cpus": r.capacity["cpus"], "mem": r.capacity["mem_bytes"], "gpus": r.capacity["gpus"]}
    held = {"cpus": occ.held_cpus, "mem": occ.held_mem, "gpus": occ.held_gpus}
    used = {"cpus": occ.used_cpus, "mem": occ.used_mem, "gpus": occ.used_gpus}
    for name, cap in caps.items():
        denom = cap * span
        out[f"occupancy_{name}"] = occ.integral(held[name], t0, t1) / denom if denom > 0 else 0.0
        out[f"utilization_{name}"] = occ.integral(used[name], t0, t1) / denom if denom > 0 else 0.0
        out[f"peak_occupancy_{name}"] = float(held[name].max() / cap) if cap > 0 and len(held[name]) else 0.0
    out["occupancy"] = out["occupancy_cpus"]
    out["utilization"] = out["utilization_cpus"]
    out["attempts"] = int(len(r.a_job))
    out["reruns"] = int(len(r.a_job) - started.sum())
    out["kills_oom"] = int(r.ooms.sum())
    out["kills_timeout"] = int(r.timeouts.sum())
    out["preemptions"] = int(r.preemptions.sum())
    dur = r.a_end - r.a_start
    out["core_hours_held"] = float((dur * r.a_cpus).sum() / 3600.0)
    out["mem_gib_hours_held"] = float((dur * r.a_mem).sum() / 3600.0 / 2**30)
    out["gpu_hours_held"] = float((dur * r.a_gpus).sum() / 3600.0)
    lost = lost_seconds(r)
    out["lost_cpu_hours"] = float((lost * r.a_cpus).sum() / 3600.0)
    out["lost_mem_gib_hours"] = float((lost * r.a_mem).sum() / 3600.0 / 2**30)
    out["lost_gpu_hours"] = float((lost * r.a_gpus).sum() / 3600.0)
    out["wait_passes"] = dict(zip(REASONS, r.reasons.sum(axis=0).tolist(), strict=True))
    if accounts:
        out["gpu_hours_by_account"] = gpu_hours_by_account(r, shares, span)
    return out


def gpu_hours_by_account(result, shares: dict | None, span_s: float) -> dict:
    """``account → {"delivered": GPU-hours held, "entitled": share × cluster GPU-hours}``."""
    r = result
    if len(r.a_job) == 0:
        accounts = np.zeros(0, dtype=object)
        hours = np.zeros(0)
    else:
        accounts = r.account[r.a_job]
        hours = r.a_gpus * (r.a_end - r.a_start) / 3600.0
    delivered = _sums_by(accounts, hours)
    names = sorted(set(delivered) | set((shares or {}).keys()))
    cluster_hours = r.capacity["gpus"] * span_s / 3600.0
    out = {}
    for name in names:
        share = (shares or {}).get(name)
        out[name] = {"delivered": delivered.get(name, 0.0),
                     "entitled": None if share is None else share * cluster_hours}
    return out


def codes(keys: np.ndarray) -> tuple:
    """``(names, codes)``: the distinct keys in the order first seen, and each key's index in them."""
    values = keys.tolist()
    names = list(dict.fromkeys(values))
    index = {k: n for n, k in enumerate(names)}
    return names, np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))


def _sums_by(keys: np.ndarray, values: np.ndarray) -> dict:
    """``{key: sum of its values}``, each sum taken over the key's values in their order (as
    ``values[keys == key].sum()`` would, so the floating-point sums are the same)."""
    names, got = codes(keys)
    order = np.argsort(got, kind="stable")
    bounds = np.searchsorted(got[order], np.arange(len(names) + 1))
    return {name: float(values[order[bounds[k]:bounds[k + 1]]].sum()) for k, name in enumerate(names)}


def wait_gap(simulated, logged) -> dict:
    """Mean waits of a simulated run and of the logged run of the same jobs, and their gap."""
    a, b = float(np.nanmean(simulated.wait)), float(np.nanmean(logged.wait))
    return {"simulated_mean_wait_s": a, "logged_mean_wait_s": b, "gap_s": b - a,
            "ratio": b / a if a > 0 else float("inf")}
