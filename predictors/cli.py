"""``reclaim predict``: a click group, registered by the main CLI (``from predictors.cli import predict``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .targets import TARGETS


def _fail(exc: Exception) -> None:
    click.echo(f"reclaim: error: {exc}", err=True)
    sys.exit(2)


@click.group("predict")
def predict() -> None:
    """Right-sizing predictors: calibrated quantiles of each job's need, evaluated on future weeks."""


@predict.command("evaluate")
@click.argument("source", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--target", type=click.Choice(list(TARGETS)), default="walltime", show_default=True)
@click.option("--quantiles", default="0.5,0.9", show_default=True, help="Levels, comma-separated.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--retrain-every", default=1, show_default=True, type=click.IntRange(min=1),
              help="Refit the models every N weekly folds.")
@click.option("--models", default=None, help="Comma-separated subset of request,user_mean,last_two,vpa,krr,quantreg,lightgbm.")
@click.option("--breakdown", "breakdowns", multiple=True,
              type=click.Choice(["user", "partition", "gpu_type", "cold_user", "cold_family"]),
              help="Also print the chosen model's metrics by this grouping (text output).")
@click.option("--warmup-days", default=28.0, show_default=True, type=float, help="History before the first test week.")
@click.option("--test-days", default=7.0, show_default=True, type=float, help="Length of each test period.")
@click.option("--cal-days", default=91.0, show_default=True, type=float, help="Trailing calibration window.")
@click.option("--seed", default=0, show_default=True, type=int)
def evaluate_cmd(source, target, quantiles, as_json, retrain_every, models, breakdowns, warmup_days, test_days,
                 cal_days, seed) -> None:
    """Evaluate every model on TRACE|STORE (trace files or folders, or a store with jobs.parquet)."""
    from audit.textio import InputError

    from .evaluate import as_dict, evaluate_jobs, load_jobs, parse_levels
    from .text import breakdown_table, failure_table, models_table

    try:
        labels, levels = parse_levels(quantiles)
        only = [m.strip() for m in models.split(",")] if models else None
        jobs = load_jobs(list(source) if len(source) > 1 else source[0])
        ev = evaluate_jobs(jobs, target, levels, models=only, retrain_every=retrain_every, random_state=seed,
                           warmup_days=warmup_days, test_days=test_days, cal_days=cal_days)
    except (InputError, ValueError) as exc:
        _fail(exc)
    result = as_dict(ev, labels)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=False))
        return
    click.echo(models_table(result))
    best = "lightgbm" if "lightgbm" in ev.rolling.models else ev.rolling.models[-1]
    for by in breakdowns:
        if by in ev.breakdowns:
            for lv in levels:
                click.echo("")
                click.echo(breakdown_table(ev.breakdowns[by], by, lv, best))
    if ev.failure:
        click.echo("")
        click.echo(failure_table(ev.failure, 0.9))


if __name__ == "__main__":
    predict()
