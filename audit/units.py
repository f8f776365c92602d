"""Vectorised parsers for the unit-bearing strings schedulers print.

Each parser takes a pandas Series of strings and returns ``(values, bad)`` where ``bad`` is a
boolean mask of entries that were present but could not be parsed.  Empty strings and nulls are
missing (null value, not bad).  Memory sizes use binary multiples, as Slurm does (``M`` = MiB).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

UNIT = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}

_DURATION = r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+(?:\.\d+)?)$"


def _present(s: pd.Series) -> pd.Series:
    return s.notna() & (s.astype("string").str.strip() != "")


def parse_duration(s: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Slurm durations ``[D-]HH:MM:SS``, ``MM:SS``, ``MM:SS.mmm``, ``D-HH`` → float seconds.

    ``UNLIMITED``, ``Partition_Limit``, ``INVALID`` and ``NONE`` are null and not bad.
    """
    s = s.astype("string").str.strip()
    present = _present(s)
    null_words = s.str.upper().isin(["UNLIMITED", "PARTITION_LIMIT", "INVALID", "NONE", "UNKNOWN"]).fillna(False)
    ex = s.str.extract(_DURATION)
    # D-HH form without minutes ("2-12") and bare minutes are also valid Slurm time limits
    dh = s.str.extract(r"^(?P<d>\d+)-(?P<h>\d+)$")
    bare_min = s.str.extract(r"^(?P<m>\d+)$")
    d = pd.to_numeric(ex["d"]).fillna(0)
    h = pd.to_numeric(ex["h"]).fillna(0)
    m = pd.to_numeric(ex["m"])
    sec = pd.to_numeric(ex["s"])
    val = d * 86400 + h * 3600 + m * 60 + sec
    val = val.where(ex["m"].notna())
    dhv = pd.to_numeric(dh["d"]) * 86400 + pd.to_numeric(dh["h"]) * 3600
    val = val.fillna(dhv)
    val = val.fillna(pd.to_numeric(bare_min["m"]) * 60)
    val = val.where(~null_words)
    bad = present & ~null_words & val.isna()
    return val.astype("Float64"), bad.fillna(False).astype(bool)


def parse_size(s: pd.Series, default_unit: str = "") -> tuple[pd.Series, pd.Series]:
    """Sizes such as ``499092K``, ``72.50M``, ``62.50G``, ``0`` → bytes (float).

    A bare number is read in ``default_unit``.
    """
    s = s.astype("string").str.strip()
    present = _present(s)
    ex = s.str.extract(r"^(?P<v>\d+(?:\.\d+)?)(?P<u>[BKMGTP]?)$", flags=0)
    v = pd.to_numeric(ex["v"])
    u = ex["u"].fillna("").replace("", default_unit)
    mult = u.map(UNIT).astype("float64")
    val = v * mult
    bad = present & val.isna()
    return val.astype("Float64"), bad.fillna(False).astype(bool)


LEGACY_PER_CPU_FLAG = 0x80000000


def parse_reqmem(s: pd.Series) -> pd.DataFrame:
    """Slurm ReqMem → columns ``bytes`` (the number as written), ``per`` ('c', 'n' or ''), ``legacy``, ``bad``.

    ``4000Mc`` is per CPU, ``16000Mn`` per node, bare ``32G`` as printed by Slurm ≥ 21.08.  A number
    at or above 2**31 MB with the ``n`` suffix carries the legacy per-CPU flag bit (``2147486648Mn`` is
    3000 MB per CPU).
    """
    s = s.astype("string").str.strip()
    present = _present(s)
    ex = s.str.extract(r"^(?P<v>\d+(?:\.\d+)?)(?P<u>[KMGT]?)(?P<per>[cn]?)$")
    v = pd.to_numeric(ex["v"])
    unit = ex["u"].fillna("").replace("", "M")  # Slurm's default memory unit is MB (MiB)
    legacy = (v >= LEGACY_PER_CPU_FLAG) & (unit == "M")
    v = v.where(~legacy, v - LEGACY_PER_CPU_FLAG)
    per = ex["per"].fillna("").where(~legacy, "c")
    out = pd.DataFrame(
        {
            "bytes": (v * unit.map(UNIT).astype("float64")).astype("Float64"),
            "per": per.astype("string"),
            "legacy": legacy.fillna(False).astype(bool),
        }
    )
    out["bad"] = (present & out["bytes"].isna()).fillna(False).astype(bool)
    return out


def parse_int(s: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Integers (possibly empty) → Int64 with a bad mask."""
    s = s.astype("string").str.strip()
    present = _present(s)
    ok = s.str.fullmatch(r"-?\d+").fillna(False)
    val = pd.to_numeric(s.where(ok), errors="coerce").astype("Int64")
    return val, (present & ~ok).fillna(False).astype(bool)


def parse_timestamp(s: pd.Series, timezone: str = "UTC") -> tuple[pd.Series, pd.Series]:
    """sacct timestamps ``YYYY-MM-DDTHH:MM:SS`` (local time in ``timezone``) or epoch seconds → UTC.

    ``Unknown``, ``None`` and ``0`` are null and not bad.  Relative forms (``SLURM_TIME_FORMAT=relative``:
    ``Ystday 13:45``, ``Tomorr``…) cannot be placed on a calendar and are bad.
    """
    s = s.astype("string").str.strip()
    present = _present(s)
    null_words = s.isin(["Unknown", "None", "0", "N/A"]).fillna(False)
    iso = s.str.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}").fillna(False)
    epoch = s.str.fullmatch(r"\d{9,11}").fillna(False)
    out = pd.Series(pd.NaT, index=s.index, dtype="datetime64[ns, UTC]")
    if iso.any():
        local = pd.to_datetime(s[iso].str.replace(" ", "T", regex=False), format="%Y-%m-%dT%H:%M:%S", errors="coerce")
        if timezone.upper() == "UTC":
            out[iso] = local.dt.tz_localize("UTC")
        else:
            out[iso] = local.dt.tz_localize(timezone, ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC")
    if epoch.any():
        out[epoch] = pd.to_datetime(pd.to_numeric(s[epoch]), unit="s", utc=True)
    bad = present & ~null_words & out.isna()
    return out, bad.fillna(False).astype(bool)


def expand_hostlist(expr: str) -> list[str]:
    """Expand a Slurm hostlist such as ``d09n04s[01-02],d13n[03,05,07-08]`` into host names."""
    hosts: list[str] = []
    for part in _split_top(expr):
        hosts.extend(_expand_one(part))
    return hosts


def _split_top(expr: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
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
            width = len(a)
            out.extend(f"{prefix}{k:0{width}d}{t}" for k in range(int(a), int(b) + 1) for t in tails)
        else:
            out.extend(f"{prefix}{item}{t}" for t in tails)
    return out


def expand_index_ranges(body: str) -> list[int]:
    """``9-11,13,16-20`` (optionally with ``%4`` throttle or ``:2`` step) → sorted task indices."""
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


def as_int64(values: pd.Series) -> pd.Series:
    """Round a float Series to nullable Int64."""
    return pd.Series(np.round(values.astype("float64")), index=values.index).astype("Int64")
