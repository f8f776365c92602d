"""The cluster shape (TOML): node groups with CPUs, memory and GPUs, and the partitions over them.

```toml
name = "synth"
[[partitions]]
name = "gpu-a100"
[[node_groups]]
name = "ga"; partition = "gpu-a100"; count = 24; cpus = 64; mem_gib = 512
gpus = 4; gpu_type = "a100"; gpu_mem_gib = 80; racks = 2
```

A node group names one partition (``partition``) or several (``partitions = [...]``).  Memory may be
given as ``mem_gib`` or ``mem_bytes``, GPU memory as ``gpu_mem_gib`` or ``gpu_mem_bytes``; every key is
described at ``audit.whatif.to_simulator.to_cluster``, whose parser this module shares.
"""

from __future__ import annotations

import pandas as pd

from simulator.records import Pool

from .textio import InputError, read_toml
from .whatif.to_simulator import to_cluster

GROUP_COLUMNS = ("group", "partition", "count", "cpus", "mem_bytes", "gpus", "gpu_type", "gpu_mem_bytes")


def load_cluster_shape(path) -> pd.DataFrame:
    """Node groups as rows (one per group and partition): ``GROUP_COLUMNS``; a clear error for a bad file."""
    return cluster_shape_from_dict(read_toml(path), source=str(path))


def cluster_shape_from_dict(spec: dict, *, source: str = "cluster shape") -> pd.DataFrame:
    """The node groups of a cluster spec, read by the simulator's parser (``to_simulator.to_cluster``, one
    reading of the format), as ``GROUP_COLUMNS`` rows; ``InputError`` naming the entry when it is wrong."""
    try:
        cluster = to_cluster(spec, source=source)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    if isinstance(cluster, Pool):
        raise InputError(f"{source}: no [[node_groups]]")
    groups = {g.name: g for g in cluster.groups}
    rows = []
    for part in cluster.partitions:
        for g in (groups[name] for name in part.groups):
            if g.gpus and not g.gpu_type:
                raise InputError(f"{source}: node group {g.name!r} has gpus but no 'gpu_type'")
            rows.append((g.name, part.name, g.count, g.cpus, g.mem_bytes, g.gpus, g.gpu_type or None,
                         g.gpu_mem_bytes))
    if not rows:
        raise InputError(f"{source}: no node group names a partition ('partition' or 'partitions')")
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
