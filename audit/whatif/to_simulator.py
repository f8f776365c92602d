"""The one converter from the canonical job table (pandas) to simulator records (NumPy), and from a
cluster-shape TOML/dict to :class:`simulator.records.Cluster`.

Requests become per-node values: CPUs and GPUs are the job totals divided by the node count
(rounded up), memory the job total divided by the node count.  Times become seconds since the
earliest submission.  The scheduler's estimate is the time limit, else the run time.  A job whose
logged run exceeds its time limit (a logged TIMEOUT, or the kill grace time) gets the logged run as
its limit, so replaying the requests users made reproduces the log instead of killing it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.records import Cluster, Jobs, NodeGroup, Partition, Pool

from ..textio import read_toml


@dataclass(slots=True)
class Converted:
    """Simulator jobs plus what was left out: ``dropped`` counts rows by reason; ``origin`` is the
    UTC time (pandas Timestamp) that simulator time 0 stands for."""

    jobs: Jobs
    dropped: dict
    origin: object


def _seconds(col: pd.Series, origin) -> np.ndarray:
    return ((col - origin).dt.total_seconds()).to_numpy(dtype=np.float64, na_value=np.nan)


def _ints(col: pd.Series, default: int) -> np.ndarray:
    return col.fillna(default).to_numpy(dtype=np.int64)


def to_jobs(table: pd.DataFrame, *, procs: int | None = None) -> Converted:
    """Canonical job table → :class:`Jobs`.

    With ``procs`` (the Standard Workload Format replay): one pool of ``procs`` processors, a job
    needs ``req_cpus`` processors (the SWF reader fills it from field 8, else field 5), jobs wider
    than the pool are dropped and counted, and memory is ignored (no memory limit, so no memory
    kills: the pool models processors only).  Rows without a submit time, a run time or any CPU count
    (neither requested nor allocated: SWF fields 5 and 8 both -1) cannot be replayed and are dropped
    and counted.  Rows are ordered by submit time, then job number.
    """
    df = table
    dropped = {}
    no_submit = df["submit_time"].isna().to_numpy()
    no_run = df["elapsed_s"].isna().to_numpy()
    dropped["no_submit_time"] = int(no_submit.sum())
    dropped["no_run_time"] = int((no_run & ~no_submit).sum())
    no_cpus = (df["req_cpus"].isna() & df["alloc_cpus"].isna()).to_numpy() & ~(no_submit | no_run)
    dropped["unknown_cpus"] = int(no_cpus.sum())
    keep = ~(no_submit | no_run | no_cpus)
    nodes = _ints(df["req_nodes"].fillna(df["alloc_nodes"]), 1).clip(min=1)
    cpus_total = _ints(df["req_cpus"].fillna(df["alloc_cpus"]), 1)
    if procs is not None:
        nodes = np.ones(len(df), dtype=np.int64)
        wide = keep & (cpus_total > procs)
        dropped["wider_than_pool"] = int(wide.sum())
        keep &= ~wide
    df = df.loc[keep]
    nodes = nodes[keep]
    cpus_total = cpus_total[keep]
    origin = df["submit_time"].min() if len(df) else pd.Timestamp(0, tz="UTC")
    ids = pd.to_numeric(df["job_id_raw"].fillna(df["job_id"]), errors="coerce")
    ids = ids.fillna(pd.Series(np.arange(len(df)), index=df.index)).to_numpy(dtype=np.int64)
    gpus_total = _ints(df["req_gpus"].fillna(df["alloc_gpus"]), 0)
    mem_total = _ints(df["req_mem_bytes"].fillna(df["alloc_mem_bytes"]), 0)
    if procs is not None:
        mem_total = np.zeros(len(df), dtype=np.int64)
    limit = df["time_limit_s"].to_numpy(dtype=np.float64, na_value=np.inf)
    run = df["elapsed_s"].to_numpy(dtype=np.float64)
    # A run the log shows past its limit (a logged TIMEOUT, or the kill grace time) keeps its logged
    # length: the log's own kills are replayed as they happened, not killed again.
    limit = np.where(limit > 0, limit, np.inf)
    estimate = np.where(np.isfinite(limit), limit, run)  # what the scheduler sees: the request
    limit = np.maximum(limit, run)
    peak = df["mem_peak_bytes"].to_numpy(dtype=np.float64, na_value=0)
    cpu_used = df["cpu_used_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu_util = np.clip(cpu_used / (run * np.maximum(cpus_total, 1)), 0, 1)
    cpu_util = np.where(np.isfinite(cpu_util), cpu_util, 1.0)
    gpu_util = df["gpu_util_mean"].to_numpy(dtype=np.float64, na_value=1.0)
    cols = dict(
        id=ids,
        submit=_seconds(df["submit_time"], origin),
        run=run,
        nodes=nodes,
        cpus=-(-cpus_total // nodes),
        mem=mem_total // nodes,
        gpus=-(-gpus_total // nodes),
        limit=limit,
        estimate=estimate,
        mem_peak=(peak // nodes).astype(np.int64),
        logged_start=_seconds(df["start_time"], origin),
        cpu_util=cpu_util,
        gpu_util=gpu_util,
    )
    for name in ("user", "account", "partition", "qos", "gpu_type"):
        cols[name] = df[name].fillna("").to_numpy(dtype=object)
    order = np.lexsort((cols["id"], cols["submit"]))
    cols = {k: v[order] for k, v in cols.items()}
    return Converted(jobs=Jobs.from_arrays(**cols), dropped=dropped, origin=origin)


GIB = 2**30
_GROUP_KEYS = {"name", "count", "cpus", "mem_bytes", "mem_gib", "gpus", "gpu_type", "gpu_mem_bytes", "gpu_mem_gib",
               "switch", "nodes_per_switch", "racks", "partition", "partitions", "prefix", "digits", "gpu_model",
               "nodes"}
_PARTITION_KEYS = {"name", "groups", "node_groups", "kind", "max_time", "default"}


def to_cluster(spec, *, source: str = "cluster spec") -> Cluster | Pool:
    """Cluster shape from a dict (or a TOML file path) in the project's cluster format.

    ``[[node_groups]]``: name, count, cpus, memory (``mem_bytes`` or ``mem_gib``), gpus, gpu_type,
    GPU memory (``gpu_mem_bytes`` or ``gpu_mem_gib``), and the partitions it belongs to
    (``partition`` or ``partitions``); topology as ``switch`` (one switch group), ``racks`` (a count,
    or a list of rack tables: the nodes split in order into that many equal blocks, one leaf switch
    each) or ``nodes_per_switch``; ``prefix``, ``digits``, ``nodes``, ``gpu_model`` are accepted and
    not used.  ``[[partitions]]``: name, optionally ``groups``/``node_groups`` (node groups it spans,
    besides those naming it); ``kind``, ``max_time``, ``default`` are accepted and not used.
    ``procs = P`` instead gives a single pool.  A ``[cluster]`` table holding these keys is accepted
    too.  Errors name the file and the offending entry."""
    if isinstance(spec, (str, Path)):
        source = str(spec)
        spec = read_toml(spec, ValueError)
    if "cluster" in spec and isinstance(spec["cluster"], dict):
        spec = spec["cluster"]
    if "procs" in spec:
        return Pool(int(spec["procs"]))
    groups_spec = spec.get("node_groups") or spec.get("groups")
    if not groups_spec:
        raise ValueError(f"{source}: no [[node_groups]] and no procs")
    members: dict = {}
    groups = []
    for k, g in enumerate(groups_spec):
        where = f"{source}: node_groups[{k}] ({g.get('name')!r})"
        unknown = set(g) - _GROUP_KEYS
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        for need in ("name", "count", "cpus"):
            if need not in g:
                raise ValueError(f"{source}: node_groups[{k}]: missing {need!r}")
        try:
            count = int(g["count"])
            per_switch = int(g.get("nodes_per_switch", 0))
            if "racks" in g:
                racks = g["racks"]
                racks = len(racks) if isinstance(racks, list) else int(racks)
                per_switch = -(-count // max(1, racks))
            groups.append(NodeGroup(
                name=str(g["name"]), count=count, cpus=int(g["cpus"]),
                mem_bytes=int(g.get("mem_bytes", round(float(g.get("mem_gib", 0)) * GIB))),
                gpus=int(g.get("gpus", 0)), gpu_type=str(g.get("gpu_type", "")),
                gpu_mem_bytes=int(g.get("gpu_mem_bytes", round(float(g.get("gpu_mem_gib", 0)) * GIB))),
                switch=str(g.get("switch", "")), nodes_per_switch=per_switch,
            ))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from exc
        named = g.get("partitions") or ([g["partition"]] if "partition" in g else [])
        for part in named:
            members.setdefault(str(part), []).append(str(g["name"]))
    parts = []
    for k, p in enumerate(spec.get("partitions", [])):
        unknown = set(p) - _PARTITION_KEYS
        if "name" not in p or unknown:
            raise ValueError(f"{source}: partitions[{k}]: needs 'name'; unknown keys {sorted(unknown)}")
        listed = [*p.get("groups", []), *p.get("node_groups", [])]
        names = list(dict.fromkeys([*members.pop(str(p["name"]), []), *(str(x) for x in listed)]))
        parts.append(Partition(name=str(p["name"]), groups=tuple(names)))
    for name, names in members.items():
        parts.append(Partition(name=name, groups=tuple(names)))
    try:
        return Cluster(groups=tuple(groups), partitions=tuple(parts),
                       strict_partitions=bool(spec.get("strict_partitions", False)))
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from exc
