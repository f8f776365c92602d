"""AdminComment values: jobstats summaries (``JS1:`` + base64(gzip(JSON))) for a share of jobs."""

from __future__ import annotations

import numpy as np

from ..readers import encode_jobstats

MARK_SHORT = "JS1:Short"


def admin_comments(ctx: dict) -> np.ndarray:
    """One AdminComment per job row: a jobstats summary where the job was picked, else empty."""
    j = ctx["jobs"]
    n = j["n"]
    out = np.full(n, "", dtype=object)
    start = ctx["start"]
    pick = j["jobstats"] & (start >= 0)
    short = pick & (j["elapsed_s"] < ctx["jobstats_short_s"])
    out[short] = MARK_SHORT
    rows = np.flatnonzero(pick & ~short)
    if not len(rows):
        return out
    node_names = ctx["node_name"]
    per_row_nodes = ctx["row_nodes"]           # row -> list of global node indices (sorted)
    gpu = ctx["gpu_per_hold"]                  # row -> list of (node, gpu index, util %, fb peak bytes)
    cpu_s = ctx["cpu_used_ms"] / 1000.0
    peak = ctx["mem_peak_bytes"]
    gpu_total = ctx["gpu_mem_bytes"]
    for r in rows.tolist():
        nds = per_row_nodes[r]
        k = len(nds)
        mem_share = [peak[r] // k] * k
        mem_share[0] += peak[r] - sum(mem_share)
        nodes = {}
        for i, nd in enumerate(nds):
            nodes[node_names[nd]] = {
                "cpus": int(j["cpus_pn"][r]),
                "total_memory": int(j["mem_pn_mib"][r]) * 2**20,
                "used_memory": int(mem_share[i]),
                "total_time": round(float(cpu_s[r]) / k, 3),
            }
        gpus = int(j["gpus_pn"][r] * j["nodes"][r])
        for nd, gi, util, fb in gpu.get(r, ()):
            entry = nodes[node_names[nd]]
            entry.setdefault("gpu_total_memory", {})[str(gi)] = int(gpu_total[r])
            entry.setdefault("gpu_used_memory", {})[str(gi)] = int(fb)
            entry.setdefault("gpu_utilization", {})[str(gi)] = round(float(util), 1)
        out[r] = encode_jobstats({"gpus": gpus, "nodes": nodes, "total_time": int(j["elapsed_s"][r])})
    return out
