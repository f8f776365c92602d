"""Reader for PBS Pro / OpenPBS / Torque accounting logs (the daily files of ``server_priv/accounting``).

Sources: the Torque Administrator Guide ("Accounting records", "Requesting resources", "Job exit status"); the
OpenPBS manual pages ``pbs_resources(7B)`` and ``pbs_job_attributes(7B)``, and for the record layout, the size
format and the ``JOB_EXEC_*`` codes the OpenPBS sources (``accounting.c``, ``attr_fn_size.c``, ``acct.h``,
``job.h``), which the PBS Professional Reference Guide's "Accounting Log" chapter describes.

Records (one a line, ``MM/DD/YYYY HH:MM:SS;T;ID;key=value …``, :mod:`.records`):

* ``E`` (job ended) records become jobs, one row per job: a job re-run has its last ``E``; earlier ones are folded.
* A job deleted (``D``) or aborted by the server (``A``) with no ``E`` and no ``S`` for its id in the file never
  ran: a row of its own, state CANCELLED (FAILED for ``A``), no start, elapsed 0, as sacct shows a job cancelled
  while pending; its user, queue, times and requests come from its last ``Q`` record (caveat
  ``pbs_deleted_before_run``).  A ``D``/``A`` of a job that started here is folded (its ``E`` may be in the next
  day's file).
* Every other record (``Q``, ``S``, ``R``, ``C``, ``T``, ``M``, ``L``, reservations' ``B``/``F``/``K``/``k``/
  ``U``/``Y``, provisioning ``P``/``p``, PBS Pro's lower-case ``a``/``s``/``u``/``c``/``e``/``z``/``r`` …), and an
  array's own records (``123[].server``: the array, not a job), are folded: counted, never rows.

Identity: ``job_id`` is the id without its server suffix, as ``qstat`` shows it (``527685``; an array subjob
``123[4]``, with ``array_job_id`` 123 and ``array_task_id`` 4); ``job_id_raw`` the full id; ``cluster`` the server
part (``m1.mason``) unless ``cluster=`` is given (``pbs`` for a bare id).

Times: ``ctime`` → submit, ``etime`` → eligible, ``start``, ``end`` are epoch seconds (``0`` is never).  The
record's stamp is the server's local time, read in ``timezone``, and used only where an epoch is missing: ``end``
(the ``E``/``D``/``A`` stamp), submit (the ``Q`` stamp), start (the last ``S`` stamp) — caveat ``pbs_stamp_time``.
``elapsed_s`` is ``resources_used.walltime``, else end − start; ``time_limit_s`` is ``Resource_List.walltime``.

Requests and use (:mod:`.requests`, :mod:`.values`): CPUs, nodes, GPUs and memory as job totals; memory compared
like with like: where the request is ``mem`` (or ``pmem``), the peak is ``resources_used.mem``; where it is only
``vmem``/``pvmem``, the peak is ``resources_used.vmem`` (caveat ``pbs_vmem``); per-process requests × the CPUs
asked (caveat ``pbs_mem_per_process``); no request, no request (null).  ``cpu_used_s`` is
``resources_used.cput``.  Neither format records GPU use: GPU jobs carry ``no_gpu_telemetry``.  ``account`` is
``account`` or ``Account_Name``, else the Unix ``group`` (caveat ``pbs_account_is_group``); ``queue`` →
``partition``; ``jobname`` → ``job_name``; ``qos`` null.  Placement: :mod:`.placement`.

Exit status → state.  The flavour of a record is PBS Pro where it has ``Resource_List.select``, ``exec_vnode`` or
an ``exec_host`` with ``*C``,
Torque where it has ``Resource_List.neednodes``, ``total_execution_slots`` or ``unique_node_count``, else the
file's (PBS Pro when some record is and none is Torque).

==================================  =========================================================================
``Exit_status``                     state
==================================  =========================================================================
0                                   COMPLETED
256 + N (both; Torque's 271 is a    ``signal`` = N; killed (N = 9, 15; also a shell's 128 + 9/15) with
cancelled running job)              elapsed ≥ limit → TIMEOUT; with peak ≥ memory request → OUT_OF_MEMORY;
                                    else CANCELLED after a ``D`` for it, else FAILED
other > 0                           CANCELLED after a ``D`` for it, else FAILED
Torque −1, −2, −7, −8, −9           FAILED (exec failed before/after files, restart failed, exec() of the
                                    command failed, stdout/stderr files)
Torque −3, −4, −5, −6, −13, −14     NODE_FAIL (retry, aborted on MOM initialisation, cgroup creation failed,
                                    prologue failed)
Torque −10 / −11 / −12              OUT_OF_MEMORY / TIMEOUT / TIMEOUT (memory, walltime, CPU-time limit)
PBS Pro −1, −2, −7, −10, −13,       FAILED (exec failed, restart failed, bad uid, bad password, hook rejection
−17, −21, −22, −23, −24, −25        or error, security, Kerberos, over ncpus)
PBS Pro −3, −4, −5, −6, −14, −20,   NODE_FAIL (retry, MOM initialisation, sister or mother-superior failure,
−30                                 join-job error)
PBS Pro −11, −15, −16, −18, −32     REQUEUED (rerun, requeue for restart, hook rerun, zombie rerun)
PBS Pro −12                         PREEMPTED (checkpointed and killed)
PBS Pro −19                         CANCELLED (a hook deleted it)
PBS Pro −26, −27, −31               OUT_OF_MEMORY (over vmem, mem, hbmem)
PBS Pro −28, −29                    TIMEOUT (over cput, walltime)
any other negative                  FAILED
==================================  =========================================================================

Malformed input: a line without the record layout, a bad stamp, an ``E``/``D``/``A`` whose id is no job id, an
``E`` with a non-numeric epoch time or without an integer ``Exit_status`` are quarantined whole (the row would
be wrong in time or state).  A size, duration, count, select/nodes statement or exec_host/exec_vnode/exec_gpus
that cannot be read is set aside alone (``record_field_quarantine``): the job still counts, that figure unknown.
"""

from __future__ import annotations

from .reader import read_pbs
from .records import RECORD


def looks_like_pbs(lines: list[str]) -> bool:
    """Whether the first non-blank lines of a file are this format's records: the first is, and most are."""
    if not lines or not RECORD.match(lines[0]):
        return False
    return sum(bool(RECORD.match(line)) for line in lines) * 2 > len(lines)


__all__ = ["looks_like_pbs", "read_pbs"]
