"""The report of the sample week, read back from its PDF: every number printed on page 1 and on the findings
pages is found in summary.json, whatif/summary.json or a CSV of the run, formatted as the page shows it;
fonts embedded, no text outside the page box, the what-if absent when it did not run, and PNGs of pages
1-3 written for a look (``REPORT_ARTIFACTS``, default ``out/report-check/``)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from audit.config import ReportConfig
from audit.pipeline import audit
from reports.formats import Formatter

from ..conftest import LACKS

ROOT = Path(__file__).resolve().parents[2]
WEEK = ROOT / "sample_traces" / "week"
ARTIFACTS = Path(os.environ.get("REPORT_ARTIFACTS", ROOT / "out" / "report-check"))
POPPLER = all(shutil.which(t) for t in ("pdftotext", "pdffonts", "pdftoppm"))
needs_poppler = pytest.mark.skipif(not POPPLER, reason=f"{LACKS}poppler-utils (pdftotext, pdffonts, pdftoppm)")
NUMBER = re.compile(r"[$]?\d[\d,]*(?:\.\d+)?(?:%|G)?|\d+-\d\d:\d\d:\d\d|\d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    out = tmp_path_factory.mktemp("week-report")
    cfg = ReportConfig(client="Example University", risk=(0.9,), top_accounts=2, anonymise=True,
                       salt="week-test-salt")
    audit([WEEK], out, config=cfg, whatif_options={"serial": True, "quiet": True})
    return out


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    out = tmp_path_factory.mktemp("week-bare")
    audit([WEEK], out, whatif=False)
    return out


def pdf_pages(pdf: Path) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                          text=True).stdout
    return text.replace("\u00a0", " ").replace("\u202f", " ").split("\f")


def values_of(obj, out: list) -> list:
    """Every number in a JSON document."""
    if isinstance(obj, dict):
        for v in obj.values():
            values_of(v, out)
    elif isinstance(obj, list):
        for v in obj:
            values_of(v, out)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out.append(obj)
    return out


def known_strings(run: Path) -> set[str]:
    """Every number of the run's JSON and CSV files, in each way the report formats numbers."""
    nums = values_of(json.loads((run / "summary.json").read_text()), [])
    if (run / "whatif" / "summary.json").exists():
        nums += values_of(json.loads((run / "whatif" / "summary.json").read_text()), [])
    for path in run.rglob("*.csv"):
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                for cell in row:
                    try:
                        nums.append(float(cell))
                    except ValueError:
                        pass
    f = Formatter()
    out = set()
    for x in nums:
        for fn in (f.int, f.number, f.pct, f.money, f.duration, f.gib, f.nodes):
            text = fn(x).replace("\u00a0", " ")
            out.update((text, text.lstrip("-")))  # NUMBER reads no sign
    return out


def test_files_of_the_run(week):
    for name in ("report.pdf", "report.html", "summary.json", "findings.csv", "recommendations.csv",
                 "predictions.parquet", "whatif/summary.json", "tables/executive_summary.csv", "tables/findings.csv"):
        assert (week / name).exists(), name
    notices = list((week / "notices").glob("*.txt"))
    assert notices and all("--" in p.read_text() for p in notices)


def numbers_not_found(run: Path) -> list[str]:
    """The numbers printed on page 1 and the findings pages that no JSON or CSV file of ``run`` holds."""
    pages = pdf_pages(run / "report.pdf")
    known = known_strings(run)
    findings = [p for p in pages if "Findings (Job Defense Shield" in p or "Failed work by cause" in p]
    assert findings
    missing = []
    for page in [pages[0], *findings]:
        body = "\n".join(line for line in page.splitlines() if not re.search(r"Page \d+ of \d+", line))
        body = re.sub(r"\d{4}-\d\d-\d\d", "", body)  # the period's dates
        body = re.sub(r"tables/\S+|[pP]\d\d\b|\d+th\b|1,000 jobs|\b8,766\b", "", body)  # labels, ordinals, constants
        for token in NUMBER.findall(body):
            token = token.rstrip(".,")
            if token not in known:
                missing.append(token)
    return missing


@needs_poppler
def test_every_number_on_page_one_and_the_findings_is_in_the_outputs(week):
    assert numbers_not_found(week) == []


@needs_poppler
def test_page_one_says_what_it_claims(week):
    first = pdf_pages(week / "report.pdf")[0]
    s = json.loads((week / "summary.json").read_text())
    f = Formatter()
    assert f.pct(s["waste_share"]) in first and f.money(s["cost_usd_idle_per_month"]) in first
    assert "Executive summary" in first and "The decision this supports" in first


def check_layout(pdf: Path, png_prefix: Path) -> int:
    """Every font embedded, every word inside its page box, pages 1-3 written as ``PREFIX-N.png``; the page count."""
    fonts = subprocess.run(["pdffonts", str(pdf)], check=True, capture_output=True, text=True).stdout.splitlines()[2:]
    assert fonts and all(line.split()[-5] == "yes" for line in fonts), fonts  # the "emb" column
    bbox = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    pages = re.findall(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', bbox, flags=re.S)
    for w, h, body in pages:
        for x0, y0, x1, y1 in re.findall(r'xMin="([\d.-]+)" yMin="([\d.-]+)" xMax="([\d.-]+)" yMax="([\d.-]+)"', body):
            assert 0 <= float(x0) and float(x1) <= float(w) + 0.5 and 0 <= float(y0) and float(y1) <= float(h) + 0.5
    png_prefix.parent.mkdir(parents=True, exist_ok=True)
    for old in png_prefix.parent.glob(f"{png_prefix.name}-*.png"):
        old.unlink()
    subprocess.run(["pdftoppm", "-r", "70", "-f", "1", "-l", "3", "-png", str(pdf), str(png_prefix)], check=True)
    assert len(list(png_prefix.parent.glob(f"{png_prefix.name}-*.png"))) == 3
    return len(pages)


@needs_poppler
def test_fonts_embedded_text_inside_the_page_and_pictures(week):
    assert check_layout(week / "report.pdf", ARTIFACTS / "week") >= 10


@needs_poppler
def test_without_the_whatif_the_section_says_so(bare):
    text = "\n".join(pdf_pages(bare / "report.pdf"))
    assert "not measured" in text and "the what-if did not run" in text.lower()
    assert not (bare / "whatif").exists()


def test_html_and_pdf_come_from_one_context(week):
    html = (week / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html and "Recoverable capacity" in html and "Example University" in html
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?\s*https?:|url\(\s*[\"']?https?:", html)


def originals() -> set[str]:
    """Every user and account name of the week's sacct text (the Account, Group and User fields)."""
    with open(WEEK / "sacct.txt", encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("|")
        cols = [head.index(c) for c in ("Account", "User")]
        return {f for line in fh for i, f in enumerate(line.rstrip("\n").split("|")) if i in cols and f}


def test_anonymised_outputs_hold_no_original_name(week):
    import duckdb
    import pyarrow.parquet as pq

    names = originals()
    assert len(names) > 10
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)).encode())
    hits = []
    for path in week.rglob("*"):
        if not path.is_file():
            continue
        if pattern.search(path.read_bytes()):
            hits.append(str(path.relative_to(week)))
        if path.suffix == ".parquet":  # compressed: read the strings back
            table = pq.read_table(path)
            for col in table.column_names:
                if str(table.schema.field(col).type) in ("string", "large_string"):
                    if names & set(v for v in table[col].to_pylist() if v):
                        hits.append(f"{path.name}:{col}")
    con = duckdb.connect(str(week / "reclaim.duckdb"), read_only=True)
    for (tbl,) in con.execute("select table_name from information_schema.tables").fetchall():
        for (col,) in con.execute("select column_name from information_schema.columns where table_name = ? and "
                                  "data_type = 'VARCHAR'", [tbl]).fetchall():
            got = {r[0] for r in con.execute(f'select distinct "{col}" from "{tbl}"').fetchall()}
            if names & got:
                hits.append(f"reclaim.duckdb:{tbl}.{col}")
    assert hits == []
    notices = [p.stem for p in (week / "notices").glob("*.txt")]
    assert notices and all(n.startswith("user-") for n in notices)
