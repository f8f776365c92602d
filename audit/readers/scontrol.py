"""Reader of the cluster shape a Slurm cluster reports: ``scontrol show node --oneliner`` (one line per
node: ``NodeName=… CPUTot=… RealMemory=… Gres=gpu:a100:4(S:0-1) … Partitions=…``) and, for the cluster's
name, ``scontrol show config`` (``ClusterName = …``).

Nodes of one kind (CPUs, memory, GPUs and their type, partitions) become one node group; every partition
a node names becomes a partition of the shape (:mod:`audit.cluster_shape`).  A line without ``NodeName`` or
``CPUTot`` is set aside and counted.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..cluster_shape import ShapeRead
from ..textio import InputError

MIB = 2**20
_PAIR = re.compile(r"(\w+)=(\S*)")
_GPU = re.compile(r"gpu(?::([^:(,]+))?:(\d+)")


def _fields(line: str) -> dict:
    return {k: v for k, v in _PAIR.findall(line)}


def _gpus(gres: str) -> tuple[int, str]:
    """(count, type) of the GPUs in a ``Gres=`` value; a count without a type has type ``""``."""
    total, kinds = 0, []
    for kind, n in _GPU.findall(gres or ""):
        total += int(n)
        if kind and kind not in kinds:
            kinds.append(kind)
    return total, "+".join(kinds)


def read_scontrol_nodes(path, *, config=None, name: str | None = None) -> ShapeRead:
    """The shape of the nodes listed in ``path``; ``config`` (a ``scontrol show config`` file) names it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    cluster = name or (_cluster_name(Path(config)) if config else None) or "slurm"
    kinds: dict = {}
    skipped = []
    nodes = 0
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        f = _fields(line)
        cpus = f.get("CPUTot") or f.get("CPUEfctv")
        if "NodeName" not in f or not (cpus or "").isdigit():
            skipped.append((n, "no NodeName or CPUTot", line[:200]))
            continue
        gpus, gtype = _gpus(f.get("Gres", ""))
        mem = int(f["RealMemory"]) * MIB if f.get("RealMemory", "").isdigit() else 0
        parts = tuple(p for p in f.get("Partitions", "").split(",") if p and p != "(null)")
        kinds.setdefault((int(cpus), mem, gpus, gtype, parts), []).append(f["NodeName"])
        nodes += 1
    groups, partitions = [], []
    for i, ((cpus, mem, gpus, gtype, parts), names) in enumerate(sorted(kinds.items())):
        group = {"name": f"{parts[0] if parts else 'nodes'}-{i}", "count": len(names), "cpus": cpus,
                 "mem_bytes": mem, "gpus": gpus}
        if gpus:
            group["gpu_type"] = gtype or "gpu"
        if parts:
            group["partitions"] = list(parts)
        groups.append(group)
        partitions += [p for p in parts if p not in partitions]
    return ShapeRead(shape={"name": cluster, "partitions": [{"name": p} for p in partitions], "node_groups": groups},
                     nodes=nodes, skipped=skipped)


def _cluster_name(config: Path) -> str | None:
    try:
        for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
            k, _, v = line.partition("=")
            if k.strip() == "ClusterName":
                return v.strip() or None
    except OSError:
        return None
    return None
