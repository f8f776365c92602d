"""The month a what-if replays: the canonical table's replayable jobs as job totals (through the one
converter, :func:`.to_simulator.job_totals`), what they really used, their pools, and the predictions
the right-sized scenarios apply, aligned to the jobs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.records import Cluster

from .replays import job_pools
from .scenarios import Month
from .to_simulator import job_totals

#: prediction columns of :func:`predictors.models.rightsize.right_size` per target (``pred_<stem>_p<level>``)
STEMS = {"memory": "mem_peak_bytes", "cpus": "cpus_used", "gpus": "gpus_needed", "walltime": "elapsed_s"}


def _f(table: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(table[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def cores_busy(table: pd.DataFrame) -> np.ndarray:
    """Cores busy on average (CPU time / elapsed), NaN where CPU time is unknown or not to be trusted."""
    elapsed = _f(table, "elapsed_s")
    cav = table["caveats"].astype("string").fillna("")
    bad = (cav.str.contains("totalcpu_zero", regex=False) | cav.str.contains("no_usage_fields", regex=False))
    with np.errstate(divide="ignore", invalid="ignore"):
        busy = _f(table, "cpu_used_s") / elapsed
    return np.where((elapsed > 0) & ~bad.to_numpy(dtype=bool), busy, np.nan)


def gpus_busy(table: pd.DataFrame) -> np.ndarray:
    """GPUs busy on average (held GPUs × mean utilisation), NaN where utilisation is unknown."""
    return _f(table, "alloc_gpus") * _f(table, "gpu_util_mean")


def by_level(frame: pd.DataFrame, levels) -> dict:
    """``{level: {target: column}}`` from the ``pred_<stem>_p<level>`` columns of ``right_size``."""
    from predictors.models import level_label

    out = {}
    for lv in levels:
        cols = {t: f"pred_{stem}_{level_label(lv)}" for t, stem in STEMS.items()}
        out[float(lv)] = {t: frame[c].to_numpy(dtype=np.float64) for t, c in cols.items() if c in frame}
    return out


def history_masks(frame: pd.DataFrame | None) -> dict:
    """Per target, the jobs (table order) that were predicted from a history of their own: a stratum other
    than a cold start (fewer than two ended jobs of their habit)."""
    out = {}
    if frame is None:
        return out
    for t, stem in STEMS.items():
        col = f"stratum_{stem}"
        if col in frame:
            st = frame[col].astype("string")
            cold = st.str.split("/", n=1).str[0] == "cold"
            out[t] = (st.notna() & ~cold.fillna(True)).to_numpy(dtype=bool)
    return out


def build_month(table: pd.DataFrame, cluster: Cluster, predictions: dict | None = None,
                procs: int | None = None, history: dict | None = None) -> tuple[Month, dict]:
    """``(month, dropped)``.  ``predictions`` maps a level (or a predictor name such as ``last_two``)
    to ``{target: values in table order}`` for the targets ``memory``, ``cpus``, ``gpus``, ``walltime``
    (see :func:`by_level`); ``history`` maps a target to a mask (table order) of the jobs that had a
    history to be right-sized from (:func:`history_masks`)."""
    t = job_totals(table, procs=procs)
    c = t.columns
    rows = t.rows
    busy = cores_busy(table)[rows]
    gbusy = gpus_busy(table)[rows]
    if procs is not None:
        gbusy = np.full(len(rows), np.nan)
    preds = {key: {target: np.asarray(v, dtype=np.float64)[rows] for target, v in p.items()}
             for key, p in (predictions or {}).items()}
    text = {k: c[k] for k in ("user", "account", "partition", "qos", "gpu_type")}
    month = Month(id=c["id"], submit=c["submit"], run=c["run"], nodes=c["nodes"], cpus=c["cpus"], mem=c["mem"],
                  gpus=c["gpus"], limit=c["limit"], asked_limit=c["asked_limit"], estimate=c["estimate"],
                  mem_peak=c["mem_peak"], cpu_need=busy, gpu_need=gbusy, logged_start=c["logged_start"],
                  cpu_util=c["cpu_util"], gpu_util=c["gpu_util"], text=text,
                  pool=job_pools(cluster, c["partition"]) if isinstance(cluster, Cluster) else np.zeros(len(rows), int),
                  predictions=preds, history={k: np.asarray(v, dtype=bool)[rows] for k, v in (history or {}).items()},
                  cpu_unit=t.cpu_unit, gpu_unit=t.gpu_unit)
    return month, t.dropped
