"""``read_sge``: a Grid Engine ``accounting`` file into the canonical job table, its placements, ledger and quarantine.

One record per job, or per array task (``task_number`` > 0: ``job_id`` ``1234.5``, ``array_job_id`` 1234,
``array_task_id`` 5; ``job_id_raw`` the job number).  A record whose ``pe_taskid`` is not ``NONE`` is a task of a
tightly integrated parallel job started on a host through ``qrsh -inherit`` (accounting(5); written unless the
PE's ``accounting_summary`` is true): it is folded into its job — the record with the same job and task number
and ``pe_taskid`` ``NONE``, the next one after it in the file (the job's record is written when the job ends, after
its tasks), else the last one before it — adding its ``cpu`` and memory peak and its host; a task record with no
such job record is quarantined (field ``pe_taskid``).  Lines starting with ``#`` (``# Version: 8.1.9``) and lines
of one character or less (which qacct(1) ignores) are structural.

Fields to columns:

- ``cluster``: the name given, else the file's name up to its first dot (the accounting does not name its cell).
- ``owner`` → ``user``; ``project``, else (``NONE``) ``group`` → ``account``; ``qname`` → ``partition``;
  ``job_name``; ``hostname`` (the job's master host) and its task records' hosts → ``node_list``, ``alloc_nodes``
  and the placements.
- times: ``submission_time``, ``start_time``, ``end_time`` are epoch seconds (SGE, Son of Grid Engine) or epoch
  milliseconds (Univa 8.2 and later: "64bit GMT unix time stamp in milliseconds").  Each record is told by its own
  values: a time of 10¹¹ or more is milliseconds (10¹¹ s is the year 5138, 10¹¹ ms is March 1973), so no guess
  is involved.  0 is no time.  They are UTC by definition (``timezone`` is not used).  ``start_time`` 0: never
  started (``elapsed_s`` 0).  ``elapsed_s`` = end − start, which accounting(5) defines ``ru_wallclock`` to be
  (``ru_wallclock`` itself where the end is missing).  ``time_limit_s``: ``h_rt``, else ``s_rt``, from the request.
- ``slots`` → ``alloc_cpus`` and ``req_cpus`` (a record never dispatched has 0 slots: ``req_cpus`` is then the
  least its ``-pe`` range asked, else 1).  Requests come from ``category`` (:mod:`audit.readers.sge.request`):
  memory per slot × slots, GPUs as the job's total.  ``alloc_mem_bytes`` is left unknown (whether a memory
  complex is a consumable is site configuration the accounting does not show); ``alloc_gpus`` = the GPUs asked,
  for a job that started.
- ``cpu`` (the execd's CPU seconds over all the job's processes) → ``cpu_used_s``, plus its task records'; it
  wins over ``ru_utime`` + ``ru_stime`` (getrusage of the processes the job script waited for only).  When
  ``cpu`` is exactly ``ru_wallclock`` × a whole number of slots while ``ru_utime`` + ``ru_stime`` is under 90 % of
  it, the execd ran with ``ACCT_RESERVED_USAGE`` (sge_conf(5): ``cpu`` is then the reservation, not use):
  ``cpu_used_s`` is unknown (``sge_reserved_usage``; see :func:`_reserved_usage`).
- memory, like with like: an ``h_vmem``/``s_vmem``/``virtual_free`` request is virtual memory, compared with
  ``maxvmem`` (bytes; ``sge_req_vmem``); an ``m_mem_free``/``h_rss``/``mem_free`` request is resident memory,
  compared with Univa's ``maxrss`` (bytes; ``sge_req_rss``) where the record has one above 0 (that request wins
  then); SGE and Son of Grid Engine have no whole-job resident figure (``ru_maxrss`` is the largest single
  process, in KB), so there ``mem_peak_bytes`` is ``maxvmem``, at or above the resident peak (``sge_peak_vmem``).
  With no memory request: ``maxrss`` where present, else ``maxvmem`` (``sge_peak_vmem``).  A job that ran with
  a peak of 0 was never sampled (a job of a second or two; reserved usage): its peak is unknown.  Task records
  add their peaks (each host's processes peak on their own: the sum is the job's, as for Slurm's steps).
- state, ``exit_code`` (``exit_status`` as written) and ``signal`` (``exit_status`` − 128 above 128): see
  :mod:`audit.readers.sge.states`.
- placements: one row per job and host.  A job without task records on other hosts held its ``slots`` on its
  master host (``cpus``; ``gpus`` its GPUs); a parallel job of several slots with no task records at all is
  taken to be on its master host alone (``sge_single_host_assumed``: true of ``$pe_slots`` allocation, while
  a loosely integrated or ``accounting_summary`` job may have used hosts the file does not name).  A job with
  task records on other hosts has a row per host with the slots per host unknown.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...job_table import caveats_from_masks, conform, empty_jobs
from ...ledger import FileLedger, Quarantine, ReadResult, record_field_quarantine, record_quarantine
from ...node_table import conform_placements
from ...textio import read_text
from ...units import compress_hostlist
from .hosts import job_hosts, placements
from .layout import KNOWN_COUNTS, Split, split_records
from .request import parse_category
from .states import job_states

MS_FROM = 1e11  # a time at or above this is milliseconds
_LAST_TIME = 7_258_118_400  # 2200-01-01 in epoch seconds: beyond is a corrupted field
_VERSION = re.compile(r"^#\s*Version:\s*\S+")
_RECORD = [(5, r"\d+"), (7, r"-?\d+"), (8, r"\d+"), (9, r"\d+"), (10, r"\d+"), (11, r"\d+"), (12, r"-?\d+"),
           (13, r"\d+(?:\.\d*)?"), (34, r"\d+"), (35, r"\d+")]
_RECORD_RE = [(i, re.compile(p + r"$")) for i, p in _RECORD]
_NUMS = ("job_number", "task_number", "submission_time", "start_time", "end_time", "failed", "exit_status",
         "ru_wallclock", "ru_utime", "ru_stime", "slots", "cpu", "maxvmem", "maxrss")


def looks_like_sge(lines: list[str]) -> bool:
    """Whether the first non-blank lines of a file are Grid Engine accounting records: at least 43
    ``:``-separated fields with whole numbers where job number, priority, times, failed, exit status, slots and
    task number stand and a number for ``ru_wallclock`` (the last line may be cut short by the head read); or, with
    no record yet, the ``# Version:`` header Grid Engine writes at the top of the file."""
    data = [ln for ln in lines if not ln.startswith("#") and len(ln.strip()) > 1]
    if not data:
        return any(_VERSION.match(ln) for ln in lines)
    return all(_is_record(ln) for ln in data[:-1] or data)


def _is_record(line: str) -> bool:
    fields = line.rstrip("\r\n").split(":")
    return len(fields) >= min(KNOWN_COUNTS) and all(rx.match(fields[i]) for i, rx in _RECORD_RE)


def read_sge(path, *, cluster: str | None = None, timezone: str = "UTC") -> ReadResult:
    """Read one Grid Engine ``accounting`` file into the canonical job table, with its ledger, quarantine and
    placements.  Times are UTC epochs in the file; ``timezone`` is accepted for a common signature."""
    name = str(path)
    ledger = FileLedger(file=name, format="sge")
    quarantine = Quarantine()
    lines = pc.split_pattern(pa.array([read_text(path)], type=pa.large_string()), "\n").flatten()
    if len(lines) and lines[len(lines) - 1].as_py() == "":
        lines = lines.slice(0, len(lines) - 1)
    lines = pc.utf8_rtrim(lines, "\r")
    structural = pc.or_(pc.starts_with(lines, "#"),
                        pc.less_equal(pc.utf8_length(pc.utf8_trim_whitespace(lines)), 1))
    data_idx = np.flatnonzero(~np.asarray(structural.to_numpy(zero_copy_only=False), dtype=bool))
    data = pc.filter(lines, pc.invert(structural))
    ledger.structural = len(lines) - len(data)
    ledger.read = len(data)
    if not len(data):
        return ReadResult(empty_jobs(), ledger, quarantine, conform_placements(None))
    line_no = data_idx.astype(np.int64) + 1
    setaside = _SetAside(ledger, quarantine, data, line_no)
    split = split_records(data)
    for r in np.flatnonzero(split.layout == 0):
        setaside.record(r, *_why(split, r))
    rows = np.flatnonzero(split.layout > 0)
    num = {k: split.number(k, rows) for k in _NUMS}
    ms, times_bad = _time_scale(num)
    for pos in np.flatnonzero(times_bad != ""):
        setaside.record(rows[pos], times_bad[pos], "a time beyond the year 2200")
    keep = times_bad == ""
    rows, ms = rows[keep], ms[keep]
    num = {k: v[keep] for k, v in num.items()}
    is_task = _bool(pc.not_equal(pc.fill_null(split.text("pe_taskid", rows), "NONE"), "NONE"))
    m, t = np.flatnonzero(~is_task), np.flatnonzero(is_task)
    parent = _parents(num, m, t, line_no[rows])
    for pos in t[parent < 0]:
        setaside.record(rows[pos], "pe_taskid", "parallel task record without its job's record")
    folded_t, parent = t[parent >= 0], parent[parent >= 0]
    ledger.used = len(m)
    ledger.folded = len(folded_t)
    jobs, placed = _assemble(split, rows, m, folded_t, parent, num, ms, line_no, name, cluster, setaside)
    setaside.flush()
    ledger.jobs_emitted = len(jobs)
    return ReadResult(conform(jobs), ledger, quarantine, conform_placements(placed))


class _SetAside:
    """Records and fields set aside, written to the quarantine in line order at the end."""

    def __init__(self, ledger, quarantine, data, line_no):
        self.ledger, self.quarantine, self.data, self.line_no = ledger, quarantine, data, line_no
        self.rows: list[tuple] = []

    def record(self, r, field_name: str, reason: str) -> None:
        self.rows.append((int(self.line_no[r]), 0, int(r), field_name, reason))

    def field(self, r, field_name: str, reason: str) -> None:
        self.rows.append((int(self.line_no[r]), 1, int(r), field_name, reason))

    def flush(self) -> None:
        for line, kind, r, field_name, reason in sorted(self.rows):
            add = record_field_quarantine if kind else record_quarantine
            add(self.ledger, self.quarantine, line, field_name, reason, self.data[r].as_py())


def _why(split: Split, r: int) -> tuple[str, str]:
    field_name = split.bad_field[r]
    if not field_name:
        counts = ", ".join(str(c) for c in KNOWN_COUNTS)
        return "line", f"{split.count[r]} fields: a Grid Engine accounting record has {counts}"
    if field_name == "category":
        return "category", "extra ':' fields that are not part of an h:m:s value in the request"
    return field_name, "not a number"


def _time_scale(num: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per record: whether its times are milliseconds, and the first time field beyond 2200 (``""`` if none)."""
    keys = ("submission_time", "start_time", "end_time")
    stack = np.vstack([np.nan_to_num(num[k]) for k in keys])
    ms = stack.max(axis=0) >= MS_FROM
    secs = stack / np.where(ms, 1000.0, 1.0)
    bad = np.full(stack.shape[1], "", dtype=object)
    for k, row in zip(keys[::-1], secs[::-1], strict=True):
        bad[row > _LAST_TIME] = k
    return ms, bad


def _parents(num: dict, m: np.ndarray, t: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """Position in ``m`` of each task record's job record: the next with its job and task number, else the last
    before it; -1 when there is none."""
    if not len(t):
        return np.zeros(0, dtype=np.int64)
    if not len(m):
        return np.full(len(t), -1, dtype=np.int64)
    left = pd.DataFrame({"line": lines[t], "job": num["job_number"][t], "task": num["task_number"][t],
                         "order": np.arange(len(t))}).sort_values("line")
    right = pd.DataFrame({"line": lines[m], "job": num["job_number"][m], "task": num["task_number"][m],
                          "pos": np.arange(len(m))}).sort_values("line")
    out = np.full(len(t), -1, dtype=np.int64)
    for direction in ("forward", "backward"):
        merged = pd.merge_asof(left, right, on="line", by=["job", "task"], direction=direction)
        found = merged["pos"].to_numpy(dtype="float64", na_value=np.nan)
        order = merged["order"].to_numpy()
        fill = (out[order] < 0) & ~np.isnan(found)
        out[order[fill]] = found[fill].astype(np.int64)
    return out


def _assemble(split, rows, m, t, parent, num, ms, line_no, name, cluster, setaside):
    mrows = rows[m]
    n = len(m)
    g = {k: v[m] for k, v in num.items()}
    tnum = {k: num[k][t] for k in ("cpu", "maxvmem", "maxrss")}

    def task_sum(key):
        return np.bincount(parent, weights=np.nan_to_num(tnum[key]), minlength=n)

    submit, start, end = (_stamp(g[k], ms[m]) for k in ("submission_time", "start_time", "end_time"))
    started = ~np.isnat(start)
    elapsed = np.where(~started, 0.0, np.where(~np.isnat(end) & (end >= start),
                                               (end - start) / np.timedelta64(1, "s"),
                                               np.where(g["ru_wallclock"] > 0, g["ru_wallclock"], np.nan)))
    req = _requests(split.text("category", mrows), mrows, setaside)
    slots = g["slots"]
    n_req = np.where(slots > 0, slots, np.nan_to_num(req["pe_min_slots"], nan=1.0))

    # memory, like with like (module docstring)
    maxvmem = g["maxvmem"] + task_sum("maxvmem")
    maxrss = np.where(np.isnan(g["maxrss"]), np.nan, np.nan_to_num(g["maxrss"]) + task_sum("maxrss"))
    has_rss = maxrss > 0
    v, r_ = req["mem_virtual"], req["mem_resident"]
    use_r = ~np.isnan(r_) & has_rss
    use_v = ~use_r & ~np.isnan(v)
    use_r_vmem = ~use_r & ~use_v & ~np.isnan(r_)
    no_req = ~(use_r | use_v | use_r_vmem)
    req_mem = np.where(use_v, v, r_) * n_req
    peak = np.where(use_r | (no_req & has_rss), maxrss, maxvmem)

    cpu = g["cpu"] + task_sum("cpu")
    reserved = _reserved_usage(g, started)
    cpu_used = np.where(reserved, np.nan, cpu)
    # a job that ran has some memory: 0 is a peak the execd never sampled (a job of a second, or reserved usage)
    peak = np.where(started & ~(peak > 0), np.nan, peak)

    qdel = _bool(pc.not_equal(pc.fill_null(split.text("qdel_info", mrows), "NONE"), "NONE"))
    limits = {k: req[k] for k in ("h_rt", "s_rt", "h_cpu", "s_cpu")}
    state, signal, inferred = job_states(g["failed"], g["exit_status"], started, elapsed, cpu_used, slots, limits,
                                         np.where(use_r | use_v, peak, np.nan), req_mem, qdel)

    host = _names(split.text("hostname", mrows))
    has_host = _bool(pc.is_valid(host))
    task_host = np.asarray(_names(split.text("hostname", rows[t])).to_numpy(zero_copy_only=False), dtype=object)
    multi = job_hosts(host, task_host, parent)
    in_multi = np.zeros(n, dtype=bool)
    in_multi[list(multi)] = True
    single_pe = (started & _bool(pc.is_valid(_names(split.text("granted_pe", mrows)))) & (slots > 1)
                 & (np.bincount(parent, minlength=n) == 0))
    gpus = np.where(req["gpu_flag"], np.nan, np.nan_to_num(req["gpus"]))
    alloc_gpus = np.where(started, gpus, 0.0)
    node_list = pc.if_else(pa.array(started), host, pa.scalar(None, pa.large_string()))
    if multi:
        node_list = pc.replace_with_mask(node_list, pa.array(in_multi),
                                         pa.array([compress_hostlist(multi[j]) for j in sorted(multi)],
                                                  type=pa.large_string()))
    hosts_n = np.array([len(multi[j]) if j in multi else 1 for j in range(n)], float) if multi else np.ones(n)
    alloc_nodes = np.where(started, np.where(has_host, hosts_n, np.nan), 0.0)

    job_number = np.nan_to_num(g["job_number"]).astype(np.int64)
    task = np.nan_to_num(g["task_number"]).astype(np.int64)
    jn = pc.cast(pa.array(job_number), pa.large_string())
    job_id = pc.if_else(pa.array(task > 0),
                        pc.binary_join_element_wise(jn, pc.cast(pa.array(task), pa.large_string()),
                                                    pa.scalar(".", pa.large_string())), jn)
    project = _names(split.text("project", mrows))
    cav = caveats_from_masks(n, {
        "sge_req_vmem": use_v,
        "sge_req_rss": use_r | use_r_vmem,
        "sge_peak_vmem": ~np.isnan(peak) & started & (use_r_vmem | (no_req & ~has_rss)),
        "sge_reserved_usage": reserved,
        "sge_single_host_assumed": single_pe,
        "sge_state_inferred": inferred,
        "start_before_submit": started & ~np.isnat(submit) & (start < submit),
        "end_unknown": started & np.isnat(end),
        "no_gpu_telemetry": np.nan_to_num(alloc_gpus) > 0,
    })
    frame = pd.DataFrame({
        "cluster": _constant(cluster or _stem(name), n),
        "job_id": _col(job_id),
        "job_id_raw": _col(jn),
        "array_job_id": _int(np.where(task > 0, job_number, np.nan)),
        "array_task_id": _int(np.where(task > 0, task, np.nan)),
        "source": _constant("sge", n),
        "source_file": _constant(name, n),
        "source_line": _int(line_no[mrows]),
        "user": _col(_names(split.text("owner", mrows))),
        "account": _col(pc.coalesce(project, _names(split.text("group", mrows)))),
        "partition": _col(_names(split.text("qname", mrows))),
        "job_name": _col(_names(split.text("job_name", mrows), unknown=False)),
        "submit_time": _utc(submit),
        "start_time": _utc(start),
        "end_time": _utc(end),
        "elapsed_s": _int(elapsed),
        "time_limit_s": _int(np.where(np.isnan(req["h_rt"]), req["s_rt"], req["h_rt"])),
        "state": _col(pa.array(state, type=pa.large_string())),
        "exit_code": _int(g["exit_status"]),
        "signal": _int(signal),
        "req_cpus": _float(n_req),
        "req_mem_bytes": _int(req_mem),
        "req_gpus": _float(gpus),
        "gpu_type": _col(pa.array(req["gpu_type"], type=pa.large_string())),
        "alloc_nodes": _int(alloc_nodes),
        "alloc_cpus": _float(slots),
        "alloc_gpus": _float(alloc_gpus),
        "cpu_used_s": _float(cpu_used),
        "mem_peak_bytes": _int(peak),
        "node_list": _col(node_list),
        "caveats": cav,
    })
    one = started & has_host & ~in_multi
    return frame, placements(frame, one, host, multi, started, slots, alloc_gpus)


def _reserved_usage(g: dict, started) -> np.ndarray:
    """Records whose ``cpu`` is the reservation rather than use (sge_conf(5) ``ACCT_RESERVED_USAGE``).  A Son of
    Grid Engine 8.1.9 execd so configured wrote ``cpu`` as ``ru_wallclock`` times a whole number of slots, exactly
    (``65.000000`` for a 65 s sleep, ``4.000000`` for a 4 s job of 2 slots), and ``maxvmem`` 0.  Read as reserved:
    ``cpu`` exactly k × ``ru_wallclock`` for a whole k from 1 to the slots, on a job of 10 s or more, while the job
    script's own getrusage time (``ru_utime`` + ``ru_stime``) is under 90 % of it (a busy job's reserved figure is
    near its use anyway)."""
    wall = g["ru_wallclock"]
    k = np.divide(g["cpu"], wall, out=np.zeros_like(wall), where=wall > 0)
    whole = (np.abs(k - np.round(k)) * np.where(wall > 0, wall, 0) <= 1e-6) & (np.round(k) >= 1)
    ru = g["ru_utime"] + g["ru_stime"]
    return started & (wall >= 10) & whole & (np.round(k) <= np.maximum(g["slots"], 1)) & (ru < 0.9 * g["cpu"])


def _requests(category: pa.Array, mrows, setaside) -> dict:
    """The parsed request of each job record, as arrays (NaN where not asked); unreadable values are set aside
    as a field of their record (the record is still used)."""
    enc = pc.dictionary_encode(pc.fill_null(category, "NONE"))
    parsed = [parse_category(s) for s in enc.dictionary.to_pylist()]
    idx = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    out = {}
    for key in ("h_rt", "s_rt", "h_cpu", "s_cpu", "mem_virtual", "mem_resident", "gpus", "pe_min_slots"):
        out[key] = np.array([np.nan if getattr(p, key) is None else getattr(p, key) for p in parsed], float)[idx]
    out["gpu_flag"] = np.array([p.gpu_flag and p.gpus is None for p in parsed], dtype=bool)[idx]
    out["gpu_type"] = np.array([p.gpu_type for p in parsed], dtype=object)[idx]
    for u in [k for k, p in enumerate(parsed) if p.unreadable]:
        what = "; ".join(f"{k}={v!r}" for k, v in parsed[u].unreadable)
        for pos in np.flatnonzero(idx == u):
            setaside.field(mrows[pos], "category", f"cannot read {what}")
    return out


def _names(a: pa.Array, unknown: bool = True) -> pa.Array:
    """A text field with ``""``, ``NONE`` and (for hosts, queues, users, groups) ``UNKNOWN`` as null."""
    drop = ["", "NONE", "UNKNOWN"] if unknown else ["", "NONE"]
    return pc.if_else(pc.is_in(a, value_set=pa.array(drop, type=a.type)), pa.scalar(None, a.type), a)


def _bool(a) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def _stamp(values: np.ndarray, ms: np.ndarray) -> np.ndarray:
    """Epoch seconds or milliseconds → datetime64[ns] (NaT for 0 or missing)."""
    present = np.nan_to_num(values) > 0
    whole = np.where(present, np.nan_to_num(values), 0).astype(np.int64)
    out = (whole * np.where(ms, 1_000_000, 1_000_000_000)).astype("datetime64[ns]")
    out[~present] = np.datetime64("NaT")
    return out


def _utc(values: np.ndarray) -> pd.Series:
    return pd.Series(pd.DatetimeIndex(values).tz_localize("UTC"))


def _int(values) -> pd.arrays.IntegerArray:
    v = np.asarray(values, dtype="float64")
    mask = ~np.isfinite(v)
    return pd.arrays.IntegerArray(np.where(mask, 0.0, np.round(v)).astype(np.int64), mask)


def _float(values) -> pd.arrays.FloatingArray:
    v = np.asarray(values, dtype="float64")
    mask = ~np.isfinite(v)
    return pd.arrays.FloatingArray(np.where(mask, 0.0, v), mask)


def _col(a) -> pd.arrays.ArrowStringArray:
    """A pyarrow string array as a pandas ``string`` column (no Python object per value)."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return pd.arrays.ArrowStringArray(pc.cast(a, pa.large_string()))


def _constant(value: str, n: int) -> pd.arrays.ArrowStringArray:
    return _col(pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value]))
                .cast(pa.large_string()))


def _stem(name: str) -> str:
    return name.rsplit("/", 1)[-1].split(".")[0] or "sge"
