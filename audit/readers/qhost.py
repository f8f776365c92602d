"""Reader of the cluster shape a Grid Engine cluster reports: ``qhost -F`` (one line per host under a ``HOSTNAME
ARCH NCPU … MEMTOT …`` header, each followed by its resources, one indented ``xy:name=value`` line each), with
the queues of ``qconf -sq <queue>`` and the host groups of ``qconf -shgrp_resolved <@group>``.

CPUs are ``NCPU`` (else ``hl:num_proc``), memory ``hl:mem_total`` (else ``MEMTOT``), both as qhost(1) shows them;
memory is a Grid Engine memory specifier (sge_types(1): ``K M G`` multiply by powers of 1024, ``k m g`` by powers
of 1000; qhost also prints ``T``).  GPUs are the host's ``gpu`` (or ``gpus``, ``ngpus``) resource: qhost(1)'s
first letter says what dominated the value (``h`` host, ``g`` global), the second where it came from (``l`` a
load value, ``f`` a fixed value, ``c`` the consumable left free now).  A fixed or load value is the host's count;
only a consumable is there, it is what was free when qhost ran (the shape's notes say so).  The ``global`` line
and hosts reporting no CPU count (``-``: down or never started) are set aside.

Queues are partitions.  ``qconf -sq`` prints ``key value`` lines, long ones going on after a ``\\`` (qconf(1));
a queue holds the hosts of its ``hostlist`` (host names, ``@groups``, ``NONE``) that have slots in it: ``slots``
is a default then ``[host=n]`` or ``[@group=n]`` overrides (queue_conf(5)), and a host with 0 slots is not in it.
Host names are matched by their short name (before the first dot).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..cluster_shape import ShapeRead, shape_from_hosts
from ..textio import read_text
from ..units import whole_number

_MEM = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT]?)$")
_MULT = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2, "g": 1000**3, "G": 1024**3, "t": 1000**4,
         "T": 1024**4}
_RESOURCE = re.compile(r"^\s+([a-zA-Z])([a-zA-Z]):([^=\s]+)=(\S*)\s*$")
GPU_NAMES = ("gpu", "gpus", "ngpus")


def sge_memory(text) -> int | None:
    """Bytes of a Grid Engine memory figure (``62.8G``, ``62.804G``, ``512M``, ``4g``); None for ``-``."""
    m = _MEM.match(str(text or "").strip())
    return int(round(float(m.group(1)) * _MULT[m.group(2)])) if m else None




def short(host: str) -> str:
    return host.split(".", 1)[0]


def qhost_hosts(text: str) -> tuple[dict, list]:
    """Host → ``{"columns": {...}, "resources": {name: [(xy, value), ...]}, "line": n}``; lines set aside."""
    hosts: dict = {}
    skipped, columns, current = [], None, None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or set(line.strip()) == {"-"}:
            continue
        if line.split()[0] == "HOSTNAME":
            columns, current = line.split(), None
            continue
        if line[0].isspace():
            m = _RESOURCE.match(line)
            if current is not None and m:
                current["resources"].setdefault(m.group(3), []).append((m.group(1) + m.group(2), m.group(4)))
            continue  # a queue or job line (qhost -q, -j), or a resource of the global line: not the host's
        words = line.split()
        if columns is None:
            skipped.append((n, "before the HOSTNAME header", line[:200]))
            current = None
            continue
        if words[0] == "global":
            current = None
            continue
        current = {"columns": dict(zip(columns, words, strict=False)), "resources": {}, "line": n}
        hosts[words[0]] = current
    return hosts, skipped


def _gpus(resources: dict) -> tuple[int, bool]:
    """The host's GPU count and whether it is only a consumable's free amount."""
    for gpu in GPU_NAMES:
        values = resources.get(gpu)
        if not values:
            continue
        fixed = [whole_number(v) for xy, v in values if xy[1] in "lLf" and whole_number(v) is not None]
        if fixed:
            return max(fixed), False
        free = [whole_number(v) for xy, v in values if whole_number(v) is not None]
        if free:
            return max(free), True
    return 0, False


def queue_conf(text: str) -> dict:
    """``qconf -sq``'s ``key value`` lines as a dict, lines ending in ``\\`` joined to the next."""
    out, pending = {}, ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        out[key] = value.strip()
    if pending.strip():
        key, _, value = pending.strip().partition(" ")
        out[key] = value.strip()
    return out


def _words(value: str) -> list[str]:
    return [w for w in re.split(r"[\s,]+", value or "") if w]


def queue_hostgroups(text: str) -> list[str]:
    """The ``@groups`` of a ``qconf -sq`` output's ``hostlist`` and of its ``slots`` overrides."""
    conf = queue_conf(text)
    named = _words(conf.get("hostlist", "")) + [m for m in re.findall(r"\[(@[^=\]]+)=", conf.get("slots", ""))]
    return list(dict.fromkeys(w for w in named if w.startswith("@")))


def hostgroup_hosts(text: str) -> list[str]:
    """The hosts of a ``qconf -shgrp_resolved`` output (host names; a ``hostlist`` line if the group is printed
    in its ``group_name``/``hostlist`` form)."""
    conf = queue_conf(text)
    if "hostlist" in conf:
        return [w for w in _words(conf["hostlist"]) if w != "NONE"]
    return [w for w in _words(text) if w != "NONE"]


def _slots(value: str) -> tuple[int | None, dict]:
    """``1,[node01=16],[@gpu=8]`` → (1, {"node01": 16, "@gpu": 8})."""
    default, overrides = None, {}
    for part in re.findall(r"\[[^\]]*\]|[^,\[\]]+", value or ""):
        part = part.strip()
        if part.startswith("["):
            key, _, n = part[1:-1].partition("=")
            overrides[key.strip()] = whole_number(n)
        elif part:
            default = whole_number(part)
    return default, overrides


def _queue_members(conf: dict, groups: dict) -> set:
    """Short names of the hosts a queue holds (in its hostlist, with more than 0 slots)."""
    members: dict = {}
    for word in _words(conf.get("hostlist", "")):
        if word == "NONE":
            continue
        for host in groups.get(word, []) if word.startswith("@") else [word]:
            members.setdefault(short(host), None)
    default, overrides = _slots(conf.get("slots", ""))
    by_host = {short(k): v for k, v in overrides.items() if not k.startswith("@")}
    out = set()
    for host in members:
        n = by_host.get(host)
        if n is None:
            n = next((v for k, v in overrides.items() if k.startswith("@") and host in
                      {short(h) for h in groups.get(k, [])}), None)
        if n is None:
            n = default
        if n is None or n > 0:
            out.add(host)
    return out


def read_qhost(path, *, queues=(), hostgroups=None, name: str | None = None) -> ShapeRead:
    """The shape of the hosts ``qhost -F`` lists in ``path``; ``queues`` (``qconf -sq`` files) give the
    partitions, ``hostgroups`` (``{"@name": qconf -shgrp_resolved file}``) their host groups."""
    found, skipped = qhost_hosts(read_text(path, "qhost output"))
    groups = {g: hostgroup_hosts(read_text(p, "qconf -shgrp_resolved output")) for g, p in (hostgroups or {}).items()}
    members = {}
    for q in queues:
        conf = queue_conf(read_text(q, "qconf -sq output"))
        members[conf.get("qname") or Path(q).stem] = _queue_members(conf, groups)
    notes, hosts, free_only = [], {}, []
    for host, h in found.items():
        cols, res = h["columns"], h["resources"]
        cpus = whole_number(cols.get("NCPU"))
        if cpus is None:
            cpus = whole_number((res.get("num_proc") or [("", None)])[0][1])
        if cpus is None:
            skipped.append((h["line"], "no NCPU (the host is down or never reported)", host))
            continue
        mem = sge_memory((res.get("mem_total") or [("", None)])[0][1])
        if mem is None:
            mem = sge_memory(cols.get("MEMTOT")) or 0
        gpus, only_free = _gpus(res)
        if only_free:
            free_only.append(host)
        hosts[host] = (cpus, mem, gpus, tuple(q for q in members if short(host) in members[q]))
    if free_only:
        notes.append(f"GPUs of {len(free_only)} host(s) are the consumable's free amount when qhost ran "
                     f"(hc:), fewer than the host has where jobs held some: {', '.join(sorted(free_only)[:10])}")
    cluster = name or "sge"
    return ShapeRead(shape=shape_from_hosts(cluster, hosts), nodes=len(hosts), skipped=skipped, notes=notes)
