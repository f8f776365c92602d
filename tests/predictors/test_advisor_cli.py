"""``reclaim predict SCRIPT --history STORE`` and ``reclaim predict fit STORE`` as a user and a submit wrapper
run them: scheduler units, JSON with units, exit codes, a model fitted once and loaded after."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from predictors.cli import predict

from .histories import group, history, script


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(5)
    jobs = history(group(rng, "bg1", "sim", 400, limit_s=8 * 3600, cpus=8, mem_gib=32),
                   group(rng, "bg2", "assembly", 400, limit_s=2 * 3600, cpus=2, mem_gib=8),
                   group(rng, "alice", "relax", 200, limit_s=48 * 3600, cpus=16, mem_gib=64, time_use=(0.2, 0.5),
                         mem_use=(0.1, 0.3), cores_busy=(0.4, 0.6)),
                   group(rng, "bob", "relax", 150, limit_s=3600, time_use=(0.95, 1.0)))
    out = tmp_path_factory.mktemp("store")
    jobs.to_parquet(out / "jobs.parquet")
    res = CliRunner().invoke(predict, ["fit", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "model" / "manifest.json").exists() and "advisor model" in res.output
    return out


def _run(store, text, *args, tmp_path, name="job.sh"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return CliRunner().invoke(predict, [str(path), "--history", str(store), *args])


ALICE = script("--job-name=relax_7", "-t 2-00:00:00", "--mem=64G", "-c 16", body="srun relax.x in_7")


def test_human_output_in_scheduler_units(store, tmp_path):
    res = _run(store, ALICE, "--user", "alice", tmp_path=tmp_path)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "asked" in out and "p50" in out and "p99" in out and "suggested" in out and "risk of what was asked" in out
    assert "2-00:00:00" in out and "64G" in out
    assert not re.search(r"\de[+-]\d", out)  # never scientific notation
    assert re.search(r"#SBATCH --time=\d+(-\d\d)?:\d\d:00 +line 3 +frees", out)
    assert re.search(r"#SBATCH --mem=\d+G +line 4 +frees \d+G per job", out)
    assert re.search(r"#SBATCH --cpus-per-task=\d+ +line 5 +frees \d+ CPUs", out)
    assert "Rests on: 200 of alice's past relax_# jobs" in out


def test_json_for_agents(store, tmp_path):
    res = _run(store, ALICE, "--user", "alice", "--json", tmp_path=tmp_path)
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["units"] == {"walltime": "seconds", "memory": "bytes", "cpus": "CPUs"}
    w, m, c = (d["resources"][k] for k in ("walltime", "memory", "cpus"))
    assert w["asked"] == 48 * 3600 and m["asked"] == 64 * 2**30 and c["asked"] == 16
    assert w["p50"] <= w["p90"] <= w["p99"] and m["p50"] <= m["p90"] <= m["p99"]
    assert m["suggested"] >= m["p90"] and m["suggested_text"].endswith("G")
    assert all(line.startswith("#SBATCH --") for line in d["suggested"])
    assert {c["option"] for c in d["changes"]} == {"time", "mem", "cpus-per-task"}
    ev = d["evidence"]
    assert (ev["user_jobs"], ev["user_family_jobs"], ev["family_jobs"]) == (200, 200, 350)
    assert d["warnings"] == [] and d["exit_code"] == 0


def test_a_warning_at_the_risk_exits_3(store, tmp_path):
    res = _run(store, script("-J relax_1", "-t 60", "-c 4", "--mem=16G"), "--user", "bob", "--json",
               tmp_path=tmp_path)
    assert res.exit_code == 3, res.output
    d = json.loads(res.output)
    assert [w["code"] for w in d["warnings"]] == ["TIMEOUT_RISK"] and d["warnings"][0]["blocking"]
    # a lower chosen level tolerates more risk: bob's risk stays above 1 - 0.5 only if it is above a half
    low = json.loads(_run(store, script("-J relax_1", "-t 60", "-c 4", "--mem=16G"), "--user", "bob", "--json",
                          "--risk", "0.5", tmp_path=tmp_path).output)
    r = low["resources"]["walltime"]["asked_risk"]
    assert low["exit_code"] == (3 if r > 0.5 else 0)


def test_command_line_options_override_the_script(store, tmp_path):
    res = _run(store, ALICE, "--user", "alice", "--json", "--", "--time=4:00:00", "-c", "2", tmp_path=tmp_path)
    d = json.loads(res.output)
    assert d["resources"]["walltime"]["asked"] == 4 * 3600 and d["resources"]["cpus"]["asked"] == 2


def test_a_line_slurm_rejects_is_named(store, tmp_path):
    res = _run(store, script("-t 60", "--mem=4.5G"), tmp_path=tmp_path, name="bad.sh")
    assert res.exit_code == 2
    assert "bad.sh: line 3: invalid memory size --mem=4.5G" in res.output


def test_kubernetes_manifest(store, tmp_path):
    manifest = """\
apiVersion: batch/v1
kind: Job
metadata: {name: relax-7, namespace: chem}
spec:
  activeDeadlineSeconds: 172800
  template:
    metadata: {labels: {user: alice}}
    spec:
      containers:
      - name: relax
        command: [relax.x]
        resources:
          requests: {cpu: "16", memory: 64Gi}
"""
    res = _run(store, manifest, "--json", tmp_path=tmp_path, name="job.yaml")
    assert res.exit_code in (0, 3), res.output
    d = json.loads(res.output)
    assert d["input"]["scheduler"] == "kubernetes" and d["input"]["user"] == "alice"
    assert d["input"]["user_from"] == "manifest"
    assert d["resources"]["memory"]["asked"] == 64 * 2**30
    pastes = {c["option"]: c for c in d["changes"]}
    assert re.fullmatch(r"memory: \d+Gi", pastes["memory"]["paste"]) and pastes["memory"]["line"] == 13
    assert re.fullmatch(r"activeDeadlineSeconds: \d+", pastes["activeDeadlineSeconds"]["paste"])


def test_user_from_the_environment(store, tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    d = json.loads(_run(store, ALICE, "--json", tmp_path=tmp_path).output)
    assert (d["input"]["user"], d["input"]["user_from"]) == ("alice", "environment")
    monkeypatch.setenv("USER", "stranger")
    d = json.loads(_run(store, ALICE, "--json", tmp_path=tmp_path).output)
    assert d["input"]["user"] is None and d["evidence"]["basis"] == "family"


def test_audit_saves_the_advisor_model(tmp_path):
    """``reclaim audit`` leaves a model the advisor loads (fitted on the run folder's jobs)."""
    from audit.pipeline import audit
    from predictors.advisor.model import is_current

    from ..conftest import ROOT

    week = ROOT / "sample_traces" / "week"
    if not (week / "sacct.txt").exists():
        pytest.skip("sample week absent")
    lines = []
    audit([week], tmp_path / "run", whatif=False, log=lines.append)
    assert is_current(tmp_path / "run") and any("advisor model" in x for x in lines)
    res = CliRunner().invoke(predict, [str(_write(tmp_path, ALICE)), "--history", str(tmp_path / "run"), "--json"])
    assert res.exit_code in (0, 3) and "fitting" not in res.output


def _write(tmp_path, text):
    path = tmp_path / "job.sh"
    path.write_text(text, encoding="utf-8")
    return path


def test_json_keys_and_warning_codes_are_in_the_glossary(store, tmp_path):
    """Every key the advice prints, at every depth the glossary tables, and every warning code the advisor can
    raise, is documented in docs/glossary.md (and nothing documented is gone)."""
    from ..conftest import ROOT
    from ..test_glossary import _documented

    doc = _documented("Submit-time advisor (`reclaim predict SCRIPT --json`)")
    d = json.loads(_run(store, ALICE, "--user", "alice", "--json", tmp_path=tmp_path).output)
    keys = set(d) | {k for r in d["resources"].values() for k in r} | {k for c in d["changes"] for k in c}
    keys |= set(d["evidence"])
    assert keys <= doc, keys - doc
    source = (ROOT / "predictors" / "advisor" / "preflight.py").read_text(encoding="utf-8")
    codes = set(re.findall(r'warning\("([A-Z_]+)"', source))
    assert len(codes) == 8 and codes <= doc
    assert {k for k in doc if k.isupper()} == codes
