"""The Grid Engine accounting reader, against records written by hand from accounting(5) and sge_status(5).

The field order below is accounting(5)'s (Son of Grid Engine 8.1.9 numbers the 45 fields; Univa 8.3 appends
job_class, qdel_info, maxrss, maxpss, submit_host, cwd, submit_cmd, wallclock).  Each expected value is worked
out from the record by the documented rule and written out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit.ingest import read_inputs
from audit.readers.detect import detect_format
from audit.readers.sge import looks_like_sge, read_sge
from audit.readers.sge.request import parse_category, parse_memory, parse_time

#: accounting(5): fields 1-45 (SGE 6.2, Son of Grid Engine 8.x)
FIELDS = (
    "qname", "hostname", "group", "owner", "job_name", "job_number", "account", "priority", "submission_time",
    "start_time", "end_time", "failed", "exit_status", "ru_wallclock", "ru_utime", "ru_stime", "ru_maxrss",
    "ru_ixrss", "ru_ismrss", "ru_idrss", "ru_isrss", "ru_minflt", "ru_majflt", "ru_nswap", "ru_inblock",
    "ru_oublock", "ru_msgsnd", "ru_msgrcv", "ru_nsignals", "ru_nvcsw", "ru_nivcsw", "project", "department",
    "granted_pe", "slots", "task_number", "cpu", "mem", "io", "category", "iow", "pe_taskid", "maxvmem", "arid",
    "ar_submission_time",
)
#: Univa 8.3: the fields after ar_submission_time
UGE_FIELDS = FIELDS + ("job_class", "qdel_info", "maxrss", "maxpss", "submit_host", "cwd", "submit_cmd",
                       "wallclock")
DEFAULTS = {f: "0" for f in UGE_FIELDS} | {
    "qname": "all.q", "hostname": "node01", "group": "staff", "owner": "alice", "job_name": "job",
    "account": "sge", "project": "NONE", "department": "defaultdepartment", "granted_pe": "NONE", "slots": "1",
    "category": "NONE", "pe_taskid": "NONE", "iow": "0.000000", "job_class": "NONE", "qdel_info": "NONE",
    "submit_host": "login1", "cwd": "/home/alice", "submit_cmd": "qsub job.sh",
}
HEADER = "# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# \n"
GIB = 1024**3
UTC = "UTC"


def record(uge: bool = False, **values) -> str:
    """One accounting line: the given fields, the rest at neutral defaults."""
    return ":".join(str(values.get(f, DEFAULTS[f])) for f in (UGE_FIELDS if uge else FIELDS))


def read(tmp_path, text: str, name: str = "accounting"):
    f = tmp_path / name
    f.write_text(text)
    return read_sge(f)


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz=UTC)


def caveats(row) -> set:
    return set(row["caveats"].split(";")) if pd.notna(row["caveats"]) else set()


def test_sge_62_record(tmp_path):
    line = record(qname="batch", hostname="node037", group="chem", owner="alice", job_name="g09_opt",
                  job_number=142674, submission_time=1331104765, start_time=1331104825, end_time=1331124668,
                  failed=100, exit_status=137, ru_wallclock=19843, ru_utime="0.008998", ru_stime="0.015997",
                  project="chemproj", cpu="19822.720000", mem="61564.294411", io="51.781509",
                  category="-l h_rt=864000,highmem=0", maxvmem="3468050432.000000")
    r = read(tmp_path, "# Version: 6.2u5\n#\n# DO NOT MODIFY THIS FILE MANUALLY!\n#\n" + line + "\n")
    assert r.ledger.read == 1 and r.ledger.used == 1 and r.ledger.structural == 4 and r.ledger.balanced
    j = r.jobs.iloc[0]
    assert (j["job_id"], j["job_id_raw"], j["source"], j["source_line"]) == ("142674", "142674", "sge", 5)
    assert pd.isna(j["array_job_id"]) and pd.isna(j["array_task_id"])
    assert (j["user"], j["account"], j["partition"], j["job_name"]) == ("alice", "chemproj", "batch", "g09_opt")
    assert j["submit_time"] == ts("2012-03-07T07:19:25")
    assert j["start_time"] == ts("2012-03-07T07:20:25")
    assert j["end_time"] == ts("2012-03-07T12:51:08")
    assert j["elapsed_s"] == 19843 and j["time_limit_s"] == 864000
    # failed 100 ("assumedly after job"), exit 137 = 128 + SIGKILL, run time far below h_rt, no memory request
    assert (j["state"], j["exit_code"], j["signal"]) == ("FAILED", 137, 9)
    assert j["req_cpus"] == 1 and j["alloc_cpus"] == 1 and j["alloc_nodes"] == 1 and j["req_gpus"] == 0
    assert j["cpu_used_s"] == pytest.approx(19822.72)
    assert j["mem_peak_bytes"] == 3468050432 and pd.isna(j["req_mem_bytes"]) and pd.isna(j["alloc_mem_bytes"])
    assert j["node_list"] == "node037" and caveats(j) == {"sge_peak_vmem"}
    p = r.placements.iloc[0]
    assert (p["node"], p["job_id"], p["partition"], p["cpus"], p["gpus"]) == ("node037", "142674", "batch", 1, 0)


def test_soge_819_pe_job_with_h_vmem_per_slot_and_h_m_s_limit(tmp_path):
    # "-l h_rt=1:00:00" puts two colons of its own into the record: 47 fields, category joined back
    line = record(qname="short.q", hostname="c8220node213", group="psmn", owner="bob", job_name="envtest",
                  job_number=3, submission_time=1514123433, start_time=1514123473, end_time=1514127073,
                  ru_wallclock=3600, ru_utime="3000.5", ru_stime="12.25", granted_pe="smp", slots=4,
                  cpu="13000.500000", category="-U STAFF -q short.q -l h_rt=1:00:00,h_vmem=2G -pe smp 4",
                  maxvmem="6442450944.000000")
    assert len(line.split(":")) == 47
    r = read(tmp_path, HEADER + line + "\n")
    assert r.ledger.balanced and r.ledger.used == 1 and r.ledger.quarantined == 0
    j = r.jobs.iloc[0]
    assert j["account"] == "psmn"  # project NONE: the group
    assert j["start_time"] == ts("2017-12-24T13:51:13") and j["end_time"] == ts("2017-12-24T14:51:13")
    assert j["elapsed_s"] == 3600 and j["time_limit_s"] == 3600
    assert j["state"] == "COMPLETED" and j["exit_code"] == 0 and pd.isna(j["signal"])
    assert j["req_cpus"] == 4 and j["alloc_cpus"] == 4
    assert j["req_mem_bytes"] == 2 * GIB * 4  # h_vmem is per slot
    assert j["mem_peak_bytes"] == 6442450944  # maxvmem: virtual against virtual
    assert j["cpu_used_s"] == pytest.approx(13000.5)  # cpu wins over ru_utime + ru_stime
    assert caveats(j) == {"sge_req_vmem", "sge_single_host_assumed"}
    assert r.placements["cpus"].tolist() == [4]


def test_uge_record_with_milliseconds_and_extra_fields(tmp_path):
    done = record(uge=True, qname="ideve", hostname="node164", owner="carol", job_name="BMO2", job_number=870542,
                  submission_time=1452177896152, start_time=1453100011880, end_time=1453100075983,
                  ru_wallclock="64.103", ru_utime="0.014", ru_stime="0.009", ru_maxrss=5268, project="idiv",
                  granted_pe="smp", slots=2, cpu="86.780",
                  category="-U idiv -u carol -l h_rt=7200,m_mem_free=3G -pe smp 1-10", maxvmem=8637100032,
                  maxrss=2147483648, maxpss=0, submit_host="idiv1", submit_cmd="qsub -pe smp -10 beast.sh",
                  wallclock="64.108000")
    deleted = record(uge=True, hostname="node165", owner="carol", job_name="del", job_number=870543,
                     submission_time=1452177896000, start_time=1453100011000, end_time=1453100071000,
                     failed=100, exit_status=137, ru_wallclock="60.000", cpu="1.5",
                     category="-l h_rt=7200,h_vmem=8G", maxvmem=1073741824, qdel_info="root@head1",
                     maxrss=104857600, wallclock="60.010000")
    assert len(done.split(":")) == 53
    r = read(tmp_path, done + "\n" + deleted + "\n")
    assert r.ledger.balanced and r.ledger.used == 2
    j, d = r.jobs.iloc[0], r.jobs.iloc[1]
    assert j["submit_time"] == ts("2016-01-07T14:44:56.152")
    assert j["start_time"] == ts("2016-01-18T06:53:31.880")
    assert j["end_time"] == ts("2016-01-18T06:54:35.983")
    assert j["elapsed_s"] == 64  # 64.103 s
    assert j["state"] == "COMPLETED" and j["time_limit_s"] == 7200
    assert j["req_mem_bytes"] == 3 * GIB * 2  # m_mem_free per slot × 2 slots
    assert j["mem_peak_bytes"] == 2147483648  # resident request against Univa's maxrss
    assert caveats(j) == {"sge_req_rss", "sge_single_host_assumed"}
    # qdel_info names who deleted it: CANCELLED, though failed 100 / exit 137 alone would read FAILED
    assert (d["state"], d["signal"], d["elapsed_s"]) == ("CANCELLED", 9, 60)
    assert d["req_mem_bytes"] == 8 * GIB and d["mem_peak_bytes"] == 1073741824 and caveats(d) == {"sge_req_vmem"}


def test_sge_60_layout_of_43_fields(tmp_path):
    line = ":".join(record(job_number=77, submission_time=1700000000, start_time=1700000060,
                           end_time=1700000665, ru_wallclock=605, cpu="600.5", maxvmem="1048576.000000")
                    .split(":")[:43])
    r = read(tmp_path, line + "\n")
    j = r.jobs.iloc[0]
    assert r.ledger.used == 1 and j["job_id"] == "77" and j["elapsed_s"] == 605
    assert j["mem_peak_bytes"] == 1048576 and j["cpu_used_s"] == pytest.approx(600.5)


def test_array_tasks(tmp_path):
    lines = [record(job_number=1234, task_number=t, submission_time=1700000000, start_time=1700000060,
                    end_time=1700000100, ru_wallclock=40, cpu="39.0", maxvmem="1000000") for t in (5, 6)]
    plain = record(job_number=1235, submission_time=1700000000, start_time=1700000060, end_time=1700000100,
                   ru_wallclock=40, cpu="39.0", maxvmem="1000000")
    r = read(tmp_path, "\n".join([*lines, plain]) + "\n")
    assert r.jobs["job_id"].tolist() == ["1234.5", "1234.6", "1235"]
    assert r.jobs["job_id_raw"].tolist() == ["1234", "1234", "1235"]
    assert r.jobs["array_job_id"].tolist()[:2] == [1234, 1234] and pd.isna(r.jobs["array_job_id"].iloc[2])
    assert r.jobs["array_task_id"].tolist()[:2] == [5, 6] and pd.isna(r.jobs["array_task_id"].iloc[2])


def test_pe_job_with_tightly_integrated_task_records_folded(tmp_path):
    common = {"job_number": 900, "granted_pe": "mpi", "slots": 24, "category": "-pe mpi 24"}
    tasks = [
        record(hostname="node02", pe_taskid="1.node02", submission_time=0, start_time=1700000061,
               end_time=1700003690, cpu="100.25", maxvmem="2000000000", **common),
        record(hostname="node03", pe_taskid="2.node03", submission_time=0, start_time=1700000061,
               end_time=1700003690, cpu="99.75", maxvmem="3000000000", **common),
        record(hostname="node01", pe_taskid="3.node01", submission_time=0, start_time=1700000061,
               end_time=1700003690, cpu="50.5", maxvmem="500000000", **common),
    ]
    master = record(hostname="node01", submission_time=1700000000, start_time=1700000060, end_time=1700003700,
                    ru_wallclock=3640, cpu="10.5", maxvmem="1000000000", **common)
    other = record(job_number=901, hostname="node09", submission_time=1700000000, start_time=1700000060,
                   end_time=1700000100, ru_wallclock=40, cpu="1.0", maxvmem="1000")
    r = read(tmp_path, "\n".join([*tasks, master, other]) + "\n")
    assert (r.ledger.read, r.ledger.used, r.ledger.folded, r.ledger.quarantined) == (5, 2, 3, 0)
    assert r.ledger.jobs_emitted == 2 and r.ledger.balanced
    j = r.jobs.iloc[0]
    assert j["job_id"] == "900" and j["source_line"] == 4
    assert j["cpu_used_s"] == pytest.approx(10.5 + 100.25 + 99.75 + 50.5)
    assert j["mem_peak_bytes"] == 1000000000 + 2000000000 + 3000000000 + 500000000
    assert j["node_list"] == "node[01-03]" and j["alloc_nodes"] == 3 and j["alloc_cpus"] == 24
    assert "sge_single_host_assumed" not in caveats(j)
    mine = r.placements[r.placements["job_id"] == "900"]
    assert mine["node"].tolist() == ["node01", "node02", "node03"] and mine["cpus"].isna().all()
    assert r.placements[r.placements["job_id"] == "901"]["cpus"].tolist() == [1]


def test_task_record_without_its_job_is_quarantined(tmp_path):
    orphan = record(job_number=5, hostname="node02", pe_taskid="1.node02", start_time=1700000061,
                    end_time=1700000090, cpu="3.0")
    r = read(tmp_path, orphan + "\n")
    assert (r.ledger.used, r.ledger.folded, r.ledger.quarantined) == (0, 0, 1) and r.ledger.balanced
    assert r.quarantine.rows[0][1:3] == (1, "pe_taskid") and len(r.jobs) == 0


def test_h_rt_kill(tmp_path):
    qmaster = record(job_number=1, submission_time=1700000000, start_time=1700000060, end_time=1700000661,
                     failed=37, exit_status=137, ru_wallclock=601, cpu="1.0", category="-l h_rt=600",
                     maxvmem="1000000")
    execd = record(job_number=2, submission_time=1700000000, start_time=1700000060, end_time=1700000660,
                   failed=100, exit_status=137, ru_wallclock=600, cpu="1.0", category="-l h_rt=0:10:0",
                   maxvmem="1000000")
    r = read(tmp_path, qmaster + "\n" + execd + "\n")
    a, b = r.jobs.iloc[0], r.jobs.iloc[1]
    # failed 37: "qmaster enforced h_rt, h_cpu, or h_vmem limit" (sge_status(5))
    assert (a["state"], a["signal"], a["time_limit_s"], a["elapsed_s"]) == ("TIMEOUT", 9, 600, 601)
    assert "sge_state_inferred" not in caveats(a)
    # failed 100 and SIGKILL with the run at h_rt: TIMEOUT, from the evidence
    assert (b["state"], b["time_limit_s"]) == ("TIMEOUT", 600) and "sge_state_inferred" in caveats(b)


def test_h_vmem_kill(tmp_path):
    line = record(job_number=3, submission_time=1700000000, start_time=1700000060, end_time=1700000100,
                  failed=100, exit_status=137, ru_wallclock=40, granted_pe="smp", slots=2, cpu="30.0",
                  category="-l h_rt=3600,h_vmem=1G -pe smp 2", maxvmem="2147483648.000000")
    j = read(tmp_path, line + "\n").jobs.iloc[0]
    assert j["req_mem_bytes"] == 2 * GIB and j["mem_peak_bytes"] == 2 * GIB
    assert j["state"] == "OUT_OF_MEMORY" and j["signal"] == 9
    assert caveats(j) == {"sge_req_vmem", "sge_state_inferred", "sge_single_host_assumed"}


def test_sigxcpu_is_a_cpu_time_limit(tmp_path):
    # s_cpu sends SIGXCPU (queue_conf(5)); exit 152 = 128 + 24
    line = record(job_number=4, submission_time=1700000000, start_time=1700000060, end_time=1700000760,
                  failed=100, exit_status=152, ru_wallclock=700, cpu="600.0", category="-l s_cpu=600",
                  maxvmem="1000000")
    j = read(tmp_path, line + "\n").jobs.iloc[0]
    assert (j["state"], j["signal"]) == ("TIMEOUT", 24) and "sge_state_inferred" in caveats(j)


def test_jobs_that_never_started(tmp_path):
    lines = [
        # failed 1 "assumedly before job": never ran, no slots; -pe asked for 16
        record(job_number=10, hostname="node05", submission_time=1700000000, failed=1, slots=0,
               category="-pe mpi 16-32"),
        record(job_number=11, submission_time=1700000000, failed=19, slots=0),  # shepherd wrote no exit status
        record(job_number=12, submission_time=1700000000, failed=0, slots=0),
    ]
    r = read(tmp_path, "\n".join(lines) + "\n")
    assert r.jobs["state"].tolist() == ["FAILED", "NODE_FAIL", "CANCELLED"]
    j = r.jobs.iloc[0]
    assert pd.isna(j["start_time"]) and pd.isna(j["end_time"]) and j["elapsed_s"] == 0
    assert j["submit_time"] == ts("2023-11-14T22:13:20")
    assert j["req_cpus"] == 16 and j["alloc_cpus"] == 0 and j["alloc_nodes"] == 0 and pd.isna(j["node_list"])
    assert len(r.placements) == 0


def test_category_parsing():
    req = parse_category("-U a,b -u x -q short.q -l h_rt=1::1,s_rt=3000,h_vmem=1.5G,mem_free=512M,gpu=2,"
                         "gpu_type=a100 -soft -l h_vmem=99G,h_rt=9 -pe mpi 4-16 -binding no_job_binding 0 0")
    assert req.h_rt == 3601 and req.s_rt == 3000  # 1::1 is 1 hour and 1 second (sge_types(1))
    assert req.mem_virtual == 1.5 * GIB and req.mem_virtual_name == "h_vmem"  # the soft 99G is not read
    assert req.mem_resident == 512 * 1024**2 and req.mem_resident_name == "mem_free"
    assert req.gpus == 2 and req.gpu_type == "a100" and req.pe_min_slots == 4 and req.unreadable == []
    assert parse_category("-l h_rt=INFINITY,h_vmem=lots").h_rt is None
    assert parse_category("-l h_rt=INFINITY,h_vmem=lots").unreadable == [("h_vmem", "lots")]
    assert parse_category("-l gpu=TRUE").gpu_flag and parse_category("NONE").h_rt is None
    # sge_types(1) memory specifiers: k 1000, K 1024, m 1000², M 1024², g 1000³, G 1024³
    assert [parse_memory(v) for v in ("1000", "2k", "2K", "3m", "3M", "1g", "1G", "0x10")] == [
        1000, 2000, 2048, 3_000_000, 3 * 1024**2, 1_000_000_000, GIB, 16]
    assert parse_memory("4X") is None
    assert [parse_time(v) for v in ("3600", "1:00:00", "::30", "2:30:")] == [3600, 3600, 30, 9000]
    assert parse_time("1h") is None


def test_gpus_and_an_unreadable_request_value(tmp_path):
    gpu = record(job_number=20, submission_time=1700000000, start_time=1700000060, end_time=1700003660,
                 ru_wallclock=3600, granted_pe="smp", slots=2, cpu="7000.0",
                 category="-l h_rt=7200,gpu=1,h_vmem=lots -pe smp 2", maxvmem="1000000")
    r = read(tmp_path, gpu + "\n")
    j = r.jobs.iloc[0]
    assert j["req_gpus"] == 1 and j["alloc_gpus"] == 1  # the job's total, not per slot
    assert "no_gpu_telemetry" in caveats(j) and pd.isna(j["req_mem_bytes"])
    # the unreadable value is set aside as a field; the record is still used
    assert (r.ledger.used, r.ledger.quarantined, r.ledger.fields_quarantined) == (1, 0, 1) and r.ledger.balanced
    assert r.quarantine.rows[0][1:4] == (1, "category", "cannot read h_vmem='lots'")
    assert r.placements["gpus"].tolist() == [1]


def test_reserved_usage(tmp_path):
    # what a Son of Grid Engine 8.1.9 execd with ACCT_RESERVED_USAGE=true wrote for a 65 s sleep
    line = record(job_number=15, submission_time=1700000000, start_time=1700000001, end_time=1700000066,
                  ru_wallclock=65, ru_utime="0.007594", ru_stime="0.005597", cpu="65.000000",
                  maxvmem="0.000000")
    j = read(tmp_path, line + "\n").jobs.iloc[0]
    assert pd.isna(j["cpu_used_s"]) and pd.isna(j["mem_peak_bytes"])
    assert caveats(j) == {"sge_reserved_usage"}


def test_malformed_lines_are_quarantined_and_the_rest_read(tmp_path):
    good = record(job_number=30, submission_time=1700000000, start_time=1700000060, end_time=1700000100,
                  ru_wallclock=40, cpu="39.0", maxvmem="1000")
    bad_slots = record(job_number=31, slots="x")
    stray_colon = record(job_number=32, category="-l arch=lx:amd64")  # a colon that is no h:m:s value
    far_future = record(job_number=33, end_time=9999999999)  # 2286 in seconds: a corrupted field
    text = HEADER + "\n".join([good, bad_slots, "garbage:line", stray_colon, far_future, "x"]) + "\n\n"
    r = read(tmp_path, text)
    assert (r.ledger.read, r.ledger.used, r.ledger.quarantined) == (5, 1, 4) and r.ledger.balanced
    assert r.ledger.structural == 4 + 1 + 1  # header, the one-character line, the blank line
    assert [(q[1], q[2]) for q in r.quarantine.rows] == [
        (6, "slots"), (7, "line"), (8, "category"), (9, "end_time")]
    assert r.quarantine.rows[1][3] == "2 fields: a Grid Engine accounting record has 43, 45, 52, 53, 54, 55"
    assert r.quarantine.rows[1][4] == "garbage:line"
    assert r.jobs["job_id"].tolist() == ["30"]


def test_empty_and_header_only(tmp_path):
    r = read(tmp_path, HEADER)
    assert len(r.jobs) == 0 and r.ledger.read == 0 and r.ledger.structural == 4 and r.ledger.balanced
    assert list(r.placements.columns)[:2] == ["cluster", "node"]


def test_detect_format_says_sge(tmp_path):
    line = record(job_number=40, submission_time=1700000000, start_time=1700000060, end_time=1700000100)
    for name, text in (("with_header", HEADER + line + "\n"), ("bare", line + "\n" + line + "\n"),
                       ("empty_new", HEADER)):
        f = tmp_path / name
        f.write_text(text)
        assert detect_format(f) == "sge", name
    assert looks_like_sge([line, line[:30]])  # the last line may be cut short by the head read
    # not Grid Engine: colon-rich lines without its numbers, PBS accounting, SWF
    assert not looks_like_sge([":".join(["x"] * 45)])
    assert not looks_like_sge(["04/26/2023 10:00:00;E;123.server;user=alice group=staff queue=workq"])
    assert not looks_like_sge(["1 0 5 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1"])
    assert not looks_like_sge(["# HELP up whether the target is up", "up 1"])


def test_read_inputs_end_to_end(tmp_path):
    lines = [record(job_number=50 + k, hostname=f"node0{k}", granted_pe="smp" if k else "NONE", slots=8 if k else 1,
                    submission_time=1700000000, start_time=1700000060, end_time=1700003660, ru_wallclock=3600,
                    cpu="3000.0", category="-l h_rt=7200,h_vmem=4G" + (" -pe smp 8" if k else ""),
                    maxvmem=str(3 * GIB)) for k in range(3)]
    f = tmp_path / "accounting"
    f.write_text(HEADER + "\n".join(lines) + "\n")
    res = read_inputs([f], cluster="gridc")
    assert res.ledger["balanced"] and res.ledger["files"][0]["format"] == "sge"
    assert res.jobs["cluster"].unique().tolist() == ["gridc"] and len(res.jobs) == 3
    assert res.jobs["req_mem_bytes"].tolist() == [4 * GIB, 32 * GIB, 32 * GIB]
    assert sorted(res.placements["node"]) == ["node00", "node01", "node02"]
    assert np.array_equal(res.placements.sort_values("node")["cpus"].to_numpy(dtype=float), [1, 8, 8])
