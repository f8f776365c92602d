"""The report of the generated 122,000-job month: context, charts, HTML and PDF.  Target: < 30 s.

The month (``reclaim generate``, with telemetry) is generated and ingested once into ``bench/data/report-run``
and accounted there; the what-if is not run here (55 min on two shared cores on 2026-12-01): when
``bench/data/report-run/whatif/summary.json`` exists (``reclaim whatif bench/data/report-run``), the report
includes it and the recommendations from its ``predictions.parquet``.  Only the report is timed.
"""

from __future__ import annotations

import json
import time

import pandas as pd

from audit.accounting import account_jobs, write_account, write_recommendations
from audit.config import ReportConfig
from audit.ingest import ingest, read_table
from audit.synthetic import generate
from reports.document import build_context
from reports.render import html_to_pdf, render_html
from reports.run import read_run
from reports.tables import write_tables

from .common import DATA, current, made, peak_rss_mib

TARGET_S = 30.0


def run_dir():
    month, run = DATA / "report-month", DATA / "report-run"
    if not current(month):
        generate(month, jobs=122_000, days=30.0, seed=1)
        made(month)
    if not current(run):
        ingest([month], run)
        made(run)
    jobs, shape = read_table([run])
    acc = account_jobs(jobs, cluster_shape=shape)
    write_account(acc, run)
    preds = run / "predictions.parquet"
    level = 0.9
    if (run / "whatif" / "summary.json").exists():
        level = (json.loads((run / "whatif" / "summary.json").read_text()).get("recommended") or {}).get("level") or 0.9
    write_recommendations(acc, jobs, pd.read_parquet(preds) if preds.exists() else None, level, run)
    return run, len(jobs)


def main() -> None:
    run, jobs = run_dir()
    cfg = ReportConfig(client="Example University")
    t0 = time.perf_counter()
    r = read_run(run)
    ctx, tables = build_context(r, cfg, {"generated_at": "2026-12-01T00:00:00+00:00", "version": "bench"})
    t1 = time.perf_counter()
    write_tables(tables, run / "tables")
    html = render_html(ctx)
    (run / "report.html").write_text(html, encoding="utf-8")
    t2 = time.perf_counter()
    html_to_pdf(html, run / "report.pdf")
    t3 = time.perf_counter()
    total = t3 - t0
    print(f"report month: {jobs:,} jobs (what-if {'included' if r.whatif else 'absent'}) in {total:.1f} s "
          f"(target < {TARGET_S:.0f} s): read + context + charts {t1 - t0:.1f} s, tables + HTML {t2 - t1:.1f} s, "
          f"PDF {t3 - t2:.1f} s; {len(tables)} tables; peak memory {peak_rss_mib():,.0f} MiB; {run / 'report.pdf'}")


if __name__ == "__main__":
    main()
