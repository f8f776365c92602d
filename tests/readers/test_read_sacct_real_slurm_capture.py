"""A capture from real Slurm 22.05.8 (``../shared/tools/slurm``, two nodes): an 8-task srun step on one node
(job 1), a 4-task step over 2 nodes (job 2) and a one-task batch job (job 3), dumped with
``sacct -a -p --format`` in reportseff's alphabetical order (AdminComment first, JobID in the middle, a trailing
``|``).  Every efficiency the reader gives equals a plain-Python recomputation on the glossary's rule, with and
without ``TRESUsageInTot`` / ``AveRSS``.

Submitted: ``sbatch -n 8 -N 1 --mem=2000M --wrap "srun -n8 worker mib=60 cpu=1 hold=4"``,
``sbatch -N 2 -n 4 --ntasks-per-node=2 --mem=1000M --wrap "srun -n4 worker mib=80 cpu=1 hold=4"``,
``sbatch --mem=500M --wrap "worker mib=100 cpu=2 hold=3"``.
"""

from __future__ import annotations

import math

import pytest

from audit.accounting.efficiency import efficiency
from audit.readers.detect import detect_format
from audit.readers.sacct.text import read_sacct

CAPTURE = [
    'AdminComment|AllocCPUS|AllocTRES|AveRSS|Elapsed|JobID|JobIDRaw|JobName|MaxRSS|NNodes|NTasks|ReqMem|State|Timelimit|TotalCPU|TRESUsageInTot|',
    '|8|billing=8,cpu=8,mem=2000M,node=1||00:00:16|1|1|eight||1||2000M|COMPLETED|00:05:00|00:08.481||',
    '|8|cpu=8,mem=2000M,node=1|10944K|00:00:16|1.batch|1.batch|batch|10944K|1|1||COMPLETED||00:00.013|cpu=00:00:00,energy=0,fs/disk=28656,mem=10944K,pages=1,vmem=219444K|',
    '|8|billing=8,cpu=8,mem=2000M,node=1|1652K|00:00:16|1.extern|1.extern|extern|1652K|1|1||COMPLETED||00:00.002|cpu=00:00:00,energy=0,fs/disk=6976,mem=1652K,pages=0,vmem=76128K|',
    '|8|cpu=8,mem=2000M,node=1|70298K|00:00:16|1.0|1.0|python|70444K|1|8||COMPLETED||00:08.466|cpu=00:00:08,energy=0,fs/disk=344536,mem=562384K,pages=1,vmem=1144032K|',
    '|4|billing=4,cpu=4,mem=2000M,node=2||00:00:09|2|2|twonode||2||2000M|COMPLETED|00:05:00|00:04.295||',
    '|2|cpu=2,mem=1000M,node=1|10596K|00:00:09|2.batch|2.batch|batch|10596K|1|1||COMPLETED||00:00.013|cpu=00:00:00,energy=0,fs/disk=29582,mem=10596K,pages=0,vmem=286008K|',
    '|4|billing=4,cpu=4,mem=2000M,node=2|1728K|00:00:09|2.extern|2.extern|extern|1832K|2|2||COMPLETED||00:00.002|cpu=00:00:00,energy=0,fs/disk=13952,mem=3456K,pages=0,vmem=152256K|',
    '|4|cpu=4,mem=2000M,node=2|90812K|00:00:09|2.0|2.0|python|90900K|2|4||COMPLETED||00:04.279|cpu=00:00:04,energy=0,fs/disk=172268,mem=363248K,pages=0,vmem=572032K|',
    '|1|billing=1,cpu=1,mem=500M,node=1||00:00:08|3|3|single||1||500M|COMPLETED|00:05:00|00:02.089||',
    '|1|cpu=1,mem=500M,node=1|112932K|00:00:08|3.batch|3.batch|batch|112932K|1|1||COMPLETED||00:02.087|cpu=00:00:02,energy=0,fs/disk=47315,mem=112932K,pages=0,vmem=117512K|',
    '|1|billing=1,cpu=1,mem=500M,node=1|1648K|00:00:08|3.extern|3.extern|extern|1648K|1|1||COMPLETED||00:00.001|cpu=00:00:00,energy=0,fs/disk=6976,mem=1648K,pages=0,vmem=76128K|',
]
UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def _size(v: str) -> float | None:
    if not v:
        return None
    return float(v[:-1]) * UNITS[v[-1]] if v[-1] in UNITS else float(v)


def _secs(v: str) -> float:
    days, _, hms = v.rpartition("-")
    parts = [float(p) for p in hms.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    return (float(days) if days else 0.0) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def _tres_mem(v: str) -> float | None:
    for kv in v.split(","):
        if kv.startswith("mem="):
            return _size(kv[4:])
    return None


def _fields(line: str) -> list[str]:
    return line[:-1].split("|")  # sacct -p ends every line with one "|"


def _recompute(lines: list[str]) -> dict:
    """cpu_eff and mem_eff by the glossary's rules, one plain loop, no reader code."""
    names = _fields(lines[0])
    rows = [dict(zip(names, _fields(ln), strict=True)) for ln in lines[1:]]
    jobs = {}
    for r in rows:
        if "." not in r["JobID"]:
            jobs[r["JobID"]] = {"row": r, "mem": None}
    for r in rows:
        if "." not in r["JobID"]:
            continue
        job = jobs[r["JobID"].split(".")[0]]
        tot = _tres_mem(r.get("TRESUsageInTot", ""))
        if tot is None and r.get("AveRSS") and r["NTasks"]:
            tot = _size(r["AveRSS"]) * int(r["NTasks"])
        if tot is None and r["MaxRSS"]:
            tasks, nodes = int(r["NTasks"]), int(r["NNodes"])
            tot = _size(r["MaxRSS"]) * (1 if tasks == 1 else math.ceil(tasks / nodes) * nodes)
        if tot is not None and (job["mem"] is None or tot > job["mem"]):
            job["mem"] = tot
    out = {}
    for jid, job in jobs.items():
        r = job["row"]
        cpus, el = int(r["AllocCPUS"]), _secs(r["Elapsed"])
        req = _size(r["ReqMem"])  # Slurm 22.05 prints the job's total, no c/n flag
        out[jid] = {"cpu_eff": _secs(r["TotalCPU"]) / (cpus * el), "mem_eff": job["mem"] / req, "mem": job["mem"]}
    return out


def _drop(lines: list[str], fields: tuple[str, ...]) -> list[str]:
    names = _fields(lines[0])
    keep = [i for i, n in enumerate(names) if n not in fields]
    return ["|".join(_fields(ln)[i] for i in keep) + "|" for ln in lines]


@pytest.mark.parametrize("drop", [(), ("TRESUsageInTot",), ("TRESUsageInTot", "AveRSS")],
                         ids=["tresusageintot", "averss", "maxrss-times-tasks"])
def test_every_efficiency_equals_the_recomputation(tmp_path, drop):
    lines = _drop(CAPTURE, drop)
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect_format(f) == "sacct"
    res = read_sacct(f)
    assert res.ledger.balanced and res.ledger.quarantined == 0 and len(res.jobs) == 3
    eff = efficiency(res.jobs).set_index("job_id")
    want = _recompute(lines)
    jobs = res.jobs.set_index("job_id")
    for jid, w in want.items():
        assert jobs.loc[jid, "mem_peak_bytes"] == w["mem"], (jid, drop)
        assert eff.loc[jid, "cpu_eff"] == pytest.approx(w["cpu_eff"], rel=1e-12), (jid, drop)
        assert eff.loc[jid, "mem_eff"] == pytest.approx(w["mem_eff"], rel=1e-12), (jid, drop)
    flagged = jobs["caveats"].fillna("").str.contains("maxrss_times_tasks")
    assert sorted(jobs.index[flagged]) == (["1", "2"] if len(drop) == 2 else [])


def test_the_bounds_bracket_the_measured_sum():
    # the 8-task step: TRESUsageInTot 562,384K <= MaxRSS 70,444K x 8 = 563,552K; the 2-node step:
    # 363,248K <= 90,900K x 2 per node x 2 nodes = 363,600K; a single task's MaxRSS would say 70,444K and 90,900K
    full, upper = _recompute(CAPTURE), _recompute(_drop(CAPTURE, ("TRESUsageInTot", "AveRSS")))
    assert (full["1"]["mem"], upper["1"]["mem"]) == (562384 * 1024, 563552 * 1024)
    assert (full["2"]["mem"], upper["2"]["mem"]) == (363248 * 1024, 363600 * 1024)
