"""What ``reclaim whatif`` prints: the answer first, in the units operators use."""

from __future__ import annotations


def duration(seconds) -> str:
    """Seconds as Slurm writes a time: ``D-HH:MM:SS`` (``HH:MM:SS`` under a day)."""
    if seconds is None:
        return "n/a"
    s = int(round(float(seconds)))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def usd(x) -> str:
    return "n/a" if x is None else f"${x:,.0f}"


def whatif_text(summary: dict, folder=None) -> str:
    lines = []
    nodes = summary["cluster"]["nodes"]
    rec = summary.get("recommended")
    book = summary.get("price_book")
    if rec is None:
        lines.append(f"No right-sized scenario keeps kills within the tolerance "
                     f"({summary['options']['tolerance']:.1%} of jobs): nothing to recommend.")
    elif rec.get("nodes_recovered") is None:
        lines.append(f"Recommended: {rec['scenario']} (capacity not searched: run without --no-capacity-search).")
    else:
        d = (rec.get("dollars") or {}).get(book, {})
        span = ""
        if rec.get("nodes_recovered_p5") is not None:
            span = f" (5th-95th percentile over shaken inputs: {rec['nodes_recovered_p5']:.0f}-{rec['nodes_recovered_p95']:.0f}"
            if rec.get("nodes_recovered_mean") is not None:
                span += f"; {rec['nodes_recovered_mean']:.1f} on average with the month as it ran"
            span += ")"
        unit = (summary.get("cluster") or {}).get("unit") or "node"
        lines.append(f"Recommended: {rec['scenario']}: {rec['nodes_recovered']} of {nodes} {unit}s recoverable "
                     f"({rec['share_recovered']:.1%}){span}, {usd(d.get('usd_per_month'))}/month, "
                     f"{usd(d.get('usd_per_year'))}/year at {book}.")
    if rec is not None:
        lines.append(f"  Failure cost: {rec['kills_per_1000_jobs']:.1f} kills per 1,000 jobs "
                     f"({rec['kills_oom']} out of memory, {rec['kills_timeout']} time limit), "
                     f"{rec['gpu_hours_lost']:,.0f} GPU-h and {rec['core_hours_lost']:,.0f} core-h lost.")
    pol = summary.get("policies") or {}
    if pol:
        lines.append("")
        lines.append("Policies (requests as made): " + "; ".join(
            f"{name} p95 wait {duration(m['p95_wait_s'])}, slowdown {m['mean_bounded_slowdown']:.2f}"
            for name, m in pol.items()))
    lines.append("")
    lines.append(f"{'scenario':<28} {'p95 wait':>13} {'mean wait':>13} {'slowdown':>9} {'kills':>7} "
                 f"{'nodes back':>10}")
    for name, s in summary["scenarios"].items():
        cap = (summary.get("capacity") or {}).get(name) or {}
        back = cap.get("nodes_recovered")
        lines.append(f"{name:<28} {duration(s['p95_wait_s']):>13} {duration(s['mean_wait_s']):>13} "
                     f"{s['mean_bounded_slowdown']:>9.2f} {s['kills_oom'] + s['kills_timeout']:>7,} "
                     f"{'n/a' if back is None else back:>10}")
    f = summary.get("fidelity") or {}
    if f.get("logged_mean_wait_s") is not None:
        lines.append("")
        lines.append(f"Fidelity: simulated mean wait {duration(f['simulated_mean_wait_s'])} against "
                     f"{duration(f['logged_mean_wait_s'])} logged; CPU occupancy "
                     f"{f['simulated_occupancy_cpus']:.1%} against {f['logged_occupancy_cpus']:.1%}.")
    if folder is not None:
        lines.append(f"wrote {folder}/summary.json, scenarios.parquet, jobs.parquet, capacity.csv, tradeoff.csv")
    return "\n".join(lines)
