"""Vectorised building blocks of the telemetry join: find the hold a GPU sample falls in, and accumulate.

Everything works on NumPy arrays of whole chunks (never a Python loop per sample), so the same code serves a
week of JSON and a 100-million-sample month streamed from Parquet.
"""

from __future__ import annotations

import numpy as np

_SHIFT = np.int64(1) << np.int64(40)  # time (s) fits in 40 bits; the GPU id sits above it


class HoldIndex:
    """Which hold (a job's tenure of one GPU) covers a sample at ``(gpu id, t)``.

    A hold covers ``[start - tolerance, end + tolerance)``; where two holds of one GPU overlap once widened,
    the one that started later wins.  ``gid`` numbers (node, GPU index) pairs; times are epoch seconds.
    """

    def __init__(self, gid: np.ndarray, start: np.ndarray, end: np.ndarray, tolerance_s: float = 0.0):
        gid = np.asarray(gid, dtype=np.int64)
        lo = np.floor(np.asarray(start, dtype="float64") - tolerance_s).astype(np.int64)
        hi = np.asarray(end, dtype="float64") + tolerance_s
        self.order = np.lexsort((lo, gid))
        self.gid = gid[self.order]
        self.key = self.gid * _SHIFT + lo[self.order]
        self.hi = hi[self.order]

    def __len__(self) -> int:
        return len(self.key)

    def assign(self, gid: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Hold number (position in the constructor's arrays) for each sample, or -1 when none holds it."""
        gid = np.asarray(gid, dtype=np.int64)
        t = np.asarray(t, dtype="float64")
        if not len(self.key) or not len(gid):
            return np.full(len(gid), -1, dtype=np.int64)
        key = gid * _SHIFT + np.floor(t).astype(np.int64)
        pos = np.searchsorted(self.key, key, side="right") - 1
        pc = np.maximum(pos, 0)
        ok = (pos >= 0) & (self.gid[pc] == gid) & (t < self.hi[pc]) & (gid >= 0)
        return np.where(ok, self.order[pc], -1)


class Accumulator:
    """Per-slot count, sum and maximum of values, grown chunk by chunk with ``np.bincount``/``np.maximum.at``."""

    def __init__(self, n: int):
        self.n = n
        self.count = np.zeros(n, dtype=np.int64)
        self.sum = np.zeros(n, dtype="float64")
        self.max = np.full(n, -np.inf)

    def add(self, slot: np.ndarray, values: np.ndarray) -> None:
        m = slot >= 0
        if not m.any():
            return
        s, v = slot[m], np.asarray(values, dtype="float64")[m]
        self.count += np.bincount(s, minlength=self.n)
        self.sum += np.bincount(s, weights=v, minlength=self.n)
        np.maximum.at(self.max, s, v)

    def mean(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.sum / np.maximum(self.count, 1), np.nan)

    def peak(self) -> np.ndarray:
        return np.where(self.count > 0, self.max, np.nan)


def group_reduce(groups: np.ndarray, n: int, count, total, peak) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fold slot statistics into ``n`` groups: summed count and total, summed peaks, largest peak."""
    g = np.asarray(groups, dtype=np.int64)
    ok = g >= 0
    pk = np.where(np.isfinite(peak), peak, 0.0)
    c = np.bincount(g[ok], weights=count[ok], minlength=n)
    s = np.bincount(g[ok], weights=total[ok], minlength=n)
    psum = np.bincount(g[ok], weights=pk[ok], minlength=n)
    pmax = np.full(n, -np.inf)
    np.maximum.at(pmax, g[ok], np.where(np.isfinite(peak[ok]), peak[ok], -np.inf))
    return c, s, psum, pmax


def counter_increase(series: np.ndarray, t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Total increase of each counter series (codes ``0..k-1``), resets handled.

    Each series is taken to start from zero (cAdvisor/kubelet counters count from the container's start):
    increase = first value + Σ positive steps + the value after every reset (a drop).  Returns one total per
    series code.
    """
    series = np.asarray(series, dtype=np.int64)
    k = int(series.max()) + 1 if len(series) else 0
    if not len(series):
        return np.zeros(0)
    tt = np.where(np.isfinite(t), t, -np.inf)
    order = np.lexsort((tt, series))
    s, val = series[order], np.asarray(v, dtype="float64")[order]
    first = np.ones(len(s), dtype=bool)
    first[1:] = s[1:] != s[:-1]
    step = np.empty(len(s))
    step[0] = val[0]
    step[1:] = val[1:] - val[:-1]
    reset = ~first & (step < 0)
    inc = np.where(first | reset, val, step)
    return np.bincount(s, weights=inc, minlength=k)


def median_interval(series: np.ndarray, t: np.ndarray) -> float:
    """The median step between consecutive samples of the same series (NaN when none)."""
    if len(t) < 2:
        return float("nan")
    order = np.lexsort((t, series))
    s, tt = np.asarray(series)[order], np.asarray(t, dtype="float64")[order]
    same = s[1:] == s[:-1]
    d = np.diff(tt)[same]
    d = d[d > 0]
    return float(np.median(d)) if len(d) else float("nan")
