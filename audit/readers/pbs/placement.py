"""Where a job ran and what it held there: ``exec_host``, ``exec_vnode`` and Torque's ``exec_gpus``.

* ``exec_host``: ``host/slots[+host/slots…]``.  Torque lists CPU indices one by one (``n1/0+n1/1``), in ranges and
  lists (``n1/0-7``, ``n1/0,2,4-5``): each index one core, the highest index the highest CPU it was placed on.
  PBS Pro writes ``host/N*C`` (OpenPBS ``pbs_job_attributes(7B)``: N the task slot, C the CPUs, ``*C`` left out
  when 1): C cores, and N is no CPU index, so no index is kept for PBS Pro records.
* ``exec_vnode`` (PBS Pro): ``(vnode:ncpus=4:mem=8gb:ngpus=1)+(…)``, a chunk split over vnodes as
  ``(vA:ncpus=2+vB:mem=4gb)`` (``pbs_job_attributes(7B)``): the resources held on each vnode.  A vnode ``n1[0]``
  is part of host ``n1``.
* ``exec_gpus`` (Torque): ``host-gpu/0+host-gpu/1``: one GPU per index.

One placement row per job and host: ``cpus`` (from ``exec_vnode`` where it names ``ncpus``, else the
``exec_host`` slots), ``cpu_index_max`` (Torque), ``mem_bytes`` and ``gpus`` (``exec_vnode``, else
``exec_gpus``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...units import compress_hostlist
from .values import parse_int, parse_size

_ENTRY = r"^(?P<h>[^/]+)(?:/(?P<s>[0-9,*\-]+))?$"
_ITEM = r"^(?P<a>\d+)(?:-(?P<b>\d+))?(?:\*(?P<c>\d+))?$"


def _np(a, dtype=object) -> np.ndarray:
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype=dtype)


def _nums(a) -> np.ndarray:
    return _np(pc.cast(pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a), pa.float64()), "float64")


def _split(col: pa.Array, sep: str) -> tuple[np.ndarray, pa.Array]:
    """Split each row on ``sep``: the row of each non-empty piece, and the pieces."""
    lists = pc.split_pattern(pc.fill_null(col, ""), sep)
    parent = _np(pc.list_parent_indices(lists), np.int64)
    flat = pc.cast(pc.list_flatten(lists), pa.string())
    keep = _np(pc.greater(pc.utf8_length(flat), 0), bool)
    return parent[keep], pc.filter(flat, pa.array(keep))


def _slots(spec: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per ``exec_host`` slot spec (``7``, ``0-7``, ``0,2,4-5``, ``0*8``; null: one slot, no index): the slots,
    the highest index, and whether it was unreadable."""
    n = len(spec)
    count = np.ones(n)
    top = np.full(n, np.nan)
    bad = np.zeros(n, dtype=bool)
    has = _np(pc.is_valid(spec), bool)
    if not has.any():
        return count, top, bad
    owner, items = _split(spec, ",")
    ex = pc.extract_regex(items, _ITEM)
    ok = _np(pc.is_valid(ex), bool)
    a = _nums(pc.struct_field(ex, "a"))
    b = _nums(pc.struct_field(ex, "b"))
    c = _nums(pc.struct_field(ex, "c"))
    k = np.where(~np.isnan(c), c, np.where(~np.isnan(b), b - a + 1, 1.0))
    hi = np.where(~np.isnan(b), b, a)
    bad_item = ~ok | (k < 1)
    np.logical_or.at(bad, owner, bad_item)
    total = np.zeros(n)
    np.add.at(total, owner, np.where(bad_item, 0, k))
    count = np.where(has, total, 1.0)
    top_items = np.full(n, -np.inf)
    np.maximum.at(top_items, owner, np.where(bad_item, -np.inf, hi))
    top = np.where(has & np.isfinite(top_items), top_items, np.nan)
    return count, top, bad


def exec_host_table(col: pa.Array) -> tuple[pd.DataFrame, np.ndarray]:
    """``exec_host`` per row → long table ``row, host, order, slots, index`` and the rows whose value is bad."""
    row, entries = _split(col, "+")
    ex = pc.extract_regex(entries, _ENTRY)
    ok = _np(pc.is_valid(ex), bool)
    slots, top, bad_spec = _slots(pc.struct_field(ex, "s"))
    bad = np.zeros(len(col), dtype=bool)
    np.logical_or.at(bad, row, ~ok | bad_spec)
    keep = ~bad[row]
    table = pd.DataFrame({"row": row[keep], "host": _np(pc.struct_field(ex, "h"))[keep],
                          "order": np.arange(len(row))[keep], "slots": slots[keep], "index": top[keep]})
    return table, bad


def exec_vnode_table(col: pa.Array) -> tuple[pd.DataFrame, np.ndarray]:
    """``exec_vnode`` per row → long table ``row, host, order, ncpus, mem, ngpus`` (per vnode) and bad rows."""
    row, pieces = _split(pc.replace_substring_regex(pc.fill_null(col, ""), r"[()]", ""), "+")
    parts = pc.split_pattern(pieces, ":")
    piece = _np(pc.list_parent_indices(parts), np.int64)
    flat = pc.cast(pc.list_flatten(parts), pa.string())
    nparts = _np(pc.list_value_length(parts), np.int64)
    first = (np.cumsum(nparts) - nparts).astype(np.int64)
    is_name = np.zeros(len(flat), dtype=bool)
    is_name[first] = True
    names = _np(pc.take(flat, pa.array(first, pa.int64())))
    bad_piece = (names == "") | _np(pc.match_substring(pa.array(names, pa.string()), "="), bool)
    kv = pc.extract_regex(pc.filter(flat, pa.array(~is_name)), r"^(?P<k>[^=]+)=(?P<v>.*)$")
    owner = piece[~is_name]
    np.logical_or.at(bad_piece, owner, ~_np(pc.is_valid(kv), bool))
    key = _np(pc.fill_null(pc.struct_field(kv, "k"), ""))
    value = pc.struct_field(kv, "v")
    sums = {}
    for name, parser in (("ncpus", parse_int), ("mem", parse_size), ("ngpus", parse_int)):
        sel = key == name
        v, b = parser(pc.filter(value, pa.array(sel)))
        np.logical_or.at(bad_piece, owner[sel], b)
        total = np.zeros(len(pieces))
        np.add.at(total, owner[sel], np.nan_to_num(v))
        seen = np.zeros(len(pieces), dtype=bool)
        seen[owner[sel]] = True
        sums[name] = np.where(seen, total, np.nan)
    bad = np.zeros(len(col), dtype=bool)
    np.logical_or.at(bad, row, bad_piece)
    keep = ~bad[row]
    hosts = _np(pc.replace_substring_regex(pa.array(names, pa.string()), r"\[[^\]]*\]$", ""))
    table = pd.DataFrame({"row": row[keep], "host": hosts[keep], "order": np.arange(len(row))[keep],
                          "ncpus": sums["ncpus"][keep], "mem": sums["mem"][keep], "ngpus": sums["ngpus"][keep]})
    return table, bad


def exec_gpus_table(col: pa.Array) -> tuple[pd.DataFrame, np.ndarray]:
    """Torque ``exec_gpus`` per row → long table ``row, host, gpus`` and bad rows."""
    row, entries = _split(col, "+")
    ex = pc.extract_regex(entries, r"^(?P<h>[^/]+?)(?:-gpu)?/(?P<s>[0-9,\-]+)$")
    ok = _np(pc.is_valid(ex), bool)
    count, _, bad_spec = _slots(pc.struct_field(ex, "s"))
    bad = np.zeros(len(col), dtype=bool)
    np.logical_or.at(bad, row, ~ok | bad_spec)
    keep = ~bad[row]
    return pd.DataFrame({"row": row[keep], "host": _np(pc.struct_field(ex, "h"))[keep],
                         "gpus": count[keep]}), bad


def placements(n: int, host: pd.DataFrame, vnode: pd.DataFrame, gpus: pd.DataFrame,
               keep_index: np.ndarray) -> tuple[pd.DataFrame, dict]:
    """Per job and host what it held (see the module text), and per job (``n`` rows) ``nodes``, ``cpus``,
    ``mem``, ``gpus`` (NaN where unknown) and ``node_list`` (Slurm's compact hostlist form)."""
    vn = vnode.assign(order=vnode["order"] + (len(host) + 1))
    long = pd.concat([host, vn, gpus.assign(order=np.iinfo(np.int64).max)], ignore_index=True)
    per_job = {"nodes": np.full(n, np.nan), "cpus": np.full(n, np.nan), "mem": np.full(n, np.nan),
               "gpus": np.full(n, np.nan), "node_list": np.full(n, None, dtype=object)}
    if not len(long):
        return pd.DataFrame(columns=["row", "node", "cpus", "cpu_index_max", "mem_bytes", "gpus"]), per_job
    for col in ("slots", "index", "ncpus", "mem", "ngpus", "gpus"):
        if col not in long:
            long[col] = np.nan
    gb = long.groupby(["row", "host"], sort=False)
    g = gb[["slots", "ncpus", "mem", "ngpus", "gpus"]].sum(min_count=1)
    g["order"] = gb["order"].min()
    g["index"] = gb["index"].max()
    g = g.reset_index().sort_values(["row", "order"], kind="stable")
    rows = g["row"].to_numpy(dtype=np.int64)
    table = pd.DataFrame({
        "row": rows,
        "node": g["host"].to_numpy(dtype=object),
        "cpus": np.where(g["ncpus"].notna(), g["ncpus"], g["slots"]).astype("float64"),
        "cpu_index_max": np.where(keep_index[rows], g["index"], np.nan),
        "mem_bytes": g["mem"].to_numpy(dtype="float64"),
        "gpus": np.where(g["ngpus"].notna(), g["ngpus"], g["gpus"]).astype("float64"),
    })
    by_row = table.groupby("row")
    sums = by_row[["cpus", "mem_bytes", "gpus"]].sum(min_count=1).rename(columns={"mem_bytes": "mem"})
    sums["nodes"] = by_row.size()
    at = sums.index.to_numpy(dtype=np.int64)
    for k in ("nodes", "cpus", "mem", "gpus"):
        per_job[k][at] = sums[k].to_numpy(dtype="float64")
    per_job["node_list"][np.unique(rows)] = _node_lists(rows, table["node"].to_numpy(dtype=object))
    return table, per_job


def _node_lists(rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Each job's hosts (rows sorted, hosts in placement order) as Slurm's compact hostlist
    (:func:`audit.units.compress_hostlist`); a job on one host, or on hosts sharing a name prefix and digit width
    (the usual case, built here without the general routine), needs no general call."""
    out = nodes.copy()
    if not len(rows):
        return out
    parts = pc.extract_regex(pa.array(nodes, pa.string()), r"^(?P<p>.*?)(?P<d>\d*)$")
    prefix = _np(pc.struct_field(parts, "p"))
    digits = _np(pc.struct_field(parts, "d"))
    width = np.char.str_len(digits.astype(str))
    number = np.where(width > 0, digits, "0").astype(np.int64)
    bounds = np.flatnonzero(np.diff(rows)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(rows)]])
    multi = np.flatnonzero(ends - starts > 1)
    # one key per host: its prefix and digit width; a job whose hosts share one key is the usual case
    kind = pd.factorize(pd.Series(prefix, dtype=object) + "\x00" + pd.Series(width.astype(str)))[0]
    prefix_l, width_l, number_l, kind_l = prefix.tolist(), width.tolist(), number.tolist(), kind.tolist()
    for a, b in zip(starts[multi].tolist(), ends[multi].tolist(), strict=True):
        k = kind_l[a]
        if width_l[a] and all(x == k for x in kind_l[a + 1:b]):
            p, w = prefix_l[a], width_l[a]
            nums = sorted(set(number_l[a:b]))
            if len(nums) == 1:
                out[a] = f"{p}{nums[0]:0{w}d}"
                continue
            runs, lo, hi = [], nums[0], nums[0]
            for x in nums[1:]:
                if x == hi + 1:
                    hi = x
                    continue
                runs.append(f"{lo:0{w}d}" if lo == hi else f"{lo:0{w}d}-{hi:0{w}d}")
                lo = hi = x
            runs.append(f"{lo:0{w}d}" if lo == hi else f"{lo:0{w}d}-{hi:0{w}d}")
            out[a] = f"{p}[{','.join(runs)}]"
        else:
            out[a] = compress_hostlist(list(nodes[a:b]))
    return out[starts]
