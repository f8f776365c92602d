"""Report sections built from the accounting stage's results: they pick and label figures, never compute them."""

from __future__ import annotations

import pandas as pd

TOP_ROWS = 10


def _rows(frame: pd.DataFrame, columns: list[str]) -> list[list]:
    return [[None if pd.isna(v) else (v.item() if hasattr(v, "item") else v) for v in row]
            for row in frame[columns].head(TOP_ROWS).itertuples(index=False, name=None)]


def dollars_section(summary: dict) -> dict | None:
    """The two accounting views side by side, never added together, with the price book that priced them."""
    if "cost_usd_alloc" not in summary:
        return None
    book = summary.get("price_book_detail", {})
    per_resource = [
        ["CPU", summary.get("cost_usd_cpu_alloc"), summary.get("cost_usd_cpu_idle")],
        ["Memory", summary.get("cost_usd_mem_alloc"), summary.get("cost_usd_mem_idle")],
        ["GPU", summary.get("cost_usd_gpu_alloc"), summary.get("cost_usd_gpu_idle")],
        ["Total", summary.get("cost_usd_alloc"), summary.get("cost_usd_idle")],
    ]
    prices = [["vCPU-hour", book["cpu"]["usd_per_hour"], book["cpu"]["source"], book["cpu"]["date"]],
              ["GiB-hour of memory", book["memory"]["usd_per_hour"], book["memory"]["source"], book["memory"]["date"]]]
    prices += [[f"GPU-hour, {k}", v["usd_per_hour"], v["source"], v["date"]] for k, v in book.get("gpu", {}).items()]
    intro = (f"Priced with the book '{book.get('name')}' dated {book.get('date')} ({book.get('description')}). "
             "Per-resource view: each allocated and each idle unit priced on its own, as OpenCost does; idle covers "
             "the jobs whose use is known. Dominant-resource view: each job pays for the share of its nodes it blocks. "
             "The two views answer different questions and are never added together.")
    tables = [
        {"caption": "Per-resource view (USD)", "columns": ["resource", "allocated", "idle"], "rows": per_resource},
        {"caption": "Allocated cost of jobs whose use is unknown (USD)", "columns": ["view", "USD"],
         "rows": [["per-resource", summary.get("cost_usd_alloc_usage_unknown")]]},
    ]
    if summary.get("cost_usd_dominant") is not None:
        tables.append({"caption": "Dominant-resource view (USD)", "columns": ["view", "allocated"],
                       "rows": [["dominant resource", summary.get("cost_usd_dominant")]]})
    tables.append({"caption": "Prices", "columns": ["unit", "USD per hour", "source", "date"], "rows": prices})
    return {"title": "Dollars", "intro": intro, "tables": tables}


def occupancy_section(summary: dict) -> dict | None:
    occ = summary.get("occupancy") or {}
    parts = occ.get("partitions")
    if not parts:
        return None
    rows = [[p, d.get("core_hours_alloc"), d.get("cpu_occupancy"), d.get("cpu_utilisation"), d.get("gpu_hours_alloc"),
             d.get("gpu_occupancy"), d.get("gpu_utilisation")] for p, d in sorted(parts.items())]
    intro = ("Occupancy (occ.) is what was allocated out of the partition's capacity; utilisation (util.) is what was "
             f"used of what was allocated (jobs with known use). Period: {occ.get('hours')} hours.")
    if occ.get("cpu_occupancy") is not None:
        intro += f" Whole cluster: CPU occupancy {occ['cpu_occupancy']:.1%}"
        if occ.get("gpu_occupancy") is not None:
            intro += f", GPU occupancy {occ['gpu_occupancy']:.1%}"
        intro += "."
    return {"title": "Occupancy and utilisation", "intro": intro, "tables": [{
        "caption": "By partition (ratios 0–1)",
        "columns": ["partition", "core-h alloc.", "CPU occ.", "CPU util.", "GPU-h alloc.", "GPU occ.", "GPU util."],
        "rows": rows}]}


def top_n_section(top: dict) -> dict:
    gpu, mem, failed = top["idle_gpu_hours_by_user"], top["memory_over_request_jobs"], top["failed_work_by_user"]
    return {"title": "Top users and jobs", "intro": "The ten largest of each list.", "tables": [
        {"caption": "Idle GPU-hours by user", "columns": ["user", "jobs", "GPU-h allocated", "GPU-h used",
                                                          "GPU-h idle", "GPU efficiency"],
         "rows": _rows(gpu, ["user", "jobs", "gpu_hours_alloc", "gpu_hours_used", "gpu_hours_idle", "gpu_efficiency"])},
        {"caption": "Worst memory over-requests (GiB-hours requested but never used)",
         "columns": ["job", "user", "requested GiB", "peak GiB", "request / peak", "unused GiB-h"],
         "rows": _rows(mem, ["job_id", "user", "req_gib", "peak_gib", "over_request", "unused_gib_hours"])},
        {"caption": "Most failed work by user (allocated core-hours of failed jobs)",
         "columns": ["user", "failed jobs", "failed core-h", "all jobs"],
         "rows": _rows(failed, ["user", "failed_jobs", "failed_core_hours", "jobs"])},
    ]}


def failed_work_section(summary: dict, failed: pd.DataFrame) -> dict:
    by_state = [[s, summary["failed_jobs_by_state"][s], h, summary["failed_gpu_hours_by_state"][s]]
                for s, h in summary["failed_hours_by_state"].items()]
    biggest = failed.sort_values("core_s_alloc", ascending=False, kind="stable")
    return {"title": "Failed work", "intro": "Resources held by jobs that ended OUT_OF_MEMORY, TIMEOUT, NODE_FAIL, "
            "FAILED or PREEMPTED (CANCELLED shown apart), and what the data says about the largest of them.",
            "tables": [
                {"caption": "By final state", "columns": ["state", "jobs", "core-h allocated", "GPU-h allocated"],
                 "rows": by_state},
                {"caption": "Largest failed jobs", "columns": ["job", "user", "state", "diagnosis"],
                 "rows": _rows(biggest, ["job_id", "user", "state", "diagnosis"])},
            ]}


def caveats_section(quality: list[dict], coverage: dict) -> dict:
    rows = [[q["caveat"], q["meaning"], q["jobs"], q["share_of_core_hours"], q["share_of_gpu_hours"]] for q in quality]
    intro = ("Known gaps in the input, the jobs each affects and its share of the allocated core- and GPU-hours. "
             f"Use is known for {_pct(coverage.get('cpu'))} of allocated core-hours, {_pct(coverage.get('memory'))} "
             f"of memory GiB-hours and {_pct(coverage.get('gpu'))} of GPU-hours.")
    return {"title": "Appendix: data-quality caveats", "intro": intro, "tables": [{
        "caption": "Caveats", "columns": ["caveat", "meaning", "jobs", "share of core-h", "share of GPU-h"],
        "rows": rows}]}


def _pct(x) -> str:
    return "an unknown share" if x is None else f"{x:.1%}"


def account_sections(result) -> dict:
    """All the sections the accounting stage contributes to the report."""
    s = result.summary
    out = {"top_n": top_n_section(result.top), "failed_work": failed_work_section(s, result.failed),
           "caveats": caveats_section(result.quality, s.get("usage_coverage", {}))}
    for name, block in (("dollars", dollars_section(s)), ("occupancy", occupancy_section(s))):
        if block is not None:
            out[name] = block
    return out


def whatif_section(whatif: dict) -> dict:
    """Recoverable capacity from ``whatif/summary.json``: the recommendation, the trade-off over the risk
    levels, each scenario's service and capacity, and the fidelity line."""
    rec = whatif.get("recommended")
    book = whatif.get("price_book")
    nodes = whatif["cluster"]["nodes"]
    if rec is None:
        intro = (f"No right-sized scenario keeps kills within {whatif['options']['tolerance']:.1%} of jobs, "
                 "so no level is recommended.")
    elif rec.get("nodes_recovered") is None:
        intro = f"Recommended level: {rec['scenario']} (the capacity search was not run)."
    else:
        usd = (rec.get("dollars") or {}).get(book) or {}
        intro = (f"Recommended: {rec['scenario']}, {rec['nodes_recovered']} of {nodes} nodes recoverable "
                 f"({rec['share_recovered']:.1%}), {usd.get('usd_per_month', 0):,.0f} USD a month at {book}, "
                 f"for {rec['kills_per_1000_jobs']:.1f} kills per 1,000 jobs.")
        if rec.get("nodes_recovered_p5") is not None:
            intro += (f" Over {whatif['shaken']['replicates']} shaken copies of the month: "
                      f"{rec['nodes_recovered_p5']:.0f}-{rec['nodes_recovered_p95']:.0f} nodes (5th-95th percentile).")
    trade = [[r["scenario"], r["nodes_recovered"], r["share_recovered"], r["kills_per_1000_jobs"],
              r["gpu_hours_lost"], "yes" if r["within_tolerance"] else "no"] for r in whatif.get("tradeoff", [])]
    cap = whatif.get("capacity") or {}
    scen = [[name, s["p95_wait_s"], s["mean_bounded_slowdown"], s["occupancy_cpus"], s["occupancy_gpus"],
             (cap.get(name) or {}).get("nodes_recovered")] for name, s in whatif["scenarios"].items()]
    f = whatif.get("fidelity") or {}
    tables = [
        {"caption": "Capacity recovered against failure cost, by risk level",
         "columns": ["scenario", "nodes recovered", "share", "kills per 1,000 jobs", "GPU-h lost", "within tolerance"],
         "rows": trade},
        {"caption": "Service and capacity per scenario (p95 wait in seconds)",
         "columns": ["scenario", "p95 wait s", "bounded slowdown", "CPU occ.", "GPU occ.", "nodes recovered"],
         "rows": scen},
        {"caption": "Fidelity: the replay of the requests as made against the logged schedule",
         "columns": ["figure", "simulated", "logged"],
         "rows": [["mean wait s", f.get("simulated_mean_wait_s"), f.get("logged_mean_wait_s")],
                  ["CPU occupancy", f.get("simulated_occupancy_cpus"), f.get("logged_occupancy_cpus")],
                  ["GPU occupancy", f.get("simulated_occupancy_gpus"), f.get("logged_occupancy_gpus")]]},
    ]
    return {"title": "Recoverable capacity", "intro": intro, "tables": tables}


TREND_COLUMNS = (("month", "month"), ("jobs", "jobs"), ("cost_usd_alloc", "allocated USD"),
                 ("cost_usd_idle", "idle USD"), ("cpu_efficiency", "CPU eff."), ("mem_efficiency", "memory eff."),
                 ("gpu_efficiency", "GPU eff."), ("whatif_nodes_recovered", "nodes recoverable"))


def trend_section(months) -> dict:
    """Month by month, as the monthly run stored them (``reclaim.duckdb`` of the monthly folder)."""
    cols = [k for k, _ in TREND_COLUMNS if k in months.columns]
    rows = [[None if (isinstance(v, float) and v != v) else v for v in row]
            for row in months[cols].itertuples(index=False, name=None)]
    return {"title": "Trend", "intro": f"The last {len(rows)} months audited, the latest last.",
            "tables": [{"caption": "Month by month", "columns": [dict(TREND_COLUMNS)[k] for k in cols], "rows": rows}]}
