"""The report's sections, each picked from the run folder's files (:class:`.run.Run`) and labelled: they choose,
order and word figures the stages computed, and never compute one.  Each returns a dict the template reads,
with its tables (:func:`.tables.table`, raw values; formatted and written to ``tables/`` by :mod:`.document`)."""

from __future__ import annotations

import pandas as pd

from .formats import Formatter
from .tables import plain, table

LITTLE_SHARE = 0.05  # a recovery under 5 % of the cluster, or whose shaken interval reaches 0, is called little
RESOURCE_LABELS = {"memory": "memory", "time": "time limit", "cores": "cores"}
POLICY_LABELS = {"fifo": "FIFO", "easy": "EASY backfill", "fairshare": "fair share (Fair Tree)",
                 "budget": "GPU budgets per account", "shared_pool": "one shared pool"}


def _records(frame: pd.DataFrame | None) -> list[dict]:
    if frame is None or frame.empty:
        return []
    return [{k: plain(v) for k, v in r.items()} for r in frame.to_dict("records")]


def level_label(level) -> str:
    return "n/a" if level is None else f"p{level * 100:g}"


def scenario_label(name: str, s: dict | None = None) -> str:
    if s is None or s.get("kind") != "rightsized":
        return {"actual": "requests as made", "oracle": "perfect knowledge (oracle)"}.get(name, name)
    at = level_label(s["level"]) if s.get("level") is not None else s.get("predictor")
    return f"right-sized at {at}, {s['mode']}"


# --- executive summary ----------------------------------------------------------------------------

def top_findings(run, n: int = 3) -> list[dict]:
    rows = [r for r in _records(run.frame("findings")) if r.get("usd") and r["usd"] > 0]
    return sorted(rows, key=lambda r: -r["usd"])[:n]


def executive(run, cfg, fmt: Formatter) -> dict:
    s, w = run.summary, run.whatif
    book = s.get("price_book")
    books = s.get("cost_by_book") or {}
    others = [(name, b) for name, b in books.items() if name != book]
    tops = top_findings(run)
    out = {"book": book, "waste_share": fmt.pct(s.get("waste_share")),
           "idle_month": fmt.money(s.get("cost_usd_idle_per_month")),
           "idle_year": fmt.money(s.get("cost_usd_idle_per_year")),
           "idle_period": fmt.money(s.get("cost_usd_idle")), "alloc_period": fmt.money(s.get("cost_usd_alloc")),
           "others": [{"book": n, "month": fmt.money(b.get("cost_usd_idle_per_month")),
                       "year": fmt.money(b.get("cost_usd_idle_per_year"))} for n, b in others],
           "coverage_cpu": fmt.pct((s.get("usage_coverage") or {}).get("cpu")),
           "coverage_gpu": fmt.pct((s.get("usage_coverage") or {}).get("gpu")),
           "findings": [{"title": r["title"], "jobs": fmt.int(r["jobs"]), "users": fmt.int(r["users"]),
                         "usd": fmt.money(r["usd"])} for r in tops]}
    out["recoverable"] = recoverable_headline(w, fmt)
    out["decision"] = decision(out["recoverable"], out, tops)
    out["gap"] = gap_sentence(w, fmt)
    if out["gap"]:
        out["decision"].insert(1, out["gap"])
    rows = [["idle share of allocated compute (use known)", s.get("waste_share"), "summary.json: waste_share"],
            [f"idle cost per month, {book}", s.get("cost_usd_idle_per_month"), "summary.json: cost_usd_idle_per_month"],
            [f"idle cost per year, {book}", s.get("cost_usd_idle_per_year"), "summary.json: cost_usd_idle_per_year"]]
    for n, b in others:
        rows.append([f"idle cost per month, {n}", b.get("cost_usd_idle_per_month"),
                     f"summary.json: cost_by_book.{n}.cost_usd_idle_per_month"])
        rows.append([f"idle cost per year, {n}", b.get("cost_usd_idle_per_year"),
                     f"summary.json: cost_by_book.{n}.cost_usd_idle_per_year"])
    rec = (w or {}).get("recommended") or {}
    for key in ("nodes_recovered", "nodes_recovered_p5", "nodes_recovered_p95", "share_recovered",
                "kills_per_1000_jobs", "gpu_hours_lost"):
        if key in rec:
            rows.append([f"recommended level: {key}", rec.get(key), f"whatif/summary.json: recommended.{key}"])
    g = (w or {}).get("gap")
    if g:
        kept = ((w.get("capacity") or {}).get("oracle") or {}).get("nodes_kept")
        if kept is not None:
            rows.append(["oracle: nodes kept", kept, "whatif/summary.json: capacity.oracle.nodes_kept"])
        for key in ("nodes_total", "oracle_nodes_recovered", "nodes_recovered", "nodes_gap"):
            rows.append([f"oracle gap: {key}", g.get(key), f"whatif/summary.json: gap.{key}"])
        for k, c in enumerate(g.get("by_cause") or []):
            rows.append([f"oracle gap: nodes to {c.get('cause')}", c.get("nodes"),
                         f"whatif/summary.json: gap.by_cause[{k}].nodes"])
    for r in tops:
        rows.append([f"finding: {r['title']} (USD)", r["usd"], "findings.csv: usd"])
    out["table"] = table("executive_summary", "The figures of page 1 and where they come from",
                         [("figure", "text"), ("value", "num"), ("source", "text")], rows)
    return out


def _unit(w: dict, n) -> str:
    """What ``n`` of the what-if's node counts are called: nodes, or a pool's processors (``cluster.unit``)."""
    word = (w.get("cluster") or {}).get("unit") or "node"
    return word if n == 1 else word + "s"


def recoverable_headline(w: dict | None, fmt: Formatter) -> dict:
    """What page 1 says of recoverable capacity: ``state`` is ``absent``, ``none`` (no level within the
    tolerance), ``unsearched``, ``zero`` (nothing to recover) or ``found``."""
    if w is None:
        return {"state": "absent"}
    rec = w.get("recommended")
    tol = fmt.pct((w.get("options") or {}).get("tolerance"))
    if rec is None:
        return {"state": "none", "tolerance": tol}
    opts = w.get("options") or {}
    budget, gpu_hours = opts.get("kill_budget"), opts.get("gpu_hours_budget")
    level = (f"{fmt.pct(budget)} kill-budget" + (f" and {fmt.pct(gpu_hours)} of GPU-hours lost" if gpu_hours else "")
             if rec.get("level") is None and rec.get("predictor") == "budget" else level_label(rec.get("level")))
    base = {"level": level, "mode": rec.get("mode"), "tolerance": tol,
            "kills": fmt.number(rec.get("kills_per_1000_jobs")), "gpu_lost": fmt.number(rec.get("gpu_hours_lost")),
            "total": fmt.int(w["cluster"]["nodes"]), "unit": _unit(w, 2), "unit_one": _unit(w, 1)}
    if rec.get("nodes_recovered") is None:
        return {**base, "state": "unsearched"}
    usd = (rec.get("dollars") or {}).get(w.get("price_book")) or {}
    lo, hi = rec.get("nodes_recovered_p5"), rec.get("nodes_recovered_p95")
    state = "found" if rec["nodes_recovered"] > 0 else "zero"
    actual = ((w.get("capacity") or {}).get("actual") or {}).get("nodes_recovered")
    if state == "found" and (rec["share_recovered"] < LITTLE_SHARE or (lo is not None and lo < 1)
                             or (actual is not None and actual >= rec["nodes_recovered"])):
        state = "little"
    return {**base, "state": state, "nodes": fmt.int(rec["nodes_recovered"]), "share": fmt.pct(rec["share_recovered"]),
            "month": fmt.money(usd.get("usd_per_month")), "year": fmt.money(usd.get("usd_per_year")),
            "book": w.get("price_book"), "interval": None if lo is None else f"{fmt.int(lo)}–{fmt.int(hi)}",
            "replicates": (w.get("shaken") or {}).get("replicates"),
            "nodes_word": _unit(w, rec["nodes_recovered"]), "low": lo,
            "actual_nodes": actual, "actual_fmt": fmt.int(actual),
            "nodes_raw": rec["nodes_recovered"]}


def decision(r: dict, ex: dict, tops: list) -> list[str]:
    first = (tops[0]["title"][:1].lower() + tops[0]["title"][1:]) if tops else "the findings"
    if r["state"] == "little":
        if r.get("actual_nodes") is not None and r["actual_nodes"] >= r["nodes_raw"]:
            why = (f"the requests as made already keep today's service on {r['actual_fmt']} fewer, so right-sizing "
                   "adds none")
        elif r.get("low") is not None and r["low"] < 1:
            why = f"on shaken copies of the month the 5th percentile is {r['interval'].split('–')[0]} {r['unit']}"
        else:
            why = f"that is only {r['share']} of the cluster"
        return [f"The replay frees little: {r['nodes']} {r['nodes_word']} of {r['total']} at the {r['level']} level "
                f"({r['mode']} mode), and {why}; no firm capacity saving is claimed.",
                f"The case for acting rests on the findings, starting with {first}: their fixes shorten queues and "
                "free capacity that the replay does not count on."]
    if r["state"] == "found":
        return [f"Right-sizing requests at the {r['level']} level ({r['mode']} mode) keeps today's waiting times "
                f"on {r['nodes']} fewer {r['nodes_word']} of {r['total']}, worth {r['month']} a month, for {r['kills']} kills "
                "per 1,000 jobs.",
                f"This supports a paid pilot: apply the recommendations (section 5) for one month, starting with "
                f"{first}, and measure the recovered capacity against this baseline."]
    if r["state"] == "zero":
        return [f"The replay frees no {r['unit_one']}: at every risk level within the tolerance, today's waiting "
                "times need the whole cluster, so no capacity is claimed here.",
                f"The idle share ({ex['waste_share']}) is still worth acting on through the findings, starting with "
                f"{first}; it buys shorter queues, not fewer {r['unit']}."]
    if r["state"] == "none":
        return [f"No risk level keeps kills within the tolerance ({r['tolerance']} of jobs), so no recoverable "
                "capacity is claimed.",
                f"The decision rests on the findings, starting with {first}, whose fixes need no prediction."]
    if r["state"] == "unsearched":
        return [f"The recommended level is {r['level']} ({r['mode']}) but the capacity search did not run, so no "
                "node count is claimed.", "Rerun the what-if with the capacity search to size the pilot."]
    return ["Recoverable capacity was not measured: the what-if did not run (it needs a cluster shape).",
            f"The decision rests on the findings, starting with {first}."]


def _gap_subject(w: dict, g: dict) -> str:
    """The recommended scenario as page 1 names it: ``right-sizing at the p99 level (advise mode)``."""
    name = g.get("scenario")
    s = (w.get("scenarios") or {}).get(name) or {}
    if s.get("kind") == "rightsized" and s.get("mode"):
        how = f"at the {level_label(s['level'])} level" if s.get("level") is not None else f"by {s.get('predictor')}"
        return f"right-sizing {how} ({s['mode']} mode), as recommended,"
    return f"the recommended {scenario_label(str(name), s or None)}"


def gap_sentence(w: dict | None, fmt: Formatter) -> str | None:
    """Page 1's sentence on where the oracle's capacity went (``gap`` of ``whatif/summary.json``); None
    without it.  Nodes whole from 1, one decimal below (:meth:`.formats.Formatter.nodes`)."""
    g = (w or {}).get("gap")
    if not g:
        return None
    causes = {c.get("cause"): c.get("nodes") for c in g.get("by_cause") or []}
    kept = ((w.get("capacity") or {}).get("oracle") or {}).get("nodes_kept")
    total, oracle = fmt.int(g.get("nodes_total")), fmt.nodes(g.get("oracle_nodes_recovered"))
    where = (f"on {fmt.int(kept)} of {total} {_unit(w, 2)} ({oracle} recovered)" if kept is not None
             else f"with {oracle} of {total} {_unit(w, 2)} recovered")
    held = fmt.nodes(causes.get("no_history"))
    return (f"The oracle (every job given just what it used) keeps today's service {where}; {_gap_subject(w, g)} "
            f"recovers {fmt.nodes(g.get('nodes_recovered'))}: of the {fmt.nodes(g.get('nodes_gap'))} between, "
            f"{held} {'is' if held == '1' else 'are'} held by jobs with no history to right-size from, "
            f"{fmt.nodes(causes.get('prediction_spread'))} by the spread of predictions, "
            f"{fmt.nodes(causes.get('kills_reruns'))} lost to kills and re-runs, and "
            f"{fmt.nodes(causes.get('service_rule'))} to the service rule (queueing and packing).")


# --- findings -------------------------------------------------------------------------------------

def findings(run, fmt: Formatter) -> dict:
    rows = _records(run.frame("findings"))
    t = table("findings", "Findings (Job Defense Shield's alerts): jobs, users, resource-hours and dollars",
              [("finding", "text"), ("jobs", "int"), ("users", "int"), ("measured jobs", "int"),
               ("resource-hours", "num"), ("unit", "text"), ("USD", "usd")],
              [[r["title"], r["jobs"], r["users"], r["measured_jobs"], r["resource_hours"], r["unit"], r["usd"]]
               for r in rows],
              note="A job can show in several findings: their dollars overlap and are never added together. "
                   "Measured jobs: those with the figures the test needs (n/a: needs the cluster shape).")
    cause = table("findings_by_cause", "Failed work by cause",
                  [("cause", "text"), ("jobs", "int"), ("users", "int"), ("core-h", "num"), ("GPU-h", "num"),
                   ("USD", "usd"), ("fix", "text")],
                  [[r["cause"], r["jobs"], r["users"], r["core_hours"], r["gpu_hours"], r["usd"], r["fix"]]
                   for r in _records(run.frame("by_cause"))])
    th = run.summary.get("findings_thresholds") or {}
    return {"table": t, "by_cause": cause, "items": [
        {"title": r["title"], "fix": r["fix"], "jobs": fmt.int(r["jobs"]), "usd": fmt.money(r["usd"]),
         "priced": r["priced"]} for r in rows],
        "thresholds": table("finding_thresholds", "Thresholds ([findings] of the config)",
                            [("threshold", "text"), ("value", "num")], [[k, v] for k, v in th.items()])}


# --- where the capacity is ------------------------------------------------------------------------

def capacity(run, cfg, fmt: Formatter) -> dict:
    s = run.summary
    occ = (s.get("occupancy") or {}).get("partitions") or {}
    parts = table("occupancy_by_partition", "Occupancy and utilisation by partition over the period",
                  [("partition", "text"), ("core-h allocated", "num"), ("CPU occupancy", "pct"),
                   ("CPU utilisation", "pct"), ("GPU-h allocated", "num"), ("GPU occupancy", "pct"),
                   ("GPU utilisation", "pct")],
                  [[p, d.get("core_hours_alloc"), d.get("cpu_occupancy"), d.get("cpu_utilisation"),
                    d.get("gpu_hours_alloc"), d.get("gpu_occupancy"), d.get("gpu_utilisation")]
                   for p, d in sorted(occ.items())])
    dist = s.get("efficiency_distribution") or {}
    names = {"cpu_eff": "CPU", "mem_eff": "memory", "time_eff": "time"}
    eff = table("efficiency_distribution", "Per-job efficiency: jobs known and percentiles",
                [("resource", "text"), ("jobs known", "int"), ("p10", "pct"), ("p25", "pct"), ("p50", "pct"),
                 ("p75", "pct"), ("p90", "pct")],
                [[names[k], d.get("known"), d.get("p10"), d.get("p25"), d.get("p50"), d.get("p75"), d.get("p90")]
                 for k, d in dist.items()])
    acc = run.frame("by_account")
    top_acc = []
    if acc is not None and not acc.empty:
        key = "cost_usd_alloc" if "cost_usd_alloc" in acc else "core_hours_alloc"
        top_acc = _records(acc[acc["level"] == 1].sort_values(key, ascending=False, kind="stable").head(cfg.top_rows))
    accounts = table("top_accounts", "Top accounts by allocated cost",
                     [("account", "text"), ("jobs", "int"), ("core-h", "num"), ("CPU eff.", "pct"), ("GPU-h", "num"),
                      ("GPU eff.", "pct"), ("allocated USD", "usd"), ("idle USD", "usd")],
                     [[r["account_path"], r["jobs"], r["core_hours_alloc"], r["cpu_efficiency"], r["gpu_hours_alloc"],
                       r["gpu_efficiency"], r.get("cost_usd_alloc"), r.get("cost_usd_idle")] for r in top_acc])
    users = run.frame("by_user")
    top_u = []
    if users is not None and not users.empty:
        key = "cost_usd_alloc" if "cost_usd_alloc" in users else "core_hours_alloc"
        top_u = _records(users.sort_values(key, ascending=False, kind="stable").head(cfg.top_rows))
    users_t = table("top_users", "Top users by allocated cost",
                    [("user", "text"), ("jobs", "int"), ("core-h", "num"), ("CPU eff.", "pct"), ("GPU-h", "num"),
                     ("GPU eff.", "pct"), ("failed jobs", "int"), ("allocated USD", "usd"), ("idle USD", "usd")],
                    [[r["user"], r["jobs"], r["core_hours_alloc"], r["cpu_efficiency"], r["gpu_hours_alloc"],
                      r["gpu_efficiency"], r["failed_jobs"], r.get("cost_usd_alloc"), r.get("cost_usd_idle")]
                     for r in top_u])
    gpu = table("gpu_types", "GPU types",
                [("GPU type", "text"), ("GPUs", "int"), ("jobs", "int"), ("GPU-h allocated", "num"),
                 ("GPU-h used", "num"), ("utilisation", "pct"), ("allocated USD", "usd")],
                [[r["gpu_type"], r["gpus"], r["jobs"], r["gpu_hours_alloc"], r["gpu_hours_used"], r["gpu_utilisation"],
                  r["cost_usd_alloc"]] for r in _records(run.frame("gpu_types"))])
    cov = s.get("usage_coverage") or {}
    return {"tables": [parts, eff, accounts, users_t, gpu],
            "coverage": {"cpu": fmt.pct(cov.get("cpu")), "memory": fmt.pct(cov.get("memory")),
                         "gpu": fmt.pct(cov.get("gpu"))}}


# --- recoverable capacity -------------------------------------------------------------------------

def recoverable(w: dict, fmt: Formatter) -> dict:
    scen = w.get("scenarios") or {}
    units = _unit(w, 2)
    trade = table("tradeoff", "Capacity recovered against failure cost, by risk level",
                  [("scenario", "text"), (f"{units} recovered", "int"), ("share of cluster", "pct"),
                   ("shaken mean", "num"),
                   ("kills per 1,000 jobs", "num"), ("GPU-h lost", "num"), ("core-h lost", "num"),
                   ("within tolerance", "bool")],
                  [[scenario_label(r["scenario"], scen.get(r["scenario"])), r["nodes_recovered"], r["share_recovered"],
                    r.get("nodes_recovered_mean"), r["kills_per_1000_jobs"], r["gpu_hours_lost"], r["core_hours_lost"],
                    r["within_tolerance"]]
                   for r in w.get("tradeoff", [])], cls="wrap-head")
    cap = w.get("capacity") or {}
    books = sorted({b for c in cap.values() for b in (c.get("dollars") or {})})
    service = table("scenarios", "Service and capacity per scenario on the full cluster",
                    [("scenario", "text"), ("p95 wait", "dur"), ("mean wait", "dur"), ("bounded slowdown", "num"),
                     ("CPU occupancy", "pct"), ("GPU occupancy", "pct"), (f"{units} recovered", "int")],
                    [[scenario_label(n, e), e["p95_wait_s"], e["mean_wait_s"], e["mean_bounded_slowdown"],
                      e["occupancy_cpus"], e["occupancy_gpus"], (cap.get(n) or {}).get("nodes_recovered")]
                     for n, e in scen.items()])
    dollars = table("capacity_dollars", f"Dollars a month of the {units} recovered, by price book",
                    [("scenario", "text"), *[(b, "usd") for b in books]],
                    [[scenario_label(n, scen.get(n)), *[((c.get("dollars") or {}).get(b) or {}).get("usd_per_month")
                                                        for b in books]] for n, c in cap.items()])
    kb = w.get("kill_budget") or {}
    kill_budget = table("kill_budget", "The kill budget: what it allowed, and the kills and GPU-hours lost it cost",
                        [("mode", "text"), ("share of jobs", "pct"), ("jobs allowed", "num"), ("kills", "int"),
                         ("expected kills", "num"), ("share of GPU-h", "pct"), ("GPU-h allowed", "num"),
                         ("GPU-h lost", "num")],
                        [[m, b.get("budget"), b.get("budget_jobs"), b.get("counted_kills"), b.get("expected_kills"),
                          b.get("gpu_hours_budget"), b.get("gpu_hours_allowed"), b.get("counted_gpu_hours_lost")]
                         for m, b in kb.items()],
                        note="Kills and GPU-hours lost are counted job by job as the replay kills them (a peak over "
                             "the memory given, a run stretched for want of cores or GPUs past its limit); expected "
                             "kills are what each cut's stratum measured before its submission. No share of GPU-hours "
                             "(n/a): no such limit.", cls="wrap-head")
    pol = w.get("policies") or {}
    policies = table("policies", "Policy what-ifs: the requests as made under each scheduling policy",
                     [("policy", "text"), ("mean wait", "dur"), ("p95 wait", "dur"), ("bounded slowdown", "num"),
                      ("CPU occupancy", "pct"), ("GPU occupancy", "pct")],
                     [[POLICY_LABELS.get(n, n), m["mean_wait_s"], m["p95_wait_s"], m["mean_bounded_slowdown"],
                       m["occupancy_cpus"], m["occupancy_gpus"]] for n, m in pol.items()])
    budget = (pol.get("budget") or {}).get("gpu_hours_by_account") or {}
    budgets = table("budgets", "Delivered against entitled GPU-hours per account under budgets",
                    [("account", "text"), ("entitled GPU-h", "num"), ("delivered GPU-h", "num")],
                    [[a, d.get("entitled"), d.get("delivered")] for a, d in
                     sorted(budget.items(), key=lambda kv: -(kv[1].get("entitled") or 0))])
    f = w.get("fidelity") or {}
    fidelity = (f"Fidelity: the replay of the requests as made waits {fmt.duration(f.get('simulated_mean_wait_s'))} "
                f"on average against {fmt.duration(f.get('logged_mean_wait_s'))} logged; CPU occupancy "
                f"{fmt.pct(f.get('simulated_occupancy_cpus'))} against {fmt.pct(f.get('logged_occupancy_cpus'))}, "
                f"GPU occupancy {fmt.pct(f.get('simulated_occupancy_gpus'))} against "
                f"{fmt.pct(f.get('logged_occupancy_gpus'))}.")
    tables = [trade, service, dollars] + ([kill_budget] if kb else []) + [policies] + ([budgets] if budget else [])
    return {"tables": tables, "fidelity": fidelity, "tolerance": fmt.pct((w.get("options") or {}).get("tolerance")),
            "recommended": scenario_label(w["recommended"]["scenario"], scen.get(w["recommended"]["scenario"]))
            if w.get("recommended") else None, "gap": oracle_gap(w, fmt)}


GAP_RESOURCES = {"memory": "memory", "cores": "cores", "gpus": "GPUs", "time": "time (as planned)"}
GAP_CAUSES = {"no_history": "no history to right-size from", "prediction_spread": "spread of predictions",
              "kills_reruns": "kills and re-runs", "service_rule": "service rule (queueing and packing)"}


def gap_bars(g: dict, fmt: Formatter) -> list[dict]:
    """The causes of the gap as the chart draws them: label, nodes and the nodes as printed."""
    return [{"label": GAP_CAUSES.get(c.get("cause"), str(c.get("cause"))), "nodes": c.get("nodes"),
             "text": fmt.nodes(c.get("nodes"))} for c in g.get("by_cause") or []]


def _picked(rows, keys: tuple, named: str, names: dict) -> list[list]:
    """Each row's values at ``keys``, the value at ``named`` given by its label in ``names`` (itself when absent)."""
    return [[names.get(r.get(k), r.get(k)) if k == named else r.get(k) for k in keys] for r in rows or []]


def oracle_gap(w: dict, fmt: Formatter) -> dict | None:
    """Where the oracle's capacity went (``gap`` of ``whatif/summary.json``): by resource and by cause in nodes;
    None without it."""
    g = w.get("gap")
    if not g:
        return None
    scen = w.get("scenarios") or {}
    name = g.get("scenario")
    label = scenario_label(str(name), scen.get(name))
    units = _unit(w, 2)
    by_res = table("oracle_gap", f"Where the oracle's capacity went, by resource: the recommended level ({label}) "
                                 "against the oracle",
                   [("resource", "text"), ("unit", "text"), ("asked", "qty"), ("oracle holds", "qty"),
                    ("scenario holds", "qty"), ("gap to the oracle", "qty"), ("of which no history", "qty"),
                    ("of which prediction spread", "qty"), ("oracle cut of asked", "pct"),
                    ("scenario cut of asked", "pct"), ("share of the oracle's cut reached", "pct")],
                   _picked(g.get("by_resource"), ("resource", "unit", "asked", "oracle", "held", "gap", "no_history",
                                                  "prediction_spread", "oracle_cut_share", "scenario_cut_share",
                                                  "share_of_oracle_cut_reached"), "resource", GAP_RESOURCES),
                   note="Resource-hours held over each job's logged run (time: the core-hours the scheduler plans "
                        "with, time estimate × cores). No history: jobs without a prediction for the resource or "
                        "with fewer than two ended jobs of their habit; prediction spread: the jobs with one.",
                   cls="wrap-head")
    by_cause = table("oracle_gap_causes",
                     f"By cause: the {fmt.nodes(g.get('nodes_gap'))} {units} between the oracle and the "
                     f"recommended level ({label})",
                     [("cause", "text"), (units, "num"), ("share of the gap", "pct")],
                     _picked(g.get("by_cause"), ("cause", "nodes", "share"), "cause", GAP_CAUSES),
                     note="The service rule is what is left of the gap once the other causes are counted: capacity "
                          "the scenario freed that its queue, packing and kills' delays still need (negative when "
                          "the held capacity explains more than the gap).")
    by_pool = table("oracle_gap_pools", f"By pool: the oracle's {units} and the recommended level's, and the "
                                        f"causes in {units}, counted in each pool's binding resource",
                    [("pool", "text"), (units, "int"), ("binding resource", "text"), ("oracle recovers", "int"),
                     ("scenario recovers", "int"), ("no history", "num"), ("prediction spread", "num"),
                     ("kills and re-runs", "num"), ("service rule", "num")],
                    _picked(g.get("by_pool"), ("pool", "nodes_total", "binding_resource", "oracle_nodes_recovered",
                                               "nodes_recovered", "no_history", "prediction_spread", "kills_reruns",
                                               "service_rule"), "binding_resource", GAP_RESOURCES),
                    note="A pool's binding resource is the held one whose oracle cut is the most of its nodes' worth; "
                         "the capacity search turned that cut into the oracle's nodes, and the pool's gaps of that "
                         "resource and the resource-hours of its kills are converted to nodes at the same rate.",
                    cls="wrap-head")
    intro = (f"The oracle recovers {fmt.nodes(g.get('oracle_nodes_recovered'))} of {fmt.int(g.get('nodes_total'))} "
             f"{units}; the recommended level ({label}) recovers {fmt.nodes(g.get('nodes_recovered'))}. The first "
             "table shows, resource by resource, what each holds, and how much of the difference is held by jobs with "
             "no history to be right-sized from and how much by the spread of the predictions; the chart and the "
             f"second table count the difference in {units}, and the third gives it pool by pool. Each pool's nodes are "
             "counted in its binding resource, the one whose cut by the oracle is the most of its nodes' worth over "
             f"the month's {fmt.number(g.get('span_hours'))} hours.")
    tables = [by_res, by_cause] + ([by_pool] if g.get("by_pool") else [])
    return {"intro": intro, "tables": tables, "bars": gap_bars(g, fmt), "units": units}


# --- recommendations ------------------------------------------------------------------------------

def _need_kind(unit: str) -> str:
    return {"GiB": "gib", "s": "dur", "cores": "num"}.get(unit, "num")


def recommendations(run, cfg) -> dict | None:
    recs = run.frame("recommendations")
    if recs is None:
        return None
    out = []
    for res in ("memory", "time", "cores"):
        rows = _records(recs[recs["resource"] == res].head(cfg.top_rows))
        if not rows:
            continue
        kind = _need_kind(rows[0]["unit"])
        out.append(table(f"recommendations_{res}", f"Right-sized {RESOURCE_LABELS[res]} requests, largest savings first",
                         [("user", "text"), ("job family", "text"), ("jobs", "int"), ("asks", kind),
                          ("needs p50", kind), ("p90", kind), ("p99", kind), ("ask instead", "text"),
                          (f"frees {rows[0]['frees_unit']}", "num")],
                         [[r["user"], r["job_family"], r["jobs"], r["ask"], r["need_p50"], r["need_p90"], r["need_p99"],
                           r["slurm"], r["frees"]] for r in rows]))
    return {"tables": out, "rows": int(len(recs)), "users": int(recs["user"].nunique()) if len(recs) else 0}


# --- per-account pages ----------------------------------------------------------------------------

def accounts(run, cfg) -> list[dict]:
    acc = run.frame("by_account")
    if acc is None or acc.empty:
        return []
    key = "cost_usd_alloc" if "cost_usd_alloc" in acc else "core_hours_alloc"
    tops = _records(acc[acc["level"] == 1].sort_values(key, ascending=False, kind="stable").head(cfg.top_accounts))
    fba, au, recs = run.frame("findings_by_account"), run.frame("account_user"), run.frame("recommendations")
    titles = {r["finding"]: r["title"] for r in _records(run.frame("findings"))}
    pages = []
    for k, a in enumerate(tops):
        name = a["account_path"]
        slug = f"account_{k + 1}"
        totals = table(f"{slug}_totals", f"{name}: totals",
                       [("jobs", "int"), ("core-h", "num"), ("CPU eff.", "pct"), ("GPU-h", "num"), ("GPU eff.", "pct"),
                        ("failed jobs", "int"), ("allocated USD", "usd"), ("idle USD", "usd")],
                       [[a["jobs"], a["core_hours_alloc"], a["cpu_efficiency"], a["gpu_hours_alloc"],
                         a["gpu_efficiency"], a["failed_jobs"], a.get("cost_usd_alloc"), a.get("cost_usd_idle")]])
        f_rows = _records(fba[fba["account"].astype(str) == name]) if fba is not None else []
        found = table(f"{slug}_findings", f"{name}: findings",
                      [("finding", "text"), ("jobs", "int"), ("users", "int"), ("resource-hours", "num"),
                       ("USD", "usd")],
                      [[titles.get(r["finding"], r["finding"]), r["jobs"], r["users"], r["resource_hours"], r["usd"]]
                       for r in f_rows])
        u_rows = []
        if au is not None:
            sub = au[au["account"].astype(str) == name]
            ukey = "cost_usd_alloc" if "cost_usd_alloc" in sub else "core_hours_alloc"
            u_rows = _records(sub.sort_values(ukey, ascending=False, kind="stable").head(cfg.top_rows))
        users = table(f"{slug}_users", f"{name}: users",
                      [("user", "text"), ("jobs", "int"), ("core-h", "num"), ("CPU eff.", "pct"), ("GPU-h", "num"),
                       ("GPU eff.", "pct"), ("allocated USD", "usd")],
                      [[r["user"], r["jobs"], r["core_hours_alloc"], r["cpu_efficiency"], r["gpu_hours_alloc"],
                        r["gpu_efficiency"], r.get("cost_usd_alloc")] for r in u_rows])
        r_rows = []
        if recs is not None and len(recs):
            r_rows = _records(recs[recs["account"].astype(str).str.split("/").str[0] == name].head(5))
        rec_t = table(f"{slug}_recommendations", f"{name}: first recommendations",
                      [("user", "text"), ("job family", "text"), ("resource", "text"), ("ask instead", "text"),
                       ("frees", "num"), ("unit", "text")],
                      [[r["user"], r["job_family"], RESOURCE_LABELS.get(r["resource"], r["resource"]), r["slurm"],
                        r["frees"], r["frees_unit"]] for r in r_rows])
        pages.append({"name": name, "tables": [t for t in (totals, found, users, rec_t) if t["rows"]]})
    return pages


# --- trend ---------------------------------------------------------------------------------------

TREND_COLUMNS = (("month", "month", "text"), ("jobs", "jobs", "int"), ("cost_usd_alloc", "allocated USD", "usd"),
                 ("cost_usd_idle", "idle USD", "usd"), ("cpu_efficiency", "CPU eff.", "pct"),
                 ("mem_efficiency", "memory eff.", "pct"), ("gpu_efficiency", "GPU eff.", "pct"),
                 ("whatif_nodes_recovered", "nodes recoverable", "int"),
                 ("whatif_usd_per_month", "recoverable USD a month", "usd"))


def trend(run) -> dict | None:
    """Month by month, as the monthly run stored them (``trend.csv``: the earlier months and this one, the latest
    last); None when the run has no earlier months."""
    months = run.frame("trend")
    if months is None or months.empty:
        return None
    cols = [c for c in TREND_COLUMNS if c[0] in months.columns]
    rows = [[r.get(k) for k, _, _ in cols] for r in _records(months)]
    t = table("trend", "Month by month, the latest last", [(label, kind) for _, label, kind in cols], rows)
    return {"intro": f"The last {len(rows)} months audited by the monthly run, the latest last.", "tables": [t]}


# --- methods, data quality ------------------------------------------------------------------------

def methods(run, fmt: Formatter) -> dict:
    s, w = run.summary, run.whatif
    book = s.get("price_book_detail") or {}
    prices = []
    if book:
        prices = [["vCPU-hour", book["cpu"]["usd_per_hour"], book["cpu"]["source"], book["cpu"]["date"]],
                  ["GiB-hour of memory", book["memory"]["usd_per_hour"], book["memory"]["source"],
                   book["memory"]["date"]]]
        prices += [[f"GPU-hour, {k}", v["usd_per_hour"], v["source"], v["date"]] for k, v in book.get("gpu", {}).items()]
    price_t = table("price_book", f"Price book '{book.get('name', 'n/a')}' dated {book.get('date', 'n/a')}",
                    [("unit", "text"), ("USD per hour", "num"), ("source", "text"), ("date", "text")], prices)
    books = table("price_books", "Every price book: the period's cost and idle cost",
                  [("book", "text"), ("date", "text"), ("allocated USD", "usd"), ("idle USD", "usd"),
                   ("idle USD a month", "usd"), ("idle USD a year", "usd")],
                  [[n, b.get("date"), b.get("cost_usd_alloc"), b.get("cost_usd_idle"), b.get("cost_usd_idle_per_month"),
                    b.get("cost_usd_idle_per_year")] for n, b in (s.get("cost_by_book") or {}).items()])
    cal = table("prediction_calibration", "Right-sizing models: measured out-of-sample coverage",
                [("target", "text"), ("level", "pct"), ("jobs predicted", "int"), ("coverage", "pct")],
                [[r["target"], r["level"], r["jobs"], r["coverage"]] for r in _records(run.frame("calibration"))])
    opts = (w or {}).get("options") or {}
    return {"tables": [price_t, books] + ([cal] if cal["rows"] else []), "description": book.get("description", ""),
            "period_hours": fmt.number(s.get("period_hours")),
            "whatif": None if w is None else {
                "policy": opts.get("policy"), "backfill": opts.get("backfill_order"),
                "modes": ", ".join(opts.get("modes", [])), "levels": ", ".join(level_label(x) for x in opts.get("risk", [])),
                "tolerance": fmt.pct(opts.get("tolerance")), "replicates": fmt.int(opts.get("replicates")),
                "replays": fmt.int(w.get("replays")), "jobs": fmt.int(w.get("jobs"))}}


def quality(run, fmt: Formatter) -> dict:
    led = run.ledger
    files = [[f.get("file"), f.get("format"), f.get("read"), f.get("used"), f.get("folded"), f.get("quarantined"),
              f.get("structural"), f.get("jobs_emitted"), f.get("balanced")] for f in led.get("files", [])]
    tot = led.get("totals", {})
    files.append(["total", "", tot.get("read"), tot.get("used"), tot.get("folded"), tot.get("quarantined"),
                  tot.get("structural"), tot.get("jobs_emitted"), led.get("balanced")])
    ledger = table("ledger", "The ledger: every input line accounted for (read = used + folded + quarantined)",
                   [("file", "text"), ("format", "text"), ("read", "int"), ("used", "int"), ("folded", "int"),
                    ("quarantined", "int"), ("structural", "int"), ("jobs", "int"), ("balanced", "bool")], files)
    reasons = table("quarantine_reasons", "Quarantine reasons",
                    [("file", "text"), ("reason", "text"), ("lines", "int")],
                    [[f.get("file"), r, n] for f in led.get("files", [])
                     for r, n in sorted((f.get("quarantined_by_reason") or {}).items())])
    sample = table("quarantine_sample", f"Quarantined lines (first {len(run.quarantine)})",
                   [("file", "text"), ("line", "text"), ("field", "text"), ("reason", "text"), ("raw text", "text")],
                   [[q.get("file"), q.get("line"), q.get("field"), q.get("reason"), shorten(q.get("raw", ""))]
                    for q in run.quarantine])
    cav = table("caveats", "Data-quality caveats: jobs affected and their share of allocated hours",
                [("caveat", "text"), ("meaning", "text"), ("jobs", "int"), ("share of core-h", "pct"),
                 ("share of GPU-h", "pct")],
                [[c["caveat"], c["meaning"], c["jobs"], c["share_of_core_hours"], c["share_of_gpu_hours"]]
                 for c in run.summary.get("caveats", [])])
    tables = [ledger] + [t for t in (reasons, sample, cav) if t["rows"]]
    src = led.get("cluster_shape") or {}
    shape_note = _shape_note(src)
    if src.get("source") == "inferred":
        tables.append(table("cluster_shape_inferred",
                            "Cluster shape inferred from the accounting's node lists (capacities are lower bounds)",
                            [("node group", "text"), ("nodes", "int"), ("cores a node", "int"),
                             ("memory a node", "gib"), ("GPUs a node", "int"), ("GPU type", "text"),
                             ("partitions", "text")],
                            [[g.get("name"), g.get("count"), g.get("cpus"), (g.get("mem_bytes") or 0) / 2**30, g.get("gpus"),
                              g.get("gpu_type"), ", ".join(g.get("partitions") or [])]
                             for g in src.get("node_groups", [])]))
    return {"tables": tables, "balanced": bool(led.get("balanced")), "shape_note": shape_note,
            "shape_inferred": src.get("source") == "inferred"}


def _shape_note(src: dict) -> str:
    """One sentence on where the cluster shape came from."""
    where = {"given": "the cluster-shape file given", "input": "the cluster-shape file among the inputs",
             "pilot": "the node list the pilot collector read", "nodes": "the node list among the inputs"}
    source = src.get("source")
    if source == "inferred":
        return (f"No cluster shape was given: the shape was inferred from the node lists of the accounting "
                f"({src.get('nodes')} nodes in {len(src.get('node_groups', []))} groups): {src.get('basis')}. "
                "A node never filled is larger than it looks, so capacity and recoverable nodes rest on lower "
                "bounds; give the cluster's shape (--cluster-shape) for exact figures.")
    if source == "declared":
        return (f"No cluster shape was given: the accounting declares its machine, {src.get('basis')}. The what-if "
                "replays processors alone, as the Parallel Workloads Archive models the machine, and its node counts "
                "are processors; give the cluster's shape (--cluster-shape) to replay nodes, memory and GPUs.")
    if source in where:
        return f"The cluster shape is {where[source]}."
    return "No cluster shape: figures that need the nodes (occupancy by partition, the what-if) are left out."


def shorten(text, limit: int = 160) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
