"""The submit-time advisor's front: ``reclaim predict fit STORE`` (:func:`fit`) and ``reclaim predict SCRIPT
--history STORE`` (:func:`predict_script`).

A store's model is fitted once and saved in ``STORE/model`` (``reclaim audit`` saves one too); advice loads
it.  A store whose ``jobs.parquet`` changed since (another ingest) is refitted once, on first use; a history
given as trace files, or a store that cannot be written, is fitted in memory for that call only (slow: say so).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..features import load_jobs
from .model import FOLDER, AdvisorModel, fit_store, is_current, load_model

#: the targets a job without GPUs needs (a GPU job loads the GPU targets too)
CPU_TARGETS = ("walltime", "memory", "cpus")


def fit(store, *, fitted_at: str | None = None, **params) -> Path:
    """Fit the advisor's model on a store and save it in ``STORE/model``; the folder written.  ``fitted_at``
    (ISO time, recorded in the manifest) defaults to now, or ``SOURCE_DATE_EPOCH``."""
    store = Path(store)
    if not (store / "jobs.parquet").exists():
        from audit.textio import InputError

        raise InputError(f"{store}: no jobs.parquet (run `reclaim ingest` first)")
    return fit_store(store, fitted_at=fitted_at, **params)


def model_for(history, *, gpus: bool = True, log=None, read=None) -> tuple[AdvisorModel, Path | None]:
    """The model of a history (a store folder, a job table, or trace files read with ``read``:
    :func:`predictors.features.load_jobs`) and the store it belongs to."""
    if isinstance(history, AdvisorModel):
        return history, None
    if isinstance(history, pd.DataFrame):
        return AdvisorModel().fit(history), None
    paths = [Path(p) for p in (history if isinstance(history, list | tuple) else [history])]
    store = paths[0] if len(paths) == 1 and (paths[0] / "jobs.parquet").exists() else None
    targets = None if gpus else CPU_TARGETS
    if store is not None:
        if is_current(store):
            return load_model(store / FOLDER, targets), store
        if os.access(store, os.W_OK):
            if log:
                log(f"fitting the advisor's model on {store} once (saved in {store / FOLDER}; "
                    "`reclaim predict fit STORE` does it ahead)")
            return load_model(fit(store), targets), store
    if log:
        log("fitting the advisor's model in memory for this call only: ingest the history into a store "
            "(`reclaim ingest … --out STORE`) to fit it once")
    return AdvisorModel().fit(load_jobs(paths if len(paths) > 1 else paths[0], read)), store


def _shape(store: Path | None):
    if store is None or not (store / "cluster_shape.toml").exists():
        return None
    from audit.cluster_shape import load_cluster_shape

    return load_cluster_shape(store / "cluster_shape.toml")


def default_user(model: AdvisorModel, environ=None) -> str | None:
    """``$USER`` (else ``$LOGNAME``) when that user has jobs in the history."""
    env = os.environ if environ is None else environ
    name = env.get("USER") or env.get("LOGNAME")
    return name if name and len(model.user_history(name)) else None


def predict_script(text: str, history, *, args=(), user: str | None = None, risk: float = 0.9,
                   strict: bool = False, origin: str | None = None, log=None, read=None) -> dict:
    """Advice for one job script or Kubernetes manifest (``text``), sbatch options ``args`` overriding the
    script's, from the model of ``history`` (trace files read with ``read``); the dict of
    :func:`predictors.advisor.advise`."""
    from .advise import advise, read_job

    req = read_job(text, args, origin=origin)
    model, store = model_for(history, gpus=req.gpus > 0, log=log, read=read)
    user_from = "option" if user else None
    if user is None and req.user is None:
        user = default_user(model)
        user_from = "environment" if user else None
    return advise(req, model, user=user, user_from=user_from, level=risk, shape=_shape(store), strict=strict,
                  origin=origin)
