"""Jobstats summaries stored in Slurm's ``AdminComment``: ``JS1:`` + base64(gzip(JSON)).

Princeton's jobstats writes one summary per finished job from a ``slurmctld`` epilog.  The JSON
layout (as produced by ``Jobstats.report_job_json`` and shown in its documentation)::

    {
      "gpus": 4,                          # GPUs allocated (from AllocTRES gres/gpu)
      "total_time": 67316,                # elapsed wall time of the job, seconds
      "nodes": {
        "della-i14g2": {
          "cpus": 24,                     # cores allocated on this node
          "total_memory": 137438953472,   # cgroup memory limit on this node, bytes
          "used_memory": 8482066944,      # max over time of the job cgroup's RSS on this node, bytes
          "total_time": 164480.2,         # CPU seconds used on this node (user + system)
          "gpu_total_memory": {"0": 42949672960, "1": 42949672960},   # per GPU minor number, bytes
          "gpu_used_memory":  {"0": 28454158336, "1": 27917287424},   # max over time per GPU, bytes
          "gpu_utilization":  {"0": 65.7, "1": 64.5}                  # mean duty cycle per GPU, percent
        },
        ...
      }
    }

The GPU maps are keyed by the GPU's minor number (a string in JSON); any of the GPU maps may be
absent (no GPUs, or MIG slices without utilisation).  Two marker values carry no JSON at all:
``JS1:Short`` (job shorter than two sampling periods) and ``JS1:None`` (no data collected).

How the summary becomes canonical columns:

* ``cpu_used_s`` = sum over nodes of ``total_time``; null if any node lacks it.
* ``mem_peak_bytes`` = sum over nodes of ``used_memory`` (each node's own peak; peaks on different
  nodes may fall at different times, so this is an upper bound on the simultaneous total — the same
  figure jobstats reports as "used"); null if any node lacks it.
* ``gpu_util_mean`` = mean over all the job's GPUs of ``gpu_utilization`` / 100 (0–1).
* ``gpu_mem_peak_bytes`` ("peak GPU memory over held GPUs") = **sum** over the job's GPUs of each
  GPU's peak ``gpu_used_memory``: the job total, comparable with ``alloc_gpus`` × memory per GPU, in
  the same way ``mem_peak_bytes`` is the job total over nodes.  The largest single GPU's peak (what a
  smaller GPU model would have to hold) is returned beside it as ``gpu_mem_max_per_gpu_bytes``.
* ``gpus_seen`` = number of distinct (node, GPU minor) pairs named in any GPU map.

The summary's own allocation, what its usage is a share of: ``js_nodes`` (nodes listed), ``js_cpus``
(sum over nodes of ``cpus``), ``js_total_memory`` (sum over nodes of ``total_memory``), ``js_gpus``
(``gpus``, else ``gpus_seen``) and ``js_total_time`` (``total_time``).  :func:`reconcile_jobstats` puts
a reader's row and its summary together (see there).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import math
import re
import zlib

import numpy as np
import pandas as pd

PREFIX = "JS1:"
#: payload-less markers jobstats writes instead of a summary
MARKERS = ("Short", "None")

#: column -> dtype of :func:`decode_jobstats`'s result
COLUMNS: dict[str, str] = {
    "cpu_used_s": "Float64",
    "mem_peak_bytes": "Int64",
    "gpu_util_mean": "Float64",
    "gpu_mem_peak_bytes": "Int64",
    "gpu_mem_max_per_gpu_bytes": "Int64",
    "gpus_seen": "Int64",
    "js_nodes": "Int64",
    "js_cpus": "Float64",
    "js_total_memory": "Int64",
    "js_gpus": "Int64",
    "js_total_time": "Float64",
    "is_jobstats": "bool",
    "has_data": "bool",
    "error": "string",
}

_WS = re.compile(r"\s+")


class JobstatsError(ValueError):
    """A ``JS1:`` payload that cannot be decoded; the message starts with the failing stage."""


def encode_jobstats(summary: dict) -> str:
    """A jobstats summary dict → its ``AdminComment`` value (deterministic: sorted keys, gzip mtime 0)."""
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    packed = gzip.compress(text.encode("ascii"), mtime=0)
    return PREFIX + base64.b64encode(packed).decode("ascii")


def parse_jobstats(value: str) -> dict | None:
    """One ``AdminComment`` value starting with ``JS1:`` → the summary dict (``None`` for the markers).

    Raises :class:`JobstatsError` naming the stage that failed: base64, gzip, json or layout.
    """
    payload = _WS.sub("", value.strip()[len(PREFIX):])
    if payload in MARKERS:
        return None
    try:
        packed = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise JobstatsError(f"base64 decode failed: {exc}") from exc
    try:
        text = gzip.decompress(packed)
    except (OSError, EOFError, zlib.error) as exc:
        raise JobstatsError(f"gzip decompress failed: {exc}") from exc
    try:
        summary = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JobstatsError(f"json parse failed: {exc}") from exc
    _check_layout(summary)
    return summary


def _check_layout(summary) -> None:
    if not isinstance(summary, dict) or not isinstance(summary.get("nodes"), dict):
        raise JobstatsError("layout: no 'nodes' object")
    for node, stats in summary["nodes"].items():
        if not isinstance(stats, dict):
            raise JobstatsError(f"layout: node {node!r} is not an object")
        for key in ("cpus", "total_memory", "used_memory", "total_time"):
            if key in stats and not _is_number(stats[key]):
                raise JobstatsError(f"layout: node {node!r} {key} is not a finite number")
        for key in ("gpu_total_memory", "gpu_used_memory", "gpu_utilization"):
            if key in stats:
                gmap = stats[key]
                if not isinstance(gmap, dict) or not all(_is_number(v) for v in gmap.values()):
                    raise JobstatsError(f"layout: node {node!r} {key} is not a map of finite numbers")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def summarise(summary: dict) -> dict:
    """A decoded summary → the job-level figures (see the module docstring for each rule)."""
    nodes = list(summary["nodes"].values())
    cpu = [n.get("total_time") for n in nodes]
    mem = [n.get("used_memory") for n in nodes]
    util = [v for n in nodes for v in n.get("gpu_utilization", {}).values()]
    gmem = [v for n in nodes for v in n.get("gpu_used_memory", {}).values()]
    seen = {
        (name, minor)
        for name, n in summary["nodes"].items()
        for key in ("gpu_utilization", "gpu_used_memory", "gpu_total_memory")
        for minor in n.get(key, {})
    }
    complete = bool(nodes)
    cpus = [n.get("cpus") for n in nodes]
    total_mem = [n.get("total_memory") for n in nodes]
    gpus = summary.get("gpus")
    total_time = summary.get("total_time")
    return {
        "js_nodes": len(nodes) if nodes else None,
        "js_cpus": float(sum(cpus)) if complete and None not in cpus else None,
        "js_total_memory": int(round(sum(total_mem))) if complete and None not in total_mem else None,
        "js_gpus": int(gpus) if _is_number(gpus) else (len(seen) or None),
        "js_total_time": float(total_time) if _is_number(total_time) else None,
        "cpu_used_s": float(sum(cpu)) if complete and None not in cpu else None,
        "mem_peak_bytes": int(round(sum(mem))) if complete and None not in mem else None,
        "gpu_util_mean": sum(util) / len(util) / 100.0 if util else None,
        "gpu_mem_peak_bytes": int(round(sum(gmem))) if gmem else None,
        "gpu_mem_max_per_gpu_bytes": int(round(max(gmem))) if gmem else None,
        "gpus_seen": len(seen),
    }


def decode_jobstats(s: pd.Series) -> pd.DataFrame:
    """``AdminComment`` strings → one row per input row (same index) with :data:`COLUMNS`.

    Values not starting with ``JS1:`` (empty, null, free text) give ``is_jobstats`` False and nulls.
    ``JS1:Short`` / ``JS1:None`` give ``is_jobstats`` True, ``has_data`` False.  A corrupt payload
    gives ``error`` = the failing stage and reason ("base64 decode failed: …", "gzip decompress
    failed: …", "json parse failed: …", "layout: …") and null figures: the caller quarantines the field.
    """
    text = s.astype("string").str.strip()
    is_js = text.str.startswith(PREFIX).fillna(False).to_numpy(dtype=bool)
    n = len(s)
    numeric = [c for c in COLUMNS if c not in ("is_jobstats", "has_data", "error")]
    cols = {c: np.full(n, np.nan) for c in numeric}
    errors: list = [None] * n
    has_data = np.zeros(n, dtype=bool)
    values = text.tolist()
    for pos in is_js.nonzero()[0]:
        try:
            summary = parse_jobstats(values[pos])
        except JobstatsError as exc:
            errors[pos] = str(exc)
            continue
        if summary is not None:
            has_data[pos] = True
            for col, value in summarise(summary).items():
                if value is not None:
                    cols[col][pos] = value
    result = {c: pd.array(np.where(np.isnan(v), None, v) if COLUMNS[c] == "Int64" else v, dtype=COLUMNS[c])
              for c, v in cols.items()}
    result["error"] = pd.array(errors, dtype="string")
    result["is_jobstats"] = is_js
    result["has_data"] = has_data
    return pd.DataFrame(result, index=s.index)[list(COLUMNS)]


#: relative difference above which a summary and sacct disagree on nodes, CPUs or elapsed time
DISAGREE = 0.01


def _rel_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
    return ~np.isnan(a) & ~np.isnan(b) & (np.nan_to_num(d) > DISAGREE)


def _num(col) -> np.ndarray:
    return pd.Series(col).astype("Float64").to_numpy(dtype="float64", na_value=np.nan)


def reconcile_jobstats(frame: pd.DataFrame, js: pd.DataFrame) -> pd.DataFrame:
    """A reader's canonical rows (positionally aligned with ``js``, :func:`decode_jobstats`) and their summaries.

    Where a summary has data:

    * CPU time is a share of the summary's own allocation, ``Σ total_time / (js_cpus × js_total_time)``
      (sacct's ``alloc_cpus`` or ``elapsed_s`` standing in for a figure the summary lacks); ``cpu_used_s``
      is that share of sacct's allocation (``alloc_cpus × elapsed_s``), so efficiency and waste are
      jobstats' own.  (The raw sum is kept when sacct's allocation is unknown.)
    * GPU counts missing from sacct (no AllocTRES, or a site not accounting ``gres/gpu``) are the summary's.
    * A request sacct leaves unknown or ambiguous (``ReqMem`` without ``c``/``n``: ``reqmem_assumed_total``)
      is the summary's ``total_memory`` (the cgroup limits), caveat ``reqmem_from_jobstats``.
    * Caveat ``jobstats_disagrees`` when the summary and sacct differ by more than 1 % on nodes, CPUs or
      elapsed time.
    """
    if js is None or not len(frame):
        return frame
    use = js["has_data"].to_numpy(dtype=bool)
    if not use.any():
        return frame
    out = frame.copy()
    j = {c: _num(js[c]) for c in ("cpu_used_s", "js_nodes", "js_cpus", "js_total_memory", "js_gpus",
                                   "js_total_time")}
    alloc_cpus, elapsed = _num(out["alloc_cpus"]), _num(out["elapsed_s"])
    nodes = _num(out["alloc_nodes"])
    den_cpus = np.where(np.isnan(j["js_cpus"]), alloc_cpus, j["js_cpus"])
    den_time = np.where(np.isnan(j["js_total_time"]), elapsed, j["js_total_time"])
    with np.errstate(invalid="ignore", divide="ignore"):
        share = j["cpu_used_s"] / (den_cpus * den_time)
    scalable = use & np.isfinite(share) & (alloc_cpus > 0) & (elapsed > 0)
    cpu = _num(out["cpu_used_s"])
    out["cpu_used_s"] = pd.array(np.where(scalable, share * alloc_cpus * elapsed, cpu), dtype="Float64")
    for col in ("alloc_gpus", "req_gpus"):
        have = _num(out[col])
        fill = use & ~np.isnan(j["js_gpus"]) & (j["js_gpus"] > 0) & ~(have > 0)
        if fill.any():
            out[col] = pd.array(np.where(fill, j["js_gpus"], have), dtype=out[col].dtype)
    cav = out["caveats"].astype("string").fillna("")
    ambiguous = cav.str.contains(r"(?:^|;)reqmem_assumed_total(?:;|$)", regex=True).to_numpy(dtype=bool)
    req_mem = _num(out["req_mem_bytes"])
    from_js = use & ~np.isnan(j["js_total_memory"]) & (ambiguous | np.isnan(req_mem))
    out["req_mem_bytes"] = pd.array(np.where(from_js, j["js_total_memory"], req_mem), dtype="Float64").round() \
        .astype("Int64")
    disagree = use & (_rel_diff(j["js_nodes"], nodes) | _rel_diff(j["js_cpus"], alloc_cpus)
                      | _rel_diff(j["js_total_time"], elapsed))
    codes = cav.str.split(";").tolist()
    new = []
    for k, lst in enumerate(codes):
        lst = [c for c in lst if c]
        if from_js[k]:
            lst = [c for c in lst if c != "reqmem_assumed_total"] + ["reqmem_from_jobstats"]
        if disagree[k]:
            lst.append("jobstats_disagrees")
        new.append(";".join(lst) or None)
    if (from_js | disagree).any():
        out["caveats"] = pd.array(new, dtype="string")
    return out
