"""Ingest 1,006,544 allocation-only sacct lines in the 26-field headerless XDMoD order (one line per job, the
shape ``sacct -X`` and Open XDMoD's shredder dumps have), the whole process timed.

1. ``reclaim ingest FILE --out DIR`` as a user runs it (interpreter start, imports, reading, the store
   written: jobs.parquet, ledger.json, quarantine.csv, reclaim.duckdb, cluster_shape.toml).  Target: >= 150,000
   jobs/s and < 1.5 GiB peak.
2. The reader alone (``read_sacct`` in a fresh interpreter), for where the time goes.  Target: >= 100,000
   jobs/s whole process and < 2 GiB peak.

The file is written once into bench/data/ (deterministic, seed 11) and reused.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .common import DATA

LINES = 1_006_544


def make_file(path, lines: int = LINES, seed: int = 11) -> None:
    """Lines shaped like ``phillips.log``: 26 fields, legacy and flagged ReqMem, GPU TRES on some, node lists."""
    rng = np.random.default_rng(seed)
    n = lines
    ids = (100_000 + np.arange(n)).astype(str)
    nodes = rng.choice([1, 1, 1, 1, 2, 4, 8], n)
    cpus = nodes * rng.choice([1, 4, 8, 12, 16, 24], n)
    el = rng.lognormal(7.5, 1.5, n).clip(1, 6 * 86400).astype(int)
    limit = (el * rng.uniform(1.2, 4, n)).astype(int)
    t0 = np.datetime64("2016-12-01T00:00:00") + np.sort(rng.integers(0, 60 * 86400, n)).astype("timedelta64[s]")
    start = t0 + rng.integers(0, 3600, n).astype("timedelta64[s]")
    end = start + el.astype("timedelta64[s]")
    ts = lambda a: np.datetime_as_string(a, unit="s")  # noqa: E731
    state = rng.choice(["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 380693", "NODE_FAIL"], n,
                       p=[0.8, 0.08, 0.05, 0.05, 0.02])
    user = np.char.add("u", rng.integers(0, 500, n).astype(str))
    mem_kind = rng.integers(0, 3, n)
    mem_val = rng.choice([2000, 4000, 8000, 31000], n)
    reqmem = np.where(mem_kind == 0, np.char.add(mem_val.astype(str), "Mn"),
                      np.where(mem_kind == 1, np.char.add(mem_val.astype(str), "Mc"),
                               np.char.add((2147483648 + mem_val).astype(str), "Mn")))
    per_job_mem = np.where(mem_kind == 1, mem_val * cpus, mem_val * nodes)
    gpus = np.where(rng.uniform(size=n) < 0.1, rng.choice([1, 2, 4], n), 0)
    c, nn = cpus.astype(str), nodes.astype(str)
    gres = np.where(gpus > 0, np.char.add(",gres/gpu=", gpus.astype(str)), "")
    memt = np.char.add(",mem=", np.char.add(per_job_mem.astype(str), "M"))
    req_tres = np.char.add(np.char.add(np.char.add("cpu=", c), memt), np.char.add(",node=", nn))
    alloc_tres = np.char.add(np.char.add(np.char.add(np.char.add("billing=", c), np.char.add(",cpu=", c)), gres),
                             np.char.add(memt, np.char.add(",node=", nn)))
    node_list = np.where(nodes > 1, np.char.add("cpn-f13-[01-", np.char.add(np.char.zfill(nn, 2), "]")),
                         np.char.add("cpn-f11-", np.char.zfill(rng.integers(1, 60, n).astype(str), 2)))

    def hms(s):
        d, rem = np.divmod(s.astype(np.int64), 86400)
        h, rem = np.divmod(rem, 3600)
        m, sec = np.divmod(rem, 60)
        body = np.char.add(np.char.add(np.char.add(np.char.zfill(h.astype(str), 2), ":"),
                                       np.char.add(np.char.zfill(m.astype(str), 2), ":")),
                           np.char.zfill(sec.astype(str), 2))
        return np.where(d > 0, np.char.add(np.char.add(d.astype(str), "-"), body), body)

    full = lambda v: np.full(n, v)  # noqa: E731
    cols = [ids, ids, full("phillips"), full("cpu"), full("normal"), np.char.add("a", user), full("grp"),
            full("45789"), user, full("380693"), ts(t0), ts(t0), ts(start), ts(end), hms(el), full("0:0"), state,
            nn, c, c, reqmem, req_tres, alloc_tres, hms(limit), node_list, full("job")]
    body = cols[0]
    for col in cols[1:]:
        body = np.char.add(np.char.add(body, "|"), col)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(body.tolist()) + "\n", encoding="utf-8")


#: the timed process; its peak is VmHWM (ru_maxrss would carry over the parent's across exec)
CHILD = """
import re, sys
from audit.readers.sacct.text import read_sacct
r = read_sacct(sys.argv[1])
led = r.ledger
assert led.balanced and led.quarantined == 0, led.to_dict()
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)
print(len(r.jobs), led.read, int(hwm) / 1024)
"""


#: the command itself, in a fresh interpreter that reports its own peak (VmHWM) as it exits
COMMAND = """
import atexit, re, sys
from audit.cli import main
atexit.register(lambda: print("VmHWM", int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) / 1024))
sys.argv = ["reclaim", "ingest", sys.argv[1], "--out", sys.argv[2]]
main()
"""


def command(path, runs: int = 3) -> None:
    import json
    import statistics
    import tempfile

    walls, peaks = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as out:
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", COMMAND, str(path), out], capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            if p.returncode != 0:
                raise SystemExit(f"reclaim ingest exited {p.returncode}: {p.stderr[-2000:]}")
            peaks.append(float(p.stdout.split("VmHWM")[-1]))
            jobs = json.loads((Path(out) / "ledger.json").read_text())["totals"]["jobs_emitted"]
    s = statistics.median(walls)
    print(f"reclaim ingest (whole command, store written): {jobs:,} jobs in {s:.2f} s median of {runs} "
          f"(min {min(walls):.2f}, max {max(walls):.2f}) = {jobs / s:,.0f} jobs/s; peak {max(peaks):,.0f} MiB  "
          f"[target >= 150,000 jobs/s, < 1,536 MiB]")


def main() -> None:
    path = DATA / "sacct_alloc_1M.txt"
    if not path.exists():
        make_file(path)
    command(path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], check=True, capture_output=True, text=True)
    s = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    jobs, read, peak = out.stdout.split()
    jobs, read, peak = int(jobs), int(read), float(peak)
    load = os.getloadavg()[0]
    print(f"sacct allocation-only ingest (26-field XDMoD order): {read:,} lines ({jobs:,} jobs) in {s:.2f} s whole "
          f"process = {jobs / s:,.0f} jobs/s (CPU {cpu:.2f} s = {jobs / cpu:,.0f} jobs per CPU-second; load "
          f"{load:.1f} on {os.cpu_count()} CPUs); peak memory {peak:,.0f} MiB  "
          f"[target >= 100,000 jobs/s, < 2,048 MiB]")


if __name__ == "__main__":
    main()
