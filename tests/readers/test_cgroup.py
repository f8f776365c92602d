"""cgroup trees of Slurm jobs: the exporter's published values for the real fixture tree (PROVENANCE.md and
treydock/cgroup_exporter's own tests), exporter text with cgroup paths, and the join to jobs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from audit.job_table import conform
from audit.readers.cgroup import count_cpus, parse_ttar, read_cgroup
from audit.readers.detect import detect_format
from audit.readers.prometheus import read_prometheus
from audit.telemetry.join import join_telemetry

TTAR = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "cgroup" / "fixtures.ttar"


@pytest.fixture(scope="module")
def tree():
    if not TTAR.exists():
        pytest.skip("shared cgroup fixture absent")
    r = read_cgroup(TTAR)
    t = r.telemetry
    return r, {(c, ver, m): v for c, ver, m, v in zip(t["cgroup"], t["resource"], t["metric"], t["value"], strict=True)}


def test_detected():
    if not TTAR.exists():
        pytest.skip("shared cgroup fixture absent")
    assert detect_format(TTAR) == "cgroup-ttar"


def test_ledger_balanced(tree):
    r, _ = tree
    led = r.ledger
    assert led.balanced and led.quarantined == 0
    # jobs 10 and 11 (v1), job 4 (v2), one Torque job, the user slice in both hierarchies
    assert led.used == 6 and led.folded == led.read - 6 > 0


def test_v1_job_10_exact(tree):
    _, v = tree
    job = "/slurm/uid_20821/job_10"
    assert v[(job, "cgroup-v1", "cgroup_cpu_total_seconds")] == 0.007710215
    assert v[(job, "cgroup-v1", "cgroup_memory_used_bytes")] == 356_352
    assert v[(job, "cgroup-v1", "cgroup_memory_total_bytes")] == 2_147_483_648
    assert v[(job, "cgroup-v1", "cgroup_cpus")] == 2


def test_v2_user_slice_exact(tree):
    _, v = tree
    s = "/user.slice/user-20821.slice"
    assert v[(s, "cgroup-v2", "cgroup_cpu_user_seconds")] == 15.270449
    assert v[(s, "cgroup-v2", "cgroup_cpu_system_seconds")] == 2.705424
    assert v[(s, "cgroup-v2", "cgroup_cpu_total_seconds")] == 17.975873
    assert v[(s, "cgroup-v2", "cgroup_memory_used_bytes")] == 27_115_520
    assert v[(s, "cgroup-v2", "cgroup_memory_rss_bytes")] == 22_626_304
    assert v[(s, "cgroup-v2", "cgroup_memory_total_bytes")] == 2_147_483_648
    assert v[(s, "cgroup-v2", "cgroup_memsw_total_bytes")] == 2.0**64


def test_v2_slurm_job_4_exact(tree):
    # the exporter's TestCollectv2SLURM values
    _, v = tree
    j = "/system.slice/slurmstepd.scope/job_4"
    got = {m: v[(j, "cgroup-v2", m)] for m in ("cgroup_cpu_user_seconds", "cgroup_cpu_system_seconds",
                                               "cgroup_cpu_total_seconds", "cgroup_cpus", "cgroup_memory_rss_bytes",
                                               "cgroup_memory_used_bytes", "cgroup_memory_total_bytes",
                                               "cgroup_memsw_total_bytes")}
    assert got == {"cgroup_cpu_user_seconds": 0.049043, "cgroup_cpu_system_seconds": 0.077642,
                   "cgroup_cpu_total_seconds": 0.126686, "cgroup_cpus": 1, "cgroup_memory_rss_bytes": 2_777_088,
                   "cgroup_memory_used_bytes": 5_660_672, "cgroup_memory_total_bytes": 1_835_008_000,
                   "cgroup_memsw_total_bytes": 1_835_008_000}


def test_job_labels(tree):
    r, _ = tree
    t = r.telemetry
    assert set(t["job_label"].dropna()) == {"10", "11", "4", "1182724"}


def test_cpuset_and_ttar_parsing():
    assert count_cpus("0-1,4,8-11\n") == 7 and count_cpus("") == 0
    files, dirs = parse_ttar("Directory: r\nMode: 755\n# ttar - -\nPath: r/a\nLines: 2\nx 1\ny 2\nMode: 644\n"
                             "# ttar - -\nPath: r/b\nLines: 0\nMode: 644\n")
    assert files == {"r/a": "x 1\ny 2", "r/b": ""} and dirs == {"r": 1}


EXPORTER_TEXT = """# HELP cgroup_cpu_total_seconds Cumulative CPU usage in seconds
# TYPE cgroup_cpu_total_seconds gauge
cgroup_cpu_total_seconds{cgroup="/slurm/uid_20821/job_10",role="",step="",task=""} 1200.5 1700000000000
cgroup_cpu_total_seconds{cgroup="/slurm/uid_20821/job_10",role="",step="",task=""} 3600.25 1700000600000
cgroup_cpu_total_seconds{cgroup="/slurm/uid_20821/job_10/step_batch",role="",step="batch",task=""} 3500 1700000600000
# HELP cgroup_memory_rss_bytes Memory RSS used in bytes
# TYPE cgroup_memory_rss_bytes gauge
cgroup_memory_rss_bytes{cgroup="/slurm/uid_20821/job_10",jobid="10",step="",task=""} 2.5e+09 1700000000000
cgroup_memory_rss_bytes{cgroup="/slurm/uid_20821/job_10",jobid="10",step="",task=""} 4e+09 1700000600000
"""


def test_exporter_text_joins_to_job(tmp_path):
    p = tmp_path / "cgroup.prom"
    p.write_text(EXPORTER_TEXT)
    assert detect_format(p) == "prometheus-text"
    r = read_prometheus(p)
    assert r.ledger.balanced and r.ledger.used == 5 and r.ledger.structural == 4
    assert sorted(r.telemetry["job_label"].unique()) == ["10", "10.batch"]
    jobs = conform(pd.DataFrame([{"job_id": "10", "job_id_raw": "10", "cluster": "c", "alloc_cpus": 2,
                                  "elapsed_s": 600, "start_time": pd.Timestamp(1_699_999_990, unit="s", tz="UTC"),
                                  "end_time": pd.Timestamp(1_700_000_590, unit="s", tz="UTC")}]))
    out = join_telemetry(jobs, r.telemetry)
    row = out.jobs.iloc[0]
    # a job-level counter counted from zero (the cgroup is created with the job); the step series is not added
    assert row.cpu_used_s == pytest.approx(3600.25)
    assert row.mem_peak_bytes == 4_000_000_000 and "telemetry" in row.caveats


def test_damaged_tree_is_quarantined_with_its_line(tmp_path):
    text = ("Directory: fx\nMode: 755\n# ttar - -\nDirectory: fx/cpuacct\nMode: 755\n# ttar - -\n"
            "Directory: fx/cpuacct/slurm\nMode: 755\n# ttar - -\n"
            "Directory: fx/cpuacct/slurm/uid_5\nMode: 755\n# ttar - -\n"
            "Directory: fx/cpuacct/slurm/uid_5/job_7\nMode: 755\n# ttar - -\n"
            "Path: fx/cpuacct/slurm/uid_5/job_7/cpuacct.usage\nLines: 1\nnot-a-number\nMode: 644\n# ttar - -\n"
            "Directory: fx/cpuacct/slurm/uid_5/job_8\nMode: 755\n# ttar - -\n"
            "Path: fx/cpuacct/slurm/uid_5/job_8/cpuacct.usage\nLines: 1\n2500000000\nMode: 644\n# ttar - -\n")
    p = tmp_path / "t.ttar"
    p.write_text(text)
    r = read_cgroup(p)
    assert (r.ledger.read, r.ledger.used, r.ledger.quarantined) == (2, 1, 1) and r.ledger.balanced
    assert r.quarantine.rows[0][1:3] == (13, "/slurm/uid_5/job_7")
    t = r.telemetry
    assert t[(t.metric == "cgroup_cpu_total_seconds")]["value"].tolist() == [2.5]


def test_cgroup_cpu_replaces_a_totalcpu_zero_artefact(tmp_path):
    p = tmp_path / "cgroup.prom"
    p.write_text(EXPORTER_TEXT)
    jobs = conform(pd.DataFrame([{"job_id": "10", "job_id_raw": "10", "cluster": "c", "alloc_cpus": 8,
                                  "elapsed_s": 600, "cpu_used_s": 0.0, "mem_peak_bytes": 1,
                                  "caveats": "totalcpu_zero",
                                  "start_time": pd.Timestamp(1_699_999_990, unit="s", tz="UTC"),
                                  "end_time": pd.Timestamp(1_700_000_590, unit="s", tz="UTC")}]))
    row = join_telemetry(jobs, read_prometheus(p).telemetry).jobs.iloc[0]
    assert row.cpu_used_s == pytest.approx(3600.25) and row.caveats == "telemetry"
    assert row.mem_peak_bytes == 1  # a known peak is kept
