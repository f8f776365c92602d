"""``reclaim simulate``: the CLI over the simulator reproduces the PROVENANCE reference and writes its replay."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from audit.cli import main

from ..conftest import ROOT, trace


def test_kth_fifo_mean_wait_matches_reference():
    kth = trace("swf", "KTH-SP2-1996-2.1-cln.swf.gz")
    res = CliRunner().invoke(main, ["simulate", str(kth), "--procs", "100", "--policy", "fifo", "--json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    assert m["jobs"] == 27_992 and m["policy"] == "fifo"
    assert m["mean_wait_s"] == pytest.approx(218_832.1, rel=1e-3)  # PROVENANCE.md reference replay


def test_week_replay_writes_records(tmp_path):
    res = CliRunner().invoke(main, ["simulate", str(ROOT / "sample_traces" / "week"), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    jobs = pd.read_parquet(tmp_path / "replay" / "jobs.parquet")
    metrics = json.loads((tmp_path / "replay" / "metrics.json").read_text())
    assert len(jobs) == metrics["jobs"] == 2_500
    started = jobs["start_s"].notna()
    assert (jobs.loc[started, "start_s"] >= jobs.loc[started, "submit_s"]).all()
    assert metrics["mean_wait_s"] == pytest.approx(jobs.loc[started, "wait_s"].mean())


def test_missing_cluster_shape_is_a_clear_error(tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("JobID|State|Submit|Start|End|Elapsed|NCPUS\n1|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:00|"
                 "2024-01-01T00:10:00|00:10:00|1\n")
    res = CliRunner().invoke(main, ["simulate", str(f)])
    assert res.exit_code == 2 and "--cluster-shape" in res.output
