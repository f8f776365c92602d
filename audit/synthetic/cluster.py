"""The cluster shape: partitions and node groups from TOML, expanded to per-node arrays, and written back."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from ..textio import parse_toml, read_toml

DEFAULT_CLUSTER = "cluster.toml"
KINDS = ("cpu", "bigmem", "gpu", "debug")


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


def parse_time_limit(text: str, where: str) -> int:
    """``[D-]HH:MM:SS`` → seconds."""
    try:
        days, _, rest = text.rpartition("-")
        h, m, s = (int(x) for x in rest.split(":"))
        return int(days or 0) * 86400 + h * 3600 + m * 60 + s
    except ValueError as exc:
        raise ValueError(f"{where}: max_time {text!r} is not [D-]HH:MM:SS") from exc


def load_cluster(path: Path | None = None) -> Cluster:
    if path is None:
        text = resources.files(__package__).joinpath(DEFAULT_CLUSTER).read_text(encoding="utf-8")
        return build_cluster(parse_toml(text, "cluster", ValueError), "cluster")
    return build_cluster(read_toml(path, ValueError), str(path))


def _need(table: dict, key: str, where: str, kind=None):
    if key not in table:
        raise ValueError(f"{where}: missing key {key!r}")
    value = table[key]
    if kind is not None and not isinstance(value, kind):
        raise ValueError(f"{where}: {key} must be {kind.__name__}, got {value!r}")
    return value


def build_cluster(spec: dict, where: str = "cluster") -> Cluster:
    parts = []
    for i, p in enumerate(spec.get("partitions", [])):
        w = f"{where}: partitions[{i}]"
        kind = _need(p, "kind", w, str)
        if kind not in KINDS:
            raise ValueError(f"{w}: kind {kind!r} is not one of {KINDS}")
        parts.append(Partition(_need(p, "name", w, str), kind,
                               parse_time_limit(_need(p, "max_time", w, str), w), bool(p.get("default", False))))
    if not parts:
        raise ValueError(f"{where}: no [[partitions]]")
    names = [p.name for p in parts]
    groups = []
    for i, g in enumerate(spec.get("node_groups", [])):
        w = f"{where}: node_groups[{i}]"
        part = _need(g, "partition", w, str)
        if part not in names:
            raise ValueError(f"{w}: partition {part!r} is not declared in [[partitions]]")
        if "mem_gib" in g:
            mem_mib = int(round(float(g["mem_gib"]) * 1024))
        elif "mem_bytes" in g:
            mem_mib = int(g["mem_bytes"]) // 2**20
        else:
            raise ValueError(f"{w}: needs mem_gib or mem_bytes")
        gpus = int(g.get("gpus", 0))
        if gpus and not g.get("gpu_type"):
            raise ValueError(f"{w}: gpus > 0 needs gpu_type")
        group = NodeGroup(
            name=_need(g, "name", w, str), partition=part, count=int(_need(g, "count", w, int)),
            prefix=str(g.get("prefix", g["name"])), digits=int(g.get("digits", 3)), cpus=int(_need(g, "cpus", w, int)),
            mem_mib=mem_mib, gpus=gpus, gpu_type=str(g.get("gpu_type", "")), gpu_model=str(g.get("gpu_model", "")),
            gpu_mem_gib=int(g.get("gpu_mem_gib", 0)), racks=_rack_count(g.get("racks", 1)),
        )
        if group.count <= 0 or group.cpus <= 0 or group.mem_mib <= 0:
            raise ValueError(f"{w}: count, cpus and memory must be positive")
        if gpus and group.gpu_mem_gib <= 0:
            raise ValueError(f"{w}: gpus > 0 needs gpu_mem_gib")
        groups.append(group)
    if not groups:
        raise ValueError(f"{where}: no [[node_groups]]")
    for p in parts:
        if not any(g.partition == p.name for g in groups):
            raise ValueError(f"{where}: partition {p.name!r} has no node group")
    node_name = np.array([n for g in groups for n in g.node_names()], dtype=object)
    if len(set(node_name.tolist())) != len(node_name):
        raise ValueError(f"{where}: node names collide between node groups")
    rep = lambda vals: np.repeat(np.array(vals, dtype=np.int64), [g.count for g in groups])  # noqa: E731
    return Cluster(
        name=str(spec.get("name", "synth")), partitions=tuple(parts), groups=tuple(groups), node_name=node_name,
        node_partition=rep([names.index(g.partition) for g in groups]), node_group=rep(list(range(len(groups)))),
        node_cpus=rep([g.cpus for g in groups]), node_mem_mib=rep([g.mem_mib for g in groups]),
        node_gpus=rep([g.gpus for g in groups]),
    )


def _rack_count(value) -> int:
    """``racks`` is a count in a spec and a list of rack tables in a written cluster.toml."""
    return max(1, len(value) if isinstance(value, list) else int(value))


def compress_hostlist(names: list[str]) -> str:
    """Node names → a Slurm hostlist (``cn[001-003,007],gh001``), keeping the given prefixes and widths."""
    by_prefix: dict[tuple, list[int]] = {}
    order = []
    for n in names:
        k = len(n)
        while k and n[k - 1].isdigit():
            k -= 1
        key = (n[:k], len(n) - k)
        if key not in by_prefix:
            by_prefix[key] = []
            order.append(key)
        by_prefix[key].append(int(n[k:]))
    out = []
    for prefix, width in order:
        nums = sorted(set(by_prefix[(prefix, width)]))
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        runs, a, b = [], nums[0], nums[0]
        for x in nums[1:]:
            if x == b + 1:
                b = x
            else:
                runs.append((a, b))
                a = b = x
        runs.append((a, b))
        body = ",".join(f"{x:0{width}d}" if x == y else f"{x:0{width}d}-{y:0{width}d}" for x, y in runs)
        out.append(f"{prefix}[{body}]")
    return ",".join(out)


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
