"""The one-screen text summary ``reclaim ingest`` prints."""

from __future__ import annotations

import pandas as pd

MAX_FILES = 15


def ingest_summary(result) -> str:
    jobs, ledger = result.jobs, result.ledger
    t = ledger["totals"]
    files = ledger["files"]
    lines = [f"store: {result.out}"]
    from .readers import READABLE

    accounting = [f for f in files if f["format"] in READABLE]
    for f in accounting[:MAX_FILES]:
        mark = "ok" if f["balanced"] else "UNBALANCED"
        lines.append(f"  {f['file']} [{f['format']}] read {f['read']:,} = used {f['used']:,} + folded "
                     f"{f['folded']:,} + quarantined {f['quarantined']:,} ({mark}); jobs {f['jobs_emitted']:,}")
    if len(accounting) > MAX_FILES:
        unbalanced = sum(not f["balanced"] for f in accounting[MAX_FILES:])
        lines.append(f"  … and {len(accounting) - MAX_FILES} more accounting files ({unbalanced} unbalanced)")
    others: dict = {}
    for f in files:
        if f["format"] not in READABLE:
            agg = others.setdefault(f["format"], {"files": 0, "read": 0, "quarantined": 0, "unbalanced": 0})
            agg["files"] += 1
            agg["read"] += f["read"]
            agg["quarantined"] += f["quarantined"]
            agg["unbalanced"] += not f["balanced"]
    for fmt, agg in sorted(others.items()):
        mark = "ok" if not agg["unbalanced"] else f"{agg['unbalanced']} UNBALANCED"
        lines.append(f"  {agg['files']} {fmt} files: read {agg['read']:,}, quarantined {agg['quarantined']:,} ({mark})")
    skipped = ledger.get("skipped_files", [])
    if skipped:
        lines.append(f"  {len(skipped)} files without accounting records skipped (listed in ledger.json)")
    lines.append(f"files: {len(files)}  jobs: {len(jobs):,}  quarantined lines: {t.get('quarantined', 0):,}"
                 + (f"  fields set aside: {t['fields_quarantined']:,}" if t.get("fields_quarantined") else ""))
    if len(jobs):
        start, end = jobs["submit_time"].min(), jobs["end_time"].max()
        known = not (pd.isna(start) or pd.isna(end))
        lines.append(f"span: {start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M} UTC" if known else "span: unknown")
    if t.get("quarantined") or t.get("fields_quarantined"):
        lines.append(f"see {result.out}/quarantine.csv for what was set aside (file, line, field, reason)")
    return "\n".join(lines)
