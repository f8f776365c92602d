"""The report of a run folder: one context from its files, the charts, ``report.html`` and ``report.pdf`` from
that same context, every table as CSV under ``tables/``, and the per-user notices under ``notices/``.

Every number comes from ``summary.json``, ``whatif/summary.json`` or a file the stages wrote; this package
formats and arranges them and computes none.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

from .charts import efficiency_chart
from .figures import capacity_chart, daily_chart, gap_chart, tradeoff_chart, unique_ids, wait_cdf_chart
from .formats import Formatter
from .glossary import TERMS
from .notices import write_notices
from .run import Run, read_run
from .sections import (
    accounts,
    capacity,
    executive,
    findings,
    gap_bars,
    methods,
    quality,
    recommendations,
    recoverable,
    scenario_label,
    trend,
)
from .tables import shown, write_tables

TITLES = {"summary": "Executive summary", "findings": "Findings", "capacity": "Where the capacity is",
          "recoverable": "Recoverable capacity", "recommendations": "Right-sizing recommendations",
          "accounts": "Accounts", "trend": "Trend", "methods": "Methods", "quality": "Appendix: data quality", "glossary": "Glossary"}


def _logo(path) -> str | None:
    if path is None:
        return None
    mime = mimetypes.guess_type(str(path))[0] or "image/png"
    return f"data:{mime};base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _charts(run: Run, cfg) -> dict:
    out = {}
    daily = run.frame("daily")
    if daily is not None and not daily.empty:
        out["daily"] = daily_chart(daily, cfg.accent)
    if run.efficiency is not None and len(run.efficiency):
        out["efficiency"] = unique_ids(efficiency_chart(run.efficiency), "efficiency")
    w = run.whatif
    if w is not None:
        rec = (w.get("recommended") or {}).get("scenario")
        if w.get("tradeoff"):
            out["tradeoff"] = tradeoff_chart(w["tradeoff"], rec)
        scen = w.get("scenarios") or {}
        picks = ["actual"] + ([rec] if rec else []) + (["oracle"] if "oracle" in scen else [])
        curves = {scenario_label(n, scen.get(n)): scen[n].get("wait_percentiles_s") or [] for n in picks if n in scen}
        if any(curves.values()):
            out["waits"] = wait_cdf_chart(curves)
        probes = w.get("capacity_probes") or {}
        shown_probes = {scenario_label(n, scen.get(n)): probes[n] for n in picks if n in probes and probes[n]}
        if shown_probes:
            pools = {k: " + ".join(p) for k, p in enumerate((w.get("cluster") or {}).get("pools") or [])}
            out["capacity"] = capacity_chart(shown_probes, pools)
        if w.get("gap") and w["gap"].get("by_cause"):
            out["gap"] = gap_chart(gap_bars(w["gap"], Formatter(cfg.locale, cfg.currency_symbol)))
    return out


def build_context(run: Run, cfg, meta: dict) -> tuple[dict, list[dict]]:
    """``(context, tables)``: what the template reads, and every table it shows (raw, for ``tables/``)."""
    fmt = Formatter(cfg.locale, cfg.currency_symbol)
    s = run.summary
    pages = set(cfg.pages)
    tables: list[dict] = []
    ctx: dict = {"pages": [p for p in cfg.pages], "titles": TITLES, "accent": cfg.accent,
                 "cover": {"client": cfg.client, "prepared_by": cfg.prepared_by, "logo": _logo(cfg.logo),
                           "cluster": str(s.get("cluster") or "unknown"),
                           "period_start": str(s.get("period_start") or "")[:10],
                           "period_end": str(s.get("period_end") or "")[:10], "jobs": fmt.int(s.get("jobs")),
                           "generated_at": str(meta.get("generated_at") or ""), "version": str(meta.get("version", "")),
                           "currency": cfg.currency, "anonymised": cfg.anonymise}}
    ctx["title"] = f"Capacity audit — {ctx['cover']['client'] or ctx['cover']['cluster']}"

    def add(*ts):
        tables.extend(ts)
        return [shown(t, fmt) for t in ts]

    ex = executive(run, cfg, fmt)
    ex["table"] = add(ex["table"])[0]
    ctx["summary"] = ex
    if "findings" in pages:
        f = findings(run, fmt)
        ctx["findings"] = {**f, "table": add(f["table"])[0], "by_cause": add(f["by_cause"])[0],
                           "thresholds": add(f["thresholds"])[0]}
    if "capacity" in pages:
        c = capacity(run, cfg, fmt)
        ctx["capacity"] = {**c, "tables": add(*c["tables"])}
    if "recoverable" in pages and run.whatif is not None:
        r = recoverable(run.whatif, fmt)
        ctx["recoverable"] = {**r, "tables": add(*r["tables"])}
        if r["gap"]:
            ctx["recoverable"]["gap"] = {**r["gap"], "tables": add(*r["gap"]["tables"])}
    if "recommendations" in pages:
        rec = recommendations(run, cfg)
        if rec is not None:
            ctx["recommendations"] = {**rec, "tables": add(*rec["tables"])}
    if "accounts" in pages:
        ctx["accounts"] = [{"name": a["name"], "tables": add(*a["tables"])} for a in accounts(run, cfg)]
    if "trend" in pages:
        t = trend(run)
        if t is not None:
            ctx["trend"] = {**t, "tables": add(*t["tables"])}
    if "methods" in pages:
        m = methods(run, fmt)
        ctx["methods"] = {**m, "tables": add(*m["tables"])}
    if "quality" in pages:
        q = quality(run, fmt)
        ctx["quality"] = {**q, "tables": add(*q["tables"])}
    if "glossary" in pages:
        ctx["glossary"] = [{"term": t, "meaning": m} for t, m in TERMS]
    ctx["charts"] = _charts(run, cfg)
    ctx["has_whatif"] = run.whatif is not None
    return ctx, tables


def write_report(folder, cfg, meta: dict) -> dict[str, Path]:
    """Read the run folder, write ``tables/``, ``notices/``, ``report.html`` and ``report.pdf`` into it."""
    from .render import html_to_pdf, render_html

    folder = Path(folder)
    run = read_run(folder)
    ctx, tables = build_context(run, cfg, meta)
    write_tables(tables, folder / "tables")
    fmt = Formatter(cfg.locale, cfg.currency_symbol)
    write_notices(run.frame("recommendations"), folder / "notices", fmt, ctx["cover"]["cluster"], cfg.prepared_by)
    html = render_html(ctx)
    (folder / "report.html").write_text(html, encoding="utf-8")
    pdf = html_to_pdf(html, folder / "report.pdf", created=ctx["cover"]["generated_at"] or None)
    return {"html": folder / "report.html", "pdf": pdf, "tables": folder / "tables"}
