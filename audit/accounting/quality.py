"""Data-quality caveats: how many jobs each affects, and what share of allocated core- and GPU-hours."""

from __future__ import annotations

import pandas as pd

from ..job_table import CAVEATS


def caveat_counts(jobs: pd.DataFrame, waste: pd.DataFrame) -> list[dict]:
    cav = jobs["caveats"].fillna("").astype(str)
    core = waste["core_s_alloc"].to_numpy(dtype=float)
    gpu = waste["gpu_s_alloc"].to_numpy(dtype=float)
    core_tot, gpu_tot = core.sum(), gpu.sum()
    rows = []
    for code, meaning in CAVEATS.items():
        on = cav.str.contains(rf"(?:^|;){code}(?:;|$)", regex=True).to_numpy()
        if not on.any():
            continue
        rows.append({
            "caveat": code, "meaning": meaning, "jobs": int(on.sum()),
            "share_of_jobs": float(on.mean()),
            "share_of_core_hours": float(core[on].sum() / core_tot) if core_tot > 0 else None,
            "share_of_gpu_hours": float(gpu[on].sum() / gpu_tot) if gpu_tot > 0 else None,
        })
    return sorted(rows, key=lambda r: -r["jobs"])


def usage_coverage(waste: pd.DataFrame) -> dict:
    """Share of allocated core-, memory- and GPU-hours whose use is known."""
    def share(alloc, known):
        a = waste[alloc].to_numpy(dtype=float)
        t = a.sum()
        return float(a[waste[known].to_numpy()].sum() / t) if t > 0 else None

    return {"cpu": share("core_s_alloc", "cpu_usage_known"), "memory": share("mem_byte_s_alloc", "mem_usage_known"),
            "gpu": share("gpu_s_alloc", "gpu_usage_known"), "jobs_without_any_usage": int(
                (~waste["cpu_usage_known"] & ~waste["mem_usage_known"] & ~waste["gpu_usage_known"]).sum())}



