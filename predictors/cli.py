"""``reclaim predict``: a click group, registered by the main CLI (``from predictors.cli import predict``), and
the plain-text tables of ``predict evaluate`` (nothing here computes a figure).

Trace files (rather than a store) are read with the reader the main CLI hands over in the context's ``meta``
under :data:`READ_TABLE`: predictors parse no input format themselves."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .features import TARGETS

if TYPE_CHECKING:
    import pandas as pd

#: key of ``click.Context.meta`` under which the main CLI hands over its reader of trace files (paths → job table)
READ_TABLE = "reclaim.read_table"


def _reader():
    return click.get_current_context().meta.get(READ_TABLE)


def _fail(exc: Exception) -> None:
    click.echo(f"reclaim: error: {exc}", err=True)
    sys.exit(2)


class _ScriptDefault(click.Group):
    """``reclaim predict JOB_SCRIPT …`` is short for ``reclaim predict script JOB_SCRIPT …``."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and (args[0] == "-" or not args[0].startswith("-")):
            args = ["script", *args]
        return super().resolve_command(ctx, args)


@click.group("predict", cls=_ScriptDefault)
def predict() -> None:
    """Right-sizing predictors: calibrated quantiles of each job's need, evaluated on future weeks.

    `reclaim predict JOB_SCRIPT --history STORE` advises on one job script or manifest (same as
    `predict script`); `reclaim predict fit STORE` fits the advisor's model once.
    """


@predict.command("script")
@click.argument("job_script", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path))
@click.argument("sbatch_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--history", required=True, type=click.Path(exists=True, path_type=Path),
              help="Store (jobs.parquet, with its model in STORE/model) or trace files of past jobs.")
@click.option("--user", default=None, help="Submitting user (default: $USER when the history knows them).")
@click.option("--risk", default=0.9, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Level of the suggested request; warnings at or above a risk of 1 − this level exit 3.")
@click.option("--strict", is_flag=True, help="Exit 3 on any warning.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def script_cmd(job_script, sbatch_args, history, user, risk, strict, as_json) -> None:
    """Advise on JOB_SCRIPT (an sbatch, qsub or bsub script, or a Kubernetes Job/Pod manifest; - reads standard
    input) before it is submitted: the request to make, the lines to paste, failure warnings.

    The submit command's options after -- (sbatch, qsub or bsub, as the script is) override the script's.  Exit 0,
    3 when a warning at or above the chosen risk was raised, 2 on an error (a line the scheduler would refuse is
    named).
    """
    from audit.textio import InputError

    from .advisor import ModelError, advice_text, predict_script

    name = "<stdin>" if str(job_script) == "-" else str(job_script)
    try:
        text = sys.stdin.read() if name == "<stdin>" else job_script.read_text(encoding="utf-8")
        advice = predict_script(text, history, args=sbatch_args, user=user, risk=risk, strict=strict, origin=name,
                                log=lambda m: click.echo(f"reclaim: {m}", err=True), read=_reader())
    except (InputError, ModelError, ValueError, UnicodeDecodeError) as exc:
        _fail(exc)
    click.echo(json.dumps(advice, indent=2, default=str) if as_json else advice_text(advice))
    sys.exit(advice["exit_code"])


@predict.command("fit")
@click.argument("store", type=click.Path(exists=True, file_okay=False, path_type=Path))
def fit_cmd(store) -> None:
    """Fit the submit-time advisor's model on STORE and save it in STORE/model (advice then loads it)."""
    import time

    from audit.textio import InputError

    from .advisor import fit

    t0 = time.perf_counter()
    try:
        folder = fit(store)
    except (InputError, ValueError) as exc:
        _fail(exc)
    click.echo(f"advisor model: {folder} ({time.perf_counter() - t0:.0f} s)")


@predict.command("evaluate")
@click.argument("source", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--target", type=click.Choice(list(TARGETS)), default="walltime", show_default=True)
@click.option("--quantiles", default="0.5,0.9", show_default=True, help="Levels, comma-separated.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--retrain-every", default=1, show_default=True, type=click.IntRange(min=1),
              help="Refit the models every N weekly folds.")
@click.option("--models", default=None, help="Comma-separated subset of request,user_mean,last_two,vpa,krr,habit_max,"
              "habit_krr,habit_vpa,habit_autopilot,habit_t,quantreg,lightgbm.")
@click.option("--breakdown", "breakdowns", multiple=True,
              type=click.Choice(["user", "partition", "gpu_type", "cold_user", "cold_family", "stratum"]),
              help="Also print the chosen model's metrics by this grouping (text output; by stratum always).")
@click.option("--warmup-days", default=28.0, show_default=True, type=float, help="History before the first test week.")
@click.option("--test-days", default=7.0, show_default=True, type=float, help="Length of each test period.")
@click.option("--cal-days", default=28.0, show_default=True, type=float, help="Trailing calibration window.")
@click.option("--n-estimators", default=60, show_default=True, type=click.IntRange(min=1),
              help="Boosting rounds of the LightGBM models.")
@click.option("--size-classes", default=1, show_default=True, type=click.IntRange(min=1),
              help="Calibrate each history stratum by this many size classes (the what-if's kill budget uses 5).")
@click.option("--seed", default=0, show_default=True, type=int)
def evaluate_cmd(source, target, quantiles, as_json, retrain_every, models, breakdowns, warmup_days, test_days,
                 cal_days, n_estimators, size_classes, seed) -> None:
    """Evaluate every model on TRACE|STORE (trace files or folders, or a store with jobs.parquet)."""
    from audit.textio import InputError

    from .evaluate import as_dict, evaluate_jobs, load_jobs, parse_levels

    try:
        labels, levels = parse_levels(quantiles)
        only = [m.strip() for m in models.split(",")] if models else None
        jobs = load_jobs(list(source) if len(source) > 1 else source[0], _reader())
        ev = evaluate_jobs(jobs, target, levels, models=only, retrain_every=retrain_every, random_state=seed, n_estimators=n_estimators,
                           warmup_days=warmup_days, test_days=test_days, cal_days=cal_days, size_classes=size_classes)
    except (InputError, ValueError) as exc:
        _fail(exc)
    result = as_dict(ev, labels)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=False))
        return
    click.echo(models_table(result))
    best = "lightgbm" if "lightgbm" in ev.rolling.models else ev.rolling.models[-1]
    for by in dict.fromkeys(("stratum", *breakdowns)):
        if by in ev.breakdowns:
            for lv in levels:
                click.echo("")
                click.echo(breakdown_table(ev.breakdowns[by], by, lv, best))
    if ev.failure:
        click.echo("")
        click.echo(failure_table(ev.failure, 0.9))


_FMT = {"coverage": "{:.3f}", "under_rate": "{:.3f}", "overprov_ratio": "{:.2f}", "recovered_fraction": "{:+.3f}",
        "pinball": "{:.4g}"}


def _metrics() -> tuple[str, ...]:
    from .models import METRICS

    return METRICS


def _cell(metric: str, value) -> str:
    return "—" if value is None else _FMT[metric].format(value)


def models_table(result: dict) -> str:
    """One block per level: a row per model, a column per metric."""
    metrics = _metrics()
    lines = [f"target {result['target']}: {result['jobs_tested']:,} test jobs"]
    levels = next(iter(result["models"].values())).keys() if result["models"] else []
    width = max((len(m) for m in result["models"]), default=5)
    for lv in levels:
        lines.append("")
        lines.append(f"level {lv}".ljust(width + 2) + "".join(f"{m:>20}" for m in metrics))
        for m, per in result["models"].items():
            lines.append(m.ljust(width + 2) + "".join(f"{_cell(k, per[lv][k]):>20}" for k in metrics))
    return "\n".join(lines)


def breakdown_table(table: pd.DataFrame, by: str, level: float, model: str) -> str:
    metrics = _metrics()
    t = table[(table["level"] == level) & (table["model"] == model)]
    lines = [f"{model} at {level} by {by}:", f"{by:>16}{'jobs':>8}" + "".join(f"{m:>20}" for m in metrics)]
    for r in t.itertuples():
        lines.append(f"{str(r.group):>16}{r.jobs:>8}" + "".join(f"{_cell(m, getattr(r, m)):>20}" for m in metrics))
    return "\n".join(lines)


def failure_table(failure: dict, risk: float) -> str:
    lines = [f"failure prediction (request below the calibrated p{round(risk * 100)} of need):"]
    for m, f in failure.items():
        lines.append(f"  {m}: flagged {f['flagged']:,}, killed {f['failed']:,} (base rate {f['base_rate']:.3f}), "
                     f"precision {f['precision']:.3f}, recall {f['recall']:.3f}")
    return "\n".join(lines)

