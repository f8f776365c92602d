"""Each job's hosts as one compact hostlist (``cn[001-003,007],gpu01``), for every job at once.

The same text :func:`audit.units.compress_hostlist` gives for one job's names: the names grouped by prefix and
number width in the order the groups first appear, each group's numbers sorted and written as runs.  Here the
distinct host names are split once, and the grouping, sorting and joining are done on arrays.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_TAIL = re.compile(r"^(.*?)(\d+)$")


def compact_hostlists(owner: np.ndarray, code: np.ndarray, names: np.ndarray, n: int) -> np.ndarray:
    """Per job (``n``), its hosts' hostlist (None for a job with none); ``owner`` (non-decreasing) and ``code``
    (index into ``names``) give each job's distinct hosts in the order the record names them."""
    out = np.full(n, None, dtype=object)
    if not len(owner):
        return out
    prefixes, widths, numbers = [], [], []
    for name in names.tolist():
        m = _TAIL.match(name)
        if m:
            prefixes.append(m.group(1))
            widths.append(len(m.group(2)))
            numbers.append(int(m.group(2)) if len(m.group(2)) < 18 else -1)
        else:
            prefixes.append(name)
            widths.append(0)
            numbers.append(-1)
    widths_a = np.array(widths, dtype=np.int64)
    plain = (widths_a == 0) | (np.array(numbers) < 0)  # no number to run (or one too long to add to)
    kinds: dict = {}
    kind_of = np.array([kinds.setdefault((p, w) if not pl else (nm, 0, i), len(kinds))
                        for i, (p, w, pl, nm) in enumerate(zip(prefixes, widths, plain.tolist(), names.tolist(),
                                                               strict=True))], dtype=np.int64)
    kind_prefix = np.empty(len(kinds), dtype=object)
    kind_width = np.zeros(len(kinds), dtype=np.int64)
    for key, k in kinds.items():
        kind_prefix[k] = key[0]
        kind_width[k] = key[1]
    num = np.array(numbers, dtype=np.int64)[code]
    kind = kind_of[code]
    # groups: (job, prefix and width), in the order each first appears in its job
    gkey = owner * len(kinds) + kind
    _, first, ginv = np.unique(gkey, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    group = rank[ginv]
    order = np.lexsort((num, group))
    group, num, kind, owner = group[order], num[order], kind[order], owner[order]
    # runs of consecutive numbers inside a group
    new_group = np.ones(len(group), dtype=bool)
    new_group[1:] = group[1:] != group[:-1]
    new_run = new_group.copy()
    new_run[1:] |= num[1:] != num[:-1] + 1
    run_start = np.flatnonzero(new_run)
    run_end = np.append(run_start[1:], len(group)) - 1
    width = kind_width[kind[run_start]]
    lo = _padded(num[run_start], width)
    hi = _padded(num[run_end], width)
    run_text = pc.if_else(pa.array(run_start == run_end), lo, pc.binary_join_element_wise(lo, hi, "-"))
    # groups: their runs joined; "prefix[runs]" when more than one number, else prefix + number (or the name)
    run_group = group[run_start]
    gstart = np.flatnonzero(np.r_[True, run_group[1:] != run_group[:-1]])
    body = _join(run_text, gstart, ",")
    g_first_row = np.flatnonzero(new_group)
    g_kind = kind[g_first_row]
    g_size = np.diff(np.append(g_first_row, len(group)))
    g_prefix = pa.array(kind_prefix[g_kind].tolist(), type=pa.string())
    bracketed = pc.binary_join_element_wise(g_prefix, "[", body, "]", "")
    text = pc.if_else(pa.array(kind_width[g_kind] == 0), g_prefix,
                      pc.if_else(pa.array(g_size > 1), bracketed, pc.binary_join_element_wise(g_prefix, body, "")))
    # jobs: their groups joined
    g_owner = owner[g_first_row]
    jstart = np.flatnonzero(np.r_[True, g_owner[1:] != g_owner[:-1]])
    out[g_owner[jstart]] = np.asarray(_join(text, jstart, ",").to_numpy(zero_copy_only=False), dtype=object)
    return out


def _padded(values: np.ndarray, width: np.ndarray) -> pa.Array:
    """Numbers as text, zero-padded to each one's width."""
    text = pc.cast(pa.array(values), pa.string())
    for w in np.unique(width).tolist():
        if w > 1:
            text = pc.if_else(pa.array(width == w), pc.utf8_lpad(text, width=w, padding="0"), text)
    return text


def _join(items: pa.Array, starts: np.ndarray, sep: str) -> pa.Array:
    """``items`` joined with ``sep`` over each run from ``starts[k]`` to the next start."""
    offsets = np.append(starts, len(items)).astype(np.int32)
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), items), sep)
