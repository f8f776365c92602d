"""``read_lsf``: one ``lsb.acct`` file (or a rotated ``lsb.acct.1`` …) → the canonical job table, its ledger,
quarantine and placements.

Each ``JOB_FINISH`` record is a job; any other record type (``EVENT_ADRSV_FINISH``, ``JOB_RESIZE`` …) is counted
as folded; blank lines and ``#`` lines are structural.  Field by field (IBM Spectrum LSF 10.1, "lsb.acct"):

* identity: ``jobId`` and ``idx`` (an array element: ``job_id`` ``1234[5]``, ``array_job_id`` 1234,
  ``array_task_id`` 5), ``userName`` → ``user``, ``queue`` → ``partition``, ``projectName`` → ``account``,
  ``jobName`` → ``job_name``; ``cluster``: the record's ``dstCluster`` (the execution cluster of a job
  forwarded between clusters) where it names one, else ``cluster=``, else the folder the file is in (LSF keeps
  it in ``LSB_SHAREDIR/<cluster>/logdir``: the folder above ``logdir``);
* times, epoch seconds (UTC, whatever ``timezone`` says): ``submitTime`` → ``submit_time``; ``beginTime``
  (``bsub -b``) → ``eligible_time`` when later than the submission, else the submission; ``startTime`` (the
  dispatch) → ``start_time``; the record's event time (when mbatchd logged the finish) → ``end_time``.
  ``termTime`` is the ``bsub -t`` termination deadline, not the end, and is not read.  0 is LSF's "no time":
  a job killed while pending has no start and ``elapsed_s`` 0; otherwise ``elapsed_s`` = end − start;
* limits: ``runLimit`` (seconds; ``-1`` or 0 when none) → ``time_limit_s`` (null when none; LSF 7 and 8
  records have no run limit).  JOB_FINISH carries no ``rLimits``: a memory limit (``bsub -M``) is not in it;
* requests: ``numProcessors`` (the slots asked for; ``maxNumProcessors`` where it is 0) → ``req_cpus``; memory,
  GPUs and nodes from the resource requirement (see :mod:`.values`);
* placement: ``numExHosts``/``execHosts``, a host listed once per slot (``"hostA" "hostA" "hostB"``) or, with
  ``LSF_HPC_EXTENSIONS=SHORT_EVENTFILE``, once with its slots (``"2*hostA" "hostB"``) → ``alloc_cpus`` (slots),
  ``alloc_nodes`` (distinct hosts), ``node_list`` (Slurm's compact hostlist form) and one placement per job and
  host with the slots held there; ``alloc_mem_bytes`` and ``alloc_gpus`` are the reservation of a job that ran;
* use: ``ru_utime`` + ``ru_stime`` (the whole job's, seconds; -1 unknown) → ``cpu_used_s``; ``maxRMem`` (KB, the
  job's processes together) → ``mem_peak_bytes``; both 0 for a job that never started (LSF logs -1 there);
* end: ``jStatus``, ``exitInfo`` and ``exitStatus`` → ``state``, ``exit_code``, ``signal`` (see :mod:`.values`).

A record is set aside, with its line, the field and the reason, when its quotes do not balance, a count runs past
the line, a value that must be a number is not one, its field count does not fit its version (see
:mod:`.layout`), or its version or job status is one LSF does not write.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...job_table import caveats_from_masks, conform, empty_jobs
from ...ledger import FileLedger, Quarantine, ReadResult, record_quarantine
from ...node_table import conform_placements
from ...textio import read_bytes
from .layout import FIELDS, INDEX, VERSIONS, version_family, walk
from .placement import hosts_held, placements
from .tokens import Tokens, tokenize
from .values import exit_parts, resource_requests, states

BLOCK = 8 << 20  # bytes split at a time: the per-byte arrays stay small
_RECORD = re.compile(r'^\s*"[A-Z][A-Z0-9_]*" "[0-9][0-9.]*" ')
_TYPE = r'^"[A-Za-z][A-Za-z0-9_]*"$'

#: numbers a job needs, in the order a record is checked; times are seconds since 1970
INTS = ("eventTime", "jobId", "numProcessors", "submitTime", "beginTime", "startTime", "jStatus", "exitStatus",
        "maxNumProcessors", "idx", "maxRMem", "exitInfo", "runLimit")
TIMES = ("eventTime", "submitTime", "beginTime", "startTime")
LATEST = 4_102_444_800  # 2100-01-01 UTC
FLOATS = ("ru_utime", "ru_stime")
TEXT = ("userName", "queue", "projectName", "jobName", "resReq", "effectiveResReq", "dstCluster")


def looks_like_lsf(lines: list[str]) -> bool:
    """Whether the first non-blank lines of a file are ``lsb.acct`` records: a quoted record type and a quoted
    version (``"JOB_FINISH" "10.108" …``)."""
    data = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(data) and all(_RECORD.match(ln) for ln in data[:3])


def read_lsf(path, *, cluster: str | None = None, timezone: str = "UTC") -> ReadResult:
    """Read one ``lsb.acct`` file into the canonical job table, with its ledger, quarantine and placements.

    ``cluster`` names the cluster where the records do not (see the module text); ``timezone`` is accepted for
    the common reader signature: ``lsb.acct`` times are epoch seconds, already UTC."""
    name = str(path)
    ledger = FileLedger(file=name, format="lsf")
    quarantine = Quarantine()
    default_cluster = cluster or _folder_cluster(name)
    jobs, places = [], []
    for block, line0 in _blocks(_utf8(read_bytes(path))):
        frame, placed = _read_block(tokenize(block), line0, name, default_cluster, ledger, quarantine)
        if frame is not None and len(frame):
            jobs.append(frame)
            places.append(placed)
    out = conform(pd.concat(jobs, ignore_index=True)) if jobs else empty_jobs()
    ledger.used = ledger.jobs_emitted = len(out)
    placements = conform_placements(pd.concat(places, ignore_index=True) if places else None)
    return ReadResult(out, ledger, quarantine, placements)


def _utf8(raw: bytes) -> bytes:
    """The bytes as valid UTF-8 (bytes that are not become U+FFFD), ending with a newline."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raw = raw.decode("utf-8", errors="replace").encode("utf-8")
    return raw if raw.endswith(b"\n") or not raw else raw + b"\n"


def _blocks(raw: bytes):
    """Blocks of whole lines of about BLOCK bytes, with the number of lines before each."""
    at, line0 = 0, 0
    while at < len(raw):
        cut = raw.find(b"\n", min(at + BLOCK, len(raw) - 1)) + 1
        block = raw[at:cut]
        yield block, line0
        line0 += block.count(b"\n")
        at = cut


def _folder_cluster(name: str) -> str:
    parent = Path(name).resolve().parent
    if parent.name == "logdir":
        parent = parent.parent
    return parent.name or "lsf"


class _Block:
    """One block's records: lines set aside by their index in the block, recorded in line order."""

    def __init__(self, tok: Tokens, line0: int, ledger: FileLedger, quarantine: Quarantine):
        self.tok, self.line0, self.ledger, self.quarantine = tok, line0, ledger, quarantine
        self.pending: list = []

    def reject(self, lines: np.ndarray, fields, reasons) -> None:
        self.pending.extend(zip(lines.tolist(), list(fields), list(reasons), strict=True))

    def flush(self) -> None:
        for i, f, r in sorted(self.pending, key=lambda p: p[0]):
            record_quarantine(self.ledger, self.quarantine, self.line0 + i + 1, f, r, self.tok.raw_line(i))
        self.pending = []


def _read_block(tok: Tokens, line0: int, name: str, default_cluster: str, ledger: FileLedger,
                quarantine: Quarantine):
    blk = _Block(tok, line0, ledger, quarantine)
    try:
        return _read_records(blk, name, default_cluster)
    finally:
        blk.flush()


def _read_records(blk: _Block, name: str, default_cluster: str):
    tok, line0, ledger = blk.tok, blk.line0, blk.ledger
    has = tok.count > 0
    head = tok.text(tok.first, has)
    comment = _np(pc.starts_with(head, "#"))
    data = has & ~comment
    ledger.structural += int((~data).sum())
    ledger.read += int(data.sum())
    finish = data & _np(pc.equal(head, '"JOB_FINISH"'))
    other = data & ~finish & _np(pc.match_substring_regex(head, _TYPE))
    ledger.folded += int(other.sum())
    stray = np.flatnonzero(data & ~finish & ~other)
    blk.reject(stray, ["type"] * len(stray), ["not an lsb.acct record: no quoted record type"] * len(stray))
    lines = np.flatnonzero(finish)
    if not len(lines):
        return None, None
    lines, family = _versions(blk, lines)
    if not len(lines):
        return None, None
    last_allowed = np.array([INDEX[VERSIONS[f][1]] if VERSIONS[f][1] else len(FIELDS) - 1 for f in family])
    w = walk(tok, lines, last_allowed)
    bad_field, reason = _layout_errors(tok, lines, family, last_allowed, w)
    values, bad_field, reason = _values(tok, w, bad_field, reason)
    state, unknown = states(values["jStatus"], values["exitInfo"], values["startTime"] > 0)
    unknown &= bad_field == ""
    bad_field[unknown] = "jStatus"
    reason[unknown] = [f"unknown job status {int(v)}" for v in values["jStatus"][unknown]]
    bad = bad_field != ""
    blk.reject(lines[bad], bad_field[bad], reason[bad])
    keep = ~bad
    if not keep.any():
        return None, None
    kept = {k: v[keep] if isinstance(v, np.ndarray) else pc.filter(v, pa.array(keep)) for k, v in values.items()}
    at_hosts = w.at["numExHosts"][keep] + 1
    n_hosts = w.counts["numExHosts"][keep]
    return _assemble(tok, kept, state[keep], at_hosts, n_hosts, line0 + lines[keep] + 1, name, default_cluster)


def _versions(blk: _Block, lines: np.ndarray) -> tuple[np.ndarray, list]:
    """The records whose version LSF writes, with their version family; the others set aside."""
    tok = blk.tok
    has = tok.count[lines] >= 2
    text = tok.values(tok.first[lines] + 1, has)
    distinct = pc.unique(text)
    families = np.array([version_family(v) if v is not None else None for v in distinct.to_pylist()] + [None],
                        dtype=object)
    at = np.asarray(pc.fill_null(pc.index_in(text, value_set=distinct), len(distinct)), dtype=np.int64)
    family = families[at]
    version = text.to_numpy(zero_copy_only=False)
    missing = ~has
    blk.reject(lines[missing], ["version"] * int(missing.sum()), ["the record ends after its type"] * int(missing.sum()))
    unknown = has & (family == None)  # noqa: E711
    blk.reject(lines[unknown], ["version"] * int(unknown.sum()),
               [f"unsupported lsb.acct version {v!r}" for v in version[unknown]])
    ok = has & ~unknown
    return lines[ok], family[ok].tolist()


def _layout_errors(tok, lines, family, last_allowed, w):
    """The first thing wrong with each record's layout: an unclosed string, a list, its field count."""
    bad_field, reason = w.bad_field.copy(), w.reason.copy()
    unclosed = tok.unclosed[lines]
    broken = unclosed >= 0
    if broken.any():
        holder = np.where(unclosed == tok.first[lines], "type", "version").astype(object)
        for fname, at in w.at.items():
            holder[(at >= 0) & (at <= unclosed) & broken] = fname
        bad_field[broken] = holder[broken]
        reason[broken] = "a quoted string that never closes (unbalanced double quotes)"
    fam = np.array(family, dtype=object)
    least = np.array([INDEX[VERSIONS[f][0]] for f in family])
    short = (bad_field == "") & (w.last < least)
    for i in np.flatnonzero(short):
        nxt = FIELDS[w.last[i] + 1][0]
        bad_field[i] = nxt
        reason[i] = (f"field count does not fit LSF {fam[i]}: the record ends before {nxt} "
                     f"({int(tok.count[lines[i]])} fields); LSF {fam[i]} writes every field through "
                     f"{VERSIONS[fam[i]][0]}")
    long = (bad_field == "") & w.beyond
    for i in np.flatnonzero(long):
        bad_field[i] = FIELDS[last_allowed[i] + 1][0]
        reason[i] = (f"field count does not fit LSF {fam[i]}: the record goes on after {VERSIONS[fam[i]][1]}, "
                     f"the last field LSF {fam[i]} writes")
    return bad_field, reason


def _values(tok, w, bad_field, reason):
    """The fields a job needs, parsed; a value that must be a number and is not one sets the record aside."""
    n = len(bad_field)
    out = {}
    for fname in INTS + FLOATS:
        at = w.at.get(fname, np.full(n, -1))
        text = tok.text(at, at >= 0)
        val, bad = _parse_number(text, integer=fname in INTS)
        if fname in TIMES:  # seconds since 1970; past 2100 is no cluster's accounting but a corrupted value
            bad |= (val < 0) | (val > LATEST)
        if fname == "jobId":
            bad |= np.isnan(val) | (val <= 0)
        new = bad & (bad_field == "")
        if new.any():
            shown = text.to_numpy(zero_copy_only=False)[new]
            bad_field[new] = fname
            what = "a time in seconds since 1970" if fname in TIMES else "a number"
            reason[new] = [f"not {what}: {v!r}" for v in shown]
        out[fname] = val
    for fname in TEXT:
        at = w.at.get(fname, np.full(n, -1))
        out[fname] = tok.values(at, at >= 0)
    return out, bad_field, reason


def _parse_number(text: pa.Array, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Fields written as numbers → float64 (NaN where absent or ``""``) and the mask of those that are not
    numbers.  The usual column, every value a number, takes one cast."""
    kind = pa.int64() if integer else pa.float64()
    try:
        return np.asarray(pc.cast(text, kind).to_numpy(zero_copy_only=False), dtype="float64"), \
            np.zeros(len(text), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    pattern = r"^-?\d+$" if integer else r"^-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?$"
    ok = _np(pc.match_substring_regex(text, pattern))
    val = np.full(len(text), np.nan)
    if ok.any():
        val[ok] = np.asarray(pc.cast(pc.filter(text, pa.array(ok)), pa.float64()), dtype="float64")
    absent = ~_np(pc.is_valid(text)) | _np(pc.equal(text, '""'))
    return val, ~ok & ~absent


def _assemble(tok, v, state, at_hosts, n_hosts, source_line, name, default_cluster):
    n = len(state)
    started = v["startTime"] > 0
    req_text = pc.if_else(pc.greater(pc.utf8_length(pc.fill_null(v["effectiveResReq"], "")), 0),
                          v["effectiveResReq"], v["resReq"])
    req = resource_requests(pc.fill_null(req_text, ""))
    hosts = hosts_held(tok, at_hosts, n_hosts)
    slots = np.where(v["numProcessors"] > 0, v["numProcessors"], v["maxNumProcessors"])
    slots = np.where(slots > 0, slots, np.nan)
    req_nodes = np.where(req["one_host"], 1.0, np.ceil(slots / req["ptile"]))
    nodes = np.where(hosts["nodes"] > 0, hosts["nodes"], np.where(np.isnan(req_nodes), 1.0, req_nodes))
    method = req["mem_method"]
    mem = req["mem_bytes"] * np.where(method == "task", slots, np.where(method == "job", 1.0, nodes))
    gpus = np.nan_to_num(req["gpus"]) * nodes
    alloc_gpus = np.where(started, np.nan_to_num(req["gpus"]) * hosts["nodes"], 0.0)
    end = _epoch(v["eventTime"])
    start = _epoch(v["startTime"])
    submit = _epoch(v["submitTime"])
    begin = _epoch(v["beginTime"])
    eligible = np.where(~np.isnat(begin) & (np.isnat(submit) | (begin > submit)), begin, submit)
    span = np.maximum(v["eventTime"] - v["startTime"], 0)
    elapsed = np.where(started, np.where(np.isnat(end), np.nan, span), 0.0)
    cpu = np.where((v["ru_utime"] >= 0) & (v["ru_stime"] >= 0), v["ru_utime"] + v["ru_stime"], np.nan)
    cpu = np.where(started, cpu, 0.0)  # never started: no process ran (LSF logs -1, "unavailable")
    peak = np.where(started, np.where(v["maxRMem"] >= 0, v["maxRMem"] * 1024.0, np.nan), 0.0)
    code, signal = exit_parts(v["exitStatus"])
    idx = np.nan_to_num(v["idx"])
    job = pc.cast(pa.array(v["jobId"].astype(np.int64)), pa.string())
    element = pc.binary_join_element_wise(pc.binary_join_element_wise(job, pc.cast(pa.array(idx.astype(np.int64)),
                                                                                  pa.string()), "["), "]", "")
    job_id = pc.if_else(pa.array(idx > 0), element, job)
    dst = v["dstCluster"]
    cluster = pc.if_else(pc.greater(pc.utf8_length(pc.fill_null(dst, "")), 0), dst, default_cluster)
    known_mem = ~np.isnan(mem)
    frame = pd.DataFrame({
        "cluster": _strings(cluster),
        "job_id": _strings(job_id),
        "job_id_raw": _strings(job_id),
        "array_job_id": _int(np.where(idx > 0, v["jobId"], np.nan)),
        "array_task_id": _int(np.where(idx > 0, idx, np.nan)),
        "source": "lsf",
        "source_file": name,
        "source_line": source_line,
        "user": _strings(_blank_null(v["userName"])),
        "account": _strings(_blank_null(v["projectName"])),
        "partition": _strings(_blank_null(v["queue"])),
        "job_name": _strings(_blank_null(v["jobName"])),
        "submit_time": _utc(submit),
        "eligible_time": _utc(eligible),
        "start_time": _utc(start),
        "end_time": _utc(end),
        "elapsed_s": _int(elapsed),
        "time_limit_s": _int(np.where(v["runLimit"] > 0, v["runLimit"], np.nan)),
        "state": pd.array(state, dtype="string"),
        "exit_code": _int(code),
        "signal": _int(signal),
        "req_nodes": _int(req_nodes),
        "req_cpus": _float(slots),
        "req_mem_bytes": _int(mem),
        "req_gpus": _float(gpus),
        "alloc_nodes": _int(hosts["nodes"]),
        "alloc_cpus": _float(hosts["cpus"]),
        "alloc_mem_bytes": _int(np.where(started, mem, np.where(known_mem, 0.0, np.nan))),
        "alloc_gpus": _float(alloc_gpus),
        "cpu_used_s": _float(cpu),
        "mem_peak_bytes": _int(peak),
        "node_list": pd.array(hosts["node_list"], dtype="string"),
        "caveats": caveats_from_masks(n, {
            "start_before_submit": ~np.isnat(start) & ~np.isnat(submit) & (start < submit),
            "end_unknown": np.isnat(end) & started,
            "no_gpu_telemetry": alloc_gpus > 0,
            "lsf_mem_unit_assumed": known_mem & ~req["mem_unit_given"],
            "lsf_mem_per_host_assumed": known_mem & (method == "") & (np.nan_to_num(slots) > 1),
        }),
    })
    placed = placements(frame, hosts, req, method)
    return frame, placed


def _np(a) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def _epoch(seconds: np.ndarray) -> np.ndarray:
    """Epoch seconds → datetime64[s]; 0 (LSF's "no time") and unknown → NaT."""
    s = np.where(seconds > 0, seconds, np.nan)
    out = np.full(len(s), np.datetime64("NaT"), dtype="datetime64[s]")
    ok = ~np.isnan(s)
    out[ok] = s[ok].astype(np.int64).astype("datetime64[s]")
    return out


def _int(values) -> pd.arrays.IntegerArray:
    """Rounded values as Int64, NaN as null (no Python object per value)."""
    v = np.asarray(values, dtype="float64")
    mask = np.isnan(v)
    return pd.arrays.IntegerArray(np.where(mask, 0, np.round(v)).astype(np.int64), mask)


def _float(values) -> pd.arrays.FloatingArray:
    v = np.asarray(values, dtype="float64")
    mask = np.isnan(v)
    return pd.arrays.FloatingArray(np.where(mask, 0.0, v), mask)


def _utc(values: np.ndarray) -> pd.Series:
    return pd.Series(pd.DatetimeIndex(values).tz_localize("UTC")).astype("datetime64[ns, UTC]")


def _blank_null(a: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(pc.fill_null(a, ""), ""), pa.scalar(None, pa.string()), a)


def _strings(a) -> pd.arrays.ArrowStringArray:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return pd.arrays.ArrowStringArray(pc.cast(a, pa.large_string()))


__all__ = ["looks_like_lsf", "read_lsf"]
