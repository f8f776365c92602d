"""What a ``JOB_FINISH`` record's numbers and strings mean: states, exit status, the resource requirement.

Job state, from ``jStatus`` (64 DONE, 32 EXIT: the bits of lsbatch.h's JOB_STAT_DONE and JOB_STAT_EXIT) and, for
an EXIT, ``exitInfo`` (the number logged for the termination reason; IBM Spectrum LSF 10.1, "Termination reasons
displayed by bacct, bhist, and bjobs", and lsbatch.h's TERM_* values):

=====================================  ===================  ===================================
jStatus / exitInfo                     job that ran         job that never started (startTime 0)
=====================================  ===================  ===================================
DONE (64), any exitInfo                COMPLETED            COMPLETED
EXIT, 0 TERM_UNKNOWN                   FAILED               FAILED
EXIT, 1 TERM_PREEMPT                   PREEMPTED            FAILED
EXIT, 2 TERM_WINDOW, 3 TERM_LOAD       PREEMPTED            FAILED
EXIT, 4 TERM_OTHER (chunk requeued)    REQUEUED             FAILED
EXIT, 5 TERM_RUNLIMIT                  TIMEOUT              FAILED
EXIT, 6 TERM_DEADLINE                  DEADLINE             DEADLINE
EXIT, 7 TERM_PROCESSLIMIT              FAILED               FAILED
EXIT, 8 TERM_FORCE_OWNER,              CANCELLED            CANCELLED
9 TERM_FORCE_ADMIN, 14 TERM_OWNER,
15 TERM_ADMIN, 23 TERM_BUCKET_KILL,
27 TERM_ORPHAN_SYSTEM
EXIT, 10 TERM_REQUEUE_OWNER,           REQUEUED             CANCELLED
11 TERM_REQUEUE_ADMIN
EXIT, 12 TERM_CPULIMIT                 TIMEOUT              FAILED
EXIT, 13 TERM_CHKPNT                   CANCELLED            CANCELLED
EXIT, 16 TERM_MEMLIMIT, 20 TERM_SWAP   OUT_OF_MEMORY        FAILED
EXIT, 19 TERM_ZOMBIE (LSF lost the     NODE_FAIL            FAILED
host), 26 TERM_REMOVE_HUNG_JOB
EXIT, 30 TERM_MC_RECALL                REQUEUED             CANCELLED
EXIT, 31 TERM_RC_RECLAIM (cloud host   PREEMPTED            FAILED
reclaimed)
EXIT, 17 TERM_EXTERNAL_SIGNAL and any  FAILED               FAILED
other (18 RMS, 21 thread limit, 22
SLURM, 24 control PID, 25 cwd missing,
28, 29 data staging, 32 CSM, 33 Kube)
=====================================  ===================  ===================================

``exitStatus`` is a wait(2) status: the exit code is ``status >> 8`` (``& 0xff``), the signal ``status & 0x7f``.

Requests read from the resource requirement (``effectiveResReq`` where the record has one, else ``resReq``):

* memory, ``rusage[mem=N]``: a bare N is in the unit of ``LSF_UNIT_FOR_LIMITS``, read as MB (MiB, LSF's
  multiples are binary; the value IBM's examples and the installer's default give), with the caveat
  ``lsf_mem_unit_assumed``; ``K``/``M``/``G``/``T`` suffixes as written.  ``/task`` is per slot, ``/job`` for
  the job, ``/host`` per host; with no method, per host: LSF reserves memory for a parallel job per host unless
  ``RESOURCE_RESERVE_PER_TASK=Y`` ("Enabling per-task memory reservation"), caveat
  ``lsf_mem_per_host_assumed`` when the job has more than one slot;
* GPUs, ``rusage[ngpus_physical=N]`` (or the older ``ngpus=N``) and ``-gpu "num=N"``: per host;
* nodes, ``span[hosts=1]`` (one) and ``span[ptile=K]`` (slots ÷ K, rounded up).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DONE, EXIT = 64, 32

#: exitInfo → state of a job that ran (absent: FAILED)
RAN = {1: "PREEMPTED", 2: "PREEMPTED", 3: "PREEMPTED", 4: "REQUEUED", 5: "TIMEOUT", 6: "DEADLINE",
       8: "CANCELLED", 9: "CANCELLED", 10: "REQUEUED", 11: "REQUEUED", 12: "TIMEOUT", 13: "CANCELLED",
       14: "CANCELLED", 15: "CANCELLED", 16: "OUT_OF_MEMORY", 19: "NODE_FAIL", 20: "OUT_OF_MEMORY",
       23: "CANCELLED", 26: "NODE_FAIL", 27: "CANCELLED", 30: "REQUEUED", 31: "PREEMPTED"}
#: exitInfo → state of a job that never started (absent: FAILED)
NEVER_STARTED = {6: "DEADLINE", 8: "CANCELLED", 9: "CANCELLED", 10: "CANCELLED", 11: "CANCELLED",
                 13: "CANCELLED", 14: "CANCELLED", 15: "CANCELLED", 23: "CANCELLED", 27: "CANCELLED",
                 30: "CANCELLED"}

UNIT = {"": 1024**2, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}


def states(status: np.ndarray, info: np.ndarray, started: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Canonical states (object array) and the mask of records whose ``jStatus`` is neither DONE nor EXIT."""
    status = np.nan_to_num(status).astype(np.int64)
    info = np.nan_to_num(info).astype(np.int64)
    done = (status & DONE) != 0
    exited = ~done & ((status & EXIT) != 0)
    out = np.full(len(status), "FAILED", dtype=object)
    for code, name in RAN.items():
        out[exited & started & (info == code)] = name
    for code, name in NEVER_STARTED.items():
        out[exited & ~started & (info == code)] = name
    out[done] = "COMPLETED"
    return out, ~done & ~exited


def exit_parts(status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """wait(2) status → (exit code, signal) as floats, NaN where the status is unknown (negative)."""
    known = status >= 0
    s = np.where(known, np.nan_to_num(status), 0).astype(np.int64)
    return np.where(known, (s >> 8) & 0xFF, np.nan), np.where(known, s & 0x7F, np.nan)


_MEM = (r"rusage\[(?:[^\]]*?[,:\s])?mem\s*=\s*(?P<v>\d+(?:\.\d+)?)\s*(?P<u>[KMGTPEkmgtpe]?)[Bb]?"
        r"\s*(?P<m>/\s*(?:task|job|host|slot))?")
_GPU_RUSAGE = r"rusage\[(?:[^\]]*?[,:\s])?ngpus(?:_physical)?\s*=\s*(?P<g>\d+(?:\.\d+)?)"
_GPU_OPTION = r"-gpu\s*\"?[^\"]*?\bnum=(?P<g>\d+)"
_SPAN_ONE = r"span\[(?:[^\]]*?[,:\s])?hosts\s*=\s*1\b"
_PTILE = r"span\[(?:[^\]]*?[,:\s])?ptile\s*=\s*(?P<p>\d+)\b"


def resource_requests(req: pa.Array) -> dict[str, np.ndarray]:
    """From resource requirement strings: ``mem_bytes`` (the number × its unit, NaN where none), ``mem_method``
    ('task', 'job', 'host' or '' where none is written), ``mem_unit_given``, ``gpus`` (NaN where none),
    ``one_host`` and ``ptile`` (NaN where none).  Each distinct string is read once: jobs share a few."""
    encoded = pc.dictionary_encode(req)
    codes = np.asarray(encoded.indices, dtype=np.int64)
    return {k: v[codes] for k, v in _requests(encoded.dictionary).items()}


def _requests(req: pa.Array) -> dict[str, np.ndarray]:
    mem = pc.extract_regex(req, _MEM)
    value = _float(pc.struct_field(mem, "v"))
    unit = _str(pc.utf8_upper(pc.struct_field(mem, "u")))
    mult = np.full(len(unit), np.nan)
    for key, size in UNIT.items():
        mult[unit == key] = size
    method = _str(pc.struct_field(mem, "m"))
    method = np.char.replace(np.char.replace(method.astype(str), "/", ""), " ", "").astype(object)
    method[method == "slot"] = "task"
    gpus = _float(pc.struct_field(pc.extract_regex(req, _GPU_RUSAGE), "g"))
    option = _float(pc.struct_field(pc.extract_regex(req, _GPU_OPTION), "g"))
    one_host = np.asarray(pc.fill_null(pc.match_substring_regex(req, _SPAN_ONE), False), dtype=bool)
    ptile = _float(pc.struct_field(pc.extract_regex(req, _PTILE), "p"))
    return {"mem_bytes": value * mult, "mem_method": method, "mem_unit_given": unit != "",
            "gpus": np.where(np.isnan(gpus), option, gpus), "one_host": one_host, "ptile": ptile}


def _float(a: pa.Array) -> np.ndarray:
    return np.asarray(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")


def _str(a: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(a, "").to_numpy(zero_copy_only=False), dtype=object)
