"""Figures in the units a scheduler takes and people read: ``1-23:15:00``, ``282G``, ``24Gi``, whole CPUs and
GPUs, and risks as "about 1 in 5".  Requests round *up* (a suggestion is never below the figure it rests on);
pure functions of numbers."""

from __future__ import annotations

import math

GIB = 2**30
MIB = 2**20
MINUTE, HOUR, DAY = 60, 3600, 86400


def slurm_time(seconds: float) -> str:
    """Seconds as Slurm writes a time limit, rounded up to the minute: ``45:00`` is never used (Slurm reads
    it as minutes:seconds), so under a day ``HH:MM:SS``, from a day ``D-HH:MM:SS``."""
    s = int(math.ceil(max(float(seconds), 0.0) / MINUTE - 1e-6)) * MINUTE  # a limit plus float noise is the limit
    d, rest = divmod(s, DAY)
    h, rest = divmod(rest, HOUR)
    m = rest // MINUTE
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"


def round_time(seconds: float) -> float:
    """A time limit to suggest: up to 5 minutes under an hour, up to 15 minutes above (at least 5 minutes)."""
    step = 5 * MINUTE if seconds <= HOUR else 15 * MINUTE
    return float(max(step, math.ceil(seconds / step - 1e-6) * step))


def slurm_size(nbytes: float) -> str:
    """Bytes as a Slurm memory size, rounded up: whole ``G`` from 10 GiB; below, ``M`` in hundreds, or the whole
    ``G`` when that is no more."""
    b = max(float(nbytes), 0.0)
    gib = max(1, math.ceil(b / GIB - 1e-9))
    if b >= 10 * GIB - 1:
        return f"{gib}G"
    mib = max(100, math.ceil(b / MIB / 100 - 1e-9) * 100)
    return f"{gib}G" if gib * 1024 <= mib else f"{mib}M"


def size_bytes(text: str) -> float:
    """The bytes of a size :func:`slurm_size` or :func:`kube_size` wrote."""
    units = {"Gi": GIB, "Mi": MIB, "G": GIB, "M": MIB, "T": 1024 * GIB, "Ti": 1024 * GIB}
    for u in sorted(units, key=len, reverse=True):
        if text.endswith(u):
            return float(text[: -len(u)]) * units[u]
    return float(text)


def kube_size(nbytes: float) -> str:
    """Bytes as a Kubernetes memory quantity, rounded up: whole ``Gi`` from 1 GiB, else ``Mi`` in hundreds."""
    return slurm_size(nbytes).replace("G", "Gi").replace("M", "Mi")


def readable_size(nbytes: float) -> str:
    """A memory figure to read (not to paste): one decimal under 10 GiB, rounded up."""
    b = float(nbytes)
    if b >= 10 * GIB:
        return f"{math.ceil(b / GIB - 1e-9)}G"
    if b >= GIB:
        return f"{math.ceil(b / GIB * 10 - 1e-9) / 10:.1f}G"
    return f"{max(1, math.ceil(b / MIB - 1e-9))}M"


def whole(x: float) -> int:
    """A count of CPUs or GPUs to ask for: rounded up, at least 1."""
    return max(1, int(math.ceil(float(x) - 1e-9)))


def duration_words(seconds: float) -> str:
    """``48 h``, ``45 min``, ``3 days``: a time limit in words."""
    s = float(seconds)
    if s < HOUR:
        return f"{max(1, round(s / MINUTE))} min"
    if s < 3 * DAY:
        h = s / HOUR
        return f"{h:.0f} h" if abs(h - round(h)) < 0.05 else f"{h:.1f} h"
    d = s / DAY
    return f"{d:.0f} days" if abs(d - round(d)) < 0.05 else f"{d:.1f} days"


def hours_words(hours: float, unit: str) -> str:
    """``1,200 core-h``: resource-hours with a thousands separator."""
    return f"{hours:,.0f} {unit}" if hours >= 10 else f"{hours:,.1f} {unit}"


def odds_words(p: float, bound: str = "about") -> str:
    """A probability as people say it: ``about 1 in 5``, ``more than half``, ``fewer than 1 in 100``."""
    if p < 0.01 or (bound == "at most" and p <= 0.01):
        return "fewer than 1 in 100"
    if p >= 0.5:
        return "at least half of" if bound == "at least" else ("more than half of" if p > 0.55 else "about half of")
    k = round(1.0 / p)
    prefix = {"at most": "at most", "at least": "at least"}.get(bound, "about")
    return f"{prefix} 1 in {k}"
