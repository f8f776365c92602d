"""Reader for cgroup trees of Slurm jobs (a ``ttar`` archive of ``/sys/fs/cgroup``), computing the values the
cgroup exporter (treydock/cgroup_exporter) publishes, as rows of the long telemetry table.

cgroup v1 (``cpuacct/``, ``memory/``, ``cpuset/`` hierarchies): job cgroups ``/slurm/uid_U/job_J``, Torque
``/torque/ID`` and user slices ``/user.slice/user-U.slice``.  CPU total = ``cpuacct.usage`` (ns → s); user and
system = ``cpuacct.stat`` ticks / 100; memory used/limit/fail count = ``memory.usage_in_bytes``/
``limit_in_bytes``/``failcnt``; RSS and cache = ``memory.stat`` ``total_rss``/``total_cache``; swap from
``memory.memsw.*``; peak = ``memory.max_usage_in_bytes``; CPUs = the count of ``cpuset.cpus``.
cgroup v2 (unified): job cgroups ``…/job_J`` and user slices.  CPU from ``cpu.stat`` (µs → s); used =
``memory.current``; limit = ``memory.max`` (``max`` → 2⁶⁴); RSS = ``anon + swapcached + file``; cache =
``file``; fail count = ``memory.events`` ``oom``; peak = ``memory.peak``; CPUs from ``cpuset.cpus``.

Metrics are named as the exporter names them (``cgroup_cpu_total_seconds``, ``cgroup_memory_used_bytes``…;
plus ``cgroup_memory_max_used_bytes`` for the peak) with ``job_label`` the Slurm job id, ``cgroup`` the
path and ``resource`` the hierarchy (``cgroup-v1`` or ``cgroup-v2``).  Ledger: one record per cgroup directory of a job, step, task or user slice; steps and tasks fold into
their job (the exporter reports the job's cgroup, which contains them); a job or slice whose files do not parse
is quarantined.  A snapshot has no time: rows have a null ``time`` unless ``time`` is given.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..ledger import FileLedger, Quarantine, record_quarantine
from ..telemetry_table import TelemetryResult, conform_telemetry, empty_telemetry
from ..textio import InputError, read_text

V1_JOB = re.compile(r"^/slurm/uid_(?P<uid>\d+)/job_(?P<job>\d+)$")
V1_SUB = re.compile(r"^/slurm/uid_\d+/job_\d+/(step_|task_)")
V2_JOB = re.compile(r"/job_(?P<job>\d+)$")
V2_SUB = re.compile(r"/job_\d+/.+")
USER_SLICE = re.compile(r"/user-(?P<uid>\d+)\.slice$")
TORQUE = re.compile(r"^/torque/(?P<job>[^/.]+)[^/]*$")
MAX_U64 = float(2**64)


def parse_ttar(text: str, name: str = "ttar") -> tuple[dict[str, str], dict[str, int]]:
    """``ttar`` archive text → ({file path: content}, {directory path: its 1-based line})."""
    files: dict[str, str] = {}
    dirs: dict[str, int] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("Directory: "):
            dirs[ln[len("Directory: "):]] = i + 1
        elif ln.startswith("Path: "):
            path = ln[len("Path: "):]
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if nxt.startswith("Lines: "):
                try:
                    count = int(nxt[len("Lines: "):].split()[0])
                except (ValueError, IndexError) as exc:
                    raise InputError(f"{name}: line {i + 2}: bad 'Lines:' count") from exc
                files[path] = "\n".join(lines[i + 2:i + 2 + count])
                i += 2 + count
                continue
            if nxt.startswith("SymlinkTo: "):
                files[path] = ""
                i += 2
                continue
            raise InputError(f"{name}: line {i + 2}: expected 'Lines:' or 'SymlinkTo:' after {path}")
        i += 1
    return files, dirs


def _kv(text: str | None) -> dict[str, float]:
    out = {}
    for ln in (text or "").splitlines():
        parts = ln.split()
        if len(parts) == 2:
            out[parts[0]] = float(parts[1])
    return out


def _num(text: str | None) -> float:
    if text is None:
        return np.nan
    t = text.strip()
    return MAX_U64 if t == "max" else float(t)


def count_cpus(cpuset: str | None) -> float:
    """``0-1,4`` → 3; empty or missing → 0 (as the exporter reports)."""
    total = 0
    for part in (cpuset or "").strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        total += int(b) - int(a) + 1 if b else 1
    return float(total)


def _v1(files: dict, root: str, name: str) -> dict[str, float]:
    acct = f"{root}/cpuacct{name}/"
    mem = f"{root}/memory{name}/"
    stat = _kv(files.get(acct + "cpuacct.stat"))
    mstat = _kv(files.get(mem + "memory.stat"))
    return {
        "cgroup_cpu_user_seconds": stat.get("user", np.nan) / 100.0,
        "cgroup_cpu_system_seconds": stat.get("system", np.nan) / 100.0,
        "cgroup_cpu_total_seconds": _num(files.get(acct + "cpuacct.usage")) / 1e9,
        "cgroup_cpus": count_cpus(files.get(f"{root}/cpuset{name}/cpuset.cpus")),
        "cgroup_memory_used_bytes": _num(files.get(mem + "memory.usage_in_bytes")),
        "cgroup_memory_total_bytes": _num(files.get(mem + "memory.limit_in_bytes")),
        "cgroup_memory_fail_count": _num(files.get(mem + "memory.failcnt")),
        "cgroup_memory_rss_bytes": mstat.get("total_rss", np.nan),
        "cgroup_memory_cache_bytes": mstat.get("total_cache", np.nan),
        "cgroup_memsw_used_bytes": _num(files.get(mem + "memory.memsw.usage_in_bytes")),
        "cgroup_memsw_total_bytes": _num(files.get(mem + "memory.memsw.limit_in_bytes")),
        "cgroup_memory_max_used_bytes": _num(files.get(mem + "memory.max_usage_in_bytes")),
    }


def _v2(files: dict, root: str, name: str) -> dict[str, float]:
    d = f"{root}{name}/"
    cpu = _kv(files.get(d + "cpu.stat"))
    mstat = _kv(files.get(d + "memory.stat"))
    events = _kv(files.get(d + "memory.events"))
    return {
        "cgroup_cpu_user_seconds": cpu.get("user_usec", np.nan) / 1e6,
        "cgroup_cpu_system_seconds": cpu.get("system_usec", np.nan) / 1e6,
        "cgroup_cpu_total_seconds": cpu.get("usage_usec", np.nan) / 1e6,
        "cgroup_cpus": count_cpus(files.get(d + "cpuset.cpus")),
        "cgroup_memory_used_bytes": _num(files.get(d + "memory.current")),
        "cgroup_memory_total_bytes": _num(files.get(d + "memory.max")),
        "cgroup_memory_fail_count": events.get("oom", np.nan),
        "cgroup_memory_rss_bytes": mstat.get("anon", np.nan) + mstat.get("swapcached", np.nan) + mstat.get("file", np.nan),
        "cgroup_memory_cache_bytes": mstat.get("file", np.nan),
        "cgroup_memsw_used_bytes": _num(files.get(d + "memory.swap.current")),
        "cgroup_memsw_total_bytes": _num(files.get(d + "memory.swap.max")),
        "cgroup_memory_max_used_bytes": _num(files.get(d + "memory.peak")),
    }


def _cgroups(dirs: dict[str, int], root: str) -> list[tuple[str, str, str, str | None]]:
    """(version, cgroup name, kind, job id) for every job, step/task or user-slice directory."""
    out = []
    for d in sorted(dirs):
        if not d.startswith(root + "/"):
            continue
        rel = d[len(root):]
        if rel.startswith("/cpuacct/"):
            name = rel[len("/cpuacct"):]
            m = V1_JOB.match(name)
            if m:
                out.append(("v1", name, "job", m.group("job")))
            elif V1_SUB.match(name):
                out.append(("v1", name, "sub", None))
            elif USER_SLICE.search(name):
                out.append(("v1", name, "slice", None))
            elif TORQUE.match(name):
                out.append(("v1", name, "job", TORQUE.match(name).group("job")))
        elif rel.startswith(("/memory/", "/cpuset/")):
            continue
        else:
            m = V2_JOB.search(rel)
            if m:
                out.append(("v2", rel, "job", m.group("job")))
            elif V2_SUB.search(rel):
                out.append(("v2", rel, "sub", None))
            elif USER_SLICE.search(rel):
                out.append(("v2", rel, "slice", None))
    return out


def _line(dirs: dict[str, int], root: str, version: str, cg: str) -> int:
    return dirs.get(f"{root}/cpuacct{cg}" if version == "v1" else f"{root}{cg}", 1)


def read_cgroup(path, *, cluster: str | None = None, node: str | None = None, time=None) -> TelemetryResult:
    """Read a ``ttar`` archive of a cgroup tree into exporter-style samples per job cgroup and user slice."""
    name = str(path)
    files, dirs = parse_ttar(read_text(path), name)
    root = min((d for d in dirs if "/" not in d), default="")
    ledger = FileLedger(file=name, format="cgroup-ttar")
    quarantine = Quarantine()
    rows = []
    for version, cg, kind, job in _cgroups(dirs, root):
        ledger.read += 1
        if kind == "sub":
            ledger.folded += 1
            continue
        try:
            vals = (_v1 if version == "v1" else _v2)(files, root, cg)
        except ValueError as exc:
            record_quarantine(ledger, quarantine, _line(dirs, root, version, cg), cg,
                              f"a cgroup file does not parse: {exc}", cg)
            continue
        if not np.isfinite(vals["cgroup_cpu_total_seconds"]) and not np.isfinite(vals["cgroup_memory_used_bytes"]):
            record_quarantine(ledger, quarantine, _line(dirs, root, version, cg), cg,
                              "no CPU or memory accounting files", cg)
            continue
        ledger.used += 1
        rows += [{"metric": m, "value": v, "job_label": job, "cgroup": cg, "resource": f"cgroup-{version}"}
                 for m, v in vals.items() if np.isfinite(v)]
    if not rows:
        return TelemetryResult(empty_telemetry(), ledger, quarantine)
    df = pd.DataFrame(rows)
    df["cluster"], df["node"] = cluster, node
    df["time"] = pd.Timestamp(time, tz="UTC") if time is not None else pd.NaT
    return TelemetryResult(conform_telemetry(df), ledger, quarantine)
