"""Reader of the cluster shape an LSF cluster reports: ``lshosts -w`` (one line per host under a ``HOST_NAME type
model cpuf ncpus maxmem maxswp server RESOURCES`` header), ``bhosts -l`` (per host: its ``MAX`` job slots and the
``ngpus`` of its load section), ``bqueues -l`` (each queue's ``HOSTS:``) and ``bmgroup -w -r`` (host groups,
expanded), with the cluster's name from ``lsid`` (``My cluster name is NAME``).

CPUs are ``ncpus`` (lshosts(1)); where a host reports ``-`` its ``MAX`` slots stand in.  ``maxmem`` is shown with a
unit (``64G``, ``2047M``; 1024-based, as LSF counts) or, bare, in MB.  A host whose ``server`` is ``No`` is a
client, not a place jobs run, and is set aside.  GPUs are ``ngpus_physical`` (or ``ngpus``) of ``bhosts -l``'s
``CURRENT LOAD USED FOR SCHEDULING``: bhosts(1) gives for a decreasing index such as these the amount still
available as ``Total`` and what jobs reserved as ``Reserved``, so the host's GPUs are the two added up.

Queues are partitions.  A queue's ``HOSTS:`` names hosts, host groups (a trailing ``/``, expanded by ``bmgroup``),
``all``, ``others`` (the hosts the list names in no other way), ``~name`` (left out) and ``name+N`` (a
preference, the host itself); a queue without a ``HOSTS:`` line uses every host (lsb.queues(5)).  Without
``bqueues -l`` the shape has no partitions.
"""

from __future__ import annotations

import re

from ..cluster_shape import ShapeRead, shape_from_hosts
from ..textio import read_text
from ..units import whole_number

_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)B?$", re.IGNORECASE)
_POWER = {"K": -1, "M": 0, "G": 1, "T": 2, "P": 3}
MIB = 2**20


def lsf_mem(text) -> int | None:
    """Bytes of an ``lshosts`` memory figure (``64G``, ``31.9G``, ``2047M``, ``2047`` MB); None for ``-``."""
    m = _MEM.match(str(text or "").strip())
    if not m:
        return None
    unit = (m.group(2) or "M").upper()
    return int(round(float(m.group(1)) * MIB * 1024.0 ** _POWER[unit]))


def cluster_name(text: str) -> str | None:
    """The cluster's name in ``lsid``'s output."""
    m = re.search(r"My cluster name is (\S+)", text or "")
    return m.group(1) if m else None




def lshosts_rows(text: str) -> tuple[dict, list]:
    """Host → its ``lshosts -w`` columns; and the lines set aside ``(line, why, text)``."""
    rows, skipped, columns = {}, [], None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.split()[0] == "HOST_NAME":
            columns = line.split()
            continue
        if columns is None:
            skipped.append((n, "before the HOST_NAME header", line[:200]))
            continue
        values = line.split(None, len(columns) - 1)
        row = dict(zip(columns, values, strict=False))
        if len(values) < (columns.index("server") + 1 if "server" in columns else min(len(columns), 5)):
            skipped.append((n, "fewer columns than the header", line[:200]))
            continue
        rows[values[0]] = row
        rows[values[0]]["_line"] = n
    return rows, skipped


def bhosts_slots(text: str) -> dict:
    """Host → ``{"max": MAX slots or None, "gpus": ngpus_physical or ngpus (Total + Reserved) or None}`` from
    ``bhosts -l``."""
    out: dict = {}
    host = None
    expect_status = in_load = False
    columns: list = []
    load: dict = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "HOST" and len(words) == 2:
            host = words[1]
            out[host] = {"max": None, "gpus": None}
            expect_status = in_load = False
            load = {}
            continue
        if host is None:
            continue
        if words[0] == "STATUS":
            columns, expect_status = words, True
            continue
        if expect_status:
            expect_status = False
            if "MAX" in columns and len(words) > columns.index("MAX"):
                out[host]["max"] = whole_number(words[columns.index("MAX")])
            continue
        if line.strip().startswith("CURRENT LOAD USED FOR SCHEDULING"):
            in_load, columns = True, []
            continue
        if in_load and line.strip().startswith(("LOAD THRESHOLD", "THRESHOLD", "ADMIN ACTION")):
            in_load = False
        if not in_load:
            continue
        if words[0] in ("Total", "Reserved"):
            for col, value in zip(columns, words[1:], strict=False):
                load.setdefault(col, {})[words[0]] = value
            gpus = load.get("ngpus_physical") or load.get("ngpus")
            if gpus:
                total, reserved = _number(gpus.get("Total")), _number(gpus.get("Reserved")) or 0.0
                out[host]["gpus"] = None if total is None else int(round(total + reserved))
        else:
            columns = words
    return out


def _number(text) -> float | None:
    try:
        return float(str(text).rstrip("%"))
    except (TypeError, ValueError):
        return None


def bqueues_hosts(text: str) -> dict:
    """Queue → the words of its ``HOSTS:`` line (None: no such line, every host)."""
    out: dict = {}
    queue = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("QUEUE:"):
            queue = s.split(":", 1)[1].strip()
            out[queue] = None
        elif queue is not None and s.startswith("HOSTS:"):
            out[queue] = s.split(":", 1)[1].split()
    return out


def bmgroup_members(text: str) -> dict:
    """Host group → its hosts (``bmgroup -w -r``: a ``GROUP_NAME HOSTS`` header, then one group a line)."""
    out: dict = {}
    last = None
    for line in text.splitlines():
        words = [w for w in line.split() if w not in ("(", ")")]
        if not words or words[0] == "GROUP_NAME":
            continue
        if line[0].isspace() and last is not None:  # a long list going on
            out[last] += words
            continue
        last = words[0].rstrip("/")
        out[last] = words[1:]
    return out


def _queue_members(words, servers: list, groups: dict) -> set:
    if words is None:
        return set(servers)
    known = set(servers)

    def expand(word: str, seen=()) -> set:
        if word == "all":
            return set(servers)
        if word.endswith("/") or (word in groups and word not in known):
            g = word.rstrip("/")
            if g in seen:
                return set()
            return set().union(*(expand(w, (*seen, g)) for w in groups.get(g, [])))
        return {word} & known

    chosen, left_out, others = set(), set(), False
    for word in words:
        word = re.sub(r"\+\d*$", "", word)
        if word.startswith("~"):
            left_out |= expand(word[1:])
        elif word == "others":
            others = True
        else:
            chosen |= expand(word)
    if others:
        chosen |= known - chosen - left_out
    return chosen - left_out


def read_lsf_hosts(path, *, bhosts=None, queues=None, hostgroups=None, lsid=None,
                   name: str | None = None) -> ShapeRead:
    """The shape of the hosts ``lshosts -w`` lists in ``path``; ``bhosts`` (``bhosts -l``) gives slots and GPUs,
    ``queues`` (``bqueues -l``) and ``hostgroups`` (``bmgroup -w -r``) the partitions, ``lsid`` the name."""
    rows, skipped = lshosts_rows(read_text(path, "lshosts output"))
    slots = bhosts_slots(read_text(bhosts, "bhosts output")) if bhosts is not None else {}
    notes = []
    hosts = {}
    for host, row in rows.items():
        if row.get("server", "Yes").lower() == "no":
            skipped.append((row["_line"], "a client host (server No), where no job runs", host))
            continue
        cpus = whole_number(row.get("ncpus"))
        if cpus is None:
            cpus = slots.get(host, {}).get("max")
        if cpus is None:
            skipped.append((row["_line"], "no ncpus and no MAX slots", host))
            continue
        hosts[host] = (cpus, lsf_mem(row.get("maxmem")) or 0, slots.get(host, {}).get("gpus") or 0)
    members: dict = {}
    if queues is not None:
        groups = bmgroup_members(read_text(hostgroups, "bmgroup output")) if hostgroups is not None else {}
        members = {q: _queue_members(words, list(hosts), groups)
                   for q, words in bqueues_hosts(read_text(queues, "bqueues output")).items()}
    else:
        notes.append("no bqueues -l output: the hosts are in no partition")
    cluster = name or (cluster_name(read_text(lsid, "lsid output")) if lsid is not None else None) or "lsf"
    kinds = {h: (*v, tuple(q for q in members if h in members[q])) for h, v in hosts.items()}
    shape = shape_from_hosts(cluster, kinds)
    return ShapeRead(shape=shape, nodes=len(hosts), skipped=skipped, notes=notes)
