"""Which reader reads each detected format (:mod:`audit.readers.detect` names them).

Accounting formats give jobs (a :class:`~audit.ledger.ReadResult`), telemetry formats give samples or GPU holds
(a :class:`~audit.telemetry_table.TelemetryResult`), node formats give the nodes table
(a :class:`~audit.node_table.NodesResult`).
"""

from __future__ import annotations

from pathlib import Path

from ..ledger import ReadResult
from ..telemetry_table import TelemetryResult
from ..textio import InputError
from .alibaba import read_alibaba_genai, read_alibaba_nodes, read_alibaba_pods
from .cgroup import read_cgroup
from .gpu_index import read_gpu_index
from .k8s.nodes import read_k8s_nodes
from .k8s.pods import read_k8s_pods
from .lsf import read_lsf
from .pbs import read_pbs
from .prometheus import read_prometheus
from .sacct.json_jobs import read_sacct_json
from .sacct.text import read_sacct
from .sge import read_sge
from .swf import read_swf

#: accounting format → reader
JOB_READERS = {
    "sacct": read_sacct,
    "sacct-json": read_sacct_json,
    "swf": read_swf,
    "pbs": read_pbs,
    "lsf": read_lsf,
    "sge": read_sge,
    "k8s-pods": read_k8s_pods,
    "alibaba-pods": read_alibaba_pods,
}
#: telemetry format → reader
TELEMETRY_READERS = {
    "prometheus-json": read_prometheus,
    "prometheus-text": read_prometheus,
    "gpu-index": read_gpu_index,
    "cgroup-ttar": read_cgroup,
    "alibaba-genai": read_alibaba_genai,
}
#: node-list format → reader
NODE_READERS = {
    "k8s-nodes": read_k8s_nodes,
    "alibaba-nodes": read_alibaba_nodes,
}


def read_jobs_file(path: Path, fmt: str, *, cluster: str | None = None, timezone: str = "UTC",
                   delimiter: str | None = None) -> ReadResult:
    """Dispatch one accounting file to its ``read_<source>()``; ``timezone`` (the zone local stamps are in: sacct
    text's, PBS's) and ``delimiter`` (sacct text's)."""
    if fmt not in JOB_READERS:
        raise InputError(f"{path}: no reader for format {fmt!r}")
    reader = JOB_READERS[fmt]
    if fmt == "sacct":
        return reader(path, cluster=cluster, timezone=timezone, delimiter=delimiter)
    if fmt in ("pbs", "lsf", "sge"):
        return reader(path, cluster=cluster, timezone=timezone)
    return reader(path, cluster=cluster)


def read_telemetry_file(path: Path, kind: str, *, cluster: str | None = None) -> TelemetryResult:
    if kind not in TELEMETRY_READERS:
        raise ValueError(f"{path}: no telemetry reader for {kind!r}")
    return TELEMETRY_READERS[kind](path, cluster=cluster)


def read_nodes_file(path: Path, kind: str, *, cluster: str | None = None):
    if kind not in NODE_READERS:
        raise ValueError(f"{path}: no nodes reader for {kind!r}")
    return NODE_READERS[kind](path, cluster=cluster)
