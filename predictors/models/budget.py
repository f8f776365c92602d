"""A kill budget spent where each kill buys the most capacity, instead of one risk level for every resource
and every job.

Each (resource, stratum) pair may keep the request or take the calibrated prediction at one of the levels.
At level τ its expected kills are ``(1 − τ) × n`` (``n``: its jobs with a prediction; the calibration holds
coverage stratum by stratum, so this is what the level claims), and what it frees is
``Σ max(asked − predicted, 0) × weight × scale`` (``scale`` makes resources comparable: per unit of the
cluster's capacity of that resource over the month).  A job is counted once per resource under-sized, so
the expected kills add up to an upper bound of the jobs killed (a job short of two resources counts twice).

With ``kill_cost`` a kill is also priced in what it wastes: a job killed for being short of a resource is
killed near the end of its work (``simulator.kills``: memory use is taken to grow to its peak, so a bound just
below the peak is crossed late; a run short of cores is stopped at its own limit), so its attempt held the cut
amount for about its run.  The expected waste at level τ is ``(1 − τ) × Σ predicted × weight × scale`` and what
a level frees is counted net of it: a cut that wastes more capacity in kills than it frees is not taken, and of
two strata at the same gross capacity per kill the one of smaller jobs is cut first.  This counts the target's
own amount only (a memory kill also wastes the job's cores), so it is a lower bound of the waste.

The allocation is the greedy solution of this multiple-choice knapsack (Sinha & Zoltners 1979): on each pair's
options sorted by expected kills, the upper concave hull from "keep the request" gives increments with
falling capacity per kill; all increments of all pairs are taken in order of capacity per kill while the
expected kills stay within the budget (an increment that does not fit closes its pair's chain).  The
greedy is optimal for the linear relaxation and leaves at most one increment's worth of the budget unspent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Allocation:
    """The level chosen per (resource, stratum) (None: the request), what each choice costs and frees, and
    the expected kills against the budget (both in jobs)."""

    levels: dict
    rows: list = field(default_factory=list)
    expected_kills: float = 0.0
    budget_jobs: float = 0.0

    def level(self, target: str, stratum: str):
        return self.levels.get((target, stratum))


def _hull(points: list) -> list:
    """Upper concave hull of ``(risk, saving, level)`` points from (0, 0), rising in risk and saving."""
    pts = sorted([p for p in points if p[1] > 0], key=lambda p: (p[0], -p[1]))
    hull = [(0.0, 0.0, None)]
    for p in pts:
        if p[1] <= hull[-1][1]:
            continue  # more risk for no more capacity
        while len(hull) >= 2:
            (r1, s1, _), (r2, s2, _) = hull[-2], hull[-1]
            # drop the middle point when the new one lies on or above the line through the two before it
            if (s2 - s1) * (p[0] - r1) <= (p[1] - s1) * (r2 - r1):
                hull.pop()
            else:
                break
        hull.append(p)
    return hull


def allocate(preds: dict, asked: dict, strata: dict, weight: dict, levels, budget_jobs: float, *,
             scale: dict | None = None, kill_cost: bool = False) -> Allocation:
    """Spend ``budget_jobs`` expected kills over ``(target, stratum)`` pairs.

    ``preds[target]``: shape (jobs, levels), NaN where a job has no prediction; ``asked[target]``: the
    request; ``strata[target]``: each job's stratum; ``weight[target]``: what one unit cut is worth per job
    (for a resource held: the job's hours); ``scale[target]``: a factor per target (default 1);
    ``kill_cost``: what a level frees is counted net of what its expected kills waste (module text)."""
    levels = tuple(float(x) for x in levels)
    scale = scale or {}
    chains, rows = {}, []
    for target, P in preds.items():
        P = np.asarray(P, dtype=np.float64)
        a = np.asarray(asked[target], dtype=np.float64)
        st = np.asarray(strata[target], dtype=object)
        wt = np.nan_to_num(np.asarray(weight[target], dtype=np.float64))
        has = np.isfinite(P).all(axis=1) & np.isfinite(a)
        for s in sorted({x for x in st[has] if x is not None}):
            m = has & (st == s)
            n = int(m.sum())
            points = []
            for j, lv in enumerate(levels):
                free = float(np.sum(np.clip(a[m] - P[m, j], 0, None) * wt[m])) * scale.get(target, 1.0)
                if kill_cost:
                    free -= (1.0 - lv) * float(np.sum(np.fmin(P[m, j], a[m]) * wt[m])) * scale.get(target, 1.0)
                points.append(((1.0 - lv) * n, free, lv))
            chains[(target, s)] = _hull(points)
            rows.append({"target": target, "stratum": s, "jobs": n})
    steps = []
    for key, hull in chains.items():
        for k in range(1, len(hull)):
            dr, ds = hull[k][0] - hull[k - 1][0], hull[k][1] - hull[k - 1][1]
            steps.append((ds / dr if dr > 0 else np.inf, key, k, dr))
    steps.sort(key=lambda t: (-t[0], t[1], t[2]))
    at = dict.fromkeys(chains, 0)
    closed, spent = set(), 0.0
    for _, key, k, dr in steps:
        if key in closed or at[key] != k - 1:
            continue
        if spent + dr > budget_jobs + 1e-9:
            closed.add(key)
            continue
        spent += dr
        at[key] = k
    chosen = {key: chains[key][k][2] for key, k in at.items()}
    for r in rows:
        key = (r["target"], r["stratum"])
        k = at[key]
        r.update(level=chosen[key], expected_kills=chains[key][k][0], freed=chains[key][k][1])
    return Allocation(levels=chosen, rows=rows, expected_kills=spent, budget_jobs=float(budget_jobs))


def apply_allocation(alloc: Allocation, preds: dict, strata: dict, levels) -> dict:
    """Per target, each job's prediction at its (target, stratum)'s chosen level; NaN (keep the request)
    where the pair keeps the request or the job has no prediction."""
    levels = tuple(float(x) for x in levels)
    out = {}
    for target, P in preds.items():
        P = np.asarray(P, dtype=np.float64)
        st = np.asarray(strata[target], dtype=object)
        v = np.full(len(P), np.nan)
        for (t, s), lv in alloc.levels.items():
            if t != target or lv is None:
                continue
            m = st == s
            v[m] = P[m, levels.index(lv)]
        out[target] = v
    return out
