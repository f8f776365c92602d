"""Reader for the Standard Workload Format of the Parallel Workloads Archive (plain or gzip).

SWF fields (1-based): 1 job, 2 submit s, 3 wait s, 4 run s, 5 allocated procs, 6 average CPU time
per processor s, 7 used memory KB per processor, 8 requested procs, 9 requested time s,
10 requested memory KB per processor, 11 status, 12 user, 13 group, 14 executable, 15 queue,
16 partition, 17 preceding job, 18 think time; -1 means unknown.  Times are offsets from the
header's ``UnixStartTime``.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from .ledger import FileLedger, Quarantine, ReadResult, record_quarantine
from .schema import caveats_from_masks, conform
from .textio import read_text

FIELDS = (
    "job", "submit", "wait", "run", "alloc_procs", "cpu_time", "used_mem_kb", "req_procs", "req_time",
    "req_mem_kb", "status", "user", "group", "executable", "queue", "partition", "preceding", "think",
)

#: SWF status → canonical state (0 failed, 1 completed, 2/3/4 partial executions, 5 cancelled)
STATUS = {0: "FAILED", 1: "COMPLETED", 2: "REQUEUED", 3: "COMPLETED", 4: "FAILED", 5: "CANCELLED"}


def read_swf(path, *, cluster: str | None = None) -> ReadResult:
    """Read one SWF file into the canonical job table, with its ledger and quarantine."""
    text = read_text(path)
    name = str(path)
    ledger = FileLedger(file=name, format="swf")
    quarantine = Quarantine()
    lines = text.splitlines()
    header = {}
    keep_lines, keep_numbers = [], []
    for i, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            ledger.structural += 1
            m = re.match(r";\s*(\w+):\s*(.*)$", stripped)
            if m:
                header[m.group(1)] = m.group(2).strip()
            continue
        ledger.read += 1
        tokens = stripped.split()
        if len(tokens) != len(FIELDS):
            record_quarantine(ledger, quarantine, i, "line", f"expected 18 fields, got {len(tokens)}", line)
            continue
        keep_lines.append(stripped)
        keep_numbers.append(i)
    frame = pd.read_csv(io.StringIO("\n".join(keep_lines)), sep=r"\s+", header=None, names=FIELDS,
                        dtype=str, engine="c") if keep_lines else pd.DataFrame(columns=FIELDS)
    frame["_line"] = keep_numbers
    num = frame[list(FIELDS)].apply(pd.to_numeric, errors="coerce")
    bad = num.isna()
    bad_rows = bad.any(axis=1).to_numpy()
    for pos in np.flatnonzero(bad_rows):
        field_name = FIELDS[int(np.argmax(bad.iloc[pos].to_numpy()))]
        record_quarantine(ledger, quarantine, int(frame["_line"].iloc[pos]), field_name, "not a number",
                          keep_lines[pos])
    num = num[~bad_rows].reset_index(drop=True)
    lines_ok = frame["_line"][~bad_rows].reset_index(drop=True)
    ledger.used = len(num)
    ledger.jobs_emitted = len(num)
    jobs = _to_canonical(num, lines_ok, header, name, cluster)
    return ReadResult(jobs=jobs, ledger=ledger, quarantine=quarantine)


def _known(s: pd.Series) -> pd.Series:
    return s.where(s >= 0)


def _to_canonical(num: pd.DataFrame, lines: pd.Series, header: dict, name: str, cluster: str | None) -> pd.DataFrame:
    origin = header.get("UnixStartTime")
    t0 = int(origin) if origin and origin.lstrip("-").isdigit() else 0
    submit = _known(num["submit"])
    wait = _known(num["wait"])
    run = _known(num["run"])
    procs = _known(num["alloc_procs"])
    req_procs = _known(num["req_procs"])
    cpu_per_proc = _known(num["cpu_time"])
    used_kb = _known(num["used_mem_kb"])
    req_kb = _known(num["req_mem_kb"])
    mem_copy = used_kb.notna() & (used_kb == req_kb)
    # Some archives put total CPU time in field 6: flag rows where per-processor time exceeds the runtime.
    cpu_total_like = cpu_per_proc.notna() & run.notna() & (cpu_per_proc > run * 1.05) & (procs > 1)
    cpu_used = cpu_per_proc.where(cpu_total_like, cpu_per_proc * procs)
    submit_t = pd.to_datetime(t0 + submit, unit="s", utc=True)
    start_t = pd.to_datetime(t0 + submit + wait, unit="s", utc=True)
    end_t = pd.to_datetime(t0 + submit + wait + run, unit="s", utc=True)
    n = len(num)
    state = num["status"].map(STATUS).astype("string")
    cav = caveats_from_masks(n, {
        "no_usage_fields": (cpu_per_proc.isna() & used_kb.isna()).to_numpy(),
        "swf_used_mem_copy": mem_copy.to_numpy(),
        "swf_cpu_time_total": cpu_total_like.to_numpy(),
        "swf_no_start_time": np.full(n, origin is None),
    })
    ints = lambda s: s.round().astype("Int64")  # noqa: E731
    df = pd.DataFrame({
        "cluster": cluster or header.get("Computer") or header.get("Installation") or _stem(name),
        "job_id": num["job"].astype("int64").astype(str),
        "job_id_raw": num["job"].astype("int64").astype(str),
        "source": "swf",
        "source_file": name,
        "source_line": lines.astype("Int64"),
        "user": _label(num["user"]),
        "account": _label(num["group"]),
        "partition": _label(num["partition"]),
        "qos": _label(num["queue"]),
        "job_name": _label(num["executable"]),
        "submit_time": submit_t,
        "eligible_time": submit_t,
        "start_time": start_t,
        "end_time": end_t,
        "elapsed_s": ints(run),
        "time_limit_s": ints(_known(num["req_time"])),
        "state": state,
        "req_nodes": pd.array([None] * n, dtype="Int64"),
        "req_cpus": ints(req_procs.fillna(procs)),
        "req_mem_bytes": ints(req_kb * 1024 * req_procs.fillna(procs)),
        "req_gpus": 0,
        "alloc_cpus": ints(procs),
        "alloc_mem_bytes": ints(req_kb * 1024 * procs),
        "alloc_gpus": 0,
        "cpu_used_s": cpu_used.astype("Float64"),
        "mem_peak_bytes": ints((used_kb * 1024 * procs).where(~mem_copy)),
        "caveats": cav,
    })
    return conform(df)


def _label(s: pd.Series) -> pd.Series:
    """SWF numeric identifiers (users, groups, queues…) as strings; -1 → null."""
    out = s.astype("int64").astype(str).astype("string")
    return out.where(s >= 0)


def _stem(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base.split(".swf")[0]
