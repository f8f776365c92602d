"""``read_pbs``: one accounting file → the canonical job table, its ledger, quarantine and placements."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...job_table import caveats_from_masks, conform, empty_jobs
from ...ledger import FileLedger, Quarantine, ReadResult, record_field_quarantine, record_quarantine
from ...node_table import conform_placements
from ...textio import read_bytes
from .placement import exec_gpus_table, exec_host_table, exec_vnode_table, placements
from .records import extract, parse_ids, read_lines, to_records
from .requests import first_known, memory_request, parse_nodes, parse_select, per_distinct
from .values import parse_duration, parse_epoch, parse_int, parse_size, states

#: message keys read: text, epoch times, then the rest (each with its parser)
TEXT = ("user", "group", "account", "Account_Name", "queue", "jobname", "exec_host", "exec_vnode",
        "exec_gpus", "Resource_List.select", "Resource_List.nodes", "Resource_List.neednodes",
        "total_execution_slots", "unique_node_count")
EPOCHS = ("ctime", "qtime", "etime", "start", "end")
SIZES = ("Resource_List.mem", "Resource_List.vmem", "Resource_List.pmem", "Resource_List.pvmem",
         "resources_used.mem", "resources_used.vmem")
DURATIONS = ("Resource_List.walltime", "resources_used.walltime", "resources_used.cput")
INTS = ("Resource_List.nodect", "Resource_List.ncpus", "Resource_List.ngpus", "Resource_List.procs",
        "resources_used.ncpus")
KEYS = TEXT + EPOCHS + SIZES + DURATIONS + INTS + ("Exit_status",)
PARSERS = {**dict.fromkeys(EPOCHS, parse_epoch), **dict.fromkeys(SIZES, parse_size),
           **dict.fromkeys(DURATIONS, parse_duration), **dict.fromkeys(INTS, parse_int)}


class _Sink:
    """The file's ledger and quarantine, and the raw text of its records (for quarantine rows)."""

    def __init__(self, name: str, lines: pa.ChunkedArray):
        self.ledger = FileLedger(file=name, format="pbs")
        self.quarantine = Quarantine()
        self.lines = lines

    def raw(self, line: int) -> str:
        return self.lines[line - 1].as_py()

    def take(self, lines: np.ndarray) -> pa.Array:
        """The text of these (1-based) lines; lines in file order are filtered chunk by chunk (no index lookup)."""
        at = np.asarray(lines, dtype=np.int64) - 1
        if len(at) > 1 and (np.diff(at) > 0).all():
            mask = np.zeros(len(self.lines), dtype=bool)
            mask[at] = True
            return pc.filter(self.lines, pa.array(mask)).combine_chunks()
        return pc.take(self.lines, pa.array(at, pa.int64())).combine_chunks()

    def record(self, line: int, field: str, reason: str) -> None:
        record_quarantine(self.ledger, self.quarantine, line, field, reason, self.raw(line))

    def field(self, line: int, field: str, reason: str) -> None:
        record_field_quarantine(self.ledger, self.quarantine, line, field, reason, self.raw(line))


def read_pbs(path, *, cluster: str | None = None, timezone: str = "UTC") -> ReadResult:
    """Read one accounting file (PBS Pro, OpenPBS or Torque) into the canonical job table, with its ledger,
    quarantine and placements.  ``timezone`` is the zone of the records' stamps (the server's local time);
    ``cluster`` overrides the name taken from the job ids' server part."""
    name = str(path)
    lines = read_lines(read_bytes(path))
    sink = _Sink(name, lines)
    records, rejected, blank = to_records(lines, timezone)
    sink.ledger.structural = blank
    sink.ledger.read = len(lines) - blank
    for line, field, reason in zip(rejected.line, rejected.field, rejected.reason, strict=True):
        sink.record(line, field, reason)
    if not len(records):
        return ReadResult(empty_jobs(), sink.ledger, sink.quarantine, conform_placements(None))
    jobs, places = _jobs(records, sink, cluster)
    led = sink.ledger
    led.folded = led.read - led.used - led.quarantined
    return ReadResult(jobs, led, sink.quarantine, places)


def _jobs(rec, sink: _Sink, cluster) -> tuple[pd.DataFrame, pd.DataFrame]:
    rtype = rec.rtype
    job_record = (rtype == "E") | (rtype == "D") | (rtype == "A")
    for i in np.flatnonzero(job_record & ~rec.job).tolist():
        sink.record(int(rec.line[i]), "id", f"not a job id: {rec.id[i].as_py()!r}")
    key = np.where(rec.job, rec.key, -1)
    is_e = (rtype == "E") & rec.job
    ended_or_started = np.unique(key[is_e | ((rtype == "S") & rec.job)])

    e_idx = np.flatnonzero(is_e & ~rec.parent)
    e_fields = extract(sink.take(rec.line[e_idx]), KEYS)
    e_ok = _validate_end(e_fields, rec.line[e_idx], sink)
    e_idx, e_fields = e_idx[e_ok], {k: pc.filter(v, pa.array(e_ok)) for k, v in e_fields.items()}
    last = _last_of(key[e_idx])
    e_idx, e_fields = e_idx[last], {k: pc.filter(v, pa.array(last)) for k, v in e_fields.items()}

    # a job deleted (D) or aborted by the server (A) with no end record and no start in this file never ran
    da = ((rtype == "D") | (rtype == "A")) & rec.job & ~rec.parent
    da &= ~np.isin(key, ended_or_started)
    d_idx = np.flatnonzero(da)
    d_idx = d_idx[_last_of(key[d_idx])]
    d_fields = _deleted_fields(rec, key, d_idx, sink)

    rows = np.concatenate([e_idx, d_idx])
    order = np.argsort(rows, kind="stable")  # the rows in file order
    rows = rows[order]
    take = pa.array(order, pa.int64())
    f = {k: pc.take(pa.concat_arrays([e_fields[k], d_fields[k]]), take) for k in KEYS}
    is_end = np.concatenate([np.ones(len(e_idx), bool), np.zeros(len(d_idx), bool)])[order]
    deleted_before = _deleted_before(rec, key, rows)
    frame, places = _assemble(rec, key, rows, is_end, f, sink, cluster, deleted_before)
    sink.ledger.used = len(rows)
    sink.ledger.jobs_emitted = len(frame)
    return frame, places


def _last_of(keys: np.ndarray) -> np.ndarray:
    """True for the last occurrence of each key (file order)."""
    if not len(keys):
        return np.zeros(0, dtype=bool)
    return ~pd.Series(keys).duplicated(keep="last").to_numpy()


def _validate_end(f: dict, lines: np.ndarray, sink: _Sink) -> np.ndarray:
    """End records need readable epoch times and an integer ``Exit_status``: otherwise the record is
    quarantined naming the first field that failed."""
    bad_any = np.zeros(len(lines), dtype=bool)
    for name in EPOCHS + ("Exit_status",):
        col = f[name]
        _, bad = parse_int(col) if name == "Exit_status" else parse_epoch(col)
        if name == "Exit_status":
            bad = bad | ~_valid(col)
        for i in np.flatnonzero(bad & ~bad_any).tolist():
            value = col[i].as_py()
            sink.record(int(lines[i]), name, "missing" if value is None else f"not an integer: {value!r}")
        bad_any |= bad
    return ~bad_any


def _valid(col: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.greater(pc.utf8_length(col), 0), False).to_numpy(zero_copy_only=False),
                      dtype=bool)


def _deleted_fields(rec, key, d_idx, sink) -> dict:
    """A never-run job's fields: its D/A record's own, else its last Q record's (PBS Pro's Q records carry the
    user, queue, times and requests; Torque's only the queue)."""
    d = extract(sink.take(rec.line[d_idx]), KEYS)
    if not len(d_idx):
        return d
    q_pos = np.flatnonzero(rec.rtype == "Q")
    q_keys = pd.Series(np.arange(len(q_pos)), index=key[q_pos])
    q_keys = q_keys[~q_keys.index.duplicated(keep="last")]
    pick = q_keys.reindex(key[d_idx]).to_numpy()
    has_q = ~np.isnan(pick)
    if not has_q.any():
        return d
    q_lines = rec.line[q_pos[pick[has_q].astype(np.int64)]]
    q = extract(sink.take(q_lines), KEYS)
    for k, parser in PARSERS.items():  # a Q record's unreadable value is set aside there, on its own line
        _, bad = parser(q[k])
        for i in np.flatnonzero(bad).tolist():
            sink.field(int(q_lines[i]), k, f"cannot parse {q[k][i].as_py()!r}")
        if bad.any():
            q[k] = pc.if_else(pa.array(bad), pa.scalar(None, pa.string()), q[k])
    spread = np.where(has_q, np.cumsum(has_q) - 1, -1)
    for k in KEYS:
        from_q = pc.take(q[k], pa.array(spread, pa.int64(), mask=~has_q))
        d[k] = pc.coalesce(d[k], from_q)
    return d


def _deleted_before(rec, key, rows) -> np.ndarray:
    """Per row, whether a D record for its job comes before the row's own record (someone deleted it)."""
    d_pos = np.flatnonzero(rec.rtype == "D")
    if not len(d_pos) or not len(rows):
        return np.zeros(len(rows), dtype=bool)
    first_d = pd.Series(d_pos, index=key[d_pos])
    first_d = first_d[~first_d.index.duplicated(keep="first")]
    at = first_d.reindex(key[rows]).to_numpy(dtype="float64")
    return ~np.isnan(at) & (at < rows)


def _field(f, name, parser, lines, sink) -> np.ndarray:
    """A parsed field; a value that cannot be read is set aside (the row kept, the figure unknown)."""
    val, bad = parser(f[name])
    for i in np.flatnonzero(bad).tolist():
        sink.field(int(lines[i]), name, f"cannot parse {f[name][i].as_py()!r}")
    return val


def _text(col: pa.Array) -> pd.Series:
    col = pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)
    return pd.Series(pd.arrays.ArrowStringArray(pc.cast(col, pa.large_string())))


def _assemble(rec, key, rows, is_end, f, sink, cluster, deleted_before):
    n = len(rows)
    raw_id = pc.take(rec.id, pa.array(rows, pa.int64()))
    ids = parse_ids(raw_id)
    lines = rec.line[rows]
    stamp = rec.stamp[rows]
    epoch = {}
    for k in EPOCHS:  # an end record's were checked whole (its line quarantined); a D/A record's are set aside
        epoch[k], bad = parse_epoch(f[k])
        for i in np.flatnonzero(bad & ~is_end).tolist():
            sink.field(int(lines[i]), k, f"cannot parse {f[k][i].as_py()!r}")
    size = {k: _field(f, k, parse_size, lines, sink) for k in SIZES}
    dur = {k: _field(f, k, parse_duration, lines, sink) for k in DURATIONS}
    ints = {k: _field(f, k, parse_int, lines, sink) for k in INTS}
    exit_status, _ = parse_int(f["Exit_status"])

    sel, sel_bad = per_distinct(parse_select, f["Resource_List.select"])
    nod, nod_bad = per_distinct(parse_nodes, f["Resource_List.nodes"])
    for name, bad in (("Resource_List.select", sel_bad), ("Resource_List.nodes", nod_bad)):
        for i in np.flatnonzero(bad).tolist():
            sink.field(int(lines[i]), name, f"cannot parse {f[name][i].as_py()!r}")
    nanv = np.full(n, np.nan)
    s = {k: sel.get(k, nanv) for k in ("chunks", "ncpus", "mem", "vmem", "ngpus")}
    nd = {k: nod.get(k, nanv) for k in ("nodes", "cpus", "gpus")}

    # flavour: PBS Pro writes select, exec_vnode, exec_host's ``*C``; Torque neednodes, total_execution_slots; else
    # the file's
    pro_mark = (_valid(f["Resource_List.select"]) | _valid(f["exec_vnode"])
                | np.asarray(pc.fill_null(pc.match_substring(f["exec_host"], "*"), False), dtype=bool))
    torque_mark = (_valid(f["Resource_List.neednodes"]) | _valid(f["total_execution_slots"])
                   | _valid(f["unique_node_count"]))
    file_pro = bool(pro_mark.any()) and not bool(torque_mark.any())
    pbspro = pro_mark | (~torque_mark & file_pro)

    # placements
    host, host_bad = exec_host_table(f["exec_host"])
    vnode, vnode_bad = exec_vnode_table(f["exec_vnode"])
    gpus_t, gpus_bad = exec_gpus_table(f["exec_gpus"])
    for name, bad in (("exec_host", host_bad), ("exec_vnode", vnode_bad), ("exec_gpus", gpus_bad)):
        for i in np.flatnonzero(bad).tolist():
            sink.field(int(lines[i]), name, f"cannot parse {f[name][i].as_py()!r}")
    places, held = placements(n, host, vnode, gpus_t, ~pbspro)
    ran = ~np.isnan(held["nodes"])

    # requests
    req_cpus = first_known(ints["Resource_List.ncpus"], s["ncpus"], nd["cpus"], ints["Resource_List.procs"])
    req_nodes = first_known(ints["Resource_List.nodect"], s["chunks"], nd["nodes"])
    req_gpus = np.nan_to_num(first_known(ints["Resource_List.ngpus"], s["ngpus"], nd["gpus"]))
    memreq = memory_request({"mem": size["Resource_List.mem"], "vmem": size["Resource_List.vmem"],
                             "pmem": size["Resource_List.pmem"], "pvmem": size["Resource_List.pvmem"],
                             "select_mem": s["mem"], "select_vmem": s["vmem"]}, req_cpus)
    used_mem, used_vmem = size["resources_used.mem"], size["resources_used.vmem"]
    virtual = memreq["virtual"] | (np.isnan(memreq["bytes"]) & np.isnan(used_mem) & ~np.isnan(used_vmem))
    peak = np.where(virtual, used_vmem, used_mem)

    # times: epoch fields; where one is missing, a record's own stamp (server local time, read in ``timezone``)
    submit = _seconds(epoch["ctime"])
    start = _seconds(epoch["start"])
    end = _seconds(epoch["end"])
    q_stamp = _stamp_of(rec, key, rows, "Q")
    s_stamp = _stamp_of(rec, key, rows, "S")
    submit_from_stamp = np.isnat(submit) & ~np.isnat(q_stamp)
    submit = np.where(submit_from_stamp, q_stamp, submit)
    start_from_stamp = is_end & np.isnat(start) & ran & ~np.isnat(s_stamp)
    start = np.where(start_from_stamp, s_stamp, start)
    end_from_stamp = np.isnat(end)
    end = np.where(end_from_stamp, stamp, end)
    span = np.where(np.isnat(end) | np.isnat(start), np.nan, (end - start).astype("timedelta64[s]").astype(np.int64))
    elapsed = first_known(dur["resources_used.walltime"], np.where(np.isnat(start), np.nan, span))
    elapsed = np.where(np.isnat(start) & ~ran & np.isnan(elapsed), 0.0, elapsed)
    limit = dur["Resource_List.walltime"]

    # state
    req_mem = memreq["bytes"]
    at_limit = ~np.isnan(limit) & (elapsed >= limit)
    over_mem = ~np.isnan(req_mem) & (peak >= req_mem)
    state = states(np.nan_to_num(exit_status), pbspro, at_limit, over_mem, deleted_before)
    state = np.where(is_end, state, np.where(rec.rtype[rows] == "A", "FAILED", "CANCELLED"))
    signal = np.where(is_end & (exit_status >= 256), exit_status - 256, np.nan)

    account = pc.coalesce(_blank_null(f["account"]), _blank_null(f["Account_Name"]))
    from_group = ~_valid(account) & _valid(f["group"])
    account = pc.coalesce(account, _blank_null(f["group"]))

    alloc_gpus = np.where(~np.isnan(held["gpus"]), held["gpus"], np.where(ran, req_gpus, np.nan))
    has_usage = np.zeros(n, dtype=bool)
    for k in ("resources_used.mem", "resources_used.vmem", "resources_used.walltime", "resources_used.cput"):
        has_usage |= _valid(f[k])
    cpu_used = np.where(is_end, dur["resources_used.cput"], 0.0)
    server, job_id, index = ids["server"], ids["job_id"], ids["index"]
    cav = caveats_from_masks(n, {
        "pbs_vmem": virtual & (~np.isnan(req_mem) | ~np.isnan(peak)),
        "pbs_mem_per_process": memreq["per_process"],
        "pbs_stamp_time": submit_from_stamp | start_from_stamp | end_from_stamp,
        "pbs_account_is_group": from_group,
        "pbs_deleted_before_run": ~is_end,
        "no_usage_fields": is_end & ran & ~has_usage,
        "no_gpu_telemetry": np.nan_to_num(alloc_gpus) > 0,
        "start_before_submit": ~np.isnat(start) & ~np.isnat(submit) & (start < submit),
    })
    frame = pd.DataFrame({
        "cluster": _strs(np.full(n, cluster, dtype=object) if cluster else np.where(server != "", server, "pbs")),
        "job_id": _strs(job_id),
        "job_id_raw": _text(raw_id),
        "array_job_id": _ints(np.where(index != "", ids["num"], "")),
        "array_task_id": _ints(index),
        "source": "pbs",
        "source_file": sink.ledger.file,
        "source_line": lines,
        "user": _text(f["user"]),
        "account": _text(account),
        "partition": _text(f["queue"]),
        "job_name": _text(f["jobname"]),
        "submit_time": _utc(submit),
        "eligible_time": _utc(_seconds(epoch["etime"])),
        "start_time": _utc(start),
        "end_time": _utc(end),
        "elapsed_s": _round(elapsed),
        "time_limit_s": _round(limit),
        "state": _strs(state),
        "exit_code": _round(np.where(is_end, exit_status, np.nan)),
        "signal": _round(signal),
        "req_nodes": _round(req_nodes),
        "req_cpus": req_cpus,
        "req_mem_bytes": _round(req_mem),
        "req_gpus": req_gpus,
        "alloc_nodes": _round(held["nodes"]),
        "alloc_cpus": first_known(held["cpus"], ints["resources_used.ncpus"]),
        "alloc_mem_bytes": _round(held["mem"]),
        "alloc_gpus": alloc_gpus,
        "cpu_used_s": cpu_used,
        "mem_peak_bytes": _round(peak),
        "node_list": _strs(held["node_list"]),
        "caveats": cav,
    })
    frame = conform(frame)
    places = _placement_rows(places, frame)
    return frame, places


def _strs(values: np.ndarray) -> pd.arrays.ArrowStringArray:
    """An object array of str (None for null) as a ``string`` column, built by pyarrow."""
    return pd.arrays.ArrowStringArray(pa.array(np.asarray(values, dtype=object), pa.large_string()))


def _blank_null(col: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)


def _seconds(values: np.ndarray) -> np.ndarray:
    out = np.full(len(values), np.datetime64("NaT"), dtype="datetime64[s]")
    ok = ~np.isnan(values)
    out[ok] = values[ok].astype(np.int64).astype("datetime64[s]")
    return out


def _stamp_of(rec, key, rows, rtype: str) -> np.ndarray:
    """Per row, the stamp of the last record of ``rtype`` for its job (NaT when none)."""
    pos = np.flatnonzero(rec.rtype == rtype)
    if not len(pos):
        return np.full(len(rows), np.datetime64("NaT"), dtype="datetime64[s]")
    last = pd.Series(pos, index=key[pos])
    last = last[~last.index.duplicated(keep="last")]
    at = last.reindex(key[rows]).to_numpy(dtype="float64")
    out = np.full(len(rows), np.datetime64("NaT"), dtype="datetime64[s]")
    ok = ~np.isnan(at)
    out[ok] = rec.stamp[at[ok].astype(np.int64)]
    return out


def _utc(values: np.ndarray) -> pd.Series:
    return pd.Series(pd.DatetimeIndex(values).tz_localize("UTC")).astype("datetime64[ns, UTC]")


def _round(values) -> pd.arrays.IntegerArray:
    v = np.asarray(values, dtype="float64")
    mask = np.isnan(v)
    return pd.arrays.IntegerArray(np.where(mask, 0, np.round(v)).astype(np.int64), mask)


def _ints(values: np.ndarray) -> pd.arrays.IntegerArray:
    v = np.asarray(values, dtype=object)
    mask = v == ""
    data = np.zeros(len(v), dtype=np.int64)
    if not mask.all():
        data[~mask] = v[~mask].astype(np.int64)
    return pd.arrays.IntegerArray(data, mask)


def _placement_rows(places: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    if not len(places):
        return conform_placements(None)
    rows = places["row"].to_numpy(dtype=np.int64)
    return conform_placements(pd.DataFrame({
        "cluster": frame["cluster"].to_numpy()[rows],
        "node": places["node"].to_numpy(),
        "job_id": frame["job_id"].to_numpy()[rows],
        "partition": frame["partition"].to_numpy()[rows],
        "cpus": places["cpus"].to_numpy(),
        "cpu_index_max": pd.array(places["cpu_index_max"].to_numpy(), dtype="Float64").round().astype("Int64"),
        "mem_bytes": pd.array(places["mem_bytes"].to_numpy(), dtype="Float64").round().astype("Int64"),
        "gpus": places["gpus"].to_numpy(),
    }))
