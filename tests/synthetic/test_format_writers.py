"""The PBS, LSF and Grid Engine writers of ``reclaim generate --format``.

Hand-worked records: a four-job month built by hand (a single-node job, a two-node exclusive MPI job that ran
into its limit, a GPU array task killed at its memory limit, an array task an administrator cancelled while it
waited), written by each writer and compared with records worked out by hand from each format's documentation
(PBS Professional Reference Guide "Accounting Log" and OpenPBS ``job.h``; IBM Spectrum LSF 10.1 "lsb.acct" and
"Termination reasons"; Son of Grid Engine 8.1.9 accounting(5) and sge_status(5)).  Then the layout of a generated
month: record counts, fields per record, and the totals the records carry against truth.json.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit.synthetic import generate
from audit.synthetic.lsf_acct import FIXED_FIELDS, lsb_acct_lines
from audit.synthetic.pbs_accounting import local_stamps, pbs_records
from audit.synthetic.sge_accounting import HEADER, N_FIELDS, sge_records

ROOT = Path(__file__).resolve().parents[2]
WEEK_CLUSTER = ROOT / "sample_traces" / "week.cluster.toml"
WEEK_PROFILE = ROOT / "sample_traces" / "week.profile.toml"
T0 = 1_000_000_000          # 09/09/2001 01:46:40 UTC


def hand_month() -> dict:
    """The writers' context for four jobs (the keys ``generate`` puts in it that the writers read)."""
    a = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    o = lambda *v: np.array(v, dtype=object)  # noqa: E731
    jobs = {
        "n": 4,
        "submit": a(T0, T0 + 100, T0 + 300, T0 + 500),
        "elapsed_s": a(3600, 3630, 600, 0),
        "state": o("COMPLETED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED"),
        "nodes": a(1, 2, 1, 1), "cpus_pn": a(4, 64, 8, 1), "gpus_pn": a(0, 0, 2, 0),
        "alloc_cpus": a(4, 128, 8, 1), "mem_pn_mib": a(8192, 64000, 65536, 4000),
        "limit_s": a(7200, 3600, 1800, 600), "job_name": o("relax_1", "md_2", "train_3", "test_4"),
        "user": a(0, 1, 0, 1), "account": a(0, 1, 0, 1), "partition": a(0, 0, 1, 0),
        "sub_type": a(0, 0, 1, 1), "task": a(0, 0, 3, 4), "exclusive": np.array([False, True, False, False]),
        "cancel_wait_s": a(900, 900, 900, 300), "cancel_uid": a(20001, 20002, 20001, 0),
        "fail_code": o("1:0", "1:0", "1:0", "1:0"),
    }
    return {
        "jobs": jobs, "ids": {"raw": a(101, 102, 103, 104), "base": a(101, 102, 100, 100)},
        "start": a(T0 + 60, T0 + 200, T0 + 400, -1), "cluster_name": "testc",
        "node_name": o("cn001", "cn002", "cn003", "ga001"), "row_nodes": {0: [0], 1: [1, 2], 2: [3]},
        "user_name": o("alice", "bob"), "account_name": o("chem", "phys"), "partition_name": o("cpu", "gpu-a100"),
        "uid": a(20001, 20002),
        "cpu_used_ms": a(10_000_500, 460_800_001, 2_400_000, 0),
        "mem_peak_bytes": a(2 * 2**30, 100 * 2**30, 64 * 2**30, 0),
    }


# ---------------------------------------------------------------- PBS


def test_pbs_stamps_are_local_time_and_days_follow_them():
    stamp, day = local_stamps(np.array([T0, T0 + 80_000]), "UTC")
    assert stamp.tolist() == ["09/09/2001 01:46:40", "09/10/2001 00:00:00"] and day.tolist() == ["20010909", "20010910"]
    # the same instants in New York (EDT, UTC-4 in September)
    stamp, day = local_stamps(np.array([T0, T0 + 80_000]), "America/New_York")
    assert stamp.tolist() == ["09/08/2001 21:46:40", "09/09/2001 20:00:00"] and day.tolist() == ["20010908", "20010909"]


def test_pbs_records_by_hand():
    t, day, lines = pbs_records(hand_month())
    assert set(day.tolist()) == {"20010909"}
    who0 = ('user=alice group=chem account="chem" project=_pbs_project_default jobname=relax_1 queue=cpu '
            "ctime=1000000000 qtime=1000000000 etime=1000000000 start=1000000060 exec_host=cn001/0*4 "
            "exec_vnode=(cn001:ncpus=4:mem=8388608kb) Resource_List.mem=8gb Resource_List.ncpus=4 "
            "Resource_List.nodect=1 Resource_List.place=pack Resource_List.select=1:ncpus=4:mem=8gb "
            "Resource_List.walltime=02:00:00")
    assert lines.tolist()[:2] == [
        "09/09/2001 01:46:40;Q;101.testc;queue=cpu",
        "09/09/2001 01:47:40;S;101.testc;" + who0 + " resource_assigned.mem=8388608kb resource_assigned.ncpus=4",
    ]
    # log order: by stamp; the array tasks are subjobs 100[3] and 100[4]; the task cancelled while queued has Q, D
    assert [ln.split(";", 3)[:3] for ln in lines.tolist()] == [
        ["09/09/2001 01:46:40", "Q", "101.testc"], ["09/09/2001 01:47:40", "S", "101.testc"],
        ["09/09/2001 01:48:20", "Q", "102.testc"], ["09/09/2001 01:50:00", "S", "102.testc"],
        ["09/09/2001 01:51:40", "Q", "100[3].testc"], ["09/09/2001 01:53:20", "S", "100[3].testc"],
        ["09/09/2001 01:55:00", "Q", "100[4].testc"], ["09/09/2001 02:00:00", "D", "100[4].testc"],
        ["09/09/2001 02:03:20", "E", "100[3].testc"], ["09/09/2001 02:47:40", "E", "101.testc"],
        ["09/09/2001 02:50:30", "E", "102.testc"],
    ]
    assert t.tolist() == [T0, T0 + 60, T0 + 100, T0 + 200, T0 + 300, T0 + 400, T0 + 500, T0 + 800, T0 + 1000,
                          T0 + 3660, T0 + 3830]
    rec = {ln.split(";")[1] + ln.split(";")[2]: ln.split(";", 3)[3] for ln in lines.tolist()}
    # 10,000.5 s of CPU time printed in whole seconds; 10,000 * 100 // 3,600 = 277 %; vmem = mem + 200 MiB
    assert rec["E101.testc"] == who0 + (
        " session=23819 end=1000003660 Exit_status=0 resources_used.cpupercent=277 resources_used.cput=02:46:40"
        " resources_used.mem=2097152kb resources_used.ncpus=4 resources_used.vmem=2301952kb"
        " resources_used.walltime=01:00:00 eligible_time=00:01:00 run_count=1")
    e102 = rec["E102.testc"]
    for part in ("exec_host=cn002/0*64+cn003/0*64",
                 "exec_vnode=(cn002:ncpus=64:mem=65536000kb)+(cn003:ncpus=64:mem=65536000kb)",
                 "Resource_List.mem=125gb Resource_List.ncpus=128 Resource_List.nodect=2",
                 "Resource_List.place=scatter:excl Resource_List.select=2:ncpus=64:mem=64000mb",
                 "Resource_List.walltime=01:00:00", "Exit_status=-29", "resources_used.cput=128:00:00",
                 "resources_used.cpupercent=12694", "resources_used.mem=104857600kb",
                 "resources_used.walltime=01:00:30", "eligible_time=00:01:40"):
        assert part in e102, part
    e103 = rec["E100[3].testc"]
    for part in ("exec_host=ga001/0*8 exec_vnode=(ga001:ncpus=8:mem=67108864kb:ngpus=2)",
                 "Resource_List.mem=64gb Resource_List.ncpus=8 Resource_List.ngpus=2 Resource_List.nodect=1",
                 "Resource_List.select=1:ncpus=8:mem=64gb:ngpus=2", "Resource_List.walltime=00:30:00",
                 "Exit_status=-27", "resources_used.cput=00:40:00", "resources_used.mem=67108864kb"):
        assert part in e103, part
    assert rec["D100[4].testc"] == "requestor=root@login01" and "Q100[4].testc" in rec


def test_pbs_exit_status_conventions():
    ctx = hand_month()
    j = ctx["jobs"]
    j["state"] = np.array(["FAILED", "FAILED", "CANCELLED", "NODE_FAIL"], dtype=object)
    j["fail_code"] = np.array(["2:0", "0:9", "1:0", "1:0"], dtype=object)
    ctx["start"] = np.array([T0 + 60, T0 + 200, T0 + 400, T0 + 600])
    ctx["row_nodes"][3] = [0]
    _, _, lines = pbs_records(ctx)
    ends = {ln.split(";")[2]: re.search(r"Exit_status=(-?\d+)", ln).group(1) for ln in lines if ";E;" in ln}
    # exit 2 as is; signal 9 as 256 + 9; qdel'ed while running: SIGTERM, 256 + 15; lost host: JOB_EXEC_RERUN_MS_FAIL
    assert ends == {"101.testc": "2", "102.testc": "265", "100[3].testc": "271", "100[4].testc": "-20"}
    deleted = [ln for ln in lines if ";D;" in ln]
    assert deleted == ["09/09/2001 02:03:20;D;100[3].testc;requestor=alice@login01"]


# ---------------------------------------------------------------- LSF

#: JOB_FINISH's fields in the documented order (lsb.acct, LSF 10.1): up to numExHosts, then execHosts; from jStatus
#: to numAllocSlots, then allocSlots; then the last six (every other count is 0 in these records)
HEAD = ["event", "version", "eventTime", "jobId", "userId", "options", "numProcessors", "submitTime", "beginTime",
        "termTime", "startTime", "userName", "queue", "resReq", "dependCond", "preExecCmd", "fromHost", "cwd",
        "inFile", "outFile", "errFile", "jobFile", "numAskedHosts", "numExHosts"]
MIDDLE = ["jStatus", "hostFactor", "jobName", "command", "ru_utime", "ru_stime", "ru_maxrss", "ru_ixrss",
          "ru_ismrss", "ru_idrss", "ru_isrss", "ru_minflt", "ru_majflt", "ru_nswap", "ru_inblock", "ru_oublock",
          "ru_ioch", "ru_msgsnd", "ru_msgrcv", "ru_nsignals", "ru_nvcsw", "ru_nivcsw", "ru_exutime", "mailUser",
          "projectName", "exitStatus", "maxNumProcessors", "loginShell", "timeEvent", "idx", "maxRMem", "maxRSwap",
          "inFileSpool", "commandSpool", "rsvId", "sla", "exceptMask", "additionalInfo", "exitInfo", "warningAction",
          "warningTimePeriod", "chargedSAAP", "licenseProject", "app", "postExecCmd", "runtimeEstimation",
          "jobGroupName", "requeueEvalues", "options2", "resizeNotifyCmd", "lastResizeTime", "rsvId2",
          "jobDescription", "submitEXT", "numHostRusage", "runLimit", "options3", "avgMem", "effectiveResReq",
          "srcCluster", "srcJobId", "dstCluster", "dstJobId", "forwardTime", "flow_id", "acJobWaitTime",
          "totalProvisionTime", "outdir", "runTime", "subcwd", "num_network", "affinity", "serial_job_energy", "cpi",
          "gips", "gbs", "gflops", "numAllocSlots"]
TAIL = ["ineligiblePendTime", "indexRangeCnt", "requeueTime", "numGPURusages", "storageInfoC", "numKVP"]


def _fields(line: str) -> list[str]:
    return next(csv.reader(io.StringIO(line), delimiter=" ", quotechar='"'))


def lsf_record(line: str) -> dict:
    """One JOB_FINISH line by field name (execHosts and allocSlots as lists)."""
    f = _fields(line)
    rec = dict(zip(HEAD, f[:24], strict=True))
    hosts = int(rec["numExHosts"])
    rec["execHosts"] = f[24:24 + hosts]
    i = 24 + hosts
    rec |= dict(zip(MIDDLE, f[i:i + len(MIDDLE)], strict=True))
    slots = int(rec["numAllocSlots"])
    i += len(MIDDLE)
    rec["allocSlots"] = f[i:i + slots]
    rec |= dict(zip(TAIL, f[i + slots:], strict=True))
    assert len(f) == len(HEAD) + len(MIDDLE) + len(TAIL) + hosts + slots
    assert all(rec[k] == "0" for k in ("numAskedHosts", "submitEXT", "numHostRusage", "num_network", "numKVP"))
    return rec


def test_the_documented_layout_has_as_many_fields_as_the_writer_counts():
    assert len(HEAD) + len(MIDDLE) + len(TAIL) == FIXED_FIELDS == 108


def test_lsf_record_by_hand():
    t, lines = lsb_acct_lines(hand_month())
    assert t.tolist() == [T0 + 800, T0 + 1000, T0 + 3660, T0 + 3830]     # appended as jobs end
    hosts = " ".join(['"cn001"'] * 4)
    assert lines[2] == (
        '"JOB_FINISH" "10.108" 1000003660 101 20001 33554435 4 1000000000 0 0 1000000060 "alice" "cpu" '
        '"rusage[mem=8192/host] span[hosts=1]" "" "" "login01" "/home/alice" "" "" "" "1000000000.101" 0 4 '
        + hosts + ' 64 1.0 "relax_1" "./relax_1.sh" '
        # ru_utime ru_stime (CPU time 10,000.5 s, 2 % of it in the kernel) ru_maxrss … ru_exutime
        "9800.490000 200.010000 2097152 0 0 0 0 524288 0 0 0 0 -1 0 0 0 7200 360 -1 "
        '"" "chem" 0 4 "" "" 0 2097152 2301952 "" "" "" "" 0 "" 0 "" -1 "" "" "" "" -1 "" "" 0 "" 1000000060 "" "" '
        '0 0 7200 0 1572864 "select[type == any] order[r15s:pg] rusage[mem=8192.00/host] span[hosts=1]" '
        '"" -1 "" -1 0 0 0 0 "" 3600 "/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 ' + hosts
        + " -1 0 0 0 0 0")


def test_lsf_limits_arrays_and_pending_kills_by_hand():
    pending, oom, _, mpi = (lsf_record(x) for x in lsb_acct_lines(hand_month())[1])
    # killed by an administrator while pending: no hosts, no start, usage unavailable (-1), TERM_ADMIN (15)
    assert (pending["eventTime"], pending["jobId"], pending["idx"], pending["userId"]) == ("1000000800", "100", "5",
                                                                                          "20002")
    assert (pending["submitTime"], pending["startTime"], pending["execHosts"], pending["jStatus"]) == (
        "1000000500", "0", [], "32")
    assert (pending["ru_utime"], pending["ru_stime"]) == ("-1.000000", "-1.000000")
    assert {pending[k] for k in MIDDLE[6:23]} == {"-1"}
    assert (pending["exitStatus"], pending["exitInfo"], pending["maxRMem"], pending["runTime"]) == ("0", "15", "0", "0")
    # element 4 (task 3) of array 100, on one host with 8 slots and 2 GPUs, killed at its memory limit (16)
    assert (oom["jobId"], oom["idx"], oom["execHosts"], oom["jStatus"]) == ("100", "4", ["ga001"] * 8, "32")
    assert oom["resReq"] == "rusage[mem=65536/host] span[hosts=1]"
    assert oom["effectiveResReq"] == ("select[type == any] order[r15s:pg] "
                                      "rusage[mem=65536.00/host,ngpus_physical=2.00/host] span[hosts=1]")
    assert (oom["exitStatus"], oom["exitInfo"], oom["maxRMem"], oom["runLimit"], oom["runTime"]) == (
        "2", "16", "67108864", "1800", "600")
    # the MPI job: bsub -x (option bit 0x40), 64 slots on each of two hosts, SIGUSR2 at its run limit (5)
    assert (mpi["options"], mpi["numProcessors"], mpi["maxNumProcessors"]) == ("33554499", "128", "128")
    assert mpi["resReq"] == "rusage[mem=64000/host] span[ptile=64]"
    assert mpi["execHosts"] == mpi["allocSlots"] == ["cn002"] * 64 + ["cn003"] * 64
    assert (mpi["ru_utime"], mpi["ru_stime"]) == ("451584.001000", "9216.000000")
    assert (mpi["exitStatus"], mpi["exitInfo"], mpi["maxRMem"], mpi["runLimit"], mpi["runTime"]) == (
        "12", "5", "104857600", "3600", "3630")


def test_lsf_termination_reasons():
    ctx = hand_month()
    j = ctx["jobs"]
    j["state"] = np.array(["FAILED", "PREEMPTED", "CANCELLED", "NODE_FAIL"], dtype=object)
    j["fail_code"] = np.array(["0:9", "1:0", "1:0", "1:0"], dtype=object)
    ctx["start"] = np.array([T0 + 60, T0 + 200, T0 + 400, T0 + 600])
    ctx["row_nodes"][3] = [0]
    got = {r["jobName"]: (r["jStatus"], r["exitStatus"], r["exitInfo"])
           for r in (lsf_record(x) for x in lsb_acct_lines(ctx)[1])}
    # killed by signal 9 outside LSF: TERM_EXTERNAL_SIGNAL 17; preempted: TERM_PREEMPT 1; killed by its owner
    # (SIGINT first): TERM_OWNER 14; its host lost: TERM_REMOVE_HUNG_JOB 26
    assert got == {"relax_1": ("32", "9", "17"), "md_2": ("32", "2", "1"), "train_3": ("32", "2", "14"),
                   "test_4": ("32", "0", "26")}


# ---------------------------------------------------------------- Grid Engine


def test_sge_records_by_hand():
    t, lines = sge_records(hand_month())
    assert t.tolist() == [T0 + 1000, T0 + 3660, T0 + 3830, T0 + 3830]   # the task cancelled while pending: none
    assert lines.tolist() == [
        "gpu-a100:ga001:chem:alice:train_3:100:chem:0:1000000300:1000000400:1000001000:100:137:600:"
        "2352.000000:48.000000:67108864.000000:0:0:0:0:16777216:0:0:0.000000:0:0:0:0:1200:60:"
        "NONE:defaultdepartment:smp:8:4:2400.000000:28800.000000:0.000000:-l gpu=2,h_rt=1800,h_vmem=8G -pe smp 8:"
        "0.000000:NONE:68719476736.000000:0:0",
        "cpu:cn001:chem:alice:relax_1:101:chem:0:1000000000:1000000060:1000003660:0:0:3600:"
        "9800.490000:200.010000:2097152.000000:0:0:0:0:524288:0:0:0.000000:0:0:0:0:7200:360:"
        "NONE:defaultdepartment:smp:4:0:10000.500000:5400.000000:0.000000:-l h_rt=7200,h_vmem=2G -pe smp 4:"
        "0.000000:NONE:2147483648.000000:0:0",
        # the PE task record of the MPI job's second host: submission_time 0, launched 30 s after the script
        "cpu:cn003:phys:bob:md_2:102:phys:0:0:1000000230:1000003830:37:137:3600:"
        "225792.000000:4608.000000:52428800.000000:0:0:0:0:13107200:0:0:0.000000:0:0:0:0:7200:360:"
        "NONE:defaultdepartment:mpi:128:0:230400.000000:135000.000000:0.000000:"
        "-l exclusive=true,h_rt=3600,h_vmem=1000M -pe mpi 128:0.000000:1.cn003:53687091200.000000:0:0",
        # its master record on the first host, with the remainder of the CPU time
        "cpu:cn002:phys:bob:md_2:102:phys:0:1000000100:1000000200:1000003830:37:137:3630:"
        "225792.001000:4608.000000:52428800.000000:0:0:0:0:13107200:0:0:0.000000:0:0:0:0:7260:363:"
        "NONE:defaultdepartment:mpi:128:0:230400.001000:136125.000000:0.000000:"
        "-l exclusive=true,h_rt=3600,h_vmem=1000M -pe mpi 128:0.000000:NONE:53687091200.000000:0:0",
    ]
    assert all(len(ln.split(":")) == N_FIELDS for ln in lines)


def test_sge_failed_codes_and_memory_at_the_limit():
    ctx = hand_month()
    j = ctx["jobs"]
    j["state"] = np.array(["FAILED", "FAILED", "CANCELLED", "PREEMPTED"], dtype=object)
    j["fail_code"] = np.array(["127:0", "0:9", "1:0", "1:0"], dtype=object)
    ctx["start"] = np.array([T0 + 60, T0 + 200, T0 + 400, T0 + 600])
    ctx["row_nodes"][3] = [0]
    _, lines = sge_records(ctx)
    codes = {(f[4], f[41]): (f[11], f[12]) for f in (ln.split(":") for ln in lines)}
    # exit 127 as is; killed by signal 9: "assumedly after job" (100), 128 + 9; qdel: "through signal" (17)
    assert codes == {("relax_1", "NONE"): ("0", "127"), ("md_2", "NONE"): ("100", "137"),
                     ("md_2", "1.cn003"): ("100", "137"), ("train_3", "NONE"): ("17", "137"),
                     ("test_4", "NONE"): ("100", "137")}
    # an OOM job whose recorded peak fell short of h_vmem x slots reports maxvmem at the limit
    ctx = hand_month()
    ctx["mem_peak_bytes"] = ctx["mem_peak_bytes"] - np.array([0, 0, 4096, 0])
    _, lines = sge_records(ctx)
    oom = [ln.split(":") for ln in lines if ln.split(":")[0] == "gpu-a100"][0]
    assert oom[42] == "68719476736.000000" and oom[16] == "67108860.000000"
    # a job whose host went down: "in recognizing job" (21), no exit status
    ctx = hand_month()
    ctx["jobs"]["state"] = np.array(["NODE_FAIL", "COMPLETED", "COMPLETED", "CANCELLED"], dtype=object)
    _, lines = sge_records(ctx)
    assert [ln.split(":")[11:13] for ln in lines if ln.split(":")[4] == "relax_1"] == [["21", "0"]]


def test_sge_per_slot_memory_units():
    ctx = hand_month()
    j = ctx["jobs"]
    j["mem_pn_mib"] = np.array([8000, 64000, 1000, 4000])     # 2000M a slot; 1000M; 125M; 4000M
    j["alloc_cpus"] = np.array([4, 128, 8, 3])
    j["cpus_pn"] = np.array([4, 64, 8, 3])
    ctx["start"] = np.array([T0 + 60, T0 + 200, T0 + 400, T0 + 600])
    ctx["row_nodes"][3] = [0]
    _, lines = sge_records(ctx)
    cat = {ln.split(":")[4]: ln.split(":")[39] for ln in lines}
    # 4000 MiB over 3 slots does not divide: bytes, rounded down (1398101333 × 3 is 1 byte short)
    assert cat == {"relax_1": "-l h_rt=7200,h_vmem=2000M -pe smp 4",
                   "md_2": "-l exclusive=true,h_rt=3600,h_vmem=1000M -pe mpi 128",
                   "train_3": "-l gpu=2,h_rt=1800,h_vmem=125M -pe smp 8",
                   "test_4": "-l h_rt=600,h_vmem=1398101333 -pe smp 3"}


# ---------------------------------------------------------------- a generated month


@pytest.fixture(scope="module")
def months(tmp_path_factory) -> dict:
    args = {"jobs": 600, "days": 2.0, "cluster_spec": WEEK_CLUSTER, "profile": WEEK_PROFILE, "seed": 5,
            "write_telemetry": False}
    out = {}
    for fmt in ("pbs", "lsf", "sge"):
        d = tmp_path_factory.mktemp(fmt)
        generate(d, fmt=fmt, **args)
        out[fmt] = d
    return out


def _truth(d: Path) -> tuple[pd.DataFrame, dict]:
    return pd.read_csv(d / "truth_jobs.csv"), json.loads((d / "truth.json").read_text())


def test_generated_pbs_layout(months):
    d = months["pbs"]
    jobs, truth = _truth(d)
    files = sorted((d / "accounting").iterdir())
    lines = [ln for f in files for ln in f.read_text().splitlines()]
    parts = [ln.split(";", 3) for ln in lines]
    assert all(len(p) == 4 and re.fullmatch(r"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d", p[0]) for p in parts)
    # every record sits in the file of its stamp's day
    for f in files:
        assert {ln[6:10] + ln[0:2] + ln[3:5] for ln in f.read_text().splitlines()} == {f.name}
    kinds = pd.Series([p[1] for p in parts]).value_counts().to_dict()
    ran = jobs["start"] >= 0
    deleted = jobs["state"].isin(["CANCELLED", "PREEMPTED"])
    assert kinds == {"Q": len(jobs), "S": int(ran.sum()), "E": int(ran.sum()), "D": int(deleted.sum())}
    ends = [p[3] for p in parts if p[1] == "E"]
    status = pd.Series([int(re.search(r"Exit_status=(-?\d+)", e).group(1)) for e in ends]).value_counts()
    assert status.get(-29, 0) == truth["state_counts"].get("TIMEOUT", 0)
    assert status.get(-27, 0) == truth["state_counts"].get("OUT_OF_MEMORY", 0)
    cpus = sum(int(re.search(r"Resource_List\.ncpus=(\d+)", e).group(1))
               * _hms(re.search(r"resources_used\.walltime=([\d:]+)", e).group(1)) for e in ends)
    assert cpus / 3600 == pytest.approx(truth["totals"]["core_hours_alloc"], rel=1e-9)   # truth.json rounds to 6 decimals
    mem = sum(int(re.search(r"resources_used\.mem=(\d+)kb", e).group(1))
              * _hms(re.search(r"resources_used\.walltime=([\d:]+)", e).group(1)) for e in ends)
    assert mem / 2**20 / 3600 == pytest.approx(truth["totals"]["mem_gib_hours_peak"], rel=1e-9)


def _hms(text: str) -> int:
    h, m, s = (int(x) for x in text.split(":"))
    return h * 3600 + m * 60 + s


def test_generated_lsf_layout(months):
    d = months["lsf"]
    jobs, truth = _truth(d)
    records = [lsf_record(ln) for ln in (d / "lsb.acct").read_text().splitlines()]   # checks every field count
    assert len(records) == len(jobs)
    assert all(r["event"] == "JOB_FINISH" and r["version"] == "10.108" for r in records)
    assert [int(r["eventTime"]) for r in records] == sorted(int(r["eventTime"]) for r in records)
    cpu = sum(float(r["ru_utime"]) + float(r["ru_stime"]) for r in records if r["startTime"] != "0")
    assert cpu / 3600 == pytest.approx(truth["totals"]["core_hours_used"], rel=1e-9)
    alloc = sum(len(r["execHosts"]) * int(r["runTime"]) for r in records)
    assert alloc / 3600 == pytest.approx(truth["totals"]["core_hours_alloc"], rel=1e-9)   # truth.json rounds to 6 decimals
    peak = sum(int(r["maxRMem"]) * int(r["runTime"]) for r in records)
    assert peak / 2**20 / 3600 == pytest.approx(truth["totals"]["mem_gib_hours_peak"], rel=1e-9)
    assert sum(r["jStatus"] == "64" for r in records) == truth["state_counts"]["COMPLETED"]
    assert sum(r["exitInfo"] == "5" for r in records) == truth["state_counts"].get("TIMEOUT", 0)


def test_generated_sge_layout(months):
    d = months["sge"]
    jobs, truth = _truth(d)
    text = (d / "accounting").read_text()
    assert text.startswith(HEADER)
    records = [ln.split(":") for ln in text[len(HEADER):].splitlines()]
    assert all(len(r) == N_FIELDS for r in records)
    masters = [r for r in records if r[41] == "NONE"]
    assert len(masters) == int((jobs["start"] >= 0).sum())       # jobs that ran; none for those deleted pending
    # PE task records: submission_time 0, one per further host of an "-pe mpi" job, each on a host of its own
    by_job: dict = {}
    for r in records:
        by_job.setdefault((r[5], r[35]), []).append(r)
    for recs in by_job.values():
        master = [r for r in recs if r[41] == "NONE"]
        assert len(master) == 1 and len({r[1] for r in recs}) == len(recs)
        assert all(r[8] == "0" and r[41] == "1." + r[1] for r in recs if r[41] != "NONE")
        assert (len(recs) > 1) == (" -pe mpi " in master[0][39])
    cpu = sum(float(r[36]) for r in records)
    assert cpu / 3600 == pytest.approx(truth["totals"]["core_hours_used"], rel=1e-9)
    alloc = sum(int(r[34]) * int(r[13]) for r in masters)
    assert alloc / 3600 == pytest.approx(truth["totals"]["core_hours_alloc"], rel=1e-9)   # truth.json rounds to 6 decimals
    # the job's peak is the sum over its records, its elapsed time the master's wallclock
    wall = {(r[5], r[35]): int(r[13]) for r in masters}
    peak = sum(float(r[42]) * wall[(r[5], r[35])] for r in records)
    assert peak / 2**30 / 3600 == pytest.approx(truth["totals"]["mem_gib_hours_peak"], rel=1e-4)
    assert sum(r[11] == "37" for r in masters) == truth["state_counts"].get("TIMEOUT", 0)
