"""Stable salted pseudonyms for users and accounts, applied to the tables before anything is written.

A user becomes ``user-`` and an account ``acct-`` followed by the first 10 hex digits of
SHA-256(salt, kind, name): the same name gets the same pseudonym in every month audited with the same salt,
and nobody without the salt can tell the name from the pseudonym.  An account path ``org/team/project`` is
pseudonymised part by part, so its hierarchy still rolls up.  Free text that may carry a name (job names,
quarantined raw lines, Kubernetes pod and namespace labels) has every occurrence of a known user or account
name replaced by its pseudonym.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import pandas as pd

NAME_COLUMNS = {"user": "user", "account": "acct"}
TEXT_COLUMNS = ("job_name", "job_id_raw")


@dataclass
class Pseudonyms:
    salt: str
    known: dict = field(default_factory=dict)

    def one(self, kind: str, name) -> str:
        if name is None or (isinstance(name, float) and name != name) or name is pd.NA:
            return name
        name = str(name)
        if name == "":
            return name
        key = (kind, name)
        if key not in self.known:
            digest = hashlib.sha256(f"{self.salt}\x00{kind}\x00{name}".encode()).hexdigest()[:10]
            self.known[key] = f"{kind}-{digest}"
        return self.known[key]

    def account(self, path) -> str:
        if path is None or path is pd.NA or (isinstance(path, float) and path != path) or str(path) == "":
            return path
        return "/".join(self.one("acct", part) for part in str(path).split("/"))

    def column(self, values: pd.Series, kind: str) -> pd.Series:
        uniques = pd.unique(values.dropna().astype(str))
        fn = self.account if kind == "acct" else (lambda v: self.one(kind, v))
        mapping = {u: fn(u) for u in uniques}
        return values.map(lambda v: mapping.get(str(v), v) if v is not None and not pd.isna(v) else v).astype(values.dtype)

    def _pattern(self):
        names = sorted({n for (_, n) in self.known} | {p for (k, n) in self.known if k == "acct" for p in n.split("/")},
                       key=len, reverse=True)
        names = [n for n in names if n]
        if not names:
            return None, {}
        table = {}
        for (_kind, name), pseudo in self.known.items():
            table.setdefault(name, pseudo)
        return re.compile("|".join(re.escape(n) for n in names)), table

    def scrub(self, text):
        """``text`` with every known user or account name replaced by its pseudonym."""
        if text is None or (isinstance(text, float) and text != text) or text is pd.NA:
            return text
        pattern, table = getattr(self, "_compiled", (None, {}))
        if pattern is None:
            return text
        return pattern.sub(lambda m: table[m.group(0)], str(text))

    def freeze(self) -> None:
        """Compile the replacement of every name seen so far (call once the name columns are mapped)."""
        self._compiled = self._pattern()


def anonymise_jobs(jobs: pd.DataFrame, p: Pseudonyms) -> pd.DataFrame:
    """The job table with users and accounts pseudonymised, and names scrubbed from its free text."""
    out = jobs.copy()
    for col, kind in NAME_COLUMNS.items():
        if col in out:
            out[col] = p.column(out[col], kind)
    p.freeze()
    for col in TEXT_COLUMNS:
        if col in out:
            out[col] = out[col].map(p.scrub).astype(jobs[col].dtype)
    return out


def anonymise_quarantine(rows: list, p: Pseudonyms) -> list:
    """Quarantined rows ``(file, line, field, reason, raw)`` with names scrubbed from the reason and raw text."""
    return [(f, line, fld, p.scrub(reason), p.scrub(raw)) for f, line, fld, reason, raw in rows]


def anonymise_frame(frame: pd.DataFrame | None, p: Pseudonyms, columns=("namespace", "pod", "job_label")):
    """A telemetry-like frame with names scrubbed from its label columns (None stays None)."""
    if frame is None:
        return None
    out = frame.copy()
    for col in columns:
        if col in out and out[col].notna().any():
            out[col] = out[col].map(p.scrub)
    return out


def anonymise_parquet(path, p: Pseudonyms, columns=("namespace", "pod", "job_label")) -> None:
    """Rewrite a Parquet file in place with names scrubbed from its label columns (left alone when they are empty)."""
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        return
    schema = pq.read_schema(path)
    present = [c for c in columns if c in schema.names]
    if not present:
        return
    table = pq.read_table(path)
    changed = False
    for col in present:
        arr = table[col]
        if arr.null_count == len(arr):
            continue
        values = [p.scrub(v) for v in arr.to_pylist()]
        table = table.set_column(table.schema.get_field_index(col), col, pa.array(values, type=arr.type))
        changed = True
    if changed:
        pq.write_table(table, path)
