"""Offered load: scale intended run times per partition kind so the offered load meets the target occupancy."""

from __future__ import annotations

import numpy as np

from .cluster import Cluster
from .workload import apply_scale


def offered_load(jobs: dict, cluster: Cluster, span_s: float) -> dict:
    """Per partition kind: the largest of core, memory and GPU demand over capacity across the span.

    Demand counts only the part of each run that fits before the window closes if it started on submission.
    """
    out = {}
    held = np.minimum(jobs["elapsed_s"], np.maximum(span_s - jobs["submit"], 0)) * jobs["nodes"]
    for kind in sorted(set(p.kind for p in cluster.partitions)):
        parts = cluster.partitions_of_kind(kind)
        on_node = np.isin(cluster.node_partition, parts)
        on_job = np.isin(jobs["partition"], parts)
        demand = []
        for per_node, cap in ((jobs["cpus_pn"], cluster.node_cpus), (jobs["mem_pn_mib"], cluster.node_mem_mib),
                              (jobs["gpus_pn"], cluster.node_gpus)):
            total = cap[on_node].sum()
            if total > 0:
                demand.append(float((per_node[on_job] * held[on_job]).sum()) / (float(total) * span_s))
        out[kind] = max(demand) if demand else 0.0
    return out


def calibrate(jobs: dict, cluster: Cluster, span_s: float, prof: dict, rounds: int = 6) -> dict:
    """Find one run-time scale per kind so the offered load is the profile's target; returns the scales and loads."""
    kinds = jobs["kind"]
    names = sorted(set(kinds.tolist()))
    scale = {k: 1.0 for k in names}
    target = {k: prof["load"]["kind_target"].get(k, prof["load"]["target_occupancy"]) for k in names}
    load = {}
    for _ in range(rounds):
        vec = np.ones(len(kinds))
        for k in names:
            vec[kinds == k] = scale[k]
        apply_scale(jobs, vec, prof)
        load = offered_load(jobs, cluster, span_s)
        for k in names:
            if load.get(k, 0.0) > 0:
                scale[k] *= target[k] / load[k]
    return {"scale": scale, "offered_load": load}
