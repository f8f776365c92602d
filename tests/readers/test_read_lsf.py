"""The LSF reader (lsb.acct): records written by hand from IBM Spectrum LSF's "lsb.acct" reference (the
JOB_FINISH fields in order of occurrence), every expected value worked out here from the fields as written."""

from __future__ import annotations

import pandas as pd

from audit.ingest import read_inputs
from audit.readers.detect import detect_format
from audit.readers.lsf import looks_like_lsf, read_lsf
from audit.textio import InputError

GiB = 1024**3
T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC


def q(text: str) -> str:
    """A string field as LSF writes it: in double quotes, a quote inside doubled."""
    return '"' + text.replace('"', '""') + '"'


def finish(*, version="10.108", event=T0 + 3600, job=101, n_proc=4, submit=T0, begin=0, start=T0 + 100,
           user="alice", queue="normal", res_req="", hosts=("hostA",) * 4, j_status=64, job_name="sim",
           command="./run.sh", utime="100.500000", stime="20.250000", project="physics", exit_status=0,
           max_proc=4, idx=0, max_rmem=2097152, exit_info=0, run_limit=-1, eff="", dst_cluster="") -> str:
    """One LSF 10.1 JOB_FINISH record, the fields in the reference's order (runLimit before options3, as LSF
    writes them)."""
    ex = " ".join([str(len(hosts))] + [q(h) for h in hosts])
    fields = [
        '"JOB_FINISH"', q(version), event, job, 1001, 33554434, n_proc, submit, begin, 0, start,
        q(user), q(queue), q(res_req), '""', '""', q("login01"), q("/home/" + user), '""', '""', '""',
        q(f"{submit}.{job}"),
        0,                                                    # numAskedHosts
        ex,                                                   # numExHosts, execHosts
        j_status, "60.0", q(job_name), q(command),
        utime, stime, "1024 0 -1 0 0 100 0 0 0 0 -1 0 0 0 10 2 -1",  # ru_utime, ru_stime, 17 more rusage
        '""', q(project), exit_status, max_proc, '""', '""', idx, max_rmem, 0,
        '"" "" "" ""', 0, '""', exit_info,                    # inFileSpool … sla, exceptMask, additionalInfo
        '"" -1 "" "" "" "" -1 "" ""',                         # warningAction … requeueEvalues
        5136, '""', start, '""', '""',                        # options2 resizeNotifyCmd lastResizeTime rsvId jobDescription
        0,                                                    # submitEXT
        0,                                                    # numHostRusage
        run_limit, 0, 1024, q(eff),                           # runLimit options3 avgMem effectiveResReq
        '""', -1, q(dst_cluster), -1, 0, '""', 0, 0, '""', max(event - start, 0), q("/home/" + user),
        0, '""',                                              # num_network, affinity
        "0.000000 0.00 0.00 0.00 0.00",                       # energy, cpi, gips, gbs, gflops
        ex,                                                   # numAllocSlots, allocSlots
        "-1 0 0 0 0 0",                                       # ineligiblePendTime … numKVP
    ]
    return " ".join(str(f) for f in fields)


def write(tmp_path, *lines, folder="prod/logdir", name="lsb.acct"):
    d = tmp_path / folder
    d.mkdir(parents=True, exist_ok=True)
    f = d / name
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def test_a_10_1_record_field_by_field(tmp_path):
    f = write(tmp_path, finish(run_limit=7200, eff="select[type == any] rusage[mem=4096/task] span[hosts=1]"))
    r = read_lsf(f)
    j = r.jobs.iloc[0]
    assert (j["cluster"], j["job_id"], j["job_id_raw"], j["source"], j["source_line"]) == ("prod", "101", "101", "lsf", 1)
    assert pd.isna(j["array_job_id"]) and pd.isna(j["array_task_id"])
    assert (j["user"], j["partition"], j["account"], j["job_name"]) == ("alice", "normal", "physics", "sim")
    assert j["submit_time"] == ts("2023-11-14 22:13:20") and j["eligible_time"] == ts("2023-11-14 22:13:20")
    assert j["start_time"] == ts("2023-11-14 22:15:00")
    assert j["end_time"] == ts("2023-11-14 23:13:20")         # the event time: when the finish was logged
    assert j["elapsed_s"] == 3500 and j["time_limit_s"] == 7200
    assert (j["state"], j["exit_code"], j["signal"]) == ("COMPLETED", 0, 0)
    assert j["req_cpus"] == 4 and j["req_nodes"] == 1
    assert j["req_mem_bytes"] == 4 * 4096 * 1024**2            # 4096 MB per slot (/task) × 4 slots
    assert j["alloc_cpus"] == 4 and j["alloc_nodes"] == 1 and j["node_list"] == "hostA"
    assert j["alloc_mem_bytes"] == 16 * GiB and j["req_gpus"] == 0 and j["alloc_gpus"] == 0
    assert j["cpu_used_s"] == 120.75                           # ru_utime 100.5 + ru_stime 20.25
    assert j["mem_peak_bytes"] == 2 * GiB                      # maxRMem 2097152 KB
    assert j["caveats"] == "lsf_mem_unit_assumed"              # 4096 with no unit: MB assumed
    p = r.placements
    assert p[["cluster", "node", "job_id", "partition"]].values.tolist() == [["prod", "hostA", "101", "normal"]]
    assert p["cpus"].tolist() == [4.0] and p["mem_bytes"].tolist() == [16 * GiB] and p["gpus"].tolist() == [0.0]
    assert r.ledger.read == 1 and r.ledger.used == 1 and r.ledger.balanced


# an LSF 9.1 record, written by hand in the 9.1 layout: it ends at affinity; the execution hosts in the
# SHORT_EVENTFILE form ("8*node01"); two hostRusage entries of six fields; the run limit (bsub -W 12:00) first
LINE_9_1 = (
    '"JOB_FINISH" "9.13" 1389683139 404717 22025 33882739 16 1389642318 1389642400 0 1389642771 "bob" "long" '
    '"rusage[mem=2G] span[ptile=8]" "" "" "login2" "/scratch/bob" "" "%J.out" "%J.err" "1389642318.404717" '
    '0 2 "8*node01" "8*node02" 64 60.0 "mpi run" "mpirun ./app" '
    '5000.500000 99.500000 966960 0 -1 0 0 3026323 0 0 0 0 -1 0 0 0 12529329 6498459 -1 '
    '"" "chem" 0 16 "" "" 0 1048576 0 "" "" "" "" 0 "" 0 "" -1 "/chem/bob" "" "" "" -1 "" "" 6160 "" 1389642771 '
    '"" "" 0 2 node01 1306 0 2500 50 0 node02 1291 0 2500 49 0 43200 0 524288 "" '
    '"" -1 "" -1 0 "" 0 0 "" 40368 "/scratch/bob" 0 ""'
)


def test_a_9_1_record(tmp_path):
    r = read_lsf(write(tmp_path, LINE_9_1))
    j = r.jobs.iloc[0]
    assert r.ledger.used == 1 and r.ledger.quarantined == 0
    assert (j["job_id"], j["user"], j["partition"], j["account"], j["job_name"]) == ("404717", "bob", "long", "chem",
                                                                                     "mpi run")
    assert j["submit_time"] == ts("2014-01-13 19:45:18")
    assert j["eligible_time"] == ts("2014-01-13 19:46:40")     # beginTime (bsub -b), after the submission
    assert j["start_time"] == ts("2014-01-13 19:52:51") and j["end_time"] == ts("2014-01-14 07:05:39")
    assert j["elapsed_s"] == 40368 and j["time_limit_s"] == 43200
    assert j["alloc_cpus"] == 16 and j["alloc_nodes"] == 2 and j["node_list"] == "node[01-02]"
    assert j["req_cpus"] == 16 and j["req_nodes"] == 2         # span[ptile=8]: 16 slots on 2 hosts
    assert j["req_mem_bytes"] == 2 * 2 * GiB                   # 2G per host (no method: LSF's default) × 2 hosts
    assert j["caveats"] == "lsf_mem_per_host_assumed"
    assert j["cpu_used_s"] == 5100.0 and j["mem_peak_bytes"] == 1024**3
    assert r.placements[["node", "cpus", "mem_bytes"]].values.tolist() == [["node01", 8.0, 2 * GiB],
                                                                          ["node02", 8.0, 2 * GiB]]


def test_an_array_task(tmp_path):
    j = read_lsf(write(tmp_path, finish(job=2000, idx=7))).jobs.iloc[0]
    assert (j["job_id"], j["job_id_raw"], j["array_job_id"], j["array_task_id"]) == ("2000[7]", "2000[7]", 2000, 7)


def test_hosts_listed_once_per_slot(tmp_path):
    f = write(tmp_path, finish(job=1, n_proc=5, max_proc=5, hosts=("cn001", "cn001", "cn002", "cn002", "cn002")),
              finish(job=2, n_proc=3, max_proc=3, hosts=("cn003", "cn004", "cn003")))
    r = read_lsf(f)
    assert r.jobs["alloc_cpus"].tolist() == [5.0, 3.0] and r.jobs["alloc_nodes"].tolist() == [2, 2]
    assert r.jobs["node_list"].tolist() == ["cn[001-002]", "cn[003-004]"]
    p = r.placements
    assert p[["job_id", "node", "cpus"]].values.tolist() == [["1", "cn001", 2.0], ["1", "cn002", 3.0],
                                                             ["2", "cn003", 2.0], ["2", "cn004", 1.0]]


def test_termination_reasons(tmp_path):
    f = write(tmp_path,
              finish(job=1, j_status=32, exit_info=5, exit_status=12),       # TERM_RUNLIMIT, SIGUSR2
              finish(job=2, j_status=32, exit_info=16, exit_status=9),       # TERM_MEMLIMIT, SIGKILL
              finish(job=3, j_status=32, exit_info=17, exit_status=11),      # TERM_EXTERNAL_SIGNAL, SIGSEGV
              finish(job=4, j_status=32, exit_info=0, exit_status=3 * 256),  # exit(3)
              finish(job=5, j_status=32, exit_info=14, exit_status=2),       # TERM_OWNER (bkill)
              finish(job=6, j_status=32, exit_info=1, exit_status=2),        # TERM_PREEMPT
              finish(job=7, j_status=32, exit_info=26, exit_status=0),       # TERM_REMOVE_HUNG_JOB
              finish(job=8, j_status=64, exit_info=0, exit_status=0))        # DONE
    j = read_lsf(f).jobs
    assert j["state"].tolist() == ["TIMEOUT", "OUT_OF_MEMORY", "FAILED", "FAILED", "CANCELLED", "PREEMPTED",
                                   "NODE_FAIL", "COMPLETED"]
    assert j["exit_code"].tolist() == [0, 0, 0, 3, 0, 0, 0, 0]
    assert j["signal"].tolist() == [12, 9, 11, 0, 2, 2, 0, 0]


def test_a_job_that_never_started(tmp_path):
    f = write(tmp_path,
              finish(job=1, start=0, event=T0 + 600, hosts=(), j_status=32, exit_info=14,  # bkill while pending
                     utime="-1.000000", stime="-1.000000", max_rmem=-1),
              finish(job=2, start=0, event=T0 + 600, hosts=(), j_status=32, exit_info=0, max_rmem=0))
    r = read_lsf(f)
    j = r.jobs
    assert j["state"].tolist() == ["CANCELLED", "FAILED"]
    assert j["start_time"].isna().all() and j["end_time"].tolist() == [ts("2023-11-14 22:23:20")] * 2
    assert j["elapsed_s"].tolist() == [0, 0] and j["alloc_cpus"].tolist() == [0.0, 0.0]
    assert j["alloc_nodes"].tolist() == [0, 0] and j["node_list"].isna().all() and j["req_cpus"].tolist() == [4.0, 4.0]
    assert j["cpu_used_s"].tolist() == [0.0, 0.0] and j["mem_peak_bytes"].tolist() == [0, 0]  # LSF logs -1: no process ran
    assert len(r.placements) == 0


def test_quoted_strings_with_blanks_and_doubled_quotes(tmp_path):
    line = finish(job_name='train "big" model', command='python train.py --tag "a b"', user="carol")
    assert '"train ""big"" model"' in line
    r = read_lsf(write(tmp_path, line))
    j = r.jobs.iloc[0]
    assert j["job_name"] == 'train "big" model' and j["user"] == "carol" and j["account"] == "physics"
    assert j["alloc_cpus"] == 4 and r.ledger.quarantined == 0


def test_other_record_types_are_folded(tmp_path):
    f = write(tmp_path, '"EVENT_ADRSV_FINISH" "10.108" 1700000000 1700000500 0 "user1#0" 1 "hostA" 4 0 ""',
              finish(), '"JOB_RESIZE" "10.108" 1700000200 101 0 1 4 0 0 "" 0', "")
    r = read_lsf(f)
    assert (r.ledger.read, r.ledger.used, r.ledger.folded, r.ledger.quarantined, r.ledger.structural) == (3, 1, 2, 0, 1)
    assert r.ledger.balanced and r.jobs["job_id"].tolist() == ["101"]


def test_gpus_and_memory_per_job(tmp_path):
    eff = "select[(ngpus>0)] order[r15s:pg] rusage[mem=8G/job,ngpus_physical=2.00] span[ptile=4]"
    f = write(tmp_path, finish(n_proc=8, max_proc=8, hosts=("g01",) * 4 + ("g02",) * 4, eff=eff),
              finish(job=102, res_req='-gpu "num=1"', eff=""))
    r = read_lsf(f)
    j = r.jobs
    assert j["req_gpus"].tolist() == [4.0, 1.0] and j["alloc_gpus"].tolist() == [4.0, 1.0]  # per host × hosts
    assert j["req_mem_bytes"].iloc[0] == 8 * GiB and j["req_nodes"].iloc[0] == 2
    assert j["caveats"].tolist() == ["no_gpu_telemetry", "no_gpu_telemetry"]
    assert r.placements["gpus"].tolist() == [2.0, 2.0, 1.0] and r.placements["mem_bytes"].isna().all()


def test_malformed_records_are_set_aside_and_the_rest_read(tmp_path):
    good = finish(job=1)
    cut = good[:good.index('"./run.sh"') + 8]               # the line ends inside the command string
    too_many = finish(job=3).replace(" 0 4 " + " ".join(['"hostA"'] * 4), " 0 500 " + " ".join(['"hostA"'] * 4), 1)
    not_time = finish(job=4).replace(f" {T0} 0 0 ", " 17xx 0 0 ", 1)
    short = " ".join(finish(job=5).split(" ")[:59])          # a 10.1 record that stops after maxRMem
    old = finish(job=6, version="6.2")
    f = write(tmp_path, good, cut, too_many, not_time, short, old, "hello world", finish(job=8))
    r = read_lsf(f)
    assert r.jobs["job_id"].tolist() == ["1", "8"]
    assert [(row[1], row[2]) for row in r.quarantine.rows] == [
        (2, "command"), (3, "numExHosts"), (4, "submitTime"), (5, "maxRSwap"), (6, "version"), (7, "type")]
    reasons = [row[3] for row in r.quarantine.rows]
    assert "never closes" in reasons[0] and "past the end of the line" in reasons[1]
    assert reasons[2] == "not a time in seconds since 1970: '17xx'" and "does not fit LSF 10.1" in reasons[3]
    assert reasons[4] == "unsupported lsb.acct version '6.2'"
    assert r.quarantine.rows[0][4] == cut
    assert (r.ledger.read, r.ledger.used, r.ledger.quarantined) == (8, 2, 6) and r.ledger.balanced


def test_the_record_is_read_by_its_version(tmp_path):
    fields = finish(job=9, version="7.06").split(" ")
    lsf7 = " ".join(fields[:fields.index("5136") + 3])      # LSF 7: through lastResizeTime
    as_10 = lsf7.replace('"7.06"', '"10.1"', 1)
    r = read_lsf(write(tmp_path, lsf7, as_10))
    j = r.jobs.iloc[0]
    assert r.jobs["job_id"].tolist() == ["9"] and pd.isna(j["time_limit_s"]) and j["state"] == "COMPLETED"
    assert [(row[1], row[2]) for row in r.quarantine.rows] == [(2, "rsvId2")]
    assert "LSF 10.1 writes every field through numAllocSlots" in r.quarantine.rows[0][3]


def test_cluster_names(tmp_path):
    f = write(tmp_path, finish(job=1), finish(job=2, dst_cluster="remote"), folder="site/acct")
    assert read_lsf(f).jobs["cluster"].tolist() == ["acct", "remote"]
    assert read_lsf(f, cluster="given").jobs["cluster"].tolist() == ["given", "remote"]


def test_detected_and_read_end_to_end(tmp_path):
    f = write(tmp_path, finish(job=1), finish(job=2, hosts=("cn01", "cn02"), n_proc=2, max_proc=2), name="lsb.acct.1")
    assert detect_format(f) == "lsf"
    assert looks_like_lsf([finish()]) and not looks_like_lsf(["JobID|State", "1|COMPLETED"])
    r = read_inputs([f])
    assert r.jobs["job_id"].tolist() == ["1", "2"] and r.jobs["source"].tolist() == ["lsf", "lsf"]
    assert r.ledger["balanced"] and r.ledger["files"][0]["format"] == "lsf"
    assert r.placements["node"].tolist() == ["hostA", "cn01", "cn02"]


def test_a_file_that_cannot_be_read(tmp_path):
    missing = tmp_path / "lsb.acct.9"
    try:
        read_lsf(missing)
    except InputError as exc:
        assert str(missing) in str(exc)
    else:
        raise AssertionError("a missing file must raise InputError")
