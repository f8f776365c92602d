"""The PBS Pro / OpenPBS / Torque accounting reader on hand-built logs.

Every fixture line follows the record layout of the Torque Administrator Guide ("Accounting records") and the
OpenPBS sources the PBS Professional Reference Guide's "Accounting Log" chapter describes; every expected value is
worked out by hand from those documents (sizes: binary multiples, a bare number bytes, a word 8 bytes; durations
``[[HH:]MM:]SS``; epoch seconds UTC; the stamp in the server's zone).  Epoch 1510272000 is 2017-11-10 00:00:00 UTC.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from audit.readers.pbs import looks_like_pbs, read_pbs
from audit.readers.pbs.values import parse_duration, parse_size

KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40
T0 = 1510272000  # 2017-11-10 00:00:00 UTC


def utc(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def read(tmp_path, lines, name="20171110", **kw):
    f = tmp_path / name
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_pbs(f, **kw)


def job(r, job_id):
    rows = r.jobs[r.jobs["job_id"] == job_id]
    assert len(rows) == 1, f"{job_id}: {len(rows)} rows"
    return rows.iloc[0]


def caveats(row) -> set:
    return set() if pd.isna(row["caveats"]) else set(row["caveats"].split(";"))


def place(r, job_id) -> dict:
    p = r.placements[r.placements["job_id"] == job_id]
    return {n: (c, None if pd.isna(i) else int(i), None if pd.isna(m) else int(m), None if pd.isna(g) else g)
            for n, c, i, m, g in zip(p["node"], p["cpus"], p["cpu_index_max"], p["mem_bytes"], p["gpus"],
                                     strict=True)}


# --- Torque: the E record of the Torque guide's shape ------------------------------------------------------------

TORQUE_E = ("11/10/2017 05:59:59;E;527685.m1.mason;user=alice group=physics jobname=run1 queue=batch "
            f"ctime={T0} qtime={T0 + 60} etime={T0 + 60} start={T0 + 130} end={T0 + 130 + 21469} exec_host=c3/30 "
            "Resource_List.nodes=1:ppn=8 Resource_List.vmem=32gb Resource_List.walltime=16:00:00 session=4711 "
            "Exit_status=0 resources_used.cput=25471 resources_used.mem=7523072kb resources_used.vmem=13545240kb "
            "resources_used.walltime=05:57:49")


def test_torque_end_record_maps_every_field(tmp_path):
    r = read(tmp_path, ["11/10/2017 00:00:00;Q;527685.m1.mason;queue=batch",
                        "11/10/2017 00:02:10;S;527685.m1.mason;user=alice group=physics jobname=run1 queue=batch",
                        TORQUE_E])
    j = job(r, "527685")
    assert j["job_id_raw"] == "527685.m1.mason" and j["cluster"] == "m1.mason" and j["source_line"] == 3
    assert j["user"] == "alice" and j["job_name"] == "run1" and j["partition"] == "batch" and pd.isna(j["qos"])
    assert j["account"] == "physics"  # no account in the record: the group
    assert j["submit_time"] == utc("2017-11-10 00:00:00") and j["eligible_time"] == utc("2017-11-10 00:01:00")
    assert j["start_time"] == utc("2017-11-10 00:02:10") and j["end_time"] == utc("2017-11-10 05:59:59")
    assert j["elapsed_s"] == 5 * 3600 + 57 * 60 + 49  # resources_used.walltime 05:57:49
    assert j["time_limit_s"] == 16 * 3600
    assert j["state"] == "COMPLETED" and j["exit_code"] == 0 and pd.isna(j["signal"])
    assert j["req_nodes"] == 1 and j["req_cpus"] == 8 and j["req_gpus"] == 0
    assert j["req_mem_bytes"] == 32 * GiB  # vmem is the only memory request ...
    assert j["mem_peak_bytes"] == 13545240 * KiB  # ... so the peak compared with it is resources_used.vmem
    assert j["cpu_used_s"] == 25471
    assert j["alloc_nodes"] == 1 and j["alloc_cpus"] == 1 and j["node_list"] == "c3"
    assert caveats(j) == {"pbs_vmem", "pbs_account_is_group"}
    assert place(r, "527685") == {"c3": (1, 30, None, None)}
    assert r.placements["cluster"].tolist() == ["m1.mason"] and r.placements["partition"].tolist() == ["batch"]
    assert r.ledger.read == 3 and r.ledger.used == 1 and r.ledger.folded == 2 and r.ledger.balanced


def test_cluster_argument_overrides_the_server_name(tmp_path):
    assert read(tmp_path, [TORQUE_E], cluster="mason").jobs["cluster"].tolist() == ["mason"]


# --- requests -------------------------------------------------------------------------------------------------------

def pro_end(jid, rest, *, stamp="11/10/2017 02:00:00", start=T0 + 3600, end=T0 + 7200, exit_status=0,
            used="resources_used.walltime=01:00:00"):
    return (f"{stamp};E;{jid};user=bob group=chem account=\"proj-x\" jobname=md queue=workq ctime={T0} qtime={T0} "
            f"etime={T0} start={start} {rest} session=1 end={end} Exit_status={exit_status} {used} run_count=1")


def test_select_with_several_chunks_sums_count_times_chunk(tmp_path):
    r = read(tmp_path, [pro_end(
        "1001.pbs1",
        "exec_host=g1/0*8+g2/0*8+c7/0*4 "
        "exec_vnode=(g1:ncpus=8:mem=32gb:ngpus=1)+(g2:ncpus=8:mem=32gb:ngpus=1)+(c7:ncpus=4:mem=16gb) "
        "Resource_List.select=2:ncpus=8:mem=32gb:ngpus=1+1:ncpus=4:mem=16gb Resource_List.walltime=02:00:00",
        used="resources_used.cput=20:00:00 resources_used.mem=40gb resources_used.ncpus=20 "
             "resources_used.vmem=50gb resources_used.walltime=01:00:00")])
    j = job(r, "1001")
    assert j["req_nodes"] == 3  # three chunks, no nodect
    assert j["req_cpus"] == 2 * 8 + 4 and j["req_gpus"] == 2 * 1
    assert j["req_mem_bytes"] == 2 * 32 * GiB + 16 * GiB
    assert j["mem_peak_bytes"] == 40 * GiB  # mem asked: resources_used.mem
    assert j["alloc_nodes"] == 3 and j["alloc_cpus"] == 20 and j["alloc_mem_bytes"] == 80 * GiB and j["alloc_gpus"] == 2
    assert j["node_list"] == "g[1-2],c7"
    assert j["account"] == "proj-x" and j["cpu_used_s"] == 20 * 3600
    assert j["start_time"] == utc("2017-11-10 01:00:00") and j["end_time"] == utc("2017-11-10 02:00:00")
    assert j["elapsed_s"] == 3600 and j["time_limit_s"] == 7200 and j["state"] == "COMPLETED"
    assert caveats(j) == {"no_gpu_telemetry"}
    # PBS Pro's exec_host N is a task slot, not a CPU index: no index kept
    assert place(r, "1001") == {"g1": (8, None, 32 * GiB, 1), "g2": (8, None, 32 * GiB, 1), "c7": (4, None, 16 * GiB, None)}


def test_job_wide_resources_win_over_an_incomplete_select(tmp_path):
    r = read(tmp_path, [
        # the second chunk names no ncpus and the first no mem: the server's job-wide sums (defaults included) hold
        pro_end("1002.pbs1", "Resource_List.select=1:ncpus=4+1:mem=2gb Resource_List.ncpus=5 Resource_List.mem=10gb "
                             "Resource_List.nodect=2 exec_host=c1/0*4+c2/0"),
        # the same without job-wide values: CPUs and memory unknown, no GPUs asked
        pro_end("1003.pbs1", "Resource_List.select=1:ncpus=4+1:mem=2gb exec_host=c1/0*4+c2/0"),
    ])
    a, b = job(r, "1002"), job(r, "1003")
    assert a["req_cpus"] == 5 and a["req_mem_bytes"] == 10 * GiB and a["req_nodes"] == 2
    assert pd.isna(b["req_cpus"]) and pd.isna(b["req_mem_bytes"]) and b["req_nodes"] == 2 and b["req_gpus"] == 0
    assert a["alloc_cpus"] == 5 and a["node_list"] == "c[1-2]"


def torque_end(jid, rest, *, exit_status=0, used="resources_used.walltime=01:00:00", stamp="11/10/2017 02:00:00",
               start=T0 + 3600, end=T0 + 7200):
    return (f"{stamp};E;{jid};user=dave group=astro jobname=sim queue=batch ctime={T0} qtime={T0} etime={T0} "
            f"start={start} {rest} session=9 end={end} Exit_status={exit_status} {used}")


def test_torque_nodes_ppn_gpus_and_exec_gpus(tmp_path):
    r = read(tmp_path, [
        torque_end("2001.t1", "exec_host=n1/0-7+n2/0-7 exec_gpus=n1-gpu/1+n1-gpu/0+n2-gpu/0+n2-gpu/1 "
                              "Resource_List.neednodes=2:ppn=8:gpus=2 Resource_List.nodes=2:ppn=8:gpus=2 "
                              "Resource_List.walltime=01:00:00"),
        # a host name instead of a count; ppn belongs to its own node spec
        torque_end("2002.t1", "exec_host=n1/0+n2/0+n2/1+n2/2+n2/3 Resource_List.nodes=n1+n2:ppn=4"),
    ])
    a = job(r, "2001")
    assert a["req_nodes"] == 2 and a["req_cpus"] == 2 * 8 and a["req_gpus"] == 2 * 2
    assert a["alloc_nodes"] == 2 and a["alloc_cpus"] == 16 and a["alloc_gpus"] == 4 and a["node_list"] == "n[1-2]"
    assert place(r, "2001") == {"n1": (8, 7, None, 2), "n2": (8, 7, None, 2)}
    assert "no_gpu_telemetry" in caveats(a)
    b = job(r, "2002")
    assert b["req_nodes"] == 2 and b["req_cpus"] == 1 + 4 and b["req_gpus"] == 0
    assert place(r, "2002") == {"n1": (1, 0, None, None), "n2": (4, 3, None, None)}
    assert b["alloc_cpus"] == 5 and b["alloc_gpus"] == 0


def test_pmem_is_per_process_times_processes(tmp_path):
    r = read(tmp_path, [torque_end("2101.t1", "exec_host=n1/0-3+n2/0-3 Resource_List.nodes=2:ppn=4 "
                                              "Resource_List.pmem=2gb",
                                   used="resources_used.mem=3gb resources_used.vmem=5gb "
                                        "resources_used.walltime=01:00:00")])
    j = job(r, "2101")
    assert j["req_mem_bytes"] == 2 * 4 * 2 * GiB  # 8 processes (2 nodes × ppn 4) × 2 GiB
    assert j["mem_peak_bytes"] == 3 * GiB
    assert caveats(j) == {"pbs_mem_per_process", "pbs_account_is_group"}


def test_vmem_against_vmem_and_mem_against_mem(tmp_path):
    used = "resources_used.mem=1gb resources_used.vmem=6gb resources_used.walltime=01:00:00"
    r = read(tmp_path, [
        torque_end("2201.t1", "exec_host=n1/0 Resource_List.mem=4gb Resource_List.vmem=8gb", used=used),
        torque_end("2202.t1", "exec_host=n1/0 Resource_List.vmem=8gb", used=used),
        torque_end("2203.t1", "exec_host=n1/0", used=used),
        torque_end("2204.t1", "exec_host=n1/0-1 Resource_List.nodes=1:ppn=2 Resource_List.pvmem=1gb", used=used),
    ])
    both, vmem, none, pvmem = (job(r, i) for i in ("2201", "2202", "2203", "2204"))
    assert both["req_mem_bytes"] == 4 * GiB and both["mem_peak_bytes"] == 1 * GiB and "pbs_vmem" not in caveats(both)
    assert vmem["req_mem_bytes"] == 8 * GiB and vmem["mem_peak_bytes"] == 6 * GiB and "pbs_vmem" in caveats(vmem)
    assert pd.isna(none["req_mem_bytes"]) and none["mem_peak_bytes"] == 1 * GiB and "pbs_vmem" not in caveats(none)
    assert pvmem["req_mem_bytes"] == 2 * 1 * GiB and pvmem["mem_peak_bytes"] == 6 * GiB
    assert {"pbs_vmem", "pbs_mem_per_process"} <= caveats(pvmem)


# --- placement forms ------------------------------------------------------------------------------------------------

def test_exec_host_forms(tmp_path):
    r = read(tmp_path, [
        torque_end("3001.t1", "exec_host=n1/0+n1/1+n2/0 Resource_List.neednodes=n1:ppn=2+n2"),
        torque_end("3002.t1", "exec_host=n1/0-7+n2/0-7 Resource_List.neednodes=2:ppn=8"),
        torque_end("3003.t1", "exec_host=n1/0,2,4-5 Resource_List.neednodes=1:ppn=4"),
        pro_end("3004.pbs1", "exec_host=n1/0*8+n2/0*8"),
        pro_end("3005.pbs1", "exec_host=big/0*4 exec_vnode=(big[0]:ncpus=2:mem=4gb+big[1]:ncpus=2:mem=4gb)"),
    ])
    assert place(r, "3001") == {"n1": (2, 1, None, None), "n2": (1, 0, None, None)}
    assert place(r, "3002") == {"n1": (8, 7, None, None), "n2": (8, 7, None, None)}
    assert place(r, "3003") == {"n1": (4, 5, None, None)}
    assert place(r, "3004") == {"n1": (8, None, None, None), "n2": (8, None, None, None)}
    # one chunk split over two vnodes of host big
    assert place(r, "3005") == {"big": (4, None, 8 * GiB, None)}
    assert job(r, "3001")["alloc_cpus"] == 3 and job(r, "3001")["node_list"] == "n[1-2]"
    assert job(r, "3004")["alloc_cpus"] == 16 and job(r, "3005")["alloc_mem_bytes"] == 8 * GiB


# --- identity, folding, jobs that never ran -------------------------------------------------------------------------

def test_array_task_and_parent(tmp_path):
    r = read(tmp_path, [
        "11/10/2017 00:00:00;Q;777[].pbs1;user=bob queue=workq array_indices=1-3",
        pro_end("777[3].pbs1", "exec_host=c1/0"),
        pro_end("777[].pbs1", "array_indices=1-3"),
    ])
    assert r.jobs["job_id"].tolist() == ["777[3]"]
    j = job(r, "777[3]")
    assert j["array_job_id"] == 777 and j["array_task_id"] == 3 and j["job_id_raw"] == "777[3].pbs1"
    assert r.ledger.read == 3 and r.ledger.used == 1 and r.ledger.folded == 2 and r.ledger.balanced


PRO_Q = ("11/10/2017 00:00:00;Q;3001.pbs1;user=carol group=bio account=\"genomics\" jobname=align queue=workq "
         f"ctime={T0} qtime={T0} etime={T0} Resource_List.ncpus=4 Resource_List.mem=8gb Resource_List.nodect=1 "
         "Resource_List.place=pack Resource_List.select=1:ncpus=4:mem=8gb Resource_List.walltime=10:00:00")


def test_deleted_and_aborted_before_running(tmp_path):
    r = read(tmp_path, [
        PRO_Q,
        "11/10/2017 00:30:00;D;3001.pbs1;requestor=carol@login1",
        PRO_Q.replace("3001.pbs1", "3002.pbs1"),
        "11/10/2017 00:40:00;A;3002.pbs1;",
        "11/10/2017 00:05:00;Q;3003.t1;queue=batch",  # Torque: the Q record names only the queue
        "11/10/2017 00:45:00;D;3003.t1;requestor=erin@login2",
    ])
    d = job(r, "3001")
    assert d["state"] == "CANCELLED" and pd.isna(d["start_time"]) and d["elapsed_s"] == 0
    assert d["submit_time"] == utc("2017-11-10 00:00:00") and d["end_time"] == utc("2017-11-10 00:30:00")
    assert d["user"] == "carol" and d["account"] == "genomics" and d["partition"] == "workq" and d["job_name"] == "align"
    assert d["req_cpus"] == 4 and d["req_mem_bytes"] == 8 * GiB and d["req_nodes"] == 1 and d["time_limit_s"] == 36000
    assert pd.isna(d["exit_code"]) and pd.isna(d["alloc_nodes"]) and d["cpu_used_s"] == 0
    assert caveats(d) == {"pbs_deleted_before_run", "pbs_stamp_time"}  # the end is the D record's stamp
    a = job(r, "3002")
    assert a["state"] == "FAILED" and a["end_time"] == utc("2017-11-10 00:40:00") and a["elapsed_s"] == 0
    t = job(r, "3003")
    assert t["state"] == "CANCELLED" and t["partition"] == "batch" and pd.isna(t["user"])
    assert t["submit_time"] == utc("2017-11-10 00:05:00")  # no ctime: the Q record's stamp
    assert t["end_time"] == utc("2017-11-10 00:45:00")
    assert r.ledger.used == 3 and r.ledger.folded == 3 and r.ledger.balanced


def test_deleted_while_running_is_its_end_record(tmp_path):
    r = read(tmp_path, [
        PRO_Q.replace("3001", "3101"),
        f"11/10/2017 01:00:00;S;3101.pbs1;user=carol start={T0 + 3600} exec_host=c1/0*4",
        "11/10/2017 01:10:00;D;3101.pbs1;requestor=carol@login1",
        pro_end("3101.pbs1", "exec_host=c1/0*4 Resource_List.select=1:ncpus=4:mem=8gb Resource_List.walltime=10:00:00",
                stamp="11/10/2017 01:10:02", end=T0 + 4202, exit_status=271,
                used="resources_used.walltime=00:10:02"),
    ])
    j = job(r, "3101")
    assert j["state"] == "CANCELLED" and j["exit_code"] == 271 and j["signal"] == 15 and j["elapsed_s"] == 602
    assert len(r.jobs) == 1 and r.ledger.used == 1 and r.ledger.folded == 3 and r.ledger.balanced


def test_rerun_job_keeps_its_last_end_record(tmp_path):
    r = read(tmp_path, [
        pro_end("3201.pbs1", "exec_host=c1/0", exit_status=-11, end=T0 + 4000),
        pro_end("3201.pbs1", "exec_host=c2/0", exit_status=0, end=T0 + 7200),
    ])
    j = job(r, "3201")
    assert j["state"] == "COMPLETED" and j["source_line"] == 2 and j["node_list"] == "c2"
    assert r.ledger.used == 1 and r.ledger.folded == 1


def test_other_record_types_are_folded(tmp_path):
    r = read(tmp_path, [
        "11/10/2017 00:00:00;L;license;floating license hour:0 day:0 month:0 max:0",
        f"11/10/2017 00:00:00;U;R55.pbs1;owner=bob@login1 start={T0 + 3600} end={T0 + 7200}",
        f"11/10/2017 00:00:01;Y;R55.pbs1;requestor=Scheduler@pbs1 start={T0 + 3600} end={T0 + 7200}",
        f"11/10/2017 01:00:00;B;R55.pbs1;owner=bob@login1 queue=R55 start={T0 + 3600} end={T0 + 7200}",
        "11/10/2017 01:00:05;a;3301.pbs1;Resource_List.walltime=02:00:00",
        "11/10/2017 01:00:06;M;3302.pbs1;destination=workq@other",
        "11/10/2017 01:30:00;R;3301.pbs1;user=bob Exit_status=0",
        pro_end("3301.pbs1", "exec_host=c1/0"),
        f"11/10/2017 02:00:00;F;R55.pbs1;owner=bob@login1 start={T0 + 3600} end={T0 + 7200}",
    ])
    assert r.jobs["job_id"].tolist() == ["3301"]
    assert r.ledger.read == 9 and r.ledger.used == 1 and r.ledger.folded == 8 and r.ledger.balanced


# --- exit status → state --------------------------------------------------------------------------------------------

def test_torque_negative_exit_codes(tmp_path):
    rest = "exec_host=n1/0 Resource_List.neednodes=1 Resource_List.nodes=1 Resource_List.walltime=01:00:00"
    r = read(tmp_path, [torque_end(f"40{i}.t1", rest, exit_status=code)
                        for i, code in enumerate((-1, -3, -4, -10, -11, -12, -14))])
    assert r.jobs["state"].tolist() == ["FAILED", "NODE_FAIL", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "TIMEOUT",
                                        "NODE_FAIL"]
    assert r.jobs["exit_code"].tolist() == [-1, -3, -4, -10, -11, -12, -14] and r.jobs["signal"].isna().all()


def test_pbspro_negative_exit_codes_differ_from_torques(tmp_path):
    rest = "exec_host=c1/0 Resource_List.select=1:ncpus=1 Resource_List.walltime=01:00:00"
    r = read(tmp_path, [pro_end(f"41{i}.pbs1", rest, exit_status=code)
                        for i, code in enumerate((-29, -27, -26, -28, -11, -12, -10, -20, -19))])
    assert r.jobs["state"].tolist() == ["TIMEOUT", "OUT_OF_MEMORY", "OUT_OF_MEMORY", "TIMEOUT", "REQUEUED",
                                        "PREEMPTED", "FAILED", "NODE_FAIL", "CANCELLED"]


def test_killed_by_signal_256_plus_n(tmp_path):
    rest = "exec_host=c1/0 Resource_List.select=1:ncpus=1:mem=1gb Resource_List.walltime=01:00:00"
    r = read(tmp_path, [
        # SIGKILL (256 + 9) after the walltime limit of 01:00:00 was reached
        pro_end("4201.pbs1", rest, exit_status=265, used="resources_used.mem=100mb resources_used.walltime=01:00:05"),
        # SIGKILL with the peak over the 1 GiB asked
        pro_end("4202.pbs1", rest, exit_status=265, used="resources_used.mem=1536mb resources_used.walltime=00:20:00"),
        # SIGSEGV (256 + 11): a crash
        pro_end("4203.pbs1", rest, exit_status=267, used="resources_used.mem=100mb resources_used.walltime=00:20:00"),
        # SIGTERM (256 + 15) with no D record and no limit reached
        pro_end("4204.pbs1", rest, exit_status=271, used="resources_used.mem=100mb resources_used.walltime=00:20:00"),
        # the job's shell reported SIGTERM (128 + 15) at the walltime limit
        pro_end("4205.pbs1", rest, exit_status=143, used="resources_used.mem=100mb resources_used.walltime=01:00:01"),
        pro_end("4206.pbs1", rest, exit_status=1, used="resources_used.mem=100mb resources_used.walltime=00:20:00"),
    ])
    assert r.jobs["state"].tolist() == ["TIMEOUT", "OUT_OF_MEMORY", "FAILED", "FAILED", "TIMEOUT", "FAILED"]
    assert r.jobs["signal"].astype("float64").fillna(-1).tolist() == [9, 9, 11, 15, -1, -1]  # -1: none
    assert r.jobs["exit_code"].tolist() == [265, 265, 267, 271, 143, 1]


# --- times ----------------------------------------------------------------------------------------------------------

def test_stamps_are_read_in_the_given_zone(tmp_path):
    r = read(tmp_path, [
        "11/10/2017 04:00:00;D;5001.s1;requestor=x@h",  # CET, UTC+1
        "07/10/2017 04:00:00;D;5002.s1;requestor=x@h",  # CEST, UTC+2
        # no end= in the record: the E record's own stamp stands in; the epoch fields stay UTC
        f"11/10/2017 05:00:00;E;5003.s1;user=x group=g queue=q ctime={T0} qtime={T0} etime={T0} start={T0 + 3600} "
        "exec_host=c1/0 Exit_status=0 resources_used.walltime=03:00:00",
    ], timezone="Europe/Berlin")
    assert job(r, "5001")["end_time"] == utc("2017-11-10 03:00:00")
    assert job(r, "5002")["end_time"] == utc("2017-07-10 02:00:00")
    e = job(r, "5003")
    assert e["end_time"] == utc("2017-11-10 04:00:00") and e["start_time"] == utc("2017-11-10 01:00:00")
    assert e["submit_time"] == utc("2017-11-10 00:00:00") and e["elapsed_s"] == 3 * 3600
    assert caveats(e) == {"pbs_stamp_time", "pbs_account_is_group"}
    # the same file read as UTC puts the stamps an hour later
    assert job(read(tmp_path, ["11/10/2017 04:00:00;D;5001.s1;requestor=x@h"], name="utc"), "5001")["end_time"] == \
        utc("2017-11-10 04:00:00")


def test_elapsed_falls_back_to_end_minus_start(tmp_path):
    r = read(tmp_path, [pro_end("5101.pbs1", "exec_host=c1/0 Resource_List.walltime=30:00", used="")])
    j = job(r, "5101")
    assert j["elapsed_s"] == 3600 and j["time_limit_s"] == 30 * 60  # MM:SS
    assert "no_usage_fields" in caveats(j) and pd.isna(j["cpu_used_s"])


# --- malformed input ------------------------------------------------------------------------------------------------

def test_malformed_lines_are_quarantined_and_the_rest_read(tmp_path):
    lines = [
        pro_end("6001.pbs1", "exec_host=c1/0"),
        "this is not an accounting record",
        "",
        "13/45/2017 10:00:00;E;6002.pbs1;user=x Exit_status=0",
        pro_end("6003.pbs1", "exec_host=c1/0").replace(f"end={T0 + 7200}", "end=abc"),
        pro_end("6004.pbs1", "exec_host=c1/0 Resource_List.mem=12xb Resource_List.walltime=1:2:3:4"),
        pro_end("abc.pbs1", "exec_host=c1/0"),
        pro_end("6005.pbs1", "exec_host=c1/0").replace(" Exit_status=0", ""),
        pro_end("6006.pbs1", "exec_host=c1/0/x"),
        pro_end("6007.pbs1", "exec_host=c1/0"),
    ]
    r = read(tmp_path, lines)
    assert r.jobs["job_id"].tolist() == ["6001", "6004", "6006", "6007"]
    assert sorted((q[1], q[2]) for q in r.quarantine.rows) == [
        (2, "line"), (4, "stamp"), (5, "end"),  # whole records ...
        (6, "Resource_List.mem"), (6, "Resource_List.walltime"),  # ... but here only the fields are set aside
        (7, "id"), (8, "Exit_status"), (9, "exec_host"),
    ]
    assert r.quarantine.rows[0][4] == "this is not an accounting record"
    bad = job(r, "6004")
    assert pd.isna(bad["req_mem_bytes"]) and pd.isna(bad["time_limit_s"]) and bad["state"] == "COMPLETED"
    assert pd.isna(job(r, "6006")["node_list"]) and pd.isna(job(r, "6006")["alloc_nodes"])
    led = r.ledger
    assert (led.read, led.used, led.folded, led.quarantined, led.structural, led.fields_quarantined) == (9, 4, 0, 5, 1, 3)
    assert led.balanced and led.by_reason["Exit_status: missing"] == 1


def test_a_bad_value_in_a_q_record_is_set_aside_on_its_line(tmp_path):
    r = read(tmp_path, [PRO_Q.replace("Resource_List.mem=8gb", "Resource_List.mem=8zb"),
                        "11/10/2017 00:30:00;D;3001.pbs1;requestor=carol@login1"])
    assert [(q[1], q[2]) for q in r.quarantine.rows] == [(1, "Resource_List.mem")]
    d = job(r, "3001")
    assert d["state"] == "CANCELLED" and d["req_cpus"] == 4 and d["req_mem_bytes"] == 8 * GiB  # the select's sum
    assert r.ledger.fields_quarantined == 1 and r.ledger.quarantined == 0 and r.ledger.balanced


def test_crlf_line_ends_and_bytes_that_are_not_utf8(tmp_path):
    f = tmp_path / "20171110"
    text = "\r\n".join([PRO_Q, pro_end("7001.pbs1", "exec_host=c1/0").replace("jobname=md", "jobname=caf\xe9")])
    f.write_bytes(text.encode("latin-1") + b"\r\n")
    r = read_pbs(f)
    assert r.jobs["job_id"].tolist() == ["7001"] and r.jobs["job_name"].tolist() == ["caf\ufffd"]
    assert r.ledger.read == 2 and r.ledger.used == 1 and r.ledger.folded == 1


def test_gzip_file(tmp_path):
    import gzip

    f = tmp_path / "20171110.gz"
    f.write_bytes(gzip.compress((TORQUE_E + "\n").encode()))
    assert read_pbs(f).jobs["job_id"].tolist() == ["527685"]


def test_a_long_server_name(tmp_path):
    server = "pbs-server." + "x" * 120 + ".example.org"
    r = read(tmp_path, [pro_end(f"8001.{server}", "exec_host=c1/0")])
    assert r.jobs["job_id"].tolist() == ["8001"] and r.jobs["cluster"].tolist() == [server]


def test_records_read_in_batches_read_as_one(tmp_path, monkeypatch):
    import audit.readers.pbs.records as records

    lines = [pro_end(f"90{i}.pbs1", "exec_host=c1/0") for i in range(5)]
    lines[3] = lines[3].replace('account="proj-x"', 'account="my project"')
    whole = read(tmp_path, lines, name="a").jobs
    monkeypatch.setattr(records, "BATCH", 2)
    batched = read(tmp_path, lines, name="b").jobs
    assert batched["account"].tolist() == ["proj-x", "proj-x", "proj-x", "my project", "proj-x"]
    pd.testing.assert_frame_equal(whole.drop(columns="source_file"), batched.drop(columns="source_file"))


def test_quoted_values_with_spaces(tmp_path):
    r = read(tmp_path, [pro_end("6101.pbs1", "exec_host=c1/0").replace('account="proj-x"', 'account="my project"')])
    assert job(r, "6101")["account"] == "my project" and job(r, "6101")["user"] == "bob"


def test_empty_and_blank_files(tmp_path):
    r = read(tmp_path, ["", "   "])
    assert len(r.jobs) == 0 and r.ledger.read == 0 and r.ledger.structural == 2 and r.ledger.balanced


# --- values ---------------------------------------------------------------------------------------------------------

def test_sizes_in_pbs_units():
    v, bad = parse_size(pa.array(["1024", "1b", "1kb", "2KB", "3mb", "4gb", "1tb", "1w", "1kw", "2MW", "5k", "",
                                  "12xb", "1.5gb", "-1kb"]))
    expected = [1024, 1, KiB, 2 * KiB, 3 * MiB, 4 * GiB, TiB, 8, 8 * KiB, 2 * 8 * MiB, 5 * KiB]
    assert v[:11].tolist() == expected and np.isnan(v[11:]).all()
    assert bad.tolist() == [False] * 12 + [True] * 3


def test_durations():
    v, bad = parse_duration(pa.array(["05:57:49", "57:49", "49", "240:00:00", "25471", "00:00:01.5", "", "1:2:3:4",
                                      "abc"]))
    assert v[:6].tolist() == [21469, 3469, 49, 864000, 25471, 1.5] and np.isnan(v[6:]).all()
    assert bad.tolist() == [False] * 7 + [True] * 2


# --- detection and the front door -----------------------------------------------------------------------------------

def test_detection(tmp_path):
    assert looks_like_pbs([TORQUE_E, "11/10/2017 06:00:00;Q;527686.m1.mason;queue=batch"])
    assert not looks_like_pbs(["JobID|State|Elapsed", "1|COMPLETED|00:01:00"])
    assert not looks_like_pbs([])


@pytest.fixture
def month(tmp_path):
    d = tmp_path / "accounting"
    d.mkdir()
    (d / "20171110").write_text("\n".join([
        "11/10/2017 00:00:00;Q;527685.m1.mason;queue=batch",
        "garbage in the middle",
        TORQUE_E,
        "11/10/2017 06:00:00;D;527686.m1.mason;requestor=bob@m1",
    ]) + "\n", encoding="utf-8")
    return d / "20171110"


def test_detect_format_says_pbs(month):
    from audit.readers import detect_format

    assert detect_format(month) == "pbs"


def test_read_inputs_end_to_end(month):
    from audit.ingest import read_inputs

    ing = read_inputs([month])
    assert sorted(ing.jobs["job_id"].tolist()) == ["527685", "527686"]
    assert sorted(ing.jobs["state"].tolist()) == ["CANCELLED", "COMPLETED"]
    f = ing.ledger["files"][0]
    assert f["format"] == "pbs" and f["read"] == 4 and f["used"] == 2 and f["folded"] == 1 and f["quarantined"] == 1
    assert ing.ledger["balanced"]
    assert [q[1] for q in ing.quarantine.rows] == [2]


def test_a_job_deleted_across_midnight_is_one_job_of_the_next_days_file(tmp_path):
    """Queued and started on day 1 with its S record in day 0's file, deleted at 23:59:59 of day 1 (its D in day 1's
    file) and ended at 00:00:02 of day 2 (its E in day 2's file): day 1's file alone reads a job deleted before it
    ran; read together, the job is day 2's E record once, and day 1's D row is folded in day 1's ledger."""
    from audit.ingest import read_inputs

    day1 = tmp_path / "20171110"
    day1.write_text("11/10/2017 23:59:59;D;3201.pbs1;requestor=carol@login1\n")
    day2 = tmp_path / "20171111"
    day2.write_text(pro_end("3201.pbs1", "exec_host=c1/0*4 Resource_List.select=1:ncpus=4:mem=8gb "
                            "Resource_List.walltime=10:00:00", stamp="11/11/2017 00:00:02", end=T0 + 86402,
                            exit_status=271, used="resources_used.walltime=00:10:02") + "\n")
    alone = read_pbs(day1)
    assert len(alone.jobs) == 1 and "pbs_deleted_before_run" in alone.jobs["caveats"].iloc[0]
    r = read_inputs([day1, day2])
    assert r.jobs["job_id"].tolist() == ["3201"] and r.jobs["state"].iloc[0] == "CANCELLED"
    files = {f["file"]: f for f in r.ledger["files"]}
    assert files[str(day1)]["used"] == 0 and files[str(day1)]["folded"] == 1 and files[str(day1)]["jobs_emitted"] == 0
    assert r.ledger["balanced"]
