"""The evaluation stage: every model side by side on future weeks, with breakdowns and failure prediction.

``evaluate(source, target, quantiles)`` returns the dict the CLI prints with ``--json``::

    {"target": "walltime", "jobs_tested": 12345,
     "models": {"lightgbm": {"0.9": {"coverage": …, "under_rate": …, "overprov_ratio": …,
                                      "recovered_fraction": …, "pinball": …}, …}, …},
     "coverage_by_stratum": {"lightgbm": {"0.9": {"long_tight": {"jobs": …, "coverage": …}, …}, …}, …}}

(strata: ``predictors.features.habits``; each calibrated model is calibrated stratum by stratum.)

``evaluate_jobs`` returns the richer :class:`Evaluation` (per-job predictions, breakdowns by user,
partition, GPU type and cold start, failure prediction, per-fold figures).

Does accuracy improve as history accumulates?  Two curves on one fixed set of test weeks:

- :func:`history_curve`: the model refitted weekly on only the last ``d`` days before each origin, for
  growing ``d`` (None = all history so far);
- :func:`cadence_curve`: all history, refitted every ``r`` weeks, for growing ``r``.

Both score the same jobs (those submitted from ``start_days`` after the first submission on, once
calibrated), so differences come from the history the model saw, not from the test set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .features import DAY_S, epoch_s, load_jobs
from .models import (
    CALIBRATED,
    METRICS,
    RollingForecaster,
    RollingResult,
    coverage_se,
    default_models,
    metric_table,
    precision_recall,
)

#: state of a job killed for exceeding its request, per target
KILL_STATE = {"walltime": "TIMEOUT", "memory": "OUT_OF_MEMORY"}
BREAKDOWNS = ("user", "partition", "gpu_type", "cold_user", "cold_family", "stratum")


@dataclass
class Evaluation:
    rolling: RollingResult
    metrics: pd.DataFrame
    breakdowns: dict = field(default_factory=dict)
    failure: dict = field(default_factory=dict)


def parse_levels(quantiles) -> tuple[list[str], tuple[float, ...]]:
    """``"0.5,0.9"`` or ``[0.5, 0.9]`` → (labels as written, sorted floats)."""
    toks = [t.strip() for t in quantiles.split(",")] if isinstance(quantiles, str) else [str(q) for q in quantiles]
    toks = [t for t in toks if t]
    try:
        vals = [float(t) for t in toks]
    except ValueError:
        raise ValueError(f"quantiles must be numbers between 0 and 1, got {quantiles!r}") from None
    if not vals or any(not 0.0 < v < 1.0 for v in vals):
        raise ValueError(f"quantiles must lie strictly between 0 and 1, got {quantiles!r}")
    order = np.argsort(vals, kind="stable")
    labels = [toks[i] for i in order]
    levels = tuple(vals[i] for i in order)
    if len(set(levels)) != len(levels):
        raise ValueError(f"repeated quantile in {quantiles!r}")
    return labels, levels


def killed_mask(frame: pd.DataFrame, target: str) -> np.ndarray | None:
    """Jobs killed for exceeding their request: the target's kill state; for walltime on traces without a
    TIMEOUT state (SWF), a run that reached its limit."""
    state = KILL_STATE.get(target)
    if state is None:
        return None
    st = frame["state"].astype("string").fillna("").to_numpy(dtype=object) if "state" in frame else None
    if st is not None and (st == state).any():
        return st == state
    if target == "walltime":
        return frame["y"].to_numpy() >= frame["request"].to_numpy()
    return st == state if st is not None else None


def failure_prediction(frame: pd.DataFrame, target: str, levels, *, risk: float = 0.9) -> dict:
    """Flag jobs whose request is below the calibrated (uncapped) prediction at ``risk``; score the flag
    against the jobs that were actually killed for it, for every calibrated model."""
    killed = killed_mask(frame, target)
    if killed is None or risk not in levels:
        return {}
    req = frame["request"].to_numpy(dtype=np.float64)
    out = {}
    for m in CALIBRATED:
        col = f"{m}_nocap@{risk}"
        if col in frame:
            out[m] = precision_recall(req < frame[col].to_numpy(dtype=np.float64), killed)
    return out


def scored_names(res: RollingResult) -> list[str]:
    """Every model, then each calibrated model capped at the request (``MODEL_capped``)."""
    return [*res.models, *(f"{m}_capped" for m in res.models if f"{m}_capped@{res.levels[0]}" in res.jobs)]


def evaluate_jobs(jobs: pd.DataFrame, target: str, levels=(0.5, 0.9, 0.99), *, models=None, risk: float = 0.9,
                  n_estimators: int = 60, num_threads: int = 1, random_state: int = 0, top_groups: int = 10,
                  cap: bool = False, size_classes: int = 1, **rolling) -> Evaluation:
    """Run the rolling origin for ``target`` and score every model on the scored (calibrated) test weeks.

    A calibrated model is scored as a quantile of the need (``cap=False``: free to exceed the request, as
    the baselines are) and, as ``MODEL_capped``, as the right-sized request (never above the original).
    ``size_classes``: the strata are the history strata alone by default; the what-if's right-sized requests
    split each by 5 size classes for its kill budget, which weighs a large job's cut above a small one's (a
    quantile of need weighs every job alike, and the smaller strata cost it: KTH-SP2 docs/predictors.md)."""
    levels = tuple(float(x) for x in levels)
    est = default_models(levels, target, n_estimators=n_estimators, num_threads=num_threads,
                         random_state=random_state, only=models)
    res = RollingForecaster(est, levels, cap=cap, size_classes=size_classes, **rolling).run(jobs, target)
    tested = res.jobs[res.jobs["scored"]].reset_index(drop=True)
    names = scored_names(res)
    metrics = metric_table(tested, names, levels)
    breakdowns = {}
    for by in BREAKDOWNS:
        if by not in tested or tested[by].isna().all():
            continue
        t = metric_table(tested, names, levels, by=by)
        if by in ("user", "partition", "gpu_type") and len(t):
            top = tested[by].value_counts().head(top_groups).index
            t = t[t["group"].isin(top)]
        breakdowns[by] = t.reset_index(drop=True)
    return Evaluation(rolling=res, metrics=metrics, breakdowns=breakdowns,
                      failure=failure_prediction(tested, target, levels, risk=risk))


def as_dict(ev: Evaluation, labels) -> dict:
    """The ``--json`` shape: target, jobs_tested and models → level label → the five metrics."""
    levels = ev.rolling.levels
    label = dict(zip(levels, labels, strict=True))
    models = {}
    for m in dict.fromkeys(ev.metrics["model"]):
        t = ev.metrics[ev.metrics["model"] == m]
        models[m] = {label[r.level]: {k: _num(getattr(r, k)) for k in METRICS} for r in t.itertuples()}
    by = {}
    t = ev.breakdowns.get("stratum")
    if t is not None:
        tested = ev.rolling.jobs[ev.rolling.jobs["scored"].to_numpy()]
        strata = dict(tuple(tested.groupby(tested["stratum"].astype("string").fillna(""), sort=False)))
        for m in dict.fromkeys(t["model"]):
            rows = t[t["model"] == m]
            by[m] = {label[lv]: {str(r.group): {"jobs": int(r.jobs), "coverage": _num(r.coverage),
                                                **_clustered(strata[str(r.group)], m, lv)}
                                 for r in rows[rows["level"] == lv].itertuples()} for lv in levels}
    return {"target": ev.rolling.target, "jobs_tested": int(ev.rolling.jobs["scored"].sum()), "models": models,
            "coverage_by_stratum": by}


def _clustered(g: pd.DataFrame, model: str, level: float) -> dict:
    """``habits`` and ``se`` of a stratum's coverage: the habits of its scored jobs ``g``, and the coverage's
    standard error with a habit's jobs taken to miss together (``metrics.coverage_se``)."""
    habit = g["habit"].to_numpy()
    hit = (g["y"].to_numpy(dtype=np.float64) <= g[f"{model}@{level}"].to_numpy(dtype=np.float64)).astype(float)
    return {"habits": int(len(np.unique(habit))), "se": _num(coverage_se(hit, habit))}


def _num(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def evaluate(source, target: str, quantiles="0.5,0.9", *, read=None, **options) -> dict:
    """Evaluate every model for ``target`` on a store or a job table, or on traces read with ``read``
    (:func:`predictors.features.load_jobs`).

    ``options`` go to :func:`evaluate_jobs` (e.g. ``retrain_every``, ``n_estimators``, ``models``).
    """
    labels, levels = parse_levels(quantiles)
    ev = evaluate_jobs(load_jobs(source, read), target, levels, **options)
    return as_dict(ev, labels)


# How accuracy grows with history and with the refit cadence


def _row(ev, **key) -> dict:
    t = ev.metrics[ev.metrics["model"] == "lightgbm"].iloc[0]
    return {**key, "jobs": int(t["jobs"]), "coverage": t["coverage"], "pinball": t["pinball"],
            "overprov_ratio": t["overprov_ratio"], "recovered_fraction": t["recovered_fraction"]}


def _start(jobs: pd.DataFrame, start_days: float) -> float:
    return float(np.nanmin(epoch_s(jobs["submit_time"]))) + start_days * DAY_S


def history_curve(jobs: pd.DataFrame, target: str, level: float = 0.9, *, train_days=(7, 28, 91, None),
                  start_days: float = 182.0, **options) -> pd.DataFrame:
    """LightGBM's metrics at ``level`` when trained on the last ``d`` days only, for each ``d``."""
    start = _start(jobs, start_days)
    rows = [_row(evaluate_jobs(jobs, target, (level,), models=["lightgbm"], train_days=d, start_s=start, **options),
                 train_days=d if d is not None else "all") for d in train_days]
    return pd.DataFrame(rows)


def cadence_curve(jobs: pd.DataFrame, target: str, level: float = 0.9, *, retrain_every=(1, 4, 13),
                  start_days: float = 182.0, **options) -> pd.DataFrame:
    """LightGBM's metrics at ``level`` when refitted every ``r`` weekly folds, for each ``r``."""
    start = _start(jobs, start_days)
    rows = [_row(evaluate_jobs(jobs, target, (level,), models=["lightgbm"], retrain_every=r, start_s=start,
                               **options), retrain_every=r) for r in retrain_every]
    return pd.DataFrame(rows)
