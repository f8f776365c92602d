"""What a real Slurm 22.05 prints, read without a Slurm: lines captured from the integration cluster.

The lines below are ``sacct --parsable2 --allusers --duplicates`` output (TZ=UTC) of jobs that
``tests/test_slurm_integration.py`` submits, captured once from the real daemons so these quirks are
checked on every machine.  Quirks they carry:

* ``MaxRSS``/``TRESUsageInTot`` print the largest unit that divides the value evenly: ``3M`` next to
  ``3208K``.
* A two-task ``srun`` step: ``MaxRSS`` is the larger task (62060K) while ``TRESUsageInTot`` ``mem=``
  is the sum over both tasks (124028K); the job's memory is the sum.
* ``TotalCPU`` as ``MM:SS.mmm`` (``00:01.160``).
* A cancelled job: the job says ``CANCELLED by 0`` (uid 0) and ``0:0``; its batch step says
  ``CANCELLED`` and ``0:15`` (SIGTERM) and ends a second after the job.
* An over-memory job under cgroup enforcement: ``OUT_OF_MEMORY`` with ExitCode ``0:125``.
* An array ``--array=1-3``: JobIDRaw 9 and 10 for tasks 1 and 2, while task 3 keeps the array's own
  id 5.
* Every job has ``.batch`` and ``.extern`` steps; a GPU job shows ``gres/gpu=1`` without a type.

Expected values are worked out by hand from the printed fields (K = 1024 bytes, M = 1024² bytes).
"""

from __future__ import annotations

import pandas as pd
import pytest

from audit.readers.sacct.text import read_sacct

K = 1024
MIB = 1024**2

HEADER = ("JobID|JobIDRaw|Cluster|Partition|QOS|Account|User|Submit|Eligible|Start|End|Elapsed|Timelimit|State|"
          "ExitCode|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|TotalCPU|MaxRSS|AveRSS|NTasks|TRESUsageInTot|"
          "NodeList|JobName")
_T = "2026-11-30T14:40:"
_J = "reclaimci|debug|normal|testacct|root"
_S = "reclaimci|||testacct|"
_TRES1 = "billing=1,cpu=1,mem=100M,node=1"
LINES = [
    f"3|3|{_J}|{_T}03|{_T}03|{_T}05|{_T}09|00:00:04|00:05:00|OUT_OF_MEMORY|0:125|1|1|1|100M|{_TRES1}|{_TRES1}|"
    "00:00.086|||||localhost|oom",
    f"3.batch|3.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}09|00:00:04||OUT_OF_MEMORY|0:125|1|1|1|||cpu=1,mem=100M,node=1|"
    "00:00.085|73704K|73704K|1|cpu=00:00:00,energy=0,fs/disk=723845,mem=73704K,pages=0,vmem=78148K|localhost|batch",
    f"3.extern|3.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}09|00:00:04||COMPLETED|0:0|1|1|1|||{_TRES1}|00:00.001|1636K|"
    "1636K|1|cpu=00:00:00,energy=0,fs/disk=6976,mem=1636K,pages=0,vmem=76128K|localhost|extern",
    f"4|4|{_J}|{_T}03|{_T}03|{_T}05|{_T}06|00:00:01|00:05:00|FAILED|3:0|1|1|1|100M|{_TRES1}|{_TRES1}|00:00.002|||||"
    "localhost|fail",
    f"4.batch|4.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}06|00:00:01||FAILED|3:0|1|1|1|||cpu=1,mem=100M,node=1|00:00.001|"
    "3464K|3464K|1|cpu=00:00:00,energy=0,fs/disk=0,mem=3464K,pages=0,vmem=76628K|localhost|batch",
    f"4.extern|4.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}06|00:00:01||COMPLETED|0:0|1|1|1|||{_TRES1}|00:00.001|604K|"
    "604K|1|cpu=00:00:00,energy=0,fs/disk=0,mem=604K,pages=0,vmem=76128K|localhost|extern",
    f"6|6|{_J}|{_T}03|{_T}03|{_T}05|{_T}08|00:00:03|00:05:00|COMPLETED|0:0|1|1|1|100M|"
    "billing=1,cpu=1,gres/gpu=1,mem=100M,node=1|billing=1,cpu=1,gres/gpu=1,mem=100M,node=1|00:00.004|||||localhost|gpu",
    f"6.batch|6.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||"
    "cpu=1,gres/gpu=1,mem=100M,node=1|00:00.002|3256K|3256K|1|cpu=00:00:00,energy=0,fs/disk=11083,mem=3256K,pages=0,"
    "vmem=76632K|localhost|batch",
    f"6.extern|6.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||"
    "billing=1,cpu=1,gres/gpu=1,mem=100M,node=1|00:00.001|1696K|1696K|1|cpu=00:00:00,energy=0,fs/disk=6976,mem=1696K,"
    "pages=0,vmem=76128K|localhost|extern",
    f"7|7|{_J}|{_T}03|{_T}03|{_T}05|{_T}11|00:00:06|00:05:00|COMPLETED|0:0|1|2|2|600M|billing=2,cpu=2,mem=600M,node=1|"
    "billing=2,cpu=2,mem=600M,node=1|00:01.160|||||localhost|steps",
    f"7.batch|7.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}11|00:00:06||COMPLETED|0:0|1|2|2|||cpu=2,mem=600M,node=1|"
    "00:00.021|10528K|10528K|1|cpu=00:00:00,energy=0,fs/disk=52569,mem=10528K,pages=0,vmem=219236K|localhost|batch",
    f"7.extern|7.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}11|00:00:06||COMPLETED|0:0|1|2|2|||billing=2,cpu=2,mem=600M,"
    "node=1|00:00.001|1648K|1648K|1|cpu=00:00:00,energy=0,fs/disk=6976,mem=1648K,pages=0,vmem=76128K|localhost|extern",
    f"7.0|7.0|{_S}|{_T}06|{_T}06|{_T}06|{_T}10|00:00:04||COMPLETED|0:0|1|2|2|||cpu=2,mem=600M,node=1|00:01.135|"
    "62060K|62014K|2|cpu=00:00:01,energy=0,fs/disk=1439110,mem=124028K,pages=0,vmem=286016K|localhost|python3",
    f"7.1|7.1|{_S}|{_T}10|{_T}10|{_T}10|{_T}11|00:00:01||COMPLETED|0:0|1|2|2|||cpu=2,mem=600M,node=1|00:00.002|"
    "1696K|1696K|1|cpu=00:00:00,energy=0,fs/disk=6977,mem=1696K,pages=0,vmem=143008K|localhost|sleep",
    f"8|8|{_J}|{_T}03|{_T}03|{_T}05|{_T}07|00:00:02|00:05:00|CANCELLED by 0|0:0|1|1|1|100M|{_TRES1}|{_TRES1}|"
    "00:00.002|||||localhost|cancel",
    f"8.batch|8.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||CANCELLED|0:15|1|1|1|||cpu=1,mem=100M,node=1|"
    "00:00.001|3024K|3024K|1|cpu=00:00:00,energy=0,fs/disk=11087,mem=3024K,pages=0,vmem=76628K|localhost|batch",
    f"8.extern|8.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}07|00:00:02||COMPLETED|0:0|1|1|1|||{_TRES1}|00:00.001|1620K|"
    "1620K|1|cpu=00:00:00,energy=0,fs/disk=6976,mem=1620K,pages=0,vmem=76128K|localhost|extern",
    f"5_1|9|{_J}|{_T}03|{_T}05|{_T}05|{_T}08|00:00:03|00:05:00|COMPLETED|0:0|1|1|1|100M|{_TRES1}|{_TRES1}|"
    "00:00.004|||||localhost|array",
    f"5_1.batch|9.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||cpu=1,mem=100M,node=1|"
    "00:00.002|3208K|3208K|1|cpu=00:00:00,energy=0,fs/disk=11083,mem=3208K,pages=0,vmem=76632K|localhost|batch",
    f"5_1.extern|9.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||{_TRES1}|00:00.001|"
    "1680K|1680K|1|cpu=00:00:00,energy=0,fs/disk=6976,mem=1680K,pages=0,vmem=76128K|localhost|extern",
    f"5_2|10|{_J}|{_T}03|{_T}05|{_T}05|{_T}08|00:00:03|00:05:00|COMPLETED|0:0|1|1|1|100M|{_TRES1}|{_TRES1}|"
    "00:00.003|||||localhost|array",
    f"5_2.batch|10.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||cpu=1,mem=100M,node=1|"
    "00:00.002|3M|3M|1|cpu=00:00:00,energy=0,fs/disk=11083,mem=3M,pages=0,vmem=76632K|localhost|batch",
    f"5_2.extern|10.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||{_TRES1}|00:00.001|"
    "1696K|1696K|1|cpu=00:00:00,energy=0,fs/disk=6976,mem=1696K,pages=0,vmem=76128K|localhost|extern",
    f"5_3|5|{_J}|{_T}03|{_T}05|{_T}05|{_T}08|00:00:03|00:05:00|COMPLETED|0:0|1|1|1|100M|{_TRES1}|{_TRES1}|"
    "00:00.004|||||localhost|array",
    f"5_3.batch|5.batch|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||cpu=1,mem=100M,node=1|"
    "00:00.002|3224K|3224K|1|cpu=00:00:00,energy=0,fs/disk=11083,mem=3224K,pages=0,vmem=76632K|localhost|batch",
    f"5_3.extern|5.extern|{_S}|{_T}05|{_T}05|{_T}05|{_T}08|00:00:03||COMPLETED|0:0|1|1|1|||{_TRES1}|00:00.001|"
    "1696K|1696K|1|cpu=00:00:00,energy=0,fs/disk=6976,mem=1696K,pages=0,vmem=76128K|localhost|extern",
]


def _dump(tmp_path, drop: tuple[str, ...] = ()) -> object:
    """Write the captured lines (optionally without some fields) and read them."""
    names = HEADER.split("|")
    keep = [i for i, n in enumerate(names) if n not in drop]
    rows = [HEADER] + LINES
    text = "\n".join("|".join(r.split("|")[i] for i in keep) for r in rows) + "\n"
    path = tmp_path / "sacct-22.05.txt"
    path.write_text(text)
    return read_sacct(path, timezone="UTC")


def _row(res, job_id: str) -> pd.Series:
    rows = res.jobs[res.jobs["job_id"] == job_id]
    assert len(rows) == 1
    return rows.iloc[0]


def test_the_lines_are_well_formed():
    assert all(len(ln.split("|")) == len(HEADER.split("|")) for ln in LINES)


def test_steps_fold_and_the_ledger_balances(tmp_path):
    res = _dump(tmp_path)
    assert sorted(res.jobs["job_id"]) == ["3", "4", "5_1", "5_2", "5_3", "6", "7", "8"]
    assert (res.ledger.read, res.ledger.used, res.ledger.folded, res.ledger.quarantined) == (26, 8, 18, 0)
    assert res.ledger.balanced


def test_two_task_step_memory_is_the_sum_over_tasks(tmp_path):
    r = _row(_dump(tmp_path), "7")
    assert r["mem_peak_bytes"] == 124028 * K  # step 7.0's TRESUsageInTot, not its MaxRSS 62060K
    assert r["cpu_used_s"] == pytest.approx(1.160)  # the allocation line's TotalCPU (00:01.160)
    assert r["req_mem_bytes"] == 600 * MIB and r["alloc_cpus"] == 2
    assert pd.isna(r["caveats"])


def test_two_task_step_with_maxrss_only_is_a_flagged_upper_bound(tmp_path):
    # MaxRSS 62060K x 2 tasks on its one node (reportseff's rule); at or above the true sum 124028K
    r = _row(_dump(tmp_path, drop=("TRESUsageInTot", "AveRSS")), "7")
    assert r["mem_peak_bytes"] == 2 * 62060 * K >= 124028 * K
    assert "maxrss_times_tasks" in r["caveats"]


def test_two_task_step_with_maxrss_and_no_ntasks_is_a_flagged_lower_bound(tmp_path):
    r = _row(_dump(tmp_path, drop=("TRESUsageInTot", "AveRSS", "NTasks")), "7")
    assert r["mem_peak_bytes"] == 62060 * K
    assert "maxrss_single_task" in r["caveats"]


def test_two_task_step_from_averss_times_tasks(tmp_path):
    r = _row(_dump(tmp_path, drop=("TRESUsageInTot",)), "7")
    assert r["mem_peak_bytes"] == 2 * 62014 * K


def test_sizes_in_whole_mebibytes(tmp_path):
    r = _row(_dump(tmp_path), "5_2")
    assert r["mem_peak_bytes"] == 3 * MIB  # batch "3M" beats extern 1696K


def test_cancelled_by_uid(tmp_path):
    r = _row(_dump(tmp_path), "8")
    assert (r["state"], r["exit_code"], r["signal"]) == ("CANCELLED", 0, 0)
    assert r["end_time"] == pd.Timestamp(f"{_T}07", tz="UTC")  # the job's end, not its batch step's
    assert r["elapsed_s"] == 2 and r["mem_peak_bytes"] == 3024 * K


def test_out_of_memory(tmp_path):
    r = _row(_dump(tmp_path), "3")
    assert (r["state"], r["exit_code"], r["signal"]) == ("OUT_OF_MEMORY", 0, 125)
    assert r["mem_peak_bytes"] == 73704 * K and r["req_mem_bytes"] == 100 * MIB


def test_failed_exit_code(tmp_path):
    r = _row(_dump(tmp_path), "4")
    assert (r["state"], r["exit_code"], r["signal"]) == ("FAILED", 3, 0)


def test_array_task_ids_and_raw_ids(tmp_path):
    jobs = _dump(tmp_path).jobs
    arr = jobs[jobs["array_job_id"] == 5].sort_values("array_task_id")
    assert arr["array_task_id"].tolist() == [1, 2, 3]
    assert arr["job_id_raw"].tolist() == ["9", "10", "5"]
    assert arr["eligible_time"].tolist() == [pd.Timestamp(f"{_T}05", tz="UTC")] * 3


def test_untyped_gpu(tmp_path):
    res = _dump(tmp_path)
    jobs, r = res.jobs, _row(res, "6")
    assert (r["req_gpus"], r["alloc_gpus"]) == (1, 1) and pd.isna(r["gpu_type"])
    assert jobs.loc[jobs["job_id"] != "6", "alloc_gpus"].eq(0).all()
