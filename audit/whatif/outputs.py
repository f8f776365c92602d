"""The files of a what-if: ``whatif/summary.json`` (stable keys, docs/glossary.md), ``scenarios.parquet``
(one row per scenario), ``jobs.parquet`` (per job and scenario), ``capacity.csv`` and ``tradeoff.csv``.

Nothing here depends on how the replays were run: the same inputs and seed give the same bytes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .sweep import Options, Sweep

#: per-scenario figures kept in summary.json and scenarios.parquet (simulator metrics, docs/simulator.md)
SCENARIO_KEYS = (
    "jobs", "jobs_started", "jobs_completed", "jobs_rejected", "jobs_failed", "mean_wait_s", "median_wait_s",
    "p95_wait_s", "p99_wait_s", "max_wait_s", "mean_bounded_slowdown", "makespan_s", "throughput_jobs_per_h",
    "occupancy_cpus", "occupancy_mem", "occupancy_gpus", "utilization_cpus", "utilization_mem", "utilization_gpus",
    "attempts", "reruns", "kills_oom", "kills_timeout", "preemptions", "core_hours_held", "mem_gib_hours_held",
    "gpu_hours_held", "lost_cpu_hours", "lost_mem_gib_hours", "lost_gpu_hours",
)


def _clean(x):
    """JSON-safe: NumPy scalars as Python, non-finite floats as null, dict keys as text."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def scenario_entry(s, m: dict, actual: dict) -> dict:
    e = {"kind": s.kind, "level": s.level, "mode": s.mode if s.kind == "rightsized" else None,
         "predictor": s.predictor if s.kind == "rightsized" else None}
    e.update({k: m[k] for k in SCENARIO_KEYS})
    e["wait_passes"] = m["wait_passes"]
    e["gpu_types"] = m.get("gpu_types", {})
    base = actual.get("gpu_hours_by_account", {})
    mine = m.get("gpu_hours_by_account", {})
    e["gpu_hours_by_account"] = {a: {"delivered": mine.get(a, 0.0), "actual": base.get(a, 0.0)}
                                 for a in sorted(set(base) | set(mine))}
    e["wait_percentiles_s"] = m.get("waits", {}).get("percentiles", [])
    return e


def summary_of(sw: Sweep, setting, options: Options, *, dropped: dict, fidelity: dict, books: dict,
               chosen: str, kill_budget: dict | None = None, coverage: dict | None = None,
               gap: dict | None = None) -> dict:
    actual = sw.full["actual"]
    scen = {s.name: scenario_entry(s, sw.full[s.name], actual) for s in sw.scenarios}
    rec = None
    if sw.recommended is not None:
        row = next(r for r in sw.tradeoff if r["scenario"] == sw.recommended)
        cap = sw.capacity.get(sw.recommended, {})
        rec = {**row, "dollars": cap.get("dollars"), "nodes_total": cap.get("nodes_total"),
               "nodes_recovered_p5": sw.shaken.get("nodes_recovered_p5"),
               "nodes_recovered_p95": sw.shaken.get("nodes_recovered_p95")}
    cluster = setting.cluster
    groups = getattr(cluster, "groups", ())
    policies = {}
    for name, m in sw.policies.items():
        policies[name] = {k: m[k] for k in SCENARIO_KEYS}
        if name == "budget":
            hours = m["makespan_s"] / 3600.0 * m["capacity"]["gpus"]
            policies[name]["gpu_hours_by_account"] = {
                a: {"delivered": m.get("gpu_hours_by_account", {}).get(a, 0.0),
                    "entitled": setting.shares.get(a, 0.0) * hours} for a in sorted(setting.shares)}
    out = {
        "jobs": len(setting.month),
        "dropped": dropped,
        "cluster": {"nodes": sum(g.count for g in groups) if groups else getattr(cluster, "procs", 0),
                    "unit": "node" if groups else "processor",  # what a node count counts: a pool's are processors
                    "groups": {g.name: g.count for g in groups},
                    "pools": [list(p) for p in cluster.pools()] if groups else []},
        "options": {"risk": list(options.risk), "modes": list(options.modes), "predictor": options.predictor,
                    "backfill_order": options.backfill_order, "policy": options.policy,
                    "replicates": options.replicates, "tolerance": options.tolerance, "seed": options.seed,
                    "capacity_search": options.capacity_search, "kill_budget": options.kill_budget,
                    "gpu_hours_budget": options.gpu_hours_budget},
        "prediction_coverage": {str(k): {t: float(np.isfinite(v).mean()) if len(v) else 0.0 for t, v in p.items()}
                                for k, p in setting.month.predictions.items()},
        "fidelity": fidelity,
        "scenarios": scen,
        "capacity": sw.capacity,
        "capacity_probes": sw.probes,
        "tradeoff": sw.tradeoff,
        "recommended": rec,
        "shaken": sw.shaken,
        "headroom": sw.headroom,
        "policies": policies,
        "price_book": chosen,
        "price_books": {n: {"date": b["date"], "origin": b["origin"]} for n, b in books.items()},
        "replays": sw.replays,
        "kill_budget": kill_budget,
        "coverage_by_stratum": coverage,
        "gap": gap,
    }
    return _clean(out)


def write_outputs(out: Path, sw: Sweep, summary: dict) -> Path:
    folder = out / "whatif"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, e in summary["scenarios"].items():
        flat = {"scenario": name, **{k: e[k] for k in ("kind", "level", "mode", "predictor", *SCENARIO_KEYS)}}
        cap = summary["capacity"].get(name) or {}
        flat["nodes_recovered"] = cap.get("nodes_recovered")
        flat["share_recovered"] = cap.get("share_recovered")
        rows.append(flat)
    pd.DataFrame(rows).to_parquet(folder / "scenarios.parquet", index=False)
    frames = []
    for name, cols in sw.jobs.items():
        f = pd.DataFrame(cols)
        f.insert(0, "scenario", name)
        frames.append(f)
    pd.concat(frames, ignore_index=True).to_parquet(folder / "jobs.parquet", index=False)
    cap_rows = []
    for name, c in summary["capacity"].items():
        row = {k: c[k] for k in ("scenario", "nodes_total", "nodes_kept", "nodes_recovered", "share_recovered")}
        for book, d in sorted(c["dollars"].items()):
            row[f"usd_per_month_{book}"] = d["usd_per_month"]
            row[f"usd_per_year_{book}"] = d["usd_per_year"]
        if summary.get("shaken") and summary["shaken"].get("scenario") == name:
            row["nodes_recovered_p5"] = summary["shaken"]["nodes_recovered_p5"]
            row["nodes_recovered_p95"] = summary["shaken"]["nodes_recovered_p95"]
        cap_rows.append(row)
    pd.DataFrame(cap_rows).to_csv(folder / "capacity.csv", index=False)
    pd.DataFrame(summary["tradeoff"]).to_csv(folder / "tradeoff.csv", index=False)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder
