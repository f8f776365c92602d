"""``reclaim whatif``: how much of this cluster could we get back, and at what risk?

One orchestrator over the pieces: the month (:mod:`.month`) with its out-of-sample predictions
(:mod:`predictors.models.rightsize`), the scenarios (:mod:`.scenarios`), the sweep of replays
(:mod:`.sweep`, run by :mod:`.runner`), and the files (:mod:`.outputs`).
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simulator import replay_as_logged
from simulator.records import Cluster, Pool

from ..accounting.pricebook import PriceBookError, load_price_book, shipped_books
from ..cluster_shape import pool_procs
from .budget import budget_predictions, coverage_by_stratum
from .gap import gap_of
from .month import build_month, by_level, history_masks
from .outputs import summary_of, write_outputs
from .replays import Setting
from .runner import Runner
from .scenarios import PREDICTORS, RULES, actual_requests, to_jobs
from .sweep import Options, begin, budget_mode, pools_of, sweep
from .to_simulator import to_cluster

TARGETS = ("memory", "cpus", "gpus", "walltime")
#: history before a month's first right-sized job; spans from two weeks (less a day: a fortnight's log runs
#: from its first job to its last) are calibrated daily
WARMUP_DAYS = 2.0
#: history before a month's first job right-sized from its habit's own past (the site rules and ``habit_t``,
#: which learn next to nothing): one daily origin's
HABIT_WARMUP_DAYS = 1.0
WEEKLY_DAYS = 13.0
#: days between refits of the models on those spans (a 30-day month: fits at days 2, 12 and 22)
REFIT_DAYS = 10


@dataclass
class WhatIfResult:
    summary: dict
    folder: Path | None
    stages: dict
    replays: int
    runner: str
    predictions: pd.DataFrame | None = None  # the prediction frame the scenarios applied


@dataclass
class Started:
    """Prediction tasks handed out (:func:`start_predictions`): ``count`` targets on ``stream``."""

    stream: object
    count: int


def predict_target(target: str, table: pd.DataFrame, levels: tuple, random_state: int) -> pd.DataFrame:
    """One target's calibrated predictions (a task: targets are fitted side by side)."""
    from predictors.models import right_size

    return right_size(table, levels=levels, targets=(target,), random_state=random_state, **rolling_options(table))


def prediction_frame(table: pd.DataFrame, options: Options, *, procs: int | None = None,
                     random_state: int = 0, runner=None) -> pd.DataFrame | None:
    """The calibrated right-sized predictions of :func:`predictors.models.rightsize.right_size` at the options' risk
    levels (one row per job, ``pred_<column>_p<level>`` columns; what ``predictions.parquet`` holds), or
    None when the predictor is not ``lightgbm``; with a ``runner``, one task per target."""
    if options.predictor != "lightgbm":
        return None
    if runner is None:
        levels = tuple(options.risk)
        return _joined([predict_target(t, table, levels, random_state) for t in _targets(procs)])
    return finish_predictions(start_predictions(table, options, runner, procs=procs, random_state=random_state))


def _targets(procs: int | None) -> tuple:
    return ("walltime",) if procs is not None else TARGETS


def start_predictions(table: pd.DataFrame, options: Options, runner, *, procs: int | None = None,
                      random_state: int = 0) -> Started | None:
    """:func:`prediction_frame`'s tasks handed out on ``runner`` (ahead of any replay, the target with the most
    jobs first), for :func:`finish_predictions` to gather; None when the predictor is not ``lightgbm``."""
    if options.predictor != "lightgbm":
        return None
    targets = _targets(procs)
    stream = runner.stream(predict_target, runner.share(table), tuple(options.risk), random_state)
    for k in sorted(range(len(targets)), key=lambda k: -prediction_rows(table, targets[k])):
        stream.put(k, targets[k], priority=1)
    return Started(stream, len(targets))


def prediction_rows(table: pd.DataFrame, target: str) -> int:
    """The jobs a target is fitted on (what its task's length goes with)."""
    from predictors.features import eligible

    return int(eligible(table, target).sum())


def finish_predictions(started: Started | None) -> pd.DataFrame | None:
    """The :func:`prediction_frame` of tasks :func:`start_predictions` handed out."""
    if started is None:
        return None
    got = {k: frame for k, frame in started.stream}
    return _joined([got[k] for k in range(started.count)])


def _joined(frames: list) -> pd.DataFrame:
    keys = [c for c in ("cluster", "job_id") if c in frames[0]]
    return pd.concat([frames[0][keys]] + [f.drop(columns=[c for c in ("cluster", "job_id") if c in f])
                                          for f in frames], axis=1)


def predictions_for(table: pd.DataFrame, options: Options, *, procs: int | None, random_state: int = 0,
                    frame: pd.DataFrame | None = None, runner=None, cluster=None, allocations=None) -> dict:
    """The predictions the right-sized scenarios apply: ``{level or predictor: {target: values}}``, with the
    kill budget's (``budget/MODE``) when the options have one and ``cluster`` is given (its allocations are
    put into ``allocations``); ``frame``: a :func:`prediction_frame` already computed (it is not computed
    again); with a ``runner``, one task per target."""
    if options.predictor not in PREDICTORS:
        raise ValueError(f"predictor must be one of {PREDICTORS}, got {options.predictor!r}")
    if options.predictor == "request":
        return {}
    if options.predictor in RULES:
        from predictors.models import rule_predictions

        return {options.predictor: rule_predictions(table, options.predictor, _targets(procs))}
    if options.predictor == "last_two":
        from predictors.models import last_two

        return {"last_two": {"walltime": last_two(table)}}
    if frame is None:
        frame = prediction_frame(table, options, procs=procs, random_state=random_state, runner=runner)
    preds = by_level(frame, options.risk)
    if options.kill_budget is not None and cluster is not None:
        budget, alloc = budget_predictions(table, frame, options.risk, options.kill_budget, cluster,
                                           (budget_mode(options.modes),), gpu_hours=options.gpu_hours_budget)
        preds.update(budget)
        if allocations is not None:
            allocations.update(alloc)
    return preds


def rolling_options(table: pd.DataFrame) -> dict:
    """The rolling origin for the month's span: two days of history, then a daily origin, the models refitted
    every ``REFIT_DAYS`` and calibrated daily, stratum by stratum, on what ended before (the first day is calibrated on a
    split of those two days: thousands of jobs on a month worth auditing); a span under ``WEEKLY_DAYS`` (a
    one-week pilot) is predicted after two days or its first 30 %, whichever is shorter, refitted daily, and
    calibrated on 100 jobs or more.  Every job submitted before the first origin keeps its request: it has
    no past."""
    t = table["submit_time"].dropna()
    span = (t.max() - t.min()).total_seconds() / 86400.0 if len(t) else 0.0
    if span >= WEEKLY_DAYS:
        return {"warmup_days": HABIT_WARMUP_DAYS, "model_warmup_days": WARMUP_DAYS, "test_days": 1.0,
                "retrain_every": REFIT_DAYS}
    warm = min(WARMUP_DAYS, 0.3 * span)
    return {"warmup_days": min(HABIT_WARMUP_DAYS, warm), "model_warmup_days": warm, "test_days": 1.0, "min_cal": 100}


def node_prices(cluster, books: dict) -> dict:
    """``{book: {group: USD per node-hour}}`` from each book's core, GiB and GPU prices."""
    out = {}
    for name, book in books.items():
        if isinstance(cluster, Pool):
            out[name] = {"procs": book.cpu.usd_per_hour}
            continue
        per = {}
        for g in cluster.groups:
            usd = g.cpus * book.cpu.usd_per_hour + g.mem_bytes / 2**30 * book.memory.usd_per_hour
            if g.gpus:
                try:
                    usd += g.gpus * book.gpu_price(g.gpu_type or "").usd_per_hour
                except PriceBookError:
                    usd += g.gpus * book.gpu_price("").usd_per_hour
            per[g.name] = usd
        out[name] = per
    return out


def price_books(chosen=None) -> dict:
    """The chosen book (default cloud-on-demand) and the shipped books beside it, by name."""
    books = {}
    main = load_price_book(chosen)
    books[main.name] = main
    for name in shipped_books():
        b = load_price_book(name)
        books.setdefault(b.name, b)
    return books


def budget_shares(table: pd.DataFrame) -> dict:
    """Each account's share of the month's GPU-hours held (its budget under the budget policy)."""
    hours = pd.to_numeric(table["alloc_gpus"], errors="coerce").fillna(0) * \
        pd.to_numeric(table["elapsed_s"], errors="coerce").fillna(0)
    by = hours.groupby(table["account"].astype("string").fillna("")).sum()
    total = float(by.sum())
    return {str(k): float(v) / total for k, v in by.items() if v > 0} if total > 0 else {}


def fidelity(setting: Setting, actual: dict) -> dict:
    """Simulated ``actual`` against the logged schedule of the same jobs: mean wait and occupancy."""
    month = setting.month
    jobs = to_jobs(month, actual_requests(month))
    logged = replay_as_logged(jobs, setting.cluster)
    from simulator import metrics

    lm = metrics(logged)
    out = {"simulated_mean_wait_s": actual["mean_wait_s"], "logged_mean_wait_s": float(np.nanmean(logged.wait))
           if np.isfinite(logged.wait).any() else None}
    for r in ("cpus", "mem", "gpus"):
        out[f"simulated_occupancy_{r}"] = actual[f"occupancy_{r}"]
        out[f"logged_occupancy_{r}"] = lm[f"occupancy_{r}"]
    return out


def _gap(sw, setting) -> dict | None:
    """Where the oracle's capacity went for the recommended scenario (:mod:`.gap`)."""
    if sw.recommended is None:
        return None
    scenario = next(s for s in sw.scenarios if s.name == sw.recommended)
    return gap_of(scenario, setting, sw.full, sw.capacity, setting.month.history, sw.pools_full, pools_of(setting))


def _log_stage(name: str, seconds: float) -> None:
    sys.stderr.write(f"what-if: {name} {seconds:.1f} s\n")
    sys.stderr.flush()


def whatif(table: pd.DataFrame, *, cluster_shape=None, procs: int | None = None, out=None,
           options: Options | None = None, price_book=None, scheduler: str | None = None, serial: bool = False,
           workers: int | None = None, quiet: bool = False, random_state: int = 0,
           predictions: pd.DataFrame | Started | None = None, log=None, progress=None,
           runner=None) -> WhatIfResult:
    """Replay the month under every scenario and find what can be recovered; write ``out/whatif/`` and
    ``out/predictions.parquet``.  ``predictions``: a :func:`prediction_frame` already computed, or its tasks
    already handed out on ``runner`` (:func:`start_predictions`, at levels that include the options');
    ``log(stage, seconds)`` hears of each stage as it ends (default: a line on stderr unless ``quiet``);
    ``progress(done)`` hears of each finished replay (default: the runner's line on a terminal); ``runner``: an
    open :class:`Runner` to use instead of one of its own (``scheduler``, ``serial`` and ``workers`` are then
    the runner's).  A ``cluster_shape`` that is one pool (``procs = P``, as an SWF header's ``MaxProcs``
    declares it) is replayed as ``procs`` is."""
    import time

    options = options or Options()
    log = None if quiet else (log or _log_stage)
    if procs is None and cluster_shape is None:
        raise ValueError("no cluster shape: pass a cluster-shape TOML or --procs P")
    if procs is None and (pool := pool_procs(cluster_shape)):  # one pool of processors (an SWF header's)
        procs, cluster_shape = pool, None                         # is replayed as --procs P replays it
    cluster = Pool(int(procs)) if procs else to_cluster(cluster_shape)
    books = price_books(price_book)
    sources = set(table["source"].astype("string").fillna("").unique().tolist()) if "source" in table else set()
    mixed = any(s.startswith(("k8s", "alibaba")) for s in sources) and any(s.startswith("sacct") for s in sources)
    if runner is not None:
        runner.on_done, runner.done = progress, 0
    opened = nullcontext(runner) if runner is not None else Runner(
        scheduler, serial=serial, workers=workers, progress=False if quiet else None, on_done=progress)
    with opened as runner:
        t = time.perf_counter()
        started = predictions if isinstance(predictions, Started) else None
        early = None
        if predictions is None and options.predictor == "lightgbm":
            started = start_predictions(table, options, runner, procs=procs, random_state=random_state)
        if started is not None:
            # while the models fit, the replays that read no prediction run on the month without them
            bare, _ = build_month(table, cluster, procs=procs)
            early = begin(Setting(month=bare, cluster=cluster, shares=budget_shares(table),
                                  backfill_order=options.backfill_order, kill_at_limit=procs is None),
                          runner, options)
        frame = predictions if started is None else finish_predictions(started)
        allocations: dict = {}
        preds = predictions_for(table, options, procs=procs, random_state=random_state, frame=frame,
                                cluster=cluster, allocations=allocations)
        stages = {"predictions": time.perf_counter() - t}
        if log and not isinstance(predictions, pd.DataFrame):
            log("predictions", stages["predictions"])
        month, dropped = build_month(table, cluster, preds, procs=procs, history=history_masks(frame))
        setting = Setting(month=month, cluster=cluster, shares=budget_shares(table),
                          backfill_order=options.backfill_order, kill_at_limit=procs is None)
        sw = sweep(setting, runner, options, node_prices(cluster, books), mixed=isinstance(cluster, Cluster) and mixed,
                   log=log, early=early)
        kind = runner.kind
    stages.update(sw.stages)
    summary = summary_of(sw, setting, options, dropped=dropped, fidelity=fidelity(setting, sw.full["actual"]),
                         books={n: b.to_dict() for n, b in books.items()}, chosen=next(iter(books)),
                         kill_budget=allocations or None,
                         coverage=None if frame is None else coverage_by_stratum(table, frame, options.risk),
                         gap=_gap(sw, setting))
    folder = None
    if out is not None:
        folder = write_outputs(Path(out), sw, summary)
        if frame is not None:
            frame.to_parquet(Path(out) / "predictions.parquet", index=False)
    return WhatIfResult(summary=summary, folder=folder, stages=stages, replays=sw.replays, runner=kind,
                        predictions=frame)
