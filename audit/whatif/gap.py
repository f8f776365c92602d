"""Where the oracle's capacity went: the recommended scenario against the oracle, by resource and by cause.

By resource (memory GiB-h, core-h, GPU-h held over each job's logged run; time as the core-hours the
scheduler plans with, the time estimate × cores): what was asked, what the oracle holds, what the scenario
holds, and the scenario's gap to the oracle split between the jobs that had no history to be right-sized
from (no prediction for that resource, or a cold start: fewer than two ended jobs of their habit) and the
jobs that had one (the spread of their predictions: a bound above the need, or a request kept because the
stratum's spread made a cut cost more kills than the budget allowed).

By cause, in nodes, pool by pool (pools share no node, and each is searched on its own; a cluster replayed
whole is one pool): the oracle recovers ``N_o`` of a pool's nodes and the scenario ``N_s``.  The pool's
*binding* resource is the held one (memory, cores, GPUs) whose oracle cut on the pool's jobs is the most of the
pool's nodes' worth (the cut over the month's span and one of its nodes' average capacity of it: ``F_o`` nodes'
worth).  The smallest pool that keeps today's p95 wait and bounded slowdown turns the oracle's ``F_o`` into
``N_o`` nodes; at that same rate (``N_o / F_o`` nodes per node's worth) the binding resource's no-history gap,
its spread gap, and the resource-hours of the pool's attempts that were killed (kills and re-runs, beyond the
oracle's) are converted to nodes.  The rest of ``N_o − N_s`` is the service rule's: capacity the scenario
freed that its queue, packing and kills' delays still need, beyond what the rule costs the oracle.  The four
add up to the pool's ``N_o − N_s`` by construction, and the cluster's causes are the sums over its pools.
A pool's binding resource is its own: a CPU pool's gap is counted in cores or memory even where GPUs are the
most of the whole cluster's cut.
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


def _node_capacity(cluster, groups) -> dict:
    """One node's average capacity of each resource over ``groups`` (GiB, cores, GPUs; cores for the plan)."""
    nodes = sum(g.count for g in groups)
    if not nodes:
        procs = float(getattr(cluster, "procs", 0))
        return {"memory": 0.0, "cores": procs, "gpus": 0.0, "time": procs}
    cores = sum(g.count * g.cpus for g in groups) / nodes
    return {"memory": sum(g.count * g.mem_bytes for g in groups) / nodes / GIB, "cores": cores,
            "gpus": sum(g.count * g.gpus for g in groups) / nodes, "time": cores}


def _pools(setting, pools) -> list:
    """``(number, name, job mask, node groups)`` of each pool replayed apart (number ``None`` and name ``all``:
    the whole cluster replayed at once)."""
    m, cluster = setting.month, setting.cluster
    groups = tuple(getattr(cluster, "groups", ()))
    if pools == [None] or not groups:
        return [(None, "all", np.ones(len(m), dtype=bool), groups)]
    out = []
    for p in pools:
        names = cluster.pools()[p]
        out.append((p, "+".join(names), m.pool == p, tuple(g for g in groups if g.name in names)))
    return out


def _recovered(cap: dict, groups) -> int:
    """Nodes ``cap`` (a capacity row) recovers in ``groups`` (the whole row's without groups)."""
    by_group = cap.get("recovered_by_group")
    if not groups or by_group is None:
        return int(cap["nodes_recovered"])
    return int(sum(by_group.get(g.name, 0) for g in groups))


def _lost(metrics: dict, res: str) -> float:
    key = {"memory": "lost_mem_gib_hours", "cores": "lost_cpu_hours", "gpus": "lost_gpu_hours"}[res]
    return float(metrics.get(key, 0.0))


def gap_of(scenario, setting, full: dict, capacity: dict, history: dict, pools_full: dict | None = None,
           pools: list | None = None) -> dict | None:
    """The decomposition for ``scenario`` (a :class:`.scenarios.Scenario`); ``full``: the sweep's full-size
    metrics by scenario name; ``capacity``: its capacity rows by name; ``history``: per target (``memory``,
    ``cpus``, ``gpus``, ``walltime``) a mask over the month's jobs of those with a history to be right-sized
    from; ``pools_full``: per scenario name, the full-size metrics of each pool replayed apart (numbers, or
    ``None`` for the whole cluster), ``pools`` their numbers (default ``[None]``).  None without both capacity
    searches."""
    m = setting.month
    cap_s, cap_o = capacity.get(scenario.name), capacity.get("oracle")
    if not cap_s or not cap_o or cap_s.get("nodes_recovered") is None or cap_o.get("nodes_recovered") is None:
        return None
    span_h = (float(np.nanmax(m.submit + m.run) - np.nanmin(m.submit)) / 3600.0) if len(m) else 0.0
    asked = _held(m, requests_for(m, Scenario("actual")))
    oracle = _held(m, oracle_requests(m))
    held = _held(m, requests_for(m, scenario))
    target_of = {"memory": "memory", "cores": "cpus", "gpus": "gpus", "time": "walltime"}
    known = {}
    rows = []
    for res in RESOURCES:
        k = history.get(target_of[res])
        known[res] = np.zeros(len(m), dtype=bool) if k is None else k
        gap = held[res] - oracle[res]
        row = {"resource": res, "unit": UNITS[res], "asked": float(asked[res].sum()),
               "oracle": float(oracle[res].sum()), "held": float(held[res].sum()),
               "gap": float(gap.sum()), "no_history": float(gap[~known[res]].sum()),
               "prediction_spread": float(gap[known[res]].sum())}
        cut = row["asked"] - row["oracle"]
        row["oracle_cut_share"] = cut / row["asked"] if row["asked"] > 0 else None
        row["scenario_cut_share"] = (row["asked"] - row["held"]) / row["asked"] if row["asked"] > 0 else None
        row["share_of_oracle_cut_reached"] = (row["asked"] - row["held"]) / cut if cut > 0 else None
        rows.append(row)
    pools_full = pools_full or {}
    by_pool = []
    for p, name, mask, groups in _pools(setting, pools or [None]):
        per_node = _node_capacity(setting.cluster, groups)
        worth = {}
        for res in ("memory", "cores", "gpus"):
            scale = per_node[res] * span_h
            worth[res] = float((asked[res][mask] - oracle[res][mask]).sum()) / scale if scale > 0 else 0.0
        binding = max(("memory", "cores", "gpus"), key=lambda res: (worth[res], -RESOURCES.index(res)))
        n_o, n_s = _recovered(cap_o, groups), _recovered(cap_s, groups)
        rate = n_o / worth[binding] if worth[binding] > 0 else 0.0
        scale = per_node[binding] * span_h / rate if rate > 0 else 0.0
        gap = held[binding][mask] - oracle[binding][mask]
        ran = {k: (pools_full.get(k) or {}).get(p, full.get(k, {}) if p is None else {})  # the pool's replays
               for k in (scenario.name, "oracle")}
        lost_h = _lost(ran[scenario.name], binding) - _lost(ran["oracle"], binding)
        causes = {"no_history": float(gap[~known[binding][mask]].sum()) / scale if scale else 0.0,
                  "prediction_spread": float(gap[known[binding][mask]].sum()) / scale if scale else 0.0,
                  "kills_reruns": lost_h / scale if scale else 0.0}
        causes["service_rule"] = (n_o - n_s) - sum(causes.values())
        by_pool.append({"pool": name, "nodes_total": sum(g.count for g in groups) or cap_s.get("nodes_total"),
                        "oracle_nodes_recovered": n_o, "nodes_recovered": n_s, "nodes_gap": n_o - n_s,
                        "binding_resource": binding, "oracle_nodes_worth": worth[binding],
                        "nodes_per_node_worth": rate, **causes})
    n_o, n_s = int(cap_o["nodes_recovered"]), int(cap_s["nodes_recovered"])
    totals = {c: sum(row[c] for row in by_pool) for c in CAUSES}
    totals["service_rule"] += (n_o - n_s) - sum(row["nodes_gap"] for row in by_pool)  # pools not searched apart
    return {"scenario": scenario.name, "nodes_total": cap_s.get("nodes_total"), "oracle_nodes_recovered": n_o,
            "nodes_recovered": n_s, "nodes_gap": n_o - n_s, "span_hours": span_h,
            "by_resource": rows, "by_pool": by_pool,
            "by_cause": [{"cause": c, "nodes": totals[c],
                          "share": totals[c] / (n_o - n_s) if n_o != n_s else None} for c in CAUSES]}
