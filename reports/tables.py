"""The report's tables: each shown with its columns' kinds, and written as it is shown (raw values) to
``tables/NAME.csv``, so every number on the page can be found in a file."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from .formats import Formatter

NUMERIC = ("int", "num", "pct", "usd", "dur", "gib", "qty", "nodes")


def plain(v):
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def table(name: str, caption: str, columns: list[tuple[str, str]], rows: list[list], note: str = "",
          cls: str = "") -> dict:
    """``columns``: ``(label, kind)``; ``rows``: raw values (kinds in ``formats.Formatter.cell``); ``cls``: a
    class of the stylesheet for the table (``wrap-head``: headers that may wrap)."""
    return {"name": name, "caption": caption, "columns": columns, "rows": [[plain(v) for v in r] for r in rows],
            "note": note, "cls": cls}


def shown(t: dict, fmt: Formatter) -> dict:
    """The table as the template reads it: labels, right-aligned numeric columns, formatted cells."""
    kinds = [k for _, k in t["columns"]]
    return {"name": t["name"], "caption": t["caption"], "note": t.get("note", ""), "cls": t.get("cls", ""),
            "columns": [c for c, _ in t["columns"]], "numeric": [k in NUMERIC for k in kinds],
            "rows": [[fmt.cell(v, k) for v, k in zip(r, kinds, strict=True)] for r in t["rows"]]}


def write_tables(tables: list[dict], folder: Path) -> list[Path]:
    """``folder/NAME.csv`` for every table, and nothing else there (an earlier run's tables are removed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.csv"):
        old.unlink()
    written = []
    for t in tables:
        path = folder / f"{t['name']}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow([c for c, _ in t["columns"]])
            w.writerows([["" if v is None else v for v in r] for r in t["rows"]])
        written.append(path)
    return written
