"""The pilot collector against a real Slurm (three nodes, fake GPUs, the jobs ``submit-all.sh`` submits):
``reclaim collect slurm --since 1d`` and then ``reclaim audit`` on the tarball find every job with its state,
and a shim on PATH sees only commands of the read-only table.

Runs in CI as root, like tests/test_slurm_integration.py (whose start and skip rules it shares); skips when
Slurm cannot be started here.  The cluster is brought up and its jobs run in the background while the rest of the
suite runs (``tests/ahead.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from time import monotonic, sleep

import pandas as pd
import pytest

from audit.collect import READ_ONLY
from tests.test_slurm_integration import TOOLS, _log_tails, _missing_packages, _run, _skip_reason, _stop

pytestmark = pytest.mark.slurm

PORTS = {"SLURM_PORT_BASE": "7017", "MYSQL_PORT": "3327"}
TERMINAL = {"COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL"}
SHIMMED = ("sacct", "sinfo", "scontrol", "sshare", "kubectl")


def bring_up_ahead(skip) -> dict:
    """Start the pilot's cluster, submit ``submit-all.sh``'s jobs and cancel the one to cancel once it runs;
    called in the background as the session starts (``tests/ahead.py``)."""
    reason = _skip_reason()
    if reason:
        skip(reason)
    state = Path(tempfile.mkdtemp(prefix="reclaim-pilot-test-"))
    state.chmod(0o755)
    env = {**os.environ, **PORTS, "SLURM_CLUSTER": "reclaimpilot", "SLURM_NODES": "3", "SLURM_NODE_CPUS": "4",
           "SLURM_GPUS": "2", "LINK_ETC": "0", "TZ": "UTC", "SLURM_CONF": str(state / "etc" / "slurm.conf"),
           "DEBIAN_FRONTEND": "noninteractive", "WORK_DIR": str(state / "jobs")}
    for var in [k for k in env if k.startswith(("SLURM_JOB", "SLURM_STEP", "SBATCH_", "SACCT_", "SQUEUE_"))]:
        del env[var]
    cluster = {"env": env, "state": state, "stop": lambda: _stop(env, state)}
    try:
        if _missing_packages():
            _run(["apt-get", "update", "-q"], env, timeout=300)
        try:
            _run(["bash", str(TOOLS / "start-slurm.sh"), str(state)], env, timeout=400)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\n{_log_tails(state / 'log')}") from None
        out = _run(["bash", str(TOOLS / "submit-all.sh")], env, timeout=120)
        cluster["ids"] = ids = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
        cluster["deadline"] = deadline = monotonic() + 240
        while _run(["squeue", "-h", "-j", ids["cancel"], "-o", "%T"], env, check=False).strip() != "RUNNING":
            if monotonic() > deadline:
                raise TimeoutError("the job to cancel never started")
            sleep(0.5)
        _run(["scancel", ids["cancel"]], env)
    except BaseException:
        _stop(env, state)
        raise
    return cluster


@pytest.fixture(scope="module")
def pilot(started_ahead):
    """The pilot's cluster once its jobs have ended, and ``reclaim collect slurm --since 1d`` run on it through
    the shim; stopped and removed afterwards."""
    env, state, ids = started_ahead["env"], started_ahead["state"], started_ahead["ids"]
    try:
        deadline = max(started_ahead["deadline"], monotonic() + 30)
        while _run(["squeue", "-h"], env, check=False).strip():
            if monotonic() > deadline:
                pytest.fail("jobs did not end")
            sleep(2)
        sleep(5)  # accounting of the last steps lands a moment after the job ends
        shim, log = _shim(state)
        run_env = {**env, "PATH": f"{shim}:{env['PATH']}", "SHIM_LOG": str(log)}
        collected = subprocess.run([sys.executable, "-m", "audit.cli", "collect", "slurm", "--since", "1d",
                                    "--out", str(state / "pilot"), "--quiet"], env=run_env, capture_output=True,
                                   text=True, timeout=300, stdin=subprocess.DEVNULL)
        yield {"env": env, "state": state, "ids": ids, "collected": collected, "log": log}
    finally:
        started_ahead["stop"]()


def _shim(state: Path) -> tuple[Path, Path]:
    """Scripts named like the Slurm and Kubernetes commands that log their arguments, then run the real one."""
    shim = state / "shim"
    shim.mkdir()
    log = state / "shim.log"
    for name in SHIMMED:
        real = shutil.which(name)
        body = f'#!/bin/sh\nprintf "%s\\0" {name} "$@" >> "$SHIM_LOG"\nprintf "\\n" >> "$SHIM_LOG"\n'
        body += f'exec {real} "$@"\n' if real else "exit 127\n"
        p = shim / name
        p.write_text(body)
        p.chmod(0o755)
    return shim, log


def test_the_collector_ran_only_read_only_commands(pilot):
    assert pilot["collected"].returncode == 0, pilot["collected"].stderr
    table = [c.argv for c in READ_ONLY.values()]
    seen = [tuple(x for x in line.split("\0") if x) for line in pilot["log"].read_text().splitlines() if line]
    assert seen, "the shim saw no command"
    for argv in seen:
        assert any(len(argv) == len(t) and all(a == b or b in ("{since}", "{until}") for a, b in zip(argv, t, strict=True))
                   for t in table), argv


def test_audit_of_the_tarball_finds_every_job_with_its_state(pilot, tmp_path):
    tarball = next((pilot["state"] / "pilot").glob("reclaim-pilot-slurm-*.tar.gz"))
    run = subprocess.run([sys.executable, "-m", "audit.cli", "audit", str(tarball), "--out", str(tmp_path / "run"),
                          "--no-whatif", "--quiet"], capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    jobs = pd.read_parquet(tmp_path / "run" / "jobs.parquet")
    state = dict(zip(jobs["job_id"], jobs["state"], strict=True))
    ids = pilot["ids"]
    cgroup = "proctrack/cgroup" in (pilot["state"] / "etc" / "slurm.conf").read_text()
    # what Slurm itself recorded for each allocation, asked here directly
    listed = _run(["sacct", "--allusers", "--allocations", "--noheader", "--parsable2", "--starttime", "2000-01-01",
                   "--format", "JobID,State"], pilot["env"])
    recorded = {jid: st.split(" ")[0] for jid, st in (ln.split("|")[:2] for ln in listed.splitlines() if ln)}
    assert state == recorded
    # and the fates submit-all.sh set up
    known = {ids["ok"]: "COMPLETED", ids["timeout"]: "TIMEOUT", ids["fail"]: "FAILED", ids["cancel"]: "CANCELLED",
             ids["gpu"]: "COMPLETED", ids["oom"]: "OUT_OF_MEMORY" if cgroup else "FAILED"}
    known.update({f"{ids['array']}_{t}": "COMPLETED" for t in range(3)})
    assert {k: state.get(k) for k in known} == known
    assert ids["srun2"] in state and len(jobs) == len(known) + 1
    gpu = jobs[jobs["job_id"] == ids["gpu"]].iloc[0]
    assert gpu["alloc_gpus"] == 1
    shape = (tmp_path / "run" / "cluster_shape.toml").read_text()
    assert "count = 3" in shape and "gpus = 2" in shape  # the three nodes scontrol reported


def test_monthly_collects_the_month_itself(pilot, tmp_path):
    month = time.strftime("%Y-%m", time.gmtime())
    env = {**pilot["env"], "PATH": f"{pilot['state'] / 'shim'}:{pilot['env']['PATH']}", "SHIM_LOG": str(pilot["log"])}
    run = subprocess.run([sys.executable, "-m", "audit.cli", "monthly", "--month", month, "--out", str(tmp_path),
                          "--scheduler", "slurm", "--no-whatif", "--quiet"], env=env, capture_output=True, text=True,
                         timeout=600,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / month / "monthly.json").read_text())
    assert summary["figures"]["jobs"] == len(pilot["ids"]) + 2  # the array's three tasks
    assert (tmp_path / "reclaim.prom").read_text().count("reclaim_jobs{") == 1
    test_the_collector_ran_only_read_only_commands(pilot)  # the shim's log now holds the month's commands too
