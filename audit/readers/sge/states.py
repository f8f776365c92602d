"""A Grid Engine job's state from its record's ``failed`` code, ``exit_status`` and limits.

The ``failed`` codes are those of sge_status(5) (Son of Grid Engine 8.1.9, "Failed states", the table qacct(1)
prints; accounting(5) names the field):

========================  ===================================================  ===============================
failed                    sge_status(5) says                                   state
========================  ===================================================  ===============================
0                         no failure: ran and exited                           by exit_status (below)
1, 3–11                   failed before the job: execd, shepherd, processor    FAILED
                          set, prolog, PE start
12–16                     ran, then PE stop, epilog or processor set failed    by exit_status (the job ran)
17                        killed by a signal (possibly qdel)                   CANCELLED
18–21                     shepherd died, wrote no exit status, left an error   NODE_FAIL
                          file, or the job was unknown to its execd (a host
                          crash or restart)
24, 25                    ran, will be migrated / rescheduled                  REQUEUED
26–29, 31–36, 38          failed setting up the job (output file, shell,       FAILED
                          working directory, AFS, Windows helper, daemons,
                          supplementary group)
30                        the job exited 100 (Grid Engine's "set in error")    FAILED
37                        qmaster enforced h_rt, h_cpu or h_vmem               TIMEOUT (OUT_OF_MEMORY when
                                                                               the memory peak reached the
                                                                               request)
100                       ran, killed by a signal (a limit, qdel, a dying      FAILED, or by the evidence below
                          shepherd, a node crash …)
any other                                                                      FAILED
========================  ===================================================  ===============================

By exit status (accounting(5): 128 + N is death by signal N): 0 → COMPLETED, else FAILED.

Grid Engine records no reason for a kill, so for a job that ran and ended killed (failed 17, 37 or 100, or an exit
status above 128) or failed, the evidence decides, in this order (queue_conf(5) "RESOURCE LIMITS": h_rt and
h_cpu kill with SIGKILL, s_rt warns with SIGUSR1 then kills, s_cpu and s_vmem send SIGXCPU, h_vmem kills):

1. Univa's ``qdel_info`` names who deleted it → CANCELLED;
2. killed and its run time reached ``h_rt`` or ``s_rt`` (within a second), or its CPU time reached ``h_cpu`` or
   ``s_cpu`` × slots, or it died of SIGXCPU without reaching its memory request → TIMEOUT;
3. its memory peak reached 99 % of its memory request (compared like with like: maxvmem against h_vmem, maxrss
   against mem_free; see :mod:`audit.readers.sge.reader`) → OUT_OF_MEMORY.  The execd kills on a sample above
   the limit, so the recorded peak is at or over it; the 1 % allows for the request's units.

A state that 2 or 3 changed from the table's carries ``sge_state_inferred``.  Son of Grid Engine writes a
``qdel`` of a running job as failed 100, exit 137 (seen on a real 8.1.9): without Univa's ``qdel_info`` that is
FAILED with signal 9, like any other kill the record does not explain.  A record that never started
(``start_time`` 0) is CANCELLED when nothing failed, else FAILED (or NODE_FAIL as above).
"""

from __future__ import annotations

import numpy as np

_FAILED = {0: "", **{c: "FAILED" for c in (1, 3, 4, 5, 6, 7, 8, 9, 10, 11)}, **{c: "" for c in (12, 13, 14, 15, 16)},
           17: "CANCELLED", **{c: "NODE_FAIL" for c in (18, 19, 20, 21)}, 24: "REQUEUED", 25: "REQUEUED",
           **{c: "FAILED" for c in (26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 38)}, 37: "TIMEOUT", 100: "FAILED"}
SIGXCPU = 24  # Linux
MEMORY_REACHED = 0.99


def job_states(failed, exit_status, started, elapsed, cpu, slots, limits: dict, peak, req_mem, qdel):
    """States (object array), signals (float, NaN where none) and the mask of states inferred from evidence.

    ``limits`` holds ``h_rt``, ``s_rt``, ``h_cpu``, ``s_cpu`` in seconds (NaN where not asked; CPU limits per
    slot); ``peak`` and ``req_mem`` are the like-with-like memory peak and request (NaN where unknown);
    ``qdel`` is True where Univa's ``qdel_info`` names a deletion."""
    failed = np.asarray(failed, dtype=np.int64)
    exit_status = np.asarray(exit_status, dtype=np.int64)
    n = len(failed)
    base = np.array([_FAILED.get(int(f), "FAILED") for f in failed], dtype=object) if n else np.zeros(0, object)
    by_exit = np.where(exit_status == 0, "COMPLETED", "FAILED").astype(object)
    state = np.where(base == "", by_exit, base)
    signal = np.where((exit_status > 128) & (exit_status <= 128 + 64), exit_status - 128, np.nan)
    killed = np.isin(failed, (17, 37, 100)) | ~np.isnan(signal)
    ended_badly = killed | (state == "FAILED")
    judged = started & ended_badly & np.isin(state, ("FAILED", "CANCELLED", "TIMEOUT"))

    slots_n = np.where(np.asarray(slots, float) > 0, slots, 1.0)
    run_limit = np.fmin(limits["h_rt"], limits["s_rt"])
    cpu_limit = np.fmin(limits["h_cpu"], limits["s_cpu"]) * slots_n
    ran_out = killed & ((elapsed >= run_limit - 1) | (cpu >= cpu_limit - 1))
    memory_out = peak >= MEMORY_REACHED * req_mem
    xcpu = signal == SIGXCPU
    timeout = ran_out | (xcpu & ~memory_out)
    out = state.copy()
    out[judged & memory_out] = "OUT_OF_MEMORY"
    out[judged & timeout] = "TIMEOUT"
    out[judged & qdel] = "CANCELLED"
    inferred = judged & ~qdel & (out != state)  # failed 37 without evidence stays the table's TIMEOUT
    never = ~started
    out[never & (out == "COMPLETED")] = "CANCELLED"
    out[never & np.isin(out, ("TIMEOUT", "OUT_OF_MEMORY", "REQUEUED"))] = "FAILED"
    out[never & qdel] = "CANCELLED"
    return out, signal, inferred
