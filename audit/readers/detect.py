"""Recognising an input file's format from its first bytes, and expanding folders into files."""

from __future__ import annotations

import re
from pathlib import Path

from ..textio import InputError, read_head
from .lsf import looks_like_lsf
from .pbs import looks_like_pbs
from .sacct.fields import is_header
from .sge import looks_like_sge

#: formats whose reader yields jobs (the canonical job table)
READABLE = ("sacct", "sacct-json", "swf", "pbs", "lsf", "sge", "k8s-pods", "alibaba-pods")
#: formats whose reader yields telemetry samples or GPU holds (joined to jobs after reading)
TELEMETRY = ("prometheus-json", "prometheus-text", "gpu-index", "cgroup-ttar", "alibaba-genai")
#: formats whose reader yields the cluster shape (nodes)
NODES = ("k8s-nodes", "alibaba-nodes")

_EXPOSITION = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s+[-+0-9.eEaNInf]+(\s+-?\d+)?\s*$")
_K8S_KIND = re.compile(r'"kind"\s*:\s*"(Pod|Node)"')

_SWF_LINE = re.compile(r"^\s*-?\d+(\s+-?\d+(\.\d+)?){17}\s*$")
_SACCT_JOBID = re.compile(r"^\d+(_\d+|_\[[^\]]*\])?(\+\d+)?(\.\S+)?(\||\^\|\^)")


def _sacct_header(line: str) -> bool:
    """A ``|``- or ``^|^``-separated line of sacct field names, in any order (``-p`` trailing ``|`` allowed)."""
    delim = "^|^" if "^|^" in line else "|"
    return delim in line and is_header(line.split(delim))


def detect_format(path) -> str:
    """One of ``sacct``, ``sacct-json``, ``swf``, ``pbs``, ``lsf``, ``sge``, ``k8s-pods``, ``k8s-nodes``, ``prometheus-json``,
    ``prometheus-text``, ``gpu-index``, ``cgroup-ttar``, ``alibaba-pods``, ``alibaba-nodes``, ``alibaba-genai``,
    ``toml``, ``csv``, ``json`` or ``unknown``."""
    p = Path(path)
    head = read_head(p)
    stripped = head.lstrip()
    if p.suffix == ".toml":
        return "toml"
    if stripped.startswith("{") or stripped.startswith("["):
        if re.search(r'"jobs"\s*:\s*\[', head):
            return "sacct-json"
        if '"resultType"' in head or re.search(r'"status"\s*:\s*"error"', head) and '"errorType"' in head:
            return "prometheus-json"
        kind = _K8S_KIND.search(head)
        if kind:
            return "k8s-pods" if kind.group(1) == "Pod" else "k8s-nodes"
        return "json"
    lines = [ln for ln in head.splitlines() if ln.strip()][:20]
    if not lines:
        return "unknown"
    if lines[0].startswith("# Archive created by ttar") or re.match(r"^(Directory|Path): ", lines[0]):
        return "cgroup-ttar"
    if lines[0].lstrip().startswith(";") or all(_SWF_LINE.match(ln) for ln in lines[:-1] or lines):
        return "swf"
    first = lines[0]
    if _sacct_header(first) or _SACCT_JOBID.match(first):
        return "sacct"
    for name, looks in (("pbs", looks_like_pbs), ("lsf", looks_like_lsf), ("sge", looks_like_sge)):
        if looks(lines):
            return name
    csv_kind = _csv_kind(head, lines)
    if csv_kind:
        return csv_kind
    if _is_exposition(lines):
        return "prometheus-text"
    if p.suffix == ".csv":
        return "csv"
    return "unknown"


def _csv_kind(head: str, lines: list[str]) -> str | None:
    first = lines[0].strip()
    if first.replace(" ", "") == "job_id,node,gpu_index":
        return "gpu-index"
    if first.startswith("name,cpu_milli,memory_mib,num_gpu"):
        return "alibaba-pods"
    if first.startswith("sn,cpu_milli,memory_mib,gpu"):
        return "alibaba-nodes"
    if re.search(r"^(?:.*\x00)?(value,timestamp_anon|timestamp_anon,value),container_ip\s*$", head[:4096], flags=re.M):
        return "alibaba-genai"
    return None


def _is_exposition(lines: list[str]) -> bool:
    """Prometheus exposition text: ``# HELP``/``# TYPE`` comments and ``name{labels} value [ts]`` samples."""
    data = [ln for ln in lines if not ln.startswith("#")]
    if not data:
        return False
    matching = sum(bool(_EXPOSITION.match(ln.strip())) for ln in data)
    typed = any(ln.startswith(("# HELP ", "# TYPE ")) for ln in lines)
    # with HELP/TYPE comments most lines must be samples (damaged lines are the reader's to quarantine)
    return matching * 2 > len(data) if typed else all(_EXPOSITION.match(ln.strip()) for ln in data[:-1] or data)


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
