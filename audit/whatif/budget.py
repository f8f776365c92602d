"""The kill-budget scenario's requests, and the coverage of the right-sized predictions stratum by stratum.

:func:`budget_predictions` hands the month's calibrated predictions, strata and requests to the allocator
(:func:`predictors.models.allocate`), once per mode, and returns what the ``rightsized@budget/MODE``
scenarios apply (``{"budget/MODE": {target: totals}}``) with the allocation for ``summary.json``.

The budget is a share of the jobs the replay keeps.  Each option is priced as the replay will apply it
(:func:`.scenarios.as_replayed`: whole cores and GPUs, whole GiB a node, whole minutes), at the kills measured
for it (:func:`observed_risk`: the share of its stratum's cuts at that level that were killed, among the jobs
ended before its submission, shrunk towards ``1 − τ``); that ranks the cuts by what was known at each
submission.  How many of them to take is set on the month, as the recommendation sets a level
(:func:`largest_within`): the most expected kills whose kills, counted job by job as the replay's engine
decides them (:func:`.scenarios.killed_after`), stay within the budget (and, with a budget of GPU-hours, whose
GPU-hours lost to the killed attempts stay within that too).  The measured shares run low (the jobs ended
before a submission are the shorter ones), so spent to the budget in expectation the kills land over it.

What a cut is worth, per unit of the cluster's capacity of the resource over the month (so that a GiB-hour
and a core-hour compare as shares of what the cluster has): memory, cores and GPUs are held for the run, so
a cut is worth ``(asked − predicted) × hours``, the hours it may hold it, known at submission (its time limit:
:func:`limit_hours`); a time limit is held in the scheduler's plan, so a cut
is worth ``(limit − predicted) × cores``.  Under ``enforce`` a job that outgrows any of its four cut
requests is killed (memory, time) or stretched past a cut time limit (cores, GPUs), so all four spend the
budget.  Under ``advise`` the time limit is the job's own and a time prediction only plans: a job that
outlives it goes on to its own limit, which the scheduler's estimate then becomes.  It spends nothing, so the
estimate is the best point prediction of the run, the median (:func:`plan_level`), as EASY++ plans with the mean
of the user's last two runs (Tsafrir, Etsion & Feitelson 2007): a plan at the sweep's highest level, as
conservative as a limit, leaves the backfill the holes a user's own limit leaves (measured in docs/whatif.md).
Memory kills, and a job short of cores or GPUs runs longer and is killed once that passes its own limit, so
memory, cores and GPUs spend the budget (a miss of cores or GPUs counted as a kill where the run, stretched by
need / bound, passed its limit).  What a
level frees is counted net of what its expected kills waste (``waste`` of :func:`predictors.models.allocate`): a
job killed near the end of its work held all it asked for about its run, so a kill wastes the job's dominant
share of the cluster over the hours it may hold it, ``max over memory, cores, GPUs of asked × hours / capacity``
(the node-time it blocked).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .month import STEMS, build_month
from .scenarios import Scenario, as_replayed, held_gpus, killed_after, requests_for
from .to_simulator import job_totals, node_counts, replayable

KILL_TARGETS = {"enforce": ("memory", "cpus", "gpus", "walltime"), "advise": ("memory", "cpus", "gpus")}


def _f(table: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(table[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def _stacked(frame: pd.DataFrame, stem: str, levels) -> np.ndarray | None:
    from predictors.models import level_label

    cols = [f"pred_{stem}_{level_label(lv)}" for lv in levels]
    if not all(c in frame for c in cols):
        return None
    return np.column_stack([frame[c].to_numpy(dtype=np.float64) for c in cols])


def limit_hours(table: pd.DataFrame) -> np.ndarray:
    """The hours each job may hold what it asks, known at submission: its time limit (without one, the longest
    limit of the month; without any, one hour)."""
    lim = _f(table, "time_limit_s")
    ok = np.isfinite(lim) & (lim > 0)
    return np.where(ok, lim, lim[ok].max() if ok.any() else 3600.0) / 3600.0


def capacity_hours(cluster, span_h: float) -> dict:
    """The cluster's unit-hours of each target over the month (cores, bytes, GPUs; core-hours of plan)."""
    groups = getattr(cluster, "groups", ())
    cpus = sum(g.count * g.cpus for g in groups) or getattr(cluster, "procs", 0)
    return {"memory": sum(g.count * g.mem_bytes for g in groups) * span_h, "cpus": cpus * span_h,
            "gpus": sum(g.count * g.gpus for g in groups) * span_h, "walltime": cpus * span_h}


def observed_risk(bounds: np.ndarray, need: np.ndarray, asked: np.ndarray, stratum: np.ndarray,
                  submit_s: np.ndarray, end_s: np.ndarray, levels, run_s=None, limit_s=None) -> np.ndarray:
    """Per job and level, the expected kills of taking its bound: of the jobs of its stratum that ended before it
    was submitted and whose bound at that level cut their request, the share whose need outgrew it (``K`` of
    ``M``; with ``run_s`` and ``limit_s``, a need over the bound counts only where the run stretched by need /
    bound passes the limit, as a job short of cores or GPUs is killed), shrunk towards ``1 − τ`` by one
    expected miss: ``(K + 1) / (M + 1 / (1 − τ))`` (a Beta prior of mean ``1 − τ``; no such job yet:
    ``1 − τ``); never less at a lower level than at a higher one.  Calibration holds a level over a stratum's
    jobs, those left at their request too, which it covers whatever their need below it;
    the jobs a bound cuts are the ones that can be killed, and they miss more often than ``1 − τ`` (measured in
    docs/whatif.md).  ``bounds`` (jobs × levels, ``levels`` ascending) as the replay gives them."""
    from predictors.features.history import past_sums

    _, codes = np.unique(np.asarray(stratum, dtype=object).astype(str), return_inverse=True)
    codes = np.where(np.array([x is not None for x in stratum], dtype=bool), codes, -1)
    out = np.empty(bounds.shape)
    for k, lv in enumerate(levels):
        b = bounds[:, k]
        with np.errstate(invalid="ignore"):
            cut = np.isfinite(b) & np.isfinite(need) & np.isfinite(asked) & (b < asked)
            over = need > b * (1 + 1e-9)
            if run_s is not None:
                over = over & (run_s * need / b > limit_s)
            miss = np.where(cut, over.astype(np.float64), np.nan)
        m, kills = past_sums(codes, submit_s, end_s, miss)
        out[:, k] = (kills + 1.0) / (m + 1.0 / (1.0 - lv))
    for k in range(len(levels) - 2, -1, -1):
        out[:, k] = np.maximum(out[:, k], out[:, k + 1])
    return out


def plan_level(levels) -> float:
    """The level a prediction that only plans is taken at: the sweep's level nearest the median (the median
    itself when it is swept, as by default; of two as near, the higher, erring long as a limit does)."""
    return min((float(x) for x in levels), key=lambda lv: (round(abs(lv - 0.5), 9), -lv))


#: the grid of expected kills the budget may spend: the budget times this factor to a whole power
GRID = 1.05
#: how far the grid reaches each side of the budget (powers of ``GRID``): from a 27th to 2.7 times it
GRID_STEPS = 68, 20


def largest_within(spend, budget_jobs: float, gpu_hours: float | None = None) -> tuple:
    """``(spent, spend(spent))``: the most expected kills on the grid (``budget_jobs × GRID**j``) whose kills, as
    ``spend`` counts them (its result's last two items: jobs killed, GPU-hours lost), stay within ``budget_jobs``
    and, given ``gpu_hours``, whose GPU-hours lost stay within it; nothing spent (0.0) where even the grid's least
    does not fit.  The kills grow with the spend (the greedy takes its increments in one order, each deepening a
    cut), so the grid is bisected (:class:`.search.Bisection`, for the least power that does not fit)."""
    from .search import Bisection

    if budget_jobs <= 0:
        return 0.0, spend(0.0)
    tried = {}
    search = Bisection(-GRID_STEPS[0], GRID_STEPS[1] + 1)  # the top, one past the grid, is taken not to fit
    while (j := search.probe()) is not None:
        got = tried[j] = spend(budget_jobs * GRID ** j)
        search.tell(j, not (got[-2] <= budget_jobs and (gpu_hours is None or got[-1] <= gpu_hours)))
    j = search.answer - 1
    if j < -GRID_STEPS[0]:
        return 0.0, spend(0.0)
    return budget_jobs * GRID ** j, tried[j]  # a power that fits was told so, so it was tried


def budget_predictions(table: pd.DataFrame, frame: pd.DataFrame, levels, budget: float, cluster,
                       modes, gpu_hours: float | None = None) -> tuple[dict, dict]:
    """``({"budget/MODE": {target: values in table order}}, {MODE: allocation dict})`` for a kill budget of
    ``budget`` (a share of the jobs the replay keeps: those its kills are counted over) and, with ``gpu_hours``,
    of that share of the GPU-hours the month asked (GPUs × run) lost to the kills as well."""
    from predictors.features import actual, eligible, epoch_s, request
    from predictors.models import allocate, apply_allocation

    levels = tuple(sorted(float(x) for x in levels))
    t = pd.to_datetime(table["submit_time"], utc=True).dropna()
    span_h = max((t.max() - t.min()).total_seconds() / 3600.0, 1.0) if len(t) else 1.0
    cap = capacity_hours(cluster, span_h)
    held_h = limit_hours(table)
    cores = request(table, "cpus")
    nodes = node_counts(table).astype(np.float64)  # as the replay counts them
    submit_s, end_s = epoch_s(table["submit_time"]), epoch_s(table["end_time"])
    run_s, limit_s = _f(table, "elapsed_s"), _f(table, "time_limit_s")
    preds, asked, strata, weight, scale, risk = {}, {}, {}, {}, {}, {}
    for target, stem in STEMS.items():
        P = _stacked(frame, stem, levels)
        if P is None or f"stratum_{stem}" not in frame or not cap[target]:
            continue
        asked[target] = request(table, target) if target != "walltime" else _f(table, "time_limit_s")
        preds[target] = as_replayed(target, P, asked[target], nodes)
        strata[target] = frame[f"stratum_{stem}"].astype(object).where(frame[f"stratum_{stem}"].notna(), None).to_numpy()
        weight[target] = held_h if target != "walltime" else np.where(np.isfinite(cores), cores, 1.0) / 3600.0
        scale[target] = 1.0 / cap[target]
        need = np.where(eligible(table, target), actual(table, target), np.nan)
        # a job short of cores or GPUs is killed only where its run, stretched by need / bound, passes its limit
        stretched = {"run_s": run_s, "limit_s": limit_s} if target in ("cpus", "gpus") else {}
        risk[target] = observed_risk(preds[target], need, asked[target], strata[target], submit_s, end_s, levels,
                                     **stretched)
    share = [np.nan_to_num(request(table, x)) * held_h / cap[x] for x in ("memory", "cpus", "gpus") if cap[x]]
    dominant = np.max(share, axis=0) if share else np.zeros(len(table))
    # a share of the jobs the replay keeps, the jobs its kills are counted over (``--tolerance``)
    replayed = int(replayable(table)[0].sum())
    procs = getattr(cluster, "procs", None)
    month, _ = build_month(table, cluster, procs=procs)
    rows = job_totals(table, procs=procs).rows
    asked_gpu_hours = float((held_gpus(month, month.gpus) * month.run).sum() / 3600.0)
    gpu_allowed = None if gpu_hours is None else gpu_hours * asked_gpu_hours
    cost = None
    if gpu_allowed is not None:
        # with a budget of GPU-hours too, a kill spends the larger of its shares of the two budgets (in jobs): the
        # GPU-hours it may lose, its GPUs over its limit (known at submission), over those allowed
        at_risk = np.nan_to_num(request(table, "gpus")) * held_h
        cost = np.maximum(1.0, at_risk * budget * replayed / max(gpu_allowed, 1e-9))
    out, allocations = {}, {}
    for mode in modes:
        kill = [x for x in KILL_TARGETS[mode] if x in preds]
        plans = [x for x in preds if x not in kill]  # advise's time estimate: it plans, and kills no job

        def spend(jobs: float, kill=kill, plans=plans, mode=mode) -> tuple:
            alloc = allocate({x: preds[x] for x in kill}, asked, strata, weight, levels, jobs, scale=scale,
                             waste=dict.fromkeys(kill, dominant), risk=risk,
                             cost=None if cost is None else dict.fromkeys(kill, cost))
            values = apply_allocation(alloc, {x: preds[x] for x in kill}, levels)
            for x in plans:
                values[x] = preds[x][:, levels.index(plan_level(levels))]
            month.predictions = {f"budget/{mode}": {x: np.asarray(v, dtype=np.float64)[rows]
                                                    for x, v in values.items()}}
            r = requests_for(month, Scenario("rightsized", mode=mode, predictor="budget"))
            after = killed_after(month, r, kill_at_limit=procs is None)
            dead = np.isfinite(after)
            lost = float((held_gpus(month, r.gpus)[dead] * after[dead]).sum() / 3600.0)
            return alloc, values, int(dead.sum()), lost

        spent, (alloc, values, kills, lost) = largest_within(spend, budget * replayed, gpu_allowed)
        out[f"budget/{mode}"] = values
        allocations[mode] = {"budget": budget, "budget_jobs": budget * replayed, "allowed_jobs": spent,
                             "expected_kills": alloc.expected_kills,
                             "expected_kill_share": alloc.expected_kills / max(1, replayed),
                             "counted_kills": kills, "gpu_hours_budget": gpu_hours,
                             "gpu_hours_allowed": gpu_allowed, "counted_gpu_hours_lost": lost,
                             "plan_level": {x: plan_level(levels) for x in plans},
                             "allocation": sorted(alloc.rows, key=lambda r: (r["target"], r["stratum"]))}
    return out, allocations


def coverage_by_stratum(table: pd.DataFrame, frame: pd.DataFrame, levels) -> dict:
    """``{target: {level: {"all" | stratum: {"jobs", "coverage", "at_request", "below_quantile",
    "through_quantile", "habits", "se"}}}}``: the share of predicted jobs whose need the prediction covered,
    overall and per stratum (out of sample: every prediction is from the job's past), and the share whose need
    reached the request (a run to its limit, a peak at its allocation): only the request covers those, so where
    they are more than 1 − τ of a stratum, a bound that covers τ is the request for every job the model cannot
    tell apart from them, and the stratum covers more than τ.  ``below_quantile`` and ``through_quantile``
    (:func:`quantile_atom`): the shares of the jobs whose need is below, and at most, the τ-quantile of their
    need: where many jobs need exactly that (one whole GPU kept busy, nothing at all), bounds the model cannot
    tell apart cover at most the first or at least the second, and a stratum whose atom spans τ ± 0.02 cannot
    cover within it.  ``habits``: how many habits (user, job family, request shape) the jobs came from; ``se``:
    the coverage's standard error with a habit's jobs taken to miss together (they share one history, so one
    bound set too low misses a burst of them; ``metrics.coverage_se``): a stratum of 4,000 jobs from 40 habits
    is known far less well than 4,000 independent jobs would make it."""
    from predictors.features import actual, eligible, habit_groups, request
    from predictors.models import level_label

    out = {}
    habit = habit_groups(table)
    for target, stem in STEMS.items():
        if f"stratum_{stem}" not in frame:
            continue
        y = np.where(eligible(table, target), actual(table, target), np.nan)
        with np.errstate(invalid="ignore"):
            top = y >= request(table, target) * (1 - 1e-9)
        st = frame[f"stratum_{stem}"].astype("string").fillna("").to_numpy(dtype=object)
        per = {}
        for lv in levels:
            col = f"pred_{stem}_{level_label(lv)}"
            if col not in frame:
                continue
            p = frame[col].to_numpy(dtype=np.float64)
            ok = np.isfinite(p) & np.isfinite(y)
            hit = y <= p * (1 + 1e-9)
            row = {"all": _covered(hit, top, habit, ok, y, float(lv))}
            for s in sorted(set(st[ok])):
                row[s] = _covered(hit, top, habit, ok & (st == s), y, float(lv))
            per[str(float(lv))] = row
        out[target] = per
    return out


def quantile_atom(need: np.ndarray, level: float) -> tuple[float, float]:
    """``(F(q−), F(q))``: the shares of ``need`` below, and at most, its ``level``-quantile ``q`` (the
    ⌈n·level⌉-th smallest).  ``F(q−) < level ≤ F(q)`` always; the two are far apart where many jobs need
    exactly ``q``, and then no bound shared by those jobs covers a share in between."""
    y = np.sort(np.asarray(need, dtype=np.float64))
    n = len(y)
    if not n:
        return math.nan, math.nan
    q = y[max(math.ceil(n * level - 1e-9), 1) - 1]  # 100 × 0.07 is 7.000000000000001 in floating point
    return float(np.searchsorted(y, q, side="left") / n), float(np.searchsorted(y, q, side="right") / n)


def _covered(hit: np.ndarray, top: np.ndarray, habit: np.ndarray, m: np.ndarray, need: np.ndarray,
             level: float) -> dict:
    """One entry of :func:`coverage_by_stratum` over the jobs ``m``."""
    from predictors.models import coverage_se

    if not m.any():
        return {"jobs": 0, "coverage": None, "at_request": None, "below_quantile": None, "through_quantile": None,
                "habits": 0, "se": None}
    se = coverage_se(hit[m], habit[m])
    below, through = quantile_atom(need[m], level)
    return {"jobs": int(m.sum()), "coverage": float(hit[m].mean()), "at_request": float(top[m].mean()),
            "below_quantile": below, "through_quantile": through,
            "habits": int(len(np.unique(habit[m]))), "se": se if np.isfinite(se) else None}
