"""What a Grid Engine job asked for, read from its accounting record's ``category`` field.

accounting(5): ``category`` is a space-separated pseudo-option list, e.g.
``-U users -q short.q -l h_rt=3600,h_vmem=4G -soft -l arch=lx-amd64 -pe smp 1-8``.  Only the hard resource
list (``-l`` not after ``-soft``) and the parallel environment (``-pe name range``) are read:

- time limit: ``h_rt`` (else ``s_rt``); CPU-time limits ``h_cpu`` / ``s_cpu``.  Values are sge_types(1)
  time specifiers: seconds, or ``h:m:s`` where an empty part is zero (``1::1`` is 3601 s); ``INFINITY`` is no
  limit.
- memory: ``h_vmem``, ``s_vmem``, ``virtual_free`` (``vf``) are virtual memory; ``m_mem_free`` (Univa; ``mfree``),
  ``h_rss``, ``mem_free`` (``mf``) resident.  Values are sge_types(1) memory specifiers: bytes with an optional
  multiplier, ``k`` 1000, ``K`` 1024, ``m`` 1000², ``M`` 1024², ``g`` 1000³, ``G`` 1024³ (``t``/``T`` read the same
  way); a ``0x`` prefix is hexadecimal.
- GPUs: ``gpu``, ``gpus`` or ``ngpus`` (site-defined consumables; a number is a count, ``TRUE`` a boolean that
  names no count); the type from ``gpu_type`` or ``gputype``.
- ``-pe name range``: the smallest slot count the range allows (``1-10`` → 1), for a record that was never
  dispatched and so has no slots.

Memory and CPU-time requests are per slot (complex(5): a consumable declared ``YES``, the usual form for memory,
is booked once per slot; queue_conf(5): the h_vmem, s_vmem, h_cpu and s_cpu limits are multiplied by the slots);
the reader multiplies them by the job's slots.  A GPU count is read as the job's total: GPU complexes are site
definitions, commonly ``JOB`` (or Univa ``HOST``) consumables, since a card is not split by slots; a site that
declared its GPU complex ``YES`` (per slot) sees its multi-slot jobs' GPUs counted once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_MEMORY = re.compile(r"^(?:0[xX](?P<hex>[0-9a-fA-F]+)|(?P<num>\d+(?:\.\d*)?|\.\d+)(?P<unit>[kKmMgGtT]?))$")
_UNITS = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2, "g": 1000**3, "G": 1024**3, "t": 1000**4,
          "T": 1024**4}
_TIME = re.compile(r"^(?:(?P<s>\d+(?:\.\d*)?)|(?P<h>\d*):(?P<m>\d*):(?P<sec>\d*))$")
_UNLIMITED = {"infinity", "inf", "unlimited"}

#: complex names (with their complex(5) default shortcuts) → the request they carry
VIRTUAL = ("h_vmem", "s_vmem", "virtual_free", "vf")
RESIDENT = ("m_mem_free", "mfree", "h_rss", "mem_free", "mf")
GPU_COUNT = ("gpu", "gpus", "ngpus")
GPU_TYPE = ("gpu_type", "gputype")
TIMES = ("h_rt", "s_rt", "h_cpu", "s_cpu")
_CANONICAL = {"vf": "virtual_free", "mfree": "m_mem_free", "mf": "mem_free"}


@dataclass
class Request:
    """One category's request: limits in seconds, memory per slot in bytes (with the complex it came from),
    GPUs for the job; None where not asked (or ``INFINITY``).  ``unreadable`` lists ``(name, value)`` pairs whose
    value is not a time or memory specifier."""

    h_rt: float | None = None
    s_rt: float | None = None
    h_cpu: float | None = None
    s_cpu: float | None = None
    mem_virtual: float | None = None
    mem_virtual_name: str | None = None
    mem_resident: float | None = None
    mem_resident_name: str | None = None
    gpus: float | None = None
    gpu_flag: bool = False
    gpu_type: str | None = None
    pe_min_slots: float | None = None
    unreadable: list = field(default_factory=list)


def parse_category(text: str | None) -> Request:
    """The request a ``category`` string holds (see the module docstring)."""
    req = Request()
    if not text or text == "NONE":
        return req
    tokens = text.split()
    pairs: list[tuple[str, str]] = []
    for i, tok in enumerate(tokens):
        if tok == "-l" and i + 1 < len(tokens) and (i == 0 or tokens[i - 1] != "-soft"):
            for item in tokens[i + 1].split(","):
                name, _, value = item.partition("=")
                pairs.append((name.strip(), value.strip() if _ else "TRUE"))
        elif tok == "-pe" and i + 2 < len(tokens):
            req.pe_min_slots = _range_min(tokens[i + 2])
    for name, value in pairs:
        _apply(req, name, value)
    return req


def _apply(req: Request, name: str, value: str) -> None:
    if name in TIMES:
        if getattr(req, name) is None and value.lower() not in _UNLIMITED:
            seconds = parse_time(value)
            if seconds is None:
                req.unreadable.append((name, value))
            setattr(req, name, seconds)
    elif name in VIRTUAL or name in RESIDENT:
        if value.lower() in _UNLIMITED:
            return
        size = parse_memory(value)
        if size is None:
            req.unreadable.append((name, value))
            return
        label = _CANONICAL.get(name, name)
        if name in VIRTUAL and _earlier(VIRTUAL, label, req.mem_virtual_name):
            req.mem_virtual, req.mem_virtual_name = size, label
        elif name in RESIDENT and _earlier(RESIDENT, label, req.mem_resident_name):
            req.mem_resident, req.mem_resident_name = size, label
    elif name in GPU_COUNT and req.gpus is None and not req.gpu_flag:
        if re.fullmatch(r"\d+(?:\.\d+)?", value):
            req.gpus = float(value)
        elif value.lower() in ("true", "1", "yes"):
            req.gpu_flag = True
        else:
            req.unreadable.append((name, value))
    elif name in GPU_TYPE and value and req.gpu_type is None:
        req.gpu_type = value


def _earlier(order: tuple, label: str, current: str | None) -> bool:
    """Whether ``label`` comes before the complex already read in the precedence ``order``."""
    return current is None or order.index(label) < order.index(current)


def parse_memory(value: str) -> float | None:
    """A memory specifier (sge_types(1)) in bytes; None when it is not one."""
    m = _MEMORY.match(value.strip())
    if not m:
        return None
    if m.group("hex"):
        return float(int(m.group("hex"), 16))
    return float(m.group("num")) * _UNITS[m.group("unit")]


def parse_time(value: str) -> float | None:
    """A time specifier (sge_types(1)) in seconds: ``3600`` or ``h:m:s`` with empty parts zero; None otherwise."""
    m = _TIME.match(value.strip())
    if not m:
        return None
    if m.group("s") is not None:
        return float(m.group("s"))
    h, mi, s = (int(m.group(k) or 0) for k in ("h", "m", "sec"))
    return float(h * 3600 + mi * 60 + s)


def _range_min(text: str) -> float | None:
    """The smallest count of a PE slot range (``8``, ``1-10``, ``4-``, ``-16``, ``2,4,8``)."""
    lows = []
    for part in text.split(","):
        lo = part.split("-", 1)[0]
        lows.append(int(lo) if lo.isdigit() else 1)
    return float(min(lows)) if lows else None
