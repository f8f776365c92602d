"""The ledger: every input line or record is used, folded into its job, quarantined, or structural.

Invariant per file: ``read == used + folded + quarantined`` where ``read`` counts data lines
(records), and ``structural`` (headers, comments, blank lines) is counted beside it.  A field set aside
while its record is still used (a corrupt jobstats summary) is counted in ``fields_quarantined``; the
quarantine holds ``quarantined + fields_quarantined`` rows.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

QUARANTINE_COLUMNS = ("file", "line", "field", "reason", "raw")


@dataclass
class FileLedger:
    """Counts for one input file."""

    file: str
    format: str
    read: int = 0
    used: int = 0
    folded: int = 0
    quarantined: int = 0
    structural: int = 0
    jobs_emitted: int = 0
    fields_quarantined: int = 0
    by_reason: Counter = field(default_factory=Counter)

    @property
    def balanced(self) -> bool:
        return self.read == self.used + self.folded + self.quarantined

    def to_dict(self) -> dict:
        return {
            "file": self.file,
            "format": self.format,
            "read": self.read,
            "used": self.used,
            "folded": self.folded,
            "quarantined": self.quarantined,
            "structural": self.structural,
            "jobs_emitted": self.jobs_emitted,
            "fields_quarantined": self.fields_quarantined,
            "quarantined_by_reason": dict(sorted(self.by_reason.items())),
            "balanced": self.balanced,
        }


@dataclass
class Quarantine:
    """Rows set aside, each with its file, 1-based line number, field and reason, and the raw text."""

    rows: list = field(default_factory=list)

    def add(self, file: str, line: int, field_name: str, reason: str, raw: str) -> None:
        self.rows.append((file, int(line), field_name, reason, raw))

    def extend(self, rows) -> None:
        self.rows.extend(rows)

    def __len__(self) -> int:
        return len(self.rows)

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(QUARANTINE_COLUMNS)
            w.writerows(self.rows)


def record_quarantine(ledger: FileLedger, quarantine: Quarantine, line: int, field_name: str, reason: str,
                      raw: str) -> None:
    """Quarantine one record and count it in the file's ledger under a short reason key."""
    quarantine.add(ledger.file, line, field_name, reason, raw)
    ledger.quarantined += 1
    ledger.by_reason[reason_key(field_name, reason)] += 1


def record_field_quarantine(ledger: FileLedger, quarantine: Quarantine, line: int, field_name: str, reason: str,
                            raw: str) -> None:
    """Set one field aside while its record is still used (the field's figures become unknown)."""
    quarantine.add(ledger.file, line, field_name, reason, raw)
    ledger.fields_quarantined += 1
    ledger.by_reason[reason_key(field_name, reason)] += 1


def reason_key(field_name: str, reason: str) -> str:
    """A short, stable key for the ledger's by-reason counts: the field and the reason's first clause."""
    head = reason.split(":")[0].strip()
    return f"{field_name}: {head}" if field_name else head


def ledger_dict(files: list[FileLedger]) -> dict:
    """The whole run's ledger as written to ``ledger.json``."""
    totals = Counter()
    for f in files:
        for k in ("read", "used", "folded", "quarantined", "structural", "jobs_emitted", "fields_quarantined"):
            totals[k] += getattr(f, k)
    return {
        "files": [f.to_dict() for f in files],
        "totals": dict(totals),
        "balanced": all(f.balanced for f in files),
    }


@dataclass
class ReadResult:
    """What every ``read_<source>()`` returns: canonical jobs, the file's ledger and its quarantined rows,
    where the format names them, the per-node placements of its jobs (:data:`audit.node_table.PLACEMENT_COLUMNS`),
    and where the file itself declares the machine, a cluster shape (a dict: an SWF header's ``MaxProcs`` is one
    pool of that many processors)."""

    jobs: object  # pandas.DataFrame in the canonical schema
    ledger: FileLedger
    quarantine: Quarantine
    placements: object = None  # pandas.DataFrame of audit.node_table.PLACEMENT_COLUMNS, or None
    cluster_shape: dict | None = None  # a shape the file declares (audit.cluster_shape), or None
