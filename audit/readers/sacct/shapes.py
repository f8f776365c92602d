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


#: positions of the digits and of the separators in ``YYYY-MM-DDTHH:MM:SS``
_ISO_DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
_ISO_SEPS, _ISO_SEP_BYTES = np.array([4, 7, 10, 13, 16]), np.array([_DASH, _DASH, _T, _COLON, _COLON], np.uint8)
#: days in each month of a common year
_MONTH_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int16)


def _iso_seconds(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of 19 bytes ``YYYY-MM-DDTHH:MM:SS`` → seconds since the epoch and whether the row is of that shape with
    a year from 1901 to 2199, a date of the calendar and a clock time.  The day number is the proleptic Gregorian
    count (H. Hinnant, *chrono-Compatible Low-Level Date Algorithms*, ``days_from_civil``)."""
    d = table - np.uint8(48)  # a digit's value; any other byte wraps above 9
    ok = (d[:, _ISO_DIGITS].max(axis=1) <= 9) & (table[:, _ISO_SEPS] == _ISO_SEP_BYTES).all(axis=1)

    def num(i: int, width: int = 2) -> np.ndarray:  # small numbers: 16-bit arithmetic
        out = d[:, i].astype(np.int16)
        for k in range(1, width):
            out *= 10
            out += d[:, i + k]
        return out

    year, month, day = num(0, 4), num(5), num(8)
    hour, minute, sec = num(11), num(14), num(17)
    ok &= (year > 1900) & (year < 2200) & (month >= 1) & (month <= 12) & (hour < 24) & (minute < 60) & (sec < 60)
    month[~ok] = 1
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    ok &= (day >= 1) & (day <= _MONTH_DAYS[month - 1] + ((month == 2) & leap))
    y = year.astype(np.int32) - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * ((month + 9) % 12).astype(np.int32) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    clock = hour.astype(np.int32) * 3600 + minute.astype(np.int32) * 60 + sec
    secs = days.astype(np.int64) * 86400 + clock
    secs[~ok] = 0
    return secs, ok


def parse_iso_utc(col) -> tuple[np.ndarray, np.ndarray]:
    """:func:`audit.units.parse_timestamp` for UTC, with ``YYYY-MM-DDTHH:MM:SS`` read from the bytes (years 1901
    to 2199, valid calendar dates and clock times; anything else goes to the general parser).  The entries 19 bytes
    long are read as one table of bytes, a row per entry."""
    a = arrow_str(col)
    got = _bytes_of(a)
    if got is None:
        return parse_timestamp(a, "UTC")
    off, _ = got
    is19 = np.diff(off) == 19
    every = bool(is19.all())
    sub = a if every else a.filter(pa.array(is19))
    shape = np.zeros(len(a), dtype=bool)
    val = np.full(len(a), np.datetime64("NaT", "s"))
    if len(sub):
        sub_off, sub_data = _bytes_of(sub)
        secs, ok = _iso_seconds(sub_data[sub_off[0]: sub_off[-1]].reshape(len(sub), 19))
        got_val = secs.view("datetime64[s]")
        got_val[~ok] = np.datetime64("NaT", "s")
        if every:
            shape, val = ok, got_val
        else:
            shape[is19], val[is19] = ok, got_val
    return _with_rest(a, shape, val, lambda rest: parse_timestamp(rest, "UTC"))
