"""The runs that chain stages: ``reclaim audit`` (ingest → accounting → what-if → report, written into one run
folder), ``reclaim simulate`` (a store or traces → one replay) and ``reclaim whatif`` (a store or traces →
the what-if sweep)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from . import __version__
from .accounting import account_jobs, write_account
from .ingest import IngestResult, ingest, read_table

QUARANTINE_SAMPLE = 20


@dataclass
class AuditResult:
    ingest: IngestResult
    summary: dict
    report_pdf: Path
    report_html: Path


def generated_at() -> str:
    """Now in UTC, or ``SOURCE_DATE_EPOCH`` when set (for byte-identical reruns)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    now = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return now.replace(microsecond=0).isoformat()


def audit(paths, out, *, cluster: str | None = None, fmt: str = "auto", timezone: str = "UTC",
          price_book=None, cluster_shape=None, whatif: bool = True, whatif_options: dict | None = None,
          log=None, delimiter: str | None = None) -> AuditResult:
    """Run the whole audit on the inputs and write the run folder ``out``.

    ``cluster_shape`` defaults to a cluster-shape TOML found among the inputs, if any.  The what-if sweep
    (``whatif/``) runs when ``whatif`` and there is a cluster shape; ``whatif_options`` go to
    :func:`audit.whatif.whatif` (``serial``, ``scheduler``, ``quiet``, …); ``log(text)`` hears what is skipped.
    """
    from reports.context import build_context
    from reports.render import render_report
    from reports.sections import account_sections, whatif_section

    out = Path(out)
    ing = ingest(paths, out, cluster=cluster, fmt=fmt, timezone=timezone, delimiter=delimiter)
    shape = cluster_shape or ing.cluster_shape
    acc = account_jobs(ing.jobs, price_book=price_book, cluster_shape=shape)
    write_account(acc, out)
    sections = account_sections(acc)
    if whatif and shape is not None:
        from .whatif import whatif as run_whatif

        result = run_whatif(ing.jobs, cluster_shape=shape, out=out, price_book=price_book, **(whatif_options or {}))
        sections["replay"] = whatif_section(result.summary)
    elif whatif and log is not None:
        log("what-if skipped: no cluster shape among the inputs (pass --cluster-shape FILE)")
    summary = acc.summary
    ledger = dict(ing.ledger)
    ledger["quarantine_sample"] = [
        dict(zip(("file", "line", "field", "reason", "raw"), row, strict=True)) for row in ing.quarantine.rows[:QUARANTINE_SAMPLE]
    ]
    context = build_context(summary, ledger, acc.efficiency, {"generated_at": generated_at(), "version": __version__},
                            sections=sections)
    written = render_report(context, out)
    return AuditResult(ingest=ing, summary=summary, report_pdf=written["pdf"], report_html=written["html"])


def simulate(paths, *, policy: str = "easy", procs: int | None = None, cluster_shape=None, out=None,
             fmt: str = "auto", timezone: str = "UTC") -> dict:
    """Replay a store or trace files under ``policy`` (:func:`audit.whatif.replay`); return the metrics.

    ``cluster_shape`` defaults to the store's shape, or one found among the inputs.
    """
    from .whatif import replay  # the simulator is loaded only for a replay

    table, found = read_table(paths, fmt=fmt, timezone=timezone)
    return replay(table, policy=policy, procs=procs, cluster_shape=cluster_shape or found, out=out)


def whatif(paths, *, procs: int | None = None, cluster_shape=None, out=None, fmt: str = "auto",
           timezone: str = "UTC", **options):
    """The what-if sweep of a store or trace files (:func:`audit.whatif.whatif`); ``out`` defaults to the
    store itself.  ``options``: :class:`audit.whatif.Options` fields and the runner's (``scheduler``,
    ``serial``, ``workers``, ``quiet``, ``price_book``)."""
    from .whatif import Options
    from .whatif import whatif as run

    table, found = read_table(paths, fmt=fmt, timezone=timezone)
    paths = [Path(p) for p in paths]
    if out is None and len(paths) == 1 and (paths[0] / "jobs.parquet").exists():
        out = paths[0]
    runner = {k: options.pop(k) for k in ("scheduler", "serial", "workers", "quiet", "price_book") if k in options}
    return run(table, cluster_shape=None if procs else (cluster_shape or found), procs=procs, out=out,
               options=Options(**options), **runner)
