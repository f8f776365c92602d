"""Hand telemetry and node files to their readers, and join what they read to the job table.

Used by :mod:`audit.ingest`: files detected as telemetry (Prometheus JSON or text, GPU-index prolog records,
cgroup trees, Alibaba GenAI series) and as cluster shape (``kubectl get nodes``, Alibaba node lists) go to a
:class:`TelemetryInputs`.  Node lists and GPU holds are read at once; sample files are read after the jobs, one
at a time, through a :class:`~audit.telemetry.join.JoinSession`, so a month of samples never sits in memory
when a sink file is given (each file's samples are appended to it and dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from ..job_table import conform
from ..ledger import Quarantine
from ..readers import read_nodes_file, read_prometheus, read_telemetry_file
from ..readers.k8s import EXTRA_LABELS, pods_from_kube_state, pools_for_pods, state_frame
from ..telemetry_table import ARROW_SCHEMA, arrow_chunk, concat_telemetry, empty_telemetry
from ..textio import read_head
from .join import JoinPolicy, TelemetryJoin

SAMPLE_FORMATS = ("prometheus-json", "prometheus-text", "cgroup-ttar", "alibaba-genai")


def _mentions_kube_state(path: Path) -> bool:
    return "kube_pod_info" in read_head(path)


@dataclass
class Attached:
    jobs: pd.DataFrame
    telemetry: pd.DataFrame | None
    job_stats: pd.DataFrame | None
    nodes: pd.DataFrame | None
    summary: dict
    ledgers: list = field(default_factory=list)
    quarantine: Quarantine = field(default_factory=Quarantine)


@dataclass
class TelemetryInputs:
    """Everything beside the accounting files: nodes, holds and pod maps now, sample files after the jobs.

    ``sink``: a Parquet path the samples are appended to (then none are kept in memory); without it the
    samples are returned as one frame.
    """

    cluster: str | None = None
    sink: Path | None = None
    policy: JoinPolicy | None = None
    pending: list = field(default_factory=list)
    holds: list = field(default_factory=list)
    pods: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    ledgers: list = field(default_factory=list)
    quarantine: Quarantine = field(default_factory=Quarantine)

    def take(self, path: Path, kind: str) -> None:
        """Read a node list or GPU-index file now; queue a sample file for :meth:`attach`."""
        if kind in SAMPLE_FORMATS:
            self.pending.append((path, kind))
            return
        if kind == "gpu-index":
            res = read_telemetry_file(path, kind, cluster=self.cluster)
            if res.holds is not None and len(res.holds):
                self.holds.append(res.holds)
        else:
            res = read_nodes_file(path, kind, cluster=self.cluster)
            self.nodes.append(res.nodes)
        self.ledgers.append(res.ledger)
        self.quarantine.extend(res.quarantine.rows)

    def attach(self, jobs: pd.DataFrame) -> Attached:
        """Read the queued sample files one by one into the join; refine Kubernetes partitions by node pool."""
        nodes = pd.concat(self.nodes, ignore_index=True) if self.nodes else None
        if nodes is not None and len(jobs):
            jobs = jobs.assign(partition=pools_for_pods(jobs, nodes))
        early, jobs = self._kube_state(jobs)
        holds = pd.concat(self.holds, ignore_index=True) if self.holds else None
        pods = pd.concat(self.pods, ignore_index=True) if self.pods else None
        # the join's indexes of the jobs are built only when there is telemetry to join (a second per million
        # jobs otherwise spent for nothing)
        wanted = len(jobs) and (self.pending or self.holds)
        session = TelemetryJoin(self.policy).session(jobs, holds, pods) if wanted else None
        kept, writer = [], None
        try:
            for path, kind in self.pending:
                res = early.pop(path, None) or read_telemetry_file(path, kind, cluster=self.cluster)
                self.ledgers.append(res.ledger)
                self.quarantine.extend(res.quarantine.rows)
                if not len(res.telemetry):
                    continue
                if session is not None:
                    session.add(res.telemetry)
                if self.sink is not None:
                    if writer is None:
                        writer = pq.ParquetWriter(self.sink, ARROW_SCHEMA, compression="zstd")
                    writer.write_table(arrow_chunk(res.telemetry))
                else:
                    kept.append(res.telemetry)
        finally:
            if writer is not None:
                writer.close()
        tel = concat_telemetry(kept) if kept else (empty_telemetry() if not self.pending else None)
        if session is None or not (self.pending or self.holds):
            return Attached(jobs, tel if kept else None, None, nodes, {}, self.ledgers, self.quarantine)
        res = session.finish()
        return Attached(res.jobs, tel if kept else None, res.job_stats.drop(columns=["_due"]), nodes, res.summary,
                        self.ledgers, self.quarantine)

    def _kube_state(self, jobs: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
        """Pods known only from kube-state-metrics become job rows (a pods dump's rows win)."""
        early, frames = {}, []
        for path, kind in self.pending:
            if kind in ("prometheus-json", "prometheus-text") and _mentions_kube_state(path):
                res = read_prometheus(path, cluster=self.cluster, keep_labels=EXTRA_LABELS)
                early[path] = res
                frames.append(state_frame(res))
        frames = [f for f in frames if len(f)]
        if not frames:
            return early, jobs
        state = pd.concat(frames, ignore_index=True)
        derived, pod_map = pods_from_kube_state(state, cluster=self.cluster)
        fresh = ~derived["job_id"].isin(jobs["job_id"]).to_numpy()
        derived, pod_map = derived[fresh], pod_map[fresh]
        for res in early.values():
            res.ledger.jobs_emitted = int((derived["source_file"] == res.ledger.file).sum())
        self.pods.append(pod_map)
        jobs = conform(pd.concat([jobs, derived], ignore_index=True)) if len(jobs) else derived.reset_index(drop=True)
        return early, jobs
