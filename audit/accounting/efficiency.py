"""Per-job efficiency as reportseff defines it.

* CPU efficiency = ``cpu_used_s / (alloc_cpus × elapsed_s)``
* memory efficiency = ``mem_peak_bytes / req_mem_bytes`` (the allocation when the request is unknown)
* time efficiency = ``elapsed_s / time_limit_s``

Each is NaN where an input is unknown or the denominator is zero: unknown use is never counted as zero.
A ``totalcpu_zero`` caveat (TotalCPU 0 on a job that ran over a minute) makes CPU efficiency unknown.

A CPU or memory efficiency above 100 % is not a fact about the job but about its record (usage measured
against another allocation than the one accounted, a request not enforced, clock skew): the job is flagged
``usage_exceeds_allocation`` (column and caveat, counted in the data-quality appendix) and that value is
left out of the efficiency distribution (:func:`audit.accounting.aggregate.efficiency_distribution`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _f(s: pd.Series) -> np.ndarray:
    return s.astype("Float64").to_numpy(dtype="float64", na_value=np.nan)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((den > 0) & ~np.isnan(num), num / den, np.nan)


def efficiency(jobs: pd.DataFrame) -> pd.DataFrame:
    """``job_id``, ``cpu_eff``, ``mem_eff``, ``time_eff`` for every job (NaN where unknown)."""
    cav = jobs["caveats"].fillna("").astype(str)
    cpu_used = _f(jobs["cpu_used_s"])
    cpu_used = np.where(cav.str.contains("totalcpu_zero", regex=False).to_numpy(), np.nan, cpu_used)
    elapsed = _f(jobs["elapsed_s"])
    req_mem = _f(jobs["req_mem_bytes"])
    mem_den = np.where(np.isnan(req_mem), _f(jobs["alloc_mem_bytes"]), req_mem)
    cpu_eff = _ratio(cpu_used, _f(jobs["alloc_cpus"]) * elapsed)
    mem_eff = _ratio(_f(jobs["mem_peak_bytes"]), mem_den)
    return pd.DataFrame({
        "job_id": jobs["job_id"].to_numpy(),
        "cpu_eff": cpu_eff,
        "mem_eff": mem_eff,
        "time_eff": _ratio(elapsed, _f(jobs["time_limit_s"])),
        "usage_exceeds_allocation": (np.nan_to_num(cpu_eff) > 1.0) | (np.nan_to_num(mem_eff) > 1.0),
    })


def flag_exceeding(jobs: pd.DataFrame, eff: pd.DataFrame) -> pd.DataFrame:
    """``jobs`` with the caveat ``usage_exceeds_allocation`` added where :func:`efficiency` found it."""
    on = eff["usage_exceeds_allocation"].to_numpy(dtype=bool)
    if not on.any():
        return jobs
    cav = jobs["caveats"].astype("string")
    tagged = (cav.fillna("") + ";usage_exceeds_allocation").str.lstrip(";")
    return jobs.assign(caveats=tagged.where(on, cav))
