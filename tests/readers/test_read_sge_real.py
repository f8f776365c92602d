"""Integration test against a real Grid Engine: jobs with known fates, the accounting file it writes, the reader.

A single-host Son of Grid Engine 8.1.9 (Debian 12's ``gridengine-master``, ``gridengine-exec``,
``gridengine-client``) is brought up in a temporary folder of its own — its own cell, spool and ports, so a Grid
Engine already on the machine is left alone (``tests/readers/data/sge/start-sge.sh``) — and given jobs whose fates
the test sets: a plain job, a failing one, one past its ``h_rt``, an array, a tightly integrated parallel job
with two ``qrsh -inherit`` tasks, one deleted while running, one holding memory under an ``h_vmem`` request; then
the execd is switched to ``ACCT_RESERVED_USAGE`` and one more job runs.  Its ``accounting`` file is read and each
job's row checked against what was submitted.  The daemons are stopped and the folder removed afterwards, also
when a test fails.  About a minute, spent in the background as the session starts (``tests/ahead.py``); its
tests run last.

Skips when not root, when the packages are absent, or when ``RECLAIM_SKIP_SGE`` is set to a non-empty value.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from time import monotonic, sleep

import pandas as pd
import pytest

from audit.readers.detect import detect_format
from audit.readers.sge import read_sge

from ..conftest import LACKS

HERE = Path(__file__).resolve().parent / "data" / "sge"
PACKAGES = "gridengine-master gridengine-exec gridengine-client"
MIB = 1024**2
HOLD = """\
import sys, time
held = bytearray(int(sys.argv[1]) * 1024 * 1024)
held[::4096] = b"x" * len(held[::4096])
time.sleep(float(sys.argv[2]))
"""
TIGHT = """\
#!/bin/sh
qrsh -inherit -nostdin "$(hostname)" /bin/sleep 2
qrsh -inherit -nostdin "$(hostname)" /bin/sleep 1
sleep 1
"""


def _skip_reason() -> str | None:
    if os.environ.get("RECLAIM_SKIP_SGE"):
        return "RECLAIM_SKIP_SGE is set"
    if os.geteuid() != 0:
        return "a Grid Engine is started as root"
    if not (Path("/usr/sbin/sge_qmaster").exists() and Path("/usr/sbin/sge_execd").exists()
            and shutil.which("qsub") and Path("/var/lib/gridengine/bin").exists()):
        return f"{LACKS}{PACKAGES}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, root: Path):
        self.root = root
        self.jobs = root / "jobs"
        self.env = {**os.environ, "SGE_ROOT": str(root), "SGE_CELL": "default",
                    "SGE_QMASTER_PORT": str(_free_port()), "SGE_EXECD_PORT": str(_free_port())}
        self.ids: dict[str, int] = {}

    def start(self) -> None:
        subprocess.run(["sh", str(HERE / "start-sge.sh"), str(self.root), self.env["SGE_QMASTER_PORT"],
                        self.env["SGE_EXECD_PORT"]], check=True, env=self.env, capture_output=True, timeout=120)

    def stop(self) -> None:
        subprocess.run(["sh", str(HERE / "stop-sge.sh"), str(self.root)], env=self.env, capture_output=True,
                       timeout=120)

    def run(self, *args: str) -> str:
        return subprocess.run(list(args), check=True, env=self.env, capture_output=True, text=True, cwd=self.jobs,
                              timeout=60).stdout

    def submit(self, name: str, *args: str) -> int:
        out = self.run("qsub", "-terse", "-N", name, "-cwd", "-o", "/dev/null", "-e", "/dev/null", *args)
        self.ids[name] = int(out.strip().split(".")[0])
        return self.ids[name]

    def state(self, job: int) -> str:
        out = subprocess.run(["qstat", "-u", "*"], env=self.env, capture_output=True, text=True).stdout
        for line in out.splitlines()[2:]:
            parts = line.split()
            if parts and parts[0] == str(job):
                return parts[4]
        return ""

    def diagnosis(self) -> str:
        """What the daemons say when records are late: qstat, the queue, whether the execd runs, their logs."""
        jobs = subprocess.run(["qstat", "-u", "*"], env=self.env, capture_output=True, text=True).stdout
        hosts = subprocess.run(["qstat", "-f"], env=self.env, capture_output=True, text=True).stdout
        return f"qstat:\n{jobs}\nqstat -f:\n{hosts}\nexecd: {self.execd_alive()}\n{self.messages()}"

    def messages(self) -> str:
        """The last lines the daemons logged (their ``messages`` files), to tell why a job did not end."""
        out = []
        for path in sorted((self.root / "spool").glob("**/messages")):
            lines = path.read_text(errors="replace").splitlines()[-15:]
            out.append(f"{path.relative_to(self.root)}:\n" + "\n".join(lines))
        return "\n".join(out) or "no messages files"

    def execd_alive(self) -> str:
        """Whether the execd of its pid file still runs (a queue shows as unknown only minutes after it died)."""
        pids = list((self.root / "spool" / "execd").glob("*/execd.pid"))
        if not pids:
            return "no pid file"
        pid = int(pids[0].read_text().split()[0])
        try:
            os.kill(pid, 0)
        except OSError:
            return f"pid {pid} is gone"
        return f"pid {pid} runs"

    def records(self, n: int, deadline: float) -> Path:
        """The accounting file once it holds ``n`` records (what the test reads), by ``deadline`` on the
        monotonic clock: this runs in a thread beside the rest of the suite, so a wall clock a test replaces
        must not end its wait."""
        acct = self.root / "default" / "common" / "accounting"
        rows: list[str] = []
        while monotonic() < deadline:
            rows = [ln for ln in acct.read_text().splitlines() if ln and ln[0] != "#"] if acct.exists() else []
            if len(rows) >= n:
                return acct
            sleep(1)
        jobs = sorted(ln.split(":")[5] if ln.count(":") >= 5 else "?" for ln in rows)
        raise TimeoutError(f"the accounting file holds {len(rows)} of {n} records (jobs {', '.join(jobs)});\n"
                           f"{self.diagnosis()}")


def bring_up_ahead(skip) -> dict:
    """Start the Grid Engine, run its jobs to their ends and read its accounting file; called in the background
    as the session starts (``tests/ahead.py``), so the jobs run while the rest of the suite does."""
    reason = _skip_reason()
    if reason:
        skip(reason)
    base = Path(tempfile.mkdtemp(prefix="reclaim-sge-"))
    cluster = Cluster(base / "root")

    def stop() -> None:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)

    try:
        cluster.start()
        (cluster.jobs / "hold.py").write_text(HOLD)
        (cluster.jobs / "tight.sh").write_text(TIGHT)
        (cluster.jobs / "fail.sh").write_text("#!/bin/sh\nexit 3\n")
        cluster.submit("ok", "-l", "h_rt=600", "-b", "y", "/bin/sleep", "2")
        cluster.submit("fail", "fail.sh")
        cluster.submit("hrt", "-l", "h_rt=5", "-b", "y", "/bin/sleep", "60")
        cluster.submit("arr", "-t", "1-3", "-b", "y", "/bin/sleep", "1")
        cluster.submit("tight", "-pe", "smp", "2", "tight.sh")
        cluster.submit("mem", "-l", "h_vmem=1G", "-b", "y", "python3", str(cluster.jobs / "hold.py"), "200", "6")
        deleted = cluster.submit("del", "-b", "y", "/bin/sleep", "100")
        deadline = monotonic() + 60
        while cluster.state(deleted) != "r" and monotonic() < deadline:
            sleep(0.5)
        sleep(2)
        cluster.run("qdel", str(deleted))
        cluster.records(11, monotonic() + 150)  # 6 jobs, 3 array tasks, 2 parallel tasks
        # the execd writes the reservation as use from now on (sge_conf(5) ACCT_RESERVED_USAGE)
        conf = cluster.jobs / "global"
        conf.write_text(re.sub(r"(?m)^execd_params\s.*$", "execd_params ACCT_RESERVED_USAGE=true",
                               cluster.run("qconf", "-sconf", "global")))
        cluster.run("qconf", "-Mconf", str(conf))
        sleep(8)
        cluster.submit("reserved", "-b", "y", "/bin/sleep", "12")
        acct = cluster.records(12, monotonic() + 90)
    except BaseException:
        stop()
        raise
    return {"cluster": cluster, "accounting": acct, "stop": stop,
            "host": subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()}


@pytest.fixture(scope="module")
def real(started_ahead):
    """The Grid Engine once its jobs have ended, and its accounting file read; stopped and removed afterwards,
    also when a test fails."""
    try:
        acct = started_ahead["accounting"]
        assert detect_format(acct) == "sge"
        yield started_ahead["cluster"], read_sge(acct, cluster="real"), started_ahead["host"]
    finally:
        started_ahead["stop"]()


def _row(result, cluster, name) -> pd.Series:
    rows = result.jobs[result.jobs["job_id"] == str(cluster.ids[name])]
    assert len(rows) == 1, name
    return rows.iloc[0]


def test_every_record_is_accounted_for(real):
    cluster, result, _ = real
    led = result.ledger
    assert led.balanced and led.quarantined == 0 and led.folded == 2
    assert led.used == len(result.jobs) == 10  # 7 jobs (one an array of 3 tasks), the reserved one
    assert result.jobs["state"].notna().all() and (result.jobs["source"] == "sge").all()


def test_plain_failed_and_timed_out_jobs(real):
    cluster, result, host = real
    ok, fail, hrt = (_row(result, cluster, k) for k in ("ok", "fail", "hrt"))
    assert (ok["state"], ok["exit_code"], ok["time_limit_s"], ok["node_list"]) == ("COMPLETED", 0, 600, host)
    assert 2 <= ok["elapsed_s"] <= 10 and ok["user"] == "root" and ok["partition"] == "all.q"
    assert (fail["state"], fail["exit_code"]) == ("FAILED", 3)
    assert (hrt["state"], hrt["signal"], hrt["time_limit_s"]) == ("TIMEOUT", 9, 5) and 5 <= hrt["elapsed_s"] < 60


def test_array_tasks(real):
    cluster, result, _ = real
    base = cluster.ids["arr"]
    tasks = result.jobs[result.jobs["array_job_id"] == base].sort_values("array_task_id")
    assert tasks["job_id"].tolist() == [f"{base}.{k}" for k in (1, 2, 3)]
    assert tasks["array_task_id"].tolist() == [1, 2, 3] and (tasks["state"] == "COMPLETED").all()


def test_parallel_tasks_are_folded_into_their_job(real):
    cluster, result, host = real
    tight = _row(result, cluster, "tight")
    assert tight["alloc_cpus"] == 2 and tight["state"] == "COMPLETED" and tight["node_list"] == host
    text = (cluster.root / "default" / "common" / "accounting").read_text().splitlines()
    mine = [ln.split(":") for ln in text if ln and ln[0] != "#" and ln.split(":")[5] == str(cluster.ids["tight"])]
    assert sorted(f[41] != "NONE" for f in mine) == [False, True, True]  # the job's record and two task records
    assert tight["cpu_used_s"] == pytest.approx(sum(float(f[36]) for f in mine))
    assert tight["elapsed_s"] >= 4  # its tasks slept 2 + 1 s, then the script 1 s


def test_deleted_while_running(real):
    cluster, result, _ = real
    d = _row(result, cluster, "del")
    # Son of Grid Engine writes qdel of a running job as failed 100, exit 137 and has no qdel_info field
    assert (d["state"], d["exit_code"], d["signal"]) == ("FAILED", 137, 9) and d["elapsed_s"] < 100


def test_memory_request_against_maxvmem(real):
    cluster, result, _ = real
    mem = _row(result, cluster, "mem")
    assert mem["req_mem_bytes"] == 1024 * MIB and "sge_req_vmem" in mem["caveats"]
    assert 200 * MIB <= mem["mem_peak_bytes"] <= 1024 * MIB  # the 200 MiB it held, and the interpreter


def test_reserved_usage_is_not_use(real):
    cluster, result, _ = real
    r = _row(result, cluster, "reserved")
    assert pd.isna(r["cpu_used_s"]) and "sge_reserved_usage" in r["caveats"] and r["elapsed_s"] >= 12
