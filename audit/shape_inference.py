"""A cluster shape inferred from the accounting itself, for when no shape file is given.

Every accounting format names the nodes a job ran on: Slurm's ``NodeList``, PBS's ``exec_host`` and
``exec_vnode``, LSF's ``execHosts``, Grid Engine's host.  What a job held on a node is a lower bound of what the
node has, so over a month each node's capacity is read as the most any one job held there:

- cores: the most cores or slots one job held on the node, or the highest CPU index a job was placed on plus one
  (PBS ``exec_host`` ``n1/31`` says ``n1`` has at least 32), whichever is larger;
- memory and GPUs: the most one job held on the node (where the format says; a Slurm job's totals are shared out
  evenly over its nodes);
- GPU type: the type the GPU jobs on it asked for, the most frequent.

Nodes are grouped by the partitions their jobs ran in and by their name with the digits taken out (``c001`` …
``c096`` are ``c###``: one kind of hardware, as sites name them), and each group takes the largest cores, memory
and GPUs any of its nodes showed: a node seen only running small jobs is assumed to be the same hardware as its
neighbours.  The shape is marked ``inferred`` (a text saying from what); the report's data-quality appendix says
so, and capacities read this way are lower bounds: a node never filled is larger than it looks.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .node_table import PLACEMENT_COLUMNS, conform_placements
from .units import compress_hostlist, expand_hostlist

INFERRED = "node lists of the accounting: each node's cores, memory and GPUs are the most a job held there"
_DIGITS = re.compile(r"\d+")


def _num(jobs: pd.DataFrame, col: str) -> np.ndarray:
    if col not in jobs:
        return np.full(len(jobs), np.nan)
    return pd.to_numeric(jobs[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def placements_from_jobs(jobs: pd.DataFrame) -> pd.DataFrame:
    """One placement per job and node named in ``node_list`` (Slurm's hostlist form), with the job's allocation
    shared out evenly over its nodes (cores rounded up); no CPU index.  Jobs without a node list give none."""
    if "node_list" not in jobs or not len(jobs):
        return conform_placements(None)
    has = jobs["node_list"].notna().to_numpy() & (jobs["node_list"].astype("string").fillna("").str.len() > 0).to_numpy()
    rows = np.flatnonzero(has)
    if not len(rows):
        return conform_placements(None)
    lists = jobs["node_list"].astype("string").iloc[rows]
    # a single host (most jobs) is its own name; only lists with brackets or commas are expanded, once each
    plain = ~(lists.str.contains("[", regex=False) | lists.str.contains(",", regex=False)).to_numpy(dtype=bool)
    names = list(lists.to_numpy()[plain])
    owner = list(rows[plain])
    expanded: dict = {}
    for text in pd.unique(lists.to_numpy()[~plain]):
        try:
            expanded[text] = expand_hostlist(str(text))
        except (ValueError, IndexError):  # a list the accounting mangled: no evidence from it
            expanded[text] = []
    for r, text in zip(rows[~plain], lists.to_numpy()[~plain], strict=True):
        hosts = expanded[text]
        names += hosts
        owner += [r] * len(hosts)
    owner = np.asarray(owner, dtype=np.int64)
    per = np.bincount(owner, minlength=len(jobs)).astype(np.float64)
    count = np.where(per > 0, per, np.nan)
    nodes = np.fmax(_num(jobs, "alloc_nodes"), count)  # a job's own count when its list is shorter
    cpus = np.ceil(_num(jobs, "alloc_cpus") / nodes - 1e-9)
    mem = np.floor(_num(jobs, "alloc_mem_bytes") / nodes)
    gpus = np.ceil(_num(jobs, "alloc_gpus") / nodes - 1e-9)
    part = jobs["partition"].astype("string").to_numpy() if "partition" in jobs else np.full(len(jobs), None)
    return conform_placements(pd.DataFrame({
        "cluster": jobs["cluster"].astype("string").to_numpy()[owner],
        "node": pd.array(names, dtype="string"),
        "job_id": jobs["job_id"].astype("string").to_numpy()[owner],
        "partition": part[owner],
        "cpus": cpus[owner], "mem_bytes": pd.array(np.where(np.isfinite(mem[owner]), mem[owner], np.nan),
                                                   dtype="Float64").round().astype("Int64"),
        "gpus": gpus[owner],
    }))


def node_capacity(placements: pd.DataFrame, jobs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per node: ``cluster, node, partitions`` (the partitions its jobs ran in, sorted), ``cpus``, ``mem_bytes``,
    ``gpus`` (the most one job held there, cores also from the highest CPU index), ``gpu_type``, ``jobs`` (the
    placements seen)."""
    p = conform_placements(placements)
    p = p[p["node"].notna() & (p["node"].str.len() > 0)]
    if not len(p):
        return pd.DataFrame(columns=["cluster", "node", "partitions", "cpus", "mem_bytes", "gpus", "gpu_type", "jobs"])
    cpus = np.fmax(p["cpus"].astype("float64").to_numpy(na_value=np.nan),
                   p["cpu_index_max"].astype("float64").to_numpy(na_value=np.nan) + 1)
    frame = pd.DataFrame({"cluster": p["cluster"].fillna(""), "node": p["node"], "cpus": cpus,
                          "mem_bytes": p["mem_bytes"].astype("float64").to_numpy(na_value=np.nan),
                          "gpus": p["gpus"].astype("float64").to_numpy(na_value=np.nan),
                          "partition": p["partition"].fillna(""), "job_id": p["job_id"]})
    if jobs is not None and "gpu_type" in jobs and len(jobs):
        types = jobs[["cluster", "job_id", "gpu_type"]].dropna().drop_duplicates(["cluster", "job_id"])
        frame = frame.merge(types.astype({"cluster": "string", "job_id": "string"}), how="left",
                            on=["cluster", "job_id"])
    else:
        frame["gpu_type"] = pd.NA
    keys = ["cluster", "node"]
    g = frame.groupby(keys, sort=True)
    out = g.agg(cpus=("cpus", "max"), mem_bytes=("mem_bytes", "max"), gpus=("gpus", "max"), jobs=("job_id", "size"))
    out["partitions"] = g["partition"].agg(lambda s: ",".join(sorted({x for x in s if x})))
    gt = frame[frame["gpu_type"].notna() & (frame["gpus"].fillna(0) > 0)]
    mode = gt.groupby(keys)["gpu_type"].agg(lambda s: s.value_counts().sort_index().idxmax()) if len(gt) else None
    out["gpu_type"] = mode if mode is not None else pd.NA
    return out.reset_index()[["cluster", "node", "partitions", "cpus", "mem_bytes", "gpus", "gpu_type", "jobs"]]


def infer_shape(jobs: pd.DataFrame, placements: pd.DataFrame | None = None, *, name: str | None = None) -> dict | None:
    """The cluster-shape dict (the TOML layout of :mod:`audit.cluster_shape`, with ``inferred``) from the jobs'
    node lists and the readers' placements (a job with placements of its own is not also read from its node
    list); None when no job names a node."""
    given = conform_placements(placements)
    if len(jobs):
        placed = set(zip(given["cluster"].fillna(""), given["job_id"].fillna(""), strict=True))
        if placed:
            key = list(zip(jobs["cluster"].astype("string").fillna(""), jobs["job_id"].astype("string").fillna(""),
                           strict=True))
            rest = jobs[~np.fromiter((k in placed for k in key), dtype=bool, count=len(key))]
        else:
            rest = jobs
        given = pd.concat([given, placements_from_jobs(rest)], ignore_index=True) if len(rest) else given
    cap = node_capacity(given, jobs)
    cap = cap[np.isfinite(cap["cpus"].to_numpy(dtype=np.float64)) & (cap["cpus"].to_numpy(dtype=np.float64) > 0)]
    if not len(cap):
        return None
    cap = cap.assign(pattern=cap["node"].map(lambda n: _DIGITS.sub("#", str(n))))
    groups, parts, names = [], [], set()
    for (partitions, pattern), g in cap.groupby(["partitions", "pattern"], sort=True):
        listed = [x for x in str(partitions).split(",") if x]
        parts += [x for x in listed if x not in parts]
        gpus = int(np.nan_to_num(g["gpus"].max()))
        names.add(name_ := _group_name(pattern, listed, names))
        grp = {"name": name_, "count": int(len(g)),
               "cpus": int(g["cpus"].max()), "mem_bytes": int(np.nan_to_num(g["mem_bytes"].max())), "gpus": gpus}
        if listed:
            grp["partitions"] = listed
        if gpus:
            types = g["gpu_type"].dropna()
            grp["gpu_type"] = str(types.value_counts().sort_index().idxmax()) if len(types) else "gpu"
        grp["nodes"] = compress_hostlist(sorted(g["node"].astype(str)))
        groups.append(grp)
    cluster = name or (str(cap["cluster"].mode().iloc[0]) if cap["cluster"].astype(bool).any() else "inferred")
    return {"name": cluster, "inferred": INFERRED, "partitions": [{"name": p} for p in sorted(parts)],
            "node_groups": groups}


def _group_name(pattern: str, partitions: list, taken: set) -> str:
    """The node names' letters (``cn`` for ``cn###``), then with the first partition, then numbered, until unique."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "", pattern.replace("#", "")).strip("-_") or "node"
    for name in (stem, f"{stem}-{partitions[0] if partitions else 'any'}"):
        if name not in taken:
            return name
    k = 2
    while f"{stem}-{k}" in taken:
        k += 1
    return f"{stem}-{k}"


__all__ = ["INFERRED", "PLACEMENT_COLUMNS", "infer_shape", "node_capacity", "placements_from_jobs"]
