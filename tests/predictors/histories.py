"""Hand-built job histories: groups of jobs with planted requests, use and outcomes, as a canonical job table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit.job_table import conform

GIB = 2**30
T0 = pd.Timestamp("2026-01-01", tz="UTC")
DAYS = 40.0


def group(rng, user: str, family: str, n: int, *, limit_s: float = 4 * 3600, cpus: int = 4, mem_gib: float = 16,
          gpus: int = 0, time_use=(0.2, 0.6), mem_use=(0.2, 0.5), cores_busy=(0.6, 0.9), gpu_util=(0.6, 0.9),
          alloc_cpus: int | None = None, states=None, exit_codes=None, days=(0.0, DAYS), partition: str = "cpu",
          gpu_type: str | None = "a100") -> pd.DataFrame:
    """``n`` jobs of one user and family, submitted evenly over ``days``.  Use is drawn uniformly as a share of
    the request (``time_use``, ``mem_use``), cores busy as a share of the CPUs held, GPU utilisation as is.
    ``states`` / ``exit_codes``: one per job, in submission order (default all COMPLETED, exit 0)."""
    submit = T0 + pd.to_timedelta(np.sort(rng.uniform(days[0], days[1], n)) * 86400, unit="s").round("s")
    elapsed = np.round(rng.uniform(*time_use, n) * limit_s)
    held = alloc_cpus or cpus
    gpu = gpus > 0
    frame = pd.DataFrame({
        "cluster": "hand", "job_id": [f"{user}-{family}-{i}" for i in range(n)], "source": "hand",
        "user": user, "account": "acct", "partition": partition, "qos": "normal",
        "job_name": [f"{family}_{i % 50}" for i in range(n)], "submit_time": submit, "eligible_time": submit,
        "start_time": submit, "end_time": submit + pd.to_timedelta(elapsed, unit="s"),
        "elapsed_s": elapsed.astype(np.int64), "time_limit_s": int(limit_s),
        "state": states if states is not None else "COMPLETED",
        "exit_code": exit_codes if exit_codes is not None else 0, "req_nodes": 1, "req_cpus": held,
        "req_mem_bytes": int(mem_gib * GIB), "req_gpus": gpus, "gpu_type": gpu_type if gpu else None,
        "alloc_nodes": 1, "alloc_cpus": held, "alloc_mem_bytes": int(mem_gib * GIB), "alloc_gpus": gpus,
        "cpu_used_s": rng.uniform(*cores_busy, n) * cpus * elapsed if alloc_cpus is None else
        rng.uniform(*cores_busy, n) * elapsed,
        "mem_peak_bytes": np.round(rng.uniform(*mem_use, n) * mem_gib * GIB).astype(np.int64),
        "gpu_util_mean": rng.uniform(*gpu_util, n) if gpu else np.nan,
        "gpu_mem_peak_bytes": np.round(rng.uniform(0.3, 0.6, n) * gpus * 80 * GIB) if gpu else np.nan,
    })
    return frame


def history(*groups: pd.DataFrame) -> pd.DataFrame:
    jobs = pd.concat(groups, ignore_index=True).sort_values("submit_time", kind="stable").reset_index(drop=True)
    return conform(jobs)


def script(*directives: str, body: str = "srun ./run") -> str:
    return "#!/bin/bash\n" + "".join(f"#SBATCH {d}\n" for d in directives) + body + "\n"
