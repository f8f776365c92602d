"""Splitting ``sacct --parsable2`` text into fields: header, delimiter, field counts, line numbers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...ledger import FileLedger, Quarantine, record_quarantine
from ...textio import InputError
from .fields import KNOWN_ORDERS, normalise_header


@dataclass
class SplitLines:
    """Fields of the well-formed data lines, as pyarrow string columns, with their 1-based line numbers."""

    columns: dict[str, pa.Array]
    line_no: np.ndarray
    raw: pa.Array
    names: list[str]


def detect_delimiter(first_line: str) -> str:
    return "^|^" if "^|^" in first_line else "|"


def arrow_lines(raw: bytes) -> pa.Array:
    """The lines of a UTF-8 byte buffer as a pyarrow string array, without a Python string per line.

    Bytes that are not UTF-8 are replaced by U+FFFD (the line is kept, and its bad field quarantined).
    """
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    whole = pa.LargeStringArray.from_buffers(1, pa.py_buffer(np.array([0, len(raw)], dtype=np.int64)),
                                             pa.py_buffer(raw))
    try:
        whole.validate(full=True)
    except pa.ArrowInvalid:
        fixed = raw.decode("utf-8", errors="replace").encode("utf-8")
        whole = pa.LargeStringArray.from_buffers(1, pa.py_buffer(np.array([0, len(fixed)], dtype=np.int64)),
                                                 pa.py_buffer(fixed))
    if len(raw) == 0:
        return pa.array([], pa.string())
    lines = pc.cast(pc.list_flatten(pc.split_pattern(whole, pattern="\n")), pa.string())
    return pc.utf8_rtrim(lines, characters="\r") if b"\r" in raw else lines


def split_lines(raw: bytes, file: str, ledger: FileLedger, quarantine: Quarantine,
                fields: list[str] | None = None) -> SplitLines:
    """Tokenise every line; count blank and header lines as structural; quarantine wrong field counts."""
    lines = arrow_lines(raw)
    n_all = len(lines)
    line_no = np.arange(1, n_all + 1)
    blank = np.asarray(pc.or_(pc.equal(pc.binary_length(lines), 0), pc.utf8_is_space(lines)), dtype=bool) \
        if n_all else np.zeros(0, bool)
    nonblank = np.flatnonzero(~blank)
    if len(nonblank) == 0:
        ledger.structural += n_all
        return SplitLines({}, np.zeros(0, int), pa.array([], pa.string()), list(fields or []))
    first = lines[int(nonblank[0])].as_py()
    delim = detect_delimiter(first)
    first_tokens = first.split(delim)
    structural = blank.copy()
    if first_tokens[0].strip().lower() == "jobid":
        names = normalise_header(first_tokens)
        structural[nonblank[0]] = True
    elif fields:
        names = normalise_header(list(fields))
    elif len(first_tokens) in KNOWN_ORDERS:
        names = list(KNOWN_ORDERS[len(first_tokens)])
    else:
        raise InputError(
            f"{file}: line {nonblank[0] + 1}: no header line and {len(first_tokens)} fields, which matches no known "
            "sacct field order; rerun sacct without --noheader or name the fields"
        )
    # repeated header lines (concatenated dumps) are structural too
    is_header = np.asarray(pc.starts_with(lines, pattern="JobID" + delim), dtype=bool) & ~blank
    structural |= is_header
    ledger.structural += int(structural.sum())
    keep = ~structural
    data = lines.filter(pa.array(keep))
    data_no = line_no[keep]
    ledger.read += len(data)
    tokens = pc.split_pattern(data, pattern=delim)
    counts = np.asarray(pc.list_value_length(tokens), dtype=int)
    ncol = len(names)
    good = counts == ncol
    if "JobName" in names and names[-1] == "JobName" and (counts > ncol).any():
        tokens, good = _rejoin_job_names(tokens, counts, ncol, delim, good)
    for i in np.flatnonzero(~good):
        record_quarantine(ledger, quarantine, int(data_no[i]), "line",
                          f"expected {ncol} fields, got {int(counts[i])}", data[int(i)].as_py())
    good_arr = pa.array(good)
    if not good.all():  # filtering copies every field: only when some line was set aside
        tokens = tokens.filter(good_arr)
    flat = pc.list_flatten(tokens)
    n = len(tokens)
    columns = {}
    for k, name in enumerate(names):
        if name in columns:
            continue
        columns[name] = flat.take(pa.array(np.arange(k, n * ncol, ncol, dtype=np.int64))) if n else \
            pa.array([], pa.string())
    return SplitLines(columns, data_no[good], data if good.all() else data.filter(good_arr), names)


def _rejoin_job_names(tokens: pa.Array, counts: np.ndarray, ncol: int, delim: str, good: np.ndarray):
    """A job name containing the delimiter splits into extra fields; when JobName is last, join them back."""
    rows = tokens.to_pylist()
    for i in np.flatnonzero(counts > ncol):
        row = rows[i]
        rows[i] = row[: ncol - 1] + [delim.join(row[ncol - 1 :])]
    good = good | (counts > ncol)
    return pa.array(rows, type=pa.list_(pa.string())), good
