"""The pilot collector: read-only commands (:data:`READ_ONLY`) run on a login node, their outputs and a
manifest in one tarball that ``reclaim ingest`` reads (docs/pilot.md)."""

from .commands import READ_ONLY, CommandRunner
from .k8s import SERIES, collect_k8s
from .lsf import collect_lsf
from .pbs import collect_pbs
from .sge import collect_sge
from .slurm import collect_slurm

__all__ = ["READ_ONLY", "SERIES", "CommandRunner", "collect_k8s", "collect_lsf", "collect_pbs", "collect_sge",
           "collect_slurm"]
