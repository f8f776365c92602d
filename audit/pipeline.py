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
          log=None, config=None, progress=None) -> AuditResult:
    """Run the whole audit on the inputs and write the run folder ``out``.

    ``cluster_shape`` defaults to a cluster-shape TOML found among the inputs, if any.  The predictions and the
    what-if sweep (``whatif/``) run when ``whatif`` (the sweep needs a cluster shape); ``whatif_options`` go to
    :func:`audit.whatif.whatif` (``serial``, ``scheduler``, ``quiet``, …); ``log(text)`` hears what is skipped;
    ``config``: a :class:`audit.config.ReportConfig`; ``progress``: a :class:`audit.progress.Progress`.
    """
    from reports.document import write_report

    from .accounting import write_recommendations
    from .anonymise import Pseudonyms
    from .config import ReportConfig
    from .progress import Progress

    cfg = config or ReportConfig()
    prog = progress or Progress(quiet=True)
    out = Path(out)
    with prog.stage("ingest"):
        ing = ingest(paths, out, cluster=cluster, fmt=fmt, timezone=timezone,
                     pseudonyms=Pseudonyms(cfg.salt) if cfg.anonymise else None, stage=prog.stage)
    shape = cluster_shape or ing.cluster_shape
    book = price_book or cfg.price_book
    with prog.stage("accounting"):
        acc = account_jobs(ing.jobs, price_book=book, cluster_shape=shape, thresholds=cfg.thresholds)
        write_account(acc, out)
    frame, summary_w = None, None
    if whatif:
        from .whatif import Options, prediction_frame
        from .whatif import whatif as run_whatif

        options = Options(risk=cfg.risk, tolerance=cfg.tolerance)
        with prog.stage("predictions"):
            levels = tuple(sorted(set(cfg.risk) | {0.5, 0.9, 0.99}))
            frame = prediction_frame(ing.jobs, Options(risk=levels))
            if frame is not None:
                frame.to_parquet(out / "predictions.parquet", index=False)
        if shape is not None:
            opts = dict(whatif_options or {})
            with prog.stage("what-if"):
                result = run_whatif(ing.jobs, cluster_shape=shape, out=out, price_book=book, options=options,
                                    predictions=frame, log=lambda name, s: prog.substage("what-if", name, s),
                                    progress=lambda done: prog.count("what-if", done), **opts)
            summary_w = result.summary
        elif log is not None:
            log("what-if skipped: no cluster shape among the inputs (pass --cluster-shape FILE)")
    rec = (summary_w or {}).get("recommended") or {}
    level = rec.get("level") or (0.9 if 0.9 in cfg.risk else max(cfg.risk))
    write_recommendations(acc, ing.jobs, frame, level, out)
    with prog.stage("report"):
        written = write_report(out, cfg, {"generated_at": generated_at(), "version": __version__})
    prog.done()
    return AuditResult(ingest=ing, summary=acc.summary, report_pdf=written["pdf"], report_html=written["html"])


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
