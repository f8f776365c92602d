"""docs/glossary.md and the code name the same columns, caveat codes and summary keys."""

from __future__ import annotations

import re

import pandas as pd

from audit.accounting import headline
from audit.schema import CAVEATS, JOB_COLUMNS, empty_jobs

from .conftest import ROOT

GLOSSARY = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^## |\Z)", GLOSSARY, flags=re.S | re.M)
    assert m, f"no section {title!r} in docs/glossary.md"
    return m.group(1)


def _first_cells(text: str) -> list[str]:
    cells = re.findall(r"^\| `([^`]+)`", text, flags=re.M)
    return [c for c in cells]


def test_job_table_columns_match_schema():
    cols = _first_cells(_section("The canonical job table (`jobs.parquet`)").split("###")[0])
    assert cols == list(JOB_COLUMNS)


def test_caveat_codes_match_schema():
    assert set(_first_cells(_section("Caveat codes"))) == set(CAVEATS)


def test_summary_keys_documented():
    documented = set()
    for cell in re.findall(r"^\| (`[^|]+`) \|", _section("Headline figures (`summary.json`)"), flags=re.M):
        documented.update(re.findall(r"`([^`]+)`", cell))
    jobs = empty_jobs()
    assert set(headline(jobs)) == documented
    assert isinstance(headline(pd.concat([jobs])), dict)
