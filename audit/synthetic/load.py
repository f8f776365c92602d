"""Offered load: scale intended run times per partition so the offered load meets the target occupancy."""

from __future__ import annotations

import numpy as np

from .cluster import Cluster
from .workload import apply_scale


def offered_load(jobs: dict, cluster: Cluster, span_s: float) -> dict:
    """Per partition: the largest of core, memory and GPU demand over capacity across the span.

    Demand counts only the part of each run that fits before the window closes if it started on submission.
    """
    out = {}
    held = np.minimum(jobs["elapsed_s"], np.maximum(span_s - jobs["submit"], 0)) * jobs["nodes"]
    for i, p in enumerate(cluster.partitions):
        on_node = cluster.node_partition == i
        on_job = jobs["partition"] == i
        demand = []
        for per_node, cap in ((jobs["cpus_pn"], cluster.node_cpus), (jobs["mem_pn_mib"], cluster.node_mem_mib),
                              (jobs["gpus_pn"], cluster.node_gpus)):
            total = cap[on_node].sum()
            if total > 0:
                demand.append(float((per_node[on_job] * held[on_job]).sum()) / (float(total) * span_s))
        out[p.name] = max(demand) if demand else 0.0
    return out


def calibrate(jobs: dict, cluster: Cluster, span_s: float, prof: dict, rounds: int = 6) -> dict:
    """One run-time scale per partition so its offered load is the target of its kind; the scales and loads."""
    names = [p.name for p in cluster.partitions]
    target = {p.name: prof["load"]["kind_target"].get(p.kind, prof["load"]["target_occupancy"])
              for p in cluster.partitions}
    scale = {name: 1.0 for name in names}
    load: dict = {}
    for _ in range(rounds):
        vec = np.array([scale[n] for n in names])[jobs["partition"]]
        apply_scale(jobs, vec, prof)
        load = offered_load(jobs, cluster, span_s)
        for name in names:
            if load.get(name, 0.0) > 0:
                scale[name] *= target[name] / load[name]
    return {"scale": scale, "offered_load": load}


def in_window_occupancy(jobs: dict, start: np.ndarray, cluster: Cluster, t0: int, span_s: float) -> dict:
    """Per partition: the largest of core, memory and GPU occupancy inside ``[t0, t0 + span_s)``."""
    ran = start >= 0
    inside = np.where(ran, np.clip(start + jobs["elapsed_s"], t0, t0 + span_s) - np.clip(start, t0, t0 + span_s), 0)
    held = inside * jobs["nodes"]
    out = {}
    for i, p in enumerate(cluster.partitions):
        on_node = cluster.node_partition == i
        on_job = jobs["partition"] == i
        occ = []
        for per_node, cap in ((jobs["cpus_pn"], cluster.node_cpus), (jobs["mem_pn_mib"], cluster.node_mem_mib),
                              (jobs["gpus_pn"], cluster.node_gpus)):
            total = cap[on_node].sum()
            if total > 0:
                occ.append(float((per_node[on_job] * held[on_job]).sum()) / (float(total) * span_s))
        out[p.name] = max(occ) if occ else 0.0
    return out


def settle(jobs: dict, cluster: Cluster, t0: int, span_s: float, prof: dict, cal: dict, place) -> tuple:
    """Refine the per-partition scales with the placement itself: queueing pushes work past the window, so
    the offered load alone undershoots.  ``place(jobs)`` returns a placement; up to ``load.placement_rounds``
    rounds of measure occupancy in the window → rescale → place again, stopping as soon as every partition
    that can move is within ``load.placement_tolerance`` of its target."""
    names = [p.name for p in cluster.partitions]
    target = {p.name: prof["load"]["kind_target"].get(p.kind, prof["load"]["target_occupancy"])
              for p in cluster.partitions}
    scale = dict(cal["scale"])
    tol = prof["load"]["placement_tolerance"]
    # partitions whose offered load could not reach the target (run times at their limit caps) cannot move
    movable = [n for n in names if cal["offered_load"].get(n, 0.0) >= 0.9 * target[n]]
    placed = place(jobs)
    occ = in_window_occupancy(jobs, placed.start, cluster, t0, span_s)
    for _ in range(int(prof["load"]["placement_rounds"])):
        if all(abs(occ[n] - target[n]) <= tol for n in movable):
            break
        for n in names:
            if occ[n] > 0:
                scale[n] *= float(np.clip(target[n] / occ[n], 0.5, 2.0))
        apply_scale(jobs, np.array([scale[n] for n in names])[jobs["partition"]], prof)
        placed = place(jobs)
        occ = in_window_occupancy(jobs, placed.start, cluster, t0, span_s)
    return placed, {"scale": scale, "offered_load": cal["offered_load"], "occupancy": occ}
