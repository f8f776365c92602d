"""Integration test against a real Slurm: jobs with known use, real ``sacct`` output, both readers.

As the session starts, a single-machine Slurm 22.05 with accounting (``../shared/tools/slurm``; root,
Debian packages installed on first use) is brought up in the background and given jobs whose memory, CPU
time, limits and fates are set by the test (``tests/ahead.py``); the module fixture waits for them
to end, dumps ``sacct --parsable2`` and ``sacct --json`` and reads both.  The tests then check each job's
canonical row against what was submitted, and the two readers against each other.  Slurm is stopped and
its state removed afterwards, also when a test fails.

Runs in CI (as root).  Skips when not root, when ``../shared/tools/slurm`` is absent, when Slurm is
neither installed nor installable with apt, or when ``RECLAIM_SKIP_SLURM`` is set to a non-empty value;
``pytest -m 'not slurm'`` (``make test-fast``) deselects it.  Its jobs take about two minutes (a TIMEOUT
needs a one-minute limit, Slurm's smallest, and slurmctld checks limits every 30 s), run while the rest of the
suite does; the Slurm tests run last.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from time import monotonic, sleep

import numpy as np
import pandas as pd
import pytest

from audit.readers.sacct.json_jobs import read_sacct_json
from audit.readers.sacct.text import read_sacct

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[1]
TOOLS = (ROOT / ".." / "shared" / "tools" / "slurm").resolve()
#: Debian packages start-slurm.sh installs when missing (the CI machine needs them too)
SLURM_PACKAGES = ("slurmctld", "slurmd", "slurm-client", "slurmdbd", "mariadb-server", "munge")
CLUSTER = "reclaimci"
ACCOUNT = "testacct"
MIB = 1024**2
#: ports away from start-slurm.sh's defaults, so a developer's own test cluster is not disturbed
PORTS = {"SLURM_PORT_BASE": "6917", "MYSQL_PORT": "3317"}
SACCT_FIELDS = (
    "JobID,JobIDRaw,Cluster,Partition,QOS,Account,User,Submit,Eligible,Start,End,Elapsed,Timelimit,State,"
    "ExitCode,NNodes,NCPUS,ReqCPUS,ReqMem,ReqTRES,AllocTRES,TotalCPU,MaxRSS,AveRSS,NTasks,TRESUsageInTot,"
    "NodeList,JobName"
)
TERMINAL = {"COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE"}
WAIT_S = 180  # deadline for all jobs to end (the TIMEOUT job needs 60-95 s)

#: the payload of the memory/CPU jobs: touch ``mib`` MiB, burn ``cpu`` s of CPU, write the CPU time the kernel
#: counted for the process so far (user + system, ``cpu-JOB-STEP-TASK.txt``), hold ``hold`` s
#: (JobAcctGatherFrequency=1 samples it), then optionally try to touch ``then`` MiB more
WORKER = """\
import os, resource, sys, time
a = dict(x.split("=") for x in sys.argv[1:])
def touch(mib):
    b = bytearray(int(mib) * 1024 * 1024)
    b[::4096] = b"x" * len(b[::4096])
    return b
held = touch(a.get("mib", 0))
t = time.process_time()
while time.process_time() - t < float(a.get("cpu", 0)):
    pass
r = resource.getrusage(resource.RUSAGE_SELF)
e = os.environ
with open("cpu-%s-%s-%s.txt" % (e.get("SLURM_JOB_ID"), e.get("SLURM_STEP_ID", "batch"), e.get("SLURM_PROCID", "0")),
          "w") as f:
    f.write(repr(r.ru_utime + r.ru_stime))
time.sleep(float(a.get("hold", 0)))
if "then" in a:
    more = touch(a["then"])
    time.sleep(10)
"""


# ---------------------------------------------------------------- helpers


def _skip_reason() -> str | None:
    if os.environ.get("RECLAIM_SKIP_SLURM"):
        return "RECLAIM_SKIP_SLURM is set"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "starting a real Slurm needs root"
    if not (TOOLS / "start-slurm.sh").exists():
        return f"{TOOLS} is absent"
    if _missing_packages() and not shutil.which("apt-get"):
        return "Slurm is not installed and apt-get is unavailable"
    return None


def _missing_packages() -> list[str]:
    missing = []
    for p in SLURM_PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if "ok installed" not in r.stdout:
            missing.append(p)
    return missing


def _run(cmd: list[str], env: dict, timeout: float = 60, check: bool = True) -> str:
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout


def _sbatch(env: dict, workdir: Path, *args: str) -> int:
    out = _run(["sbatch", "--parsable", "-D", str(workdir), "-o", str(workdir / "%x-%j.out"), *args], env)
    return int(out.strip().split(";")[0])


def _wait_running(env: dict, job: int, deadline: float) -> None:
    while monotonic() < deadline:
        if _run(["squeue", "-h", "-j", str(job), "-o", "%T"], env, check=False).strip() == "RUNNING":
            return
        sleep(0.5)
    raise TimeoutError(f"job {job} did not start")


def _dump_text(env: dict) -> str:
    return _run(["sacct", "--parsable2", "--allusers", "--duplicates", "--starttime", "2000-01-01",
                 "--format", SACCT_FIELDS], env)


def _settled_dumps(env: dict, deadline: float) -> tuple[str, str]:
    """Text and JSON dumps of the same database state: a killed step's usage can land seconds after its
    state turns terminal, so dump until the text is unchanged on both sides of the JSON dump."""
    while True:
        before = _dump_text(env)
        json_text = _run(["sacct", "--json", "--allusers", "--duplicates", "--starttime", "2000-01-01"], env)
        sleep(2)
        if _dump_text(env) == before:
            return before, json_text
        if monotonic() > deadline:
            pytest.fail("sacct output kept changing after every job ended")


def _all_ended(text: str, n_jobs: int) -> bool:
    """Every line (allocations and steps) in a terminal state, and all ``n_jobs`` allocations present."""
    lines = [ln.split("|") for ln in text.splitlines()[1:] if ln]
    states = {ln[13].split(" ")[0] for ln in lines}
    allocations = sum("." not in ln[0] for ln in lines)
    return allocations == n_jobs and states <= TERMINAL


def _log_tails(logs: Path, n: int = 15) -> str:
    """The last lines of each daemon log, for a start that failed."""
    out = []
    for f in sorted(logs.glob("*.log")):
        out.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-n:]))
    return "\n".join(out)


# ---------------------------------------------------------------- fixtures


def _bring_up(skip) -> dict:
    """Start the test cluster; ``skip(reason)`` is called when it cannot be started here."""
    reason = _skip_reason()
    if reason:
        skip(reason)
    state = Path(tempfile.mkdtemp(prefix="reclaim-slurm-test-"))
    state.chmod(0o755)  # mariadbd runs as mysql and must reach its datadir inside
    env = {**os.environ, **PORTS, "SLURM_CLUSTER": CLUSTER, "SLURM_ACCOUNT": ACCOUNT, "SLURM_NODE_CPUS": "12",
           "LINK_ETC": "0", "TZ": "UTC", "SLURM_CONF": str(state / "etc" / "slurm.conf"),
           "DEBIAN_FRONTEND": "noninteractive"}
    for var in [k for k in env if k.startswith(("SLURM_JOB", "SLURM_STEP", "SBATCH_", "SACCT_", "SQUEUE_"))]:
        del env[var]
    if _missing_packages():
        # start-slurm.sh installs the packages but does not refresh apt's lists (empty on a new machine)
        _run(["apt-get", "update", "-q"], env, timeout=300)
    try:
        _run(["bash", str(TOOLS / "start-slurm.sh"), str(state)], env, timeout=400)
    except RuntimeError as exc:
        _stop(env, state)
        raise RuntimeError(f"{exc}\n{_log_tails(state / 'log')}") from None
    return {"env": env, "state": state}


def _stop(env: dict, state: Path) -> None:
    subprocess.run(["bash", str(TOOLS / "stop-slurm.sh"), str(state)], env=env, capture_output=True,
                   timeout=180, stdin=subprocess.DEVNULL)
    if not os.environ.get("RECLAIM_KEEP_SLURM"):
        shutil.rmtree(state, ignore_errors=True)


def bring_up_ahead(skip) -> dict:
    """Start the cluster and submit the jobs; called in the background as the session starts
    (``tests/ahead.py``), so the jobs run while the rest of the suite does."""
    cluster = _bring_up(skip)
    try:
        cluster["submitted"] = _submit(cluster["env"], cluster["state"])
    except BaseException:
        _stop(cluster["env"], cluster["state"])
        raise
    cluster["stop"] = lambda: _stop(cluster["env"], cluster["state"])
    return cluster


@pytest.fixture(scope="module")
def slurm(started_ahead):
    """A running Slurm (its environment for the client commands), its jobs submitted; stopped and removed
    afterwards."""
    try:
        yield started_ahead
    finally:
        started_ahead["stop"]()


def _submit(env: dict, state: Path) -> dict:
    """Submit the jobs (the cancelled one cancelled once running); their ids and the submission times."""
    work = state / "jobs"
    work.mkdir()
    (work / "worker.py").write_text(WORKER)
    py = f"{sys.executable} {work / 'worker.py'}"
    ids: dict[str, int] = {}
    t_submit = pd.Timestamp.now(tz="UTC").floor("s")
    start = monotonic()
    deadline = start + WAIT_S
    # the slowest first: a one-minute limit on a job that would sleep five
    ids["timeout"] = _sbatch(env, work, "-J", "timeout", "--mem=100M", "--time=1", "--wrap", "sleep 300")
    ids["mem"] = _sbatch(env, work, "-J", "mem", "--mem=400M", "--time=5",
                         "--wrap", f"{py} mib=200 cpu=1.5 hold=3")
    ids["oom"] = _sbatch(env, work, "-J", "oom", "--mem=100M", "--time=5",
                         "--wrap", f"{py} mib=60 hold=3 then=600")
    ids["fail"] = _sbatch(env, work, "-J", "fail", "--mem=100M", "--time=5", "--wrap", "exit 3")
    ids["array"] = _sbatch(env, work, "-J", "array", "--mem=100M", "--time=5", "--array=1-3",
                           "--wrap", "sleep 2")
    ids["gpu"] = _sbatch(env, work, "-J", "gpu", "--mem=100M", "--time=5", "--gres=gpu:1", "--wrap", "sleep 2")
    ids["steps"] = _sbatch(env, work, "-J", "steps", "-n", "2", "--mem-per-cpu=300M", "--time=5", "--wrap",
                           f"srun -n2 {py} mib=50 cpu=0.5 hold=2; srun -n1 sleep 1")
    ids["cancel"] = _sbatch(env, work, "-J", "cancel", "--mem=100M", "--time=5", "--wrap", "sleep 300")
    t_submitted = pd.Timestamp.now(tz="UTC").ceil("s")
    _wait_running(env, ids["cancel"], deadline)
    sleep(1)
    _run(["scancel", str(ids["cancel"])], env)
    return {"work": work, "ids": ids, "t_submit": t_submit, "t_submitted": t_submitted, "start": start}


@pytest.fixture(scope="module")
def run(slurm):
    """Wait for the jobs to end, dump sacct text and JSON, read both."""
    env, state = slurm["env"], slurm["state"]
    sub = slurm["submitted"]
    work, ids, t_submit, t_submitted = sub["work"], sub["ids"], sub["t_submit"], sub["t_submitted"]
    deadline = max(sub["start"] + WAIT_S, monotonic() + 30)
    n_jobs = len(ids) + 2  # three array tasks
    text = _dump_text(env)
    while not _all_ended(text, n_jobs):
        if monotonic() > deadline:
            pytest.fail(f"jobs did not end within {WAIT_S} s:\n{text}")
        sleep(2)
        text = _dump_text(env)
    text, json_text = _settled_dumps(env, deadline)
    txt_path = work / "sacct.txt"
    txt_path.write_text(text)
    json_path = work / "sacct.json"
    json_path.write_text(json_text)
    text_result = read_sacct(txt_path, timezone="UTC")
    try:
        json_result, json_error = read_sacct_json(json_path), None
    except Exception as exc:  # reported by the JSON tests, the text tests still run
        json_result, json_error = None, exc
    return {
        "ids": ids, "work": work, "text": text, "text_path": txt_path, "json_path": json_path, "t_submit": t_submit,
        "t_submitted": t_submitted, "cgroup": "proctrack/cgroup" in (state / "etc" / "slurm.conf").read_text(),
        "txt": text_result, "json": json_result, "json_error": json_error,
    }


#: CPU a job spends beside its workers: the batch shell, and the ``srun`` clients of a job with steps
OTHERS_CPU_S = 0.5


def _own_cpu(work: Path, job: int, tasks: int) -> float:
    """The CPU seconds the job's ``tasks`` workers counted for themselves (:data:`WORKER`)."""
    files = sorted(work.glob(f"cpu-{job}-*.txt"))
    assert len(files) == tasks, [f.name for f in files]
    return sum(float(f.read_text()) for f in files)


def _row(jobs: pd.DataFrame, job_id: str) -> pd.Series:
    rows = jobs[jobs["job_id"] == job_id]
    assert len(rows) == 1, f"expected one canonical row for job {job_id}, got {len(rows)}"
    return rows.iloc[0]


def _expected_job_ids(ids: dict) -> list[str]:
    return sorted([str(v) for k, v in ids.items() if k != "array"] + [f"{ids['array']}_{t}" for t in (1, 2, 3)])


# ---------------------------------------------------------------- sacct text


def test_text_one_row_per_job_and_ledger_balanced(run):
    res = run["txt"]
    data = [ln for ln in run["text"].splitlines()[1:] if ln]
    step_lines = [ln for ln in data if "." in ln.split("|")[0]]
    assert sorted(res.jobs["job_id"]) == _expected_job_ids(run["ids"])
    led = res.ledger
    assert (led.read, led.used, led.folded, led.quarantined) == (len(data), len(data) - len(step_lines),
                                                                 len(step_lines), 0)
    assert led.balanced and led.structural == 1 and len(res.quarantine) == 0
    if run["cgroup"]:  # every job has .batch and .extern (PrologFlags=Contain); the srun job .0 and .1 too
        assert len(step_lines) == 2 * len(res.jobs) + 2
    assert (res.jobs["cluster"] == CLUSTER).all() and (res.jobs["account"] == ACCOUNT).all()
    assert (res.jobs["user"] == "root").all() and (res.jobs["partition"] == "debug").all()


def test_text_states_and_exit_codes(run):
    jobs, ids = run["txt"].jobs, run["ids"]
    expect = {"mem": ("COMPLETED", 0), "fail": ("FAILED", 3), "timeout": ("TIMEOUT", 0),
              "cancel": ("CANCELLED", 0), "gpu": ("COMPLETED", 0), "steps": ("COMPLETED", 0)}
    for name, (state, code) in expect.items():
        r = _row(jobs, str(ids[name]))
        assert (r["state"], r["exit_code"]) == (state, code), name
        assert r["job_name"] == name
    # with cgroup memory enforcement Slurm records OUT_OF_MEMORY; without it OverMemoryKill gives FAILED
    assert _row(jobs, str(ids["oom"]))["state"] == ("OUT_OF_MEMORY" if run["cgroup"] else "FAILED")


def test_text_times_against_the_wall_clock(run):
    jobs, ids = run["txt"].jobs, run["ids"]
    assert (jobs["submit_time"] >= run["t_submit"]).all() and (jobs["submit_time"] <= run["t_submitted"]).all()
    assert (jobs["start_time"] >= jobs["submit_time"]).all()
    assert ((jobs["end_time"] - jobs["start_time"]).dt.total_seconds() == jobs["elapsed_s"]).all()
    t = _row(jobs, str(ids["timeout"]))
    assert t["time_limit_s"] == 60 and 60 <= t["elapsed_s"] <= 60 + 45
    assert (jobs.loc[jobs["job_id"] != str(ids["timeout"]), "time_limit_s"] == 300).all()


def test_text_requested_resources(run):
    jobs, ids = run["txt"].jobs, run["ids"]
    mem = _row(jobs, str(ids["mem"]))
    assert mem["req_mem_bytes"] == 400 * MIB and mem["alloc_mem_bytes"] == 400 * MIB
    assert (mem["req_cpus"], mem["alloc_cpus"], mem["alloc_nodes"]) == (1, 1, 1)
    steps = _row(jobs, str(ids["steps"]))
    assert steps["req_mem_bytes"] == 2 * 300 * MIB  # --mem-per-cpu=300M × 2 CPUs
    assert (steps["req_cpus"], steps["alloc_cpus"]) == (2, 2)
    assert _row(jobs, str(ids["fail"]))["req_mem_bytes"] == 100 * MIB


def test_text_gpu_job(run):
    jobs, ids = run["txt"].jobs, run["ids"]
    gpu = _row(jobs, str(ids["gpu"]))
    assert (gpu["req_gpus"], gpu["alloc_gpus"]) == (1, 1)
    assert "no_gpu_telemetry" in gpu["caveats"]
    others = jobs[jobs["job_id"] != str(ids["gpu"])]
    assert (others["alloc_gpus"] == 0).all() and (others["req_gpus"] == 0).all()


def test_text_array_tasks(run):
    jobs, base = run["txt"].jobs, run["ids"]["array"]
    arr = jobs[jobs["array_job_id"] == base].sort_values("array_task_id")
    assert arr["array_task_id"].tolist() == [1, 2, 3]
    assert arr["job_id"].tolist() == [f"{base}_{t}" for t in (1, 2, 3)]
    assert arr["job_id_raw"].nunique() == 3 and (arr["state"] == "COMPLETED").all()
    assert (arr["elapsed_s"] >= 2).all()
    assert jobs["array_job_id"].notna().sum() == 3


def test_text_memory_and_cpu_use(run):
    jobs, ids = run["txt"].jobs, run["ids"]
    mem = _row(jobs, str(ids["mem"]))
    # 200 MiB touched plus an interpreter (about 10-30 MiB); the busy loop burned 1.5 s of CPU, and the kernel's
    # own count for the worker (its rusage, which holds the page faults' system time too) is the oracle
    assert 200 * MIB <= mem["mem_peak_bytes"] <= 260 * MIB
    own = _own_cpu(run["work"], ids["mem"], tasks=1)
    assert own >= 1.5 and own - 0.01 <= mem["cpu_used_s"] <= own + OTHERS_CPU_S
    # srun step .0 ran two tasks of 50 MiB each: the job's peak is their sum, not one task's MaxRSS
    steps = _row(jobs, str(ids["steps"]))
    assert 100 * MIB <= steps["mem_peak_bytes"] <= 180 * MIB
    own = _own_cpu(run["work"], ids["steps"], tasks=2)
    assert own >= 1.0 and own - 0.01 <= steps["cpu_used_s"] <= own + OTHERS_CPU_S
    # the over-memory job held 60 MiB long enough to be sampled, then died at its 100 MiB limit
    if run["cgroup"]:
        assert 60 * MIB <= _row(jobs, str(ids["oom"]))["mem_peak_bytes"] <= 110 * MIB
    sleepers = jobs[jobs["job_name"].isin(["array", "gpu", "cancel", "timeout"])]
    assert (sleepers["mem_peak_bytes"] < 20 * MIB).all() and (sleepers["cpu_used_s"] < 0.5).all()


# ---------------------------------------------------------------- sacct --json


@pytest.fixture(scope="module")
def json_jobs(run):
    if run["json_error"] is not None:
        pytest.fail(f"read_sacct_json failed on real sacct --json output: {run['json_error']!r}")
    return run["json"]


def test_json_one_row_per_job_and_ledger_balanced(run, json_jobs):
    raw = json.loads(run["json_path"].read_text())["jobs"]
    n_steps = sum(len(j["steps"]) for j in raw)
    assert sorted(json_jobs.jobs["job_id"]) == _expected_job_ids(run["ids"])
    led = json_jobs.ledger
    assert (led.read, led.used, led.folded, led.quarantined) == (len(raw) + n_steps, len(raw), n_steps, 0)
    assert led.balanced and len(json_jobs.quarantine) == 0


#: fields both readers fill from the same Slurm record; ``exit_code`` is left out on purpose: Slurm
#: 22.05's ``sacct --json`` reports SUCCESS for a job that exited 3 (PROVENANCE.md)
SHARED = ["cluster", "job_id", "job_id_raw", "array_job_id", "array_task_id", "user", "account", "partition",
          "qos", "job_name", "submit_time", "eligible_time", "start_time", "end_time", "elapsed_s",
          "time_limit_s", "state", "signal", "req_nodes", "req_cpus", "req_mem_bytes", "req_gpus", "alloc_nodes",
          "alloc_cpus", "alloc_mem_bytes", "alloc_gpus", "node_list"]


def test_json_and_text_agree(run, json_jobs):
    t = run["txt"].jobs.set_index("job_id_raw", drop=False).sort_index()
    j = json_jobs.jobs.set_index("job_id_raw", drop=False).sort_index()
    assert t.index.tolist() == j.index.tolist()
    diffs = {c: (t[c].tolist(), j[c].tolist()) for c in SHARED if t[c].tolist() != j[c].tolist()}
    assert not diffs, diffs
    # text prints TotalCPU in milliseconds and memory in KiB; JSON in microseconds and bytes
    np.testing.assert_allclose(t["cpu_used_s"].astype(float), j["cpu_used_s"].astype(float), atol=0.01)
    np.testing.assert_allclose(t["mem_peak_bytes"].astype(float), j["mem_peak_bytes"].astype(float), atol=1024)
