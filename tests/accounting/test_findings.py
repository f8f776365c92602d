"""Findings on a hand-built month: one job planted per finding, each found, and nothing else flagged."""

from __future__ import annotations

import pytest

from audit.accounting.account import account_jobs
from audit.accounting.findings import FINDINGS, Thresholds

from .test_accounting import job, table

SHAPE = {"node_groups": [
    {"name": "cn", "partition": "cpu", "count": 4, "cpus": 16, "mem_gib": 64},
    {"name": "ga", "partition": "gpu", "count": 2, "cpus": 64, "mem_gib": 512, "gpus": 4, "gpu_type": "a100",
     "gpu_mem_gib": 80},
]}
H = 2.0  # every planted job runs two hours (over the 61-minute floor), but the failed one


def cpu(job_id, **kw):
    base = dict(hours=H, cpus=4, mem_gib=16, cpu_used_s=4 * H * 3600, peak_gib=12, limit_h=2.5, user=f"u{job_id}")
    base.update(kw)
    return job(job_id, **base)


def gpu(job_id, **kw):
    base = dict(hours=H, cpus=8, mem_gib=64, gpus=1, gpu_type="a100", cpu_used_s=8 * H * 3600, peak_gib=48, util=0.8,
                gpu_mem_peak_gib=60, partition="gpu", limit_h=2.5, user=f"u{job_id}")
    base.update(kw)
    return job(job_id, **base)


PLANTED = {
    "zero_gpu_util": gpu("10", util=0.0),
    "low_gpu_util": gpu("11", util=0.05),
    "gpu_memory_low": gpu("12", gpu_mem_peak_gib=5),
    "excess_cpu_memory": cpu("13", mem_gib=64, peak_gib=4),
    "excess_time_limit": cpu("14", limit_h=24),
    "serial_many_cores": cpu("15", cpus=8, cpu_used_s=H * 3600),
    "multinode_fewer_nodes": cpu("16", cpus=16, nodes=2, cpu_used_s=16 * H * 3600),
    "cores_per_gpu": gpu("17", cpus=32, cpu_used_s=32 * H * 3600),
    "memory_per_gpu": gpu("18", mem_gib=256, peak_gib=200),
    "failed_work": cpu("19", hours=1 / 6, state="FAILED", cpu_used_s=4 * 600, limit_h=1),
}
CLEAN = [cpu("1"), gpu("2")]


@pytest.fixture(scope="module")
def found():
    return account_jobs(table(*CLEAN, *PLANTED.values()), cluster_shape=SHAPE).findings


def test_every_finding_has_a_planted_job():
    assert set(PLANTED) == set(FINDINGS)


def test_each_planted_job_is_found_and_nothing_else(found):
    got = set(zip(found.jobs["finding"], found.jobs["job_id"], strict=True))
    assert got == {(name, row["job_id"]) for name, row in PLANTED.items()}


def test_table_counts_one_job_and_one_user_each(found):
    t = found.table.set_index("finding")
    assert (t["jobs"] == 1).all() and (t["users"] == 1).all()
    assert t.loc["zero_gpu_util", "resource_hours"] == pytest.approx(H)  # one GPU for two hours
    assert t.loc["low_gpu_util", "resource_hours"] == pytest.approx(H * 0.95)
    assert t.loc["serial_many_cores", "resource_hours"] == pytest.approx(7 * H)
    assert t.loc["multinode_fewer_nodes", "resource_hours"] == pytest.approx(H)  # one node too many
    assert t.loc["cores_per_gpu", "resource_hours"] == pytest.approx((32 - 16) * H)
    assert t.loc["memory_per_gpu", "resource_hours"] == pytest.approx((256 - 128) * H)
    assert t.loc["excess_time_limit", "resource_hours"] == pytest.approx(4 * 22)
    assert t.loc["excess_cpu_memory", "resource_hours"] == pytest.approx(60 * H)
    assert pd_isna(t.loc["excess_time_limit", "usd"]) and t.loc["zero_gpu_util", "usd"] > 0


def pd_isna(x) -> bool:
    return x is None or x != x


def test_failed_work_by_cause(found):
    c = found.by_cause.set_index("cause")
    assert c.loc["FAILED", "jobs"] == 1 and c["jobs"].sum() == 1


def test_thresholds_move_the_line():
    loose = Thresholds(low_gpu_util_below=0.01)
    f = account_jobs(table(*CLEAN, PLANTED["low_gpu_util"]), cluster_shape=SHAPE, thresholds=loose).findings
    assert "low_gpu_util" not in set(f.jobs["finding"])


def test_without_the_cluster_shape_the_shape_findings_are_not_measured():
    f = account_jobs(table(*CLEAN, *PLANTED.values())).findings.table.set_index("finding")
    for name in ("multinode_fewer_nodes", "cores_per_gpu", "memory_per_gpu"):
        assert pd_isna(f.loc[name, "measured_jobs"]) and f.loc[name, "jobs"] == 0


def test_a_hand_built_store_through_the_files_and_the_report(tmp_path):
    """The planted month written as a store, accounted from disk as ``reclaim account`` does, and reported:
    findings_jobs.csv holds each planted job under its finding and nothing else, and the report's findings
    table shows one job for each."""
    import csv

    from audit.accounting import account
    from audit.config import ReportConfig
    from audit.ledger import Quarantine
    from audit.store import write_store
    from reports.document import write_report

    store = tmp_path / "store"
    write_store(store, table(*CLEAN, *PLANTED.values()), {"files": [], "totals": {}, "balanced": True}, Quarantine())
    account(store, cluster_shape=SHAPE)
    with open(store / "findings_jobs.csv", newline="", encoding="utf-8") as fh:
        got = {(r["finding"], r["job_id"]) for r in csv.DictReader(fh)}
    assert got == {(name, row["job_id"]) for name, row in PLANTED.items()}
    with open(store / "findings.csv", newline="", encoding="utf-8") as fh:
        assert {r["finding"]: r["jobs"] for r in csv.DictReader(fh)} == {name: "1" for name in PLANTED}
    write_report(store, ReportConfig(pages=("summary", "findings")), {"generated_at": "2026-01-01T00:00:00+00:00"})
    with open(store / "tables" / "findings.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    jobs = rows[0].index("jobs")
    assert len(rows) - 1 == len(PLANTED) and all(r[jobs] == "1" for r in rows[1:])
    html = (store / "report.html").read_text(encoding="utf-8")
    assert all(FINDINGS[name][0] in html for name in PLANTED)
