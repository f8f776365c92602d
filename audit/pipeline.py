"""The runs that chain stages: ``reclaim audit`` (ingest → accounting → what-if → report, written into one run
folder), ``reclaim simulate`` (a store or traces → one replay) and ``reclaim whatif`` (a store or traces →
the what-if sweep)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd

from . import __version__
from .accounting import account_jobs, write_account
from .ingest import IngestResult, ingest, read_table
from .textio import InputError


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
          advisor_model: bool = True, log=None, config=None, progress=None,
          stamp: str | None = None, extract_to=None, trend=None,
          month: str | None = None, delimiter: str | None = None) -> AuditResult:
    """Run the whole audit on the inputs and write the run folder ``out``.

    ``cluster_shape`` defaults to a cluster-shape TOML found among the inputs, if any.  The predictions and the
    what-if sweep (``whatif/``) run when ``whatif`` (the sweep needs a cluster shape); ``whatif_options`` go to
    :func:`audit.whatif.whatif` (``serial``, ``scheduler``, ``quiet``, …); ``log(text)`` hears what is skipped;
    ``config``: a :class:`audit.config.ReportConfig`; ``progress``: a :class:`audit.progress.Progress`.
    ``advisor_model`` fits the submit-time advisor's model and saves it in ``out/model``
    (:func:`predictors.advisor.submit.fit`; about a minute of one core per 100,000 jobs), so that
    ``reclaim predict SCRIPT --history OUT`` loads it.
    ``stamp`` is the report's generation time (default: now, or ``SOURCE_DATE_EPOCH``); ``extract_to`` where a
    pilot tarball is unpacked (default ``out/pilot``); ``trend`` (earlier months' figures, one row each, from
    :func:`audit.monthly.history`) is written with this run as the latest row labelled ``month`` to
    ``trend.csv``, which adds the trend page.
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
                     pseudonyms=Pseudonyms(cfg.salt) if cfg.anonymise else None, stage=prog.stage,
                     extract_to=extract_to, delimiter=delimiter, cluster_shape=cluster_shape)
    shape = ing.cluster_shape
    book = price_book or cfg.price_book
    with prog.stage("accounting"):
        acc = account_jobs(ing.jobs, price_book=book, cluster_shape=shape, thresholds=cfg.thresholds)
        write_account(acc, out)
    frame, summary_w = None, None
    if whatif:
        from .whatif import Options
        from .whatif import whatif as run_whatif
        from .whatif.runner import Runner
        from .whatif.whatif import finish_predictions, start_predictions

        opts = dict(whatif_options or {})
        options = Options(risk=cfg.risk, tolerance=cfg.tolerance, kill_budget=opts.pop("kill_budget", 0.01),
                          gpu_hours_budget=opts.pop("gpu_hours_budget", None))
        # one runner (a local Dask cluster, --scheduler, or in process) for the predictions and the replays
        with Runner(opts.pop("scheduler", None), serial=bool(opts.pop("serial", False)),
                    workers=opts.pop("workers", None), progress=False) as runner:
            levels = tuple(sorted(set(cfg.risk) | {0.5, 0.9, 0.99}))
            # one target per task; with a cluster shape the what-if's first replays run beside them
            started = start_predictions(ing.jobs, Options(risk=levels), runner)
            if shape is not None:
                with prog.stage("what-if"):
                    result = run_whatif(ing.jobs, cluster_shape=shape, out=out, price_book=book, options=options,
                                        predictions=started, log=lambda name, s: prog.substage("what-if", name, s),
                                        progress=lambda done: prog.count("what-if", done), runner=runner, **opts)
                summary_w, frame = result.summary, result.predictions  # it wrote predictions.parquet
            else:
                with prog.stage("predictions"):
                    runner.on_done = lambda done: prog.count("predictions", done, "targets")
                    frame = finish_predictions(started)
                if frame is not None:
                    frame.to_parquet(out / "predictions.parquet", index=False)
        if shape is None and log is not None:
            log("what-if skipped: no cluster shape among the inputs (pass --cluster-shape FILE)")
    rec = (summary_w or {}).get("recommended") or {}
    level = rec.get("level") or (0.9 if 0.9 in cfg.risk else max(cfg.risk))
    write_recommendations(acc, ing.jobs, frame, level, out)
    write_trend(out, trend, month, acc.summary, summary_w)
    if advisor_model:
        with prog.stage("advisor model"):
            save_advisor_model(out, log, fitted_at=stamp)
    with prog.stage("report"):
        written = write_report(out, cfg, {"generated_at": stamp or generated_at(), "version": __version__})
    prog.done()
    return AuditResult(ingest=ing, summary=acc.summary, report_pdf=written["pdf"], report_html=written["html"])


def write_trend(out: Path, trend, month: str | None, summary: dict, whatif_summary: dict | None) -> Path | None:
    """``out/trend.csv``: the earlier months' figures and this run's (labelled ``month``) as the latest row;
    nothing (and an earlier file removed) without earlier months."""
    path = Path(out) / "trend.csv"
    path.unlink(missing_ok=True)
    if trend is None or not len(trend):
        return None
    from .monthly import month_figures

    now = pd.DataFrame([{"month": month or "this run", **month_figures(summary, whatif_summary)}])
    pd.concat([trend, now], ignore_index=True).to_csv(path, index=False)
    return path


def save_advisor_model(out: Path, log=None, *, fitted_at: str | None = None) -> Path | None:
    """Fit and save the advisor's model in ``out/model``; ``None`` (and a line to ``log``) when the history is too
    small to fit one.  ``fitted_at`` (ISO time) as the report's stamp, for byte-identical reruns."""
    from predictors.advisor import fit

    try:
        folder = fit(out, fitted_at=fitted_at)
    except ValueError as exc:
        if log is not None:
            log(f"advisor model skipped: {exc}")
        return None
    if log is not None:
        log(f"advisor model: {out.name}/{folder.name} (reclaim predict SCRIPT --history {out.name})")
    return folder


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


#: exit codes of ``reclaim monthly`` (docs/pilot.md): cron and systemd act on them
EXIT_OK, EXIT_INPUT, EXIT_PARTIAL, EXIT_BUSY = 0, 2, 4, 75


class PartialCollection(RuntimeError):
    """The month's collection had failed commands: nothing is published."""


@dataclass
class MonthlyResult:
    month: str
    folder: Path
    summary: dict


def resolve_month(month: str, today=None) -> str:
    """``last`` → the calendar month before ``today`` (default: today) as ``YYYY-MM``; anything else as given."""
    if month != "last":
        return month
    today = today or datetime.now().date()
    first = today.replace(day=1) - timedelta(days=1)
    return f"{first.year:04d}-{first.month:02d}"


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``YYYY-MM`` → its first instant and the first instant of the next month (naive, the cluster's time)."""
    try:
        start = datetime.strptime(month, "%Y-%m")
    except ValueError:
        raise InputError(f"--month must be YYYY-MM, got {month!r}") from None
    end = datetime(start.year + (start.month == 12), start.month % 12 + 1, 1)
    return start, end


def monthly(month: str, out, *, inputs=None, cluster_shape=None, price_book=None, whatif: bool = True,
            whatif_options: dict | None = None, advisor_model: bool = True, wait_s: float = 0.0, collect=None, log=None, config=None,
            progress=None, scheduler: str = "slurm") -> MonthlyResult:
    """One month, from cron: collect it (or read ``inputs``), audit it with the report, keep its figures beside
    the earlier months' in ``out/reclaim.duckdb``, and publish ``out/YYYY-MM/`` whole (with ``monthly.json``,
    ``summary.md`` and ``reclaim.prom``) and ``out/reclaim.prom`` (the latest month, for node_exporter).

    One run at a time (``out/.reclaim-monthly.lock``; :class:`audit.monthly.Busy` after ``wait_s``); a run
    of the same month with the same inputs writes the same bytes; a run killed halfway leaves no month.
    ``scheduler`` (``slurm``, ``pbs``, ``lsf``, ``sge``, or ``auto``: the one whose read-only commands are on
    ``PATH``, :mod:`audit.collect.scheduler`) names the collector; ``collect(out_folder, since, until)`` replaces it
    (tests).  ``config`` (a
    :class:`audit.config.ReportConfig`: branding, price book, risk levels, thresholds, pages, anonymisation) and
    ``progress`` go to :func:`audit` as they are; ``advisor_model`` leaves the submit-time advisor's model in
    ``out/YYYY-MM/model`` (``reclaim predict SCRIPT --history out/YYYY-MM``).
    """
    from .collect.scheduler import collector
    from .monthly import (
        groups_of,
        history,
        locked,
        markdown,
        month_figures,
        monthly_summary,
        movers,
        publish,
        record_month,
        staging,
        textfile,
        write_atomic,
    )

    month = resolve_month(month)
    start, end = month_bounds(month)
    out = Path(out)
    db = out / "reclaim.duckdb"
    with locked(out, wait_s):
        work = staging(out, month)
        if inputs:
            paths = [Path(p) for p in inputs]
        else:
            raw = out / ".collect" / month
            run_collect = collect or collector(scheduler)
            tarball, manifest = run_collect(raw, start.isoformat(), end.isoformat())
            if manifest.failed:
                raise PartialCollection(f"{len(manifest.failed)} collection commands failed (see {raw}): "
                                        f"the month is not published")
            paths = [tarball]
        earlier, groups_before = history(db)
        earlier = earlier[earlier["month"] < month] if len(earlier) else earlier
        run = work / month
        result = audit(paths, run, price_book=price_book, cluster_shape=cluster_shape, whatif=whatif,
                       whatif_options=whatif_options, advisor_model=advisor_model, log=log, stamp=(end - timedelta(seconds=1)).isoformat() + "+00:00",
                       extract_to=out / ".collect" / month / "extracted", trend=earlier if len(earlier) else None,
                       month=month, config=config, progress=progress)
        (run / "reclaim.duckdb").unlink(missing_ok=True)  # months live side by side in out/reclaim.duckdb
        whatif_summary = _read_json(run / "whatif" / "summary.json")
        figures = month_figures(result.summary, whatif_summary)
        groups = groups_of(run)
        previous_month = earlier["month"].iloc[-1] if len(earlier) else None
        previous = earlier.iloc[-1].drop("month").dropna().to_dict() if len(earlier) else None
        merged = groups.assign(month=month)
        if len(groups_before):
            merged = pd.concat([groups_before[groups_before["month"] < month], merged], ignore_index=True)
        cluster = str(result.summary.get("cluster") or "cluster")
        summary = monthly_summary(month, figures, previous, previous_month, movers(merged, month, previous_month),
                                  cluster)
        prom = textfile(month, figures, int(end.replace(tzinfo=UTC).timestamp()), cluster)
        (run / "monthly.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (run / "summary.md").write_text(markdown(summary), encoding="utf-8")
        (run / "reclaim.prom").write_text(prom, encoding="utf-8")
        publish(run, out / month)
        shutil.rmtree(work, ignore_errors=True)
        record_month(db, month, figures, groups)
        latest, _ = history(db)
        if len(latest) and latest["month"].iloc[-1] == month:
            write_atomic(out / "reclaim.prom", prom)
    return MonthlyResult(month=month, folder=out / month, summary=summary)


def _read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
