"""A cluster shape inferred from the accounting itself, for when no shape file is given.

Every accounting format names the nodes a job ran on: Slurm's ``NodeList``, PBS's ``exec_host`` and
``exec_vnode``, LSF's ``execHosts``, Grid Engine's host.  What a job held on a node is a lower bound of what the
node has, so over a month each node's capacity is read as the most any one job held there:

- cores: the most cores or slots one job held on the node, or the highest CPU index a job was placed on plus one
  (PBS ``exec_host`` ``n1/31`` says ``n1`` has at least 32), whichever is larger;
- memory and GPUs: the most one job held on the node (where the format says; else a job's totals, held or else
  asked, are shared out evenly over its nodes);
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


def _evidence(jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per job and node named in ``node_list``, with the job's row and its allocation shared out evenly
    over its nodes: ``row, node, cpus, mem_bytes, gpus`` (``node`` categorical: few distinct names)."""
    empty = pd.DataFrame({"row": np.zeros(0, np.int64), "node": pd.Categorical([]), "cpus": np.zeros(0),
                          "mem_bytes": np.zeros(0), "gpus": np.zeros(0)})
    if "node_list" not in jobs or not len(jobs):
        return empty
    text = jobs["node_list"].astype("string")
    has = (text.fillna("").str.len() > 0).to_numpy(dtype=bool)
    rows = np.flatnonzero(has)
    if not len(rows):
        return empty
    codes, uniques = pd.factorize(text.to_numpy()[rows])
    expanded = []
    for t in uniques:  # each distinct list once: a single host is its own name
        if "[" not in t and "," not in t:
            expanded.append([t])
            continue
        try:
            expanded.append(expand_hostlist(str(t)))
        except (ValueError, IndexError):  # a list the accounting mangled: no evidence from it
            expanded.append([])
    names, host_of = np.unique(np.array([h for hs in expanded for h in hs] or [""], dtype=object),
                               return_inverse=True)
    sizes = np.array([len(h) for h in expanded], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # each job's hosts: its list's run of the flattened names, gathered without a loop over jobs
    n_each = sizes[codes]
    owner = np.repeat(rows, n_each)
    offset = np.arange(n_each.sum()) - np.repeat(np.cumsum(n_each) - n_each, n_each)
    node = host_of[np.repeat(starts[codes], n_each) + offset]
    count = np.zeros(len(jobs))
    count[rows] = n_each
    nodes = np.fmax(_num(jobs, "alloc_nodes"), np.where(count > 0, count, np.nan))  # a job's own count if larger
    cpus = np.ceil(_num(jobs, "alloc_cpus") / nodes - 1e-9)
    mem = np.floor(np.fmax(_num(jobs, "alloc_mem_bytes"), _num(jobs, "req_mem_bytes")) / nodes)
    gpus = np.ceil(_num(jobs, "alloc_gpus") / nodes - 1e-9)
    return pd.DataFrame({"row": owner, "node": pd.Categorical.from_codes(node, categories=list(names)),
                         "cpus": cpus[owner], "mem_bytes": mem[owner], "gpus": gpus[owner]})


def _collapse(jobs: pd.DataFrame) -> pd.DataFrame:
    """The jobs that name the same nodes in the same partition, as one row holding the most any of them held a node
    (a month names a few thousand distinct node lists among a million jobs: each is expanded once)."""
    if "node_list" not in jobs or len(jobs) < 2:
        return jobs
    nodes = _num(jobs, "alloc_nodes")
    nodes = np.where(np.isfinite(nodes) & (nodes > 0), nodes, 1.0)
    frame = pd.DataFrame({
        "cluster": jobs["cluster"].astype("string").fillna(""), "partition":
            jobs["partition"].astype("string").fillna("") if "partition" in jobs else "",
        "node_list": jobs["node_list"].astype("string").fillna(""), "alloc_nodes": nodes,
        "cpus": np.ceil(_num(jobs, "alloc_cpus") / nodes - 1e-9),
        "mem": np.floor(np.fmax(_num(jobs, "alloc_mem_bytes"), _num(jobs, "req_mem_bytes")) / nodes),
        "gpus": np.ceil(_num(jobs, "alloc_gpus") / nodes - 1e-9),
        "gpu_type": jobs["gpu_type"].astype("string") if "gpu_type" in jobs else pd.NA})
    frame = frame[frame["node_list"].str.len() > 0]
    keys = ["cluster", "partition", "node_list", "alloc_nodes"]
    g = frame.groupby(keys, sort=True, observed=True, dropna=False)
    out = g.agg(cpus=("cpus", "max"), mem=("mem", "max"), gpus=("gpus", "max")).reset_index()
    typed = frame[frame["gpu_type"].notna() & (frame["gpus"].fillna(0) > 0)]
    if len(typed):
        mode = typed.groupby(keys, sort=True, observed=True)["gpu_type"].agg(
            lambda x: x.value_counts().sort_index().idxmax())
        out = out.merge(mode.rename("gpu_type").reset_index(), how="left", on=keys)
    else:
        out["gpu_type"] = pd.NA
    n = out["alloc_nodes"].to_numpy()
    return pd.DataFrame({"cluster": out["cluster"], "partition": out["partition"], "node_list": out["node_list"],
                         "job_id": pd.array([f"list{k}" for k in range(len(out))], dtype="string"),
                         "alloc_nodes": n, "alloc_cpus": out["cpus"].to_numpy() * n,
                         "alloc_mem_bytes": out["mem"].to_numpy() * n, "alloc_gpus": out["gpus"].to_numpy() * n,
                         "gpu_type": out["gpu_type"].astype("string")})


def placements_from_jobs(jobs: pd.DataFrame) -> pd.DataFrame:
    """One placement per job and node named in ``node_list`` (Slurm's hostlist form), with the job's allocation
    shared out evenly over its nodes (cores rounded up); no CPU index.  Jobs without a node list give none."""
    ev = _evidence(jobs)
    if not len(ev):
        return conform_placements(None)
    r = ev["row"].to_numpy()
    part = jobs["partition"].astype("string").to_numpy()[r] if "partition" in jobs else None
    return conform_placements(pd.DataFrame({
        "cluster": jobs["cluster"].astype("string").to_numpy()[r], "node": ev["node"].astype(str).to_numpy(),
        "job_id": jobs["job_id"].astype("string").to_numpy()[r], "partition": part,
        "cpus": ev["cpus"].to_numpy(), "mem_bytes": pd.array(ev["mem_bytes"].to_numpy(), dtype="Float64").round()
        .astype("Int64"), "gpus": ev["gpus"].to_numpy()}))


def _light(placements: pd.DataFrame) -> pd.DataFrame:
    """The readers' placements in the evidence's form, with their own cluster, partition and job."""
    p = conform_placements(placements)
    p = p[p["node"].notna() & (p["node"].str.len() > 0)]
    cpus = np.fmax(p["cpus"].astype("float64").to_numpy(na_value=np.nan),
                   p["cpu_index_max"].astype("float64").to_numpy(na_value=np.nan) + 1)
    return pd.DataFrame({"cluster": p["cluster"].fillna("").astype(str).to_numpy(), "node": p["node"].astype(str).to_numpy(),
                         "partition": p["partition"].fillna("").astype(str).to_numpy(), "cpus": cpus,
                         "mem_bytes": p["mem_bytes"].astype("float64").to_numpy(na_value=np.nan),
                         "gpus": p["gpus"].astype("float64").to_numpy(na_value=np.nan),
                         "gpu_type": pd.array([pd.NA] * len(p), dtype="string"),
                         "job_id": p["job_id"].fillna("").astype(str).to_numpy()})


def _capacity(frame: pd.DataFrame) -> pd.DataFrame:
    """Per node: ``cluster, node, partitions, cpus, mem_bytes, gpus, gpu_type, jobs`` from evidence rows
    ``cluster, node, partition, cpus, mem_bytes, gpus, gpu_type`` (the numbers' maxima; partitions sorted and
    joined; the GPU type the GPU rows name most)."""
    cols = ["cluster", "node", "partitions", "cpus", "mem_bytes", "gpus", "gpu_type", "jobs"]
    if not len(frame):
        return pd.DataFrame(columns=cols)
    keys = ["cluster", "node", "partition"]
    # first per (node, partition): few rows, then per node
    per = frame.groupby(keys, sort=True, observed=True).agg(cpus=("cpus", "max"), mem_bytes=("mem_bytes", "max"),
                                                             gpus=("gpus", "max"), jobs=("cpus", "size")).reset_index()
    per = per[per["jobs"] > 0]
    g = per.groupby(["cluster", "node"], sort=True, observed=True)
    out = g.agg(cpus=("cpus", "max"), mem_bytes=("mem_bytes", "max"), gpus=("gpus", "max"), jobs=("jobs", "sum"))
    out["partitions"] = g["partition"].agg(lambda x: ",".join(sorted({str(v) for v in x if str(v)})))
    gt = frame[frame["gpu_type"].notna() & (frame["gpus"].fillna(0) > 0)]
    if len(gt):
        mode = gt.groupby(["cluster", "node"], sort=True, observed=True)["gpu_type"] \
            .agg(lambda x: x.value_counts().sort_index().idxmax())
        out["gpu_type"] = mode
    else:
        out["gpu_type"] = pd.NA
    out = out.reset_index()
    out["node"] = out["node"].astype(str)
    out["cluster"] = out["cluster"].astype(str)
    return out[cols]


def node_capacity(placements: pd.DataFrame, jobs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per node: ``cluster, node, partitions`` (the partitions its jobs ran in, sorted), ``cpus``, ``mem_bytes``,
    ``gpus`` (the most one job held there, cores also from the highest CPU index), ``gpu_type`` (from ``jobs``:
    the type its GPU jobs asked for most), ``jobs`` (the placements seen)."""
    frame = _light(placements)
    if jobs is not None and len(jobs) and len(frame):
        key = pd.MultiIndex.from_arrays([jobs["cluster"].astype("string").fillna("").astype(str),
                                         jobs["job_id"].astype("string").fillna("").astype(str)])
        at = key.get_indexer(pd.MultiIndex.from_arrays([frame["cluster"], frame["job_id"]]))
        found = at >= 0
        if "gpu_type" in jobs:
            types = jobs["gpu_type"].astype(object).to_numpy()
            frame["gpu_type"] = pd.array(np.where(found, types[np.maximum(at, 0)], None), dtype="string")
        # a format that names no memory held per node (Grid Engine): the job's memory shared out over its rows
        mem = np.fmax(_num(jobs, "alloc_mem_bytes"), _num(jobs, "req_mem_bytes"))
        rows = np.bincount(np.maximum(at, 0)[found], minlength=len(jobs)).astype(np.float64)
        share = np.where(found, mem[np.maximum(at, 0)] / np.maximum(rows[np.maximum(at, 0)], 1), np.nan)
        have = frame["mem_bytes"].to_numpy(dtype=np.float64)
        frame["mem_bytes"] = np.where(np.isfinite(have), have, np.floor(share))
    return _capacity(frame)


def infer_shape(jobs: pd.DataFrame, placements: pd.DataFrame | None = None, *, name: str | None = None) -> dict | None:
    """The cluster-shape dict (the TOML layout of :mod:`audit.cluster_shape`, with ``inferred``) from the jobs' node
    lists and the readers' placements (a job with placements of its own is not also read from its node list);
    None when no job names a node."""
    given = node_capacity(placements, jobs) if placements is not None and len(placements) else None
    rest = jobs
    if given is not None and len(jobs):
        p = conform_placements(placements)
        placed = pd.MultiIndex.from_arrays([p["cluster"].fillna("").astype(str), p["job_id"].fillna("").astype(str)])
        key = pd.MultiIndex.from_arrays([jobs["cluster"].astype("string").fillna("").astype(str),
                                         jobs["job_id"].astype("string").fillna("").astype(str)])
        rest = jobs[~key.isin(placed)]
    rest = _collapse(rest)
    ev = _evidence(rest)
    if len(ev):
        r = ev["row"].to_numpy()
        cl = pd.Categorical(rest["cluster"].astype("string").fillna("").to_numpy())
        pa_ = pd.Categorical(rest["partition"].astype("string").fillna("").to_numpy()) if "partition" in rest \
            else pd.Categorical([""] * len(rest))
        gpu = np.nan_to_num(ev["gpus"].to_numpy()) > 0
        gtype = np.full(len(ev), None, dtype=object)
        if gpu.any() and "gpu_type" in rest:
            gtype[gpu] = rest["gpu_type"].astype(object).to_numpy()[r[gpu]]
        gtype = pd.Categorical(gtype)
        ev = pd.DataFrame({"cluster": cl[r], "node": ev["node"], "partition": pa_[r], "cpus": ev["cpus"],
                           "mem_bytes": ev["mem_bytes"], "gpus": ev["gpus"], "gpu_type": gtype})
        from_lists = _capacity(ev)
    else:
        from_lists = None
    parts_ = [c for c in (given, from_lists) if c is not None and len(c)]
    if not parts_:
        return None
    cap = pd.concat(parts_, ignore_index=True) if len(parts_) > 1 else parts_[0]
    if len(parts_) > 1:  # a node named by both: its largest figures, every partition
        g = cap.groupby(["cluster", "node"], sort=True)
        merged = g.agg(cpus=("cpus", "max"), mem_bytes=("mem_bytes", "max"), gpus=("gpus", "max"), jobs=("jobs", "sum"))
        merged["partitions"] = g["partitions"].agg(lambda x: ",".join(sorted({p for v in x for p in str(v).split(",") if p})))
        merged["gpu_type"] = g["gpu_type"].agg(lambda x: x.dropna().iloc[0] if x.notna().any() else pd.NA)
        cap = merged.reset_index()
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
