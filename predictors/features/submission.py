"""Submission-time features of each job for one target, from the canonical job table.

Everything here is known when the job is submitted: who and where (user, account, partition, QOS, GPU
type, job-name family), what was requested, the time of day and week, and the history of the target
over the user's, the family's and the user's same-request jobs that *ended before this submission*
(``predictors.features.history``).  Job-script features are hashed token counts when scripts are given.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit.families import job_family

from .history import build_events, past_stats, query_bounds
from .script import script_features
from .targets import actual, eligible, get_target, request

CATEGORICAL = ("user", "account", "partition", "qos", "gpu_type", "family")
#: a job whose need reaches this share of its request uses (or is killed at) all of it
HIT_FRACTION = 0.95
#: the request columns whose combination identifies "the same job again"
REQUESTS = ("req_walltime_s", "req_cpus", "req_mem_bytes", "req_gpus", "req_nodes")

#: VPA keeps a decaying histogram over about 8 days; KRR looks back 14 days (336 h) by default
VPA_DAYS = 8.0
KRR_DAYS = 14.0
DAY_S = 86400.0


def epoch_s(t: pd.Series) -> np.ndarray:
    """UTC timestamps as float seconds since the epoch (NaN where missing)."""
    ts = pd.to_datetime(t, utc=True)
    return ((ts - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64, na_value=np.nan)


def codes(s: pd.Series) -> np.ndarray:
    """Integer code per distinct value; -1 for missing."""
    c, _ = pd.factorize(s.astype("string"), use_na_sentinel=True)
    return c.astype(np.int64)


def _num(jobs: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(jobs[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def _pair_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One code per (a, b) pair; -1 where either is missing."""
    bb = np.where(np.isfinite(b), b, np.nan)
    frame = pd.DataFrame({"a": a, "b": bb})
    c = frame.groupby(["a", "b"], sort=False, dropna=False).ngroup().to_numpy().astype(np.int64)
    return np.where((a >= 0) & np.isfinite(b), c, -1)


def _shape_codes(user: np.ndarray, columns: dict) -> np.ndarray:
    """One code per (user, every request) combination; -1 where the user is missing."""
    frame = pd.DataFrame({"user": user, **columns})
    c = frame.groupby(list(frame.columns), sort=False, dropna=False).ngroup().to_numpy().astype(np.int64)
    return np.where(user >= 0, c, -1)


def in_flight(group: np.ndarray, submit: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The group's jobs submitted before this one and not yet ended when it was submitted."""
    def before(t: np.ndarray) -> np.ndarray:  # the group's jobs with time t strictly before the submission
        lo, hi = query_bounds(build_events(group, t, np.ones(len(t)), submit), group, submit)
        return hi - lo

    return np.where(group >= 0, np.clip(before(submit) - before(end), 0, None), np.nan)


def submission_burst(user: np.ndarray, submit: np.ndarray, req: np.ndarray) -> dict[str, np.ndarray]:
    """What the user had submitted before this job (known at submission, outcomes not needed): time since
    the previous submission, whether it asked for the same, and submissions in the last hour and day."""
    s = past_stats(user, submit, submit, req, window=2, quantiles=(),
                   age_windows={"hour": (3600.0, "count", 0), "day": (DAY_S, "count", 0)})
    with np.errstate(invalid="ignore"):
        same = np.where(np.isfinite(s["last1"]), (s["last1"] == req).astype(np.float64), np.nan)
    return {"user_prev_submit_s": s["since_last_s"], "user_prev_same_request": same,
            "user_submits_1h": s["hour"], "user_submits_1d": s["day"]}


def submission_features(jobs: pd.DataFrame, target: str, *, window: int = 20, scripts=None, n_hash: int = 32,
                        gpu_memory_bytes: dict | None = None) -> pd.DataFrame:
    """One row per job (same order as ``jobs``): categorical columns (strings) and numeric features.

    The history columns ``user_*``, ``family_*``, ``userreq_*`` are in the target's unit; ``request`` is the
    job's own request for the target.  ``scripts`` (optional, aligned with ``jobs``) adds ``script_h00``….
    """
    spec = get_target(target)
    jobs = jobs.reset_index(drop=True)
    n = len(jobs)
    out = {c: jobs[c].astype("string") for c in CATEGORICAL if c != "family"}
    out["family"] = job_family(jobs["job_name"]) if "job_name" in jobs else pd.Series(["(unnamed)"] * n)
    req = request(jobs, target, gpu_memory_bytes=gpu_memory_bytes)
    out["request"] = req
    out["req_walltime_s"] = _num(jobs, "time_limit_s")
    out["req_cpus"] = request(jobs, "cpus")
    out["req_mem_bytes"] = request(jobs, "memory")
    out["req_gpus"] = request(jobs, "gpus")
    out["req_nodes"] = _num(jobs, "req_nodes")
    submit = epoch_s(jobs["submit_time"])
    end = epoch_s(jobs["end_time"])
    out["hour_of_day"] = (submit % DAY_S) / 3600.0
    out["day_of_week"] = np.floor(submit / DAY_S + 3) % 7  # 1970-01-01 was a Thursday: Monday = 0
    y = np.where(eligible(jobs, target), actual(jobs, target), np.nan)
    user = codes(jobs["user"])
    ages = {"vpa": (VPA_DAYS * DAY_S, 0.9, 128), "krr": (KRR_DAYS * DAY_S, "max", 0)}
    shape = _shape_codes(user, {k: out[k] for k in REQUESTS})
    for name, grp, extra in (("user", user, ages), ("family", codes(out["family"]), None),
                             ("userreq", _pair_codes(user, req), None), ("usershape", shape, None)):
        stats = past_stats(grp, submit, end, y, window=window, quantiles=(0.5, 0.9), age_windows=extra)
        for k, v in stats.items():
            out[f"{name}_{k}"] = v
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.log(y + spec.log_offset) - np.log(req + spec.log_offset)
    rs = past_stats(user, submit, end, ratio, window=window, quantiles=(0.5, 0.9))
    for k in ("last1", "q50", "q90", "max"):
        out[f"user_logratio_{k}"] = rs[k]
    with np.errstate(invalid="ignore"):
        hit = np.where(np.isfinite(y) & (req > 0), (y >= HIT_FRACTION * req).astype(np.float64), np.nan)
    out["user_hit_share"] = past_stats(user, submit, end, hit, window=window, quantiles=())["wmean"]
    out["user_in_flight"] = in_flight(user, submit, end)
    out["usershape_in_flight"] = in_flight(shape, submit, end)
    out.update(submission_burst(user, submit, req))
    frame = pd.DataFrame(out)
    if scripts is not None:
        h = script_features(scripts, n_hash)
        frame = pd.concat([frame, pd.DataFrame(h, columns=[f"script_h{i:02d}" for i in range(n_hash)])], axis=1)
    return frame


def numeric_columns(features: pd.DataFrame) -> list[str]:
    return [c for c in features.columns if c not in CATEGORICAL]
