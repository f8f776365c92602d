"""Reader of the cluster shape a PBS Pro, OpenPBS or Torque cluster reports: ``pbsnodes -av`` (PBS Pro and
OpenPBS: every vnode) or ``pbsnodes -a`` (Torque), with the queues of ``qstat -Qf`` and the server's name from
``qstat -Bf``.

Each node is a name at the start of a line followed by indented ``attribute = value`` lines (pbsnodes(8B)).
PBS Pro and OpenPBS give ``resources_available.ncpus``, ``.mem`` and ``.ngpus`` per vnode, and the vnode's
``queue`` when it is tied to one (pbs_node_attributes(7B)); the vnodes of one host (``resources_available.host``)
are added up into that host, as ``pbsnodes -a`` itself adds up consumable resources.  Torque gives ``np`` (the
slots the server schedules), ``gpus``, ``properties`` and a ``status`` list holding ``ncpus=``, ``physmem=`` and
``totmem=`` (memory and swap; used only when ``physmem`` is missing).  Sizes are PBS sizes: a number with
``b``/``w`` (bytes, 8-byte words) and a ``k m g t p`` multiplier of 1024 (``263842276kb``).

Queues become partitions (``qstat -Qf``: ``Queue: NAME`` then ``attribute = value`` lines, long values going
on over lines that start with a tab).  A queue some vnode is tied to holds those hosts; a Torque queue whose
``resources_default.neednodes`` names node properties holds the hosts that have them; any other execution queue
holds the hosts tied to no queue.  Without ``qstat -Qf`` only the vnodes' own ``queue`` makes partitions.  Nodes
of one kind (CPUs, memory, GPUs, queues) become one node group (:mod:`audit.cluster_shape`).  A node without a
CPU count (``resources_available.ncpus``, ``np``, ``status`` ``ncpus=``) is set aside with its line and why.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..cluster_shape import ShapeRead, shape_from_hosts
from ..textio import read_text
from ..units import whole_number

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([kmgtp]?)([bw]?)$", re.IGNORECASE)
_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_KEY = re.compile(r"^[A-Za-z_][\w.\-]*$")
WORD = 8  # bytes in a word on the 64-bit hosts PBS runs on


def pbs_size(text) -> int | None:
    """Bytes of a PBS size (``263842276kb``, ``16gb``, ``1024`` bytes, ``2mw`` words); None when it is not one."""
    m = _SIZE.match(str(text or "").strip())
    if not m:
        return None
    unit = WORD if m.group(3).lower() == "w" else 1
    return int(round(float(m.group(1)) * 1024 ** _POWER[m.group(2).lower()] * unit))


def attribute_blocks(text: str, prefix: str = "") -> list[tuple[int, str, dict]]:
    """``(line, title, attributes)`` for each entry of a ``pbsnodes -a`` or ``qstat -f`` listing: a title at the
    start of a line (after ``prefix``, e.g. ``Queue:``), then indented ``key = value`` lines; a line starting with
    a tab goes on with the value before it."""
    blocks: list = []
    last = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if not line[0].isspace():
            title = line.strip()
            if prefix:
                if not title.startswith(prefix):
                    last = None
                    blocks.append((n, None, {}))  # not an entry of this listing: the caller sets it aside
                    continue
                title = title[len(prefix):].strip()
            blocks.append((n, title, {}))
            last = None
            continue
        if not blocks:
            continue
        attrs = blocks[-1][2]
        if line.startswith("\t") and last is not None:
            attrs[last] += line.strip()
            continue
        key, sep, value = line.strip().partition(" = ")
        if sep and _KEY.match(key):
            attrs[key] = value.strip()
            last = key
        elif last is not None:
            attrs[last] += " " + line.strip()
    return blocks


def _status(value: str) -> dict:
    """Torque's ``status`` list: ``key=value`` items separated by commas."""
    out = {}
    for item in value.split(","):
        k, sep, v = item.partition("=")
        if sep:
            out.setdefault(k.strip(), v.strip())
    return out




def read_pbsnodes(path, *, server=None, queues=None, name: str | None = None) -> ShapeRead:
    """The shape of the nodes listed in ``path`` (``pbsnodes -av`` or ``-a``); ``queues`` (a ``qstat -Qf``
    file) gives the partitions, ``server`` (a ``qstat -Bf`` file) the cluster's name."""
    hosts: dict = {}
    skipped = []
    for n, title, attrs in attribute_blocks(read_text(path, "pbsnodes output")):
        status = _status(attrs.get("status", ""))
        cpus = whole_number(attrs.get("resources_available.ncpus"))
        if cpus is None:
            cpus = whole_number(attrs.get("np"))
        if cpus is None:
            cpus = whole_number(status.get("ncpus"))
        if not title or cpus is None:
            skipped.append((n, "no resources_available.ncpus, np or status ncpus", title or ""))
            continue
        mem = pbs_size(attrs.get("resources_available.mem"))
        if mem is None:
            mem = pbs_size(status.get("physmem")) or pbs_size(status.get("totmem")) or 0
        gpus = whole_number(attrs.get("resources_available.ngpus"))
        if gpus is None:
            gpus = whole_number(attrs.get("gpus")) or 0
        host = hosts.setdefault(attrs.get("resources_available.host") or title,
                                {"cpus": 0, "mem": 0, "gpus": 0, "queues": set(), "props": set()})
        host["cpus"] += cpus
        host["mem"] += mem
        host["gpus"] += gpus
        if attrs.get("queue"):
            host["queues"].add(attrs["queue"])
        host["props"].update(p for p in attrs.get("properties", "").split(",") if p)
    notes = []
    queue_list = _queues(queues, notes) if queues is not None else None
    members = _members(hosts, queue_list)
    cluster = name or (_server_name(server) if server is not None else None) or "pbs"
    kinds = {host: (h["cpus"], h["mem"], h["gpus"], tuple(q for q in members if host in members[q]))
             for host, h in hosts.items()}
    shape = shape_from_hosts(cluster, kinds)
    return ShapeRead(shape=shape, nodes=len(hosts), skipped=skipped, notes=notes)


def _queues(path, notes) -> list[tuple[str, dict]]:
    """Execution queues of ``qstat -Qf`` with their attributes (route queues hold no jobs that run)."""
    out = []
    for _, title, attrs in attribute_blocks(read_text(path, "qstat -Qf output"), prefix="Queue:"):
        if not title:
            continue
        if attrs.get("queue_type", "Execution").lower().startswith("e"):
            out.append((title, attrs))
    if not out:
        notes.append(f"{path}: no execution queue")
    return out


def _needed(attrs: dict) -> set:
    """Node properties a Torque queue's ``resources_default.neednodes`` asks for (counts and ``ppn=`` left out)."""
    spec = attrs.get("resources_default.neednodes", "")
    return {t for t in re.split(r"[:+]", spec) if t and "=" not in t and not t.isdigit()}


def _members(hosts: dict, queue_list) -> dict:
    """Queue → the hosts it holds (see the module's docstring), in the queues' order."""
    tied: dict = {}
    for host, h in hosts.items():
        for q in sorted(h["queues"]):
            tied.setdefault(q, set()).add(host)
    free = {host for host, h in hosts.items() if not h["queues"]}
    members: dict = {}
    for q, attrs in queue_list or []:
        need = _needed(attrs)
        if q in tied:
            members[q] = tied[q]
        elif need:
            members[q] = {host for host, h in hosts.items() if need <= h["props"] or host in need}
        else:
            members[q] = set(free)
    for q in tied:  # a vnode's queue missing from the queue list (or no list at all)
        members.setdefault(q, tied[q])
    return members


def _server_name(path) -> str | None:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Server:"):
            return line.split(":", 1)[1].strip() or None
    return None
