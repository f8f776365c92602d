"""Right-sizing that earns its capacity: the recommended scenario against the best site rule, per resource.

On two generated months, the generated 40,000-job fortnight (seed 11, no telemetry) and the 122,000-job month
of ``bench_whatif`` (seed 1), ``reclaim whatif STORE --out DIR`` runs as a user runs it (whole process,
outputs written).  Then, on the same jobs and through the same scenario rules (memory in whole GiB per node,
whole cores; a job without a bound keeps its request):

- the recommended scenario's memory and cores (and the kill-budget scenario's, when it is not the one recommended): the share of jobs covered (need ≤ what the scenario gave) and the
  cut of GiB-hours and core-hours held (1 − Σ given × run / Σ asked × run);
- every site rule on the job's habit (the largest past need plus 0 % to 200 % once two or three ended;
  KRR's 14-day max, VPA's 8-day p90, Autopilot's decayed p98, plus their margins), each as a scenario of its
  own: the best cut among the rules covering at least as many jobs.  Target: the scenario cuts at least 1.5×
  as much, per resource;
- the same comparison on the jobs predicted alone (those submitted after the first origin: the jobs of the
  warm-up keep their request, there being nothing ended yet to calibrate on, while a rule cuts them as soon as
  two of a habit's jobs ended): where the target fails, how much of the shortfall is the warm-up's;
- the history ceiling: each job's own need where its habit had two ended jobs at its submission, the request
  elsewhere (what a perfect predictor of the jobs with a history would cut, keeping the others at their
  request), and its ratio to that same best rule: where it is under 1.5×, only cuts of jobs without a history
  can reach the target;
- on a generated month, the planted-truth oracle: where the history ceiling bounds a job, its habit's true centre
  (the median need over all the habit's jobs, future ones too) moved up by the within-habit spread the generator
  planted (``truth.json`` ``habit_spread``), at one level for every job, or job by job where a miss frees most
  (a price per miss, as a kill budget would spend its kills if it knew each habit exactly); the most each cuts at
  the scenario's coverage or higher, and its ratio to the same best rule: what a predictor that knew each habit
  exactly, short of each job's own draw, could cut;
- coverage per stratum against each level (target: within ±0.02), out of sample (``coverage_by_stratum``), and
  how many of the strata outside lie more than two standard errors from their level when a habit's jobs are
  taken to miss together (its ``se``): a stratum of thousands of jobs from a few dozen habits is known to a few
  hundredths at best.  A stratum covering more than its level is set apart where no bound could do otherwise:
  more than 1 − level of its jobs needed their whole request, or an atom of need (as many jobs needing exactly
  one whole GPU) spans the level ± 0.02 (``below_quantile``, ``through_quantile``);
- the nodes recovered against the oracle's (target: a quarter), and where the rest went (``gap``);
- on a generated month, the planted truth replayed: the month's what-if (in process) with the memory and cores
  bounds at every level taken from the planted-truth oracle at that level where the habit had two ended jobs
  (elsewhere the model's bounds as they are), time limits and GPUs as predicted, the kill budget spent over
  those levels as over the model's: the nodes the best scenario within the tolerance recovers, what a predictor
  that knew each habit exactly, short of each job's own draw, could recover.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import DATA, current, made

#: (statistic, margin, ended jobs needed) of the rules weighed against the scenario: the history max with every
#: margin a site might choose (0 % to 200 %), so that "the best rule at the same or higher coverage" is found on
#: a fine grid, and the Kubernetes rules with their own margins
MARGINS = (1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 1.75, 2.0, 2.5, 3.0)
RULES = {f"max+{round((m - 1) * 100)}%/{n}": ("max", m, n) for m in MARGINS for n in (2, 3)}
RULES.update({"krr": ("krr", 1.15, 2), "vpa": ("vpa", 1.15, 2), "autopilot": ("autopilot", 1.1, 2)})


def fortnight_store() -> Path:
    from audit.ingest import ingest
    from audit.synthetic import generate

    root = DATA / "rightsize_fortnight"
    store = root / "store"
    if not current(root):
        generate(root / "trace", jobs=40_000, days=14.0, seed=11, write_telemetry=False)
        ingest([root / "trace"], store)
        made(root)
    return store


def rule_bounds(table, stat: str, margin: float, n_min: int) -> dict:
    from predictors.features import eligible, habit_history, request

    out = {}
    for target in ("memory", "cpus"):
        h = habit_history(table, target)
        v = np.where(h["habit_count"].to_numpy() >= n_min, h[f"habit_{stat}"].to_numpy() * margin, np.nan)
        req = request(table, target)
        out[target] = np.where(eligible(table, target), np.where(np.isfinite(req), np.fmin(v, req), v), np.nan)
    return out


def ceiling_bounds(table) -> dict:
    """Every job's own need where its habit had two ended jobs when it was submitted, the request elsewhere: what
    a perfect predictor of the jobs with a history could cut, if it kept the others at their request."""
    from predictors.features import actual, eligible, habit_history

    out = {}
    for target in ("memory", "cpus"):
        h = habit_history(table, target)
        y = np.where(eligible(table, target), actual(table, target), np.nan)
        out[target] = np.where(h["habit_count"].to_numpy() >= 2, y, np.nan)
    return out


#: the planted-truth oracle is read at each of these levels, and with each of these prices of a miss (a share of
#: the resource-hours all jobs ask): the one cutting most at the scenario's coverage or higher is printed
PLANTED_LEVELS = (0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999)
PLANTED_PRICES = (1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
#: the standard-normal quantiles a priced oracle chooses among for each job (or its request)
Z_GRID = np.linspace(-1.0, 4.0, 41)


def _planted(centre: np.ndarray, z: np.ndarray, sd: float, req: np.ndarray, memory: bool) -> np.ndarray:
    """Bounds (jobs × ``z``): ``centre + z × sd`` back from log memory or logit CPU efficiency, capped at ``req``."""
    with np.errstate(invalid="ignore", over="ignore"):
        b = centre[:, None] + z[None, :] * sd
        v = np.exp(b) if memory else req[:, None] / (1 + np.exp(-b))
    return np.where(np.isfinite(req)[:, None], np.fmin(v, req[:, None]), v)


def planted_bounds(table, spread: dict, hows: dict) -> dict:
    """``{label: {target: bounds}}`` for each of ``hows`` (``label: {"level": τ}`` or ``{"price": p}``).  Where
    its habit had two ended jobs when it was submitted (as :func:`ceiling_bounds`), a bound from each job's
    habit's true centre and the planted within-habit spread: the median over all the habit's jobs, future ones
    too, of log memory need and of logit CPU efficiency (need / cores asked), plus z × ``memory_log_sd`` and
    × ``cpu_efficiency_logit_sd`` (``spread``: truth.json ``habit_spread.settings``), capped at the request; the
    request elsewhere.  At a level τ, z = Φ⁻¹(τ) for every job.  At a price p, each job takes the z of
    :data:`Z_GRID`, or its request, that frees most net of p × its chance to miss, 1 − Φ(z): (asked − bound)⁺ ×
    the hours of its time limit / the resource-hours all jobs ask, less p × (1 − Φ(z)), the misses spent where
    they free most, as a kill budget would spend them if it knew each habit exactly.  A habit whose jobs all need
    the same whole cores (single-threaded: one busy thread whatever the allocation; an MPI habit at the
    generator's efficiency floor of 0.5) is bounded at that many cores, which no spread of logit efficiency
    gives.  The centres are read once for every level and price."""
    import pandas as pd
    from scipy.stats import norm

    from audit.whatif.budget import limit_hours
    from predictors.features import actual, eligible, habit_history, request
    from predictors.features.habits import habit_codes

    habit = habit_codes(table)
    hours = limit_hours(table)
    out: dict = {label: {} for label in hows}
    for target, sd in (("memory", spread["memory_log_sd"]), ("cpus", spread["cpu_efficiency_logit_sd"])):
        y = np.where(eligible(table, target), actual(table, target), np.nan)
        req = request(table, target)
        with np.errstate(invalid="ignore", divide="ignore"):
            if target == "memory":
                x = np.log(np.clip(y, 1.0, None))
            else:
                e = np.clip(y / req, 1e-4, 1 - 1e-4)
                x = np.log(e / (1 - e))
        centre = pd.Series(x).groupby(habit).transform("median").to_numpy()
        warm = habit_history(table, target)["habit_count"].to_numpy() >= 2
        on = warm & eligible(table, target) & np.isfinite(centre)  # the jobs the rules bound, as they do
        asked = np.nansum(np.where(on, req * hours, 0.0))
        grid = _planted(centre, Z_GRID, float(sd), req, target == "memory")
        whole = np.full(len(y), np.nan)
        if target == "cpus":
            g = pd.Series(np.ceil(y - 1e-9)).groupby(habit)
            top, low = g.transform("max").to_numpy(), g.transform("min").to_numpy()
            whole = np.where(top == low, np.fmin(top, req), np.nan)  # every job of the habit needs these cores
            grid = np.where(np.isfinite(whole)[:, None], whole[:, None], grid)
        for label, how in hows.items():
            if "price" not in how:
                pick = _planted(centre, np.array([norm.ppf(how["level"])]), float(sd), req, target == "memory")[:, 0]
                pick = np.where(np.isfinite(whole), whole, pick)
            else:
                net = np.clip(req[:, None] - grid, 0, None) * hours[:, None] / asked - how["price"] * norm.sf(Z_GRID)
                k = np.argmax(np.where(np.isfinite(net), net, -np.inf), axis=1)
                rows = np.arange(len(k))
                pick = np.where(net[rows, k] > 0, grid[rows, k], np.nan)
            out[label][target] = np.where(on & np.isfinite(pick), pick, np.nan)
    return out


def held(month, r, only: dict | None = None) -> dict:
    """Coverage and cut of memory and cores under requests ``r``; with ``only`` (``{resource: mask}``), over
    those jobs alone."""
    from audit.whatif.scenarios import actual_requests

    a = actual_requests(month)
    run = np.maximum(month.run, 0.0)
    out = {}
    for res, given, asked, need in (("memory", r.mem, a.mem, month.mem_peak),
                                    ("cores", r.cpus / month.cpu_unit, a.cpus / month.cpu_unit, month.cpu_need)):
        on = only[res] if only else np.ones(len(run), dtype=bool)
        known = np.isfinite(need) & on
        out[res] = {"coverage": float((need[known] <= given[known] * (1 + 1e-9)).mean()),
                    "cut": 1.0 - float((given * run)[on].sum() / (asked * run)[on].sum()),
                    "share": float((asked * run)[on].sum() / (asked * run).sum())}
    return out


def best_rule(rules: dict, res: str, coverage: float) -> str | None:
    """The rule cutting most of ``res`` among those covering ``coverage`` or more."""
    ok = [r for r, v in rules.items() if v[res]["coverage"] >= coverage]
    return max(ok, key=lambda r: rules[r][res]["cut"]) if ok else None


def against(got: dict, rules: dict, res: str) -> str:
    """``got``'s cut as a multiple of the best rule's cut at ``got``'s coverage or higher."""
    best = best_rule(rules, res, got["coverage"])
    b = rules[best][res]["cut"] if best else 0.0
    return f"{got['cut'] / b:.2f}x" if b > 0 else "-"


def compare(mine: dict, rules: dict, ceiling: dict, planted: dict | None = None, scored: tuple | None = None) -> None:
    """Per resource, the scenario's coverage and cut against the best rule covering at least as many jobs, and
    what the history ceiling (:func:`ceiling_bounds`) and the planted-truth oracle (:func:`planted_bounds`, at
    its level cutting most at the scenario's coverage or higher) would cut against that same rule; with
    ``scored`` (the scenario's and the rules' figures over the jobs predicted), the same comparison on those
    jobs alone."""
    for res in ("memory", "cores"):
        m = mine[res]
        best = best_rule(rules, res, m["coverage"])
        b = rules[best][res]["cut"] if best else float("nan")
        ratio = m["cut"] / b if best and b > 0 else float("inf")
        top = ceiling[res]["cut"]
        print(f"    {res}: scenario covers {m['coverage']:.4f}, cuts {100 * m['cut']:.1f} % held; best rule at the "
              f"same or higher coverage: {best} ({rules[best][res]['coverage']:.4f}, cuts {100 * b:.1f} %) -> {ratio:.2f}x "
              f"(target >= 1.5x); history ceiling {100 * top:.1f} % = {top / b:.2f}x that rule" if best else
              f"    {res}: scenario covers {m['coverage']:.4f}, cuts {100 * m['cut']:.1f} %; no rule covers as many "
              f"jobs; history ceiling {100 * top:.1f} %")
        if scored:
            sm, sr = scored[0][res], scored[1]
            sb = best_rule(sr, res, sm["coverage"])
            c = sr[sb][res]["cut"] if sb else 0.0
            if c > 0:
                print(f"      on the jobs predicted (submitted after the first origin; {100 * sm['share']:.1f} % of the "
                      f"{'GiB' if res == 'memory' else 'core'}-hours asked): scenario covers {sm['coverage']:.4f}, "
                      f"cuts {100 * sm['cut']:.1f} %; best rule there at the same or higher coverage: {sb} "
                      f"({sr[sb][res]['coverage']:.4f}, cuts {100 * c:.1f} %) -> {sm['cut'] / c:.2f}x")
        if planted and best:
            up = {lv: v[res] for lv, v in planted.items() if v[res]["coverage"] >= m["coverage"]}
            if up:
                for kind in ("at ", "priced "):
                    some = {k: v for k, v in up.items() if k.startswith(kind)}
                    if some:
                        k = max(some, key=lambda k: some[k]["cut"])
                        print(f"      planted-truth oracle {k} (covers {some[k]['coverage']:.4f}): cuts "
                              f"{100 * some[k]['cut']:.1f} % = {some[k]['cut'] / b:.2f}x that rule")
            else:
                print("      planted-truth oracle: no level covers as many jobs")
        if planted:
            line = ", ".join(f"{v[res]['coverage']:.4f}/{100 * v[res]['cut']:.1f}%/{against(v[res], rules, res)}"
                             for k, v in planted.items() if k.startswith("priced "))
            print(f"      planted-truth oracle priced, each price (coverage/cut/against the best rule there): {line}")
        line = ", ".join(f"{r} {v[res]['coverage']:.4f}/{100 * v[res]['cut']:.1f}%" for r, v in rules.items())
        print(f"      rules (coverage/cut): {line}")


def measure(store: Path, label: str) -> None:
    import pandas as pd

    from audit.ingest import read_table
    from audit.whatif import Options
    from audit.whatif.month import STEMS, build_month, history_masks
    from audit.whatif.scenarios import Scenario, requests_for
    from audit.whatif.to_simulator import to_cluster
    from audit.whatif.whatif import predictions_for

    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "audit.cli", "whatif", str(store), "--out", out, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        took = time.perf_counter() - t
        summary = json.loads((Path(out) / "whatif" / "summary.json").read_text())
        frame = pd.read_parquet(Path(out) / "predictions.parquet")
    table, shape = read_table([store])
    cluster = to_cluster(shape)
    opts = Options()
    preds = predictions_for(table, opts, procs=None, frame=frame, cluster=cluster)
    for name, args in RULES.items():
        preds[name] = rule_bounds(table, *args)
    preds["ceiling"] = ceiling_bounds(table)
    truth = store.parent / "trace" / "truth.json"
    spread = json.loads(truth.read_text()).get("habit_spread", {}).get("settings") if truth.exists() else None
    planted_as = {**{f"at {lv}": {"level": lv} for lv in PLANTED_LEVELS},
                  **{f"priced {p:g} a miss": {"price": p} for p in PLANTED_PRICES}} if spread else {}
    for what, bounds in (planted_bounds(table, spread, planted_as) if spread else {}).items():
        preds[f"planted {what}"] = bounds
    # the jobs predicted (a stratum given: submitted after the first origin), carried as a predictor's values so
    # that they come out in the month's rows
    preds["scored"] = {t: np.where(frame[f"stratum_{STEMS[t]}"].notna().to_numpy(), 0.0, np.nan)
                       for t in ("memory", "cpus")}
    month, _ = build_month(table, cluster, preds, history=history_masks(frame))
    only = {"memory": np.isfinite(month.predictions["scored"]["memory"]),
            "cores": np.isfinite(month.predictions["scored"]["cpus"])}
    rec = summary.get("recommended") or {}
    name = rec.get("scenario")
    print(f"{label}: {len(table):,} jobs, reclaim whatif {took:.0f} s; recommended {name}: "
          f"{rec.get('nodes_recovered')} of {summary['cluster']['nodes']} nodes, {rec.get('kills')} kills "
          f"({1000 * (rec.get('kills') or 0) / max(1, summary['jobs']):.1f} per 1,000 jobs)")
    if name is None:
        return
    asks = {r: requests_for(month, Scenario("rightsized", mode="advise", predictor=r)) for r in RULES}
    rules = {r: held(month, q) for r, q in asks.items()}
    rules_scored = {r: held(month, q, only) for r, q in asks.items()}
    ceiling = held(month, requests_for(month, Scenario("rightsized", mode="advise", predictor="ceiling")))
    planted = {what: held(month, requests_for(month, Scenario("rightsized", mode="advise", predictor=f"planted {what}")))
               for what in planted_as}
    budget = [k for k, s in summary["scenarios"].items() if s.get("predictor") == "budget" and k != name]
    for which in [name, *budget]:
        s = summary["scenarios"][which]
        scen = Scenario("rightsized", level=s["level"], mode=s["mode"], predictor=s["predictor"])
        row = next((r for r in summary.get("tradeoff", []) if r["scenario"] == which), {})
        print(f"  {which}{' (recommended)' if which == name else ''}: {row.get('nodes_recovered')} nodes, "
              f"{row.get('kills')} kills")
        q = requests_for(month, scen)
        compare(held(month, q), rules, ceiling, planted, (held(month, q, only), rules_scored))
    worst, atom = [], []
    for target, per in (summary.get("coverage_by_stratum") or {}).items():
        for lv, row in per.items():
            for s, v in row.items():
                if s != "all" and v["jobs"] >= 1000 and v["coverage"] is not None:
                    off = abs(v["coverage"] - float(lv))
                    top = v.get("at_request") or 0.0
                    z = (v["coverage"] - float(lv)) / v["se"] if v.get("se") else float("nan")
                    # more than 1 - level of the stratum needs its whole request (only the request covers them),
                    # or as many need exactly the stratum's level-quantile (one whole GPU): no bound the model
                    # cannot tell them apart by covers a share within +-0.02 of the level
                    lo, hi = v.get("below_quantile"), v.get("through_quantile")
                    tied = lo is not None and lo < float(lv) - 0.02 and hi > float(lv) + 0.02
                    why = (f"{100 * top:.0f} % at the request" if top > 1 - float(lv)
                           else f"{100 * (hi - lo):.0f} % tied at the quantile" if tied else "")
                    (atom if off > 0.02 and v["coverage"] > float(lv) and why else worst).append(
                        (off, target, lv, s, v["jobs"], v["coverage"], why, v.get("habits"), z, v.get("se")))
    worst.sort(key=lambda w: w[:9], reverse=True)
    # a stratum calibrated exactly still lies outside +-0.02 of its level by chance: 2 P(Z > 0.02 / se)
    from scipy.stats import norm

    chance = sum(2.0 * norm.sf(0.02 / w[9]) for w in worst if w[9])
    inside = sum(w[0] <= 0.02 for w in worst)
    outside = [w for w in worst if w[0] > 0.02]
    beyond = [w for w in outside if not abs(w[8]) <= 2]
    print(f"  coverage per stratum (strata of >= 1,000 jobs): {inside} of {len(worst) + len(atom)} within +-0.02 of "
          f"their level; {len(atom)} over it where more than 1 - level of the stratum's jobs needed their whole request "
          f"(only the request covers them) or an atom of need spans the level +-0.02; of the other {len(outside)}, "
          f"{len(beyond)} more than two standard errors from their level with a habit's jobs missing together (se); "
          f"calibrated exactly, {chance:.1f} of the {len(worst)} would lie outside +-0.02 by chance; worst others: "
          + "; ".join(f"{t} {s} at {lv}: {c:.3f} ({n:,} jobs, {h:,} habits, z {z:+.1f})"
                      for _, t, lv, s, n, c, _, h, z, _ in worst[:4]))
    if beyond:
        print("    beyond two standard errors: " + "; ".join(f"{t} {s} at {lv}: {c:.3f} (z {z:+.1f})"
                                                         for _, t, lv, s, n, c, _, h, z, _ in beyond))
    if atom:
        print("    over it: " + "; ".join(f"{t} {s} at {lv}: {c:.3f}, {why}"
                                         for _, t, lv, s, n, c, why, _, _, _ in sorted(atom, reverse=True)[:6]))
    gap = summary.get("gap")
    if gap:
        causes = ", ".join(f"{c['cause']} {c['nodes']:.1f}" for c in gap["by_cause"])
        print(f"  oracle {gap['oracle_nodes_recovered']} nodes, scenario {gap['nodes_recovered']} "
              f"(target >= {gap['oracle_nodes_recovered'] / 4:.1f}); the {gap['nodes_gap']} between: {causes}")
    if spread:
        planted_replay(table, shape, frame, spread)


def planted_replay(table, shape, frame, spread: dict) -> None:
    """The month's what-if with the memory and cores bounds of the planted-truth oracle at each of the sweep's
    levels in place of the model's (see the module's docstring); prints the recommended scenario and every
    right-sized one's nodes and kills."""
    import pandas as pd

    from audit.whatif import Options, whatif
    from predictors.models import level_label

    opts = Options()
    bounds = planted_bounds(table, spread, {lv: {"level": lv} for lv in opts.risk})
    at = pd.MultiIndex.from_frame(table[["cluster", "job_id"]].astype(str))
    pos = pd.Series(np.arange(len(table)), index=at).reindex(
        pd.MultiIndex.from_frame(frame[["cluster", "job_id"]].astype(str))).to_numpy()
    frame = frame.copy()
    for lv in opts.risk:
        for target, stem in (("memory", "mem_peak_bytes"), ("cpus", "cpus_used")):
            col = f"pred_{stem}_{level_label(lv)}"
            v = bounds[lv][target][pos]
            frame[col] = np.where(np.isfinite(v), v, frame[col].to_numpy(dtype=np.float64))
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        s = whatif(table, cluster_shape=shape, out=out, options=opts, quiet=True, predictions=frame).summary
    rec = s.get("recommended") or {}
    rows = ", ".join(f"{r['scenario'].removeprefix('rightsized@')} {r['nodes_recovered']} ({r['kills']:,})"
                     for r in s.get("tradeoff", []) if r.get("within_tolerance"))
    print(f"  the planted truth replayed ({time.perf_counter() - t:.0f} s): recommended {rec.get('scenario')}, "
          f"{rec.get('nodes_recovered')} of the oracle's {s['capacity']['oracle']['nodes_recovered']} nodes, "
          f"{rec.get('kills')} kills; within the tolerance, nodes (kills): {rows}")


def main() -> None:
    from .bench_whatif import month_store

    measure(fortnight_store(), "fortnight (40,000 jobs, 14 days, seed 11)")
    measure(month_store(), "month (122,000 jobs, 30 days, seed 1)")
