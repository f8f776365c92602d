"""The canonical job table: column names (units in the name) and their dtypes.

Every reader returns a frame with exactly these columns, in this order, through
:func:`conform`.  ``docs/glossary.md`` documents each column; a test keeps the two in step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

UTC_NS = "datetime64[ns, UTC]"

#: column -> pandas dtype
JOB_COLUMNS: dict[str, str] = {
    "cluster": "string",
    "job_id": "string",
    "job_id_raw": "string",
    "array_job_id": "Int64",
    "array_task_id": "Int64",
    "het_job_id": "Int64",
    "het_job_offset": "Int64",
    "source": "string",
    "source_file": "string",
    "source_line": "Int64",
    "user": "string",
    "account": "string",
    "partition": "string",
    "qos": "string",
    "job_name": "string",
    "submit_time": UTC_NS,
    "eligible_time": UTC_NS,
    "start_time": UTC_NS,
    "end_time": UTC_NS,
    "elapsed_s": "Int64",
    "time_limit_s": "Int64",
    "state": "string",
    "exit_code": "Int64",
    "signal": "Int64",
    "req_nodes": "Int64",
    "req_cpus": "Float64",
    "req_mem_bytes": "Int64",
    "req_gpus": "Float64",
    "gpu_type": "string",
    "alloc_nodes": "Int64",
    "alloc_cpus": "Float64",
    "alloc_mem_bytes": "Int64",
    "alloc_gpus": "Float64",
    "cpu_used_s": "Float64",
    "mem_peak_bytes": "Int64",
    "gpu_util_mean": "Float64",
    "gpu_mem_peak_bytes": "Int64",
    "node_list": "string",
    "caveats": "string",
}

#: normalised job states (DESIGN.md)
STATES = (
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "CANCELLED",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "REQUEUED",
    "RUNNING",
    "PENDING",
    "SUSPENDED",
)

#: caveat codes a row may carry in ``caveats`` (joined with ";"), documented in docs/glossary.md
CAVEATS = {
    "no_usage_fields": "the input has no usage columns (TotalCPU, MaxRSS): use is unknown, not zero",
    "maxrss_batch_only": "memory peak comes from the batch step only on a multi-node job (tasks on other nodes unseen)",
    "maxrss_single_task": "peak from MaxRSS (the largest single task) with the tasks per node unknown: a lower bound",
    "maxrss_times_tasks": "peak from MaxRSS × tasks on each node, summed over nodes (reportseff's rule): an upper bound",
    "totalcpu_zero": "TotalCPU is 0 for a job that ran over a minute (MPI without cgroup accounting): CPU use unknown",
    "no_gpu_telemetry": "a GPU job with neither a jobstats summary nor telemetry: GPU use unknown",
    "start_before_submit": "start time earlier than submit time in the input; wait time set to zero",
    "end_unknown": "end time Unknown (job still running or record incomplete)",
    "reqmem_assumed_total": "ReqMem printed without a per-CPU/per-node flag and no ReqTRES: taken as the job total",
    "reqmem_legacy_flag": "ReqMem carried the legacy per-CPU flag bit 0x80000000; decoded as per-CPU",
    "tres_unmapped": "a TRES in raw numeric form had an ID we cannot name (site-specific gres)",
    "array_range_unexpanded": "one input line named an array range; one row per listed task, all sharing its values",
    "swf_used_mem_copy": "SWF used memory equals requested memory: a copy of the request, not a measurement",
    "swf_cpu_time_total": "SWF field 6 looks like total rather than per-processor CPU time",
    "swf_no_start_time": "the SWF header gives no UnixStartTime: times are offsets from 1970-01-01 UTC",
    "jobstats": "usage taken from a jobstats AdminComment summary",
    "jobstats_disagrees": "the jobstats summary and sacct differ by more than 1 % on nodes, CPUs or elapsed time",
    "reqmem_from_jobstats": "sacct's memory request was unknown or ambiguous: the jobstats summary's total_memory",
    "usage_exceeds_allocation": "use above 100 % of the allocation (CPU or memory): left out of the efficiency distribution",
    "telemetry": "usage filled from exporter telemetry joined to the job (see job_telemetry.parquet)",
    "telemetry_node_attributed": "GPU use shared out from node-level telemetry in proportion to GPUs held (no job label or GPU index)",
    "telemetry_partial": "telemetry samples cover less than 90 % of the job's GPU-time: figures are from the part seen",
    "gpu_util_sm_active": "GPU utilisation is DCGM_FI_PROF_SM_ACTIVE (share of SMs busy), not the duty cycle",
    "pod_restarted": "a container of the pod restarted (for example after OOMKilled) before the pod ended",
    "end_from_last_sample": "no completion time was recorded: the end is the pod's last kube-state-metrics sample",
    "relative_times": "the trace gives times as offsets from an undisclosed origin: read as seconds after 1970-01-01 UTC",
    "gpu_shared": "a fractional or shared GPU (gpu_milli, MIG, time-slicing): alloc_gpus is the share when the trace gives it (gpu_milli), else counts devices shared with others",
    # --- PBS Pro / OpenPBS / Torque (audit/readers/pbs.py) ---
    "pbs_vmem": "PBS: the memory request was vmem/pvmem only: request and peak are virtual memory (resources_used.vmem)",
    "pbs_mem_per_process": "PBS: the memory request is per process (pmem/pvmem) × the processes, taken as the CPUs asked",
    "pbs_stamp_time": "PBS: a time is a record's own stamp (server local time, in the zone given) where the epoch field was missing",
    "pbs_account_is_group": "PBS: no account or Account_Name in the record: account is the job's Unix group",
    "pbs_deleted_before_run": "PBS: deleted (D) or aborted (A) with no end record: never ran; fields from its D/A and Q records",
    # --- LSF (audit/readers/lsf.py) ---
    "lsf_mem_unit_assumed": "LSF rusage[mem=] without a unit: read as MB (LSF_UNIT_FOR_LIMITS unset or MB); another LSF_UNIT_FOR_LIMITS scales the request",
    "lsf_mem_per_host_assumed": "LSF rusage[mem=] without /task, /job or /host on a job of more than one slot: read per host, LSF's default (RESOURCE_RESERVE_PER_TASK=Y makes it per slot)",
    # --- Grid Engine (audit/readers/sge.py) ---
    "sge_req_vmem": "Grid Engine: the memory request is virtual (h_vmem, s_vmem, virtual_free; per slot × slots): mem_peak_bytes is maxvmem, compared like with like",
    "sge_req_rss": "Grid Engine: the memory request is resident (m_mem_free, h_rss, mem_free; per slot × slots): compared with maxrss where the record has it",
    "sge_peak_vmem": "Grid Engine: no resident peak in the record (maxrss is Univa's only): mem_peak_bytes is maxvmem, at or above the resident peak",
    "sge_reserved_usage": "Grid Engine: cpu is slots × wall time while ru_utime + ru_stime is far less (ACCT_RESERVED_USAGE): CPU use unknown",
    "sge_single_host_assumed": "Grid Engine: a parallel job with no task records: all its slots taken to be on its master host (other hosts unseen)",
    "sge_state_inferred": "Grid Engine records no kill reason: TIMEOUT or OUT_OF_MEMORY inferred from run or CPU time at its limit, or memory peak at 99 % of the request",
}


def empty_jobs() -> pd.DataFrame:
    """An empty canonical job table with the right dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in JOB_COLUMNS.items()})


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with exactly the canonical columns, in order, with canonical dtypes.

    Missing columns are added as nulls; unknown columns are an error (a reader bug).
    """
    extra = set(df.columns) - set(JOB_COLUMNS)
    if extra:
        raise ValueError(f"columns outside the canonical job table: {sorted(extra)}")
    out = {}
    n = len(df)
    for col, dtype in JOB_COLUMNS.items():
        if col in df.columns:
            s = df[col]
            if dtype == UTC_NS:
                s = pd.to_datetime(s, utc=True)
                if str(s.dtype) != UTC_NS:
                    s = s.astype(UTC_NS)
            else:
                s = s.astype(dtype)
        else:
            s = pd.Series(pd.NaT if dtype == UTC_NS else pd.NA, index=pd.RangeIndex(n), dtype=dtype)
        out[col] = s.reset_index(drop=True)
    return pd.DataFrame(out)


def caveats_from_masks(n: int, masks: dict) -> pd.Series:
    """Build the ``caveats`` column from ``{code: boolean mask}`` (vectorised; null where none apply).

    Each row's set of codes is a bit pattern; the text is built once per distinct pattern."""
    bits = np.zeros(n, dtype=np.int64)
    codes = []
    for code, mask in masks.items():
        if code not in CAVEATS:
            raise KeyError(f"undocumented caveat code {code!r}")
        m = pd.Series(mask, copy=False).fillna(False).to_numpy(dtype=bool)
        if m.any():
            bits |= m.astype(np.int64) << len(codes)
            codes.append(code)
    if not codes:
        return pd.Series(pd.array([None] * n, dtype="string"))
    if len(codes) <= 20:  # few enough codes for a table indexed by pattern: no sort
        seen = np.flatnonzero(np.bincount(bits, minlength=1))
        lookup = np.zeros(1 << len(codes), dtype=np.int64)
        lookup[seen] = np.arange(len(seen))
        patterns, inverse = seen, lookup[bits]
    else:
        patterns, inverse = np.unique(bits, return_inverse=True)
    text = [";".join(c for k, c in enumerate(codes) if p >> k & 1) or None for p in patterns.tolist()]
    # each row's text by its pattern's position, as one pyarrow column (no Python object per row)
    column = pa.DictionaryArray.from_arrays(pa.array(inverse, type=pa.int64()), pa.array(text, type=pa.large_string()))
    return pd.Series(pd.arrays.ArrowStringArray(column.cast(pa.large_string())))
