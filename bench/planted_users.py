"""The generated month's planted over-requesting users, as job scripts, and how the advisor's memory suggestion
meets their planted need (used by ``bench_advisor`` and ``tests/predictors/test_planted_users.py``).

A user over-requests memory when their habitual request (the commonest exact request among their jobs: partition,
time limit, CPUs, memory, nodes, GPUs, job family) is at least ``ratio`` times the planted need of those jobs at
p90 (the 90th percentile of ``mem_peak_bytes`` in ``truth_jobs.csv`` over the jobs that ran).  ``ratio`` is 1.5:
a habit's peaks now spread around it (``[habit_spread]``, sd 0.34 of log peak), so its p90 stands about 1.55
times above its median, and 1.5 × p90 asks what 2 × p90 asked of habits without spread (about twice the
typical peak).  Each becomes the
sbatch script that asks for that request; the advisor passes for a user when its suggested memory is below the
request and at or above that planted need.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit.families import job_family

KEY = ("partition", "time_limit_s", "req_cpus", "req_mem_bytes", "req_nodes", "req_gpus", "gpu_type", "family")
MIB = 2**20


def over_requesting(jobs: pd.DataFrame, truth: pd.DataFrame, *, ratio: float = 1.5, min_jobs: int = 20) -> pd.DataFrame:
    """One row per over-requesting user: their habitual request, a job name of it, its jobs and planted need."""
    j = jobs.assign(family=job_family(jobs["job_name"]), job_id=jobs["job_id"].astype(str))
    t = truth.assign(job_id=truth["job_id"].astype(str))[["job_id", "elapsed_s", "mem_peak_bytes"]]
    j = j.merge(t, on="job_id", suffixes=("", "_truth"))
    j = j[(j["elapsed_s_truth"] > 0) & j["user"].notna() & j["req_mem_bytes"].notna()]
    keyed = j[KEY[0]].astype("string").fillna("<na>")
    for c in KEY[1:]:
        keyed = keyed + "|" + j[c].astype("string").fillna("<na>")
    j = j.assign(key=keyed.to_numpy())
    rows = []
    for user, g in j.groupby("user", sort=True):
        habit = g["key"].value_counts()
        if habit.iloc[0] < min_jobs:
            continue
        h = g[g["key"] == habit.index[0]]
        need = float(np.quantile(h["mem_peak_bytes_truth"].to_numpy(dtype=np.float64), 0.9))
        req = float(h["req_mem_bytes"].iloc[0])
        if req < ratio * need:
            continue
        first = h.iloc[0]
        rows.append({"user": str(user), "jobs": len(h), "request_bytes": req, "need_p90_bytes": need,
                     "job_name": str(h["job_name"].mode().iloc[0]), **{k: first[k] for k in KEY if k != "family"}})
    return pd.DataFrame(rows)


def script_of(row) -> str:
    """The sbatch script that asks for a user's habitual request."""
    nodes = int(row["req_nodes"])
    cpus = int(row["req_cpus"])
    lines = [f"--job-name={row['job_name']}", f"--partition={row['partition']}",
             f"--time={int(row['time_limit_s']) // 60}", f"--nodes={nodes}",
             f"--cpus-per-task={cpus}" if nodes == 1 else f"--ntasks={cpus}",
             f"--mem={int(round(row['request_bytes'] / nodes / MIB))}"]
    if int(row["req_gpus"] or 0) > 0:
        kind = "" if pd.isna(row["gpu_type"]) else f"{row['gpu_type']}:"
        lines.append(f"--gpus={kind}{int(row['req_gpus'])}")
    return "#!/bin/bash\n" + "".join(f"#SBATCH {x}\n" for x in lines) + "srun ./run\n"


def planted_check(model, users: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
    """Per over-requesting user: the advisor's suggested memory and whether it is below the request and at or
    above the planted need."""
    from predictors.advisor import advise, read_job

    out = []
    for row in users.to_dict("records"):
        a = advise(read_job(script_of(row)), model, user=row["user"], level=level)
        sug = a["resources"]["memory"]["suggested"]
        out.append({"user": row["user"], "request_bytes": row["request_bytes"], "need_p90_bytes": row["need_p90_bytes"],
                    "suggested_bytes": sug, "below_request": sug < row["request_bytes"],
                    "covers_need": sug >= row["need_p90_bytes"]})
    res = pd.DataFrame(out)
    res["ok"] = res["below_request"] & res["covers_need"]
    return res
