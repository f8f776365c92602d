"""Vectorised parsers for the unit-bearing strings schedulers print.

Each parser takes a string column (pyarrow array or pandas Series) and returns NumPy arrays:
values (``NaN`` / ``NaT`` where missing) and ``bad``, a boolean mask of entries that were present
but could not be parsed.  Empty strings and nulls are missing, not bad.  Memory sizes use binary
multiples, as Slurm does (``M`` = MiB).  The work is done by pyarrow compute kernels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

UNIT = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
LEGACY_PER_CPU_FLAG = 0x80000000

_DURATION = r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+(?:\.\d+)?)$"
_DAYS_HOURS = r"^(?P<d>\d+)-(?P<h>\d+)$"
_NULL_DURATIONS = ["UNLIMITED", "Partition_Limit", "INVALID", "NONE", "None", "Unknown"]


def arrow_str(col) -> pa.Array:
    """A pyarrow string array from a pyarrow array, chunked array, pandas Series or list."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if isinstance(col, pa.Array):
        return col if col.type == pa.string() else pc.cast(col, pa.string())
    if isinstance(col, pd.Series):
        return pa.array(col.astype("string"), type=pa.string())
    return pa.array(col, type=pa.string())


def present(a: pa.Array) -> np.ndarray:
    """True where the entry is a non-empty string."""
    return _np_bool(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(a)), 0))


def _np_bool(a) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def _np_float(a) -> np.ndarray:
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype="float64")


def _num(a) -> np.ndarray:
    """String array → float64 NumPy array; '' and null → NaN."""
    a = pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a)
    return _np_float(pc.cast(a, pa.float64()))


def _field(struct, name) -> pa.Array:
    return pc.struct_field(struct, name)


def parse_duration(col) -> tuple[np.ndarray, np.ndarray]:
    """Slurm durations ``[D-]HH:MM:SS``, ``MM:SS``, ``MM:SS.mmm``, ``D-HH``, bare minutes → seconds.

    ``UNLIMITED``, ``Partition_Limit``, ``INVALID``, ``NONE`` and ``Unknown`` are missing, not bad.
    """
    a = pc.utf8_trim_whitespace(arrow_str(col))
    pres = present(a)
    nulls = _np_bool(pc.is_in(a, value_set=pa.array(_NULL_DURATIONS)))
    ex = pc.extract_regex(a, _DURATION)
    d = np.nan_to_num(_num(_field(ex, "d")))
    h = np.nan_to_num(_num(_field(ex, "h")))
    val = d * 86400 + h * 3600 + _num(_field(ex, "m")) * 60 + _num(_field(ex, "s"))
    rest = np.flatnonzero(np.isnan(val) & pres & ~nulls)  # the other forms, on the entries still unread
    if len(rest):
        sub = pc.take(a, pa.array(rest, type=pa.int64()))
        dh = pc.extract_regex(sub, _DAYS_HOURS)
        other = _num(_field(dh, "d")) * 86400 + _num(_field(dh, "h")) * 3600
        bare = pc.extract_regex(sub, r"^(?P<m>\d+)$")
        val[rest] = np.where(np.isnan(other), _num(_field(bare, "m")) * 60, other)
    val[nulls] = np.nan
    bad = pres & ~nulls & np.isnan(val)
    return val, bad


def parse_size(col, default_unit: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Sizes such as ``499092K``, ``72.50M``, ``62.50G``, ``0`` → bytes; a bare number is in ``default_unit``."""
    a = pc.utf8_trim_whitespace(arrow_str(col))
    pres = present(a)
    ex = pc.extract_regex(a, r"^(?P<v>\d+(?:\.\d+)?)(?P<u>[BKMGTP]?)$")
    v = _num(_field(ex, "v"))
    mult = _unit_multiplier(_field(ex, "u"), default_unit)
    val = v * mult
    return val, pres & np.isnan(val)


def _unit_multiplier(units: pa.Array, default_unit: str) -> np.ndarray:
    u = np.asarray(pc.fill_null(units, "").to_numpy(zero_copy_only=False), dtype=object)
    out = np.full(len(u), float(UNIT[default_unit]))
    for key, mult in UNIT.items():
        if key:
            out[u == key] = mult
    return out


def parse_reqmem(col) -> dict[str, np.ndarray]:
    """Slurm ReqMem → ``bytes`` (the number as written), ``per`` ('c', 'n' or ''), ``legacy`` and ``bad``.

    ``4000Mc`` is per CPU, ``16000Mn`` per node, bare ``32G`` as printed by Slurm ≥ 21.08.  A number
    at or above 2**31 MB carries the legacy per-CPU flag bit (``2147486648Mn`` is 3000 MB per CPU).
    """
    a = pc.utf8_trim_whitespace(arrow_str(col))
    pres = present(a)
    ex = pc.extract_regex(a, r"^(?P<v>\d+(?:\.\d+)?)(?P<u>[KMGT]?)(?P<per>[cn]?)$")
    v = _num(_field(ex, "v"))
    units = _field(ex, "u")
    mult = _unit_multiplier(units, "M")  # Slurm's default memory unit is MB (MiB)
    legacy = (v >= LEGACY_PER_CPU_FLAG) & (mult == UNIT["M"])
    v = np.where(legacy, v - LEGACY_PER_CPU_FLAG, v)
    per = np.asarray(pc.fill_null(_field(ex, "per"), "").to_numpy(zero_copy_only=False), dtype=object)
    per = np.where(legacy, "c", per)
    val = v * mult
    return {"bytes": val, "per": per, "legacy": legacy, "bad": pres & np.isnan(val)}


def parse_int(col) -> tuple[np.ndarray, np.ndarray]:
    """Integers (possibly empty) → float64 (NaN where missing) with a bad mask."""
    a = pc.utf8_trim_whitespace(arrow_str(col))
    pres = present(a)
    if not _np_bool(pc.match_substring(a, "+")).any():
        # the usual column, every entry digits or empty: one cast, no regex
        try:
            cast = pc.cast(pc.if_else(pa.array(pres), a, pa.scalar(None, pa.string())), pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            cast = None
        if cast is not None:
            return np.where(pres, _np_float(pc.cast(cast, pa.float64())), np.nan), np.zeros(len(a), dtype=bool)
    ok = _np_bool(pc.match_substring_regex(a, r"^-?\d+$"))
    val = np.full(len(a), np.nan)
    if ok.any():
        val[ok] = _num(pc.filter(a, pa.array(ok)))
    return val, pres & ~ok


def parse_timestamp(col, timezone: str = "UTC") -> tuple[np.ndarray, np.ndarray]:
    """sacct timestamps ``YYYY-MM-DDTHH:MM:SS`` (local time in ``timezone``) or epoch seconds → UTC.

    Returns ``datetime64[s]`` values in UTC (NaT where missing).  ``Unknown``, ``None`` and ``0`` are
    missing, not bad.  Relative forms (``SLURM_TIME_FORMAT=relative``: ``Ystday 13:45``, ``Tomorr``…)
    cannot be placed on a calendar and are bad.
    """
    a = pc.utf8_trim_whitespace(arrow_str(col))
    pres = present(a)
    nulls = _np_bool(pc.is_in(a, value_set=pa.array(["Unknown", "None", "0", "N/A"])))
    spaced = _np_bool(pc.match_substring(a, " ")).any()
    iso = pc.strptime(pc.replace_substring(a, " ", "T") if spaced else a, format="%Y-%m-%dT%H:%M:%S", unit="s",
                      error_is_null=True)
    out = np.array(iso.to_numpy(zero_copy_only=False), dtype="datetime64[s]")
    if timezone.upper() != "UTC":
        local = pd.DatetimeIndex(out).tz_localize(timezone, ambiguous="NaT", nonexistent="NaT")
        out = local.tz_convert("UTC").tz_localize(None).to_numpy().astype("datetime64[s]")
    maybe = pres & np.isnat(out)  # only entries the ISO form did not read can be epoch seconds
    epoch_ok = np.zeros(len(a), dtype=bool)
    if maybe.any():
        epoch_ok = _np_bool(pc.match_substring_regex(a, r"^\d{9,11}$")) & maybe
    if epoch_ok.any():
        out[epoch_ok] = _num(pc.filter(a, pa.array(epoch_ok))).astype("int64").astype("datetime64[s]")
    # outside what a nanosecond timestamp holds (and no cluster's accounting): a corrupted year
    out[(out < np.datetime64("1900-01-01")) | (out > np.datetime64("2200-01-01"))] = np.datetime64("NaT")
    bad = pres & ~nulls & np.isnat(out)
    return out, bad


def tres_value(col, key: str) -> pa.Array:
    """The value string of ``key=`` in TRES strings such as ``cpu=8,mem=24000M,node=1`` (null when absent)."""
    a = arrow_str(col)
    pattern = r"(?:^|,)" + key.replace("/", r"\/") + r"=(?P<v>[^,]*)"
    hit = _np_bool(pc.match_substring(a, key + "="))  # a plain search first: the regex only where it can match
    if hit.all():
        return pc.struct_field(pc.extract_regex(a, pattern), "v")
    pick = np.full(len(a), -1, dtype=np.int64)
    rows = np.flatnonzero(hit)
    pick[rows] = np.arange(len(rows))
    found = pc.struct_field(pc.extract_regex(pc.take(a, pa.array(rows, type=pa.int64())), pattern), "v")
    return pc.take(found, pa.array(pick, mask=pick < 0))


def whole_number(text) -> int | None:
    """A count a scheduler printed (``64``, ``64.0``, `` 8 ``) as an int; None when it is not a number."""
    try:
        return int(float(str(text).strip()))
    except (TypeError, ValueError, OverflowError):
        return None


def compress_hostlist(names: list[str]) -> str:
    """Node names → a Slurm hostlist (``cn[001-003,007],gh001``), keeping the given prefixes and widths (a name
    without trailing digits stands as it is); the inverse of :func:`expand_hostlist`."""
    by_prefix: dict[tuple, list[int]] = {}
    order = []
    for n in names:
        k = len(n)
        while k and n[k - 1].isdigit():
            k -= 1
        key = (n[:k], len(n) - k) if k < len(n) else (n, 0)
        if key not in by_prefix:
            by_prefix[key] = []
            order.append(key)
        by_prefix[key].append(int(n[k:]) if key[1] else -1)
    out = []
    for prefix, width in order:
        nums = sorted(set(by_prefix[(prefix, width)]))
        if not width:
            out.append(prefix)
            continue
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        runs, a, b = [], nums[0], nums[0]
        for x in nums[1:]:
            if x == b + 1:
                b = x
            else:
                runs.append((a, b))
                a = b = x
        runs.append((a, b))
        body = ",".join(f"{x:0{width}d}" if x == y else f"{x:0{width}d}-{y:0{width}d}" for x, y in runs)
        out.append(f"{prefix}[{body}]")
    return ",".join(out)


def expand_hostlist(expr: str) -> list[str]:
    """Expand a Slurm hostlist such as ``d09n04s[01-02],d13n[03,05,07-08]`` into host names."""
    hosts: list[str] = []
    for part in _split_top(expr):
        hosts.extend(_expand_one(part))
    return hosts


def _split_top(expr: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in expr:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p]


def _expand_one(part: str) -> list[str]:
    i = part.find("[")
    if i < 0:
        return [part]
    j = part.index("]", i)
    prefix, body, rest = part[:i], part[i + 1 : j], part[j + 1 :]
    tails = _expand_one(rest) if rest else [""]
    out = []
    for item in body.split(","):
        if "-" in item:
            a, b = item.split("-", 1)
            out.extend(f"{prefix}{k:0{len(a)}d}{t}" for k in range(int(a), int(b) + 1) for t in tails)
        else:
            out.extend(f"{prefix}{item}{t}" for t in tails)
    return out


def expand_index_ranges(body: str) -> list[int]:
    """``9-11,13,16-20`` (optionally with a ``%4`` throttle or ``:2`` step) → task indices in order."""
    body = body.split("%", 1)[0]
    out: list[int] = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        step = 1
        if ":" in item:
            item, st = item.split(":", 1)
            step = int(st)
        if "-" in item:
            a, b = item.split("-", 1)
            out.extend(range(int(a), int(b) + 1, step))
        else:
            out.append(int(item))
    return out
