"""Where the oracle's capacity went: the recommended scenario against the oracle, by resource and by cause.

By resource (memory GiB-h, core-h, GPU-h held over each job's logged run; time as the core-hours the
scheduler plans with, the time estimate × cores): what was asked, what the oracle holds, what the scenario
holds, and the scenario's gap to the oracle split between the jobs that had no history to be right-sized
from (no prediction for that resource, or a cold start: fewer than two ended jobs of their habit) and the
jobs that had one (the spread of their predictions: a bound above the need, or a request kept because the
stratum's spread made a cut cost more kills than the budget allowed).

By cause, in nodes: the oracle recovers ``N_o`` nodes and the scenario ``N_s``.  The *binding* resource is
the held one (memory, cores, GPUs) whose oracle cut is the most nodes' worth (the cut over the month's span and
one node's average capacity of it: ``F_o`` nodes' worth).  The smallest cluster that keeps today's p95 wait and
bounded slowdown turns the oracle's ``F_o`` into ``N_o`` nodes; at that same rate (``N_o / F_o`` nodes per
node's worth) the binding resource's no-history gap, its spread gap, and the resource-hours of the attempts
that were killed (kills and re-runs, beyond the oracle's) are converted to nodes.  The rest of ``N_o − N_s``
is the service rule's: capacity the scenario freed that its queue, packing and kills' delays still need,
beyond what the rule costs the oracle.  The four add up to ``N_o − N_s`` by construction.
"""

from __future__ import annotations

import numpy as np

from .scenarios import GIB, Scenario, oracle_requests, requests_for

RESOURCES = ("memory", "cores", "gpus", "time")
UNITS = {"memory": "GiB-h", "cores": "core-h", "gpus": "GPU-h", "time": "core-h planned"}
CAUSES = ("no_history", "prediction_spread", "kills_reruns", "service_rule")


def _held(m, r) -> dict:
    """Unit-hours held per job for each resource under requests ``r``."""
    run_h = np.maximum(m.run, 0.0) / 3600.0
    cores = r.cpus / m.cpu_unit
    return {"memory": r.mem / GIB * run_h, "cores": cores * run_h, "gpus": r.gpus / m.gpu_unit * run_h,
            "time": np.where(np.isfinite(r.estimate), r.estimate, m.run) / 3600.0 * cores}


def _node_capacity(cluster) -> dict:
    """One node's average capacity of each resource (GiB, cores, GPUs; cores for the plan)."""
    groups = getattr(cluster, "groups", ())
    nodes = sum(g.count for g in groups)
    if not nodes:
        procs = float(getattr(cluster, "procs", 0))
        return {"memory": 0.0, "cores": procs, "gpus": 0.0, "time": procs}
    cores = sum(g.count * g.cpus for g in groups) / nodes
    return {"memory": sum(g.count * g.mem_bytes for g in groups) / nodes / GIB, "cores": cores,
            "gpus": sum(g.count * g.gpus for g in groups) / nodes, "time": cores}


def gap_of(scenario, setting, full: dict, capacity: dict, history: dict) -> dict | None:
    """The decomposition for ``scenario`` (a :class:`.scenarios.Scenario`); ``full``: the sweep's full-size
    metrics by scenario name; ``capacity``: its capacity rows by name; ``history``: per target (``memory``,
    ``cpus``, ``gpus``, ``walltime``) a mask over the month's jobs of those with a history to be right-sized
    from.  None without both capacity searches."""
    m = setting.month
    cap_s, cap_o = capacity.get(scenario.name), capacity.get("oracle")
    if not cap_s or not cap_o or cap_s.get("nodes_recovered") is None or cap_o.get("nodes_recovered") is None:
        return None
    span_h = (float(np.nanmax(m.submit + m.run) - np.nanmin(m.submit)) / 3600.0) if len(m) else 0.0
    asked = _held(m, requests_for(m, Scenario("actual")))
    oracle = _held(m, oracle_requests(m))
    held = _held(m, requests_for(m, scenario))
    per_node = _node_capacity(setting.cluster)
    target_of = {"memory": "memory", "cores": "cpus", "gpus": "gpus", "time": "walltime"}
    rows, nodes_worth = [], {}
    for res in RESOURCES:
        known = history.get(target_of[res])
        known = np.zeros(len(m), dtype=bool) if known is None else known
        gap = held[res] - oracle[res]
        row = {"resource": res, "unit": UNITS[res], "asked": float(asked[res].sum()),
               "oracle": float(oracle[res].sum()), "held": float(held[res].sum()),
               "gap": float(gap.sum()), "no_history": float(gap[~known].sum()),
               "prediction_spread": float(gap[known].sum())}
        cut = row["asked"] - row["oracle"]
        row["oracle_cut_share"] = cut / row["asked"] if row["asked"] > 0 else None
        row["scenario_cut_share"] = (row["asked"] - row["held"]) / row["asked"] if row["asked"] > 0 else None
        row["share_of_oracle_cut_reached"] = (row["asked"] - row["held"]) / cut if cut > 0 else None
        rows.append(row)
        scale = per_node[res] * span_h
        nodes_worth[res] = cut / scale if scale > 0 else 0.0
    binding = max(("memory", "cores", "gpus"), key=lambda res: (nodes_worth[res], -RESOURCES.index(res)))
    n_o, n_s = int(cap_o["nodes_recovered"]), int(cap_s["nodes_recovered"])
    rate = n_o / nodes_worth[binding] if nodes_worth[binding] > 0 else 0.0
    scale = per_node[binding] * span_h / rate if rate > 0 else 0.0
    b = next(r for r in rows if r["resource"] == binding)
    lost = {"memory": "lost_mem_gib_hours", "cores": "lost_cpu_hours", "gpus": "lost_gpu_hours",
            "time": "lost_cpu_hours"}[binding]
    lost_h = float(full[scenario.name].get(lost, 0.0)) - float(full["oracle"].get(lost, 0.0))
    causes = {"no_history": b["no_history"] / scale if scale else 0.0,
              "prediction_spread": b["prediction_spread"] / scale if scale else 0.0,
              "kills_reruns": lost_h / scale if scale else 0.0}
    causes["service_rule"] = (n_o - n_s) - sum(causes.values())
    return {"scenario": scenario.name, "nodes_total": cap_s.get("nodes_total"), "oracle_nodes_recovered": n_o,
            "nodes_recovered": n_s, "nodes_gap": n_o - n_s, "binding_resource": binding, "span_hours": span_h,
            "oracle_nodes_worth": nodes_worth[binding], "nodes_per_node_worth": rate,
            "by_resource": rows,
            "by_cause": [{"cause": c, "nodes": causes[c],
                          "share": causes[c] / (n_o - n_s) if n_o != n_s else None} for c in CAUSES]}

