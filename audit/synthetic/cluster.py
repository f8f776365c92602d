"""The generator's cluster: a complete cluster shape (:mod:`audit.cluster_shape`) expanded to per-node arrays,
and written back beside the trace."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from ..cluster_shape import GIB, ClusterShape, ClusterShapeError, load_cluster_shape
from ..textio import parse_toml
from ..units import compress_hostlist  # noqa: F401  (the generator writes node lists with it)

DEFAULT_CLUSTER = "cluster.toml"


@dataclass(frozen=True)
class Partition:
    name: str
    kind: str
    max_time_s: int
    default: bool


@dataclass(frozen=True)
class NodeGroup:
    name: str
    partition: str
    count: int
    prefix: str
    digits: int
    cpus: int
    mem_mib: int
    gpus: int
    gpu_type: str
    gpu_model: str
    gpu_mem_gib: int
    racks: int

    def node_names(self) -> list[str]:
        return [f"{self.prefix}{i:0{self.digits}d}" for i in range(1, self.count + 1)]

    def hostlist(self) -> str:
        return f"{self.prefix}[{1:0{self.digits}d}-{self.count:0{self.digits}d}]" if self.count > 1 \
            else f"{self.prefix}{1:0{self.digits}d}"


@dataclass(frozen=True)
class Cluster:
    """The shape plus flat per-node arrays (index = global node number)."""

    name: str
    partitions: tuple
    groups: tuple
    node_name: np.ndarray
    node_partition: np.ndarray   # partition index per node
    node_group: np.ndarray       # group index per node
    node_cpus: np.ndarray
    node_mem_mib: np.ndarray
    node_gpus: np.ndarray

    def partition_index(self, name: str) -> int:
        return [p.name for p in self.partitions].index(name)

    def partitions_of_kind(self, kind: str) -> list[int]:
        return [i for i, p in enumerate(self.partitions) if p.kind == kind]

    def capacity(self, part: int) -> tuple[int, int]:
        """(cores, GPUs) of one partition."""
        on = self.node_partition == part
        return int(self.node_cpus[on].sum()), int(self.node_gpus[on].sum())


def load_cluster(path: Path | None = None) -> Cluster:
    """The cluster to generate: ``path``, or the default shape shipped beside this module."""
    if path is None:
        text = resources.files(__package__).joinpath(DEFAULT_CLUSTER).read_text(encoding="utf-8")
        return build_cluster(load_cluster_shape(parse_toml(text, "cluster", ClusterShapeError), source="cluster"))
    return build_cluster(load_cluster_shape(path))


def build_cluster(shape: ClusterShape) -> Cluster:
    """The generator's cluster from a complete shape: partitions with their kinds and limits, node groups in MiB
    and whole GiB of GPU memory, and the flat per-node arrays."""
    shape.require("complete")
    parts = [Partition(p.name, p.kind, p.max_time_s, p.default) for p in shape.partitions if p.declared]
    names = [p.name for p in parts]
    groups = [NodeGroup(
        name=g.name, partition=g.partitions[0], count=g.count, prefix=g.prefix, digits=g.digits, cpus=g.cpus,
        mem_mib=g.mem_bytes // 2**20, gpus=g.gpus, gpu_type=g.gpu_type, gpu_model=g.gpu_model,
        gpu_mem_gib=g.gpu_mem_bytes // GIB, racks=g.racks or 1,
    ) for g in shape.groups]
    node_name = np.array([n for g in groups for n in g.node_names()], dtype=object)
    rep = lambda vals: np.repeat(np.array(vals, dtype=np.int64), [g.count for g in groups])  # noqa: E731
    return Cluster(
        name=shape.name if shape.name is not None else "synth", partitions=tuple(parts), groups=tuple(groups),
        node_name=node_name, node_partition=rep([names.index(g.partition) for g in groups]),
        node_group=rep(list(range(len(groups)))), node_cpus=rep([g.cpus for g in groups]),
        node_mem_mib=rep([g.mem_mib for g in groups]), node_gpus=rep([g.gpus for g in groups]),
    )




def _fmt_limit(s: int) -> str:
    d, r = divmod(s, 86400)
    return (f"{d}-" if d else "") + f"{r // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}"


def cluster_toml(cluster: Cluster) -> str:
    """The cluster shape as written beside the trace: every node group with its explicit hostlist and racks."""
    lines = ["# Cluster shape of this synthetic trace (written by reclaim generate).", f'name = "{cluster.name}"', ""]
    for p in cluster.partitions:
        lines += ["[[partitions]]", f'name = "{p.name}"', f'kind = "{p.kind}"', f'max_time = "{_fmt_limit(p.max_time_s)}"',
                  f"default = {'true' if p.default else 'false'}",
                  "node_groups = [" + ", ".join(f'"{g.name}"' for g in cluster.groups if g.partition == p.name) + "]",
                  ""]
    for g in cluster.groups:
        names = g.node_names()
        blocks = np.array_split(np.arange(g.count), g.racks)
        racks = ", ".join(
            f'{{ name = "{g.name}-r{k + 1}", switch = "sw-{g.name}-{k + 1}", nodes = "{compress_hostlist([names[i] for i in b])}" }}'
            for k, b in enumerate(blocks) if len(b))
        lines += ["[[node_groups]]", f'name = "{g.name}"', f'partition = "{g.partition}"', f"count = {g.count}",
                  f'prefix = "{g.prefix}"', f"digits = {g.digits}", f'nodes = "{g.hostlist()}"', f"cpus = {g.cpus}",
                  f"mem_gib = {g.mem_mib / 1024:g}", f"mem_bytes = {g.mem_mib * 2**20}", f"gpus = {g.gpus}"]
        if g.gpus:
            lines += [f'gpu_type = "{g.gpu_type}"', f'gpu_model = "{g.gpu_model}"', f"gpu_mem_gib = {g.gpu_mem_gib}"]
        lines += [f"racks = [{racks}]", ""]
    return "\n".join(lines)
