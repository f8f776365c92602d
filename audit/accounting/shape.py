"""The cluster shape as accounting reads it: one row per node group and partition, and what follows from it
(what each partition holds at once, its node type, the memory of each GPU type)."""

from __future__ import annotations

import pandas as pd

from ..cluster_shape import ClusterShape

GROUP_COLUMNS = ("group", "partition", "count", "cpus", "mem_bytes", "gpus", "gpu_type", "gpu_mem_bytes")


def shape_frame(shape: ClusterShape) -> pd.DataFrame:
    """Node groups as rows (one per group and partition, in the shape's order): ``GROUP_COLUMNS``."""
    shape.require("node_groups", "gpu_types", "partitioned")
    groups = {g.name: g for g in shape.groups}
    rows = [(g.name, part.name, g.count, g.cpus, g.mem_bytes, g.gpus, g.gpu_type or None, g.gpu_mem_bytes)
            for part in shape.partitions for g in (groups[name] for name in part.groups)]
    return pd.DataFrame(rows, columns=GROUP_COLUMNS)


def partition_capacity(shape: pd.DataFrame) -> pd.DataFrame:
    """Per partition: nodes, CPUs, memory bytes and GPUs it can hold at once."""
    cap = shape.assign(cpus_total=shape["count"] * shape["cpus"], mem_bytes_total=shape["count"] * shape["mem_bytes"],
                       gpus_total=shape["count"] * shape["gpus"])
    return cap.groupby("partition", sort=True)[["count", "cpus_total", "mem_bytes_total", "gpus_total"]].sum() \
        .rename(columns={"count": "nodes"})


def node_shape_by_partition(shape: pd.DataFrame) -> pd.DataFrame:
    """The (first) node type of each partition: cpus, mem_bytes, gpus, gpu_type, gpu_mem_bytes per node."""
    return shape.drop_duplicates("partition").set_index("partition")[
        ["cpus", "mem_bytes", "gpus", "gpu_type", "gpu_mem_bytes"]]


def gpu_memory_by_type(shape: pd.DataFrame) -> dict[str, int]:
    """GPU memory per GPU, by GPU type."""
    g = shape[shape["gpus"] > 0]
    return {str(t): int(m) for t, m in zip(g["gpu_type"], g["gpu_mem_bytes"], strict=True)}
