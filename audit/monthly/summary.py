"""The short monthly summary (``summary.md`` and ``monthly.json``): waste, dollars, recoverable capacity,
the change against last month, and the movers."""

from __future__ import annotations


def monthly_summary(month: str, figures: dict, previous: dict | None, previous_month: str | None,
                    movers: dict, cluster: str) -> dict:
    change = {}
    if previous:
        for k, v in figures.items():
            if isinstance(previous.get(k), float | int):
                change[k] = v - previous[k]
    return {"month": month, "cluster": cluster, "figures": figures, "previous_month": previous_month,
            "change": change, "movers": movers}


def _usd(x) -> str:
    return "n/a" if x is None else f"${x:,.0f}"


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _signed_usd(x) -> str:
    return "" if x is None else f" ({'+' if x >= 0 else '-'}${abs(x):,.0f} on last month)"


def markdown(s: dict) -> str:
    f, c = s["figures"], s["change"]
    lines = [f"# Reclaim monthly summary: {s['cluster']}, {s['month']}", ""]
    lines.append(f"- Jobs: {f.get('jobs', 0):,.0f}")
    lines.append(f"- Allocated: {_usd(f.get('cost_usd_alloc'))}{_signed_usd(c.get('cost_usd_alloc'))}; "
                 f"idle (allocated, not used): {_usd(f.get('cost_usd_idle'))}{_signed_usd(c.get('cost_usd_idle'))}")
    lines.append(f"- Efficiency: CPU {_pct(f.get('cpu_efficiency'))}, memory {_pct(f.get('mem_efficiency'))}, "
                 f"GPU {_pct(f.get('gpu_efficiency'))}")
    if "whatif_nodes_recovered" in f:
        lines.append(f"- Recoverable at the recommended level: {f['whatif_nodes_recovered']:.0f} nodes "
                     f"({_pct(f.get('whatif_share_recovered'))}), {_usd(f.get('whatif_usd_per_month'))} a month")
    else:
        lines.append("- Recoverable capacity: not measured this month (no what-if)")
    if s["previous_month"] is None:
        lines += ["", "First month on record: no change to report yet."]
    else:
        lines += ["", f"## Movers since {s['previous_month']} (idle cost)"]
        for level, m in s["movers"].items():
            rose = ", ".join(f"{r['name']} +${r['change']:,.0f}" for r in m["rose"]) or "none"
            fell = ", ".join(f"{r['name']} -${-r['change']:,.0f}" for r in m["fell"]) or "none"
            lines.append(f"- {level.capitalize()}s, rose most: {rose}")
            lines.append(f"- {level.capitalize()}s, fell most: {fell}")
    return "\n".join(lines) + "\n"
