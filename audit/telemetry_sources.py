"""Dispatch telemetry and node files to their readers, and join what they read to the job table.

Used by :mod:`audit.ingest`: files detected as telemetry (Prometheus JSON or text, GPU-index prolog records,
cgroup trees, Alibaba GenAI series) and as cluster shape (``kubectl get nodes``, Alibaba node lists) are read
here; :func:`attach` joins the samples to the jobs (:mod:`audit.telemetry_join`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .telemetry_join import JoinPolicy, TelemetryJoin
from .telemetry_table import TelemetryResult, concat_telemetry, empty_telemetry


def read_telemetry_file(path: Path, kind: str, *, cluster: str | None = None) -> TelemetryResult:
    if kind in ("prometheus-json", "prometheus-text"):
        from .read_prometheus import read_prometheus

        return read_prometheus(path, cluster=cluster)
    if kind == "gpu-index":
        from .telemetry_holds import read_gpu_index

        return read_gpu_index(path, cluster=cluster)
    if kind == "cgroup-ttar":
        from .read_cgroup import read_cgroup

        return read_cgroup(path, cluster=cluster)
    if kind == "alibaba-genai":
        from .read_alibaba import read_alibaba_genai

        return read_alibaba_genai(path, cluster=cluster)
    raise ValueError(f"{path}: no telemetry reader for {kind!r}")


def read_nodes_file(path: Path, kind: str, *, cluster: str | None = None):
    if kind == "k8s-nodes":
        from .read_k8s_nodes import read_k8s_nodes

        return read_k8s_nodes(path, cluster=cluster)
    if kind == "alibaba-nodes":
        from .read_alibaba import read_alibaba_nodes

        return read_alibaba_nodes(path, cluster=cluster)
    raise ValueError(f"{path}: no nodes reader for {kind!r}")


@dataclass
class Collected:
    """Telemetry, GPU holds, pod maps and nodes gathered while reading the inputs."""

    telemetry: list = field(default_factory=list)
    holds: list = field(default_factory=list)
    pods: list = field(default_factory=list)
    nodes: list = field(default_factory=list)

    def add(self, result: TelemetryResult) -> None:
        if len(result.telemetry):
            self.telemetry.append(result.telemetry)
        if result.holds is not None and len(result.holds):
            self.holds.append(result.holds)

    @property
    def any(self) -> bool:
        return bool(self.telemetry or self.holds)


@dataclass
class Attached:
    jobs: pd.DataFrame
    telemetry: pd.DataFrame
    job_stats: pd.DataFrame | None
    nodes: pd.DataFrame | None
    summary: dict


def attach(jobs: pd.DataFrame, got: Collected, policy: JoinPolicy | None = None) -> Attached:
    """Join the collected telemetry to ``jobs``; refine Kubernetes partitions from the nodes' pools."""
    nodes = pd.concat(got.nodes, ignore_index=True) if got.nodes else None
    if nodes is not None and len(jobs):
        from .read_k8s_nodes import pools_for_pods

        jobs = jobs.assign(partition=pools_for_pods(jobs, nodes))
    tel = concat_telemetry(got.telemetry) if got.telemetry else empty_telemetry()
    if not got.any or not len(jobs):
        return Attached(jobs, tel, None, nodes, {})
    holds = pd.concat(got.holds, ignore_index=True) if got.holds else None
    pods = pd.concat(got.pods, ignore_index=True) if got.pods else None
    res = TelemetryJoin(policy).join(jobs, tel, holds, pods)
    return Attached(res.jobs, tel, res.job_stats.drop(columns=["_due"]), nodes, res.summary)
