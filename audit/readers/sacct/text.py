"""Reader for ``sacct --parsable2`` and ``-p`` text (any field subset and order, ``|``, ``^|^`` or a given
``--delimiter``).

With a header line (sacct field names in any order), fields are taken by name; without one, a known field
order is recognised by its field count (the 26-field XDMoD order) (:mod:`audit.readers.sacct.lines`).  Step lines fold into their job (see :mod:`audit.readers.sacct.fold`);
every line ends used, folded or quarantined (:mod:`audit.ledger`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...job_table import caveats_from_masks, conform, empty_jobs
from ...ledger import FileLedger, Quarantine, ReadResult, record_field_quarantine, record_quarantine
from ...units import arrow_str, expand_index_ranges, parse_int, parse_timestamp, present
from ..jobstats import reconcile_jobstats
from .distinct import per_distinct
from .fold import fold, step_usage
from .lines import split_file, take_rows
from .resources import resources
from .shapes import parse_clock, parse_iso_utc, plain_numbers
from .states import normalise_states

_JOBID = (r"^(?P<base>\d+)(?:_(?P<task>\d+)|_\[(?P<range>[^\]]*)\])?(?:\+(?P<het>\d+))?"
          r"(?:\.(?P<step>[A-Za-z0-9_\-]+))?$")


def read_sacct(path, *, cluster: str | None = None, timezone: str = "UTC",
               fields: list[str] | None = None, delimiter: str | None = None) -> ReadResult:
    """Read one ``sacct --parsable2`` (or ``-p``) dump into the canonical job table, its ledger and quarantine.

    ``timezone`` is the zone sacct printed its timestamps in (the cluster's local time); ``fields`` names
    the columns of a headerless dump whose order is not a known one; ``delimiter`` is the one given to
    ``sacct --delimiter`` (default: ``^|^`` when the first line holds it, else ``|``).
    """
    name = str(path)
    ledger = FileLedger(file=name, format="sacct")
    quarantine = Quarantine()
    split = split_file(path, name, ledger, quarantine, fields, delimiter)
    if not split.columns or len(split.line_no) == 0:
        return ReadResult(empty_jobs(), ledger, quarantine)
    if "JobID" not in split.columns:
        from ...textio import InputError

        raise InputError(f"{name}: the header has no JobID field")
    jobs = _read_rows(split, name, cluster, timezone, ledger, quarantine)
    del split  # the fields as read, and every intermediate column, are freed before the table is conformed
    return ReadResult(conform(jobs), ledger, quarantine)


def _col(split, name) -> pa.Array | None:
    return split.columns.get(name)


def _read_rows(split, name, cluster, timezone, ledger, quarantine) -> pd.DataFrame:
    cols = split.columns
    job_id = pc.utf8_trim_whitespace(cols["JobID"])
    ids = _job_ids(job_id)
    id_ok = np.asarray(pc.is_valid(ids), dtype=bool)
    step = _str_np(pc.struct_field(ids, "step"))
    is_step = id_ok & (step != "")
    is_job = id_ok & ~is_step

    jidx = np.flatnonzero(is_job)
    sidx = np.flatnonzero(is_step)
    # the job id of every line, steps' without their ``.step``: needed only to find the steps' jobs
    job_key = _str_np(pc.replace_substring_regex(job_id, r"\..*$", "")) if len(sidx) else None

    parsed, job_bad = _parse_job_fields(cols, jidx, timezone)
    usage_job, ujb = step_usage(cols, jidx)
    usage_steps, usb = step_usage(cols, sidx)
    states, state_bad = normalise_states(cols.get("State"), jidx)
    job_bad.append(("State", state_bad))
    res, res_bad, res_cav = resources(cols, jidx, parsed)
    job_bad.extend(res_bad)
    job_bad.extend(ujb.items())
    js = _jobstats(cols, jidx)

    job_bad_any, job_bad_field = _first_bad(job_bad, len(jidx))
    step_bad_any, step_bad_field = _first_bad(list(usb.items()), len(sidx))
    bad_row = ~id_ok
    bad_field = np.where(~id_ok, "JobID", "").astype(object)
    bad_row[jidx] |= job_bad_any
    bad_field[jidx[job_bad_any]] = job_bad_field[job_bad_any]
    bad_row[sidx] |= step_bad_any
    bad_field[sidx[step_bad_any]] = step_bad_field[step_bad_any]

    # each step belongs to the nearest earlier allocation line with its job id (--duplicates safe)
    keep_job = ~job_bad_any
    kj = jidx[keep_job]
    parent = _assign_parents(job_key, kj, sidx[~step_bad_any], split.line_no)
    orphan = parent < 0
    orphan_rows = sidx[~step_bad_any][orphan]
    bad_row[orphan_rows] = True
    bad_field[orphan_rows] = "JobID"

    orphans = set(orphan_rows.tolist())
    for i in np.flatnonzero(bad_row):
        field_name = bad_field[i] or "line"
        value = _value_of(cols, field_name, i)
        if i in orphans:
            reason = "step line without its job's allocation line"
        elif field_name == "State":
            reason = f"unknown state {value!r}"
        else:
            reason = f"cannot parse {value!r}"
        record_quarantine(ledger, quarantine, int(split.line_no[i]), field_name, reason, split.raw_line(i))

    folded_rows = sidx[~step_bad_any][~orphan]
    ledger.folded += len(folded_rows)
    ledger.used += int(keep_job.sum())

    step_sel = ~step_bad_any
    step_keep = np.flatnonzero(step_sel)[~orphan]
    step_names = step[sidx[step_keep]]
    all_jobs_kept = bool(keep_job.all())
    folded = fold(kj, parent[~orphan], step_names,
                  usage_job if all_jobs_kept else usage_job[keep_job].reset_index(drop=True),
                  usage_steps.iloc[step_keep].reset_index(drop=True))
    del usage_job, usage_steps
    step_states, _ = normalise_states(cols.get("State"), sidx[step_keep])
    oom = np.zeros(len(kj), bool)
    np.logical_or.at(oom, parent[~orphan], step_states == "OUT_OF_MEMORY")

    if js is not None:
        js_kept = js[keep_job].reset_index(drop=True)
        for pos in np.flatnonzero(js_kept["error"].notna().to_numpy()):
            i = int(kj[pos])
            record_field_quarantine(ledger, quarantine, int(split.line_no[i]), "AdminComment",
                                    f"jobstats {js_kept['error'].iat[pos]}", split.raw_line(i))
        folded = _apply_jobstats(folded, js_kept)
    has_usage = any(c in cols for c in ("TotalCPU", "MaxRSS", "AveRSS", "TRESUsageInTot"))
    _keep_only(split, _TEXT_FIELDS)  # every line is accounted for: the fields read are freed as the table is built
    del job_id, job_key, step
    frame, rng = _assemble(cols, kj, ids, keep_job, parsed, states, res, res_cav, folded, oom, split, name, cluster,
                           has_usage)
    if js is not None:
        frame = reconcile_jobstats(frame, js_kept)
    frame = _expand_array_ranges(frame, rng)
    ledger.jobs_emitted = len(frame)
    return frame


#: the fields the table takes as text (the others are parsed into numbers before it is built)
_TEXT_FIELDS = ("JobID", "JobIDRaw", "Cluster", "User", "Account", "Partition", "QOS", "JobName", "NodeList")


def _keep_only(split, names) -> None:
    """Drop every field but ``names`` from ``split`` (and the fields kept for rebuilding a quarantined line)."""
    split.tokens = None
    for key in [k for k in split.columns if k not in names]:
        del split.columns[key]


def _job_ids(job_id: pa.Array) -> pa.StructArray:
    """The parts of each JobID (``base``, array ``task`` or ``range``, ``het`` offset, ``step``), null where the
    id is unreadable.  A column of plain job numbers (``sacct -X`` of jobs outside arrays) needs no regex."""
    if isinstance(job_id, pa.ChunkedArray):
        job_id = job_id.combine_chunks()
    if plain_numbers(job_id):
        none = pa.nulls(len(job_id), pa.string())
        return pa.StructArray.from_arrays([job_id, none, none, none, none], names=["base", "task", "range", "het", "step"])
    return pc.extract_regex(job_id, _JOBID)


def _jobstats(cols, jidx) -> pd.DataFrame | None:
    """Decoded jobstats summaries of the allocation rows, or None when the dump has no AdminComment."""
    if "AdminComment" not in cols:
        return None
    from ..jobstats import decode_jobstats

    text = pd.Series(take_rows(cols["AdminComment"], jidx).to_pylist(), dtype="string")
    return decode_jobstats(text).reset_index(drop=True)


def _apply_jobstats(folded: pd.DataFrame, js: pd.DataFrame) -> pd.DataFrame:
    """Where a jobstats summary has data it wins: cgroup figures cover every process on every node."""
    use = js["has_data"].to_numpy(dtype=bool)
    out = folded.copy()
    for col in ("cpu_used_s", "mem_peak_bytes"):
        val = js[col].astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
        out[col] = np.where(use & ~np.isnan(val), val, out[col].to_numpy())
    for col in ("gpu_util_mean", "gpu_mem_peak_bytes"):
        val = js[col].astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
        out[col] = np.where(use, val, np.nan)
    out["jobstats"] = use
    out.loc[use, "mem_from_batch_only"] = False
    out.loc[use, "single_task_only"] = False
    out.loc[use, "upper_bound"] = False
    return out


def _str_np(a) -> np.ndarray:
    return np.asarray(pc.fill_null(a, "").to_numpy(zero_copy_only=False), dtype=object)


def _first_bad(masks: list[tuple[str, np.ndarray]], n: int) -> tuple[np.ndarray, np.ndarray]:
    if not masks or n == 0:
        return np.zeros(n, bool), np.full(n, "", dtype=object)
    names = [m[0] for m in masks]
    stack = np.vstack([m[1] for m in masks])
    anyb = stack.any(axis=0)
    first = np.array(names, dtype=object)[stack.argmax(axis=0)]
    return anyb, np.where(anyb, first, "")


def _value_of(cols, field_name, i) -> str:
    col = cols.get(field_name)
    return col[int(i)].as_py() if col is not None else ""


def _parse_job_fields(cols, jidx, timezone):
    parsed, bad = {}, []
    for key, name in (("submit", "Submit"), ("eligible", "Eligible"), ("start", "Start"), ("end", "End")):
        col = cols.get(name)
        if col is None:
            parsed[key] = np.full(len(jidx), np.datetime64("NaT"), dtype="datetime64[s]")
            continue
        parsed[key], b = (parse_iso_utc(take_rows(col, jidx)) if timezone.upper() == "UTC"
                          else parse_timestamp(take_rows(col, jidx), timezone))
        bad.append((name, b))
    for key, name, parser in (
        ("elapsed", "Elapsed", parse_clock), ("elapsed_raw", "ElapsedRaw", parse_int),
        ("limit", "Timelimit", parse_clock), ("limit_raw", "TimelimitRaw", parse_int),
        ("nnodes", "NNodes", parse_int), ("ncpus", "NCPUS", parse_int), ("reqcpus", "ReqCPUS", parse_int),
        ("reqnodes", "ReqNodes", parse_int),
    ):
        col = cols.get(name)
        if col is None:
            parsed[key] = np.full(len(jidx), np.nan)
            continue
        parsed[key], b = per_distinct(parser, take_rows(col, jidx))
        bad.append((name, b))
    if "ExitCode" in cols:
        parsed["exit"], parsed["signal"], b = per_distinct(_exit_codes, take_rows(cols["ExitCode"], jidx))
        bad.append(("ExitCode", b))
    else:
        parsed["exit"] = parsed["signal"] = np.full(len(jidx), np.nan)
    return parsed, bad


def _exit_codes(col) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``ExitCode`` ``code:signal`` → the two numbers (NaN where unreadable) and the mask of unreadable entries."""
    ex = pc.extract_regex(pc.utf8_trim_whitespace(col), r"^(?P<c>-?\d+):(?P<s>-?\d+)$")
    code = np.asarray(pc.cast(pc.struct_field(ex, "c"), pa.float64()).to_numpy(zero_copy_only=False), float)
    sig = np.asarray(pc.cast(pc.struct_field(ex, "s"), pa.float64()).to_numpy(zero_copy_only=False), float)
    return code, sig, present(col) & np.isnan(code)


def _assign_parents(job_key, kj, srows, line_no) -> np.ndarray:
    """Position in ``kj`` of the nearest earlier allocation line with the same job id; -1 when none."""
    if len(srows) == 0:
        return np.zeros(0, dtype=int)
    if len(kj) == 0:
        return np.full(len(srows), -1)
    left = pd.DataFrame({"line": line_no[srows], "key": pd.Series(job_key[srows], dtype="string")})
    right = pd.DataFrame({"line": line_no[kj], "key": pd.Series(job_key[kj], dtype="string"), "pos": np.arange(len(kj))})
    left["order"] = np.arange(len(left))
    merged = pd.merge_asof(left.sort_values("line"), right.sort_values("line"), on="line", by="key",
                           direction="backward")
    merged = merged.sort_values("order")
    return merged["pos"].fillna(-1).to_numpy(dtype=int)


def _text(cols, name, idx, free: bool = False) -> pd.Series:
    """A text field of rows ``idx``, trimmed, ``""`` as null; with ``free``, the field is taken out of ``cols``."""
    col = cols.pop(name, None) if free else cols.get(name)
    if col is None:
        return pd.Series(pd.array([None] * len(idx), dtype="string"))
    a = pc.utf8_trim_whitespace(take_rows(col, idx))
    return pd.Series(_strings(pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a)))


def _strings(a: pa.Array) -> pd.arrays.ArrowStringArray:
    """A pyarrow string array as pandas' ``string`` column (no Python object per value)."""
    return pd.arrays.ArrowStringArray(pc.cast(a, pa.large_string()))


def _object_strings(values: np.ndarray) -> pd.arrays.ArrowStringArray:
    """An object array of str as a ``string`` column, ``""`` as null."""
    return _strings(pa.array(values, type=pa.string(), mask=values == ""))


def _id_parts(ids: pa.StructArray, kj) -> dict:
    """The array and heterogeneous-job parts of the kept jobs' ids: ``array_job_id``, ``array_task_id``,
    ``het_job_id``, ``het_job_offset`` (Int64, null where the id has no such part) and the unexpanded array ranges
    (``""`` where none).  Ids that are all plain job numbers carry none of them."""
    idk = take_rows(ids, kj)
    n = len(idk)
    task, rng, het = (pc.fill_null(pc.struct_field(idk, k), "") for k in ("task", "range", "het"))
    if all(pc.all(pc.equal(a, "")).as_py() in (True, None) for a in (task, rng, het)):
        none = pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
        return {"array_job_id": none, "array_task_id": none.copy(), "het_job_id": none.copy(),
                "het_job_offset": none.copy(), "range": np.full(n, "", dtype=object)}
    base = _str_np(pc.struct_field(idk, "base"))
    task, rng, het = _str_np(task), _str_np(rng), _str_np(het)
    return {"array_job_id": _int_or_null(np.where((task != "") | (rng != ""), base, "")),
            "array_task_id": _int_or_null(task), "het_job_id": _int_or_null(np.where(het != "", base, "")),
            "het_job_offset": _int_or_null(het), "range": rng}


def _assemble(cols, kj, ids, keep_job, parsed, states, res, res_cav, folded, oom, split, name, cluster, has_usage):
    """The table of the kept jobs, and their unexpanded array ranges.  The text fields are taken out of ``cols`` as
    they become columns (each is freed once its column is built)."""
    parts = _id_parts(ids, kj)
    rng = parts.pop("range")
    every = bool(keep_job.all())  # an allocation-only dump: nothing to leave out

    def kept(v):
        return v if every else v[keep_job]

    kp = {k: kept(v) for k, v in parsed.items()}
    resk = {k: kept(v) for k, v in res.items()}
    st = kept(states)
    st = np.where((st == "FAILED") & oom, "OUT_OF_MEMORY", st)
    job_id = _text(cols, "JobID", kj, free=True)
    raw = _text(cols, "JobIDRaw", kj, free=True)
    elapsed = np.where(np.isnan(kp["elapsed"]), kp["elapsed_raw"], kp["elapsed"])
    limit = np.where(np.isnan(kp["limit"]), kp["limit_raw"] * 60, kp["limit"])
    cpu_used = folded["cpu_used_s"].to_numpy()
    alloc_cpus = resk["alloc_cpus"]
    long_zero = (cpu_used == 0) & (np.nan_to_num(elapsed) > 60) & (np.nan_to_num(alloc_cpus) > 0)
    submit, start, end = kp["submit"], kp["start"], kp["end"]
    cav = caveats_from_masks(len(kj), {
        "no_usage_fields": np.full(len(kj), not has_usage),
        "maxrss_batch_only": folded["mem_from_batch_only"].to_numpy() & (np.nan_to_num(resk["alloc_nodes"]) > 1),
        "maxrss_single_task": folded["single_task_only"].to_numpy(),
        "maxrss_times_tasks": folded["upper_bound"].to_numpy(),
        "totalcpu_zero": long_zero,
        "start_before_submit": ~np.isnat(start) & ~np.isnat(submit) & (start < submit),
        "end_unknown": np.isnat(end) & ~np.isnat(start),
        "array_range_unexpanded": rng != "",
        "jobstats": folded["jobstats"].to_numpy() if "jobstats" in folded else np.zeros(len(kj), bool),
        "no_gpu_telemetry": (np.nan_to_num(resk["alloc_gpus"]) > 0)
        & ~(folded["jobstats"].to_numpy() if "jobstats" in folded else np.zeros(len(kj), bool)),
        **{k: kept(v) for k, v in res_cav.items()},
    })
    cluster_col = _text(cols, "Cluster", kj, free=True)
    if cluster:
        cluster_col = cluster_col.fillna(cluster)
    frame = pd.DataFrame({
        "cluster": cluster_col,
        "job_id": job_id,
        "job_id_raw": raw.fillna(job_id),
        **parts,
        "source": _strings(pa.repeat(pa.scalar("sacct", pa.string()), len(kj))),
        "source_file": _strings(pa.repeat(pa.scalar(name, pa.string()), len(kj))),
        "source_line": split.line_no[kj],
        "user": _text(cols, "User", kj, free=True),
        "account": _text(cols, "Account", kj, free=True),
        "partition": _text(cols, "Partition", kj, free=True),
        "qos": _text(cols, "QOS", kj, free=True),
        "job_name": _text(cols, "JobName", kj, free=True),
        "submit_time": _utc(submit),
        "eligible_time": _utc(kp["eligible"]),
        "start_time": _utc(start),
        "end_time": _utc(end),
        "elapsed_s": _int(elapsed),
        "time_limit_s": _int(limit),
        "state": _object_strings(st),
        "exit_code": _int(kp["exit"]),
        "signal": _int(kp["signal"]),
        "req_nodes": _int(resk["req_nodes"]),
        "req_cpus": _int(resk["req_cpus"]),
        "req_mem_bytes": _int(resk["req_mem_bytes"]),
        "req_gpus": _int(resk["req_gpus"]),
        "gpu_type": _object_strings(resk["gpu_type"]),
        "alloc_nodes": _int(resk["alloc_nodes"]),
        "alloc_cpus": _int(alloc_cpus),
        "alloc_mem_bytes": _int(resk["alloc_mem_bytes"]),
        "alloc_gpus": _int(resk["alloc_gpus"]),
        "cpu_used_s": _float(cpu_used),
        "mem_peak_bytes": _int(folded["mem_peak_bytes"].to_numpy()),
        "gpu_util_mean": _float(folded["gpu_util_mean"] if "gpu_util_mean" in folded else np.full(len(kj), np.nan)),
        "gpu_mem_peak_bytes": _int(folded["gpu_mem_peak_bytes"] if "gpu_mem_peak_bytes" in folded
                                   else np.full(len(kj), np.nan)),
        "node_list": _text(cols, "NodeList", kj, free=True).replace({"None assigned": None}),
        "caveats": cav,
    }, copy=False)
    return frame, rng


def _int(values) -> pd.arrays.IntegerArray:
    """Rounded values as Int64, NaN as null: built from the data and the mask, no Python object per value."""
    v = np.asarray(values, dtype="float64")
    mask = np.isnan(v)
    r = np.round(v)
    r[mask] = 0.0
    return pd.arrays.IntegerArray(r.astype(np.int64), mask)


def _float(values) -> pd.arrays.FloatingArray:
    v = np.asarray(values, dtype="float64")
    mask = np.isnan(v)
    return pd.arrays.FloatingArray(np.where(mask, 0.0, v), mask)


def _int_or_null(values) -> pd.arrays.IntegerArray:
    """Digit strings as Int64, ``""`` as null."""
    v = np.asarray(values, dtype=object)
    mask = v == ""
    data = np.zeros(len(v), dtype=np.int64)
    if not mask.all():
        data[~mask] = v[~mask].astype(np.int64)
    return pd.arrays.IntegerArray(data, mask)


def _utc(values) -> pd.Series:
    return pd.Series(pd.DatetimeIndex(values).tz_localize("UTC")).astype("datetime64[ns, UTC]")


def _expand_array_ranges(frame: pd.DataFrame, rng: np.ndarray) -> pd.DataFrame:
    """``123_[1-3,7]`` lines (arrays sacct did not expand; ``rng``, per row, ``""`` where none) become one row per
    listed task."""
    ranged = np.flatnonzero(rng != "")
    if len(ranged) == 0:
        return frame
    reps = np.ones(len(frame), dtype=int)
    tasks: list[int] = []
    for i in ranged:
        idx = expand_index_ranges(rng[i])
        reps[i] = len(idx)
        tasks.extend(idx)
    out = frame.loc[np.repeat(frame.index.to_numpy(), reps)].reset_index(drop=True)
    expanded = np.repeat(rng != "", reps)
    out.loc[expanded, "array_task_id"] = tasks
    base = out.loc[expanded, "array_job_id"].astype(str)
    out.loc[expanded, "job_id"] = (base + "_" + pd.Series(tasks, index=base.index).astype(str)).astype("string")
    return out


__all__ = ["read_sacct", "arrow_str"]
