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


def test_kth_without_procs_replays_the_pool_its_header_declares():
    """The header's ``MaxProcs: 100`` is the pool: the PROVENANCE reference without ``--procs``."""
    kth = trace("swf", "KTH-SP2-1996-2.1-cln.swf.gz")
    res = CliRunner().invoke(main, ["simulate", str(kth), "--policy", "fifo", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["mean_wait_s"] == pytest.approx(218_832.1, rel=1e-3)


def test_the_swf_header_pool_gives_the_hand_worked_easy_schedule(tmp_path):
    """PROVENANCE's hand-checkable EASY case on P = 4, read from the header instead of ``--procs 4``: jobs 1@0,
    3@2, 2@10, 4@15, so the waits are 0, 9, 0, 12."""
    f = tmp_path / "easy.swf"
    rows = [(1, 0, 2, 10, 10), (2, 1, 4, 5, 5), (3, 2, 2, 5, 5), (4, 3, 1, 20, 20)]
    f.write_text("; UnixStartTime: 1000000000\n; MaxProcs: 4\n" + "".join(
        f"{j} {s} -1 {r} {p} -1 -1 {p} {q} -1 1 1 1 -1 -1 1 -1 -1\n" for j, s, p, r, q in rows))
    res = CliRunner().invoke(main, ["simulate", str(f), "--policy", "easy", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    jobs = pd.read_parquet(tmp_path / "o" / "replay" / "jobs.parquet").sort_values("job_id")
    assert jobs["wait_s"].tolist() == [0, 9, 0, 12]


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
