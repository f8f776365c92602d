"""The month as PBS Professional / OpenPBS accounting logs: ``accounting/YYYYMMDD``, one file per day of the stamps.

Layout (PBS Professional Reference Guide, "Accounting Log"): one record per line,
``MM/DD/YYYY HH:MM:SS;<type>;<job id>;<message>``, the stamp in the server's local time (``timezone``), the
message space-separated ``key=value`` pairs.  Per job:

* ``Q`` when queued (``queue=<queue>``), at submission;
* ``S`` when started: who, the times (``ctime qtime etime start``, epoch seconds), ``exec_host``
  (``cn001/0*16+cn002/0*16``), ``exec_vnode`` (``(cn001:ncpus=16:mem=65536000kb)+…``), the request
  ``Resource_List.mem ncpus [ngpus] nodect place select walltime`` and ``resource_assigned.mem ncpus``;
* ``E`` when it ended: the ``S`` fields, ``session end Exit_status``, the use ``resources_used.cpupercent cput
  mem ncpus vmem walltime`` (sizes in ``kb`` = KiB, times ``HH:MM:SS``), ``eligible_time`` and ``run_count``;
* ``D`` when deleted (``requestor=<user>@<host>``): a job deleted while queued has ``Q`` and ``D`` only; one
  deleted while running has its ``D`` then its ``E``.

Array tasks are subjobs ``<array>[<index>].<server>`` (index 0-based, as ``qsub -J 0-9`` numbers them), each with
its own ``Q``, ``S`` and ``E``; the array parent ``<array>[]`` has no records here.  A heterogeneous job's
components are separate jobs (PBS has no heterogeneous jobs).

``Exit_status`` (PBS's conventions: 0-255 the job script's exit, 256 + N killed by signal N, negative values the
``JOB_EXEC_*`` codes of the OpenPBS source's ``job.h``): COMPLETED 0; FAILED its exit code, or 256 + N when a
signal N ended it; TIMEOUT -29 (``JOB_EXEC_KILL_WALLTIME``); OUT_OF_MEMORY -27 (``JOB_EXEC_KILL_MEM``); CANCELLED
271 (256 + SIGTERM, after its ``D`` record); NODE_FAIL -20 (``JOB_EXEC_RERUN_MS_FAIL``, the execution host lost);
PREEMPTED 271 after a ``D`` whose requestor is the scheduler (PBS preempts by deleting; it has no preempted end).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .arrow_text import cat, exit_parts, txt, where

SIGTERM = 15
SIGNAL_BASE = 256                 # Exit_status = 256 + N: the job was killed by signal N
JOB_EXEC_RERUN_MS_FAIL = -20      # the primary execution host (mother superior) was lost
JOB_EXEC_KILL_MEM = -27           # killed for exceeding its mem
JOB_EXEC_KILL_WALLTIME = -29      # killed for exceeding its walltime
SUBMIT_HOST = "login01"
KINDS = ("Q", "S", "D", "E")      # the order of records stamped in the same second, for one job


def pbs_records(ctx: dict, *, timezone: str = "UTC") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every record of the month, in log order: (epoch seconds, local day ``YYYYMMDD``, line without newline)."""
    t, day, lines = _records(ctx, timezone)
    return t, day.to_numpy(zero_copy_only=False), lines.to_numpy(zero_copy_only=False)


def _records(ctx: dict, timezone: str) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """The records as Arrow strings, built column by column (one join per message), with no Python loop per record
    but for the host lists of jobs that ran."""
    j = ctx["jobs"]
    n = int(j["n"])
    server = str(ctx["cluster_name"])
    start = np.asarray(ctx["start"], dtype=np.int64)
    ran = start >= 0
    submit = j["submit"].astype(np.int64)
    el = np.where(ran, j["elapsed_s"], 0)
    end = np.where(ran, start + el, submit + j["cancel_wait_s"])
    state = j["state"]
    nodes, cpus_pn, gpus_pn, mem_pn = j["nodes"], j["cpus_pn"], j["gpus_pn"], j["mem_pn_mib"]
    cpus, gpus = j["alloc_cpus"], gpus_pn * nodes
    user = txt(ctx["user_name"][j["user"]])
    account = txt(ctx["account_name"][j["account"]])
    queue = txt(ctx["partition_name"][j["partition"]])
    jid = _job_ids(ctx, server)

    # the request (Resource_List, in PBS's alphabetical order) and where the job ran
    select = cat(nodes, ":ncpus=", cpus_pn, ":mem=", _size(mem_pn), where(gpus_pn > 0, cat(":ngpus=", gpus_pn), ""))
    place = cat(where(nodes > 1, "scatter", "pack"), where(j["exclusive"], ":excl", ""))
    resources = cat("Resource_List.mem=", _size(mem_pn * nodes), " Resource_List.ncpus=", cpus,
                     where(gpus > 0, cat(" Resource_List.ngpus=", gpus), ""), " Resource_List.nodect=", nodes,
                     " Resource_List.place=", place, " Resource_List.select=", select, " Resource_List.walltime=",
                     hms(j["limit_s"]))
    exec_host, exec_vnode = _exec(ctx, ran)
    who = cat("user=", user, " group=", account, ' account="', account, '" project=_pbs_project_default jobname=',
               txt(j["job_name"]), " queue=", queue, " ctime=", submit, " qtime=", submit, " etime=", submit,
               " start=", np.maximum(start, 0), " exec_host=", exec_host, " exec_vnode=", exec_vnode, " ", resources)

    # the use, as the E record reports it
    cput = np.asarray(ctx["cpu_used_ms"], dtype=np.int64) // 1000        # whole seconds, as PBS prints cput
    mem_kb = np.asarray(ctx["mem_peak_bytes"], dtype=np.int64) // 1024
    vmem_kb = mem_kb + 204800 * nodes                                    # + the shared libraries' 200 MiB a node
    pct = np.where(el > 0, cput * 100 // np.maximum(el, 1), 0)
    session = 4000 + (np.asarray(ctx["ids"]["raw"], dtype=np.int64) * 7919) % 60000
    e_msg = cat(who, " session=", session, " end=", end, " Exit_status=", exit_status(j),
                 " resources_used.cpupercent=", pct, " resources_used.cput=", hms(cput), " resources_used.mem=",
                 mem_kb, "kb resources_used.ncpus=", cpus, " resources_used.vmem=", vmem_kb,
                 "kb resources_used.walltime=", hms(el), " eligible_time=", hms(np.maximum(start - submit, 0)),
                 " run_count=1")
    s_msg = cat(who, " resource_assigned.mem=", mem_pn * nodes * 1024, "kb resource_assigned.ncpus=", cpus)
    requestor = where(state == "PREEMPTED", "Scheduler@" + server,
                    cat(where(j["cancel_uid"] == 0, "root", user), "@" + SUBMIT_HOST))
    d_msg = cat("requestor=", requestor)

    # the records: (row, kind) for every record a job has; messages taken once, in log order, from all four kinds
    deleted = np.flatnonzero(np.isin(state, ("CANCELLED", "PREEMPTED")))
    started = np.flatnonzero(ran)
    r = np.concatenate([np.arange(n), started, deleted, started])
    k = np.repeat(np.arange(4), [n, len(started), len(deleted), len(started)])
    t = np.concatenate([submit, start[started], end[deleted], end[started]])
    order = np.lexsort((k, r, t))
    r, k, t = r[order], k[order], t[order]
    msg = pa.concat_arrays([cat("queue=", queue), s_msg, d_msg, e_msg]).take(pa.array(k * n + r))
    stamp, day = _stamps(t, timezone)
    kind = pa.array(np.array(KINDS, dtype=object)[k], type=pa.string())
    return t, day, cat(stamp, ";", kind, ";", jid.take(pa.array(r)), ";", msg)


def write_pbs_accounting(ctx: dict, out, *, timezone: str = "UTC") -> list[Path]:
    """Write ``out/accounting/YYYYMMDD`` (one file per local day of the records' stamps); returns the files."""
    _, day, lines = _records(ctx, timezone)
    day = day.to_numpy(zero_copy_only=False)
    folder = Path(out) / "accounting"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    cuts = np.flatnonzero(np.concatenate([[True], day[1:] != day[:-1], [True]]))
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        one = pa.ListArray.from_arrays(pa.array([0, b - a], type=pa.int32()), lines.slice(a, b - a))
        path = folder / str(day[a])
        path.write_text(pc.binary_join(one, "\n")[0].as_py() + "\n", encoding="utf-8")
        written.append(path)
    return written


def exit_status(j: dict) -> np.ndarray:
    """``Exit_status`` of each job's E record (module docstring)."""
    state = j["state"]
    code, sig = exit_parts(j["fail_code"])
    failed = np.where(sig > 0, SIGNAL_BASE + sig, code)
    out = np.zeros(len(state), dtype=np.int64)
    for name, value in (("TIMEOUT", JOB_EXEC_KILL_WALLTIME), ("OUT_OF_MEMORY", JOB_EXEC_KILL_MEM),
                        ("CANCELLED", SIGNAL_BASE + SIGTERM), ("PREEMPTED", SIGNAL_BASE + SIGTERM),
                        ("NODE_FAIL", JOB_EXEC_RERUN_MS_FAIL)):
        out[state == name] = value
    return np.where(state == "FAILED", failed, out)


def hms(sec) -> pa.Array:
    """Seconds → PBS's ``HH:MM:SS`` (hours not wrapped at a day: ``72:00:00``)."""
    sec = np.asarray(sec, dtype=np.int64)
    h, r = np.divmod(sec, 3600)
    m, s = np.divmod(r, 60)
    return cat(_pad2(h), ":", _pad2(m), ":", _pad2(s))


def local_stamps(epoch, timezone: str = "UTC") -> tuple[np.ndarray, np.ndarray]:
    """Epoch seconds → (``MM/DD/YYYY HH:MM:SS``, ``YYYYMMDD``) in ``timezone``'s local time."""
    stamp, day = _stamps(epoch, timezone)
    return stamp.to_numpy(zero_copy_only=False), day.to_numpy(zero_copy_only=False)


def _stamps(epoch, timezone: str) -> tuple[pa.Array, pa.Array]:
    t = np.asarray(epoch, dtype=np.int64)
    if timezone.upper() == "UTC":
        local = t.astype("datetime64[s]")
    else:
        idx = pd.DatetimeIndex(pd.to_datetime(t, unit="s", utc=True)).tz_convert(timezone).tz_localize(None)
        local = idx.to_numpy().astype("datetime64[s]")
    iso = pa.array(np.datetime_as_string(local, unit="s").astype(object), type=pa.string())

    def cut(a: int, b: int):
        return pc.utf8_slice_codeunits(iso, a, b)

    return (pc.binary_join_element_wise(cut(5, 7), "/", cut(8, 10), "/", cut(0, 4), " ", cut(11, 19), ""),
            pc.binary_join_element_wise(cut(0, 4), cut(5, 7), cut(8, 10), ""))


def _job_ids(ctx: dict, server: str) -> pa.Array:
    """``1000001.synth``; array subjobs ``1000001[4].synth`` (the array's number and the task's index)."""
    j, ids = ctx["jobs"], ctx["ids"]
    arr = j["sub_type"] == 1
    return cat(where(arr, cat(ids["base"], "[", j["task"], "]"), txt(ids["raw"])), "." + server)


def _exec(ctx: dict, ran: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``exec_host`` and ``exec_vnode`` per job (empty for jobs that never ran)."""
    j = ctx["jobs"]
    cpus_pn, gpus_pn, mem_pn = j["cpus_pn"], j["gpus_pn"], j["mem_pn_mib"]
    slot = cat("/0", where(cpus_pn > 1, cat("*", cpus_pn), "")).to_numpy(zero_copy_only=False)
    vn = cat(":ncpus=", cpus_pn, ":mem=", mem_pn * 1024, "kb", where(gpus_pn > 0, cat(":ngpus=", gpus_pn), ""))
    vn = vn.to_numpy(zero_copy_only=False)
    names = ctx["node_name"]
    host = np.full(len(cpus_pn), "", dtype=object)
    vnode = np.full(len(cpus_pn), "", dtype=object)
    for r, nds in ctx["row_nodes"].items():
        if not ran[r]:
            continue
        host[r] = "+".join([names[nd] + slot[r] for nd in nds])
        vnode[r] = "+".join(["(" + names[nd] + vn[r] + ")" for nd in nds])
    return host, vnode


def _size(mib) -> pa.Array:
    """MiB → a PBS size: ``64gb`` when whole GiB, else ``16000mb`` (PBS's kb/mb/gb are 1024-based)."""
    mib = np.asarray(mib, dtype=np.int64)
    return where(mib % 1024 == 0, cat(mib // 1024, "gb"), cat(mib, "mb"))


def _pad2(a) -> pa.Array:
    return pc.utf8_lpad(txt(np.asarray(a, dtype=np.int64)), width=2, padding="0")
