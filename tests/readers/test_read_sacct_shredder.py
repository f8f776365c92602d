"""The sacct text reader against Open XDMoD shredder's expected parses of the same lines."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from audit.readers.sacct.text import read_sacct

from ..conftest import trace

SHRED = ("sacct", "xdmod-shredder")


def _epoch(ts) -> int | None:
    return None if pd.isna(ts) else int(pd.Timestamp(ts).timestamp())


def _norm_state(s: str) -> str:
    return "CANCELLED" if s.startswith("CANCELLED") else s


def test_accounting_logs_match_shredder_output():
    src = trace(*SHRED, "shredder-input", "accounting-logs.log")
    expected = json.loads(trace(*SHRED, "shredder-output", "accounting-logs.json").read_text())
    r = read_sacct(src)
    assert r.ledger.balanced and r.ledger.quarantined == 0
    jobs = r.jobs.set_index("job_id")
    assert len(jobs) == len(expected)
    for exp in expected:
        row = jobs.loc[exp["job_id"]]
        assert row["job_id_raw"] == exp["job_id_raw"]
        assert _epoch(row["submit_time"]) == exp["submit_time"]
        assert _epoch(row["eligible_time"]) == exp["eligible_time"]
        assert _epoch(row["start_time"]) == exp["start_time"]
        assert _epoch(row["end_time"]) == exp["end_time"]
        assert row["elapsed_s"] == exp["elapsed"]
        assert (None if pd.isna(row["time_limit_s"]) else int(row["time_limit_s"])) == exp["timelimit"]
        assert row["alloc_cpus"] == int(exp["ncpus"])
        assert row["alloc_nodes"] == int(exp["nnodes"])
        assert row["req_cpus"] == int(exp["req_cpus"])
        assert row["alloc_gpus"] == exp["ngpus"]
        assert row["state"] == _norm_state(exp["state"])
        assert f"{row['exit_code']}:{row['signal']}" == exp["exit_code"]
        assert row["user"] == exp["user_name"] and row["account"] == exp["account_name"]
        assert row["job_name"] == exp["job_name"]
        assert row["node_list"] == exp["node_list"]
        assert (row["partition"] if not pd.isna(row["partition"]) else "") == exp["partition_name"]


def test_array_ranges_expand_like_shredder():
    src = trace(*SHRED, "shredder-input", "accounting-logs-with-job-arrays.log")
    expected = json.loads(trace(*SHRED, "shredder-output", "accounting-logs-with-job-arrays.json").read_text())
    r = read_sacct(src)
    assert r.ledger.balanced and r.ledger.used == len(expected)
    got = r.jobs.groupby("source_line", sort=True)["array_task_id"].apply(list).tolist()
    assert got == expected
    assert (r.jobs["array_job_id"] == 4103947).all()
    assert r.ledger.jobs_emitted == sum(len(x) for x in expected)


def test_unknown_states_are_quarantined_not_dropped():
    r = read_sacct(trace(*SHRED, "shredder-input", "unknown-job-state.log"))
    assert r.ledger.read == 2 and r.ledger.quarantined == 2 and r.ledger.balanced
    assert [q[2] for q in r.quarantine.rows] == ["State", "State"]
    assert [q[1] for q in r.quarantine.rows] == [1, 2]
    assert "FOO" in r.quarantine.rows[0][3]


def test_non_ended_jobs_are_kept_with_their_state():
    # shredder skips them; an audit keeps them (they hold resources) and says what they are
    r = read_sacct(trace(*SHRED, "shredder-input", "non-ended-job-state.log"))
    assert r.jobs["state"].tolist() == ["RUNNING", "PENDING"]
    assert pd.isna(r.jobs["start_time"].iloc[1])


def test_utf8_job_names():
    expected = json.loads(trace(*SHRED, "shredder-output", "utf8-multibyte-chars.json").read_text())
    r = read_sacct(trace(*SHRED, "shredder-input", "utf8-multibyte-chars.log"))
    assert r.jobs["job_name"].tolist() == [e["job_name"] for e in expected]


def test_alloc_tres_gpu_counts(tmp_path):
    cases = json.loads(trace(*SHRED, "alloc-tres-gpu-count.json").read_text())
    lines = ["JobID|State|AllocTRES"] + [f"{i + 1}|COMPLETED|{tres}" for i, (tres, _) in enumerate(cases)]
    f = tmp_path / "tres.txt"
    f.write_text("\n".join(lines) + "\n")
    r = read_sacct(f)
    assert r.jobs["alloc_gpus"].tolist() == [n for _, n in cases]
    assert r.jobs["gpu_type"].tolist()[6:] == ["p100", "volta", "tesla"]


@pytest.mark.parametrize("name", ["phillips.log"])
def test_phillips_headerless_order(name):
    r = read_sacct(trace("sacct", name))
    assert r.ledger.balanced and r.ledger.read == 4285 and r.ledger.quarantined == 0
    first = r.jobs.iloc[0]
    assert first["job_id"] == "163485" and first["state"] == "CANCELLED"
    assert first["elapsed_s"] == 10 * 86400 + 13 * 3600 + 27 * 60 + 6
    assert first["time_limit_s"] == 37 * 86400 + 14 * 3600
    assert first["alloc_gpus"] == 2 and first["req_mem_bytes"] == 31000 * 2**20
    # legacy per-CPU flag: 2147486648Mn = 3000 MB per CPU x 8 CPUs (ReqTRES says mem=24000M)
    legacy = r.jobs[r.jobs["job_id"] == "167758"].iloc[0]
    assert legacy["req_mem_bytes"] == 24000 * 2**20
    assert "no_usage_fields" in first["caveats"]
    assert r.jobs["cpu_used_s"].isna().all()  # no usage columns: unknown, not zero
