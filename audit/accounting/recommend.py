"""Right-sizing recommendations per user and job family, from the calibrated out-of-sample predictions the
what-if applies (``predictions.parquet``, :func:`predictors.models.rightsize.right_size`; never computed again here).

Per user, job family and resource (memory, time limit, cores): the jobs predicted, what they ask (the median
request), what they need at p50/p90/p99 (the median over the jobs of each job's calibrated prediction at that
level), the request to make instead (the ``level``-quantile over the jobs of their predictions at the
recommended ``level``, rounded up: memory to a whole GiB, time to the next 15 minutes, cores to a whole core;
never above the ask), and what it frees (Σ (ask − request) × run time over the jobs; for time limits, the
hours of limit handed back, which cost queue position, not node time).  Families of fewer than
``MIN_JOBS`` predicted jobs, or whose request would free nothing, are left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .waste import GiB

MIN_JOBS = 3
H = 3600.0
COLUMNS = ("user", "account", "job_family", "resource", "unit", "jobs", "ask", "need_p50", "need_p90", "need_p99",
           "request", "frees", "frees_unit", "slurm")
#: resource → (prediction stem, unit of ask/need/request, unit of what it frees, rounding step)
RESOURCES = {"memory": ("mem_peak_bytes", "GiB", "GiB-h", 1.0), "time": ("elapsed_s", "s", "limit-h", 900.0),
             "cores": ("cpus_used", "cores", "core-h", 1.0)}


def _label(level: float) -> str:
    pct = round(level * 100, 6)
    return f"p{int(pct)}" if pct == int(pct) else f"p{pct:g}"


def _f(s) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def _slurm(resource: str, value: float) -> str:
    if resource == "memory":
        return f"--mem={int(value)}G"
    if resource == "cores":
        return f"--cpus-per-task={int(value)}"
    s = int(value)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m = s // 60
    return f"--time={d}-{h:02d}:{m:02d}:00" if d else f"--time={h:02d}:{m:02d}:00"


def aligned(waste: pd.DataFrame, predictions: pd.DataFrame) -> pd.DataFrame:
    """The predictions in the order of ``waste``'s jobs (by cluster and job id; NaN for a job not predicted)."""
    keys = [k for k in ("cluster", "job_id") if k in predictions and k in waste]
    left = waste[keys].astype(str).reset_index(drop=True)
    right = predictions.assign(**{k: predictions[k].astype(str) for k in keys}).drop_duplicates(keys)
    return left.merge(right, on=keys, how="left")


def recommend(waste: pd.DataFrame, jobs: pd.DataFrame, predictions: pd.DataFrame | None, level: float) -> pd.DataFrame:
    """One row per user, job family and resource (``COLUMNS``), largest ``frees`` first within each unit."""
    if predictions is None or predictions.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    predictions = aligned(waste, predictions)
    el = waste["elapsed_s"].to_numpy(dtype=float)
    req_mem = _f(jobs["req_mem_bytes"])
    asks = {"memory": np.where(np.isfinite(req_mem), req_mem, waste["mem_alloc_bytes"].to_numpy(dtype=float)) / GiB,
            "time": _f(jobs["time_limit_s"]), "cores": waste["alloc_cpus"].to_numpy(dtype=float)}
    key = pd.DataFrame({"user": waste["user"].astype(str).to_numpy(), "account": waste["account"].astype(str).to_numpy(),
                        "job_family": waste["job_family"].astype(str).to_numpy()})
    rows = []
    for resource, (stem, unit, frees_unit, step) in RESOURCES.items():
        col = f"pred_{stem}_{_label(level)}"
        if col not in predictions:
            continue
        scale = GiB if resource == "memory" else 1.0
        pred = predictions[col].to_numpy(dtype=float) / scale
        ok = np.isfinite(pred) & np.isfinite(asks[resource]) & (asks[resource] > 0)
        needs = {q: predictions[c].to_numpy(dtype=float) / scale if (c := f"pred_{stem}_{_label(q)}") in predictions
                 else np.full(len(pred), np.nan) for q in (0.5, 0.9, 0.99)}
        frame = key[ok].assign(ask=asks[resource][ok], pred=pred[ok], el=el[ok],
                               n50=needs[0.5][ok], n90=needs[0.9][ok], n99=needs[0.99][ok])
        for (user, family), g in frame.groupby(["user", "job_family"], sort=True):
            if len(g) < MIN_JOBS:
                continue
            ask = float(np.median(g["ask"]))
            request = float(np.ceil(np.quantile(g["pred"], level) / step) * step)
            request = min(max(request, step), ask)
            freed = np.maximum(g["ask"].to_numpy() - request, 0.0)
            frees = float((freed / H).sum()) if resource == "time" else float((freed * g["el"].to_numpy() / H).sum())
            if request >= ask or frees <= 0:
                continue
            rows.append({"user": user, "account": g["account"].iloc[0], "job_family": family, "resource": resource,
                         "unit": unit, "jobs": int(len(g)), "ask": ask, "need_p50": float(g["n50"].median()),
                         "need_p90": float(g["n90"].median()), "need_p99": float(g["n99"].median()),
                         "request": request, "frees": frees, "frees_unit": frees_unit,
                         "slurm": _slurm(resource, request)})
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    return out.sort_values(["frees_unit", "frees"], ascending=[True, False], kind="stable").reset_index(drop=True)


#: prediction stem → how the job's actual need is read from ``waste.parquet``
ACTUALS = {"mem_peak_bytes": lambda w: w["mem_peak_bytes"].to_numpy(dtype=float),
           "elapsed_s": lambda w: w["elapsed_s"].to_numpy(dtype=float),
           "cpus_used": lambda w: w["core_s_used"].to_numpy(dtype=float) / w["elapsed_s"].to_numpy(dtype=float),
           "gpus_needed": lambda w: w["gpu_s_used"].to_numpy(dtype=float) / w["elapsed_s"].to_numpy(dtype=float)}


def calibration(waste: pd.DataFrame, predictions: pd.DataFrame | None) -> pd.DataFrame:
    """Measured out-of-sample coverage of the predictions (``prediction_calibration.csv``): per target and level,
    the jobs predicted and the share whose actual need came out at or under the prediction (a calibrated p90
    covers about 90 %)."""
    cols = ["target", "level", "jobs", "coverage"]
    if predictions is None or predictions.empty:
        return pd.DataFrame(columns=cols)
    p = aligned(waste, predictions)
    rows = []
    for c in p.columns:
        if not c.startswith("pred_"):
            continue
        stem, _, label = c[5:].rpartition("_")
        if stem not in ACTUALS:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            actual = ACTUALS[stem](waste)
        pred = p[c].to_numpy(dtype=float)
        ok = np.isfinite(pred) & np.isfinite(actual)
        if ok.any():
            rows.append({"target": stem, "level": float(label[1:]) / 100.0, "jobs": int(ok.sum()),
                         "coverage": float((actual[ok] <= pred[ok] * (1 + 1e-9)).mean())})
    return pd.DataFrame(rows, columns=cols)
