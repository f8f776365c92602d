"""The cluster shape (TOML): node groups with CPUs, memory and GPUs, and the partitions over them.

```toml
name = "synth"

[[partitions]]
name = "gpu-a100"
kind = "gpu"
max_time = "2-00:00:00"

[[node_groups]]
name = "ga"
partition = "gpu-a100"
count = 24
cpus = 64
mem_gib = 512
gpus = 4
gpu_type = "a100"
gpu_mem_gib = 80
racks = 2
```

One loader, :func:`load_cluster_shape`, reads the format into a :class:`ClusterShape` and says what is wrong
with it, naming the file and the entry (:class:`ClusterShapeError`); docs/glossary.md ("The cluster shape")
describes every key.  Each consumer converts the shape it is given, after :meth:`ClusterShape.require` has
checked what that consumer needs beyond the format: accounting (:mod:`audit.accounting.shape`), the simulator
(:func:`audit.whatif.to_simulator.to_cluster`) and the generator (:func:`audit.synthetic.cluster.build_cluster`).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .textio import InputError, read_toml

GIB = 2**30
#: workload classes of a partition (the generator's profile describes the jobs of each)
KINDS = ("cpu", "bigmem", "gpu", "debug")
#: keys of the file itself (``groups`` is read as ``node_groups``; a ``[cluster]`` table holding them is too)
SHAPE_KEYS = ("name", "inferred", "node_groups", "partitions", "strict_partitions", "procs")
GROUP_KEYS = ("name", "count", "cpus", "mem_bytes", "mem_gib", "gpus", "gpu_type", "gpu_mem_bytes", "gpu_mem_gib",
              "gpu_model", "partition", "partitions", "switch", "nodes_per_switch", "racks", "prefix", "digits",
              "nodes")
PARTITION_KEYS = ("name", "kind", "max_time", "default", "node_groups", "groups")


class ClusterShapeError(InputError, ValueError):
    """A cluster shape that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class GroupShape:
    """``count`` identical nodes.  Memory in bytes (0: not given); ``partitions`` are those the group names;
    ``racks`` (None: not given) splits the nodes in order into that many blocks, one leaf switch each."""

    name: str
    count: int
    cpus: int
    mem_bytes: int = 0
    gpus: int = 0
    gpu_type: str = ""
    gpu_mem_bytes: int = 0
    gpu_model: str = ""
    partitions: tuple = ()
    switch: str = ""
    nodes_per_switch: int = 0
    racks: int | None = None
    prefix: str = ""
    digits: int = 3
    where: str = ""

    def node_names(self) -> list[str]:
        """``<prefix><number zero-padded to digits>`` for numbers 1..count."""
        return [f"{self.prefix}{i:0{self.digits}d}" for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class PartitionShape:
    """A partition: the node groups that name it, then those it lists.  ``declared``: under [[partitions]]
    (otherwise only named by node groups, and without kind or time limit)."""

    name: str
    groups: tuple
    kind: str | None = None
    max_time_s: int | None = None
    default: bool = False
    declared: bool = True
    where: str = ""


@dataclass(frozen=True)
class ClusterShape:
    """A validated cluster shape.  ``procs`` (instead of node groups) is one pool of that many processors."""

    source: str
    name: str | None
    groups: tuple
    partitions: tuple
    strict_partitions: bool = False
    procs: int | None = None
    inferred: str | None = None  # what the shape was inferred from (audit.shape_inference); None: given

    def require(self, *needs: str) -> ClusterShape:
        """Check what a consumer needs beyond the format, and return the shape.

        ``node_groups``: node groups, not a pool; ``gpu_types``: every GPU group names its GPU type;
        ``partitioned``: some node group is in a partition; ``complete`` (a cluster to generate): every
        partition declared with a kind and a time limit and holding a node group, every node group in exactly
        one of them with CPUs, memory, GPU type and GPU memory, and no node name twice.
        """
        for need in needs:
            _NEEDS[need](self)
        return self


@dataclass
class ShapeRead:
    """A shape read from a scheduler's node list (``scontrol show node``, ``pbsnodes -av``, ``lshosts``,
    ``qhost -F``): the shape dict (the TOML's layout), the hosts read, the entries set aside with why, and notes
    on what the shape could not know."""

    shape: dict
    nodes: int = 0
    skipped: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def shape_from_hosts(cluster: str, hosts: dict) -> dict:
    """The shape dict of hosts ``{name: (cpus, mem_bytes, gpus, partitions)}``: hosts of one kind as one node group
    each (named after its first partition), every partition named once in the order first seen."""
    kinds: dict = {}
    for host, kind in hosts.items():
        kinds.setdefault(kind, []).append(host)
    groups, partitions = [], []
    for i, ((cpus, mem, gpus, parts), names) in enumerate(sorted(kinds.items())):
        group = {"name": f"{parts[0] if parts else 'nodes'}-{i}", "count": len(names), "cpus": cpus,
                 "mem_bytes": mem, "gpus": gpus}
        if gpus:
            group["gpu_type"] = "gpu"
        if parts:
            group["partitions"] = list(parts)
        groups.append(group)
        partitions += [p for p in parts if p not in partitions]
    return {"name": cluster, "partitions": [{"name": p} for p in partitions], "node_groups": groups}


def load_cluster_shape(spec, *, source: str = "cluster shape") -> ClusterShape:
    """A cluster shape from a TOML file (a path) or its dict; :class:`ClusterShapeError` naming the entry."""
    if isinstance(spec, str | Path):
        source = str(spec)
        spec = read_toml(spec, ClusterShapeError)
    if isinstance(spec.get("cluster"), dict):
        spec = spec["cluster"]
    group_specs = spec.get("node_groups") or spec.get("groups") or []
    groups = tuple(_group(g, f"{source}: node_groups[{k}]") for k, g in enumerate(group_specs))
    procs = _int(spec, "procs", source, None, least=1)
    if not groups and procs is None:
        raise ClusterShapeError(f"{source}: no [[node_groups]]")
    names = [g.name for g in groups]
    if len(set(names)) != len(names):
        raise ClusterShapeError(f"{source}: duplicate node group names: {names}")
    return ClusterShape(source=source, name=_text(spec, "name", source, None), groups=groups,
                        partitions=_partitions(spec.get("partitions", []), groups, source),
                        strict_partitions=_flag(spec, "strict_partitions", source), procs=procs,
                        inferred=_text(spec, "inferred", source, None))


def pool_procs(spec) -> int | None:
    """The processors of a shape that is one pool (``procs = P``: a Standard Workload Format machine), or None for
    a shape of node groups; ``spec`` as for :func:`load_cluster_shape`, or a loaded :class:`ClusterShape`."""
    shape = spec if isinstance(spec, ClusterShape) else load_cluster_shape(spec)
    return shape.procs if not shape.groups else None


def is_cluster_shape(path) -> bool:
    """Whether a TOML file holds node groups (a cluster shape among the inputs)."""
    try:
        return "node_groups" in tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def toml_text(spec: dict) -> str:
    """Write a shape dict as TOML (flat tables of strings, numbers and booleans only)."""
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return str(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return json.dumps(str(v))

    lines = [f"name = {val(spec.get('name', 'k8s'))}"]
    lines += [f"{k} = {val(spec[k])}" for k in ("inferred", "strict_partitions", "procs") if spec.get(k) is not None]
    lines.append("")
    for table in ("partitions", "node_groups"):
        for item in spec.get(table, []):
            lines.append(f"[[{table}]]")
            lines += [f"{k} = {val(v)}" for k, v in item.items() if v is not None]
            lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- reading the entries

_REQUIRED = object()


def _table(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise ClusterShapeError(f"{where}: not a table")
    return value


def _known(table: dict, keys, where: str) -> None:
    unknown = set(table) - set(keys)
    if unknown:
        raise ClusterShapeError(f"{where}: unknown keys {sorted(unknown)}")


def _value(table: dict, key: str, where: str, default, ok, what: str):
    if key not in table:
        if default is _REQUIRED:
            raise ClusterShapeError(f"{where}: missing {key!r}")
        return default
    value = table[key]
    if not ok(value):
        raise ClusterShapeError(f"{where}: {key} must be {what}, got {value!r}")
    return value


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(table: dict, key: str, where: str, default=_REQUIRED, *, least: int = 0):
    return _value(table, key, where, default, lambda v: _whole(v) and v >= least, f"a whole number ≥ {least}")


def _number(table: dict, key: str, where: str):
    return _value(table, key, where, None, lambda v: (_whole(v) or isinstance(v, float)) and v >= 0, "a number ≥ 0")


def _text(table: dict, key: str, where: str, default=_REQUIRED):
    return _value(table, key, where, default, lambda v: isinstance(v, str), "a string")


def _flag(table: dict, key: str, where: str) -> bool:
    return _value(table, key, where, False, lambda v: isinstance(v, bool), "true or false")


def _names(table: dict, key: str, where: str) -> list[str]:
    return _value(table, key, where, [], lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                  "a list of names")


def _bytes(table: dict, key_bytes: str, key_gib: str, where: str) -> int:
    """A size given in bytes or in GiB (bytes win when both are given); 0 when neither is."""
    size = _int(table, key_bytes, where, None)
    if size is not None:
        return size
    gib = _number(table, key_gib, where)
    return 0 if gib is None else round(float(gib) * GIB)


def _group(spec, where: str) -> GroupShape:
    g = _table(spec, where)
    _known(g, GROUP_KEYS, where)
    name = _text(g, "name", where)
    count = _int(g, "count", where, least=1)
    cpus = _int(g, "cpus", where)
    partitions = _names(g, "partitions", where) or ([_text(g, "partition", where)] if "partition" in g else [])
    racks = _value(g, "racks", where, None, lambda v: _whole(v) or isinstance(v, list), "a count or a list of racks")
    _text(g, "nodes", where, None)
    return GroupShape(
        name=name, count=count, cpus=cpus, mem_bytes=_bytes(g, "mem_bytes", "mem_gib", where),
        gpus=_int(g, "gpus", where, 0), gpu_type=_text(g, "gpu_type", where, ""),
        gpu_mem_bytes=_bytes(g, "gpu_mem_bytes", "gpu_mem_gib", where), gpu_model=_text(g, "gpu_model", where, ""),
        partitions=tuple(partitions), switch=_text(g, "switch", where, ""),
        nodes_per_switch=_int(g, "nodes_per_switch", where, 0),
        racks=None if racks is None else max(1, len(racks) if isinstance(racks, list) else racks),
        prefix=_text(g, "prefix", where, name), digits=_int(g, "digits", where, 3), where=where,
    )


def _partitions(specs, groups: tuple, source: str) -> tuple:
    """Declared partitions in their order, then those only node groups name, in the order first named."""
    members: dict = {}
    for g in groups:
        for part in g.partitions:
            members.setdefault(part, []).append(g.name)
    known = {g.name for g in groups}
    parts = []
    for k, spec in enumerate(specs):
        where = f"{source}: partitions[{k}]"
        p = _table(spec, where)
        _known(p, PARTITION_KEYS, where)
        name = _text(p, "name", where)
        listed = [*_names(p, "groups", where), *_names(p, "node_groups", where)]
        missing = set(listed) - known
        if missing:
            raise ClusterShapeError(f"{source}: partition {name!r} names unknown node groups {sorted(missing)}")
        limit = _text(p, "max_time", where, None)
        parts.append(PartitionShape(
            name=name, groups=tuple(dict.fromkeys([*members.pop(name, []), *listed])),
            kind=_text(p, "kind", where, None), max_time_s=None if limit is None else _time_limit(limit, where),
            default=_flag(p, "default", where), where=where))
    for name, names in members.items():
        parts.append(PartitionShape(name=name, groups=tuple(names), declared=False,
                                    where=f"{source}: partition {name!r}"))
    return tuple(parts)


def _time_limit(text: str, where: str) -> int:
    """``[D-]HH:MM:SS`` → seconds."""
    try:
        days, _, rest = text.rpartition("-")
        h, m, s = (int(x) for x in rest.split(":"))
        return int(days or 0) * 86400 + h * 3600 + m * 60 + s
    except ValueError as exc:
        raise ClusterShapeError(f"{where}: max_time {text!r} is not [D-]HH:MM:SS") from exc


# ---------------------------------------------------------------- what each consumer needs

def _need_node_groups(shape: ClusterShape) -> None:
    if not shape.groups:
        raise ClusterShapeError(f"{shape.source}: no [[node_groups]] (procs = {shape.procs} is a simulator pool)")


def _need_gpu_types(shape: ClusterShape) -> None:
    for g in shape.groups:
        if g.gpus and not g.gpu_type:
            raise ClusterShapeError(f"{g.where}: gpus > 0 needs gpu_type")


def _need_partitioned(shape: ClusterShape) -> None:
    if not any(p.groups for p in shape.partitions):
        raise ClusterShapeError(f"{shape.source}: no node group names a partition ('partition' or 'partitions')")


def _need_complete(shape: ClusterShape) -> None:
    declared = [p for p in shape.partitions if p.declared]
    if not declared:
        raise ClusterShapeError(f"{shape.source}: no [[partitions]]")
    for p in declared:
        if p.kind not in KINDS:
            raise ClusterShapeError(f"{p.where}: kind {p.kind!r} is not one of {KINDS}" if p.kind is not None
                                    else f"{p.where}: missing 'kind'")
        if p.max_time_s is None:
            raise ClusterShapeError(f"{p.where}: missing 'max_time'")
    _need_node_groups(shape)
    _need_gpu_types(shape)
    names = {p.name for p in declared}
    for g in shape.groups:
        if len(g.partitions) != 1:
            raise ClusterShapeError(f"{g.where}: needs one 'partition'")
        if g.partitions[0] not in names:
            raise ClusterShapeError(f"{g.where}: partition {g.partitions[0]!r} is not declared in [[partitions]]")
        if g.cpus <= 0 or g.mem_bytes < 2**20:
            raise ClusterShapeError(f"{g.where}: cpus and memory (mem_gib or mem_bytes) must be positive")
        if g.gpus and g.gpu_mem_bytes < GIB:
            raise ClusterShapeError(f"{g.where}: gpus > 0 needs gpu_mem_gib (whole GiB, at least 1)")
    for p in declared:
        if not any(p.name in g.partitions for g in shape.groups):
            raise ClusterShapeError(f"{shape.source}: partition {p.name!r} has no node group")
    nodes = [n for g in shape.groups for n in g.node_names()]
    if len(set(nodes)) != len(nodes):
        raise ClusterShapeError(f"{shape.source}: node names collide between node groups")


_NEEDS = {"node_groups": _need_node_groups, "gpu_types": _need_gpu_types, "partitioned": _need_partitioned,
          "complete": _need_complete}
