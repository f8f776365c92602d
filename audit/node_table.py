"""The nodes table (``nodes.parquet``): one row per node of a Kubernetes or Alibaba node list, and the cluster
shape its pools make.

Columns: ``cluster, node, pool`` (the node pool, a partition of the shape), ``cpus``, ``mem_bytes``, ``gpus``,
``gpu_type``, ``gpu_mem_bytes`` (per GPU), ``zone``, ``region``, ``rack``, ``instance_type``.  Readers of node
lists return a :class:`NodesResult`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .ledger import FileLedger, Quarantine

NODE_COLUMNS = ("cluster", "node", "pool", "cpus", "mem_bytes", "gpus", "gpu_type", "gpu_mem_bytes", "zone",
                "region", "rack", "instance_type")


@dataclass
class NodesResult:
    nodes: pd.DataFrame
    ledger: FileLedger
    quarantine: Quarantine


def shape_dict(nodes: pd.DataFrame, name: str = "k8s") -> dict:
    """The cluster-shape TOML layout: each pool a partition, one node group per pool and node type."""
    if nodes.empty:
        return {"name": name, "partitions": [], "node_groups": []}
    keys = ["pool", "cpus", "mem_bytes", "gpus", "gpu_type", "gpu_mem_bytes"]
    g = nodes.assign(gpu_type=nodes["gpu_type"].fillna("")).groupby(keys, sort=True).size().reset_index(name="count")
    groups = []
    for i, r in enumerate(g.itertuples(index=False)):  # one per node type: a handful
        grp = {"name": f"{r.pool}-{i}", "partition": str(r.pool), "count": int(r.count), "cpus": int(r.cpus),
               "mem_bytes": int(r.mem_bytes), "gpus": int(r.gpus)}
        if r.gpus:
            grp.update(gpu_type=r.gpu_type or "gpu", gpu_mem_bytes=int(r.gpu_mem_bytes))
        groups.append(grp)
    return {"name": name, "partitions": [{"name": p} for p in sorted(g["pool"].unique())], "node_groups": groups}
