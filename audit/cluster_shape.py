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
given as ``mem_gib`` or ``mem_bytes``, GPU memory as ``gpu_mem_gib`` or ``gpu_mem_bytes``.
"""

from __future__ import annotations

import pandas as pd

from .textio import InputError, read_toml

GiB = 2**30
GROUP_COLUMNS = ("group", "partition", "count", "cpus", "mem_bytes", "gpus", "gpu_type", "gpu_mem_bytes")


def load_cluster_shape(path) -> pd.DataFrame:
    """Node groups as rows (one per group and partition): ``GROUP_COLUMNS``; a clear error for a bad file."""
    return cluster_shape_from_dict(read_toml(path), source=str(path))


def cluster_shape_from_dict(spec: dict, *, source: str = "cluster shape") -> pd.DataFrame:
    groups = spec.get("node_groups")
    if not groups:
        raise InputError(f"{source}: no [[node_groups]]")
    rows = []
    for k, g in enumerate(groups):
        where = f"{source}: node_groups[{k}] ({g.get('name', '?')})"
        for need in ("count", "cpus"):
            if not isinstance(g.get(need), int) or g[need] < 0:
                raise InputError(f"{where}: '{need}' must be a whole number ≥ 0")
        mem = g.get("mem_bytes", g.get("mem_gib", 0) * GiB)
        gpus = int(g.get("gpus", 0))
        gpu_mem = g.get("gpu_mem_bytes", g.get("gpu_mem_gib", 0) * GiB)
        if gpus and not g.get("gpu_type"):
            raise InputError(f"{where}: has gpus but no 'gpu_type'")
        parts = g.get("partitions") or [g.get("partition")]
        if not parts or not all(isinstance(x, str) and x for x in parts):
            raise InputError(f"{where}: needs 'partition' or 'partitions'")
        for part in parts:
            rows.append((g.get("name", f"group{k}"), part, int(g["count"]), int(g["cpus"]), int(mem), gpus,
                         g.get("gpu_type") or None, int(gpu_mem)))
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
