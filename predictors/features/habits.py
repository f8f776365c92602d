"""Habits: what repeats in HPC is a user submitting the same job again (the same job family with the same
request), and such a group's past need says more of the next job's than anything else.

:func:`habit_history` gives each job, from the jobs of its *habit* (user, job family, request shape: time
limit, cores, memory, GPUs, nodes) that ended before it was submitted, the figures the site rules read:

| column | what | rule it feeds |
|---|---|---|
| ``habit_count`` | the habit's ended jobs | every rule waits for ``min_history`` of them |
| ``habit_max`` | the largest need of its last ``window`` (20) ended jobs | history max plus a margin |
| ``habit_krr`` | the largest need among those that ended in the last 14 days | KRR's simple strategy |
| ``habit_vpa`` | the 90th percentile of those of the last 8 days (at most 128) | VPA's target |
| ``habit_autopilot`` | the 98th percentile of the last ``window``, each weighted by ``2^(−age / 48 h)`` | Autopilot |
| ``habit_logsd`` | the standard deviation of log(need + offset) over the last ``window`` (two or more) | the strata |
| ``habit_share_n``, ``habit_share_mean``, ``habit_share_sd`` | how many of the last ``window`` have a share of the request, and the mean and standard deviation of its logit | ``habit_t`` |

:func:`strata` names each job's stratum from its habit's history strength and dispersion, and within it the
job's size class (:func:`sizes`: what it asks times its time limit, by quintile); calibration holds coverage
stratum by stratum (``predictors.models.conformal``), and a kill budget is spent where a miss frees the most
(``predictors.models.budget``): at the same share of jobs missed, a large job's cut frees more than a small
one's.  All of it is vectorised over sorted keys
(``predictors.features.history``): no loop over jobs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit.families import job_family

from .history import build_events, past_stats, query_bounds, window_matrix
from .submission import DAY_S, KRR_DAYS, VPA_DAYS, codes, epoch_s
from .targets import actual, eligible, get_target, request

#: the request columns whose combination is "the same request again" (as the job table names them)
SHAPE = ("time_limit_s", "req_cpus", "req_mem_bytes", "req_gpus", "req_nodes")
#: Autopilot's decaying histogram: half-life of a past sample's weight, and the percentile read from it
AUTOPILOT_HALF_LIFE_S = 48 * 3600.0
AUTOPILOT_QUANTILE = 0.98
HISTORY_COLUMNS = ("habit_count", "habit_last1", "habit_max", "habit_krr", "habit_vpa", "habit_autopilot",
                   "habit_logsd", "habit_share_n", "habit_share_mean", "habit_share_sd")
#: a share of the request is read in logit space between these bounds (a need at or over its request: the top)
SHARE_EPS = 1e-3

#: strata: a habit with fewer than ``SOME`` ended jobs is a cold start, one with ``LONG`` or more a long history,
#: one between a short history.  Dispersion (sd of log need over the last jobs) up to ``TIGHT`` is tight; a long
#: history is spread up to ``SPREAD`` and wide above it (a short one is only tight or loose: two to nine jobs
#: cannot tell spread from wide).  Real habits (a Torque cluster's 16k jobs) have a median sd of 0.34.
SOME, LONG = 2, 10
TIGHT, SPREAD = 0.1, 0.4
STRATA = ("cold", "short_tight", "short_loose", "long_tight", "long_spread", "long_wide")
#: each stratum's parent when it has too few calibration jobs of its own: its history class, then all jobs
PARENT = {"short_tight": "short", "short_loose": "short", "long_tight": "long", "long_spread": "long",
          "long_wide": "long", "cold": None, "short": None, "long": None}
#: size classes within each history stratum: the quintiles of what the jobs at hand ask (see :func:`sizes`)
SIZE_CLASSES = 5


def _num(jobs: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(jobs[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def habit_codes(jobs: pd.DataFrame) -> np.ndarray:
    """One code per (user, job family, request shape); -1 where the user is missing."""
    user = codes(jobs["user"])
    fam = job_family(jobs["job_name"]) if "job_name" in jobs else pd.Series(["(unnamed)"] * len(jobs))
    frame = pd.DataFrame({"user": user, "family": fam.astype("string").to_numpy(),
                          **{c: _num(jobs, c) if c in jobs else np.full(len(jobs), np.nan) for c in SHAPE}})
    c = frame.groupby(list(frame.columns), sort=False, dropna=False).ngroup().to_numpy().astype(np.int64)
    return np.where(user >= 0, c, -1)


def habit_groups(jobs: pd.DataFrame) -> np.ndarray:
    """Each job's habit as the group whose jobs miss together (``models.coverage_se``): :func:`habit_codes`, with
    each job without a user a group of its own (a negative code)."""
    c = habit_codes(jobs)
    return np.where(c >= 0, c, -1 - np.arange(len(c)))


def decayed_quantile(values: np.ndarray, ages_s: np.ndarray, q: float, half_life_s: float) -> np.ndarray:
    """Per row, the ``q`` quantile of ``values`` (NaN-padded) weighted by ``2^(−age / half_life)``: the
    smallest value whose cumulative weight reaches ``q`` of the row's total (NaN where a row is empty)."""
    ok = np.isfinite(values)
    w = np.where(ok, np.exp2(-np.clip(ages_s, 0, None) / half_life_s), 0.0)
    v = np.where(ok, values, np.inf)
    order = np.argsort(v, axis=1, kind="stable")
    vs = np.take_along_axis(v, order, axis=1)
    cw = np.cumsum(np.take_along_axis(w, order, axis=1), axis=1)
    total = cw[:, -1:] if cw.shape[1] else np.zeros((len(v), 1))
    with np.errstate(invalid="ignore"):
        k = (cw < q * total - 1e-12 * total).sum(axis=1)
    k = np.minimum(k, max(v.shape[1] - 1, 0))
    out = vs[np.arange(len(v)), k] if v.shape[1] else np.full(len(v), np.nan)
    return np.where(ok.any(axis=1), out, np.nan)


def habit_history(jobs: pd.DataFrame, target: str, *, window: int = 20, gpu_memory_bytes: dict | None = None,
                  group: np.ndarray | None = None) -> pd.DataFrame:
    """Per job (same order as ``jobs``): the :data:`HISTORY_COLUMNS` of its habit for ``target``, in the
    target's unit, from the habit's jobs that ended strictly before the job was submitted."""
    jobs = jobs.reset_index(drop=True)
    spec = get_target(target)
    grp = habit_codes(jobs) if group is None else group
    submit = epoch_s(jobs["submit_time"])
    end = epoch_s(jobs["end_time"])
    y = np.where(eligible(jobs, target), actual(jobs, target), np.nan)
    ages = {"krr": (KRR_DAYS * DAY_S, "max", 0), "vpa": (VPA_DAYS * DAY_S, 0.9, 128)}
    st = past_stats(grp, submit, end, y, window=window, quantiles=(), age_windows=ages)
    ev = build_events(grp, end, y, submit)
    lo, hi = query_bounds(ev, grp, submit)
    vals = window_matrix(ev, lo, hi, window)
    if len(ev.end_s):
        idx = np.clip(hi[:, None] - np.arange(1, window + 1)[None, :], 0, len(ev.end_s) - 1)
        ages_s = submit[:, None] - ev.end_s[idx]
    else:
        ages_s = np.zeros_like(vals)
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.log(np.clip(vals, 0, None) + spec.log_offset)
        n, _, sd = _row_stats(logs)
        # the habit shares its request (the shape is part of the habit): the past jobs' shares of this one's
        asked = request(jobs, target, gpu_memory_bytes=gpu_memory_bytes)
        ns, s_mean, s_sd = _row_stats(logit_share(vals, asked[:, None]))
    return pd.DataFrame({
        "habit_count": st["count"], "habit_last1": st["last1"], "habit_max": st["max"], "habit_krr": st["krr"],
        "habit_vpa": st["vpa"],
        "habit_autopilot": decayed_quantile(vals, ages_s, AUTOPILOT_QUANTILE, AUTOPILOT_HALF_LIFE_S),
        "habit_logsd": np.where(n >= 2, sd, np.nan),
        "habit_share_n": ns.astype(np.float64),
        "habit_share_mean": np.where(ns >= 1, s_mean, np.nan),
        "habit_share_sd": np.where(ns >= 2, s_sd, np.nan),
    })


def _row_stats(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: how many values are finite, their mean and their sample standard deviation (meaningless under
    one and two values: the caller masks those)."""
    n = np.isfinite(m).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(m, axis=1) / n
    sd = np.sqrt(np.nansum((m - mean[:, None]) ** 2, axis=1) / np.maximum(n - 1, 1))
    return n, mean, sd


def logit_share(need: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """logit of ``need / asked``, the share clipped to [``SHARE_EPS``, 1 − ``SHARE_EPS``]; NaN where either is
    unknown or nothing was asked."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.clip(np.asarray(need, dtype=np.float64) / asked, SHARE_EPS, 1.0 - SHARE_EPS)
        out = np.log(p / (1.0 - p))
    return np.where(np.isfinite(need) & np.isfinite(asked) & (asked > 0), out, np.nan)


def sizes(asked: np.ndarray, limit_s: np.ndarray | None = None, classes: int = SIZE_CLASSES) -> np.ndarray:
    """Each job's size class, ``q1`` (smallest) to ``qN``: what it asks of the target times its time limit
    (the resource-hours it may hold; a job without a limit counts as the longest limit seen, and without any
    limit the request alone), cut at the quantiles of the jobs given.  Known at submission: a request, not a
    use.  None where the request is unknown."""
    a = np.asarray(asked, dtype=np.float64)
    if limit_s is not None:
        lim = np.asarray(limit_s, dtype=np.float64)
        ok = np.isfinite(lim) & (lim > 0)
        a = a * np.where(ok, lim, lim[ok].max() if ok.any() else 1.0)
    known = np.isfinite(a)
    out = np.full(len(a), None, dtype=object)
    if not known.any() or classes < 2:
        out[known] = "q1"
        return out
    cuts = np.quantile(a[known], np.arange(1, classes) / classes)
    k = np.searchsorted(cuts, a[known], side="left")
    out[known] = np.char.add("q", (k + 1).astype(str)).astype(object)
    return out


def strata(history: pd.DataFrame, size: np.ndarray | None = None) -> np.ndarray:
    """Each job's stratum name from its habit's ``habit_count`` and ``habit_logsd`` (:data:`STRATA`), and with
    ``size`` (:func:`sizes`) its size class within it: ``long_spread/q5``."""
    n = history["habit_count"].to_numpy(dtype=np.float64, na_value=0.0)
    sd = history["habit_logsd"].to_numpy(dtype=np.float64, na_value=np.nan)
    long = n >= LONG
    out = np.where(sd <= TIGHT, np.where(long, "long_tight", "short_tight"),
                   np.where(long, np.where(sd <= SPREAD, "long_spread", "long_wide"), "short_loose"))
    out = np.where(n < SOME, "cold", out).astype(object)
    if size is not None:
        size = np.asarray(size, dtype=object)
        has = np.array([x is not None for x in size], dtype=bool)
        out[has] = np.char.add(np.char.add(out[has].astype(str), "/"), size[has].astype(str)).astype(object)
    return out


def history_class(stratum) -> str | None:
    """The history part of a stratum name (``long_spread/q5`` → ``long_spread``)."""
    return None if stratum is None else str(stratum).split("/", 1)[0]


def parent(group: str | None) -> str | None:
    """The group a stratum borrows calibration from when it has too few jobs: a size class's history stratum,
    a history stratum's class (``short``, ``long``), then every job (None)."""
    if group is None:
        return None
    if "/" in group:
        return group.split("/", 1)[0]
    return PARENT.get(group)


def members(group: str | None, stratum: np.ndarray) -> np.ndarray:
    """The jobs of ``group``: a stratum, a history stratum naming its size classes, or a history class
    (``short``, ``long``) naming every stratum in it; none for None."""
    s = stratum.astype(str)
    if group is None:
        return np.zeros(len(s), dtype=bool)
    if group in ("short", "long"):
        return np.char.startswith(s, group + "_")
    return (s == group) | np.char.startswith(s, group + "/")

