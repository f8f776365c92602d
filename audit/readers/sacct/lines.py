"""Splitting ``sacct`` text into fields: header, delimiter, field counts, line numbers.

sacct prints ``--parsable2`` lines (fields joined by ``|``), ``--parsable`` / ``-p`` lines (the same with a
trailing ``|``) and joins fields with any ``--delimiter`` given; Open XDMoD's dumps use ``^|^``.  A first
line made of sacct field names, in any order and any case, is the header; without one, the fields are the
names given, or a known order recognised by its field count.

Two ways to the same columns: a file whose every line is a data line of the header's width (the usual
export) is parsed by pyarrow's CSV reader straight from its bytes, with no Python object per line; any
other file (blank lines, lines of another width, carriage returns, bytes that are not UTF-8, a delimiter of
several characters) line by line, each line kept for the quarantine.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ...ledger import FileLedger, Quarantine, record_quarantine
from ...textio import InputError, read_bytes
from .fields import KNOWN_ORDERS, is_header, normalise_header

#: the CSV reader's block: large enough that a million lines make few chunks, small enough to share out
CSV_BLOCK = 1 << 22


@dataclass
class SplitLines:
    """Fields of the well-formed data lines, as pyarrow string columns (arrays or chunked arrays), with
    their 1-based line numbers.  ``raw`` holds each line's text (line-by-line path); the CSV path keeps
    every field instead (``tokens``, in line order) and rebuilds a line only when it is quarantined."""

    columns: dict
    line_no: np.ndarray
    names: list[str]
    delimiter: str = "|"
    raw: pa.Array | None = None
    tokens: list | None = None

    def raw_line(self, i: int) -> str:
        """The text of data line ``i`` (a position in the columns), as read."""
        if self.raw is not None:
            return self.raw[int(i)].as_py()
        return self.delimiter.join(t[int(i)].as_py() for t in self.tokens)


@dataclass(frozen=True)
class Layout:
    """How a dump's lines are laid out: the delimiter, the field names, whether the first non-blank line
    is a header, and whether every line ends with a trailing delimiter (``sacct -p``)."""

    delimiter: str
    names: list[str]
    header: bool
    trailing: bool


def detect_delimiter(first_line: str) -> str:
    return "^|^" if "^|^" in first_line else "|"


def layout_of(first: str, file: str, line: int, fields: list[str] | None = None,
              delimiter: str | None = None) -> Layout:
    """The layout told by the first non-blank line (``line``, 1-based)."""
    delim = delimiter or detect_delimiter(first)
    tokens = first.split(delim)
    if is_header(tokens):
        trailing = len(tokens) > 1 and tokens[-1].strip() == ""
        names = normalise_header(tokens[:-1] if trailing else tokens)
        return Layout(delim, names, True, trailing)
    if fields:
        names = normalise_header(list(fields))
        return Layout(delim, names, False, len(tokens) == len(names) + 1 and tokens[-1] == "")
    for width, trailing in ((len(tokens), False), (len(tokens) - 1, True)):
        if width in KNOWN_ORDERS and (not trailing or tokens[-1] == ""):
            return Layout(delim, list(KNOWN_ORDERS[width]), False, trailing)
    raise InputError(
        f"{file}: line {line}: no header line and {len(tokens)} fields (delimiter {delim!r}), which matches no "
        "known sacct field order; rerun sacct without --noheader, name the fields, or give the delimiter"
    )


def split_lines(raw: bytes, file: str, ledger: FileLedger, quarantine: Quarantine,
                fields: list[str] | None = None, delimiter: str | None = None) -> SplitLines:
    """Tokenise every line; count blank and header lines as structural; quarantine wrong field counts."""
    fast = _split_csv(raw, file, ledger, fields, delimiter)
    if fast is not None:
        return fast
    return _split_by_line(raw, file, ledger, quarantine, fields, delimiter)


def split_file(path, file: str, ledger: FileLedger, quarantine: Quarantine, fields: list[str] | None = None,
               delimiter: str | None = None) -> SplitLines:
    """:func:`split_lines` of a file.  A plain file is handed to the CSV reader mapped into memory (its pages are
    the operating system's file cache: no copy of the file is made); a file that needs the line-by-line path, or
    is compressed, is read whole (:func:`audit.textio.read_bytes`)."""
    mapped = _mapped(path)
    if mapped is not None:
        try:
            fast = _split_csv(mapped, file, ledger, fields, delimiter)
        finally:
            _close(mapped)
        if fast is not None:
            return fast
        return _split_by_line(read_bytes(path), file, ledger, quarantine, fields, delimiter)
    return split_lines(read_bytes(path), file, ledger, quarantine, fields, delimiter)


def _mapped(path) -> mmap.mmap | None:
    """The file mapped read-only; None when it cannot be (empty, not a regular file, unreadable: the ordinary read
    then says why) or is gzip-compressed."""
    try:
        with open(Path(path), "rb") as fh:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    if mapped[:2] == b"\x1f\x8b":
        mapped.close()
        return None
    return mapped


def _close(mapped: mmap.mmap) -> None:
    try:
        mapped.close()
    except BufferError:  # a view of it is still held: the mapping goes when that view does
        pass


def _split_csv(raw, file: str, ledger: FileLedger, fields, delimiter) -> SplitLines | None:
    """The CSV reader's path, or None when the file needs the line-by-line one (see the module text).  ``raw`` is
    the file's bytes (``bytes`` or a memory map)."""
    if not len(raw) or raw[:1] == b"\n" or raw.find(b"\r") >= 0:
        return None
    end = raw.find(b"\n")
    try:
        first = raw[: end if end >= 0 else len(raw)].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not first.strip():
        return None
    layout = layout_of(first, file, 1, fields, delimiter)
    width = len(layout.names) + layout.trailing
    if len(layout.delimiter) != 1 or width < 2:
        return None
    invalid: list = []

    def refuse(row) -> str:
        invalid.append(row)
        return "skip"

    cols = [f"f{k}" for k in range(width)]
    try:
        table = pacsv.read_csv(
            pa.py_buffer(raw),
            read_options=pacsv.ReadOptions(column_names=cols, block_size=CSV_BLOCK),
            parse_options=pacsv.ParseOptions(delimiter=layout.delimiter, quote_char=False, double_quote=False,
                                             escape_char=False, newlines_in_values=False, ignore_empty_lines=False,
                                             invalid_row_handler=refuse),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(cols, pa.string()),
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if invalid:
        return None
    # one contiguous array per field (each field's chunks freed as it is joined): later kernels and takes
    # then work on plain arrays, and the fields of the CSV table are not kept twice
    n_rows = table.num_rows
    tokens = table.columns
    del table
    for k in range(len(tokens)):
        tokens[k] = tokens[k].combine_chunks()
    if _has_blank_line(tokens):
        return None
    line_no = np.arange(1, n_rows + 1)
    if layout.header:
        tokens = [t.slice(1) for t in tokens]
        line_no = line_no[1:]
        ledger.structural += 1
        head = first.split(layout.delimiter)
        again = np.asarray(pc.and_(pc.equal(tokens[0], head[0]), pc.equal(tokens[1], head[1])), dtype=bool)
        if again.any():  # concatenated dumps repeat the header
            keep = pa.array(~again)
            tokens = [t.filter(keep) for t in tokens]
            line_no = line_no[~again]
            ledger.structural += int(again.sum())
    ledger.read += len(line_no)
    columns = {}
    for k, name in enumerate(layout.names):
        columns.setdefault(name, tokens[k])
    return SplitLines(columns, line_no, layout.names, layout.delimiter, tokens=tokens)


def _has_blank_line(tokens: list) -> bool:
    """Whether a row is a blank line (the CSV reader reads one as a row of empty fields; the line-by-line path counts
    it as structural).  Only rows whose first field is empty are looked at."""
    blank = _empty(tokens[0])
    if not blank.any():
        return False
    for t in tokens[1:]:
        blank &= _empty(t)
    return bool(blank.any())


def _empty(a: pa.Array) -> np.ndarray:
    """Where the entries of a string array are empty, from its offsets."""
    off = np.frombuffer(a.buffers()[1], dtype=np.int32)[a.offset: a.offset + len(a) + 1]
    return off[1:] == off[:-1]


def take_rows(col, idx):
    """Rows ``idx`` (increasing positions) of a column; the column itself when they are all of its rows, as for a
    dump of allocation lines only, where every line is a job (no copy)."""
    n = len(col)
    if len(idx) == n and (n == 0 or (int(idx[0]) == 0 and int(idx[-1]) == n - 1 and bool((np.diff(idx) > 0).all()))):
        return col
    return col.take(pa.array(idx, type=pa.int64()) if isinstance(idx, np.ndarray) else idx)


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


def _split_by_line(raw: bytes, file: str, ledger: FileLedger, quarantine: Quarantine, fields, delimiter) -> SplitLines:
    lines = arrow_lines(raw)
    n_all = len(lines)
    line_no = np.arange(1, n_all + 1)
    blank = np.asarray(pc.or_(pc.equal(pc.binary_length(lines), 0), pc.utf8_is_space(lines)), dtype=bool) \
        if n_all else np.zeros(0, bool)
    nonblank = np.flatnonzero(~blank)
    if len(nonblank) == 0:
        ledger.structural += n_all
        return SplitLines({}, np.zeros(0, int), list(fields or []), delimiter or "|", raw=pa.array([], pa.string()))
    first = lines[int(nonblank[0])].as_py()
    layout = layout_of(first, file, int(nonblank[0]) + 1, fields, delimiter)
    delim, names = layout.delimiter, layout.names
    structural = blank.copy()
    if layout.header:
        # the header, and its repetitions in concatenated dumps
        structural |= np.asarray(pc.fill_null(pc.equal(lines, first), False), dtype=bool)
    ledger.structural += int(structural.sum())
    keep = ~structural
    data = lines.filter(pa.array(keep))
    data_no = line_no[keep]
    ledger.read += len(data)
    tokens = pc.split_pattern(data, pattern=delim)
    counts = np.asarray(pc.list_value_length(tokens), dtype=int)
    ncol = len(names) + layout.trailing
    good = counts == ncol  # ``-p`` lines carry one empty field after the last
    if "JobName" in names and names[-1] == "JobName" and (counts > ncol).any():
        tokens, good = _rejoin_job_names(tokens, counts, ncol, delim, good, layout.trailing)
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
    return SplitLines(columns, data_no[good], names, delim, raw=data if good.all() else data.filter(good_arr))


def _rejoin_job_names(tokens: pa.Array, counts: np.ndarray, ncol: int, delim: str, good: np.ndarray,
                      trailing: bool = False):
    """A job name containing the delimiter splits into extra fields; when JobName is last, join them back."""
    rows = tokens.to_pylist()
    last = ncol - 1 - trailing
    for i in np.flatnonzero(counts > ncol):
        row = rows[i]
        end = len(row) - trailing
        rows[i] = row[:last] + [delim.join(row[last:end])] + row[end:]
    good = good | (counts > ncol)
    return pa.array(rows, type=pa.list_(pa.string())), good
