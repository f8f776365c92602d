"""Figures in the units a scheduler takes and people read: ``1-23:15:00``, ``282G``, ``24Gi`` (Slurm, Kubernetes),
``48:00:00`` and ``64gb`` (PBS), ``48:00`` and ``64GB`` (LSF), whole CPUs and GPUs, and risks as "about 1 in 5".
Requests round *up* (a suggestion is never below the figure it rests on); pure functions of numbers."""

from __future__ import annotations

import math

GIB = 2**30
MIB = 2**20
MINUTE, HOUR, DAY = 60, 3600, 86400
#: how each scheduler's users name the time, memory and whole-node requests, in advice
TIME_OPTION = {"slurm": "--time", "pbs": "walltime", "lsf": "-W", "kubernetes": "activeDeadlineSeconds"}
MEM_OPTION = {"slurm": "--mem", "pbs": "mem", "lsf": "rusage[mem]", "kubernetes": "the memory request"}
EXCLUSIVE_OPTION = {"slurm": "--exclusive", "pbs": "exclusive placement", "lsf": "-x"}


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
    """The bytes of a size :func:`slurm_size`, :func:`kube_size`, :func:`pbs_size` or :func:`lsf_size` wrote
    (``3200M``, ``24Gi``, ``64gb``, ``800MB``: binary multiples, as every one of these schedulers counts them)."""
    units = {"gi": GIB, "mi": MIB, "ti": 1024 * GIB, "g": GIB, "m": MIB, "t": 1024 * GIB,
             "gb": GIB, "mb": MIB, "tb": 1024 * GIB}
    low = text.strip().lower()
    for u in sorted(units, key=len, reverse=True):
        if low.endswith(u):
            return float(low[: -len(u)]) * units[u]
    return float(low)


def kube_size(nbytes: float) -> str:
    """Bytes as a Kubernetes memory quantity, rounded up: whole ``Gi`` from 1 GiB, else ``Mi`` in hundreds."""
    return slurm_size(nbytes).replace("G", "Gi").replace("M", "Mi")


def pbs_time(seconds: float) -> str:
    """Seconds as PBS writes a walltime: ``HH:MM:SS`` with the hours running past a day (``48:00:00``), as the
    PBS reference's duration type ``[[hours:]minutes:]seconds`` is printed; rounded up to the second."""
    s = int(math.ceil(max(float(seconds), 0.0) - 1e-6))
    h, rest = divmod(s, HOUR)
    m, sec = divmod(rest, MINUTE)
    return f"{h:02d}:{m:02d}:{sec:02d}"


def pbs_size(nbytes: float) -> str:
    """Bytes as a PBS size, rounded up on the grid of :func:`slurm_size`: ``64gb``, ``3200mb`` (PBS's size type:
    an integer with ``kb``, ``mb``, ``gb``, ``tb``, multiples of 1024; a bare number is bytes)."""
    return slurm_size(nbytes).replace("G", "gb").replace("M", "mb")


def lsf_time(seconds: float, form: str = "hm") -> str:
    """Seconds as ``bsub -W`` takes a run limit, rounded up to the minute: ``[hour:]minute`` (``1:30``, ``48:00``,
    ``45``) with ``form="hm"``, all minutes (``90``) with ``form="m"``."""
    minutes = int(math.ceil(max(float(seconds), 0.0) / MINUTE - 1e-6))
    if form == "m" or minutes < 60:
        return str(minutes)
    h, m = divmod(minutes, 60)
    return f"{h}:{m:02d}"


def lsf_size(nbytes: float) -> str:
    """Bytes as an LSF memory figure with its unit, rounded up on the grid of :func:`slurm_size`: ``64GB``,
    ``3200MB`` (a unit written out means the same whatever ``LSF_UNIT_FOR_LIMITS`` says)."""
    return slurm_size(nbytes).replace("G", "GB").replace("M", "MB")


def time_text(scheduler: str):
    """The function writing a time limit in ``scheduler``'s form (Kubernetes: as Slurm writes it, to read)."""
    return {"pbs": pbs_time, "lsf": lsf_time}.get(scheduler, slurm_time)


def size_text(scheduler: str):
    """The function writing a memory request to paste in ``scheduler``'s form."""
    return {"pbs": pbs_size, "lsf": lsf_size, "kubernetes": kube_size}.get(scheduler, slurm_size)


def readable_text(scheduler: str):
    """The function writing a memory figure to read in ``scheduler``'s spelling (``2.0G``, ``2.0gb``, ``2.0GB``)."""
    if scheduler == "pbs":
        return lambda b: readable_size(b).replace("G", "gb").replace("M", "mb")
    if scheduler == "lsf":
        return lambda b: readable_size(b).replace("G", "GB").replace("M", "MB")
    return readable_size


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
