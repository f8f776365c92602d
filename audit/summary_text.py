"""The one-screen text summary ``reclaim ingest`` prints."""

from __future__ import annotations


def ingest_summary(result) -> str:
    jobs, ledger = result.jobs, result.ledger
    t = ledger["totals"]
    lines = [f"store: {result.out}"]
    for f in ledger["files"]:
        mark = "ok" if f["balanced"] else "UNBALANCED"
        lines.append(f"  {f['file']} [{f['format']}] read {f['read']:,} = used {f['used']:,} + folded "
                     f"{f['folded']:,} + quarantined {f['quarantined']:,} ({mark}); jobs {f['jobs_emitted']:,}")
    for s in ledger.get("skipped_files", []):
        lines.append(f"  {s['file']} skipped (detected {s['detected']}: no accounting records)")
    lines.append(f"files: {len(ledger['files'])}  jobs: {len(jobs):,}  quarantined lines: {t.get('quarantined', 0):,}")
    if len(jobs):
        start = jobs["submit_time"].min()
        end = jobs["end_time"].max()
        lines.append(f"span: {start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M} UTC" if start is not None and end is not None
                     and str(start) != "NaT" and str(end) != "NaT" else "span: unknown")
    if t.get("quarantined"):
        lines.append(f"see {result.out}/quarantine.csv for the quarantined lines (file, line, field, reason)")
    return "\n".join(lines)
