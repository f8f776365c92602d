"""The month as IBM Spectrum LSF's job log ``lsb.acct``: one ``JOB_FINISH`` record per job, LSF 10.1 layout.

Layout (IBM Spectrum LSF 10.1 reference, "lsb.acct"): one record per line, fields separated by blanks, strings in
double quotes (a quote inside doubled), the fields in the documented order from ``"JOB_FINISH" "10.108"`` to
``numKVP``; an unavailable string is ``""``, time or number 0, resource usage -1.  Each count field is followed by
that many entries: ``numAskedHosts`` (0 here), ``numExHosts`` with ``execHosts`` one name per slot (``cn001`` 16
times for 16 slots), ``submitEXT`` (0), ``numHostRusage`` (0: host-based usage off, as with
``LSF_HPC_EXTENSIONS=NO_HOST_RUSAGE``), ``num_network`` (0), ``numAllocSlots`` with ``allocSlots`` (as
``execHosts``), ``indexRangeCnt``, ``numGPURusages``, ``storageInfoC`` and ``numKVP`` (all 0).

What each job's record says:
* who and where: ``userId`` (uid), ``userName``, ``queue``, ``projectName`` (the account), ``jobName``;
* times: ``Event Time`` the end, ``submitTime``, ``startTime`` (the dispatch; 0 for a job killed while pending),
  ``runTime`` = end − start;
* the request: ``numProcessors`` = ``maxNumProcessors`` = slots, ``runLimit`` (seconds), ``resReq`` and
  ``effectiveResReq`` ``rusage[mem=<MB>/host]`` (LSF's MB = MiB, ``LSF_UNIT_FOR_LIMITS=MB``), GPUs as
  ``rusage[ngpus_physical=<n>/host]`` in ``effectiveResReq`` (``bsub -gpu num=`` is per host), ``span[hosts=1]``
  or ``span[ptile=<slots per host>]``; ``bsub -x`` jobs have the ``SUB_EXCLUSIVE`` option bit (0x40);
* the use: ``ru_utime`` + ``ru_stime`` = the job's CPU time (seconds, 6 decimals), ``maxRMem`` the peak resident
  memory of all its processes (KB = KiB, summed over hosts), ``maxRSwap`` its virtual memory, ``avgMem``;
* the end: ``jStatus`` 64 (DONE) or 32 (EXIT); ``exitStatus`` a wait status (exit code × 256, or the signal
  number); ``exitInfo`` the termination reason ("Termination reasons displayed by bacct": TERM_PREEMPT 1,
  TERM_RUNLIMIT 5, TERM_OWNER 14, TERM_ADMIN 15, TERM_MEMLIMIT 16, TERM_EXTERNAL_SIGNAL 17,
  TERM_REMOVE_HUNG_JOB 26 (execution host unavailable); 0 when none).

The run limit is written before ``options3``, as real records have it (a 9.11 record of ``bsub -W 12:00`` logs
``43200`` there, a 10.108 record ``-1`` then an option bit), though the 10.1 reference lists ``options3`` first;
the reader (``audit.readers.lsf``) reads it the same way.

Array tasks are elements ``jobId[idx]``: ``jobId`` the array's number, ``idx`` 1-based (LSF numbers elements from 1);
``idx`` is 0 for other jobs.  A heterogeneous job's components are separate jobs.  Records are in the order mbatchd
appends them: by end time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow_text import cat, exit_parts, txt, where, write_lines

VERSION = "10.108"
DONE, EXIT = 64, 32
TERM_UNKNOWN, TERM_PREEMPT, TERM_RUNLIMIT, TERM_OWNER, TERM_ADMIN = 0, 1, 5, 14, 15
TERM_MEMLIMIT, TERM_EXTERNAL_SIGNAL, TERM_REMOVE_HUNG_JOB = 16, 17, 26
SIGINT, SIGUSR2 = 2, 12
# bsub option bits (lsbatch.h): SUB_JOB_NAME 0x01, SUB_QUEUE 0x02, SUB_EXCLUSIVE 0x40, SUB_PROJECT_NAME 0x2000000
OPTIONS = 0x01 | 0x02 | 0x2000000
SUB_EXCLUSIVE = 0x40
SUBMIT_HOST = "login01"
#: the fields of a JOB_FINISH record with no hosts (a job killed while pending), counted: the writer test checks
#: every record has this many plus its execHosts and allocSlots entries
FIXED_FIELDS = 108


def lsb_acct_lines(ctx: dict) -> tuple[np.ndarray, np.ndarray]:
    """Every JOB_FINISH record in log order: (event time, line without newline)."""
    end, lines = _lines(ctx)
    return end, lines.to_numpy(zero_copy_only=False)


def write_lsb_acct(ctx: dict, out) -> list[Path]:
    """Write ``out/lsb.acct``; returns the file."""
    _, lines = _lines(ctx)
    path = Path(out) / "lsb.acct"
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        write_lines(fh, lines)
    return [path]


def _lines(ctx: dict) -> tuple[np.ndarray, pa.Array]:
    """The records as Arrow strings, field by field (one join), in log order."""
    j, ids = ctx["jobs"], ctx["ids"]
    n = int(j["n"])
    start = np.asarray(ctx["start"], dtype=np.int64)
    ran = start >= 0
    submit = j["submit"].astype(np.int64)
    el = np.where(ran, j["elapsed_s"], 0)
    end = np.where(ran, start + el, submit + j["cancel_wait_s"])
    state = j["state"]
    nodes, cpus_pn, gpus_pn, mem_pn = j["nodes"], j["cpus_pn"], j["gpus_pn"], j["mem_pn_mib"]
    cpus = j["alloc_cpus"]
    user = txt(ctx["user_name"][j["user"]])
    arr = j["sub_type"] == 1
    job_id = np.where(arr, ids["base"], ids["raw"]).astype(np.int64)
    idx = np.where(arr, j["task"] + 1, 0)
    cwd = cat("/home/", user)

    span = where(nodes > 1, cat("span[ptile=", cpus_pn, "]"), "span[hosts=1]")
    res_req = cat("rusage[mem=", mem_pn, "/host] ", span)
    eff = cat("select[type == any] order[r15s:pg] rusage[mem=", mem_pn, ".00/host",
               where(gpus_pn > 0, cat(",ngpus_physical=", gpus_pn, ".00/host"), ""), "] ", span)
    with_hosts = cat(np.where(ran, cpus, 0), _slot_hosts(ctx, ran))   # numExHosts, execHosts (allocSlots alike)

    cpu_ms = np.where(ran, np.asarray(ctx["cpu_used_ms"], dtype=np.int64), 0)
    stime_ms = cpu_ms // 50                                  # 2 % of the CPU time in the kernel
    utime_ms = cpu_ms - stime_ms
    max_rmem = np.asarray(ctx["mem_peak_bytes"], dtype=np.int64) // 1024
    maxrss = max_rmem // np.maximum(nodes, 1)                # the largest process: a host's whole use at most

    def ru_time(ms):
        return where(ran, _seconds6(ms), "-1.000000")

    def ru_int(v):
        return where(ran, np.broadcast_to(np.asarray(v, dtype=np.int64), (n,)), "-1")

    status, info = exit_status(j, ran), exit_info(j)
    options = OPTIONS + np.where(j["exclusive"], SUB_EXCLUSIVE, 0)
    fields = [
        '"JOB_FINISH"', f'"{VERSION}"', end, job_id, ctx["uid"][j["user"]], options, cpus, submit, "0", "0",
        np.maximum(start, 0), _q(user), _q(ctx["partition_name"][j["partition"]]), _q(res_req), '""', '""',
        f'"{SUBMIT_HOST}"', _q(cwd), '""', '""', '""', _q(cat(submit, ".", job_id)),
        "0",                                                  # numAskedHosts
        with_hosts,                                           # numExHosts, execHosts
        where(state == "COMPLETED", str(DONE), str(EXIT)), "1.0", _q(j["job_name"]),
        _q(cat("./", j["job_name"], ".sh")),
        # lsfRusage: ru_utime … ru_exutime
        ru_time(utime_ms), ru_time(stime_ms), ru_int(maxrss), ru_int(0), ru_int(0), ru_int(0), ru_int(0),
        ru_int(maxrss // 4), ru_int(0), ru_int(0), ru_int(0), ru_int(0), "-1", ru_int(0), ru_int(0), ru_int(0),
        ru_int(el * 2), ru_int(el // 10), "-1",
        '""', _q(ctx["account_name"][j["account"]]), status, cpus, '""', '""', idx,
        np.where(ran, max_rmem, 0), np.where(ran, max_rmem + 204800 * nodes, 0),
        '""', '""', '""', '""', "0", '""', info, '""', "-1", '""', '""', '""', '""', "-1", '""', '""',
        "0", '""', np.maximum(start, 0), '""', '""',
        "0",                                                  # submitEXT: no key-value pairs
        "0",                                                  # numHostRusage
        j["limit_s"], "0", np.where(ran, max_rmem * 3 // 4, 0), _q(eff),   # runLimit, options3 (see above)
        '""', "-1", '""', "-1", "0", "0", "0", "0", '""', el, _q(cwd),
        "0",                                                  # num_network
        '""', "0.000000", "0.00", "0.00", "0.00", "0.00",
        with_hosts,                                           # numAllocSlots, allocSlots
        "-1",                                                 # ineligiblePendTime
        "0", "0", "0", "0", "0",                              # indexRangeCnt requeueTime numGPURusages storageInfoC numKVP
    ]
    lines = pc.binary_join_element_wise(*[txt(f) for f in fields], " ")
    order = np.lexsort((np.arange(n), end))
    return end[order], lines.take(pa.array(order))


def exit_status(j: dict, ran: np.ndarray) -> np.ndarray:
    """``exitStatus``: the wait status, exit code × 256 or the number of the signal that ended the job (0 for a
    job killed while pending: no process ran)."""
    state = j["state"]
    code, sig = exit_parts(j["fail_code"])
    failed = np.where(sig > 0, sig, code * 256)
    out = np.zeros(len(state), dtype=np.int64)
    out[state == "TIMEOUT"] = SIGUSR2                         # bsub -W: SIGUSR2 at the run limit
    for name in ("OUT_OF_MEMORY", "CANCELLED", "PREEMPTED"):
        out[state == name] = SIGINT                           # bkill and the limits send SIGINT, SIGTERM, SIGKILL
    return np.where(state == "FAILED", failed, np.where(ran, out, 0))


def exit_info(j: dict) -> np.ndarray:
    """``exitInfo``: the termination reason's number."""
    state = j["state"]
    _, sig = exit_parts(j["fail_code"])
    out = np.full(len(state), TERM_UNKNOWN, dtype=np.int64)
    out[(state == "FAILED") & (sig > 0)] = TERM_EXTERNAL_SIGNAL
    out[state == "TIMEOUT"] = TERM_RUNLIMIT
    out[state == "OUT_OF_MEMORY"] = TERM_MEMLIMIT
    out[state == "PREEMPTED"] = TERM_PREEMPT
    out[state == "NODE_FAIL"] = TERM_REMOVE_HUNG_JOB
    cancelled = state == "CANCELLED"
    out[cancelled] = np.where(np.asarray(j["cancel_uid"])[cancelled] == 0, TERM_ADMIN, TERM_OWNER)
    return out


def _slot_hosts(ctx: dict, ran: np.ndarray) -> pa.Array:
    """Per job: its hosts, each quoted once per slot it held there (`` "cn001" "cn001" …``, a blank before each)."""
    cpus_pn = ctx["jobs"]["cpus_pn"]
    rows, nds = [], []
    for r, held in ctx["row_nodes"].items():
        if ran[r]:
            rows += [r] * len(held)
            nds += held
    rows = np.asarray(rows, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    rows, nds = rows[order], np.asarray(nds, dtype=np.int64)[order]
    blocks = pc.binary_repeat(cat(' "', ctx["node_name"][nds], '"'), pa.array(cpus_pn[rows].astype(np.int64)))
    offsets = np.zeros(len(cpus_pn) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(np.bincount(rows, minlength=len(cpus_pn)))
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), blocks), "")


def _seconds6(ms) -> pa.Array:
    """Milliseconds → seconds with six decimals (``%f``)."""
    s, frac = np.divmod(np.asarray(ms, dtype=np.int64), 1000)
    return cat(s, ".", pc.utf8_lpad(txt(frac), width=3, padding="0"), "000")


def _q(values) -> pa.Array:
    """Quote strings as LSF does: in double quotes, a quote inside doubled."""
    return cat('"', pc.replace_substring(txt(values), '"', '""'), '"')
