"""Submit-time advice for one job script: p50/p90/p99 of each need, a recommended request, the risk of
the script's current request, and the most similar past jobs as the reason.

The script's ``#SBATCH`` lines become one job row submitted just after the history's last job ended; the
LightGBM hurdle quantile model (``quantile_hurdle``) is fitted on the history that ended before the trailing
calibration window (``cal_days``, at most a quarter of the history's span) and calibrated by level, uncapped,
on that window (the same procedure as one fold of the rolling evaluation).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from audit.accounting.families import job_family
from audit.units import parse_duration, parse_size

from .conformal import CURVE_LEVELS, LevelCalibrator
from .features import epoch_s, submission_features
from .quantile_hurdle import HurdleQuantileGBM
from .script import sbatch_directives
from .targets import TARGETS, actual, eligible, get_target, request

#: levels on which the risk of a request is read (the probability that the need exceeds it)
GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def _gpus(d: dict) -> tuple[float, str | None]:
    for key in ("gpus", "gres", "gpus-per-node"):
        v = d.get(key)
        if v:
            m = re.search(r"(?:gpu:)?(?:([A-Za-z][\w.-]*):)?(\d+)\s*$", v)
            if m:
                return float(m.group(2)), m.group(1)
    return 0.0, None


def script_job(text: str, *, user: str | None = None, submit_time: pd.Timestamp | None = None) -> pd.DataFrame:
    """One canonical-style job row from a script's ``#SBATCH`` directives (unknown fields are null)."""
    d = sbatch_directives(text)
    nodes = float(d.get("nodes", "1").split("-")[0] or 1)
    tasks = float(d.get("ntasks", 1) or 1)
    cpt = float(d.get("cpus-per-task", 1) or 1)
    cpus = tasks * cpt
    mem = np.nan
    if "mem" in d:
        mem = parse_size([d["mem"]], "M")[0][0] * nodes
    elif "mem-per-cpu" in d:
        mem = parse_size([d["mem-per-cpu"]], "M")[0][0] * cpus
    gpus, gpu_type = _gpus(d)
    limit = parse_duration([d["time"]])[0][0] if "time" in d else np.nan
    row = {"user": user, "account": d.get("account"), "partition": d.get("partition"), "qos": d.get("qos"),
           "job_name": d.get("job-name"), "submit_time": submit_time, "end_time": pd.NaT,
           "time_limit_s": limit, "req_cpus": cpus, "alloc_cpus": cpus, "req_mem_bytes": mem, "alloc_mem_bytes": mem,
           "req_gpus": gpus, "alloc_gpus": gpus, "gpu_type": gpu_type, "req_nodes": nodes, "elapsed_s": np.nan}
    frame = pd.DataFrame([row])
    for c in ("user", "account", "partition", "qos", "job_name", "gpu_type"):
        frame[c] = frame[c].astype("string")
    frame["submit_time"] = pd.to_datetime(frame["submit_time"], utc=True)
    frame["end_time"] = pd.to_datetime(frame["end_time"], utc=True)
    return frame


def risk_of(request_value: float, grid_pred: np.ndarray, grid=GRID) -> float | None:
    """P(need > request) read off calibrated quantiles: 1 − the highest level whose prediction ≤ request
    (interpolated between grid levels); ``None`` when the request is unknown."""
    if not np.isfinite(request_value):
        return None
    lv = np.asarray(grid)
    if request_value < grid_pred[0]:
        return float(1 - lv[0])  # at least this: the request is below the median need
    if request_value >= grid_pred[-1]:
        return float(1 - lv[-1])  # at most this
    return float(1 - np.interp(request_value, grid_pred, lv))


def similar_jobs(history: pd.DataFrame, job: pd.DataFrame, k: int = 5) -> pd.DataFrame:
    """The ``k`` most recent past jobs of the same user and job family (else family, else user)."""
    fam = job_family(history["job_name"]) if "job_name" in history else pd.Series("(unnamed)", index=history.index)
    jf = job_family(job["job_name"]).iloc[0]
    u = job["user"].iloc[0]
    same_u = (history["user"] == u).fillna(False).to_numpy(dtype=bool) if pd.notna(u) else np.zeros(len(history), bool)
    same_f = (fam == jf).to_numpy(dtype=bool)
    for mask in (same_u & same_f, same_f, same_u):
        if mask.any():
            return history[mask].sort_values("end_time").tail(k).iloc[::-1]
    return history.iloc[:0]


def predict_script(text: str, history: pd.DataFrame, *, user: str | None = None, risk: float = 0.9,
                   cal_days: float = 28.0, min_jobs: int = 200, n_estimators: int = 60,
                   random_state: int = 0) -> dict:
    """Advice for the script, per resource, as a JSON-ready dict."""
    if not 0 < risk < 1:
        raise ValueError(f"risk must lie strictly between 0 and 1, got {risk}")
    last_end = history["end_time"].max()
    job = script_job(text, user=user, submit_time=last_end + pd.Timedelta(seconds=1))
    both = pd.concat([history, job], ignore_index=True)
    grid = tuple(sorted(set(GRID) | {0.5, 0.9, 0.99, risk}))
    first, last = history["submit_time"].min(), history["submit_time"].max()
    window = min(pd.Timedelta(days=cal_days), (last - first) / 4)  # short histories keep 3/4 for training
    cut = (last - window).timestamp()
    out = {"job": {"user": user, "family": str(job_family(job["job_name"]).iloc[0])}, "risk": risk, "resources": {}}
    gpu_job = float(job["req_gpus"].iloc[0]) > 0
    for name, spec in TARGETS.items():
        if name in ("gpus", "gpu_memory") and not gpu_job:
            continue
        ok = eligible(both, name)
        if ok.sum() < min_jobs:
            continue
        X = submission_features(both, name)
        y = actual(both, name)
        end, sub = epoch_s(both["end_time"]), epoch_s(both["submit_time"])
        tr = ok & (end < cut)
        cal = ok & (sub >= cut)
        if tr.sum() < min_jobs or cal.sum() < 50:
            continue
        model = HurdleQuantileGBM(grid, n_estimators=n_estimators, log_offset=spec.log_offset,
                                  random_state=random_state).fit(X[tr], y[tr])
        req = request(both, name)
        c = LevelCalibrator(grid, cap=False).fit(model.predict_at(X[cal], CURVE_LEVELS), y[cal])
        q = c.transform(model.predict_at(X.tail(1), CURVE_LEVELS))[0]
        at = dict(zip(grid, q, strict=True))
        r = float(req[-1])
        out["resources"][name] = {
            "unit": get_target(name).unit, "p50": float(at[0.5]), "p90": float(at[0.9]), "p99": float(at[0.99]),
            "recommended_request": float(at[risk]), "current_request": r if np.isfinite(r) else None,
            "current_request_risk": risk_of(r, np.array([at[g] for g in GRID]))}
    sim = similar_jobs(history, job)
    out["similar_jobs"] = [{"job_id": str(s.job_id), "end_time": s.end_time.isoformat() if pd.notna(s.end_time) else None,
                            "state": None if pd.isna(s.state) else str(s.state),
                            "elapsed_s": None if pd.isna(s.elapsed_s) else float(s.elapsed_s),
                            "time_limit_s": None if pd.isna(s.time_limit_s) else float(s.time_limit_s),
                            "mem_peak_bytes": None if pd.isna(s.mem_peak_bytes) else float(s.mem_peak_bytes),
                            "req_mem_bytes": None if pd.isna(s.req_mem_bytes) else float(s.req_mem_bytes)}
                           for s in sim.itertuples()]
    return out
