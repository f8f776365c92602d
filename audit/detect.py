"""Recognising an input file's format from its first bytes, and expanding folders into files."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from .textio import InputError

#: formats a reader exists for
READABLE = ("sacct", "sacct-json", "swf")

_SWF_LINE = re.compile(r"^\s*-?\d+(\s+-?\d+(\.\d+)?){17}\s*$")
_SACCT_JOBID = re.compile(r"^\d+(_\d+|_\[[^\]]*\])?(\+\d+)?(\.\S+)?(\||\^\|\^)")


def _head(path: Path, size: int = 65536) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(size)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                raw = fh.read(size)
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: corrupt gzip: {exc}") from exc
    return raw.decode("utf-8", errors="replace")


def detect_format(path) -> str:
    """One of ``sacct``, ``sacct-json``, ``swf``, ``prometheus-json``, ``toml``, ``csv``, ``json`` or ``unknown``."""
    p = Path(path)
    head = _head(p)
    stripped = head.lstrip()
    if p.suffix == ".toml":
        return "toml"
    if stripped.startswith("{") or stripped.startswith("["):
        if re.search(r'"jobs"\s*:\s*\[', head):
            return "sacct-json"
        if '"resultType"' in head:
            return "prometheus-json"
        return "json"
    lines = [ln for ln in head.splitlines() if ln.strip()][:20]
    if not lines:
        return "unknown"
    if lines[0].lstrip().startswith(";") or all(_SWF_LINE.match(ln) for ln in lines[:-1] or lines):
        return "swf"
    first = lines[0]
    if first.startswith("JobID|") or first.startswith("JobID^|^") or _SACCT_JOBID.match(first):
        return "sacct"
    if p.suffix == ".csv":
        return "csv"
    return "unknown"


def expand_paths(paths) -> list[Path]:
    """Files named directly, and every file below each named folder (sorted, hidden files left out)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and not any(
                part.startswith(".") for part in f.relative_to(p).parts)))
        elif p.exists():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    return out
