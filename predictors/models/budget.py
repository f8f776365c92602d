"""A kill budget spent where each kill buys the most capacity, job by job, instead of one risk level for every
resource and every job.

Each job may keep its request for a resource or take the calibrated prediction at one of the levels.  At level
τ the job's expected kills are ``risk`` (the caller's measure, per job and level; by default ``1 − τ``, what
calibration claims over a stratum's jobs), and what it frees is ``max(asked − predicted, 0) × weight × scale``
(``weight``: the hours the job may hold the resource, known at submission; ``scale`` makes resources comparable:
per unit of the cluster's capacity of that resource over the month).  A job is counted once per resource
under-sized (a job short of two resources counts twice).

With ``waste`` a kill is also priced in what it wastes: a job killed for being short of a resource is killed
near the end of its work (``simulator.kills``: memory use is taken to grow to its peak, so a bound just below the
peak is crossed late; a run short of cores is stopped at its own limit), and its attempt held everything it was
given for about its run, then it runs again with its whole request.  ``waste[target]`` is that per job (the
caller's choice of units: the same as what a cut frees), and at level τ what a cut frees is counted net of
``(1 − τ) × waste``: a cut that wastes more than it frees is never taken, and a cut of a large job, whose kill
costs most, is bought only at a level where it pays for its risk.

The allocation is the greedy solution of this multiple-choice knapsack (Sinha & Zoltners 1979) with one item
per job and resource: on each item's options sorted by expected kills, the upper concave hull from "keep the
request" gives increments with falling capacity per kill; all increments of all items are taken in order of
capacity per kill (ties: resource, then job order) while the expected kills stay within the budget (an
increment that does not fit closes its item's chain).  The greedy is optimal for the linear relaxation and
leaves less than one increment's worth of the budget unspent.  Job by job, a large job's cut is bought before a
small one's at the same risk, and a stratum is cut only as deep as its own calibrated levels allow.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Allocation:
    """Per target, the level chosen for each job (NaN: the request); per (target, stratum), what the choices
    cost and free (``rows``); the expected kills against the budget (both in jobs)."""

    chosen: dict
    rows: list = field(default_factory=list)
    expected_kills: float = 0.0
    budget_jobs: float = 0.0

    def levels_of(self, target: str, mask=None) -> dict:
        """``{level or None (the request): jobs}`` among ``mask`` (every job by default) for ``target``."""
        c = self.chosen.get(target)
        if c is None:
            return {}
        c = c if mask is None else c[np.asarray(mask, dtype=bool)]
        out = {None: int(np.isnan(c).sum())} if np.isnan(c).any() else {}
        for lv in np.unique(c[np.isfinite(c)]):
            out[float(lv)] = int((c == lv).sum())
        return out


def _hulls(risk: np.ndarray, gain: np.ndarray) -> list:
    """Per job, the upper concave hull of ``(risk[:, k], gain[:, k])`` from the origin (``risk`` non-decreasing
    along the options, one row per job), as chains of option indices: ``[(job rows, from option, to option)]``
    per step, option 0 being the origin.  Points with no more gain than the last vertex are never on it; of
    collinear points the farther."""
    n, m = gain.shape
    R = np.column_stack([np.zeros(n), np.broadcast_to(risk, (n, m))])
    G = np.column_stack([np.zeros(n), gain])
    cur = np.zeros(n, dtype=np.int64)
    steps = []
    rows = np.arange(n)
    for _ in range(m):
        gc, rc = G[rows, cur], R[rows, cur]
        later = np.arange(m + 1)[None, :] > cur[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = (G - gc[:, None]) / (R - rc[:, None])
        slope = np.where(later & (G > gc[:, None]), slope, -np.inf)
        # the steepest later point; of equal slopes the farthest (argmax on the reversed columns)
        nxt = m - np.argmax(slope[:, ::-1], axis=1)
        ok = np.isfinite(slope[rows, nxt])
        if not ok.any():
            break
        steps.append((rows[ok], cur[ok], nxt[ok]))
        cur = np.where(ok, nxt, cur)
    return steps


def allocate(preds: dict, asked: dict, strata: dict, weight: dict, levels, budget_jobs: float, *,
             scale: dict | None = None, waste: dict | None = None, risk: dict | None = None,
             cost: dict | None = None) -> Allocation:
    """Spend ``budget_jobs`` expected kills over the jobs of each target.

    ``preds[target]``: shape (jobs, levels), NaN where a job has no prediction; ``asked[target]``: the
    request; ``strata[target]``: each job's stratum (None: not predicted; the rows of the summary);
    ``weight[target]``: what one unit cut is worth per job (for a resource held: the hours it may hold it);
    ``scale[target]``: a factor per target (default 1); ``waste[target]``: what one kill of each job wastes, in
    the units of what a cut frees after ``scale`` (module text; none by default); ``risk[target]``: each job's
    expected kills at each level, shape (jobs, levels), not decreasing as the level falls (default ``1 − τ``);
    ``cost[target]``: what one expected kill of each job spends of ``budget_jobs`` (default 1, a job: more where
    a second budget, of GPU-hours lost, binds the job's kill first).  The allocation's ``expected_kills`` are
    kills, whatever they cost."""
    levels = tuple(float(x) for x in levels)
    order = np.argsort(levels)[::-1]            # highest level first: risk rising
    nominal = 1.0 - np.asarray(levels)[order]
    scale = scale or {}
    targets = list(preds)
    gains, chains, risks = {}, [], {}
    for ti, target in enumerate(targets):
        P = np.asarray(preds[target], dtype=np.float64)[:, order]
        a = np.asarray(asked[target], dtype=np.float64)
        st = np.asarray(strata[target], dtype=object)
        wt = np.nan_to_num(np.asarray(weight[target], dtype=np.float64))
        has = np.isfinite(P).all(axis=1) & np.isfinite(a) & np.array([s is not None for s in st], dtype=bool)
        s = scale.get(target, 1.0)
        rk = np.broadcast_to(nominal, P.shape) if risk is None or target not in risk else \
            np.asarray(risk[target], dtype=np.float64)[:, order]
        risks[target] = rk
        ck = np.ones(len(P)) if cost is None or target not in cost else \
            np.nan_to_num(np.asarray(cost[target], dtype=np.float64), nan=1.0)
        with np.errstate(invalid="ignore"):
            g = np.clip(a[:, None] - P, 0, None) * wt[:, None] * s
            if waste is not None and target in waste:
                g = g - rk * np.nan_to_num(np.asarray(waste[target], dtype=np.float64))[:, None]
        g = np.where(has[:, None], g, -np.inf)
        gains[target] = g
        R = np.column_stack([np.zeros(len(g)), rk * ck[:, None]])  # a job's cost scales its steps, not its hull's shape
        G = np.column_stack([np.zeros(len(g)), np.where(np.isfinite(g), g, -1.0)])
        for rows, frm, to in _hulls(rk, G[:, 1:]):
            keep = has[rows]
            rows, frm, to = rows[keep], frm[keep], to[keep]
            dr = R[rows, to] - R[rows, frm]
            dg = G[rows, to] - G[rows, frm]
            with np.errstate(divide="ignore"):  # a step that adds no risk frees capacity for nothing: first
                chains.append((np.full(len(rows), ti), rows, frm, to, dr, dg / dr))
    chosen_k = {t: np.zeros(len(np.asarray(preds[t])), dtype=np.int64) for t in targets}
    spent = 0.0
    if chains:
        ti, rows, frm, to, dr, slope = (np.concatenate(x) for x in zip(*chains, strict=True))
        o = np.lexsort((frm, rows, ti, -slope))
        ti, rows, frm, to, dr = ti[o], rows[o], frm[o], to[o], dr[o]
        # while the budget holds, every step is taken in order (a chain's steps come in its own order)
        run = np.cumsum(dr)
        head = int(np.searchsorted(run, budget_jobs + 1e-9, side="right"))
        for t in range(len(targets)):
            on = ti[:head] == t
            np.maximum.at(chosen_k[targets[t]], rows[:head][on], to[:head][on])
        spent = float(run[head - 1]) if head else 0.0
        closed = set()
        smallest = float(dr.min()) if len(dr) else np.inf
        for i in range(head, len(dr)):
            if budget_jobs + 1e-9 - spent < smallest:
                break
            key = (int(ti[i]), int(rows[i]))
            c = chosen_k[targets[key[0]]]
            if key in closed or c[key[1]] != frm[i]:
                continue
            if spent + dr[i] > budget_jobs + 1e-9:
                closed.add(key)
                continue
            spent += float(dr[i])
            c[key[1]] = to[i]
    out_levels, rows_out, expected = {}, [], 0.0
    lv_sorted = np.asarray(levels)[order]
    for target in targets:
        k = chosen_k[target]
        lv = np.where(k > 0, lv_sorted[np.maximum(k - 1, 0)], np.nan)
        out_levels[target] = lv
        g = gains[target]
        freed = np.where(k > 0, g[np.arange(len(k)), np.maximum(k - 1, 0)], 0.0)
        kills = np.where(k > 0, risks[target][np.arange(len(k)), np.maximum(k - 1, 0)], 0.0)
        expected += float(kills.sum())
        st = np.asarray(strata[target], dtype=object)
        has = np.isfinite(np.asarray(preds[target], dtype=np.float64)).all(axis=1) & \
            np.array([s is not None for s in st], dtype=bool)
        for s in sorted({x for x in st[has]}):
            m = has & (st == s)
            per = {"request": int((m & (k == 0)).sum())}
            for j in range(len(lv_sorted)):
                per[str(float(lv_sorted[j]))] = int((m & (k == j + 1)).sum())
            rows_out.append({"target": target, "stratum": s, "jobs": int(m.sum()), "cut_jobs": int((m & (k > 0)).sum()),
                             "levels": {x: n for x, n in per.items() if n}, "expected_kills": float(kills[m].sum()),
                             "freed": float(freed[m].sum())})
    return Allocation(chosen=out_levels, rows=rows_out, expected_kills=expected, budget_jobs=float(budget_jobs))


def apply_allocation(alloc: Allocation, preds: dict, levels) -> dict:
    """Per target, each job's prediction at its chosen level; NaN (keep the request) where it keeps the request
    or has no prediction."""
    levels = tuple(float(x) for x in levels)
    out = {}
    for target, P in preds.items():
        P = np.asarray(P, dtype=np.float64)
        lv = alloc.chosen.get(target, np.full(len(P), np.nan))
        v = np.full(len(P), np.nan)
        for j, level in enumerate(levels):
            m = lv == level
            v[m] = P[m, j]
        out[target] = v
    return out
