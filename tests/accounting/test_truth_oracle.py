"""End-to-end oracle: the committed one-week sample, ingested and accounted by our pipeline, reproduces the
generator's planted totals (truth.json, computed from its internal records, not by our readers)."""

from __future__ import annotations

import json

import pytest

from audit.accounting.account import account_jobs
from audit.ingest import read_inputs

from ..conftest import ROOT

WEEK = ROOT / "sample_traces" / "week"
TOL = 0.005


@pytest.fixture(scope="module")
def accounted():
    if not (WEEK / "sacct.txt").exists():
        pytest.skip("sample_traces/week not generated")
    ing = read_inputs([WEEK])
    return ing, account_jobs(ing.jobs, cluster_shape=ing.cluster_shape), json.loads((WEEK / "truth.json").read_text())


def test_ledger_balanced_nothing_quarantined(accounted):
    ing, _, _ = accounted
    assert ing.ledger["balanced"] and ing.ledger["totals"]["quarantined"] == 0
    assert ing.cluster_shape is not None and ing.cluster_shape.name == "cluster.toml"


@pytest.mark.parametrize("key", ["core_hours_alloc", "core_hours_used", "mem_gib_hours_alloc", "mem_gib_hours_peak",
                                 "gpu_hours_alloc", "gpu_hours_used"])
def test_totals_match_truth(accounted, key):
    _, acc, truth = accounted
    assert acc.summary[key] == pytest.approx(truth["totals"][key], rel=TOL)


def test_job_count_and_failed_work_match_truth(accounted):
    _, acc, truth = accounted
    assert acc.summary["jobs"] == truth["totals"]["jobs"]
    for state, hours in truth["failed_hours_by_state"].items():
        assert acc.summary["failed_hours_by_state"][state] == pytest.approx(hours, rel=TOL, abs=1e-6)


def test_per_account_core_hours_match_truth(accounted):
    _, acc, truth = accounted
    by = acc.aggregates["account"]
    leaf = by.set_index("account_path")["core_hours_alloc"]
    for account, t in truth["per_account"].items():
        assert leaf[account] == pytest.approx(t["core_hours_alloc"], rel=TOL)
