"""The submit-time advisor on the generated 122,000-job month: fitting its model once, then advice from the
saved model as a user runs it (``reclaim predict SCRIPT --history STORE``, a fresh process each time).

Target: advice in < 2 s (whole process: start-up, loading the model, the prediction).  The month's store is
ingested once into bench/data/month_store and its model fitted once (timed when it is); the planted
over-requesting users' memory suggestions are checked against the planted need (``planted_users``).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from .bench_account import month_dir
from .common import DATA, current, made, timed
from .planted_users import over_requesting, planted_check, script_of

RUNS = 7


def month_store() -> Path:
    from audit.ingest import ingest

    store = DATA / "month_store"
    if not current(store):
        ingest([month_dir() / "sacct.txt", month_dir() / "cluster.toml"], store)
        made(store)
    return store


def _advice_times(cmd: list[str]) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(RUNS + 1):  # the first run warms the file cache and is not counted
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if rc not in (0, 3):
            raise RuntimeError(f"{' '.join(cmd)} exited {rc}")
        walls.append(wall)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls[1:], cpus[1:]


def main() -> None:
    from audit.store import read_jobs
    from predictors.advisor import FOLDER, fit, is_current, load_model

    store = month_store()
    if not is_current(store):
        with timed() as t_fit:
            fit(store)
        print(f"advisor fit: {store} ({t_fit['s']:.0f} s, five targets)")
    jobs = read_jobs(store)
    truth = pd.read_csv(month_dir() / "truth_jobs.csv")
    users = over_requesting(jobs, truth)
    ranked = users.sort_values("jobs", ascending=False)
    reclaim = str(Path(sys.executable).with_name("reclaim"))
    gpu = ranked[ranked["req_gpus"].fillna(0) > 0]
    for kind, top in (("CPU job", ranked.iloc[0]), ("GPU job", gpu.iloc[0] if len(gpu) else None)):
        if top is None:
            continue
        job = DATA / f"advisor_{kind.split()[0].lower()}_job.sh"
        job.write_text(script_of(top), encoding="utf-8")
        walls, cpus = _advice_times([reclaim, "predict", str(job), "--history", str(store), "--user", top["user"],
                                     "--json"])
        print(f"advisor latency, {kind} ({'five' if kind == 'GPU job' else 'three'} targets): {len(jobs):,} jobs, "
              f"saved model, user {top['user']} ({top['jobs']:,} jobs of that request): median "
              f"{statistics.median(walls):.2f} s wall (min {min(walls):.2f}, max {max(walls):.2f}), "
              f"{statistics.median(cpus):.2f} s CPU, over {RUNS} runs (target < 2 s)")
    with timed() as t_check:
        res = planted_check(load_model(store / FOLDER), users)
    print(f"advisor planted users: {int(res['ok'].sum())} of {len(res)} over-requesting users "
          f"({res['ok'].mean():.1%}) get memory below their request and at or above their planted need at p90 "
          f"(below: {res['below_request'].mean():.1%}, covers: {res['covers_need'].mean():.1%}; target ≥ 90 %; "
          f"{t_check['s']:.0f} s in one process)")


if __name__ == "__main__":
    main()
