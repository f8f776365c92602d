"""The sacct text reader on hand-built dumps: every quirk in PROVENANCE.md, with hand-computed values."""

from __future__ import annotations

import pandas as pd
import pytest

from audit.readers.sacct.text import read_sacct
from audit.textio import InputError

GiB = 2**30
MiB = 2**20

HEADER = ("JobID|JobIDRaw|Cluster|Partition|QOS|Account|User|Submit|Eligible|Start|End|Elapsed|Timelimit|State|"
          "ExitCode|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|TotalCPU|MaxRSS|AveRSS|NTasks|TRESUsageInTot|"
          "NodeList|JobName")


def row(jobid, raw="", state="COMPLETED", elapsed="01:00:00", nnodes="1", ncpus="4", reqmem="4000Mc",
        reqtres="", alloctres="", totalcpu="", maxrss="", averss="", ntasks="", tresin="", limit="02:00:00",
        submit="2024-03-01T10:00:00", start="2024-03-01T10:05:00", end="2024-03-01T11:05:00", exit="0:0",
        name="job", nodes="n01"):
    raw = raw or jobid
    return "|".join([jobid, raw, "c1", "cpu", "normal", "acct", "alice", submit, submit, start, end, elapsed, limit,
                     state, exit, nnodes, ncpus, ncpus, reqmem, reqtres, alloctres, totalcpu, maxrss, averss, ntasks,
                     tresin, nodes, name])


def read(tmp_path, lines, **kw):
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_sacct(f, **kw)


def test_steps_fold_into_their_job(tmp_path):
    lines = [
        HEADER,
        row("100", alloctres="billing=4,cpu=4,mem=16000M,node=1", totalcpu="02:30:00"),
        row("100.batch", totalcpu="00:10.500", maxrss="1024K", averss="1024K", ntasks="1"),
        row("100.extern", totalcpu="00:00:00", maxrss="0", ntasks="1"),
        # srun step with 4 tasks: TRESUsageInTot mem is the sum over tasks (4 x 2 GiB)
        row("100.0", totalcpu="02:29:49.500", maxrss="2G", averss="2G", ntasks="4", tresin="cpu=02:29:49,mem=8G"),
    ]
    r = read(tmp_path, lines)
    assert r.ledger.read == 4 and r.ledger.used == 1 and r.ledger.folded == 3 and r.ledger.balanced
    j = r.jobs.iloc[0]
    assert j["cpu_used_s"] == 2.5 * 3600  # the allocation line's TotalCPU
    assert j["mem_peak_bytes"] == 8 * GiB  # largest step total, not the largest single task
    assert j["req_mem_bytes"] == 4000 * MiB * 4  # 4000Mc x 4 CPUs
    assert j["alloc_mem_bytes"] == 16000 * MiB
    assert pd.isna(j["caveats"])


def test_step_memory_rules(tmp_path):
    lines = [
        HEADER,
        # no TRESUsageInTot: AveRSS x NTasks
        row("1"), row("1.0", maxrss="3G", averss="1.5G", ntasks="4", totalcpu="10:00"),
        # MaxRSS only on a 4-task step on one node: MaxRSS x 4 tasks, an upper bound, flagged (issue 14)
        row("2"), row("2.0", maxrss="3G", ntasks="4", totalcpu="10:00"),
        # multi-node job whose only usage is the batch step
        row("3", nnodes="2", ncpus="8"), row("3.batch", maxrss="500M", ntasks="1", totalcpu="01:00"),
        # no steps: TotalCPU summed from steps when the allocation line has none
        row("4"), row("4.0", totalcpu="01:00"), row("4.1", totalcpu="00:30.250"),
    ]
    jobs = read(tmp_path, lines).jobs.set_index("job_id")
    assert jobs.loc["1", "mem_peak_bytes"] == 6 * GiB
    assert jobs.loc["2", "mem_peak_bytes"] == 12 * GiB and jobs.loc["2", "caveats"] == "maxrss_times_tasks"
    assert "maxrss_batch_only" in jobs.loc["3", "caveats"]
    assert jobs.loc["4", "cpu_used_s"] == pytest.approx(90.25)


def test_reqmem_forms(tmp_path):
    lines = [
        HEADER,
        row("1", reqmem="4000Mc", ncpus="8"),
        row("2", reqmem="16000Mn", nnodes="2", ncpus="8"),
        row("3", reqmem="32G"),
        row("4", reqmem="312.50G"),
        row("5", reqmem="2147486648Mn", ncpus="2"),
        row("6", reqmem="0n"),
        row("7", reqmem="16000Mn", nnodes="2", reqtres="cpu=8,mem=62.50G,node=2"),
    ]
    jobs = read(tmp_path, lines).jobs.set_index("job_id")
    assert jobs.loc["1", "req_mem_bytes"] == 4000 * MiB * 8
    assert jobs.loc["2", "req_mem_bytes"] == 16000 * MiB * 2
    assert jobs.loc["3", "req_mem_bytes"] == 32 * GiB and "reqmem_assumed_total" in jobs.loc["3", "caveats"]
    assert jobs.loc["4", "req_mem_bytes"] == int(312.5 * GiB)
    assert jobs.loc["5", "req_mem_bytes"] == 3000 * MiB * 2 and "reqmem_legacy_flag" in jobs.loc["5", "caveats"]
    assert pd.isna(jobs.loc["6", "req_mem_bytes"])  # --mem=0: the whole node, size unknown here
    assert jobs.loc["7", "req_mem_bytes"] == int(62.5 * GiB)  # ReqTRES wins


def test_durations_states_and_times(tmp_path):
    lines = [
        HEADER,
        row("1", elapsed="12-14:16:39", limit="UNLIMITED", state="CANCELLED by 129319"),
        row("2", elapsed="451-06:00:24", limit="Partition_Limit", state="NODE_FAIL", exit="-2:0"),
        row("3", elapsed="09:28", limit="30", state="RUNNING", end="Unknown"),
        row("4", state="TIMEOUT", submit="2024-03-01T10:00:00", start="2024-03-01T09:59:00"),
        row("5", state="OUT_OF_MEMORY", exit="0:125"),
        row("6", state="FAILED", exit="1:0"), row("6.0", state="OUT_OF_MEMORY", exit="0:125"),
        row("7", state="PREEMPTED", limit="1-00"),
    ]
    jobs = read(tmp_path, lines).jobs.set_index("job_id")
    assert jobs.loc["1", "elapsed_s"] == 12 * 86400 + 14 * 3600 + 16 * 60 + 39
    assert pd.isna(jobs.loc["1", "time_limit_s"]) and jobs.loc["1", "state"] == "CANCELLED"
    assert jobs.loc["2", "elapsed_s"] == 451 * 86400 + 6 * 3600 + 24 and pd.isna(jobs.loc["2", "time_limit_s"])
    assert jobs.loc["2", "exit_code"] == -2 and jobs.loc["2", "state"] == "NODE_FAIL"
    assert jobs.loc["3", "elapsed_s"] == 9 * 60 + 28 and jobs.loc["3", "time_limit_s"] == 1800
    assert pd.isna(jobs.loc["3", "end_time"]) and "end_unknown" in jobs.loc["3", "caveats"]
    assert "start_before_submit" in jobs.loc["4", "caveats"]
    assert jobs.loc["5", "signal"] == 125
    assert jobs.loc["6", "state"] == "OUT_OF_MEMORY"  # a step was killed for memory
    assert jobs.loc["7", "time_limit_s"] == 86400
    assert str(jobs.loc["1", "submit_time"].tz) == "UTC"


def test_timezone_of_sacct_times(tmp_path):
    r = read(tmp_path, [HEADER, row("1")], timezone="Europe/Berlin")
    assert r.jobs.iloc[0]["submit_time"] == pd.Timestamp("2024-03-01T09:00:00Z")


def test_arrays_and_het_jobs(tmp_path):
    lines = [
        HEADER,
        row("24220929_421", raw="24220930"), row("24220929_421.batch", raw="24220930.batch", maxrss="1G"),
        row("1853+0", raw="1853"), row("1853+0.batch", raw="1853.batch", maxrss="2G"),
        row("1853+1", raw="1854"), row("1853+1.0", raw="1854.0", maxrss="3G", ntasks="1"),
    ]
    r = read(tmp_path, lines)
    assert r.ledger.used == 3 and r.ledger.folded == 3
    jobs = r.jobs.set_index("job_id")
    assert jobs.loc["24220929_421", "array_job_id"] == 24220929 and jobs.loc["24220929_421", "array_task_id"] == 421
    assert jobs.loc["24220929_421", "job_id_raw"] == "24220930"
    assert jobs.loc["1853+1", "het_job_id"] == 1853 and jobs.loc["1853+1", "het_job_offset"] == 1
    assert jobs.loc["1853+0", "mem_peak_bytes"] == 2 * GiB and jobs.loc["1853+1", "mem_peak_bytes"] == 3 * GiB


def test_gpu_tres_typed_untyped_and_raw(tmp_path):
    lines = [
        HEADER,
        row("1", alloctres="billing=1,cpu=1,gres/gpu:p100=1,gres/gpu=1,mem=125G,node=1"),
        row("2", alloctres="gres/gpu:volta=2,mem=125G,node=1"),
        row("3", alloctres="1=20,2=170000,4=1,5=20,1002=1", ncpus=""),
        row("4", alloctres="cpu=4,gres/gpu:a100=2,gres/gpu:v100=1,gres/gpu=3,node=1"),
    ]
    jobs = read(tmp_path, lines).jobs.set_index("job_id")
    assert jobs.loc["1", "alloc_gpus"] == 1 and jobs.loc["1", "gpu_type"] == "p100"
    assert jobs.loc["2", "alloc_gpus"] == 2 and jobs.loc["2", "gpu_type"] == "volta"
    assert jobs.loc["3", "alloc_cpus"] == 20 and jobs.loc["3", "alloc_mem_bytes"] == 170000 * MiB
    assert jobs.loc["3", "alloc_nodes"] == 1 and "tres_unmapped" in jobs.loc["3", "caveats"]
    assert jobs.loc["4", "alloc_gpus"] == 3 and jobs.loc["4", "gpu_type"] == "a100+v100"


def test_caret_delimiter_and_job_names_with_pipes(tmp_path):
    lines = ["JobID^|^State^|^Elapsed^|^JobName", "1^|^COMPLETED^|^00:01:00^|^a|b", "2^|^FAILED^|^00:00:05^|^x"]
    r = read(tmp_path, lines)
    assert r.jobs["job_name"].tolist() == ["a|b", "x"]
    lines = ["JobID|State|JobName", "1|COMPLETED|left|right"]
    assert read(tmp_path, lines).jobs["job_name"].tolist() == ["left|right"]


def test_malformed_lines_are_quarantined_with_field_and_line(tmp_path):
    lines = [
        HEADER,
        row("1"),
        row("2", elapsed="1:xx:00"),
        row("3", reqmem="12Q"),
        row("4", submit="Ystday 13:45"),
        "5|truncated",
        "",
        row("6.batch", maxrss="1G"),  # its job line is missing
        row("7"), row("7.0", maxrss="lots"),
        row("abc"),
    ]
    r = read(tmp_path, lines)
    q = {(line, fld) for _, line, fld, _, _ in r.quarantine.rows}
    assert q == {(3, "Elapsed"), (4, "ReqMem"), (5, "Submit"), (6, "line"), (8, "JobID"), (10, "MaxRSS"),
                 (11, "JobID")}
    assert r.ledger.read == 9 and r.ledger.structural == 2
    assert r.ledger.used == 2 and r.ledger.quarantined == 7 and r.ledger.folded == 0 and r.ledger.balanced
    reasons = {fld: reason for _, _, fld, reason, _ in r.quarantine.rows}
    assert "'1:xx:00'" in reasons["Elapsed"]
    assert all(raw for *_, raw in r.quarantine.rows)


def test_duplicates_attach_steps_to_the_nearest_allocation(tmp_path):
    lines = [HEADER, row("9", state="REQUEUED"), row("9.batch", maxrss="1G"), row("9"), row("9.batch", maxrss="5G")]
    jobs = read(tmp_path, lines).jobs
    assert jobs["mem_peak_bytes"].tolist() == [GiB, 5 * GiB]


def test_headerless_unknown_order_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="line 1"):
        read(tmp_path, ["1|2|3"])


def test_headerless_with_named_fields(tmp_path):
    r = read(tmp_path, ["5|COMPLETED|00:10:00"], fields=["JobID", "State", "Elapsed"])
    assert r.jobs.iloc[0]["elapsed_s"] == 600


def test_corrupt_jobstats_sets_only_the_field_aside(tmp_path):
    from audit.readers.jobstats import encode_jobstats

    good = encode_jobstats({"gpus": 0, "total_time": 3600, "nodes": {"n01": {
        "cpus": 4, "total_memory": 8 * GiB, "used_memory": 3 * GiB, "total_time": 7200.0}}})
    lines = ["JobID|State|Elapsed|NCPUS|TotalCPU|AdminComment",
             f"1|COMPLETED|01:00:00|4|01:00:00|{good}",
             "2|COMPLETED|01:00:00|4|00:30:00|JS1:!!notbase64!!",
             "2.batch|COMPLETED|01:00:00|4|00:30:00|"]
    r = read(tmp_path, lines)
    jobs = r.jobs.set_index("job_id")
    assert jobs.loc["1", "cpu_used_s"] == 7200 and jobs.loc["1", "mem_peak_bytes"] == 3 * GiB
    assert "jobstats" in jobs.loc["1", "caveats"]
    assert jobs.loc["2", "cpu_used_s"] == 1800  # kept, usage from sacct
    assert r.ledger.used == 2 and r.ledger.quarantined == 0 and r.ledger.fields_quarantined == 1
    assert r.ledger.balanced and [(q[1], q[2]) for q in r.quarantine.rows] == [(3, "AdminComment")]
