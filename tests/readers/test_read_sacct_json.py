"""sacct --json reader: real slurmrestd samples (v0.0.41, v0.0.44), hand-built older records, corrupt input."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from audit.job_table import JOB_COLUMNS
from audit.readers.jobstats import encode_jobstats
from audit.readers.sacct.json_jobs import read_sacct_json
from audit.textio import InputError

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"
JSON_DIR = TRACES / "sacct" / "slurmrestd-json"
MIB = 1024**2
GIB = 1024**3
T0 = 1_700_000_000

# Read by eye from the JSON files: (job id, state, exit code, req CPUs, req memory MiB, alloc nodes, node list).
# GPU jobs in these samples carry no gres/gpu TRES (the emulated clusters do not account GPUs), so every
# job with TRES shows 0 GPUs and no GPU type.
EXPECTED = {
    "24.05-v0.0.41/slurmdb-job-archived.json": ("649716", "CANCELLED", 0, 1, 512, 1, "cn176"),
    "24.05-v0.0.41/slurmdb-job-completed.json": ("649718", "COMPLETED", 0, 1, 512, 1, "cn001"),
    "24.05-v0.0.41/slurmdb-job-failed.json": ("649719", "FAILED", 1, 1, 512, 1, "cn001"),
    "24.05-v0.0.41/slurmdb-job-gpus-archived.json": ("3", "COMPLETED", 0, 1, 512, 1, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-completed.json": ("10", "COMPLETED", 0, 1, 512, 1, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-gres.json": ("16", "PENDING", 0, None, None, None, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-multi-nodes.json": ("11", "PENDING", 0, None, None, None, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-multi-types.json": ("4", "PENDING", 0, None, None, None, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-pending.json": None,
    "24.05-v0.0.41/slurmdb-job-gpus-per-node.json": ("13", "PENDING", 0, None, None, None, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-per-socket.json": ("15", "RUNNING", 0, 1, 512, 1, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-per-task.json": ("14", "PENDING", 0, None, None, None, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-running.json": ("9", "PENDING", 0, None, None, None, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-gpus-type.json": ("12", "PENDING", 0, None, None, None, "gpu1"),
    "24.05-v0.0.41/slurmdb-job-pending.json": ("649730", "PENDING", 0, 64, 32768, None, None),
    "24.05-v0.0.41/slurmdb-job-running.json": ("649722", "RUNNING", 0, 1, 512, 1, "cn001"),
    "24.05-v0.0.41/slurmdb-job-timeout.json": ("649717", "TIMEOUT", 0, 1, 512, 1, "cn001"),
    "24.05-v0.0.41/slurmdb-job-unfound.json": None,
    "25.11-v0.0.44/slurmdb-job-archived.json": ("5735", "CANCELLED", 0, 1, 512, 1, "cn1"),
    "25.11-v0.0.44/slurmdb-job-completed.json": ("5749", "COMPLETED", 0, 4, 2048, 1, "cn1"),
    "25.11-v0.0.44/slurmdb-job-failed.json": ("5739", "FAILED", 1, 1, 512, 1, "cn1"),
    "25.11-v0.0.44/slurmdb-job-gpus-archived.json": ("4637", "COMPLETED", 0, 1, 512, 1, "gpu1"),
    "25.11-v0.0.44/slurmdb-job-gpus-completed.json": ("5141", "COMPLETED", 0, 1, 512, 1, "gpu1"),
    "25.11-v0.0.44/slurmdb-job-gpus-gres.json": ("5602", "RUNNING", 0, 1, 512, 1, "gpu1"),
    "25.11-v0.0.44/slurmdb-job-gpus-multi-nodes.json": ("5679", "RUNNING", 0, 1, 512, 2, "gpu[1-2]"),
    "25.11-v0.0.44/slurmdb-job-gpus-multi-types.json": ("4716", "RUNNING", 0, 1, 512, 1, "gpu1"),
    "25.11-v0.0.44/slurmdb-job-gpus-pending.json": ("4965", "PENDING", 0, 1, 512, None, None),
    "25.11-v0.0.44/slurmdb-job-gpus-per-node.json": ("5680", "RUNNING", 0, 2, 1024, 2, "gpu[1-2]"),
    "25.11-v0.0.44/slurmdb-job-gpus-per-socket.json": ("5682", "RUNNING", 0, 1, 512, 1, "gpu1"),
    "25.11-v0.0.44/slurmdb-job-gpus-per-task.json": ("5512", "RUNNING", 0, 2, 1024, 1, "gpu1"),
    "25.11-v0.0.44/slurmdb-job-gpus-running.json": ("5557", "RUNNING", 0, 1, 512, 1, "gpu2"),
    "25.11-v0.0.44/slurmdb-job-gpus-type.json": ("5185", "RUNNING", 0, 1, 512, 1, "gpu1"),
    "25.11-v0.0.44/slurmdb-job-pending.json": ("5750", "PENDING", 0, 128, 65536, None, None),
    "25.11-v0.0.44/slurmdb-job-running.json": ("5748", "RUNNING", 0, 1, 512, 1, "cn1"),
    "25.11-v0.0.44/slurmdb-job-timeout.json": ("5737", "TIMEOUT", 0, 1, 512, 1, "cn1"),
    "25.11-v0.0.44/slurmdb-job-unfound.json": None,
}


def _real(rel: str) -> Path:
    p = JSON_DIR / rel
    if not p.exists():
        pytest.skip(f"real traces absent: {p}")
    return p


def test_every_sample_is_listed():
    if not JSON_DIR.exists():
        pytest.skip("real traces absent")
    on_disk = {str(p.relative_to(JSON_DIR)) for p in JSON_DIR.glob("*/*.json")}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_real_sample(rel):
    path = _real(rel)
    doc = json.loads(path.read_text())
    res = read_sacct_json(path)
    led = res.ledger
    jobs = res.jobs
    n_steps = sum(len(j["steps"]) for j in doc["jobs"])
    assert led.balanced
    assert (led.read, led.used, led.folded, led.quarantined) == (len(doc["jobs"]) + n_steps, len(doc["jobs"]),
                                                                 n_steps, 0)
    assert led.jobs_emitted == len(jobs) == len(doc["jobs"])
    assert list(jobs.columns) == list(JOB_COLUMNS)
    exp = EXPECTED[rel]
    if exp is None:
        assert jobs.empty
        return
    job_id, state, code, cpus, mem_mib, alloc_nodes, nodes = exp
    row = jobs.iloc[0]
    assert row["job_id"] == job_id and row["job_id_raw"] == job_id
    assert row["state"] == state
    assert row["exit_code"] == code
    assert row["cluster"] == "hpc" and row["source"] == "sacct-json" and row["source_line"] == 1
    _eq(row["req_cpus"], cpus)
    _eq(row["req_mem_bytes"], None if mem_mib is None else mem_mib * MIB)
    _eq(row["alloc_nodes"], alloc_nodes)
    _eq(row["node_list"], nodes)
    has_tres = bool(doc["jobs"][0]["tres"]["requested"])
    _eq(row["req_gpus"], 0 if has_tres else None)
    assert pd.isna(row["gpu_type"])
    j = doc["jobs"][0]
    assert row["submit_time"] == pd.Timestamp(j["time"]["submission"], unit="s", tz="UTC")
    assert row["elapsed_s"] == j["time"]["elapsed"]
    # no usage values in these samples: unknown, not zero
    assert pd.isna(row["cpu_used_s"]) and pd.isna(row["mem_peak_bytes"])


def _eq(got, want):
    if want is None:
        assert pd.isna(got)
    else:
        assert got == want


def test_real_time_limits_and_memory_forms_agree():
    """time.limit is minutes; memory_per_cpu × CPUs equals the TRES job total in every real record."""
    path = _real("24.05-v0.0.41/slurmdb-job-archived.json")
    assert read_sacct_json(path).jobs["time_limit_s"].iloc[0] == 10 * 60  # sbatch --time 10
    checked = 0
    for p in sorted(JSON_DIR.glob("*/*.json")):
        for j in json.loads(p.read_text())["jobs"]:
            tres = {t["type"]: t["count"] for t in j["tres"]["requested"]}
            per_cpu = j["required"]["memory_per_cpu"]
            if "mem" in tres and per_cpu["set"]:
                assert per_cpu["number"] * j["required"]["CPUs"] == tres["mem"]
                checked += 1
    assert checked >= 20


# ---------------------------------------------------------------- hand-built records in older layouts


def v38_job(**over) -> dict:
    """A v0.0.38-style record: plain integers, state and exit status as strings, required.memory."""
    job = {
        "account": "physics",
        "comment": {"administrator": None, "job": None, "system": None},
        "allocation_nodes": 2,
        "array": {"job_id": 0, "limits": {"max": {"running": {"tasks": 0}}}, "task": None, "task_id": None},
        "cluster": "alpha",
        "derived_exit_code": {"status": "SUCCESS", "return_code": 0},
        "time": {
            "elapsed": 3600, "eligible": T0 + 10, "end": T0 + 3700, "start": T0 + 100, "submission": T0,
            "suspended": 0, "system": {"seconds": 100, "microseconds": 0}, "limit": 120,
            "total": {"seconds": 7300, "microseconds": 500000}, "user": {"seconds": 7200, "microseconds": 500000},
        },
        "exit_code": {"status": "FAILED", "return_code": 3, "signal": {"signal_id": 0, "name": ""}},
        "flags": ["CLEAR_SCHEDULING"],
        "group": "phys",
        "het": {"job_id": 0, "job_offset": None},
        "job_id": 1001,
        "name": "sim",
        "nodes": "n[01-02]",
        "partition": "gpu",
        "priority": 100,
        "qos": "normal",
        "required": {"CPUs": 8, "memory": (1 << 63) + 4000},  # 4000 MiB per CPU, flag in the top bit
        "state": {"current": "COMPLETED", "reason": "None"},
        "steps": [_step("batch", 1, total_mem=1 * GIB), _step("0", 4, total_mem=10 * GIB, max_mem=3 * GIB)],
        "tres": {
            "allocated": [_t("cpu", 8), _t("mem", 32000), _t("node", 2), _t("gres", 4, "gpu"),
                          _t("gres", 4, "gpu:a100")],
            "requested": [_t("cpu", 8), _t("mem", 32000), _t("node", 2), _t("gres", 4, "gpu"),
                          _t("gres", 4, "gpu:a100")],
        },
        "user": "alice",
        "wckey": {"wckey": "", "flags": []},
        "working_directory": "/home/alice",
    }
    job.update(over)
    return job


def _t(kind, count, name=""):
    return {"type": kind, "name": name, "id": 1, "count": count}


def _step(sid, tasks, *, total_mem=None, max_mem=None, ave_mem=None, cpu=(0, 0), state="COMPLETED"):
    req = {"max": [], "min": [], "average": [], "total": []}
    if total_mem is not None:
        req["total"] = [_t("mem", total_mem)]
    if max_mem is not None:
        req["max"] = [{**_t("mem", max_mem), "task": 1, "node": "n01"}]
    if ave_mem is not None:
        req["average"] = [_t("mem", ave_mem)]
    return {
        "time": {"elapsed": 10, "end": T0 + 200, "start": T0 + 100, "suspended": 0,
                 "system": {"seconds": cpu[1], "microseconds": 0}, "total": {"seconds": cpu[0] + cpu[1],
                                                                            "microseconds": 0},
                 "user": {"seconds": cpu[0], "microseconds": 0}},
        "exit_code": {"status": "SUCCESS", "return_code": 0},
        "nodes": {"count": 1, "range": "n01"},
        "tasks": {"count": tasks},
        "step": {"job_id": 1001, "het": {"component": 4294967294}, "id": sid, "name": sid},
        "state": state,
        "tres": {"requested": req, "consumed": {"max": [], "min": [], "average": [], "total": []},
                 "allocated": []},
    }


def _v40(value):
    return {"set": True, "infinite": False, "number": value}


def _read(tmp_path, jobs, name="jobs.json"):
    p = tmp_path / name
    p.write_text(json.dumps({"meta": {}, "errors": [], "warnings": [], "jobs": jobs}))
    return read_sacct_json(p, cluster="fallback")


def test_v38_job_with_steps_and_gpus(tmp_path):
    res = _read(tmp_path, [v38_job()])
    row = res.jobs.iloc[0]
    assert (res.ledger.read, res.ledger.used, res.ledger.folded) == (3, 1, 2)
    assert row["job_id"] == "1001" and row["cluster"] == "alpha" and row["user"] == "alice"
    assert row["state"] == "COMPLETED"
    assert (row["exit_code"], row["signal"]) == (3, 0)
    assert row["time_limit_s"] == 7200
    assert row["elapsed_s"] == 3600
    assert row["start_time"] == pd.Timestamp(T0 + 100, unit="s", tz="UTC")
    assert row["req_mem_bytes"] == 32000 * MIB  # = 4000 MiB per CPU x 8 CPUs
    assert row["alloc_mem_bytes"] == 32000 * MIB
    assert (row["req_gpus"], row["alloc_gpus"], row["gpu_type"]) == (4, 4, "a100")
    assert (row["req_cpus"], row["alloc_cpus"], row["req_nodes"], row["alloc_nodes"]) == (8, 8, 2, 2)
    assert row["cpu_used_s"] == pytest.approx(7300.5)  # job time.total: 7300 s + 500000 us
    assert row["mem_peak_bytes"] == 10 * GIB  # largest step total (step 0), not its largest task (3 GiB)
    assert row["node_list"] == "n[01-02]"
    assert "no_gpu_telemetry" in row["caveats"]


def test_memory_forms_without_tres(tmp_path):
    no_mem = [_t("cpu", 8), _t("node", 2)]
    jobs = [
        v38_job(job_id=1, required={"CPUs": 8, "memory": 16000}, tres={"allocated": no_mem, "requested": no_mem}),
        v38_job(job_id=2, required={"CPUs": 8, "memory": 0x80000000 + 3000},
                tres={"allocated": no_mem, "requested": no_mem}),
        v38_job(job_id=3, required={"CPUs": 8, "memory_per_cpu": _v40(1000),
                                    "memory_per_node": {"set": False, "infinite": False, "number": 0}},
                tres={"allocated": no_mem, "requested": no_mem}),
        v38_job(job_id=4, required={"CPUs": 8, "memory_per_cpu": {"set": False, "infinite": False, "number": 0},
                                    "memory_per_node": _v40(0)},
                tres={"allocated": no_mem, "requested": no_mem}),
    ]
    got = _read(tmp_path, jobs).jobs.set_index("job_id")["req_mem_bytes"]
    assert got["1"] == 16000 * 2 * MIB  # bare v0.0.38 memory is per node x 2 nodes
    assert got["2"] == 3000 * 8 * MIB  # legacy 32-bit per-CPU flag
    assert got["3"] == 1000 * 8 * MIB
    assert pd.isna(got["4"])  # --mem=0: all of each node's memory, unknown in bytes


def test_time_limit_forms(tmp_path):
    def with_limit(jid, limit):
        j = v38_job(job_id=jid)
        j["time"] = {**j["time"], "limit": limit}
        return j

    jobs = [with_limit(1, 4294967295), with_limit(2, 4294967294), with_limit(3, _v40(90)),
            with_limit(4, {"set": True, "infinite": True, "number": 0}), with_limit(5, 0)]
    got = _read(tmp_path, jobs).jobs.set_index("job_id")["time_limit_s"]
    assert got["3"] == 5400
    assert got[["1", "2", "4", "5"]].isna().all()


def test_states_and_exit_code_forms(tmp_path):
    jobs = [
        v38_job(job_id=1, state={"current": "CANCELLED by 1234", "reason": "None"}),
        v38_job(job_id=2, state={"current": ["CANCELLED"], "reason": "None"},
                exit_code={"status": ["SIGNALED"], "return_code": {"set": False, "infinite": False, "number": 0},
                           "signal": {"id": _v40(9), "name": "KILL"}}),
        v38_job(job_id=3, exit_code={"status": "SIGNALED", "return_code": 0, "signal": {"signal_id": 15}}),
        v38_job(job_id=4, exit_code={"status": "SIGNALED", "return_code": 0, "signal": {"id": 6, "name": "ABRT"}}),
        v38_job(job_id=5, state={"current": ["FAILED"], "reason": "None"},
                steps=[_step("batch", 1, total_mem=GIB, state=["OUT_OF_MEMORY"])]),
        v38_job(job_id=6, state={"current": ["COMPLETING"]}),
        v38_job(job_id=7, exit_code=(2 << 8)),  # raw wait status: exit 2
    ]
    got = _read(tmp_path, jobs).jobs.set_index("job_id")
    assert got.loc["1", "state"] == "CANCELLED"
    assert got.loc["2", "state"] == "CANCELLED"
    assert pd.isna(got.loc["2", "exit_code"]) and got.loc["2", "signal"] == 9
    assert got.loc["3", "signal"] == 15
    assert got.loc["4", "signal"] == 6
    assert got.loc["5", "state"] == "OUT_OF_MEMORY"
    assert got.loc["6", "state"] == "RUNNING"
    assert (got.loc["7", "exit_code"], got.loc["7", "signal"]) == (2, 0)


def test_array_and_het_identity(tmp_path):
    task = v38_job(job_id=2008, array={"job_id": 2000, "task_id": 7, "task": None})
    task40 = v38_job(job_id=2009, array={"job_id": 2000, "task_id": _v40(8), "task": ""})
    pending = v38_job(job_id=3000, array={"job_id": 3000, "task_id": 4294967294, "task": "1-3,5%2"},
                      state={"current": "PENDING"}, steps=[])
    het = v38_job(job_id=4001, het={"job_id": 4000, "job_offset": 1})
    het40 = v38_job(job_id=4000, het={"job_id": 4000, "job_offset": _v40(0)})
    res = _read(tmp_path, [task, task40, pending, het, het40])
    j = res.jobs
    assert list(j["job_id"]) == ["2000_7", "2000_8", "3000_1", "3000_2", "3000_3", "3000_5", "4000+1", "4000+0"]
    assert list(j["job_id_raw"]) == ["2008", "2009", "3000", "3000", "3000", "3000", "4001", "4000"]
    assert j["array_task_id"].tolist()[:6] == [7, 8, 1, 2, 3, 5]
    assert j["het_job_offset"].tolist()[6:] == [1, 0]
    assert j["source_line"].tolist() == [1, 2, 3, 3, 3, 3, 4, 5]
    assert j["caveats"].fillna("").str.contains("array_range_unexpanded").tolist() == [False, False] + [True] * 4 + [
        False, False]
    assert res.ledger.used == 5 and res.ledger.jobs_emitted == 8 and res.ledger.balanced


def test_step_memory_rules_and_cpu_from_steps(tmp_path):
    zero = {"seconds": 0, "microseconds": 0}
    base_time = {**v38_job()["time"], "total": zero, "user": zero, "system": zero}
    jobs = [
        # only MaxRSS-style max for a 4-task step on one node: max x 4 tasks, an upper bound, flagged
        v38_job(job_id=1, steps=[_step("0", 4, max_mem=3 * GIB)]),
        # average x tasks
        v38_job(job_id=2, steps=[_step("0", 4, ave_mem=GIB), _step("batch", 1, total_mem=2 * GIB)]),
        # job time.total zero: the steps' CPU time is summed (50+10 + 60+0)
        v38_job(job_id=3, time=base_time, steps=[_step("0", 1, total_mem=GIB, cpu=(50, 10)),
                                                 _step("1", 1, total_mem=GIB, cpu=(60, 0))]),
        # no usage anywhere: unknown, not zero
        v38_job(job_id=4, time=base_time, steps=[_step("batch", 1)]),
        # memory only from the batch step of a two-node job
        v38_job(job_id=5, steps=[_step("batch", 1, total_mem=GIB)]),
    ]
    got = _read(tmp_path, jobs).jobs.set_index("job_id")
    assert got.loc["1", "mem_peak_bytes"] == 12 * GIB and "maxrss_times_tasks" in got.loc["1", "caveats"]
    assert got.loc["2", "mem_peak_bytes"] == 4 * GIB
    assert got.loc["3", "cpu_used_s"] == 120.0
    assert pd.isna(got.loc["4", "cpu_used_s"]) and pd.isna(got.loc["4", "mem_peak_bytes"])
    assert "no_usage_fields" in got.loc["4", "caveats"]
    assert "maxrss_batch_only" in got.loc["5", "caveats"]


def test_jobstats_admin_comment(tmp_path):
    summary = {"gpus": 4, "total_time": 3600, "nodes": {
        "n01": {"cpus": 4, "total_memory": 64 * GIB, "used_memory": 5 * GIB, "total_time": 4000.0,
                "gpu_used_memory": {"0": 10 * GIB, "1": 12 * GIB}, "gpu_utilization": {"0": 80.0, "1": 60.0}},
        "n02": {"cpus": 4, "total_memory": 64 * GIB, "used_memory": 7 * GIB, "total_time": 3000.0,
                "gpu_used_memory": {"0": 1 * GIB, "1": 3 * GIB}, "gpu_utilization": {"0": 20.0, "1": 40.0}},
    }}
    good = v38_job(job_id=1, comment={"administrator": encode_jobstats(summary), "job": None, "system": None})
    bad = v38_job(job_id=2, comment={"administrator": "JS1:!!!not-base64", "job": None, "system": None})
    plain = v38_job(job_id=3, comment={"administrator": "moved to long queue", "job": None, "system": None})
    res = _read(tmp_path, [good, bad, plain])
    got = res.jobs.set_index("job_id")
    assert got.loc["1", "cpu_used_s"] == 7000.0
    assert got.loc["1", "mem_peak_bytes"] == 12 * GIB
    assert got.loc["1", "gpu_util_mean"] == pytest.approx(0.5)
    assert got.loc["1", "gpu_mem_peak_bytes"] == 26 * GIB
    assert "jobstats" in got.loc["1", "caveats"] and "no_gpu_telemetry" not in got.loc["1", "caveats"]
    # the corrupt payload is set aside; the job keeps its sacct usage
    assert got.loc["2", "cpu_used_s"] == pytest.approx(7300.5) and pd.isna(got.loc["2", "gpu_util_mean"])
    assert got.loc["3", "mem_peak_bytes"] == 10 * GIB
    assert res.ledger.used == 3 and res.ledger.quarantined == 0 and res.ledger.balanced
    assert [(r[1], r[2]) for r in res.quarantine.rows] == [(2, "comment.administrator")]
    assert res.quarantine.rows[0][3].startswith("jobstats base64")


# ---------------------------------------------------------------- corrupt records and files


def test_corrupt_records_are_quarantined_with_field_and_index(tmp_path):
    good = v38_job(job_id=1)
    no_id = v38_job()
    del no_id["job_id"]
    bad_step = v38_job(job_id=5)
    bad_step["steps"] = copy.deepcopy(bad_step["steps"])
    bad_step["steps"][1]["tres"]["requested"]["total"] = [{"type": "mem", "name": "", "id": 2, "count": "10G"}]
    jobs = [
        good,
        no_id,
        v38_job(job_id="abc"),
        "not a record",
        v38_job(job_id=2, time=5),
        v38_job(job_id=3, tres={"allocated": {"cpu": 8}, "requested": []}),
        v38_job(job_id=4, state={"current": ["WIBBLE"]}),
        bad_step,
        v38_job(job_id=6, steps="none"),
    ]
    res = _read(tmp_path, jobs)
    led = res.ledger
    rows = res.quarantine.rows
    assert led.balanced
    assert list(res.jobs["job_id"]) == ["1", "5"]
    by_line = {}
    for file, line, field, reason, raw in rows:
        assert file.endswith("jobs.json") and len(raw) <= 2000
        by_line.setdefault(line, []).append((field, reason))
    assert by_line[2][0] == ("job_id", "missing")
    assert by_line[3][0][0] == "job_id" and "abc" in by_line[3][0][1]
    assert by_line[4] == [("record", 'not an object: \'not a record\'')]
    assert by_line[5][0][0] == "time"
    assert by_line[6][0][0] == "tres.allocated"
    assert by_line[7][0] == ("state.current", "unknown state 'WIBBLE'")
    assert by_line[8] == [("steps[1].tres.requested.total[0].count", "not a number: '10G'")]
    assert by_line[9][0][0] == "steps"
    # every step of a quarantined job is quarantined with it
    assert len(by_line[2]) == 1 + 2 and by_line[2][1][0] == "steps[0]"
    # read = 9 records + their steps (2 each for dict records with list steps; record 4 and 9 have none)
    assert led.read == 9 + 2 * 7
    assert (led.used, led.folded) == (2, 2 + 1)
    assert led.quarantined == len(rows) == led.read - led.used - led.folded
    # the job with a bad step keeps the good step's memory
    assert res.jobs.set_index("job_id").loc["5", "mem_peak_bytes"] == GIB


def test_values_beyond_the_columns_are_quarantined_with_their_steps(tmp_path):
    huge = v38_job(job_id=9, tres={"allocated": [_t("cpu", 8), _t("mem", 2**60)], "requested": []})
    late = v38_job(job_id=10)
    late["time"] = {**late["time"], "end": 2**40}
    res = _read(tmp_path, [v38_job(job_id=8), huge, late])
    assert list(res.jobs["job_id"]) == ["8"]
    rows = [(r[1], r[2], r[3]) for r in res.quarantine.rows]
    assert rows[0] == (3, "time.end", f"out of range: {2**40}")
    assert (2, "alloc_mem_bytes", "value out of range for alloc_mem_bytes") in rows
    assert sum(1 for r in rows if r[0] == 2) == 3  # the job and its two steps
    led = res.ledger
    assert (led.read, led.used, led.folded, led.quarantined) == (9, 1, 2, 6) and led.balanced


def test_not_json_and_no_jobs_array_name_the_file(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"jobs": [ {"job_id": 1,')
    with pytest.raises(InputError, match="broken.json.*not JSON"):
        read_sacct_json(p)
    q = tmp_path / "other.json"
    q.write_text(json.dumps({"nodes": []}))
    with pytest.raises(InputError, match="other.json.*no 'jobs' array"):
        read_sacct_json(q)
    r = tmp_path / "list.json"
    r.write_text("[]")
    with pytest.raises(InputError, match="list.json"):
        read_sacct_json(r)
    with pytest.raises(InputError, match="missing.json"):
        read_sacct_json(tmp_path / "missing.json")


def test_gzip_input_and_empty_jobs(tmp_path):
    p = tmp_path / "jobs.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"jobs": [v38_job()]}).encode(), mtime=0))
    res = read_sacct_json(p)
    assert list(res.jobs["job_id"]) == ["1001"] and res.ledger.balanced
    empty = _read(tmp_path, [], "empty.json")
    assert empty.jobs.empty and list(empty.jobs.columns) == list(JOB_COLUMNS)
    assert (empty.ledger.read, empty.ledger.jobs_emitted) == (0, 0)


def test_cluster_user_and_account_fallbacks(tmp_path):
    res = _read(tmp_path, [v38_job(cluster=None, user=None, account="",
                                   association={"account": "chem", "cluster": "alpha", "user": "bob", "id": 3})])
    row = res.jobs.iloc[0]
    assert (row["cluster"], row["user"], row["account"]) == ("fallback", "bob", "chem")


# ---------------------------------------------------------------- property: damaged records never stop the run

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.profiles import examples  # noqa: E402

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(v, prefix=()):
    yield prefix
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _paths(x, prefix + (i,))


def _replace(v, path, new):
    if not path:
        return new
    v = copy.copy(v)
    v[path[0]] = _replace(v[path[0]], path[1:], new)
    return v


_TEMPLATE = v38_job()
_ALL_PATHS = list(_paths(_TEMPLATE))


@settings(max_examples=examples(150))
@given(st.lists(st.tuples(st.sampled_from(_ALL_PATHS), _json_values), min_size=1, max_size=3))
def test_damaged_records_are_accounted_for(tmp_path, damage):
    rec = _TEMPLATE
    for path, new in damage:
        try:
            rec = _replace(rec, path, new)
        except (KeyError, IndexError, TypeError):
            continue
    res = _read(tmp_path, [v38_job(job_id=7), rec])
    led = res.ledger
    assert led.balanced
    assert led.used >= 1 and "7" in set(res.jobs["job_id"])
    assert led.quarantined == sum(1 for r in res.quarantine.rows if not r[3].startswith("jobstats "))
    assert list(res.jobs.columns) == list(JOB_COLUMNS)
