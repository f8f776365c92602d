"""The report context: one plain dict that the templates read.

Every figure the report shows arrives already computed (``summary`` from accounting, ``ledger`` from
ingestion); this module only formats it for display — thousands separators, units, percentages, dates —
and arranges it into sections. Text that came from input files (paths, job names, users, raw lines)
is passed through as plain strings; the template escapes it.

Optional sections that later stages add (``dollars``, ``top_n``, ``failed_work``, ``predictions``,
``replay``) appear as keys only when their data is present; the template renders a section only when
its key exists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from .charts import efficiency_chart, efficiency_counts

UNKNOWN = "unknown"
NBSP = "\u00a0"
OPTIONAL_SECTIONS = ("dollars", "occupancy", "top_n", "failed_work", "predictions", "replay", "trend", "caveats")
RAW_DISPLAY_CHARS = 160
COST_VIEWS = {"cost_usd_alloc": "allocated", "cost_usd_used": "used", "cost_usd_idle": "idle"}
EFFICIENCY_LABELS = {"cpu_eff": "CPU", "mem_eff": "Memory", "time_eff": "Time"}


# --- number formatting -------------------------------------------------------------------------

def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_int(n) -> str:
    """``1234567`` → ``'1,234,567'``; ``None`` → ``'unknown'``."""
    if _missing(n):
        return UNKNOWN
    return f"{int(n):,}"


def fmt_number(x) -> str:
    """A quantity with precision that suits its size: ``123456.7`` → ``'123,457'``, ``12.34`` → ``'12.3'``,
    ``1.234`` → ``'1.23'``, ``0.004237`` → ``'0.00424'``."""
    if _missing(x):
        return UNKNOWN
    x = float(x)
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:,.1f}"
    if x == 0 or abs(x) >= 0.1:
        return f"{x:,.2f}"
    return f"{x:.3g}"  # small prices such as 0.00424 keep three significant digits


def fmt_quantity(x, unit: str) -> str:
    """A number with its unit, joined by a no-break space: ``(1234.5, 'core-h')`` → ``'1,234 core-h'``."""
    if _missing(x):
        return UNKNOWN
    return f"{fmt_number(x)}{NBSP}{unit}"


def fmt_pct(ratio) -> str:
    """A ratio as a percentage with one decimal: ``0.4567`` → ``'45.7%'``; ``None`` → ``'unknown'``."""
    if _missing(ratio):
        return UNKNOWN
    return f"{float(ratio) * 100:,.1f}%"


def fmt_usd(x) -> str:
    """Dollars: whole dollars from 1,000 up, cents below: ``12345.6`` → ``'$12,346'``, ``3.4`` → ``'$3.40'``."""
    if _missing(x):
        return UNKNOWN
    x = float(x)
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(x):,.0f}" if abs(x) >= 1000 else f"{sign}${abs(x):,.2f}"


def fmt_time(value) -> str:
    """An ISO timestamp (or datetime) as ``'2024-03-01 00:00 UTC'``; text that is not a timestamp is kept."""
    if _missing(value):
        return UNKNOWN
    try:
        t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    zone = t.tzname() or ""
    return f"{t:%Y-%m-%d %H:%M}" + (f" {zone}" if zone else "")


def iso_time(value) -> str:
    """An ISO 8601 timestamp for document metadata, or ``''`` when ``value`` is not a timestamp."""
    if _missing(value):
        return ""
    try:
        t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return ""
    return t.isoformat()


def fmt_cell(value) -> str:
    """One table cell: integers with separators, other numbers by size, booleans as yes/no, text as is."""
    if _missing(value):
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return fmt_int(value)
    if isinstance(value, float):
        return fmt_number(value)
    return str(value)


def _is_numeric(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shorten(text: str, limit: int = RAW_DISPLAY_CHARS) -> str:
    """Cut long raw text for display, marking the cut with an ellipsis."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- sections ----------------------------------------------------------------------------------

def cover_section(summary: Mapping, meta: Mapping) -> dict:
    return {
        "cluster": str(summary.get("cluster") or UNKNOWN),
        "period_start": fmt_time(summary.get("period_start")),
        "period_end": fmt_time(summary.get("period_end")),
        "jobs": fmt_int(summary.get("jobs")),
        "generated_at": fmt_time(meta.get("generated_at")),
        "generated_at_iso": iso_time(meta.get("generated_at")),
        "version": str(meta.get("version") or UNKNOWN),
    }


def _usage_jobs(summary: Mapping, key: str) -> str:
    return f"{fmt_int(summary.get(key))} of {fmt_int(summary.get('jobs'))}"


def headline_rows(summary: Mapping) -> list[dict]:
    """Allocated vs used per resource, with efficiency and how many jobs carried usage data."""
    spec = (
        ("CPU", "core-h", "core_hours_alloc", "core_hours_used", "used", "cpu_efficiency", "jobs_with_cpu_usage"),
        ("Memory", "GiB-h", "mem_gib_hours_alloc", "mem_gib_hours_peak", "peak", "mem_efficiency",
         "jobs_with_mem_usage"),
        ("GPU", "GPU-h", "gpu_hours_alloc", "gpu_hours_used", "used", "gpu_efficiency", "jobs_with_gpu_usage"),
    )
    return [
        {
            "resource": resource,
            "allocated": fmt_quantity(summary.get(alloc), unit),
            "used": fmt_quantity(summary.get(used), unit),
            "used_kind": "" if _missing(summary.get(used)) else kind,
            "efficiency": fmt_pct(summary.get(eff)),
            "jobs_with_data": _usage_jobs(summary, jobs_key),
        }
        for resource, unit, alloc, used, kind, eff, jobs_key in spec
    ]


def state_rows(states: Mapping | None) -> list[dict]:
    """Job counts by final state, largest first (ties by name, so the order is stable)."""
    items = sorted((states or {}).items(), key=lambda kv: (-int(kv[1]), str(kv[0])))
    return [{"state": str(state), "jobs": fmt_int(count)} for state, count in items]


def _file_row(f: Mapping) -> dict:
    return {
        "file": str(f.get("file", "")),
        "format": str(f.get("format", "")),
        **{k: fmt_int(f.get(k)) for k in ("read", "used", "folded", "quarantined", "structural", "jobs_emitted")},
        "balanced": bool(f.get("balanced")),
    }


def data_quality_section(ledger: Mapping) -> dict:
    """The appendix: per-file ledger rows, totals, quarantine reasons per file and a sample of raw lines."""
    files = ledger.get("files", [])
    totals = ledger.get("totals", {})
    reasons = [
        {"file": str(f.get("file", "")), "reason": str(reason), "count": fmt_int(count)}
        for f in files
        for reason, count in sorted(f.get("quarantined_by_reason", {}).items())
    ]
    sample = [
        {
            "file": str(q.get("file", "")),
            "line": fmt_int(q.get("line")),
            "field": str(q.get("field", "")),
            "reason": str(q.get("reason", "")),
            "raw": shorten(q.get("raw", "")),
        }
        for q in ledger.get("quarantine_sample", []) or []
    ]
    return {
        "files": [_file_row(f) for f in files],
        "totals": {k: fmt_int(totals.get(k, 0))
                   for k in ("read", "used", "folded", "quarantined", "structural", "jobs_emitted")},
        "balanced": bool(ledger.get("balanced")),
        "reasons": reasons,
        "sample": sample,
    }


def chart_section(efficiency) -> dict | None:
    """The efficiency chart and its caption figures (jobs with and without a value, and above 100%)."""
    if efficiency is None:
        return None
    counts = efficiency_counts(efficiency)
    return {
        "svg": efficiency_chart(efficiency),
        "counts": [
            {
                "metric": EFFICIENCY_LABELS.get(col, col),
                "known": fmt_int(c["known"]),
                "unknown": fmt_int(c["unknown"]),
                "overflow": fmt_int(c["overflow"]),
            }
            for col, c in counts.items()
        ],
    }


def table_block(title: str, tables: list[Mapping], intro: str = "") -> dict:
    """A generic section of captioned tables. Each table is ``{"caption", "columns", "rows"}`` with raw cell
    values; cells are formatted here and numeric columns are flagged so the template right-aligns them."""
    out = []
    for t in tables:
        rows = [list(r) for r in t.get("rows", [])]
        columns = [str(c) for c in t.get("columns", [])]
        numeric = [bool(rows) and all(_is_numeric(r[i]) or _missing(r[i]) for r in rows if i < len(r))
                   for i in range(len(columns))]
        out.append({
            "caption": str(t.get("caption", "")),
            "columns": columns,
            "numeric": numeric,
            "rows": [[fmt_cell(v) for v in r] for r in rows],
        })
    return {"title": str(title), "intro": str(intro), "tables": out}


def dollars_from_summary(summary: Mapping) -> dict | None:
    """The dollars section from summary keys ``cost_usd_*`` and ``price_book``, or None when absent."""
    keys = [k for k in sorted(summary) if k.startswith("cost_usd_")]
    if not keys:
        return None
    book = summary.get("price_book")
    intro = ""
    if isinstance(book, Mapping):
        intro = "Price book: " + ", ".join(str(book[k]) for k in ("name", "source", "date") if book.get(k))
    elif book:
        intro = f"Price book: {book}"
    rows = [[COST_VIEWS.get(k, k.removeprefix("cost_usd_").replace("_", " ")), fmt_usd(summary[k])] for k in keys]
    block = table_block("Dollars", [{"caption": "Cost of the period", "columns": ["view", "USD"], "rows": rows}],
                        intro)
    block["tables"][0]["numeric"] = [False, True]
    return block


def failed_work_from_summary(summary: Mapping) -> dict | None:
    """The failed-work section from ``failed_hours_by_state``, or None when absent."""
    by_state = summary.get("failed_hours_by_state")
    if not by_state:
        return None
    rows = [[str(state), float(hours)] for state, hours in sorted(by_state.items())]
    return table_block("Failed work", [{"caption": "Hours held by jobs that failed, by final state",
                                        "columns": ["state", "hours"], "rows": rows}])


def optional_sections(summary: Mapping, sections: Mapping | None) -> dict:
    """Optional sections present in this run: built from summary keys, then those passed in explicitly
    (``{name: {"title", "intro", "tables"}}``) override them. Unknown names are an error."""
    found = {"dollars": dollars_from_summary(summary), "failed_work": failed_work_from_summary(summary)}
    for name, block in (sections or {}).items():
        if name not in OPTIONAL_SECTIONS:
            raise ValueError(f"unknown report section {name!r}; expected one of {', '.join(OPTIONAL_SECTIONS)}")
        found[name] = table_block(block.get("title", name), block.get("tables", []), block.get("intro", ""))
    return {k: v for k, v in found.items() if v is not None}


# --- the one entry point -----------------------------------------------------------------------

def build_context(summary: dict, ledger: dict, efficiency, meta: dict, *, sections: Mapping | None = None) -> dict:
    """Everything the report template reads, as one plain dict.

    ``summary``: headline figures (see the module docs of the accounting stage); ``ledger``: what
    ``audit.ledger.ledger_dict`` returns, optionally with ``quarantine_sample``; ``efficiency``: a frame with
    columns ``cpu_eff``, ``mem_eff``, ``time_eff`` (or None for no chart); ``meta``: ``generated_at`` and
    ``version``; ``sections``: optional extra sections by name (see ``OPTIONAL_SECTIONS``).
    """
    cover = cover_section(summary, meta)
    context = {
        "title": f"Capacity audit — {cover['cluster']}",
        "cover": cover,
        "headline": headline_rows(summary),
        "states": state_rows(summary.get("states")),
        "data_quality": data_quality_section(ledger),
        **optional_sections(summary, sections),
    }
    chart = chart_section(efficiency)
    if chart is not None:
        context["efficiency_chart"] = chart
    return context
