"""Splitting ``lsb.acct`` text into its fields without a Python object per field.

A record is one line; fields are separated by blanks; a string is in double quotes, a quote inside it doubled
(``"say ""hi"" twice"``), so a blank inside quotes does not separate.  The split is done on the bytes with NumPy: a
running parity of the quotes tells which blanks are inside a string.  A line with an odd number of quotes has a
string that never closes: its opening quote is found (a short scan of that line alone) and set aside, so the
lines after it split as they should, and the field that holds it is reported.

The fields are then one pyarrow string array over the file's bytes (no copy): entry ``2 k`` is field ``k``, the
odd entries the blanks between fields, so any column of fields (one per line) is a single ``take``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

QUOTE, NEWLINE = 0x22, 0x0A
BLANKS = (0x20, 0x09, 0x0D)  # space, tab, carriage return


@dataclass
class Tokens:
    """The fields of a block of whole lines (the block ends with a newline)."""

    data: bytes
    starts: np.ndarray  # byte offset of each field
    line_start: np.ndarray  # byte offset of each line
    line_end: np.ndarray  # byte offset of each line's newline
    first: np.ndarray  # per line: index of its first field
    count: np.ndarray  # per line: how many fields it has
    unclosed: np.ndarray  # per line: index of the field whose string never closes, -1 where none
    fields: pa.Array  # fields and the blanks between them, interleaved

    @property
    def n_lines(self) -> int:
        return len(self.line_start)

    def text(self, idx: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        """Field ``idx`` (one per entry) as written, quotes included; null where not ``valid``."""
        idx = np.asarray(idx, dtype=np.int64)
        if valid is None:
            return pc.take(self.fields, pa.array(2 * idx, type=pa.int64()))
        v = np.asarray(valid, dtype=bool)
        return pc.take(self.fields, pa.array(np.where(v, 2 * idx, 0), type=pa.int64(), mask=~v))

    def values(self, idx: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
        """Field ``idx`` as its value: a quoted string without its quotes and with doubled quotes undone."""
        return unquote(self.text(idx, valid))

    def quoted(self, idx: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """True where field ``idx`` (where ``valid``) is a quoted string."""
        raw = np.frombuffer(self.data, dtype=np.uint8)
        out = np.zeros(len(idx), dtype=bool)
        v = np.asarray(valid, dtype=bool)
        out[v] = raw[self.starts[np.asarray(idx)[v]]] == QUOTE
        return out

    def raw_line(self, i: int) -> str:
        return self.data[self.line_start[i]:self.line_end[i]].decode("utf-8", errors="replace").rstrip("\r")


def unquote(a: pa.Array) -> pa.Array:
    """``"a ""b"" c"`` → ``a "b" c``; an unquoted value stays as it is."""
    quoted = pc.fill_null(pc.starts_with(a, '"'), False)
    inner = pc.utf8_slice_codeunits(a, 1, -1)
    if pc.any(pc.match_substring(inner, '""')).as_py():
        inner = pc.replace_substring(inner, '""', '"')
    return pc.if_else(quoted, inner, a)


def tokenize(data: bytes) -> Tokens:
    """Split ``data`` (whole lines, the last one ending with a newline) into fields."""
    raw = np.frombuffer(data, dtype=np.uint8)
    is_newline = raw == NEWLINE
    newline = np.flatnonzero(is_newline)
    line_start = np.concatenate([[0], newline[:-1] + 1]).astype(np.int64)
    quote = raw == QUOTE
    inside = np.bitwise_xor.accumulate(quote.view(np.uint8)).view(bool)
    # a line with an odd number of quotes flips the parity at its newline
    parity = inside[newline]
    odd = np.flatnonzero(parity != np.concatenate([[False], parity[:-1]]))
    opened = np.array([line_start[i] + _unclosed_quote(data[line_start[i]:newline[i]]) for i in odd],
                      dtype=np.int64)
    if len(opened):
        quote[opened] = False  # the string that never closes: its quote no longer flips the parity
        inside = np.bitwise_xor.accumulate(quote.view(np.uint8)).view(bool)
    blank = raw == BLANKS[0]
    for other in BLANKS[1:]:
        if bytes([other]) in data:  # tabs and carriage returns are rare: one fast search, not a pass
            blank |= raw == other
    field = ~is_newline & (~blank | inside)
    edges = np.flatnonzero(field[1:] != field[:-1]) + 1
    if len(field) and field[0]:
        edges = np.concatenate([[0], edges])
    starts, ends = edges[0::2], edges[1::2]  # the block ends with a newline: every field closes
    first = np.searchsorted(starts, line_start)
    count = np.searchsorted(starts, newline) - first
    unclosed = np.full(len(line_start), -1, dtype=np.int64)
    if len(opened):
        unclosed[odd] = np.searchsorted(starts, opened, side="right") - 1
    offsets = np.empty(2 * len(starts) + 1, dtype=np.int64)
    offsets[0:-1:2] = starts
    offsets[1:-1:2] = ends
    offsets[-1] = ends[-1] if len(ends) else 0
    fields = pa.LargeStringArray.from_buffers(2 * len(starts), pa.py_buffer(offsets), pa.py_buffer(data))
    return Tokens(data=data, starts=starts, line_start=line_start, line_end=newline.astype(np.int64),
                  first=first, count=count, unclosed=unclosed, fields=fields)


def _unclosed_quote(line: bytes) -> int:
    """Offset in ``line`` of the opening quote of the string that never closes (its last quote if none is found).

    A string opens at a field's first byte and closes at a quote that is not doubled."""
    i, n = 0, len(line)
    while i < n:
        if line[i] in BLANKS:
            i += 1
            continue
        if line[i] == QUOTE:
            j = i + 1
            while True:
                k = line.find(b'"', j)
                if k < 0:
                    return i
                if k + 1 < n and line[k + 1] == QUOTE:
                    j = k + 2
                    continue
                break
            i = k + 1
        while i < n and line[i] not in BLANKS:
            i += 1
    return line.rfind(b'"')
