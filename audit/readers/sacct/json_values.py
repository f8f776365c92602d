"""Reading the values of one slurmdb (``sacct --json``) record: Slurm's number forms across data parser
versions, states, exit codes and TRES lists.  Each reader names the JSON path of a value it cannot read."""

from __future__ import annotations

import json
import math

from ...job_table import STATES
from .states import SYNONYMS

MIB = 1024**2
RAW_LIMIT = 2000
#: bounds that keep values inside nanosecond timestamps and Int64 columns
MAX_EPOCH = 2**33  # year 2242
MAX_INT = 2**62
#: Slurm's "not set" and "unlimited" sentinels in plain-integer parser versions
NO_VAL = {4294967294, 18446744073709551614}
INFINITE = {4294967295, 18446744073709551615}
SENTINEL_MIN = min(NO_VAL | INFINITE)
MEM_PER_CPU_FLAG = 1 << 63
LEGACY_MEM_PER_CPU_FLAG = 0x80000000
#: entries of a v0.0.40+ state list that are flags, not states
STATE_FLAGS = {"LAUNCH_FAILED", "UPDATE_DB", "RECONFIG_FAIL", "POWER_UP_NODE", "EXPEDITING"}
NON_USAGE_STEPS = ("batch", "extern", "interactive")


class RecordError(ValueError):
    """A record field that cannot be read: ``field`` is its JSON path."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason




def number(v, field: str) -> tuple[float | None, bool]:
    """A plain or ``{set, infinite, number}`` number → (value or None, infinite)."""
    if type(v) is int and v < SENTINEL_MIN:  # the common case, first
        return v, False
    if v is None:
        return None, False
    if isinstance(v, dict):
        if not v.get("set", True) and not v.get("infinite", False):
            return None, False
        if v.get("infinite", False):
            return None, True
        return number(v.get("number"), field)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RecordError(field, f"not a number: {short_value(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise RecordError(field, f"not a finite number: {v!r}")
    if v in INFINITE:
        return None, True
    if v in NO_VAL:
        return None, False
    return v, False


def value(v, field: str) -> float | None:
    """A number that is null when not set or unlimited."""
    return number(v, field)[0]


def text(v, field: str) -> str | None:
    """A string field; empty is null."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise RecordError(field, f"not a string: {short_value(v)}")
    v = v.strip()
    return v or None


def obj(v, field: str) -> dict:
    """An object field; missing is an empty object."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise RecordError(field, f"not an object: {short_value(v)}")
    return v


def seq(v, field: str) -> list:
    """A list field; missing is an empty list."""
    if v is None:
        return []
    if not isinstance(v, list):
        raise RecordError(field, f"not a list: {short_value(v)}")
    return v


def cpu_seconds(t: dict, key: str, field: str) -> float | None:
    """``{"seconds": s, "microseconds": us}`` → seconds."""
    part = obj(t.get(key), f"{field}.{key}")
    if not part:
        return None
    s = value(part.get("seconds"), f"{field}.{key}.seconds") or 0
    us = value(part.get("microseconds"), f"{field}.{key}.microseconds") or 0
    return float(s) + float(us) / 1e6


def epoch(v, field: str) -> float | None:
    """Epoch seconds; 0 means unknown."""
    t = value(v, field)
    if t and not 0 < t < MAX_EPOCH:
        raise RecordError(field, f"out of range: {t!r}")
    return t if t else None


def state_of(v, field: str) -> str | None:
    """The primary job state of a state string, list or ``{"current": …}`` object, canonical name."""
    if isinstance(v, dict):
        return state_of(v.get("current"), f"{field}.current")
    names = [v] if isinstance(v, str) or v is None else v
    if not isinstance(names, list):
        raise RecordError(field, f"not a state: {short_value(v)}")
    for name in names:
        if not isinstance(name, str):
            raise RecordError(field, f"not a state: {short_value(v)}")
        s = name.strip().upper()
        if not s or s in STATE_FLAGS:
            continue
        s = s.split()[0]  # "CANCELLED by 1234"
        s = SYNONYMS.get(s, s)
        if s not in STATES:
            raise RecordError(field, f"unknown state {name!r}")
        return s
    return None


def exit_of(v, field: str) -> tuple[float | None, float | None]:
    """(exit code, signal) from any version's exit-code form."""
    if v is None:
        return None, None
    if isinstance(v, int) and not isinstance(v, bool):
        return float((v >> 8) & 0xFF), float(v & 0x7F)  # raw wait status
    e = obj(v, field)
    code = value(e.get("return_code"), f"{field}.return_code")
    sig = obj(e.get("signal"), f"{field}.signal")
    signal = value(sig.get("id", sig.get("signal_id")), f"{field}.signal.id")
    if signal is None and code is not None:
        signal = 0
    return code, signal


def tres_of(v, field: str) -> dict:
    """A TRES list → ``{"cpu", "mem", "node", "gpus", "gpu_type", "present"}`` (mem as listed)."""
    entries = seq(v, field)
    out = {"cpu": None, "mem": None, "node": None, "gpus": None, "gpu_type": None, "present": bool(entries)}
    untyped, typed = None, {}
    for i, e in enumerate(entries):
        if (type(e) is dict and type(kind := e.get("type")) is str and kind
                and type(name := e.get("name")) is str and type(count := e.get("count")) is int
                and count < SENTINEL_MIN):
            pass  # well-formed entry: skip the field-by-field checks below
        else:
            e = obj(e, f"{field}[{i}]")
            kind = text(e.get("type"), f"{field}[{i}].type")
            name = text(e.get("name"), f"{field}[{i}].name") or ""
            count = value(e.get("count"), f"{field}[{i}].count")
            if kind is None:
                raise RecordError(f"{field}[{i}].type", "missing")
        if kind in ("cpu", "mem", "node") and not name:
            out[kind] = count
        elif kind == "gres" and (name == "gpu" or name.startswith("gpu:")):
            if name == "gpu":
                untyped = count
            else:
                gtype = name.split(":", 1)[1].split("(")[0]
                typed[gtype] = typed.get(gtype, 0) + (count or 0)
    if entries:
        out["gpus"] = untyped if untyped is not None else float(sum(typed.values()))
        out["gpu_type"] = "+".join(sorted(typed)) or None
    return out


def short_value(v) -> str:
    s = json.dumps(v) if not isinstance(v, str) else repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def raw_json(v) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)[:RAW_LIMIT]
