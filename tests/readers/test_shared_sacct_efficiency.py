"""``../shared/traces/sacct/``: the real dumps hold no usage (allocation lines; the slurmrestd samples ran on
clusters without usage gathering), so CPU and memory efficiency must be unknown on every job, and time efficiency
must equal a plain-Python recomputation from the fields themselves (Elapsed / Timelimit)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from audit.accounting.efficiency import efficiency
from audit.readers.sacct.fields import XDMOD_26
from audit.readers.sacct.json_jobs import read_sacct_json
from audit.readers.sacct.text import read_sacct

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "sacct"
TEXT = sorted([SHARED / "phillips.log", *(SHARED / "xdmod-shredder" / "shredder-input").glob("*.log")])
JSON = sorted((SHARED / "slurmrestd-json").glob("*/*.json"))
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/traces/sacct is absent")


def _secs(v: str) -> float | None:
    if v in ("", "UNLIMITED", "Partition_Limit", "INVALID"):
        return None
    days, _, hms = v.rpartition("-")
    parts = [float(p) for p in hms.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    return (float(days) if days else 0.0) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


@pytest.mark.parametrize("path", TEXT, ids=[p.name for p in TEXT])
def test_text_dumps(path):
    res = read_sacct(path)
    eff = efficiency(res.jobs)
    assert eff["cpu_eff"].isna().all() and eff["mem_eff"].isna().all()  # no usage fields: unknown, never 0
    want = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        f = dict(zip(XDMOD_26, line.split("|"), strict=False))
        el, lim = _secs(f["Elapsed"]), _secs(f["Timelimit"])
        want[f["JobID"]] = el / lim if el is not None and lim else np.nan
    got = dict(zip(eff["job_id"], eff["time_eff"], strict=True))
    for jid, t in got.items():
        w = want.get(jid)
        if w is None:  # a task of an unexpanded array range: its line's figure
            w = next(v for k, v in want.items() if k.startswith(jid.split("_")[0] + "_["))
        assert (np.isnan(t) and np.isnan(w)) or t == pytest.approx(w, rel=1e-12), (path.name, jid)


@pytest.mark.parametrize("path", JSON, ids=[f"{p.parent.name}/{p.name}" for p in JSON])
def test_json_samples(path):
    res = read_sacct_json(path)
    eff = efficiency(res.jobs).set_index("job_id")
    for rec in json.loads(path.read_text(encoding="utf-8"))["jobs"]:
        jid = str(rec["job_id"])
        if jid not in eff.index:
            continue
        lim = rec["time"]["limit"]
        limit = lim.get("number") if isinstance(lim, dict) and lim.get("set") and not lim.get("infinite") else None
        el = rec["time"]["elapsed"]
        w = el / (limit * 60) if limit else np.nan
        t = eff.loc[jid, "time_eff"]
        assert (np.isnan(t) and np.isnan(w)) or t == pytest.approx(w, rel=1e-12), (path.name, jid)
        assert np.isnan(eff.loc[jid, "mem_eff"])  # no memory TRES on any step: unknown
