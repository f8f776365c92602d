"""Simulator throughput (jobs/s) and peak memory.

1. EASY on HPC2N (202,876 jobs, one pool of 240 processors), whole process: interpreter start,
   imports, reading the trace with ``audit.readers.swf``, converting, simulating.  Target ≥ 60,000 jobs/s.
2. EASY, fair-share (multifactor priority with Fair Tree over EASY) and budgets on the generated
   122,000-job month on its cluster scaled to 1,136 nodes (the built-in synthetic cluster with every
   node group × 8).  The month is generated once and cached in ``bench/data/sim_month/``; the time
   is the simulation alone.  Targets ≥ 20,000 jobs/s for EASY, ≥ 10,000 for the others.

3. ``reclaim simulate`` EASY on HPC2N as a user runs it (``--procs 240 --out DIR``: whole process, outputs
   written) against ``bench/minimal_easy.py``, a minimal single-purpose SimPy EASY replay of the same trace (a
   heap of ends, an FCFS queue, one reservation), run in turn after a warm-up pair, five pairs; the medians, the
   ratio of the medians and the median of the pairs' ratios.  Target: at most 0.67× the minimal replay.

Each case runs in a fresh process so its peak memory (``resource.getrusage``) is its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from .common import current, made

ROOT = Path(__file__).resolve().parents[1]
HPC2N = ROOT / ".." / "shared" / "traces" / "swf" / "HPC2N-2002-2.1-cln.swf.gz"
MONTH = ROOT / "bench" / "data" / "sim_month"
SCALE = 8
MONTH_JOBS = 122_000


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case_hpc2n() -> dict:
    """Runs in its own process: read, convert and simulate HPC2N under EASY."""
    t0 = time.perf_counter()
    from audit.readers.swf import read_swf
    from audit.whatif.to_simulator import to_jobs
    from simulator import EASY, Pool, Simulator, metrics

    t1 = time.perf_counter()
    jobs = to_jobs(read_swf(HPC2N).jobs, procs=240).jobs
    t2 = time.perf_counter()
    result = Simulator(Pool(240), EASY(), kill_at_limit=False).run(jobs)
    t3 = time.perf_counter()
    return {"jobs": len(jobs), "import_s": t1 - t0, "read_s": t2 - t1, "simulate_s": t3 - t2,
            "mean_wait_s": metrics(result)["mean_wait_s"], "peak_mib": _peak_mib()}


def _scaled_cluster_toml() -> str:
    from importlib import resources

    text = resources.files("audit.synthetic").joinpath("cluster.toml").read_text(encoding="utf-8")
    text = re.sub(r"^count = (\d+)$", lambda m: f"count = {int(m.group(1)) * SCALE}", text, flags=re.M)
    text = re.sub(r"^racks = (\d+)$", lambda m: f"racks = {int(m.group(1)) * SCALE}", text, flags=re.M)
    return re.sub(r"^digits = \d+$", "digits = 4", text, flags=re.M)


def prepare_month() -> Path:
    """Generate (once) the month on the scaled cluster and store its simulator columns."""
    cached = MONTH / "jobs.npz"
    if current(MONTH):
        return cached
    import numpy as np

    from audit.readers.sacct.text import read_sacct
    from audit.synthetic import generate
    from audit.whatif.to_simulator import to_jobs

    MONTH.mkdir(parents=True, exist_ok=True)
    spec = MONTH / "cluster_in.toml"
    spec.write_text(_scaled_cluster_toml(), encoding="utf-8")
    generate(MONTH / "trace", jobs=MONTH_JOBS, days=30.0, seed=1, cluster_spec=spec, write_telemetry=False)
    jobs = to_jobs(read_sacct(MONTH / "trace" / "sacct.txt").jobs).jobs
    np.savez(cached, **{k: (v.astype(str) if v.dtype == object else v) for k, v in jobs.columns.items()})
    made(MONTH)
    return cached


def case_month(policy: str) -> dict:
    """Runs in its own process: one policy on the cached month."""
    import numpy as np

    from audit.whatif.to_simulator import to_cluster
    from simulator import EASY, Budget, Jobs, Multifactor, Simulator, metrics

    data = np.load(MONTH / "jobs.npz")
    cols = {k: (data[k].astype(object) if data[k].dtype.kind == "U" else data[k]) for k in data.files}
    jobs = Jobs.from_arrays(**cols)
    cluster = to_cluster(MONTH / "trace" / "cluster.toml")
    accounts = sorted(set(cols["account"].tolist()))
    policies = {
        "easy": lambda: EASY(),
        "fairshare": lambda: EASY(order=Multifactor()),
        "budget": lambda: Budget({a: 1.0 / len(accounts) for a in accounts}),
    }
    t = time.perf_counter()
    result = Simulator(cluster, policies[policy]()).run(jobs)
    took = time.perf_counter() - t
    m = metrics(result)
    return {"jobs": len(jobs), "nodes": cluster.nodes, "simulate_s": took, "mean_wait_s": m["mean_wait_s"],
            "occupancy": m["occupancy"], "peak_mib": _peak_mib()}


def _spawn(call: str) -> tuple:
    code = f"import json, bench.bench_simulator as b; print(json.dumps({call}))"
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), time.perf_counter() - t


def _child(cmd: list[str]) -> dict:
    """One whole-process run of ``cmd``: wall seconds (start to exit), CPU seconds and peak MiB (its own rusage)."""
    import os

    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-500:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak": usage.ru_maxrss / 1024}


TARGET_RATIO = 0.67


def side_by_side(pairs: int = 5) -> None:
    """``reclaim simulate`` against the minimal replay, whole processes, run in turn (A B A B …, after one
    warm-up pair that is not counted: file caches, and the compiled replay's cache on a first run); the
    medians, the ratio of the medians and the median of the pairs' ratios against the target."""
    import statistics
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-simulate-") as out:
        # what the ``reclaim`` script runs (audit.cli:main)
        ours = [sys.executable, "-m", "audit.cli", "simulate", str(HPC2N), "--policy", "easy", "--procs", "240",
                "--out", out]
        minimal = [sys.executable, str(ROOT / "bench" / "minimal_easy.py"), str(HPC2N), "240"]
        _child(ours), _child(minimal)
        a, b = [], []
        for _ in range(pairs):
            a.append(_child(ours))
            b.append(_child(minimal))
    med = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
    ratio = med(a, "wall") / med(b, "wall")
    paired = statistics.median(x["wall"] / y["wall"] for x, y in zip(a, b, strict=True))
    verdict = "met" if ratio <= TARGET_RATIO and paired <= TARGET_RATIO else "not met"
    print(f"reclaim simulate EASY HPC2N (--out, whole process) median {med(a, 'wall'):.2f} s wall, "
          f"{med(a, 'cpu'):.2f} s CPU, peak {med(a, 'peak'):,.0f} MiB against a minimal SimPy EASY replay "
          f"{med(b, 'wall'):.2f} s wall, {med(b, 'cpu'):.2f} s CPU, peak {med(b, 'peak'):,.0f} MiB: "
          f"{ratio:.2f}x (pairs' median {paired:.2f}x; target <= {TARGET_RATIO}x: {verdict}; {pairs} pairs, in turn)")


def main() -> None:
    if HPC2N.exists():
        side_by_side()
        r, wall = _spawn("b.case_hpc2n()")
        print(f"simulate EASY HPC2N: {r['jobs']:,} jobs, whole process {wall:.2f} s = {r['jobs'] / wall:,.0f} jobs/s "
              f"(target ≥ 60,000); of which imports {r['import_s']:.2f} s, read+convert {r['read_s']:.2f} s, "
              f"simulate {r['simulate_s']:.2f} s = {r['jobs'] / r['simulate_s']:,.0f} jobs/s; "
              f"peak {r['peak_mib']:,.0f} MiB; mean wait {r['mean_wait_s']:,.1f} s (reference 11,042.2)")
    else:
        print(f"simulate EASY HPC2N: skipped ({HPC2N} not present)")
    t = time.perf_counter()
    fresh = not current(MONTH)
    prepare_month()
    if fresh:
        print(f"simulate month: generated and converted the {MONTH_JOBS:,}-job month in {time.perf_counter() - t:.0f} s")
    for policy, target in (("easy", 20_000), ("fairshare", 10_000), ("budget", 10_000)):
        r, _ = _spawn(f"b.case_month({policy!r})")
        print(f"simulate {policy} month: {r['jobs']:,} jobs on {r['nodes']:,} nodes in {r['simulate_s']:.1f} s = "
              f"{r['jobs'] / r['simulate_s']:,.0f} jobs/s (target ≥ {target:,}); peak {r['peak_mib']:,.0f} MiB; "
              f"mean wait {r['mean_wait_s']:,.0f} s, CPU occupancy {r['occupancy']:.2f}")


if __name__ == "__main__":
    main()
