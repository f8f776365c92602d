"""The pilot collector: read-only commands (:data:`READ_ONLY`) run on a login node, their outputs and a
manifest in one tarball that ``reclaim ingest`` reads (docs/pilot.md)."""

from .commands import READ_ONLY, CommandRunner
from .k8s import SERIES, collect_k8s
from .slurm import collect_slurm

__all__ = ["READ_ONLY", "SERIES", "CommandRunner", "collect_k8s", "collect_slurm"]
