"""Reader for ``sacct --json`` / slurmrestd ``/slurmdb/v0.0.XX/jobs`` output (data parser v0.0.38 to v0.0.44).

The file is one JSON object whose ``jobs`` array holds slurmdb job records, each with its ``steps``.
Differences between parser versions that this reader absorbs:

* **Numbers.** v0.0.38/39 print plain integers, with Slurm's sentinels for "not set" (NO_VAL
  4294967294, 2**64-2) and "unlimited" (INFINITE 4294967295, 2**64-1); v0.0.40+ print
  ``{"set": bool, "infinite": bool, "number": n}``.  Both become a value, null (not set) or infinite.
* **State.** v0.0.38/39 ``state.current`` is a string; v0.0.40+ a list of state names and flags.  The
  first entry that is a job state is the primary one; ``CANCELLED by 123`` becomes ``CANCELLED``; Slurm
  states outside the canonical set map as the text reader maps them (``COMPLETING`` → RUNNING,
  ``SPECIAL_EXIT`` → FAILED, …).  A FAILED job with an OUT_OF_MEMORY step becomes OUT_OF_MEMORY.
* **Time limit.** ``time.limit`` is in minutes (plain or number object); infinite, not set and 0 (Slurm's
  "no limit") give a null ``time_limit_s``.
* **Requested memory.** v0.0.38/39 give ``required.memory`` in MiB with the per-CPU flag in the top bit
  (2**63; the 32-bit legacy flag 0x80000000 is also recognised); without the flag it is per node.
  v0.0.40+ give ``required.memory_per_cpu`` / ``required.memory_per_node`` (number objects, MiB).  The
  job total is the ``mem`` entry of ``tres.requested`` when present (Slurm records the job total there;
  the sacct text reader uses the same rule), else per-CPU × requested CPUs or per-node × requested
  nodes.  Per node 0 (``--mem=0``: all of each node's memory) is unknown in bytes (null).  MiB → bytes
  uses 1024**2.
* **Exit code.** v0.0.38 ``{"status": "SUCCESS", "return_code": 0, "signal": {"signal_id": 9}}``,
  v0.0.39 ``signal.id`` plain, v0.0.40+ ``status`` a list and ``return_code``/``signal.id`` number objects;
  a bare integer is read as a raw wait status.  PROVENANCE: Slurm 22.05's ``sacct --json`` (v0.0.38)
  reports wrong exit codes (SUCCESS for a job that exited 1); take exit codes from ``sacct`` text when
  both are available.
* **TRES lists** (``tres.allocated``, ``tres.requested``; entries ``{type, name, id, count}``) are the same
  in every version.  GPUs: the ``gres`` entry named ``gpu`` is the count; typed entries ``gpu:TYPE`` give
  the type (several types joined with ``+``, sorted) and their sum is the count when the untyped entry is
  absent.  A non-empty list without a GPU entry means 0 GPUs; an empty list (pending jobs) means unknown.
  Sites that do not list ``gres/gpu`` in ``AccountingStorageTRES`` record no GPUs at all (the real
  slurmrestd samples are such clusters: GPU jobs show 0 GPUs in their TRES).

Steps fold into their job:

* ``cpu_used_s`` = the job's ``time.total`` (slurmdbd's sum over steps) when above zero, else the sum
  over steps of ``time.total`` (user + system).  When neither the job nor any step carries usage
  (all CPU times zero and no usage TRES on any step) the usage is unknown: null, caveat
  ``no_usage_fields``.
* A step's memory is ``tres.requested.total`` ``mem`` (bytes: the sum over the step's tasks of each
  task's peak, the best estimate of the step's memory); else ``tres.requested.average`` × tasks; else
  ``tres.requested.max`` (the largest single task) × ``⌈tasks / nodes⌉`` × nodes, an upper bound (caveat
  ``maxrss_times_tasks``; exact for one task), or alone when the tasks per node are unknown, a lower bound
  (caveat ``maxrss_single_task``).  ``mem_peak_bytes`` is the largest step memory over the job's steps.
* A jobstats summary in ``comment.administrator`` (:mod:`audit.readers.jobstats`) supplies ``cpu_used_s`` and
  ``mem_peak_bytes`` (cgroup figures covering every node) where it has them, and the GPU figures
  (caveat ``jobstats``).

Ledger: ``read`` counts records: each job record and each step record inside it.  A job record is used
(one row, or one row per task of an unexpanded array range) or quarantined; each step of a used job is
folded, or quarantined when malformed; the steps of a quarantined job are quarantined with it.  In
quarantine rows ``line`` is the 1-based index of the job record in the ``jobs`` array, ``field`` the JSON
path that failed, and ``raw`` the record's (or step's) JSON text truncated to 2,000 characters.  A
corrupt jobstats payload quarantines only that field: the job is still used, without jobstats figures,
and the quarantine row (field ``comment.administrator``) is counted in ``fields_quarantined``.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ...job_table import caveats_from_masks, conform
from ...ledger import FileLedger, Quarantine, ReadResult, record_field_quarantine, record_quarantine
from ...textio import InputError, read_text
from ...units import expand_index_ranges
from ..jobstats import decode_jobstats, reconcile_jobstats
from .json_record import job_fields, step_fields
from .json_values import MAX_INT, MIB, NON_USAGE_STEPS, RAW_LIMIT, RecordError, raw_json, seq

# ---------------------------------------------------------------- the file


def load_jobs(path) -> list:
    """The ``jobs`` array of a ``sacct --json`` file; :class:`InputError` if there is none."""
    raw = read_text(path)
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise InputError(f"{path}: no 'jobs' array: not sacct --json / slurmdb output")
    return doc["jobs"]


def read_sacct_json(path, *, cluster: str | None = None) -> ReadResult:
    """Read one ``sacct --json`` file into the canonical job table, with its ledger and quarantine."""
    name = str(path)
    jobs = load_jobs(path)
    ledger = FileLedger(file=name, format="sacct-json")
    quarantine = Quarantine()
    flats, steps = [], []
    for line, rec in enumerate(jobs, start=1):
        raw_steps = rec.get("steps") if isinstance(rec, dict) else None
        n_steps = len(raw_steps) if isinstance(raw_steps, list) else 0
        ledger.read += 1 + n_steps
        try:
            flat = job_fields(rec)
            seq(raw_steps, "steps")
        except RecordError as exc:
            record_quarantine(ledger, quarantine, line, exc.field, exc.reason, raw_json(rec))
            for k in range(n_steps):
                record_quarantine(ledger, quarantine, line, f"steps[{k}]", f"job record quarantined: {exc}",
                                  raw_json(raw_steps[k]))
            continue
        flat["line"] = line
        parent = len(flats)
        flats.append(flat)
        ledger.used += 1
        for k, step in enumerate(raw_steps or []):
            try:
                steps.append({"parent": parent, "index": k, **step_fields(step, f"steps[{k}]")})
            except RecordError as exc:
                record_quarantine(ledger, quarantine, line, exc.field, exc.reason, raw_json(step))
                continue
            ledger.folded += 1
    flats, steps = pd.DataFrame(flats), pd.DataFrame(steps)
    while True:
        frame, out_of_range, js_errors = _canonical(flats, steps, name, cluster)
        if not out_of_range:
            break
        flats, steps = _drop_out_of_range(flats, steps, out_of_range, jobs, ledger, quarantine)
    for pos, error in js_errors:
        record_field_quarantine(ledger, quarantine, int(flats["line"].iat[pos]), "comment.administrator",
                                f"jobstats {error}", str(flats["admin_comment"].iat[pos])[:RAW_LIMIT])
    ledger.jobs_emitted = len(frame)
    return ReadResult(jobs=frame, ledger=ledger, quarantine=quarantine)


def _drop_out_of_range(flats, steps, out_of_range, jobs, ledger, quarantine):
    """Quarantine job records whose derived values overflow the canonical columns, with their steps."""
    drop = dict(out_of_range)
    for pos, column in drop.items():
        line = int(flats["line"].iat[pos])
        rec = jobs[line - 1]
        reason = f"value out of range for {column}"
        record_quarantine(ledger, quarantine, line, column, reason, raw_json(rec))
        ledger.used -= 1
        mine = steps[steps["parent"] == pos] if not steps.empty else steps
        for k in (mine["index"] if not mine.empty else []):
            record_quarantine(ledger, quarantine, line, f"steps[{k}]", f"job record quarantined: {column}: {reason}",
                              raw_json(rec["steps"][k]))
            ledger.folded -= 1
    keep = ~np.isin(np.arange(len(flats)), list(drop))
    remap = np.cumsum(keep) - 1
    flats = flats[keep].reset_index(drop=True)
    if not steps.empty:
        steps = steps[keep[steps["parent"].to_numpy()]].copy()
        steps["parent"] = remap[steps["parent"].to_numpy()]
    return flats, steps


# ---------------------------------------------------------------- vectorised assembly


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype="float64") if col in df else np.full(len(df), np.nan)


def _fold_steps(n: int, steps: pd.DataFrame) -> pd.DataFrame:
    """Per-job step aggregates (index 0..n-1)."""
    cols = ["step_cpu_s", "step_mem", "numbered_mem", "single_task_only", "upper_bound", "step_usage", "step_oom",
            "n_steps"]
    if steps.empty:
        return pd.DataFrame({c: np.full(n, np.nan) for c in cols})
    st = steps.copy()
    st["cpu_s"] = pd.to_numeric(st["cpu_s"], errors="coerce")
    st["mem"] = pd.to_numeric(st["mem"], errors="coerce")
    st["numbered_mem"] = st["mem"].where(~st["name"].isin(NON_USAGE_STEPS))
    st["oom"] = st["state"] == "OUT_OF_MEMORY"
    g = st.groupby("parent", sort=False)
    return pd.DataFrame({
        "step_cpu_s": g["cpu_s"].sum(min_count=1),
        "step_mem": g["mem"].max(),
        "numbered_mem": g["numbered_mem"].max(),
        "single_task_only": g["single_task_only"].any(),
        "upper_bound": g["upper_bound"].any(),
        "step_usage": g["has_usage"].any(),
        "step_oom": g["oom"].any(),
        "n_steps": g.size(),
    }).reindex(np.arange(n))


def _resources(df: pd.DataFrame) -> dict:
    with np.errstate(over="ignore", invalid="ignore"):  # overflow → inf, quarantined by _out_of_range
        return _resources_unchecked(df)


def _resources_unchecked(df: pd.DataFrame) -> dict:
    req_cpus = _first(_num(df, "req_cpus_field"), _num(df, "tres_requested_cpu"))
    alloc_nodes = _first(_num(df, "tres_allocated_node"),
                         np.where(df["tres_allocated_present"].to_numpy(bool), np.nan, _num(df, "alloc_nodes_field")))
    req_nodes = _first(_num(df, "tres_requested_node"), alloc_nodes)
    per = df["req_mem_per"].to_numpy(dtype=object)
    mib = _num(df, "req_mem_mib")
    from_required = np.select([per == "c", (per == "n") & (mib > 0)], [mib * req_cpus, mib * req_nodes], np.nan)
    req_mem = _first(_num(df, "tres_requested_mem"), from_required) * MIB
    return {
        "req_cpus": req_cpus,
        "req_nodes": req_nodes,
        "req_mem_bytes": req_mem,
        "req_gpus": _num(df, "tres_requested_gpus"),
        "alloc_cpus": _num(df, "tres_allocated_cpu"),
        "alloc_nodes": alloc_nodes,
        "alloc_mem_bytes": _num(df, "tres_allocated_mem") * MIB,
        "alloc_gpus": _num(df, "tres_allocated_gpus"),
        "gpu_type": df["tres_allocated_gpu_type"].where(df["tres_allocated_gpu_type"].notna(),
                                                       df["tres_requested_gpu_type"]),
    }


def _flag(s: pd.Series) -> np.ndarray:
    """A boolean column that reindexing may have filled with NaN → plain bools (NaN is False)."""
    return s.eq(True).to_numpy(dtype=bool)


def _first(*arrays) -> np.ndarray:
    out = np.asarray(arrays[0], dtype="float64").copy()
    for a in arrays[1:]:
        out = np.where(np.isnan(out), np.asarray(a, dtype="float64"), out)
    return out


def _utc(seconds: np.ndarray) -> pd.Series:
    return pd.to_datetime(pd.Series(seconds, dtype="float64"), unit="s", utc=True)


def _ints(a) -> pd.Series:
    a = np.asarray(a, dtype="float64")
    return pd.Series(pd.array(np.where(np.isnan(a), None, np.round(a)).tolist(), dtype="Int64"))


def _canonical(df: pd.DataFrame, steps: pd.DataFrame, name: str, cluster: str | None):
    """Flat job fields + step figures → (canonical frame, [(job position, column out of range)],
    [(job position, jobstats error)])."""
    if df.empty:
        return conform(pd.DataFrame({"source": pd.Series([], dtype="string")})), [], []
    n = len(df)
    folded = _fold_steps(n, steps)
    res = _resources(df)
    state = df["state"].to_numpy(dtype=object)
    oom = _flag(folded["step_oom"])
    state = np.where((state == "FAILED") & oom, "OUT_OF_MEMORY", state)
    pending = state == "PENDING"

    job_cpu = _num(df, "job_cpu_s")
    step_cpu = folded["step_cpu_s"].to_numpy(dtype="float64")
    cpu = np.where(job_cpu > 0, job_cpu, np.where(np.isnan(step_cpu), job_cpu, step_cpu))
    step_usage = _flag(folded["step_usage"])
    no_usage = ~step_usage & ~(np.nan_to_num(cpu) > 0)
    cpu = np.where(no_usage | pending, np.nan, cpu)
    mem = np.where(pending, np.nan, folded["step_mem"].to_numpy(dtype="float64"))

    js = decode_jobstats(df["admin_comment"])
    js_errors = [(int(i), str(js["error"].iat[i])) for i in np.flatnonzero(js["error"].notna().to_numpy())]
    js_cpu = js["cpu_used_s"].to_numpy(dtype="float64", na_value=np.nan)
    js_mem = js["mem_peak_bytes"].astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
    use_js = js["has_data"].to_numpy(dtype=bool)
    cpu = np.where(use_js & ~np.isnan(js_cpu), js_cpu, cpu)
    mem = np.where(use_js & ~np.isnan(js_mem), js_mem, mem)
    no_usage = no_usage & ~use_js

    submit, start, end = _num(df, "submit"), _num(df, "start"), _num(df, "end")
    elapsed = _num(df, "elapsed")
    gpus = _first(res["alloc_gpus"], res["req_gpus"])
    js_gpu = use_js & (js["gpus_seen"].fillna(0).to_numpy(dtype="int64") > 0)
    cav = caveats_from_masks(n, {
        "no_usage_fields": no_usage & ~pending,
        "maxrss_batch_only": (~np.isnan(folded["step_mem"].to_numpy(dtype="float64"))
                              & np.isnan(folded["numbered_mem"].to_numpy(dtype="float64"))
                              & (np.nan_to_num(res["alloc_nodes"]) > 1) & ~use_js),
        "maxrss_single_task": _flag(folded["single_task_only"]) & ~use_js,
        "maxrss_times_tasks": _flag(folded["upper_bound"]) & ~use_js,
        "totalcpu_zero": (cpu == 0) & (np.nan_to_num(elapsed) > 60) & (np.nan_to_num(res["alloc_cpus"]) > 0),
        "start_before_submit": start < submit,
        "end_unknown": np.isnan(end) & ~np.isnan(start) & ~pending,
        "no_gpu_telemetry": (np.nan_to_num(gpus) > 0) & ~js_gpu & ~pending,
        "jobstats": use_js,
    })

    jid = df["job_id_int"].astype("int64").astype(str).to_numpy(dtype=object)
    arr = _num(df, "array_job_id")
    task = _num(df, "array_task_id")
    het = _num(df, "het_job_id")
    off = _num(df, "het_job_offset")
    limit_s = _num(df, "limit_min") * 60
    exit_code, signal = _num(df, "exit_code"), _num(df, "signal")
    checked = {"elapsed_s": elapsed, "time_limit_s": limit_s, "exit_code": exit_code, "signal": signal,
               "array_job_id": arr, "array_task_id": task, "het_job_id": het, "het_job_offset": off,
               "mem_peak_bytes": mem, "cpu_used_s": cpu,
               **{k: res[k] for k in ("req_nodes", "req_cpus", "req_mem_bytes", "req_gpus", "alloc_nodes",
                                      "alloc_cpus", "alloc_mem_bytes", "alloc_gpus")}}
    out_of_range = _out_of_range(checked)
    if out_of_range:
        return None, out_of_range, js_errors
    is_task = ~np.isnan(arr) & ~np.isnan(task)
    is_het = ~np.isnan(het) & ~np.isnan(off)
    display = np.where(is_task, _join(arr, "_", task), np.where(is_het, _join(het, "+", off), jid))
    out = pd.DataFrame({
        "cluster": df["cluster"].fillna(cluster) if cluster else df["cluster"],
        "job_id": display,
        "job_id_raw": jid,
        "array_job_id": _ints(arr),
        "array_task_id": _ints(np.where(np.isnan(arr), np.nan, task)),
        "het_job_id": _ints(np.where(is_het, het, np.nan)),
        "het_job_offset": _ints(np.where(is_het, off, np.nan)),
        "source": "sacct-json",
        "source_file": name,
        "source_line": df["line"].astype("int64"),
        "user": df["user"],
        "account": df["account"],
        "partition": df["partition"],
        "qos": df["qos"],
        "job_name": df["job_name"],
        "submit_time": _utc(submit),
        "eligible_time": _utc(_num(df, "eligible")),
        "start_time": _utc(start),
        "end_time": _utc(end),
        "elapsed_s": _ints(elapsed),
        "time_limit_s": _ints(limit_s),
        "state": pd.array(state.tolist(), dtype="string"),
        "exit_code": _ints(exit_code),
        "signal": _ints(signal),
        "req_nodes": _ints(res["req_nodes"]),
        "req_cpus": _ints(res["req_cpus"]),
        "req_mem_bytes": _ints(res["req_mem_bytes"]),
        "req_gpus": _ints(res["req_gpus"]),
        "gpu_type": res["gpu_type"].astype("string"),
        "alloc_nodes": _ints(res["alloc_nodes"]),
        "alloc_cpus": _ints(res["alloc_cpus"]),
        "alloc_mem_bytes": _ints(res["alloc_mem_bytes"]),
        "alloc_gpus": _ints(res["alloc_gpus"]),
        "cpu_used_s": pd.array(np.where(np.isnan(cpu), None, cpu).tolist(), dtype="Float64"),
        "mem_peak_bytes": _ints(mem),
        "gpu_util_mean": js["gpu_util_mean"].reset_index(drop=True),
        "gpu_mem_peak_bytes": js["gpu_mem_peak_bytes"].reset_index(drop=True),
        "node_list": df["node_list"],
        "caveats": cav,
    })
    if cluster and out["cluster"].isna().any():
        out["cluster"] = out["cluster"].fillna(cluster)
    out = reconcile_jobstats(out, js.reset_index(drop=True))
    rng = df["array_range"].where(~is_task & ~np.isnan(arr), None)
    return conform(_expand_ranges(out, rng.reset_index(drop=True))), [], js_errors


def _out_of_range(arrays: dict) -> list[tuple[int, str]]:
    """(position, first column) of jobs with a value no Int64 column (or sane figure) can hold."""
    found: dict[int, str] = {}
    for column, a in arrays.items():
        a = np.asarray(a, dtype="float64")
        for pos in np.flatnonzero(~np.isnan(a) & ~(np.abs(a) < MAX_INT)):
            found.setdefault(int(pos), column)
    return sorted(found.items())


def _join(a: np.ndarray, sep: str, b: np.ndarray) -> np.ndarray:
    left = pd.Series(a).fillna(0).astype("int64").astype(str)
    right = pd.Series(b).fillna(0).astype("int64").astype(str)
    return (left + sep + right).to_numpy(dtype=object)


def _expand_ranges(out: pd.DataFrame, rng: pd.Series) -> pd.DataFrame:
    """A pending array's record names a task range (``1-10%2``): one row per listed task."""
    if not rng.notna().any():
        return out
    out = out.assign(_task=[_task_list(r) for r in rng]).explode("_task", ignore_index=True)
    expanded = out["_task"].notna().to_numpy()
    t = pd.to_numeric(out["_task"], errors="coerce").astype("Int64")
    out.loc[expanded, "job_id"] = (out["array_job_id"].astype("string") + "_" + t.astype("string"))[expanded]
    out.loc[expanded, "array_task_id"] = t[expanded]
    cav = out["caveats"].astype("string").fillna("")
    tagged = (cav + ";array_range_unexpanded").str.lstrip(";")
    out["caveats"] = tagged.where(expanded, out["caveats"].astype("string"))
    return out.drop(columns="_task")


def _task_list(r) -> list:
    if not isinstance(r, str):
        return [None]
    try:
        return expand_index_ranges(r.strip("[]")) or [None]
    except ValueError:
        return [None]
