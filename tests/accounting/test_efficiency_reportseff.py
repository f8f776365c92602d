"""Per-job efficiency follows reportseff's definitions; checked on real sacct lines against an independent parse."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from audit.accounting.efficiency import efficiency
from audit.readers.sacct.fields import XDMOD_26
from audit.readers.sacct.text import read_sacct

from ..conftest import trace


def _seconds(text: str) -> float | None:
    """A deliberately separate, plain-Python reading of Slurm durations."""
    if text in ("UNLIMITED", "Partition_Limit", ""):
        return None
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [float(p) for p in text.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    h, m, s = parts
    return days * 86400 + h * 3600 + m * 60 + s


def test_time_efficiency_on_real_lines():
    path = trace("sacct", "phillips.log")
    eff = efficiency(read_sacct(path).jobs)
    lines = path.read_text(encoding="utf-8").splitlines()
    col = {n: i for i, n in enumerate(XDMOD_26)}
    checked = 0
    for line, (_, row) in zip(lines, eff.iterrows(), strict=True):
        f = line.split("|")
        elapsed, limit = _seconds(f[col["Elapsed"]]), _seconds(f[col["Timelimit"]])
        assert row["job_id"] == f[col["JobID"]]
        if limit:
            assert row["time_eff"] == pytest.approx(elapsed / limit, rel=1e-12)
            checked += 1
        else:
            assert math.isnan(row["time_eff"])
        assert math.isnan(row["cpu_eff"]) and math.isnan(row["mem_eff"])  # no usage columns in this dump
    assert checked > 4000


def test_cpu_and_memory_efficiency_definitions(tmp_path):
    # reportseff: CPU eff = TotalCPU / (AllocCPUS x Elapsed); memory eff = peak / requested memory
    f = tmp_path / "s.txt"
    f.write_text(
        "JobID|State|Elapsed|Timelimit|NCPUS|NNodes|ReqMem|TotalCPU|MaxRSS|NTasks\n"
        "7|COMPLETED|01:00:00|04:00:00|4|1|2000Mc|02:00:00||\n"
        "7.batch|COMPLETED|01:00:00||4|1||02:00:00|2000M|1\n"
    )
    eff = efficiency(read_sacct(f).jobs).iloc[0]
    assert eff["cpu_eff"] == pytest.approx(7200 / (4 * 3600))
    assert eff["mem_eff"] == pytest.approx(2000 / 8000)
    assert eff["time_eff"] == pytest.approx(0.25)


def test_unknown_is_not_zero():
    jobs = pd.DataFrame({"job_id": ["1"], "caveats": [None], "cpu_used_s": [None], "elapsed_s": [100],
                         "alloc_cpus": [2], "req_mem_bytes": [None], "alloc_mem_bytes": [None],
                         "mem_peak_bytes": [None], "time_limit_s": [None]})
    eff = efficiency(jobs).iloc[0]
    assert math.isnan(eff["cpu_eff"]) and math.isnan(eff["mem_eff"]) and math.isnan(eff["time_eff"])
