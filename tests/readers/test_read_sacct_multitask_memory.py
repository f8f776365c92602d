"""Issue 14, item 2: the memory of multi-task steps, with each value worked by hand below.

An 8-task step with ``MaxRSS=1947276K`` (the issue's case) held about 8 x that on its node, not 1.9 GB."""

from __future__ import annotations

import pandas as pd

from audit.readers.sacct.text import read_sacct

K = 1024
HEADER = "JobID|State|NNodes|AllocCPUS|ReqMem|Elapsed|TotalCPU|MaxRSS|AveRSS|NTasks|TRESUsageInTot"


def _read(tmp_path, rows):
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return read_sacct(f).jobs.set_index("job_id")


def test_eight_task_step_with_tresusageintot(tmp_path):
    # TRESUsageInTot mem is the sum over the 8 tasks of each one's peak: 15,000,000K; exact, no flag
    jobs = _read(tmp_path, ["1|COMPLETED|1|8|16Gn|01:00:00|08:00:00||||",
                            "1.batch|COMPLETED|1|8||01:00:00|00:00:01|5000K||1|",
                            "1.0|COMPLETED|1|8||00:59:00|07:59:59|1947276K||8|cpu=07:59:59,mem=15000000K"])
    assert jobs.loc["1", "mem_peak_bytes"] == 15_000_000 * K
    assert pd.isna(jobs.loc["1", "caveats"])


def test_eight_task_step_without_tresusageintot_is_maxrss_times_tasks(tmp_path):
    # 1947276K x 8 tasks on 1 node = 15,578,208K = 15,952,084,992 bytes: 92.9 % of the 16 GiB request, an upper bound
    jobs = _read(tmp_path, ["2|COMPLETED|1|8|16Gn|01:00:00|08:00:00||||",
                            "2.batch|COMPLETED|1|8||01:00:00|00:00:01|5000K||1|",
                            "2.0|COMPLETED|1|8||00:59:00|07:59:59|1947276K||8|"])
    j = jobs.loc["2"]
    assert j["mem_peak_bytes"] == 15_952_084_992 == 1947276 * K * 8
    assert round(j["mem_peak_bytes"] / j["req_mem_bytes"], 3) == 0.929
    assert j["caveats"] == "maxrss_times_tasks"


def test_two_node_step_per_node_peak_then_the_total(tmp_path):
    # 8 tasks on 2 nodes: 4 on a node, so the node's peak <= 4 x 1,000,000K; the job's total is 2 nodes x that
    jobs = _read(tmp_path, ["3|COMPLETED|2|16|16Gn|01:00:00|16:00:00||||",
                            "3.batch|COMPLETED|1|8||01:00:00|00:00:01|5000K||1|",
                            "3.0|COMPLETED|2|16||00:59:00|15:59:59|1000000K||8|"])
    assert jobs.loc["3", "mem_peak_bytes"] == 2 * 4 * 1_000_000 * K
    assert jobs.loc["3", "caveats"] == "maxrss_times_tasks"


def test_uneven_tasks_take_the_busiest_node(tmp_path):
    # 5 tasks on 2 nodes: at most 3 on a node (ceil 5/2); 2 nodes x 3 x 100,000K
    jobs = _read(tmp_path, ["4|COMPLETED|2|5|8Gn|01:00:00|05:00:00||||",
                            "4.0|COMPLETED|2|5||00:59:00|04:59:59|100000K||5|"])
    assert jobs.loc["4", "mem_peak_bytes"] == 2 * 3 * 100_000 * K


def test_averss_times_tasks_is_the_sum(tmp_path):
    # AveRSS is the mean over tasks of each one's peak: 1,500,000K x 8 = 12,000,000K, exact, no flag
    jobs = _read(tmp_path, ["5|COMPLETED|1|8|16Gn|01:00:00|08:00:00||||",
                            "5.0|COMPLETED|1|8||00:59:00|07:59:59|1947276K|1500000K|8|"])
    assert jobs.loc["5", "mem_peak_bytes"] == 12_000_000 * K
    assert pd.isna(jobs.loc["5", "caveats"])


def test_tasks_per_node_unknown_is_a_lower_bound(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text("JobID|State|AllocCPUS|Elapsed|MaxRSS|NTasks\n6|COMPLETED|8|01:00:00||\n"
                 "6.0|COMPLETED|8|00:59:00|1947276K|8\n7|COMPLETED|8|01:00:00||\n7.0|COMPLETED|8|00:59:00|1947276K|\n",
                 encoding="utf-8")
    jobs = read_sacct(f).jobs.set_index("job_id")
    # no NNodes and several tasks (6), or no NTasks (7): MaxRSS alone, the largest task, flagged
    for jid in ("6", "7"):
        assert jobs.loc[jid, "mem_peak_bytes"] == 1947276 * K
        assert jobs.loc[jid, "caveats"] == "maxrss_single_task"


def test_single_task_step_is_exact(tmp_path):
    jobs = _read(tmp_path, ["8|COMPLETED|1|1|4Gn|01:00:00|01:00:00||||",
                            "8.batch|COMPLETED|1|1||01:00:00|00:59:00|3000000K||1|"])
    assert jobs.loc["8", "mem_peak_bytes"] == 3_000_000 * K and pd.isna(jobs.loc["8", "caveats"])


def test_the_flag_follows_the_step_that_gave_the_peak(tmp_path):
    # .0 (upper bound 2 x 1,000,000K) is below .1 (TRESUsageInTot 5,000,000K): the job carries .1's figure, no flag
    jobs = _read(tmp_path, ["9|COMPLETED|1|2|8Gn|01:00:00|02:00:00||||",
                            "9.0|COMPLETED|1|2||00:10:00|00:20:00|1000000K||2|",
                            "9.1|COMPLETED|1|2||00:40:00|01:20:00|3000000K||2|mem=5000000K"])
    assert jobs.loc["9", "mem_peak_bytes"] == 5_000_000 * K and pd.isna(jobs.loc["9", "caveats"])
