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

#: what an accounting record says a job held on one node (``ReadResult.placements``), the evidence a cluster
#: shape is inferred from when none is given: ``cpus`` the cores or slots it held there, ``cpu_index_max`` the
#: highest CPU index it was placed on (PBS ``exec_host`` ``node/7``; null where the format gives none),
#: ``mem_bytes`` and ``gpus`` what it held there (null where unknown), ``partition`` its partition or queue
PLACEMENT_COLUMNS = {"cluster": "string", "node": "string", "job_id": "string", "partition": "string",
                     "cpus": "Float64", "cpu_index_max": "Int64", "mem_bytes": "Int64", "gpus": "Float64"}


def conform_placements(df: pd.DataFrame | None) -> pd.DataFrame:
    """``df`` with exactly the :data:`PLACEMENT_COLUMNS`, in order and dtype (missing ones null); an empty table
    for None."""
    if df is None:
        df = pd.DataFrame()
    extra = set(df.columns) - set(PLACEMENT_COLUMNS)
    if extra:
        raise ValueError(f"columns outside the placements table: {sorted(extra)}")
    n = len(df)
    return pd.DataFrame({c: (df[c].reset_index(drop=True) if c in df else pd.Series([pd.NA] * n)).astype(t)
                         for c, t in PLACEMENT_COLUMNS.items()})


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
