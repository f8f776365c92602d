"""``reclaim audit``: ingest → accounting → report, written into one run folder."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from . import __version__
from .accounting import headline
from .efficiency import efficiency
from .ingest import IngestResult, ingest

QUARANTINE_SAMPLE = 20


@dataclass
class AuditResult:
    ingest: IngestResult
    summary: dict
    report_pdf: Path
    report_html: Path


def generated_at() -> str:
    """Now in UTC, or ``SOURCE_DATE_EPOCH`` when set (for byte-identical reruns)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    now = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return now.replace(microsecond=0).isoformat()


def audit(paths, out, *, cluster: str | None = None, fmt: str = "auto", timezone: str = "UTC") -> AuditResult:
    """Run the whole audit on the inputs and write the run folder ``out``."""
    from reports.context import build_context
    from reports.render import render_report

    out = Path(out)
    ing = ingest(paths, out, cluster=cluster, fmt=fmt, timezone=timezone)
    summary = headline(ing.jobs)
    eff = efficiency(ing.jobs)
    eff.to_parquet(out / "efficiency.parquet", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    ledger = dict(ing.ledger)
    ledger["quarantine_sample"] = [
        dict(zip(("file", "line", "field", "reason", "raw"), row, strict=True)) for row in ing.quarantine.rows[:QUARANTINE_SAMPLE]
    ]
    context = build_context(summary, ledger, eff, {"generated_at": generated_at(), "version": __version__})
    written = render_report(context, out)
    return AuditResult(ingest=ing, summary=summary, report_pdf=written["pdf"], report_html=written["html"])
