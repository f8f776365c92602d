"""Reading the fixed shapes sacct prints most (``HH:MM:SS``, ``D-HH:MM:SS``, ``YYYY-MM-DDTHH:MM:SS``) straight
from the bytes of a pyarrow string column, with NumPy, no regex.

Entries of any other shape (``MM:SS.mmm``, ``D-HH``, ``Unknown``, epoch seconds, spaces, a bad value) are
handed to the general parsers of :mod:`audit.units` (only those entries), so every entry reads as it would
there, and a bad one is flagged the same way.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...units import arrow_str, parse_duration, parse_timestamp

_COLON, _DASH, _T = ord(":"), ord("-"), ord("T")
_MAX_DAY_DIGITS = 4


def _bytes_of(a: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and end offsets of each entry and the data bytes of a null-free ``string`` array; else None."""
    if a.type != pa.string() or a.null_count or len(a) == 0:
        return None
    _, off_buf, data_buf = a.buffers()
    if data_buf is None:
        return None
    off = np.frombuffer(off_buf, dtype=np.int32)[a.offset: a.offset + len(a) + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8)
    if len(data) == 0:  # every entry empty
        return None
    return off, data


class _Bytes:
    """Bytes at fixed positions of every entry (from its start or its end); 0 where the entry is too short."""

    def __init__(self, off: np.ndarray, data: np.ndarray):
        self.start, self.end = off[:-1], off[1:]
        self.length = self.end - self.start
        self.data = data

    def from_end(self, k: int) -> np.ndarray:
        ok = self.length >= k
        return np.where(ok, self.data[np.where(ok, self.end - k, 0)], 0)

    def from_start(self, k: int) -> np.ndarray:
        ok = self.length > k
        return np.where(ok, self.data[np.where(ok, self.start + k, 0)], 0)


def _digit(c: np.ndarray) -> np.ndarray:
    return (c >= 48) & (c <= 57)


def _num(*cs: np.ndarray) -> np.ndarray:
    out = np.zeros(len(cs[0]), dtype=np.int64)
    for c in cs:
        out = out * 10 + (c.astype(np.int64) - 48)
    return out


def _with_rest(a: pa.Array, fast: np.ndarray, val: np.ndarray, parse) -> tuple[np.ndarray, np.ndarray]:
    """Fill the entries outside the fast shape with ``parse`` (values and bad mask)."""
    bad = np.zeros(len(a), dtype=bool)
    rest = np.flatnonzero(~fast)
    if len(rest):
        v, b = parse(a.take(pa.array(rest, type=pa.int64())))
        val[rest] = v
        bad[rest] = b
    return val, bad


def plain_numbers(a: pa.Array) -> bool:
    """Whether every entry of a string array is one or more ASCII digits (no nulls)."""
    got = _bytes_of(a)
    if got is None:
        return False
    off, data = got
    return bool((np.diff(off) > 0).all()) and bool(_digit(data[off[0]: off[-1]]).all())


def parse_clock(col) -> tuple[np.ndarray, np.ndarray]:
    """:func:`audit.units.parse_duration`, with ``HH:MM:SS`` and ``D-HH:MM:SS`` read from the bytes."""
    a = arrow_str(col)
    got = _bytes_of(a)
    if got is None:
        return parse_duration(a)
    b = _Bytes(*got)
    c = {k: b.from_end(k) for k in range(1, 10)}
    shape = (b.length >= 8) & (c[3] == _COLON) & (c[6] == _COLON)
    for k in (1, 2, 4, 5, 7, 8):
        shape &= _digit(c[k])
    hms = _num(c[8], c[7]) * 3600 + _num(c[5], c[4]) * 60 + _num(c[2], c[1])
    fast = shape & (b.length == 8)
    n_day = b.length - 9
    dayed = shape & (n_day >= 1) & (n_day <= _MAX_DAY_DIGITS) & (c[9] == _DASH)
    days = np.zeros(len(a), dtype=np.int64)
    for j in range(_MAX_DAY_DIGITS):  # the day digits, from the right
        has = dayed & (n_day > j)
        cj = np.where(has, b.data[np.where(has, b.end - 10 - j, 0)], 48)
        dayed &= ~has | _digit(cj)
        days += (cj.astype(np.int64) - 48) * 10**j
    fast |= dayed
    val = np.where(fast, (days * 86400 + hms).astype(np.float64), np.nan)
    return _with_rest(a, fast, val, parse_duration)


def parse_iso_utc(col) -> tuple[np.ndarray, np.ndarray]:
    """:func:`audit.units.parse_timestamp` for UTC, with ``YYYY-MM-DDTHH:MM:SS`` read from the bytes (years 1901
    to 2199, valid calendar dates and clock times; anything else goes to the general parser)."""
    a = arrow_str(col)
    got = _bytes_of(a)
    if got is None:
        return parse_timestamp(a, "UTC")
    off, data = got
    b = _Bytes(off, data)
    if bool((b.length == 19).all()):  # every entry 19 bytes long: the bytes as a table, one row per entry
        table = data[off[0]: off[-1]].reshape(len(a), 19)
        c = [table[:, k] for k in range(19)]
    else:
        c = [b.from_start(k) for k in range(19)]
    shape = (b.length == 19) & (c[4] == _DASH) & (c[7] == _DASH) & (c[10] == _T) & (c[13] == _COLON) \
        & (c[16] == _COLON)
    for k in (0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18):
        shape &= _digit(c[k])
    year, month, day = _num(*c[0:4]), _num(c[5], c[6]), _num(c[8], c[9])
    hour, minute, sec = _num(c[11], c[12]), _num(c[14], c[15]), _num(c[17], c[18])
    shape &= (year > 1900) & (year < 2200) & (month >= 1) & (month <= 12) & (day >= 1) & (hour < 24) \
        & (minute < 60) & (sec < 60)
    months = np.where(shape, (year - 1970) * 12 + month - 1, 0).astype("datetime64[M]")
    dates = months.astype("datetime64[D]") + np.where(shape, day - 1, 0).astype("timedelta64[D]")
    shape &= dates.astype("datetime64[M]") == months  # the day exists in its month
    secs = dates.astype("datetime64[s]") + (hour * 3600 + minute * 60 + sec).astype("timedelta64[s]")
    val = np.where(shape, secs, np.datetime64("NaT", "s"))
    return _with_rest(a, shape, val, lambda sub: parse_timestamp(sub, "UTC"))
