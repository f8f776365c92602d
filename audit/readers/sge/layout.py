"""Grid Engine accounting(5) record layouts, and splitting a file's records into fields.

Every release writes one record per line, fields separated by ``:``.  Fields 1–40 are the same in all of them
(accounting(5) of SGE 6.2u5, Son of Grid Engine 8.1.9, Univa Grid Engine 8.x): ``qname`` … ``io``, then
``category``.  What follows ``category`` grew over the releases; a record's layout is told by its field count:

=====  ==========================================================================================
count  release and the fields after ``category``
=====  ==========================================================================================
43     SGE 6.0, 6.1: ``iow``, ``pe_taskid``, ``maxvmem``
45     SGE 6.2, OGS, Son of Grid Engine 8.x: … ``arid``, ``ar_submission_time``
52     Univa 8.2: … ``job_class``, ``qdel_info``, ``maxrss``, ``maxpss``, ``submit_host``, ``cwd``, ``submit_cmd``
53     Univa 8.3: … ``wallclock``
54     later Univa: … ``ioops`` (as parsers of those files name it)
55     later Univa / Altair: … ``bound_cores`` (likewise)
=====  ==========================================================================================

A file whose records mostly have more fields than 55 is read as the 55-field layout followed by fields not
named here (a later release appending more).

``category`` is the job's request as submitted, and a time value written ``h:m:s`` (``-l h_rt=1:00:00``,
sge_types(1) "time_specifier") puts its colons into the record unescaped.  Such a record has more fields than its
layout; the extra pieces are joined back into ``category`` when they read as the rest of such a value (the head
ends ``=digits``, each further piece starts with digits and ends there, at a comma or at a space).  Where a count
fits several readings, the file's own layout (the count most of its records have) is tried first, and a reading
is kept only if every number field it names parses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: fields 1-39 of every release (0-based positions 0-38); field 40 (position 39) is ``category``
LEFT = (
    "qname", "hostname", "group", "owner", "job_name", "job_number", "account", "priority", "submission_time",
    "start_time", "end_time", "failed", "exit_status", "ru_wallclock", "ru_utime", "ru_stime", "ru_maxrss",
    "ru_ixrss", "ru_ismrss", "ru_idrss", "ru_isrss", "ru_minflt", "ru_majflt", "ru_nswap", "ru_inblock",
    "ru_oublock", "ru_msgsnd", "ru_msgrcv", "ru_nsignals", "ru_nvcsw", "ru_nivcsw", "project", "department",
    "granted_pe", "slots", "task_number", "cpu", "mem", "io",
)
CATEGORY = len(LEFT)  # position 39
_TAIL_55 = ("iow", "pe_taskid", "maxvmem", "arid", "ar_submission_time", "job_class", "qdel_info", "maxrss",
            "maxpss", "submit_host", "cwd", "submit_cmd", "wallclock", "ioops", "bound_cores")
#: field count → the fields after ``category``
TAILS = {n: _TAIL_55[: n - CATEGORY - 1] for n in (43, 45, 52, 53, 54, 55)}
KNOWN_COUNTS = tuple(sorted(TAILS))

#: number fields: a record whose field does not parse is quarantined naming it (the tail's numbers also tell
#: one layout from another)
INTS = {"job_number", "priority", "submission_time", "start_time", "end_time", "failed", "exit_status", "slots",
        "task_number", "arid", "ar_submission_time", "maxrss"}
FLOATS = {"ru_wallclock", "ru_utime", "ru_stime", "ru_maxrss", "cpu", "mem", "io", "iow", "maxvmem", "wallclock"}
_INT_RE = r"^[-+]?\d+$"
_FLOAT_RE = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"
# the pieces of a category split by the colons of h:m:s values (see the module docstring)
_HEAD_RE = r"=\d*$"
_MID_RE = r"^\d*(?:[, ].*=\d*)?$"
_LAST_RE = r"^\d*(?:[, ].*)?$"


@dataclass
class Split:
    """The records' fields: ``flat`` holds every field of every record in order, record ``r``'s fields start at
    ``offsets[r]``; ``count`` is its field count, ``layout`` the field count of the layout it was read with (0: none
    fits) and ``extra`` how many pieces of a split ``category`` it has beyond one; ``bad_field`` names the first
    field that did not parse (``""`` when the record reads)."""

    flat: pa.Array
    offsets: np.ndarray
    count: np.ndarray
    layout: np.ndarray
    extra: np.ndarray
    bad_field: np.ndarray
    tails: dict

    def position(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Index into ``flat`` of field ``name`` of each of ``rows`` (-1 where its layout has no such field)."""
        return _position(name, self.offsets, self.layout, self.extra, rows, self.tails)

    def text(self, name: str, rows: np.ndarray) -> pa.Array:
        """Field ``name`` of ``rows`` as strings (null where the layout lacks it); ``category`` joined back."""
        if name == "category":
            return self._category(rows)
        return _take(self.flat, self.position(name, rows))

    def number(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Field ``name`` of ``rows`` as float64 (NaN where absent); the rows have been checked to parse."""
        values, _ = parse_numbers(self.text(name, rows), _INT_RE if name in INTS else _FLOAT_RE)
        return values

    def _category(self, rows: np.ndarray) -> pa.Array:
        base = _take(self.flat, self.offsets[rows] + CATEGORY)
        ex = self.extra[rows]
        joined = np.flatnonzero(ex > 0)
        if not len(joined):
            return base
        pieces = []
        for r in rows[joined]:  # the few records whose request held h:m:s values
            start = int(self.offsets[r]) + CATEGORY
            pieces.append(":".join(self.flat.slice(start, int(self.extra[r]) + 1).to_pylist()))
        mask = np.zeros(len(rows), dtype=bool)
        mask[joined] = True
        return pc.replace_with_mask(base, pa.array(mask), pa.array(pieces, type=pa.string()))


def split_records(records: list[str]) -> Split:
    """Split the data lines at ``:`` and find each record's layout (see the module docstring)."""
    arr = pa.array(records, type=pa.string())
    lists = pc.split_pattern(arr, ":")
    flat = lists.flatten()
    offsets = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)[:-1]
    count = np.asarray(pc.list_value_length(lists).to_numpy(zero_copy_only=False), dtype=np.int64)
    n = len(records)
    tails = dict(TAILS)
    dominant = _dominant(count, tails)
    layout = np.zeros(n, dtype=np.int64)
    extra = np.zeros(n, dtype=np.int64)
    bad_field = np.full(n, "", dtype=object)
    tried = np.zeros(n, dtype=bool)
    for c in np.unique(count):
        rows = np.flatnonzero(count == c)
        for ln in _candidates(int(c), dominant, tails):
            ex = np.full(len(rows), int(c) - ln, dtype=np.int64)
            first = _validate(flat, offsets, rows, ln, ex, tails)
            fresh = ~tried[rows]
            bad_field[rows[fresh]] = first[fresh]  # the first reading's complaint is the one reported
            tried[rows] = True
            ok = first == ""
            layout[rows[ok]] = ln
            extra[rows[ok]] = ex[ok]
            rows = rows[~ok]
            if not len(rows):
                break
    bad_field[layout > 0] = ""
    return Split(flat, offsets, count, layout, extra, bad_field, tails)


def _dominant(count: np.ndarray, tails: dict) -> int:
    """The field count most of the file's records have among the known layouts (a count above them all, when
    most records have it, becomes a layout of its own: the 55 known fields, then unnamed ones)."""
    if not len(count):
        return 0
    tally = Counter(count.tolist())
    top, top_n = tally.most_common(1)[0]
    if top > max(KNOWN_COUNTS) and top_n * 2 > len(count):
        tails[top] = _TAIL_55 + tuple(f"_unnamed_{k}" for k in range(top - CATEGORY - 1 - len(_TAIL_55)))
        return top
    known = [(k, c) for c, k in tally.items() if c in tails]
    return max(known)[1] if known else 0


def _candidates(c: int, dominant: int, tails: dict) -> list[int]:
    """Layouts a record of ``c`` fields may have, most likely first: the file's own layout, the one of exactly
    ``c`` fields, then the others it can hold with a split category (fewest extra pieces first)."""
    out = []
    if dominant and c >= dominant:
        out.append(dominant)
    if c in tails and c not in out:
        out.append(c)
    out += [n for n in sorted(tails, reverse=True) if n < c and n not in out]
    return out


def _position(name, offsets, layout, extra, rows, tails) -> np.ndarray:
    if name in _LEFT_POS:
        return offsets[rows] + _LEFT_POS[name]
    lay = layout[rows]
    pos = np.full(len(rows), -1, dtype=np.int64)
    for ln in np.unique(lay):
        tail = tails.get(int(ln), ())
        if name in tail:
            sel = lay == ln
            pos[sel] = offsets[rows[sel]] + CATEGORY + 1 + extra[rows[sel]] + tail.index(name)
    return pos


_LEFT_POS = {n: i for i, n in enumerate(LEFT)}


def _take(flat: pa.Array, idx: np.ndarray) -> pa.Array:
    """``flat[idx]``, null where ``idx`` is -1."""
    missing = idx < 0
    if missing.any():
        return pc.take(flat, pa.array(np.where(missing, 0, idx), mask=missing, type=pa.int64()))
    return pc.take(flat, pa.array(idx, type=pa.int64()))


def parse_numbers(a: pa.Array, pattern: str = _FLOAT_RE) -> tuple[np.ndarray, np.ndarray]:
    """Strings → float64 (NaN where null or unreadable) and the mask of present entries that did not parse
    (``pattern``: :data:`_INT_RE` or :data:`_FLOAT_RE`).  A column that casts whole is checked by value; only
    a column with an unreadable entry is matched against the pattern."""
    try:
        values = np.asarray(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        values = None
    if values is not None:
        present = ~np.asarray(pc.is_null(a).to_numpy(zero_copy_only=False), dtype=bool)
        bad = present & ~np.isfinite(values)  # "nan", "inf" cast but are no measurement
        if pattern == _INT_RE:
            bad |= present & np.isfinite(values) & (values != np.floor(values))
        if not bad.any():
            return values, bad
    ok = pc.match_substring_regex(a, pattern)
    vals = pc.cast(pc.if_else(ok, a, pa.scalar(None, a.type)), pa.float64())
    values = np.asarray(vals.to_numpy(zero_copy_only=False), dtype="float64")
    bad = np.asarray(pc.fill_null(pc.invert(ok), False).to_numpy(zero_copy_only=False), dtype=bool)
    return values, bad


def _validate(flat, offsets, rows, ln, ex, tails) -> np.ndarray:
    """For each of ``rows`` read with layout ``ln`` and ``ex`` extra category pieces: the first field (in record
    order) that does not parse, ``""`` when all do."""
    n = len(rows)
    first = np.full(n, "", dtype=object)
    lay = np.full(len(offsets), ln, dtype=np.int64)
    extra = np.zeros(len(offsets), dtype=np.int64)
    extra[rows] = ex
    names = [f for f in LEFT if f in INTS or f in FLOATS]
    if ex.max(initial=0) > 0:
        names.append("category")
    names += [f for f in tails[ln] if f in INTS or f in FLOATS]
    for name in names:
        if name == "category":
            bad = ~_category_pieces_ok(flat, offsets[rows], ex)
        else:
            vals = _take(flat, _position(name, offsets, lay, extra, rows, tails))
            _, bad = parse_numbers(vals, _INT_RE if name in INTS else _FLOAT_RE)
            bad |= np.asarray(pc.is_null(vals).to_numpy(zero_copy_only=False), dtype=bool)
        first[(first == "") & bad] = name
    return first


def _category_pieces_ok(flat, starts, ex) -> np.ndarray:
    """Whether the pieces of each split category read as the rest of ``h:m:s`` values."""
    ok = _matches(flat, starts + CATEGORY, _HEAD_RE)
    for k in range(1, int(ex.max()) + 1):
        has = ex >= k
        last = ex == k
        idx = np.where(has, starts + CATEGORY + k, 0)
        mid_ok = _matches(flat, idx, _MID_RE)
        last_ok = _matches(flat, idx, _LAST_RE)
        ok &= ~has | np.where(last, last_ok, mid_ok)
    return ok


def _matches(flat, idx, pattern) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.match_substring_regex(_take(flat, idx), pattern), False)
                      .to_numpy(zero_copy_only=False), dtype=bool)
