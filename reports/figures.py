"""The report's charts beyond the efficiency histograms: occupancy against utilisation by day, the trade-off of
recovered capacity against kills, wait-time CDFs and the capacity search.  Each draws the figures it is given
(columns of ``occupancy_daily.csv``, keys of ``whatif/summary.json``) as inline SVG; none computes one."""

from __future__ import annotations

import io
import re

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, PercentFormatter

from .charts import SVG_RC, _strip_prolog

PALETTE = ("#2f5d8a", "#c0504d", "#9bbb59", "#8064a2", "#f79646", "#4bacc6", "#7f7f7f", "#a5a5a5")
GREY = "#8a8a8a"


def _svg(fig: Figure, prefix: str) -> str:
    """The figure as inline SVG, its element ids prefixed so that several charts share one HTML page."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return unique_ids(_strip_prolog(buf.getvalue()), prefix)


def unique_ids(svg: str, prefix: str) -> str:
    svg = re.sub(r'\bid="', f'id="{prefix}-', svg)
    svg = re.sub(r'xlink:href="#', f'xlink:href="#{prefix}-', svg)
    return re.sub(r"url\(#", f"url(#{prefix}-", svg)


def _style(ax) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)


def _hours(x, _pos=None) -> str:
    """An axis tick in seconds as people read a wait: ``30 s``, ``15 min``, ``2.5 h``, ``3 d``."""
    if x < 60:
        return f"{x:,.0f} s"
    if x < 3600:
        return f"{x / 60:,.0f} min"
    if x < 86400 * 2:
        h = x / 3600.0
        return f"{h:,.0f} h" if h >= 10 else f"{h:,.1f} h"
    return f"{x / 86400:,.1f} d"


def daily_chart(daily, accent: str = PALETTE[0]) -> str:
    """Per resource a panel: each partition's daily occupancy (solid) and utilisation of what it held (dashed)."""
    with matplotlib.rc_context(SVG_RC):
        fig = Figure(figsize=(7.2, 3.6))
        axes = fig.subplots(1, 2, sharey=True)
        for ax, (res, title) in zip(axes, (("cpu", "CPU partitions"), ("gpu", "GPU partitions")), strict=True):
            parts = daily[daily[f"{res}_occupancy"].notna()]
            for k, (part, g) in enumerate(parts.groupby("partition", sort=True)):
                colour = PALETTE[k % len(PALETTE)]
                label = part if res == "cpu" else f"{part} ({g['gpu_type'].iloc[0]})"
                x = list(range(len(g)))
                ax.plot(x, g[f"{res}_occupancy"].to_numpy(), color=colour, linewidth=1.4, label=label)
                ax.plot(x, g[f"{res}_utilisation"].to_numpy() * g[f"{res}_occupancy"].to_numpy(), color=colour,
                        linewidth=1.0, linestyle="--")
                days = g["day"].tolist()
                step = max(1, len(days) // 5)
                ax.set_xticks(x[::step], [d[5:] for d in days[::step]])
            ax.set_title(title, fontsize=9)
            ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
            ax.set_ylim(0, 1.05)
            _style(ax)
            if parts.empty:
                ax.text(0.5, 0.5, "no capacity known", transform=ax.transAxes, ha="center", color=GREY)
            else:
                ax.legend(fontsize=6.5, frameon=False, loc="upper left", ncol=2)
        axes[0].set_ylabel("share of the partition's capacity")
        fig.text(0.5, 0.01, "solid: allocated (occupancy); dashed: used (occupancy × utilisation), by day (MM-DD)",
                 ha="center", fontsize=7, color="#555555")
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        return _svg(fig, "daily")


def tradeoff_chart(rows: list[dict], recommended: str | None) -> str:
    """Nodes recovered against kills per 1,000 jobs, one point per right-sized scenario; the recommended ringed."""
    with matplotlib.rc_context(SVG_RC):
        fig = Figure(figsize=(7.0, 3.0))
        ax = fig.subplots()
        for k, mode in enumerate(sorted({r["mode"] for r in rows})):
            pts = sorted((r for r in rows if r["mode"] == mode and r["nodes_recovered"] is not None),
                         key=lambda r: r["kills_per_1000_jobs"])
            x = [r["kills_per_1000_jobs"] for r in pts]
            y = [r["nodes_recovered"] for r in pts]
            ax.plot(x, y, marker="o", markersize=4, color=PALETTE[k], label=mode, linewidth=1.2)
            for r in pts:
                tag = f"p{r['level'] * 100:g}" if r.get("level") is not None else str(r.get("predictor") or "")
                ax.annotate(tag, (r["kills_per_1000_jobs"], r["nodes_recovered"]),
                            textcoords="offset points", xytext=(4, 4), fontsize=6.5, color="#444444")
        rec = next((r for r in rows if r["scenario"] == recommended), None)
        if rec is not None and rec["nodes_recovered"] is not None:
            ax.scatter([rec["kills_per_1000_jobs"]], [rec["nodes_recovered"]], s=160, facecolors="none",
                       edgecolors="#c0504d", linewidths=1.6, zorder=5, label="recommended")
        ax.set_xlabel("kills per 1,000 jobs (failure cost)")
        ax.set_ylabel("nodes recovered")
        ax.yaxis.get_major_locator().set_params(integer=True)
        _style(ax)
        ax.legend(fontsize=7, frameon=False)
        fig.tight_layout()
        return _svg(fig, "tradeoff")


def wait_cdf_chart(curves: dict[str, list]) -> str:
    """Wait-time distributions (the 0th…100th percentiles of each scenario's wait) as CDFs."""
    with matplotlib.rc_context(SVG_RC):
        fig = Figure(figsize=(7.0, 2.8))
        ax = fig.subplots()
        for k, (name, pct) in enumerate(curves.items()):
            if not pct:
                continue
            y = [i / (len(pct) - 1) for i in range(len(pct))]
            ax.step([max(v, 1.0) for v in pct], y, where="post", color=PALETTE[k], label=name, linewidth=1.3)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_hours))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("wait (log scale)")
        ax.set_ylabel("share of jobs waiting at most")
        _style(ax)
        ax.legend(fontsize=7, frameon=False, loc="lower right")
        fig.tight_layout()
        return _svg(fig, "waits")


def capacity_chart(probes: dict[str, list], pool_names: dict) -> str:
    """Per pool: the p95 wait of each replay of the capacity search against the nodes it had; filled markers
    kept today's service, open ones missed it."""
    pools = sorted({r["pool"] for rows in probes.values() for r in rows}, key=lambda p: -1 if p is None else p)
    n = max(1, len(pools))
    with matplotlib.rc_context(SVG_RC):
        fig = Figure(figsize=(7.2, 2.6 if n <= 3 else 4.8))
        cols = min(n, 3)
        axes = fig.subplots((n + cols - 1) // cols, cols, squeeze=False).ravel()
        for ax, pool in zip(axes, pools, strict=False):
            for k, (name, rows) in enumerate(probes.items()):
                pts = sorted((r for r in rows if r["pool"] == pool), key=lambda r: r["nodes"])
                ax.plot([r["nodes"] for r in pts], [r["p95_wait_s"] for r in pts], color=PALETTE[k], linewidth=0.8,
                        label=name)
                for r in pts:
                    ax.plot([r["nodes"]], [r["p95_wait_s"]], marker="o", markersize=3.5, color=PALETTE[k],
                            markerfacecolor=PALETTE[k] if r["passed"] else "white")
            xs = sorted({r["nodes"] for rows in probes.values() for r in rows if r["pool"] == pool})
            if xs and len(xs) <= 8:
                ax.set_xticks(xs)
                ax.set_xlim(xs[0] - 0.5, xs[-1] + 0.5)
            ax.set_title(pool_names.get(pool, "cluster"), fontsize=8)
            ax.yaxis.set_major_formatter(FuncFormatter(_hours))
            ax.set_xlabel("nodes", fontsize=7)
            _style(ax)
        for ax in axes[len(pools):]:
            ax.set_visible(False)
        axes[0].set_ylabel("p95 wait")
        axes[0].legend(fontsize=6.5, frameon=False)
        fig.tight_layout()
        return _svg(fig, "capacity")


def gap_chart(bars: list[dict]) -> str:
    """The nodes between the oracle and the recommended level, by cause, as horizontal bars (top to bottom in
    the order given), each with its value as printed; a negative bar (the service rule may be) points left."""
    with matplotlib.rc_context(SVG_RC):
        fig = Figure(figsize=(7.0, 0.5 + 0.36 * max(1, len(bars))))
        ax = fig.subplots()
        y = list(range(len(bars)))[::-1]
        values = [0.0 if b["nodes"] is None else float(b["nodes"]) for b in bars]
        colours = [GREY if b["nodes"] is None else PALETTE[k % len(PALETTE)] for k, b in enumerate(bars)]
        ax.barh(y, values, height=0.6, color=colours)
        ax.set_yticks(y, [b["label"] for b in bars])
        span = max([abs(v) for v in values] + [1.0])
        for yy, v, b in zip(y, values, bars, strict=True):
            ax.annotate(b["text"], (v, yy), textcoords="offset points", xytext=(4 if v >= 0 else -4, 0),
                        ha="left" if v >= 0 else "right", va="center", fontsize=7, color="#444444")
        lo = min([0.0, *values])
        ax.set_xlim(lo - (0.15 * span if lo < 0 else 0.0), max([0.0, *values]) + 0.15 * span)
        ax.axvline(0.0, color="#1d1d1d", linewidth=0.6)
        ax.set_xlabel("nodes")
        _style(ax)
        ax.grid(False, axis="y")
        fig.tight_layout()
        return _svg(fig, "gap")
