"""Held and used resources over time, as step functions built from the attempt log (vectorised)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(slots=True, frozen=True)
class Occupancy:
    """Values hold on ``[times[k], times[k+1])``.  ``held_*``: allocated; ``used_*``: what jobs used —
    CPUs × the job's CPU utilisation, memory at the job's peak (capped at what it held: an upper
    bound on use), GPUs × the job's GPU utilisation."""

    times: np.ndarray
    held_cpus: np.ndarray
    held_mem: np.ndarray
    held_gpus: np.ndarray
    used_cpus: np.ndarray
    used_mem: np.ndarray
    used_gpus: np.ndarray

    def integral(self, values: np.ndarray, t0: float, t1: float) -> float:
        """∫ values dt over [t0, t1]."""
        if len(self.times) == 0 or t1 <= t0:
            return 0.0
        edges = np.clip(np.append(self.times, max(t1, self.times[-1])), t0, t1)
        return float(np.sum(values * np.diff(edges)))


def step(times_on: np.ndarray, times_off: np.ndarray, amounts: np.ndarray, by_time: np.ndarray | None = None) -> tuple:
    """``(times, level)`` of a sum of boxes ``amounts`` on ``[on, off)``; releases apply before
    acquisitions at the same instant.  ``by_time``: the stable order by time of ``times_on`` then
    ``times_off``; whole amounts are summed in it (their sums are exact in any order: each level is the
    same), other amounts in it with the jobs of a same instant sorted by amount (the order of a full sort
    by time and amount)."""
    t = np.concatenate([times_on, times_off])
    d = np.concatenate([amounts, -amounts]).astype(np.float64)
    if by_time is None:
        order = np.lexsort((d, t))
    elif _exact(d):
        order = by_time
    else:
        order = _ties_by_amount(by_time, t, d)
    t, level = t[order], np.cumsum(d[order])
    if len(t) == 0:
        return t, level
    last = np.append(t[1:] != t[:-1], True)
    return t[last], level[last]


def _ties_by_amount(by_time: np.ndarray, t: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``by_time`` with each run of equal times sorted by ``d`` (stable): ``np.lexsort((d, t))``, sorting
    only the times that repeat."""
    ts = t[by_time]
    same = ts[1:] == ts[:-1]
    tied = np.zeros(len(ts), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    order = by_time.copy()
    order[at] = by_time[at[np.lexsort((d[by_time[at]], ts[at]))]]
    return order


def _exact(d: np.ndarray) -> bool:
    """Whether every partial sum of ``d`` is exact in floating point: whole numbers, summing under 2**53."""
    return bool(np.all(d == np.rint(d))) and float(np.abs(d).sum()) < 2.0**53


def occupancy(result) -> Occupancy:
    r = result
    k = r.a_job
    used_cpu = r.a_cpus * r.cpu_util[k]
    used_mem = np.minimum(r.mem_peak[k], r.a_mem) if len(k) else np.zeros(0)
    used_gpu = r.a_gpus * r.gpu_util[k]
    by_time = np.argsort(np.concatenate([r.a_start, r.a_end]), kind="stable")  # for the whole amounts
    series = [step(r.a_start, r.a_end, x, by_time)
              for x in (r.a_cpus, r.a_mem, r.a_gpus, used_cpu, used_mem, used_gpu)]
    times = series[0][0]
    return Occupancy(times, *(s[1] for s in series))
