"""Which scheduler's collector a monthly run uses: named, or the one whose read-only commands are on ``PATH``."""

from __future__ import annotations

import shutil

from ..textio import InputError

#: the schedulers with a collector, and the command that tells each is installed here (``qstat`` is both PBS's
#: and Grid Engine's, so each is told by a command only it has)
SCHEDULERS = ("slurm", "pbs", "lsf", "sge")
MARKERS = {"slurm": "sacct", "pbs": "pbsnodes", "lsf": "lsid", "sge": "qconf"}


def detect_scheduler(which=shutil.which) -> str:
    """The one scheduler whose marker command is on ``PATH``; an :class:`InputError` naming what was found when
    none or several are."""
    found = [s for s in SCHEDULERS if which(MARKERS[s])]
    if len(found) == 1:
        return found[0]
    seen = ", ".join(f"{s} ({MARKERS[s]})" for s in found) or "none of " + ", ".join(MARKERS.values())
    raise InputError(f"cannot tell which scheduler to collect from: found {seen} on PATH; pass --scheduler")


def collector(scheduler: str):
    """``collect(folder, since, until) -> (tarball, manifest)`` for ``scheduler`` (``auto``: detected)."""
    from . import collect_lsf, collect_pbs, collect_sge, collect_slurm

    name = detect_scheduler() if scheduler == "auto" else scheduler
    run = {"slurm": collect_slurm, "pbs": collect_pbs, "lsf": collect_lsf, "sge": collect_sge}.get(name)
    if run is None:
        raise InputError(f"--scheduler must be auto or one of {', '.join(SCHEDULERS)}, got {scheduler!r}")
    return lambda folder, since, until: run(folder, since=since, until=until)
