"""Accounting lines → records, and records' ``key=value`` messages → columns, with pyarrow kernels.

A line is ``MM/DD/YYYY HH:MM:SS;T;ID;message`` (OpenPBS ``accounting.c``, ``write_account_record``; the Torque
Administrator Guide's "Accounting records"): the stamp is the server's local time, ``T`` one letter, ``ID`` the job
(or reservation, or ``license``) id, and the message space-separated ``key=value`` pairs.  A value holding a space
is quoted with ``"`` (with ``'`` when it holds a ``"``; OpenPBS ``cpy_quote_value``), and PBS Pro always quotes
``account``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

#: a record's first three fields, as detection sees them (record types are letters; PBS Pro also writes lower-case
#: ones: ``a`` alter, ``s`` pruned start, ``u``/``c``/``e`` phased jobs, ``z``/``r`` suspend and resume, ``k``, ``p``)
RECORD = re.compile(r"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;[A-Za-z];[^;]*;")
_QUOTED = re.compile(r"=(\"[^\"]*\"|'[^']*')")
_SPACE_MARK = "\x1f"  # stands in for a space inside a quoted value while the message is split on spaces
_JOB_ID = r"^(?P<num>\d+)(?P<br>\[(?P<idx>\d*)\])?(?:\.(?P<server>.+))?$"


@dataclass
class Records:
    """The well-formed records of a file, in file order: 1-based ``line``, ``rtype`` (one letter), ``id`` (pyarrow
    strings), ``key`` (the id as an integer code, equal ids equal codes), ``job`` (the id is a job's: ``123``,
    ``123[4]``, ``123[]``, with or without ``.server``), ``parent`` (an array's own ``123[]``) and ``stamp`` (UTC,
    ``datetime64[s]``)."""

    line: np.ndarray
    rtype: np.ndarray
    id: pa.Array
    key: np.ndarray
    job: np.ndarray
    parent: np.ndarray
    stamp: np.ndarray

    def __len__(self) -> int:
        return len(self.line)


@dataclass
class Rejected:
    """Lines that are not records: 1-based line, the field that failed, the reason."""

    line: list
    field: list
    reason: list


#: the id is looked for in this many bytes after the stamp and type (a longer one is found the slow way)
ID_HEAD = 96
_CSV_BLOCK = 1 << 22


def read_lines(raw: bytes) -> pa.ChunkedArray:
    """The file's lines as one pyarrow string column, line ``i`` at position ``i - 1`` (no line after a final
    newline).  A file of plain ``\n``-separated UTF-8 goes through pyarrow's CSV reader (one column, no quoting),
    with no Python object per line; any other (carriage returns, bytes that are not UTF-8) line by line, with
    undecodable bytes kept visible as U+FFFD."""
    if not raw:
        return pa.chunked_array([pa.array([], pa.large_string())])
    if b"\r" not in raw and b"\x01" not in raw:
        try:
            table = pacsv.read_csv(
                pa.py_buffer(raw),
                read_options=pacsv.ReadOptions(column_names=["line"], block_size=_CSV_BLOCK),
                parse_options=pacsv.ParseOptions(delimiter="\x01", quote_char=False, double_quote=False,
                                                 escape_char=False, ignore_empty_lines=False),
                convert_options=pacsv.ConvertOptions(column_types={"line": pa.large_string()}, null_values=[],
                                                     strings_can_be_null=False))
            expected = raw.count(b"\n") + (not raw.endswith(b"\n"))
            if table.num_rows == expected:
                return table.column("line")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    lines = raw.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return pa.chunked_array([pa.array([ln[:-1] if ln.endswith("\r") else ln for ln in lines], pa.large_string())])


def to_records(lines: pa.ChunkedArray, timezone: str) -> tuple[Records, Rejected, int]:
    """Blank lines are structural (counted); a line without the four ``;``-separated parts and a one-letter type
    is an unknown layout; a stamp that is not a calendar time is a bad stamp.  Only each line's head is read
    here (the fixed-width stamp and type, then the id), as bytes; the messages are read for the records that
    need them (:func:`extract`)."""
    blank = _np_true(pc.match_substring_regex(lines, r"^\s*$"))
    data = np.flatnonzero(~blank)
    raw = pc.cast(lines, pa.large_binary())
    rows = pa.array(data, pa.int64())
    fixed = pc.take(pc.binary_slice(raw, 0, 22), rows).combine_chunks()
    layout_ok = _np_true(pc.match_substring_regex(fixed, r"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;[A-Za-z];$"))
    ident = pc.split_pattern(pc.take(pc.binary_slice(raw, 22, 22 + ID_HEAD), rows).combine_chunks(), ";",
                             max_splits=1)
    closed = _np_int(pc.list_value_length(ident)) == 2
    ident = pc.list_element(ident, 0)
    long_id = np.flatnonzero(layout_ok & ~closed)
    if len(long_id):  # an id longer than the head: split those lines whole
        whole = pc.split_pattern(pc.take(raw, pa.array(data[long_id], pa.int64())).combine_chunks(), ";",
                                 max_splits=3)
        width = _np_int(pc.list_value_length(whole))
        four = width == 4
        if four.any():
            closed[long_id[four]] = True
            mask = np.zeros(len(data), dtype=bool)
            mask[long_id[four]] = True
            third = (np.cumsum(width) - width)[four] + 2
            ident = pc.replace_with_mask(ident, pa.array(mask), pc.take(pc.list_flatten(whole), pa.array(third)))
    layout_ok &= closed
    stamp_s = pc.cast(pc.binary_slice(fixed, 0, 19), pa.large_string(), safe=False)
    rtype = pc.cast(pc.binary_slice(fixed, 20, 21), pa.large_string(), safe=False)
    parsed = pc.strptime(pc.if_else(pa.array(layout_ok), stamp_s, pa.scalar(None, pa.large_string())),
                         format="%m/%d/%Y %H:%M:%S", unit="s", error_is_null=True)
    stamp_ok = layout_ok & _np_true(pc.is_valid(parsed))
    rejected = Rejected([], [], [])
    for i in np.flatnonzero(~layout_ok).tolist():
        rejected.line.append(int(data[i]) + 1)
        rejected.field.append("line")
        rejected.reason.append("unknown record layout: not 'MM/DD/YYYY HH:MM:SS;T;ID;key=value …'")
    for i in np.flatnonzero(layout_ok & ~stamp_ok).tolist():
        rejected.line.append(int(data[i]) + 1)
        rejected.field.append("stamp")
        rejected.reason.append(f"cannot parse stamp {stamp_s[i].as_py()!r}")
    keep = pa.array(stamp_ok)
    stamps = np.asarray(pc.filter(parsed, keep).to_numpy(zero_copy_only=False), dtype="datetime64[s]")
    ids = pc.utf8_trim_whitespace(pc.cast(pc.filter(ident, keep), pa.string()))
    codes = pc.dictionary_encode(ids)
    letters = pc.dictionary_encode(pc.filter(rtype, keep))
    records = Records(
        line=data[stamp_ok] + 1,
        rtype=np.asarray(letters.dictionary.to_pylist(), dtype="U1")[_np_int(letters.indices)],
        id=ids,
        key=_np_int(codes.indices),
        job=_np_true(pc.match_substring_regex(ids, _JOB_ID)),
        parent=_np_true(pc.match_substring(ids, "[]")),
        stamp=local_to_utc(stamps, timezone),
    )
    return records, rejected, int(blank.sum())


def _np_int(a) -> np.ndarray:
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.int64)


def _np_true(a) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def local_to_utc(stamps: np.ndarray, timezone: str) -> np.ndarray:
    """Server-local wall-clock stamps → UTC.  In the hour a clock goes back twice, the first (summer-time) reading is
    taken; a stamp in the hour skipped in spring is moved forward to the first real instant."""
    if timezone.upper() == "UTC" or not len(stamps):
        return stamps
    local = pd.DatetimeIndex(stamps).tz_localize(timezone, ambiguous=np.ones(len(stamps), dtype=bool),
                                                 nonexistent="shift_forward")
    return local.tz_convert("UTC").tz_localize(None).to_numpy().astype("datetime64[s]")


#: records split at a time: the pieces of one batch are freed before the next (memory reused, not grown)
BATCH = 1 << 14


def extract(lines: pa.Array, keys) -> dict[str, pa.Array]:
    """For each of ``keys``, its value in each record line (null where the record lacks it; the last one wins when
    a key repeats), quotes taken off.  Lines are split on spaces once, with no regex per key: the message's tokens
    are ``key=value`` (a token without ``=`` is free text, as in some ``A`` records, and names nothing).  The
    header is no token of its own: the first pair's key reads ``HH:MM:SS;T;ID;key``, mended through its name."""
    if len(lines) <= BATCH:
        return _extract(lines, keys)
    parts = [_extract(lines.slice(a, BATCH), keys) for a in range(0, len(lines), BATCH)]
    return {k: pa.concat_arrays([p[k] for p in parts]) for k in keys}


def _extract(lines: pa.Array, keys) -> dict[str, pa.Array]:
    n = len(lines)
    lines = pc.fill_null(lines, "")
    key, value, parent = _pairs(lines)
    opened = _np_true(pc.or_(_opens(value, '"'), _opens(value, "'")))
    marked = bool(opened.any())
    if marked:  # values with spaces inside quotes: protect those spaces, and split those lines again
        rows = np.zeros(n, dtype=bool)
        rows[parent[opened]] = True
        at = np.flatnonzero(rows)
        fixed = [_QUOTED.sub(lambda m: "=" + m.group(1).replace(" ", _SPACE_MARK), s)
                 for s in pc.take(lines, pa.array(at, pa.int64())).to_pylist()]
        lines = pc.replace_with_mask(lines, pa.array(rows), pa.array(fixed, lines.type))
        key, value, parent = _pairs(lines)
    codes = pc.dictionary_encode(key)
    wanted = {k: j for j, k in enumerate(keys)}
    lookup = np.array([wanted.get(name.rsplit(";", 1)[-1], -1) for name in codes.dictionary.to_pylist()] + [-1],
                      dtype=np.int64)
    index = np.asarray(pc.fill_null(codes.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    which = np.where(_np_true(pc.is_valid(value)), lookup[index], -1)
    sel = np.flatnonzero(which >= 0)  # the tokens read, grouped by key (a radix sort of small codes)
    values = pc.take(value, pa.array(sel, pa.int64()))
    owner = parent[sel]
    which = which[sel].astype(np.int16)
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(keys) + 1))
    quoted = _np_true(pc.or_(pc.starts_with(values, '"'), pc.starts_with(values, "'")))
    out = {}
    for j, k in enumerate(keys):
        at = order[bounds[j]:bounds[j + 1]]
        if not len(at):
            out[k] = pa.nulls(n, pa.string())
            continue
        pick = np.full(n, -1, dtype=np.int64)
        pick[owner[at]] = at  # in file order: a key given twice keeps its last value
        col = pc.cast(pc.take(values, pa.array(pick, pa.int64(), mask=pick < 0)), pa.string())
        out[k] = _unquote(col, marked) if marked or quoted[at].any() else col
    return out


def _pairs(lines: pa.Array) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Every token of every line as ``key`` and ``value`` (null without ``=``), and the line it is on."""
    tokens = pc.split_pattern(lines, " ")
    count = _np_int(pc.list_value_length(tokens))
    parent = np.repeat(np.arange(len(count), dtype=np.int64), count)
    kv = pc.split_pattern(pc.list_flatten(tokens), "=", max_splits=1)
    nkv = _np_int(pc.list_value_length(kv))
    key = pc.list_element(kv, 0)
    two = nkv == 2
    value = pc.take(pc.list_flatten(kv), pa.array(np.where(two, np.cumsum(nkv) - 1, 0), pa.int64(), mask=~two))
    return key, value, parent


def _opens(value: pa.Array, quote: str) -> pa.Array:
    """A value that opens a quote and does not close it (its closing quote is past a space)."""
    return pc.and_(pc.starts_with(value, quote),
                   pc.or_(pc.equal(pc.utf8_length(value), 1), pc.invert(pc.ends_with(value, quote))))


def _unquote(col: pa.Array, marked: bool) -> pa.Array:
    if _np_true(pc.starts_with(col, '"')).any():
        col = pc.replace_substring_regex(col, r'^"(.*)"$', r"\1")
    if _np_true(pc.starts_with(col, "'")).any():
        col = pc.replace_substring_regex(col, r"^'(.*)'$", r"\1")
    if marked:
        col = pc.replace_substring(col, _SPACE_MARK, " ")
    return col


def parse_ids(ids: pa.Array) -> dict[str, np.ndarray]:
    """Job ids ``527685.m1.mason``, ``123[4].server`` → ``num``, ``index`` (the array index, '' when none),
    ``server`` ('' when none) and ``job_id`` (the id without the server: ``527685``, ``123[4]``)."""
    ex = pc.extract_regex(ids, _JOB_ID)

    def field(name):
        return np.asarray(pc.fill_null(pc.struct_field(ex, name), "").to_numpy(zero_copy_only=False), dtype=object)

    num, br, idx, server = field("num"), field("br"), field("idx"), field("server")
    return {"num": num, "index": idx, "server": server, "job_id": np.where(br != "", num + "[" + idx + "]", num)}
