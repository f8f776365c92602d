"""Plain input records: jobs (one record each, or one struct of arrays) and the cluster shape.

Times are seconds on one clock (any origin); memory is bytes; requests are *per node* for a job of
``nodes`` nodes (a single pool has one "node" holding all processors).  CPUs and GPUs are whole
units unless the jobs say otherwise (:class:`Jobs` ``cpu_unit``/``gpu_unit``: 1000 counts them in
millicores and milli-GPUs, so fractional requests pack exactly); the cluster is always described in
whole CPUs and GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

INF = math.inf


@dataclass(slots=True, frozen=True)
class Job:
    """One job as submitted, with what it really used.

    ``limit`` is the time limit (``inf`` when unlimited); ``estimate`` is what the scheduler
    believes the run time to be (default: the limit when finite, else the run time).  ``mem`` is
    the request the scenario gives the job; ``orig_mem``/``orig_limit`` are what the user really
    asked for and what a killed job is re-submitted with (default: the same request).
    ``mem_peak`` is the actual peak per node; ``mem_trace`` optionally gives telemetry as
    ``(seconds since start, bytes per node)`` samples, used to find when use crosses the limit.
    ``min_runtime`` is the protected minimum run time under budgets (``nan``: not declared, never
    preempted; 0: runs on spare capacity, preemptible at any time); ``resumable`` jobs keep their
    progress when preempted.  ``orig_cpus``/``orig_gpus`` are the per-node CPUs and GPUs the user
    asked for (-1: the same as ``cpus``/``gpus``); a killed job comes back with them.  ``stretch``
    multiplies the run time under this request (a job given fewer cores or GPUs than it keeps busy
    runs longer; 1 under the original request).  ``estimate_after`` is what the scheduler's estimate
    becomes once a running job outlives its estimate (``nan``: it stays; e.g. the user's limit when
    the estimate is a prediction).
    """

    id: int
    submit: float
    run: float
    nodes: int = 1
    cpus: int = 1
    mem: int = 0
    gpus: int = 0
    limit: float = INF
    estimate: float = math.nan
    mem_peak: int = 0
    user: str = ""
    account: str = ""
    partition: str = ""
    qos: str = ""
    gpu_type: str = ""
    min_runtime: float = math.nan
    resumable: bool = False
    orig_mem: int = -1
    orig_limit: float = math.nan
    logged_start: float = math.nan
    cpu_util: float = 1.0
    gpu_util: float = 1.0
    orig_cpus: int = -1
    orig_gpus: int = -1
    stretch: float = 1.0
    estimate_after: float = math.nan
    mem_trace: tuple | None = None


#: Job fields held as columns in :class:`Jobs` (all but ``mem_trace``)
_NUMERIC = {
    "id": np.int64, "submit": np.float64, "run": np.float64, "nodes": np.int64, "cpus": np.int64,
    "mem": np.int64, "gpus": np.int64, "limit": np.float64, "estimate": np.float64, "mem_peak": np.int64,
    "min_runtime": np.float64, "resumable": np.bool_, "orig_mem": np.int64, "orig_limit": np.float64,
    "logged_start": np.float64, "cpu_util": np.float64, "gpu_util": np.float64, "orig_cpus": np.int64,
    "orig_gpus": np.int64, "stretch": np.float64, "estimate_after": np.float64,
}
_TEXT = ("user", "account", "partition", "qos", "gpu_type")


@dataclass(slots=True)
class Jobs:
    """Jobs as a struct of NumPy arrays (one entry per job), the compact form the simulator runs on.

    Build it with :meth:`from_arrays` (missing columns take the :class:`Job` defaults) or
    :meth:`from_records`.  ``mem_traces`` maps a job's position to its telemetry samples.

    ``cpu_unit`` and ``gpu_unit`` say what the ``cpus``/``orig_cpus`` and ``gpus``/``orig_gpus``
    columns count: 1 (the default) whole CPUs and GPUs, 1000 millicores and milli-GPUs (a pod asking
    3152m CPU has 3152, a pod with a 0.46 share of a GPU 460).  With ``gpu_unit`` > 1 every GPU of a
    node is a device of ``gpu_unit``: a request below one GPU is a share that sits on one device
    (shares pack a device up to a whole GPU), one of one or more GPUs takes whole free devices
    (rounded up to whole GPUs).  Results come back in whole units (fractions where there are some).
    """

    columns: dict
    mem_traces: dict = field(default_factory=dict)
    cpu_unit: int = 1
    gpu_unit: int = 1

    def __len__(self) -> int:
        return len(self.columns["id"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    @classmethod
    def from_arrays(cls, mem_traces: dict | None = None, *, cpu_unit: int = 1, gpu_unit: int = 1, **arrays) -> Jobs:
        for name, unit in (("cpu_unit", cpu_unit), ("gpu_unit", gpu_unit)):
            if int(unit) != unit or unit < 1:
                raise ValueError(f"{name} must be a whole number ≥ 1, got {unit!r}")
        unknown = set(arrays) - set(_NUMERIC) - set(_TEXT)
        if unknown:
            raise ValueError(f"unknown job columns: {sorted(unknown)}")
        for need in ("id", "submit", "run"):
            if need not in arrays:
                raise ValueError(f"job column {need!r} is required")
        n = len(arrays["id"])
        defaults = {f.name: f.default for f in fields(Job)}
        cols = {}
        for name, dtype in _NUMERIC.items():
            value = arrays.get(name)
            col = np.full(n, defaults[name], dtype=dtype) if value is None else np.asarray(value, dtype=dtype)
            if col.shape != (n,):
                raise ValueError(f"job column {name!r} has {col.shape[0]} entries, expected {n}")
            cols[name] = col
        for name in _TEXT:
            value = arrays.get(name)
            cols[name] = np.full(n, "", dtype=object) if value is None else np.asarray(value, dtype=object)
        _check(cols)
        return cls(columns=cols, mem_traces=dict(mem_traces or {}), cpu_unit=int(cpu_unit), gpu_unit=int(gpu_unit))

    @classmethod
    def from_records(cls, jobs, *, cpu_unit: int = 1, gpu_unit: int = 1) -> Jobs:
        """Jobs from :class:`Job` records (their CPUs and GPUs counted in ``cpu_unit``/``gpu_unit``)."""
        jobs = list(jobs)
        arrays = {name: [getattr(j, name) for j in jobs] for name in (*_NUMERIC, *_TEXT)}
        traces = {k: j.mem_trace for k, j in enumerate(jobs) if j.mem_trace is not None}
        return cls.from_arrays(mem_traces=traces, cpu_unit=cpu_unit, gpu_unit=gpu_unit, **arrays)


def _check(cols: dict) -> None:
    """Reject impossible values with the job id and field named."""
    checks = (
        ("submit", ~np.isfinite(cols["submit"]), "not a finite time"),
        ("run", ~(cols["run"] >= 0), "negative or unknown run time"),
        ("nodes", cols["nodes"] < 1, "fewer than one node"),
        ("cpus", cols["cpus"] < 0, "negative CPU request"),
        ("mem", cols["mem"] < 0, "negative memory request"),
        ("gpus", cols["gpus"] < 0, "negative GPU request"),
        ("limit", ~(cols["limit"] > 0), "time limit not positive"),
        ("stretch", ~(cols["stretch"] >= 1), "run-time stretch below 1 or unknown"),
    )
    for name, bad, why in checks:
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"job {int(cols['id'][k])} (position {k}): field {name!r}: {why} ({cols[name][k]!r})")


@dataclass(slots=True, frozen=True)
class NodeGroup:
    """``count`` identical nodes.  Nodes sit under switch ``switch`` (default: the group's name), or,
    when ``nodes_per_switch`` > 0, under consecutive switches of that many nodes each."""

    name: str
    count: int
    cpus: int
    mem_bytes: int = 0
    gpus: int = 0
    gpu_type: str = ""
    gpu_mem_bytes: int = 0
    switch: str = ""
    nodes_per_switch: int = 0

    def __post_init__(self):
        if self.count < 1 or self.cpus < 0 or self.mem_bytes < 0 or self.gpus < 0:
            raise ValueError(f"node group {self.name!r}: count must be ≥ 1 and resources ≥ 0")


@dataclass(slots=True, frozen=True)
class Partition:
    """A named set of node groups a job may run on."""

    name: str
    groups: tuple


@dataclass(slots=True, frozen=True)
class Cluster:
    """Node groups and the partitions over them.  A job whose partition is empty or unknown may use
    every node, unless ``strict_partitions`` is set (then it is rejected)."""

    groups: tuple
    partitions: tuple = ()
    strict_partitions: bool = False

    def __post_init__(self):
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate node group names: {names}")
        for p in self.partitions:
            missing = set(p.groups) - set(names)
            if missing:
                raise ValueError(f"partition {p.name!r} names unknown node groups {sorted(missing)}")

    @property
    def nodes(self) -> int:
        return sum(g.count for g in self.groups)

    def capacity(self) -> dict:
        """Total CPUs, memory bytes and GPUs."""
        return {
            "cpus": sum(g.count * g.cpus for g in self.groups),
            "mem_bytes": sum(g.count * g.mem_bytes for g in self.groups),
            "gpus": sum(g.count * g.gpus for g in self.groups),
        }

    def with_counts(self, counts: dict) -> Cluster:
        """The same cluster with ``counts`` (group name → nodes, at least 1) for the groups named."""
        groups = []
        for g in self.groups:
            n = int(counts.get(g.name, g.count))
            if n < 1:
                raise ValueError(f"node group {g.name!r}: count must be ≥ 1, got {n}")
            groups.append(replace(g, count=n))
        return replace(self, groups=tuple(groups))

    def pools(self) -> tuple:
        """Node groups that share jobs, as tuples of group names: groups joined by any partition
        belong to one pool (a job of one partition never runs on another pool's nodes).  Groups in no
        partition form a pool together.  In order of first group."""
        parent = {g.name: g.name for g in self.groups}

        def root(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        named = set()
        for p in self.partitions:
            named.update(p.groups)
            for a, b in zip(p.groups, p.groups[1:], strict=False):
                parent[root(b)] = root(a)
        loose = [g.name for g in self.groups if g.name not in named]
        for a, b in zip(loose, loose[1:], strict=False):
            parent[root(b)] = root(a)
        out: dict = {}
        for g in self.groups:
            out.setdefault(root(g.name), []).append(g.name)
        return tuple(tuple(v) for v in out.values())


@dataclass(slots=True, frozen=True)
class Pool:
    """A single pool of ``procs`` interchangeable processors (the Standard Workload Format model):
    a job needs ``nodes × cpus`` processors; memory and GPUs are ignored."""

    procs: int

    @property
    def nodes(self) -> int:
        return 1

    def capacity(self) -> dict:
        return {"cpus": self.procs, "mem_bytes": 0, "gpus": 0}
