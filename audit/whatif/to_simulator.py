"""The one converter from the canonical job table (pandas) to simulator records (NumPy), and from the cluster
shape (:mod:`audit.cluster_shape`) to :class:`simulator.records.Cluster`.

Requests become per-node values: CPUs and GPUs are the job totals divided by the node count
(rounded up), memory the job total divided by the node count.  CPUs and GPUs are counted in whole units
while every replayed job asks whole ones (the simulator then runs exactly as on whole counts); as soon as
one job asks a fraction (a pod asking 3152m CPU, 3.152 CPUs; a pod with ``gpu_milli = 460``, 0.46 of a
GPU) that resource is counted in millis for every job (``cpu_unit``/``gpu_unit`` = 1000 on the
:class:`~simulator.records.Jobs`): 3152 millicores, 460 milli-GPUs, exact to the milli (rounded up).
Fractional CPUs then pack up to a node's CPUs, and a share of a GPU sits on one device, shares packing a
device up to a whole GPU (see docs/simulator.md).  In millis a job asking whole units keeps whole units
per node (its total divided by its nodes, rounded up to whole ones, as ever); a fractional total is
divided in millis (rounded up); a GPU request of one or more per node takes whole devices (1.5 → 2).  The
simulator's results come back in CPUs and GPUs (fractions where there are some).  Times become seconds since the
earliest submission.  The scheduler's estimate is the time limit, else the run time.  A job whose
logged run exceeds its time limit (a logged TIMEOUT, or the kill grace time) gets the logged run as
its limit, so replaying the requests users made reproduces the log instead of killing it again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.records import Cluster, Jobs, NodeGroup, Partition, Pool

from ..cluster_shape import ClusterShape, load_cluster_shape
from .scenarios import gpus_per_node, per_node


@dataclass(slots=True)
class Converted:
    """Simulator jobs plus what was left out: ``dropped`` counts rows by reason; ``origin`` is the
    UTC time (pandas Timestamp) that simulator time 0 stands for; ``rows`` the position in the table
    of each job, in the jobs' order."""

    jobs: Jobs
    dropped: dict
    origin: object
    rows: np.ndarray


@dataclass(slots=True)
class Totals:
    """The replayable jobs of a table as job totals (``cpus``, ``mem``, ``gpus``, ``mem_peak``), in
    replay order (submit time, then job number), with the rows they came from and what was dropped.
    ``cpus`` and ``gpus`` are counted in ``cpu_unit`` and ``gpu_unit`` (1: whole units; 1000: millis,
    when some job asks a fraction)."""

    columns: dict
    dropped: dict
    origin: object
    rows: np.ndarray
    cpu_unit: int = 1
    gpu_unit: int = 1


def _seconds(col: pd.Series, origin) -> np.ndarray:
    return ((col - origin).dt.total_seconds()).to_numpy(dtype=np.float64, na_value=np.nan)


def _ints(col: pd.Series, default: int) -> np.ndarray:
    return col.fillna(default).to_numpy(dtype=np.int64)


MILLI = 1000


def _exact(col: pd.Series, default: int) -> np.ndarray:
    """A CPU or GPU count that may be a share (3.152 CPUs, 0.46 GPU), as floats."""
    return col.astype("Float64").fillna(default).to_numpy(dtype=np.float64)


def unit_for(values: np.ndarray) -> int:
    """1 when every count is whole (to the millionth), else :data:`MILLI`."""
    v = np.round(values, 6)
    return MILLI if (v != np.floor(v)).any() else 1


def in_units(values: np.ndarray, unit: int) -> np.ndarray:
    """Counts in ``unit`` (1: whole units; 1000: millis), rounded up."""
    return np.ceil(np.round(values * unit, 6 if unit == 1 else 3)).astype(np.int64)


def replayable(table: pd.DataFrame) -> tuple[np.ndarray, dict]:
    """``(keep, dropped)``: the rows a replay keeps (a submit time, a run time and a core count known), and how
    many it drops for each reason."""
    df = table
    no_submit = df["submit_time"].isna().to_numpy()
    no_run = df["elapsed_s"].isna().to_numpy()
    no_cpus = (df["req_cpus"].isna() & df["alloc_cpus"].isna()).to_numpy() & ~(no_submit | no_run)
    dropped = {"no_submit_time": int(no_submit.sum()), "no_run_time": int((no_run & ~no_submit).sum()),
               "unknown_cpus": int(no_cpus.sum())}
    return ~(no_submit | no_run | no_cpus), dropped


def node_counts(table: pd.DataFrame) -> np.ndarray:
    """The nodes each row asked (else was given; one at least)."""
    return _ints(table["req_nodes"].fillna(table["alloc_nodes"]), 1).clip(min=1)


def job_totals(table: pd.DataFrame, *, procs: int | None = None) -> Totals:
    """The replayable rows of the canonical table as job totals (see :func:`to_jobs` for the rules)."""
    df = table
    keep, dropped = replayable(df)
    nodes = node_counts(df)
    cpus_exact = _exact(df["req_cpus"].fillna(df["alloc_cpus"]), 1)
    if procs is not None:
        nodes = np.ones(len(df), dtype=np.int64)
        wide = keep & (np.round(cpus_exact, 6) > procs)
        dropped["wider_than_pool"] = int(wide.sum())
        keep &= ~wide
    rows = np.flatnonzero(keep)
    df = df.iloc[rows]
    nodes = nodes[keep]
    cpus_exact = cpus_exact[keep]
    cpu_unit = unit_for(cpus_exact)
    cpus_total = in_units(cpus_exact, cpu_unit)
    origin = df["submit_time"].min() if len(df) else pd.Timestamp(0, tz="UTC")
    ids = pd.to_numeric(df["job_id_raw"].fillna(df["job_id"]), errors="coerce")
    ids = ids.fillna(pd.Series(np.arange(len(df)), index=df.index)).to_numpy(dtype=np.int64)
    gpus_exact = _exact(df["req_gpus"].fillna(df["alloc_gpus"]), 0)
    gpu_unit = unit_for(gpus_exact) if procs is None else 1  # a pool has no GPUs
    gpus_total = in_units(gpus_exact, gpu_unit)
    mem_total = _ints(df["req_mem_bytes"].fillna(df["alloc_mem_bytes"]), 0)
    if procs is not None:
        mem_total = np.zeros(len(df), dtype=np.int64)
    asked = df["time_limit_s"].to_numpy(dtype=np.float64, na_value=np.inf)
    run = df["elapsed_s"].to_numpy(dtype=np.float64)
    # A run the log shows past its limit (a logged TIMEOUT, or the kill grace time) keeps its logged
    # length: the log's own kills are replayed as they happened, not killed again.
    asked = np.where(asked > 0, asked, np.inf)
    estimate = np.where(np.isfinite(asked), asked, run)  # what the scheduler sees: the request
    limit = np.maximum(asked, run)
    peak = df["mem_peak_bytes"].to_numpy(dtype=np.float64, na_value=np.nan)
    cpu_used = df["cpu_used_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu_util = np.clip(cpu_used / (run * np.where(cpus_exact > 0, cpus_exact, 1)), 0, 1)
    cpu_util = np.where(np.isfinite(cpu_util), cpu_util, 1.0)
    gpu_util = df["gpu_util_mean"].to_numpy(dtype=np.float64, na_value=1.0)
    cols = dict(
        id=ids, submit=_seconds(df["submit_time"], origin), run=run, nodes=nodes, cpus=cpus_total, mem=mem_total,
        gpus=gpus_total, limit=limit, asked_limit=asked, estimate=estimate, mem_peak=peak,
        logged_start=_seconds(df["start_time"], origin), cpu_util=cpu_util, gpu_util=gpu_util,
    )
    for name in ("user", "account", "partition", "qos", "gpu_type"):
        cols[name] = df[name].fillna("").to_numpy(dtype=object)
    order = np.lexsort((cols["id"], cols["submit"]))
    return Totals(columns={k: v[order] for k, v in cols.items()}, dropped=dropped, origin=origin, rows=rows[order],
                  cpu_unit=cpu_unit, gpu_unit=gpu_unit)


def to_jobs(table: pd.DataFrame, *, procs: int | None = None) -> Converted:
    """Canonical job table → :class:`Jobs`.

    With ``procs`` (the Standard Workload Format replay): one pool of ``procs`` processors, a job
    needs ``req_cpus`` processors (the SWF reader fills it from field 8, else field 5), jobs wider
    than the pool are dropped and counted, and memory is ignored (no memory limit, so no memory
    kills: the pool models processors only).  Rows without a submit time, a run time or any CPU count
    (neither requested nor allocated: SWF fields 5 and 8 both -1) cannot be replayed and are dropped
    and counted.  Rows are ordered by submit time, then job number.  CPUs and GPUs are in the units the
    module text describes (the jobs' ``cpu_unit``/``gpu_unit``).
    """
    t = job_totals(table, procs=procs)
    c = dict(t.columns)
    nodes = c["nodes"]
    peak = np.nan_to_num(c.pop("mem_peak"), nan=0.0)
    c.pop("asked_limit")
    c.update(cpus=per_node(c["cpus"], nodes, t.cpu_unit), mem=c["mem"] // nodes,
             gpus=gpus_per_node(c["gpus"], nodes, t.gpu_unit), mem_peak=(peak // nodes).astype(np.int64))
    jobs = Jobs.from_arrays(cpu_unit=t.cpu_unit, gpu_unit=t.gpu_unit, **c)
    return Converted(jobs=jobs, dropped=t.dropped, origin=t.origin, rows=t.rows)


def to_cluster(spec, *, source: str = "cluster shape") -> Cluster | Pool:
    """Simulator records of a cluster shape: a :class:`~audit.cluster_shape.ClusterShape`, or a TOML path or dict
    read by :func:`~audit.cluster_shape.load_cluster_shape` (whose errors name the file and the entry).

    Each node group keeps its CPUs, memory, GPUs and switch; ``racks`` puts every block of nodes under a leaf
    switch of its own (``nodes_per_switch`` = the group's nodes / racks, rounded up).  ``procs = P`` gives one
    pool of P processors.
    """
    shape = spec if isinstance(spec, ClusterShape) else load_cluster_shape(spec, source=source)
    if shape.procs is not None:
        return Pool(shape.procs)
    groups = tuple(NodeGroup(
        name=g.name, count=g.count, cpus=g.cpus, mem_bytes=g.mem_bytes, gpus=g.gpus, gpu_type=g.gpu_type,
        gpu_mem_bytes=g.gpu_mem_bytes, switch=g.switch,
        nodes_per_switch=-(-g.count // g.racks) if g.racks is not None else g.nodes_per_switch,
    ) for g in shape.groups)
    return Cluster(groups=groups, partitions=tuple(Partition(name=p.name, groups=p.groups) for p in shape.partitions),
                   strict_partitions=shape.strict_partitions)
