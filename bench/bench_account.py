"""Accounting of a generated 122,000-job month (waste, aggregates, occupancy, failed work, dollars).

Target: < 10 s.  The month is generated once into bench/data/month (seed 1, no telemetry files) and reused;
ingestion is timed separately.
"""

from __future__ import annotations

import json

from audit.accounting.account import account_jobs
from audit.ingest import read_inputs
from audit.synthetic import generate

from .common import DATA, current, made, peak_rss_mib, timed

JOBS = 122_000


def month_dir():
    out = DATA / "month"
    if not current(out):
        generate(out, jobs=JOBS, days=30.0, seed=1, write_telemetry=False)
        made(out)
    return out


def main() -> None:
    out = month_dir()
    with timed() as t_in:
        ing = read_inputs([out / "sacct.txt"])
    with timed() as t_acc:
        acc = account_jobs(ing.jobs, cluster_shape=out / "cluster.toml")
    s = acc.summary
    print(f"ingest month: {ing.ledger['totals']['read']:,} sacct lines, {len(ing.jobs):,} jobs in {t_in['s']:.2f} s")
    print(f"account month: {len(ing.jobs):,} jobs in {t_acc['s']:.2f} s (target < 10 s); "
          f"{s['core_hours_alloc']:,.0f} core-h allocated, CPU efficiency {s['cpu_efficiency']:.1%}, "
          f"occupancy CPU {s['occupancy'].get('cpu_occupancy') or 0:.1%} GPU {s['occupancy'].get('gpu_occupancy') or 0:.1%}; "
          f"peak memory {peak_rss_mib():,.0f} MiB")
    truth = json.loads((out / "truth.json").read_text())
    expected = dict(truth["totals"])
    # generated without telemetry files: GPU use is known only where a jobstats summary carries it
    expected["gpu_hours_used"] = truth["gpu_by_usage_source"]["jobstats"]["gpu_hours_used"]
    for key in ("core_hours_alloc", "core_hours_used", "mem_gib_hours_alloc", "mem_gib_hours_peak", "gpu_hours_alloc",
                "gpu_hours_used"):
        ours, theirs = s[key], expected[key]
        dev = "n/a" if ours is None else f"{(ours - theirs) / theirs:+.4%}"
        note = " (jobstats jobs: no telemetry in this bench)" if key == "gpu_hours_used" else ""
        print(f"  vs truth.json {key}{note}: ours {ours if ours is None else round(ours, 1)} truth {theirs:,.1f} ({dev})")


if __name__ == "__main__":
    main()
