"""Requested and allocated resources of allocation lines: CPUs, nodes, memory (job totals) and GPUs.

Memory is resolved to a job total: ``ReqTRES`` ``mem=`` when present (Slurm records the job's total
there); else ``ReqMem`` per CPU × CPUs, per node × nodes, or a bare value taken as the total.  GPU
counts come from ``gres/gpu=N`` (or the sum of typed ``gres/gpu:TYPE=N``), the type from the typed
entries; TRES in raw database form (``1=20,2=170000,4=1,1002=1``) is read by TRES id.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...units import parse_int, parse_reqmem, parse_size, tres_value
from .distinct import per_distinct
from .lines import take_rows

#: TRES ids fixed by Slurm (sacctmgr show tres); ids from 1001 on are site-specific
RAW_TRES_IDS = {1: "cpu", 2: "mem", 3: "energy", 4: "node", 5: "billing", 6: "fs/disk", 7: "vmem", 8: "pages"}


def _named(tres: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Rewrite raw numeric TRES into named form; also return where an id stayed unnamed."""
    first = pc.utf8_slice_codeunits(tres, 0, 1)
    raw = np.asarray(pc.fill_null(pc.utf8_is_digit(first), False), dtype=bool)
    if raw.any():
        raw = np.asarray(pc.fill_null(pc.match_substring_regex(tres, r"^\d+="), False), dtype=bool)
    if not raw.any():
        return tres, np.zeros(len(tres), bool)
    out = tres
    for tid, tname in RAW_TRES_IDS.items():
        out = pc.replace_substring_regex(out, rf"(^|,){tid}=", rf"\g<1>{tname}=".replace(r"\g<1>", r"\1"))
    unnamed = np.asarray(pc.fill_null(pc.match_substring_regex(out, r"(^|,)\d+="), False), dtype=bool)
    return out, unnamed


def _gpus(tres: pa.Array, gres: pa.Array | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GPU count and type from TRES (or legacy GRES ``gpu:tesla:2``); bad where a count is not a number."""
    n = len(tres)
    untyped, bad = parse_int(tres_value(tres, "gres/gpu"))
    typed_rows = np.flatnonzero(np.asarray(pc.fill_null(pc.match_substring(tres, "gres/gpu:"), False), bool))
    types = np.full(n, "", dtype=object)
    typed_sum = np.full(n, np.nan)
    if len(typed_rows):
        sub = pd.Series(pc.take(tres, pa.array(typed_rows)).to_pylist())
        found = sub.str.findall(r"gres/gpu:([^=,]+)=(\d+)")
        types[typed_rows] = found.map(lambda xs: "+".join(sorted({t for t, _ in xs}))).to_numpy()
        typed_sum[typed_rows] = found.map(lambda xs: float(sum(int(c) for _, c in xs))).to_numpy()
    count = np.where(np.isnan(untyped), typed_sum, untyped)
    if gres is not None:
        g = pc.extract_regex(gres, r"(?:^|,)gpu(?::(?P<t>[^:,(]+))?:(?P<n>\d+)")
        gn = np.asarray(pc.cast(pc.struct_field(g, "n"), pa.float64()).to_numpy(zero_copy_only=False), float)
        gt = np.asarray(pc.fill_null(pc.struct_field(g, "t"), "").to_numpy(zero_copy_only=False), dtype=object)
        use = np.isnan(count) & ~np.isnan(gn)
        count = np.where(use, gn, count)
        types = np.where(use & (types == ""), gt, types)
    return count, types, bad


def _tres(tres: pa.Array, gres: pa.Array | None) -> dict:
    """CPUs, nodes, memory and GPUs of one TRES column (with its legacy GRES column, when the dump has one), and
    the bad masks of each; each distinct TRES string is read once."""

    def read(text: pa.Array, with_gpus: bool) -> dict:
        named, unnamed = _named(pc.utf8_trim_whitespace(text))
        out = {"unnamed": unnamed}
        out["cpu"], out["bad_cpu"] = parse_int(tres_value(named, "cpu"))
        out["node"], out["bad_node"] = parse_int(tres_value(named, "node"))
        out["mem"], out["bad_mem"] = parse_size(tres_value(named, "mem"), "M")
        if with_gpus:
            out["gpus"], out["gpu_type"], out["bad_gpus"] = _gpus(named, None)
        else:
            out["named"] = named
        return out

    if gres is None:
        return per_distinct(lambda t: read(t, True), tres)
    out = per_distinct(lambda t: read(t, False), tres)
    out["gpus"], out["gpu_type"], out["bad_gpus"] = _gpus(out.pop("named"), gres)
    return out


def resources(cols: dict, jidx: np.ndarray, parsed: dict):
    """Resource columns for allocation rows ``jidx``; returns (values, bad masks, caveat masks)."""
    n = len(jidx)
    empty = pa.array([""] * n, type=pa.string())

    def col(name, trim=True):  # TRES and ReqMem are trimmed by their parsers, on their distinct values
        if name not in cols:
            return empty
        a = take_rows(cols[name], jidx)
        return pc.utf8_trim_whitespace(a) if trim else a

    req = _tres(col("ReqTRES", trim=False), col("ReqGRES") if "ReqGRES" in cols else None)
    alloc = _tres(col("AllocTRES", trim=False), col("AllocGRES") if "AllocGRES" in cols else None)
    bad = [("ReqTRES", req["bad_cpu"]), ("ReqTRES", req["bad_node"]), ("AllocTRES", alloc["bad_cpu"]),
           ("AllocTRES", alloc["bad_node"]), ("ReqTRES", req["bad_mem"]), ("AllocTRES", alloc["bad_mem"])]
    vals = {"tres_req_cpus": req["cpu"], "tres_req_nodes": req["node"], "tres_alloc_cpus": alloc["cpu"],
            "tres_alloc_nodes": alloc["node"]}
    req_mem_tres, alloc_mem = req["mem"], alloc["mem"]
    req_unnamed, alloc_unnamed = req["unnamed"], alloc["unnamed"]

    alloc_cpus = _first(parsed["ncpus"], vals["tres_alloc_cpus"])
    alloc_nodes = _first(parsed["nnodes"], vals["tres_alloc_nodes"])
    req_cpus = _first(parsed["reqcpus"], vals["tres_req_cpus"], alloc_cpus)
    req_nodes = _first(parsed["reqnodes"], vals["tres_req_nodes"], alloc_nodes)

    rm = per_distinct(parse_reqmem, col("ReqMem", trim=False)) if "ReqMem" in cols else None
    req_mem = req_mem_tres.copy()
    assumed_total = np.zeros(n, bool)
    legacy = np.zeros(n, bool)
    if rm is not None:
        bad.append(("ReqMem", rm["bad"]))
        per_cpu = rm["bytes"] * req_cpus
        per_node = rm["bytes"] * req_nodes
        whole_node = (rm["per"] == "n") & (rm["bytes"] == 0)  # --mem=0: all of each node's memory
        from_reqmem = np.select([rm["per"] == "c", whole_node, rm["per"] == "n"], [per_cpu, np.nan, per_node],
                                rm["bytes"])
        use = np.isnan(req_mem)
        req_mem = np.where(use, from_reqmem, req_mem)
        assumed_total = use & (rm["per"] == "") & ~np.isnan(rm["bytes"])
        legacy = rm["legacy"]

    alloc_gpus, alloc_type = alloc["gpus"], alloc["gpu_type"]
    req_gpus, req_type = req["gpus"], req["gpu_type"]
    bad += [("AllocTRES", alloc["bad_gpus"]), ("ReqTRES", req["bad_gpus"])]
    has_tres = np.full(n, any(c in cols for c in ("AllocTRES", "ReqTRES", "AllocGRES", "ReqGRES")))
    alloc_gpus = np.where(np.isnan(alloc_gpus) & has_tres, 0, alloc_gpus)
    req_gpus = np.where(np.isnan(req_gpus) & has_tres, 0, req_gpus)
    gpu_type = np.where(alloc_type != "", alloc_type, req_type)
    values = {
        "alloc_cpus": alloc_cpus, "alloc_nodes": alloc_nodes, "req_cpus": req_cpus, "req_nodes": req_nodes,
        "req_mem_bytes": req_mem, "alloc_mem_bytes": alloc_mem, "req_gpus": req_gpus, "alloc_gpus": alloc_gpus,
        "gpu_type": gpu_type,
    }
    caveats = {
        "reqmem_assumed_total": assumed_total,
        "reqmem_legacy_flag": legacy,
        "tres_unmapped": req_unnamed | alloc_unnamed,
    }
    return values, bad, caveats


def _first(*arrays) -> np.ndarray:
    out = np.asarray(arrays[0], dtype=float).copy()
    for a in arrays[1:]:
        out = np.where(np.isnan(out), a, out)
    return out
