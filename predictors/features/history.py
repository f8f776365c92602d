"""Past-only history of a value per group (user, job family), vectorised with sorted keys.

Every statistic for a job is computed from the group's jobs that *ended strictly before the job's
submission*: a job's own value, and the value of any job still running when it was submitted, never
enter its history.  The work is a handful of ``searchsorted`` calls on (group, end time) keys plus one
gather of the last ``k`` values per job; there is no Python loop over rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Events:
    """Finished jobs of one value, sorted by (group, end time): the history every query reads."""

    key: np.ndarray      # group * span + end offset, sorted ascending
    group: np.ndarray    # group code of each event
    end_s: np.ndarray    # end time of each event, seconds
    value: np.ndarray    # the value the event contributes
    cumsum: np.ndarray   # running sum of value within each group (restarting at each group)
    t0: int
    span: int


def _span(*times: np.ndarray) -> tuple[int, int]:
    finite = [t[np.isfinite(t)] for t in times if t.size]
    finite = [t for t in finite if t.size]
    if not finite:
        return 0, 1
    lo = int(np.floor(min(t.min() for t in finite)))
    hi = int(np.ceil(max(t.max() for t in finite)))
    return lo, hi - lo + 2


def build_events(group: np.ndarray, end_s: np.ndarray, value: np.ndarray, query_s: np.ndarray) -> Events:
    """Index the jobs that have a group, an end time and a finite value."""
    group = np.asarray(group, dtype=np.int64)
    end_s = np.asarray(end_s, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    ok = (group >= 0) & np.isfinite(end_s) & np.isfinite(value)
    t0, span = _span(end_s[ok], np.asarray(query_s, dtype=np.float64))
    g, t, v = group[ok], np.floor(end_s[ok]).astype(np.int64), value[ok]
    order = np.lexsort((t, g))
    g, t, v = g[order], t[order], v[order]
    key = g * span + (t - t0)
    # per-group sums, so that a group's figures never depend (even in rounding) on other groups' values
    csum = pd.Series(v).groupby(g, sort=False).cumsum().to_numpy() if len(v) else np.zeros(0)
    return Events(key=key, group=g, end_s=t.astype(np.float64), value=v, cumsum=csum, t0=t0, span=span)


def query_bounds(ev: Events, group: np.ndarray, query_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: the group's events ``ev.value[lo:hi]`` are those that ended strictly before ``query_s``."""
    group = np.asarray(group, dtype=np.int64)
    q = np.floor(np.asarray(query_s, dtype=np.float64))
    valid = (group >= 0) & np.isfinite(q)
    g = np.where(valid, group, 0)
    qk = g * ev.span + (np.where(valid, q, ev.t0).astype(np.int64) - ev.t0)
    lo = np.searchsorted(ev.group, g, side="left")
    hi = np.searchsorted(ev.key, qk, side="left")
    hi = np.where(valid, np.maximum(hi, lo), lo)
    return lo, hi


def window_matrix(ev: Events, lo: np.ndarray, hi: np.ndarray, k: int, *, query_s: np.ndarray | None = None,
                  max_age_s: float | None = None) -> np.ndarray:
    """The last ``k`` values before each query, newest first, NaN-padded (optionally only those younger than
    ``max_age_s`` at the query time)."""
    idx = hi[:, None] - np.arange(1, k + 1)[None, :]
    ok = idx >= lo[:, None]
    safe = np.clip(idx, 0, max(len(ev.value) - 1, 0))
    if len(ev.value) == 0:
        return np.full((len(lo), k), np.nan)
    if max_age_s is not None:
        ok &= ev.end_s[safe] >= (np.asarray(query_s, dtype=np.float64)[:, None] - max_age_s)
    return np.where(ok, ev.value[safe], np.nan)


def row_quantiles(m: np.ndarray, qs) -> np.ndarray:
    """Linear-interpolated quantiles of each row of ``m`` ignoring NaN (NaN where a row is empty); shape (n, len(qs))."""
    n = m.shape[0]
    s = np.sort(m, axis=1)  # NaN sorts last
    cnt = np.isfinite(m).sum(axis=1)
    out = np.full((n, len(qs)), np.nan)
    has = cnt > 0
    rows = np.flatnonzero(has)
    for j, q in enumerate(qs):
        pos = q * (cnt[has] - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, cnt[has] - 1)
        frac = pos - lo
        out[rows, j] = s[rows, lo] * (1 - frac) + s[rows, hi] * frac
    return out


def range_max(ev: Events, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Largest of ``ev.value[lo:hi]`` per query (NaN where empty), exact for any range length."""
    out = np.full(len(lo), np.nan)
    has = hi > lo
    if not has.any():
        return out
    pairs = np.empty(2 * int(has.sum()), dtype=np.int64)
    pairs[0::2] = lo[has]
    pairs[1::2] = hi[has]
    vals = np.append(ev.value, -np.inf)  # reduceat needs every index < len; the sentinel is never reduced
    out[has] = np.maximum.reduceat(vals, pairs)[0::2]
    return out


def past_sums(group: np.ndarray, submit_s: np.ndarray, end_s: np.ndarray, value: np.ndarray) -> tuple:
    """``(count, total)`` per job of ``value`` over its group's jobs that ended before it was submitted (total
    0 where there are none)."""
    submit_s = np.asarray(submit_s, dtype=np.float64)
    ev = build_events(group, end_s, value, submit_s)
    lo, hi = query_bounds(ev, group, submit_s)
    total = np.where(hi > lo, ev.cumsum[np.clip(hi - 1, 0, None)] if len(ev.cumsum) else 0.0, 0.0)
    return (hi - lo).astype(np.float64), total


def past_stats(group: np.ndarray, submit_s: np.ndarray, end_s: np.ndarray, value: np.ndarray, *,
               window: int = 20, quantiles=(0.5, 0.9), age_windows: dict | None = None) -> dict[str, np.ndarray]:
    """Per job, statistics of ``value`` over its group's jobs that ended before the job was submitted.

    Keys: ``count``, ``mean`` (all history), ``last1``, ``last2`` (most recent and the one before),
    ``wmean``, ``q50``/``q90``… (over the last ``window`` runs), ``max`` (last ``window`` runs), ``since_last_s``.
    ``age_windows`` maps a name to ``(max_age_s, quantile, "max" or "count", cap)``: e.g. ``{"vpa": (8 * 86400, 0.9, 128)}``
    gives the 90th percentile of the group's values that ended in the last 8 days (at most the last 128).
    """
    submit_s = np.asarray(submit_s, dtype=np.float64)
    ev = build_events(group, end_s, value, submit_s)
    lo, hi = query_bounds(ev, group, submit_s)
    count = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        total = ev.cumsum[np.clip(hi - 1, 0, None)] if len(ev.cumsum) else np.zeros(len(hi))
        mean = total / count  # lo is the group's first event, so the in-group running sum is the total
    win = window_matrix(ev, lo, hi, max(window, 2))
    out = {"count": count.astype(np.float64), "mean": np.where(count > 0, mean, np.nan),
           "last1": win[:, 0], "last2": win[:, 1]}
    w = win[:, :window]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["wmean"] = np.nansum(w, axis=1) / np.isfinite(w).sum(axis=1)
    qv = row_quantiles(w, quantiles)
    for j, q in enumerate(quantiles):
        out[f"q{round(q * 100):d}"] = qv[:, j]
    with np.errstate(invalid="ignore"):
        out["max"] = np.where(np.isfinite(w).any(axis=1), np.nanmax(np.where(np.isfinite(w), w, -np.inf), axis=1),
                              np.nan)
    last_end = ev.end_s[np.clip(hi - 1, 0, max(len(ev.end_s) - 1, 0))] if len(ev.end_s) else np.zeros(len(hi))
    out["since_last_s"] = np.where(count > 0, submit_s - last_end, np.nan)
    for name, (age, stat, cap) in (age_windows or {}).items():
        _, lo_t = query_bounds(ev, group, submit_s - age)
        lo_t = np.maximum(lo_t, lo)
        if stat == "max":
            out[name] = range_max(ev, lo_t, hi)
        elif stat == "count":
            out[name] = (hi - lo_t).astype(np.float64)
        else:
            m = window_matrix(ev, lo_t, hi, cap)
            out[name] = row_quantiles(m, (stat,))[:, 0]
    return out
