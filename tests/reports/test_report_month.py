"""The report of a generated month (the generator's cluster, telemetry and planted waste, with the what-if):
it renders whole, every font embedded, no text outside the page box, every number on page 1 and the findings
found in the run's files, and PNGs of pages 1-3 written beside the week's (``REPORT_ARTIFACTS``)."""

from __future__ import annotations

import pytest

from audit.config import ReportConfig
from audit.pipeline import audit
from audit.synthetic import generate

from .test_report_week import ARTIFACTS, check_layout, needs_poppler, numbers_not_found, pdf_pages

JOBS = 2_000


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    root = tmp_path_factory.mktemp("month-report")
    generate(root / "in", jobs=JOBS, days=28.0, seed=5, telemetry_interval_s=600)
    out = root / "run"
    audit([root / "in"], out, config=ReportConfig(client="Example Institute", risk=(0.5, 0.9)),
          whatif_options={"serial": True, "quiet": True})
    return out


@needs_poppler
def test_the_generated_month_renders_whole(month):
    pdf = month / "report.pdf"
    pages = check_layout(pdf, ARTIFACTS / "month")
    text = "\n".join(pdf_pages(pdf))
    for title in ("Executive summary", "Findings", "Where the capacity is", "Recoverable capacity",
                  "Right-sizing recommendations", "Methods", "Appendix: data quality", "Glossary"):
        assert title in text, title
    assert pages == len(pdf_pages(pdf)) - 1 >= 12  # pdftotext ends every page with a form feed
    assert (month / "whatif" / "summary.json").exists() and "<svg" in (month / "report.html").read_text()


@needs_poppler
def test_every_number_on_page_one_and_the_findings_is_in_the_outputs(month):
    assert numbers_not_found(month) == []
