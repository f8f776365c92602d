"""The month as a Grid Engine ``accounting`` file, Son of Grid Engine 8.1.9 layout.

Layout (accounting(5) of Son of Grid Engine 8.1.9): a four-line comment header (``# Version: 8.1.9``, ``# ``,
``# DO NOT MODIFY THIS FILE MANUALLY!``, ``# ``), then one record per line, 45 fields separated by colons, in the
order ``qname hostname group owner job_name job_number account priority submission_time start_time end_time
failed exit_status ru_wallclock ru_utime … ru_nivcsw project department granted_pe slots task_number cpu mem io
category iow pe_taskid maxvmem arid ar_sub_time``; times are epoch seconds, ``ru_utime``/``ru_stime``/``cpu``
seconds, ``ru_maxrss`` KB, ``mem`` GB·s, ``maxvmem`` bytes, printed as sge_rusage.c prints them (``%f`` for the
floating fields, integers otherwise).

A record is written for each job or array task that ran (an accounting record is written when a job finishes: a
job deleted while pending has none).  ``job_number`` is the job's number (an array's for its tasks),
``task_number`` the array index (1-based, as ``qsub -t 1-n`` numbers tasks; 0 for other jobs).  The request is in
``category``: ``-l [exclusive=true,][gpu=<n>,]h_rt=<s>,h_vmem=<per slot>`` (resources in alphabetical order;
``h_vmem`` per slot in ``G``/``M``/``K`` = 1024-based units, or bytes; ``gpu`` a JOB consumable, the job's total)
and ``-pe smp <slots>`` for a multi-slot job on one host, ``-pe mpi <slots>`` across hosts; ``slots`` the slots
granted, ``granted_pe`` the PE (``NONE`` for a one-slot job).

Multi-host jobs are tightly integrated parallel jobs: the master record (``pe_taskid`` NONE) on the first host
carries the job script and the processes there, and each further host has a PE task record (``pe_taskid``
``1.<host>``, ``submission_time`` 0, starting when the tasks were launched) with the use on that host; every record
repeats the job's ``slots``.  A job's CPU time is the sum of its records' ``cpu``, its memory peak the sum of their
``maxvmem`` (each host's peak: the generator plants one memory figure, the resident peak, and writes it here).

``failed``/``exit_status`` (sge_status(5), accounting(5)): COMPLETED 0/0; FAILED 0/its exit code, or 100 ("assumedly
after job": killed by a signal) / 128 + N when signal N ended it; TIMEOUT 37 ("qmaster enforced h_rt … limit") /
137; OUT_OF_MEMORY 100 / 137 with ``maxvmem`` at the ``h_vmem`` limit (raised to it when the peak fell a few KiB
short); CANCELLED 17 ("through signal", qdel) / 137; NODE_FAIL 21 ("in recognizing job": the execd of the restarted
host no longer knows the job) / 0; PREEMPTED 100 / 137 (Grid Engine records no preemption apart from a kill by
signal).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow_text import cat, txt, where, write_lines

HEADER = "# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# \n"
N_FIELDS = 45
SIGKILL_STATUS = 128 + 9
FAILED_THROUGH_SIGNAL = 17        # "through signal": job killed by signal (possibly qdel)
FAILED_QMASTER_LIMIT = 37         # "qmaster enforced h_rt, h_cpu, or h_vmem limit"
FAILED_UNKNOWN_JOB = 21           # "in recognizing job": the execd no longer knows the job (its host went down)
FAILED_AFTER_JOB = 100            # "assumedly after job": killed by a signal, task died, node crash
GIB, MIB, KIB = 2**30, 2**20, 2**10


def sge_records(ctx: dict) -> tuple[np.ndarray, np.ndarray]:
    """Every record in the order the qmaster appends them (by end time; a job's PE task records before its
    master record): (end time, line without newline)."""
    end, lines = _records(ctx)
    return end, lines.to_numpy(zero_copy_only=False)


def write_sge_accounting(ctx: dict, out) -> list[Path]:
    """Write ``out/accounting`` (header and records); returns the file."""
    _, lines = _records(ctx)
    path = Path(out) / "accounting"
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(HEADER)
        write_lines(fh, lines)
    return [path]


def _records(ctx: dict) -> tuple[np.ndarray, pa.Array]:
    j, ids = ctx["jobs"], ctx["ids"]
    start = np.asarray(ctx["start"], dtype=np.int64)
    ran = start >= 0
    el = np.where(ran, j["elapsed_s"], 0)
    end = start + el
    nodes, cpus = j["nodes"], j["alloc_cpus"]
    arr = j["sub_type"] == 1
    job_number = np.where(arr, ids["base"], ids["raw"]).astype(np.int64)
    task_number = np.where(arr, j["task"] + 1, 0)
    failed, status = failed_and_exit(j)
    per_slot = mem_per_slot_bytes(j)
    category = _category(j, per_slot)
    pe = np.where(cpus == 1, "NONE", np.where(nodes > 1, "mpi", "smp")).astype(object)

    # one record per host the job ran on: position 0 is the master
    rows, pos, nds = [], [], []
    for r, held in ctx["row_nodes"].items():
        if ran[r]:
            rows += [r] * len(held)
            pos += range(len(held))
            nds += held
    rows = np.asarray(rows, dtype=np.int64)
    pos = np.asarray(pos, dtype=np.int64)
    host = txt(ctx["node_name"][np.asarray(nds, dtype=np.int64)])
    k = nodes[rows]
    master = pos == 0
    # usage per host: an equal share, the remainder on the master's host
    cpu_ms = np.asarray(ctx["cpu_used_ms"], dtype=np.int64)[rows]
    peak = np.asarray(ctx["mem_peak_bytes"], dtype=np.int64)[rows]
    cpu_h = np.where(master, cpu_ms - cpu_ms // k * (k - 1), cpu_ms // k)
    peak_h = np.where(master, peak - peak // k * (k - 1), peak // k)
    oom = (j["state"][rows] == "OUT_OF_MEMORY") & master
    limit = per_slot[rows] * cpus[rows]
    vmem_h = np.where(oom & (peak < limit), peak_h + limit - peak, peak_h)   # killed at h_vmem: at least the limit
    s0, e0 = start[rows], end[rows]
    lead = np.minimum(np.maximum(el[rows] // 100, 1), 30)   # tasks are launched a few seconds after the script
    t_start = np.where(master, s0, np.minimum(s0 + lead, e0))
    wall = e0 - t_start
    stime_ms = cpu_h // 50
    peak_kb = peak_h // KIB
    # the integral of memory use, GB·s: three quarters of the peak over the run, in millionths
    mem_micro = np.round(peak_h / GIB * wall * 0.75 * 1e6).astype(np.int64)

    account = ctx["account_name"][j["account"]][rows]
    fields = [
        ctx["partition_name"][j["partition"]][rows], host, account, ctx["user_name"][j["user"]][rows],
        j["job_name"][rows], job_number[rows], account, "0",
        np.where(master, j["submit"][rows], 0), t_start, e0, failed[rows], status[rows], wall,
        _f6_ms(cpu_h - stime_ms), _f6_ms(stime_ms), cat(peak_kb, ".000000"), "0", "0", "0", "0",
        peak_kb // 4, "0", "0", "0.000000", "0", "0", "0", "0", wall * 2, wall // 10,
        "NONE", "defaultdepartment", pe[rows], cpus[rows], task_number[rows],
        _f6_ms(cpu_h), _f6_micro(mem_micro), "0.000000", category.take(pa.array(rows)), "0.000000",
        where(master, "NONE", cat("1.", host)), cat(vmem_h, ".000000"), "0", "0",
    ]
    lines = pc.binary_join_element_wise(*[txt(f) for f in fields], ":")
    order = np.lexsort((pos, master, rows, e0))
    return e0[order], lines.take(pa.array(order))


def failed_and_exit(j: dict) -> tuple[np.ndarray, np.ndarray]:
    """``failed`` and ``exit_status`` per job (module docstring)."""
    state = j["state"]
    pairs = np.array([c.split(":", 1) for c in np.asarray(j["fail_code"], dtype=object).tolist()],
                     dtype=np.int64).reshape(-1, 2)
    code, sig = pairs[:, 0], pairs[:, 1]
    n = len(state)
    failed = np.zeros(n, dtype=np.int64)
    status = np.zeros(n, dtype=np.int64)
    killed = {"TIMEOUT": FAILED_QMASTER_LIMIT, "OUT_OF_MEMORY": FAILED_AFTER_JOB, "CANCELLED": FAILED_THROUGH_SIGNAL,
              "PREEMPTED": FAILED_AFTER_JOB}
    for name, value in killed.items():
        on = state == name
        failed[on] = value
        status[on] = SIGKILL_STATUS
    failed[state == "NODE_FAIL"] = FAILED_UNKNOWN_JOB        # no exit status came back from the lost host
    f = state == "FAILED"
    failed[f] = np.where(sig[f] > 0, FAILED_AFTER_JOB, 0)
    status[f] = np.where(sig[f] > 0, 128 + sig[f], code[f])
    return failed, status


def mem_per_slot_bytes(j: dict) -> np.ndarray:
    """``h_vmem`` per slot: the job's memory over its slots (bytes, rounded down when they do not divide)."""
    total = j["mem_pn_mib"].astype(np.int64) * j["nodes"] * MIB
    return total // np.maximum(j["alloc_cpus"], 1)


def _category(j: dict, per_slot: np.ndarray) -> pa.Array:
    cpus, nodes, gpus = j["alloc_cpus"], j["nodes"], j["gpus_pn"] * j["nodes"]
    vmem = where(per_slot % GIB == 0, cat(per_slot // GIB, "G"),
               where(per_slot % MIB == 0, cat(per_slot // MIB, "M"),
                   where(per_slot % KIB == 0, cat(per_slot // KIB, "K"), txt(per_slot))))
    res = cat(where(j["exclusive"], "exclusive=true,", ""), where(gpus > 0, cat("gpu=", gpus, ","), ""),
               "h_rt=", j["limit_s"], ",h_vmem=", vmem)
    pe = where(cpus > 1, cat(where(nodes > 1, " -pe mpi ", " -pe smp "), cpus), "")
    return cat("-l ", res, pe)


def _f6_ms(ms) -> pa.Array:
    """Milliseconds → seconds printed ``%f``."""
    return _f6_micro(np.asarray(ms, dtype=np.int64) * 1000)


def _f6_micro(micro) -> pa.Array:
    """Millionths → a number printed ``%f`` (six decimals)."""
    whole, frac = np.divmod(np.asarray(micro, dtype=np.int64), 1_000_000)
    return cat(whole, ".", pc.utf8_lpad(txt(frac), width=6, padding="0"))
