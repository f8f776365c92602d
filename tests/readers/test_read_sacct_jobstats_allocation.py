"""Issue 14, item 3: a jobstats (JS1) summary's usage is a share of its own allocation; values worked by hand."""

from __future__ import annotations

from audit.accounting import account_jobs
from audit.accounting.efficiency import efficiency
from audit.readers.jobstats import encode_jobstats
from audit.readers.sacct.text import read_sacct

GIB = 2**30
MIB = 2**20
# the AdminComment published in the jdh4/jobstats README: one node, 8 cores, 64 GiB, 28338.0 CPU s, no total_time
PUBLISHED = (
    "JS1:H4sIACj7KWIC/1XNQQrCMBCF4bvMOkonIzNpLyOhGUVIGmnSRSm5u1FEcPt/PN4BSw5aYDogaIz+tNoZF+R3qLn6eE2a8rrDxE5wvAgLsYGtaPiJ"
    "FbRCxCMP5juqj6QdHJE79zg/t37hWvt34gEN3D9487FoewEKn+eojwAAAA=="
)
HEADER = "JobID|State|NNodes|AllocCPUS|ReqMem|AllocTRES|Elapsed|TotalCPU|AdminComment"


def _read(tmp_path, rows):
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return read_sacct(f).jobs.set_index("job_id")


def test_published_summary_against_a_disagreeing_sacct_line(tmp_path):
    # The published summary: 8 CPUs, total_time 3601 s, 28,338 CPU s.  The sacct line says 8 CPUs for 00:17:28
    # (1,048 s): divided by sacct's allocation that is 28338 / (8 x 1048) = 338 %.  Its own allocation gives
    # 28338 / (8 x 3601) = 0.983685, and cpu_used_s is that share of sacct's 8 x 1048 core-s = 8247.22 s
    jobs = _read(tmp_path, [f"1|COMPLETED|1|8|64Gn|cpu=8,mem=64G,node=1|00:17:28|00:10:00|{PUBLISHED}"])
    j = jobs.loc["1"]
    assert round(28338 / (8 * 1048), 2) == 3.38
    assert j["cpu_used_s"] == 28338 / (8 * 3601) * 8 * 1048
    assert round(j["cpu_used_s"], 2) == 8247.22
    cav = j["caveats"].split(";")
    assert "jobstats" in cav and "jobstats_disagrees" in cav  # 3601 s against 1048 s
    eff = efficiency(jobs.reset_index())
    assert round(eff["cpu_eff"].iat[0], 6) == 0.983685 and not eff["usage_exceeds_allocation"].iat[0]
    assert j["mem_peak_bytes"] == 27127336960  # bytes are bytes: the cgroup's peak
    assert j["alloc_gpus"] == 0  # AllocTRES lists no GPU, and "gpus": false in the summary neither


def test_summary_cpus_disagreeing(tmp_path):
    # sacct says 2 CPUs for 01:00:01 (3,601 s); the summary 8 CPUs: share 0.983685 of 2 x 3601 core-s
    jobs = _read(tmp_path, [f"1|COMPLETED|1|2|64Gn|cpu=2,mem=64G,node=1|01:00:01|00:10:00|{PUBLISHED}"])
    j = jobs.loc["1"]
    assert j["cpu_used_s"] == 28338 / (8 * 3601) * 2 * 3601 == 7084.5
    assert "jobstats_disagrees" in j["caveats"]


def test_summary_agreeing_within_one_percent(tmp_path):
    # 2 nodes x 4 CPUs, total_time 3600 (sacct 3,630 s: 0.83 % apart): no disagreement; share
    # (1000 + 2600) / (8 x 3600) = 0.125, cpu_used_s = 0.125 x 8 x 3630 = 3630.0
    js = encode_jobstats({"total_time": 3600, "nodes": {
        "a": {"cpus": 4, "total_memory": 8 * GIB, "used_memory": 2 * GIB, "total_time": 1000.0},
        "b": {"cpus": 4, "total_memory": 8 * GIB, "used_memory": 3 * GIB, "total_time": 2600.0}}})
    jobs = _read(tmp_path, [f"2|COMPLETED|2|8|8Gn|cpu=8,mem=16G,node=2|01:00:30|00:10:00|{js}"])
    j = jobs.loc["2"]
    assert j["cpu_used_s"] == 3630.0
    assert j["mem_peak_bytes"] == 5 * GIB and j["req_mem_bytes"] == 16 * GIB
    assert j["caveats"] == "jobstats"


def test_elapsed_disagreement(tmp_path):
    js = encode_jobstats({"total_time": 1000, "nodes": {"a": {"cpus": 4, "used_memory": GIB, "total_time": 2000.0}}})
    jobs = _read(tmp_path, [f"3|COMPLETED|1|4|4Gn|cpu=4,mem=4G,node=1|00:20:00|00:10:00|{js}"])
    j = jobs.loc["3"]
    # share 2000 / (4 x 1000) = 0.5 of sacct's 4 x 1200 s: 2400 s; 1000 s against 1200 s disagree
    assert j["cpu_used_s"] == 2400.0 and "jobstats_disagrees" in j["caveats"]


def test_gpu_job_without_alloctres_takes_the_summary_gpus(tmp_path):
    gpu = {str(k): 50.0 for k in range(8)}
    js = encode_jobstats({"gpus": 8, "total_time": 3600, "nodes": {"g": {
        "cpus": 16, "total_memory": 256 * GIB, "used_memory": 100 * GIB, "total_time": 3600.0 * 8,
        "gpu_utilization": gpu, "gpu_used_memory": {str(k): 10 * GIB for k in range(8)}}}})
    f = tmp_path / "sacct.txt"
    f.write_text("JobID|State|NNodes|AllocCPUS|ReqMem|Elapsed|TotalCPU|AdminComment\n"
                 f"4|COMPLETED|1|16|256Gn|01:00:00|08:00:00|{js}\n", encoding="utf-8")
    j = read_sacct(f).jobs.set_index("job_id").loc["4"]
    assert j["alloc_gpus"] == 8 and j["req_gpus"] == 8
    assert j["gpu_util_mean"] == 0.5 and j["gpu_mem_peak_bytes"] == 80 * GIB
    # accounted: 8 GPUs x 3600 s = 28,800 GPU-s allocated, half used
    acc = account_jobs(read_sacct(f).jobs)
    assert acc.waste["gpu_s_alloc"].iat[0] == 28800 and acc.waste["gpu_s_used"].iat[0] == 14400


def test_ambiguous_reqmem_resolved_by_total_memory(tmp_path):
    # ReqMem 32G without c/n on a 2-node job: the summary's cgroups hold 2 x 16 GiB = 32 GiB in all
    js = encode_jobstats({"total_time": 600, "nodes": {
        "a": {"cpus": 2, "total_memory": 16 * GIB, "used_memory": 4 * GIB, "total_time": 600.0},
        "b": {"cpus": 2, "total_memory": 16 * GIB, "used_memory": 4 * GIB, "total_time": 600.0}}})
    f = tmp_path / "sacct.txt"
    f.write_text("JobID|State|NNodes|AllocCPUS|ReqMem|Elapsed|TotalCPU|AdminComment\n"
                 f"5|COMPLETED|2|4|16G|00:10:00|00:20:00|{js}\n", encoding="utf-8")
    j = read_sacct(f).jobs.set_index("job_id").loc["5"]
    assert j["req_mem_bytes"] == 32 * GIB  # not 16 GiB taken as the job total
    assert j["caveats"] == "jobstats;reqmem_from_jobstats"


def test_usage_above_allocation_is_flagged_counted_and_left_out(tmp_path):
    # job 6: TotalCPU 03:00:00 on 1 CPU for 01:00:00 = 300 %; job 7: 50 %
    f = tmp_path / "sacct.txt"
    f.write_text("JobID|State|NNodes|AllocCPUS|ReqMem|Elapsed|TotalCPU\n"
                 "6|COMPLETED|1|1|1000Mn|01:00:00|03:00:00\n7|COMPLETED|1|2|1000Mn|01:00:00|01:00:00\n",
                 encoding="utf-8")
    acc = account_jobs(read_sacct(f).jobs)
    eff = acc.efficiency.set_index("job_id")
    assert eff.loc["6", "usage_exceeds_allocation"] and not eff.loc["7", "usage_exceeds_allocation"]
    dist = acc.summary["efficiency_distribution"]["cpu_eff"]
    assert dist["known"] == 1 and dist["exceeds_allocation"] == 1 and dist["p50"] == 0.5
    q = {r["caveat"]: r["jobs"] for r in acc.summary["caveats"]}
    assert q["usage_exceeds_allocation"] == 1


def test_json_reader_uses_the_same_rule(tmp_path):
    from tests.readers.test_read_sacct_json import _read as read_json
    from tests.readers.test_read_sacct_json import _t, v38_job

    # sacct --json: 8 CPUs for 3,600 s, no GPU in its TRES; the summary 8 CPUs, 3601 s, 4 GPUs:
    # share 28000 / (8 x 3601) of 8 x 3600 core-s = 27992.22 s; 3600 against 3601 s is within 1 %
    js = encode_jobstats({"gpus": 4, "total_time": 3601, "nodes": {"g": {
        "cpus": 8, "total_memory": 64 * GIB, "used_memory": 8 * GIB, "total_time": 28000.0,
        "gpu_utilization": {"0": 20.0, "1": 40.0, "2": 60.0, "3": 80.0}}}})
    tres = [_t("cpu", 8), _t("mem", 32000), _t("node", 1)]
    job = v38_job(job_id=7, allocation_nodes=1, tres={"allocated": tres, "requested": tres},
                  comment={"administrator": js, "job": None, "system": None})
    j = read_json(tmp_path, [job]).jobs.set_index("job_id").loc["7"]
    assert round(j["cpu_used_s"], 2) == round(28000 / (8 * 3601) * 8 * 3600, 2) == 27992.22
    assert j["alloc_gpus"] == 4 and j["gpu_util_mean"] == 0.5
    assert "jobstats_disagrees" not in (j["caveats"] or "")
