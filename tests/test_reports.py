"""The report stage: formatting, the efficiency chart, HTML/PDF rendering, escaping and the no-network rule.

Every expected figure below is worked out by hand from the inputs built in this file.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reports import charts, context, render
from reports.context import NBSP, build_context
from reports.render import LocalOnlyFetcher, URLRefused, render_report, url_allowed

HOSTILE = '<img src="http://example.invalid/x.png"><script>alert(1)</script>'


# --- hand-built inputs -------------------------------------------------------------------------

def make_summary(**extra) -> dict:
    summary = {
        "cluster": "phillips",
        "period_start": "2024-03-01T00:00:00+00:00",
        "period_end": "2024-03-31T23:59:59+00:00",
        "jobs": 122_000,
        "states": {"COMPLETED": 100_000, "FAILED": 12_000, "TIMEOUT": 5_000, "OUT_OF_MEMORY": 3_000,
                   "CANCELLED": 2_000},
        "core_hours_alloc": 1_234_567.8,
        "core_hours_used": 456_789.1,
        "mem_gib_hours_alloc": 9_876_543.2,
        "mem_gib_hours_peak": 1_234_567.0,
        "gpu_hours_alloc": 54.321,
        "gpu_hours_used": 12.34,
        "cpu_efficiency": 0.37,
        "mem_efficiency": 0.125,
        "gpu_efficiency": None,
        "jobs_with_cpu_usage": 118_000,
        "jobs_with_mem_usage": 110_000,
        "jobs_with_gpu_usage": 0,
    }
    summary.update(extra)
    return summary


def make_ledger(balanced: bool = True) -> dict:
    good = {"file": "/data/sacct/2024-03.log", "format": "sacct", "read": 400_000, "used": 121_990,
            "folded": 278_000, "quarantined": 10, "structural": 1, "jobs_emitted": 121_990,
            "quarantined_by_reason": {"Elapsed: bad duration": 7, "ReqMem: unknown unit": 3}, "balanced": True}
    odd = {"file": f"/data/{HOSTILE}.swf", "format": "swf", "read": 10, "used": 10 if balanced else 9,
           "folded": 0, "quarantined": 0, "structural": 5, "jobs_emitted": 10, "quarantined_by_reason": {},
           "balanced": balanced}
    return {
        "files": [good, odd],
        "totals": {"read": 400_010, "used": 122_000, "folded": 278_000, "quarantined": 10, "structural": 6,
                   "jobs_emitted": 122_000},
        "balanced": balanced,
        "quarantine_sample": [
            {"file": "/data/sacct/2024-03.log", "line": 17, "field": "JobName", "reason": "bad duration",
             "raw": f"123|{HOSTILE}|alice|" + "x" * 400},
        ],
    }


# cpu_eff by hand: [0,0.1) 0.05 → 1; [0.1,0.2) 0.15, 0.15 → 2; [0.9,1.0] 0.95, 1.0 → 2;
# above 1: 1.5 and ∞ → 2; NaN → 1 unknown; 7 known.
CPU = [0.05, 0.15, 0.15, 0.95, 1.0, 1.5, np.inf, np.nan]
MEM = [np.nan, np.nan, np.nan, 0.5, np.nan, np.nan, np.nan, 2.0]
TIME = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]


def make_efficiency() -> pd.DataFrame:
    return pd.DataFrame({"cpu_eff": CPU, "mem_eff": MEM, "time_eff": TIME})


META = {"generated_at": "2026-11-30T14:00:00+00:00", "version": "0.1.0"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """One full render with hostile text in the cluster name, a file path, a raw line and a top-N cell."""
    out = tmp_path_factory.mktemp("report")
    top = {"top_n": {"title": "Top users by idle GPU-hours",
                     "tables": [{"caption": "Idle GPU-hours", "columns": ["user", "job name", "GPU-h"],
                                 "rows": [["alice", HOSTILE, 1234.5], ["bob", "train", 7]]}]}}
    ctx = build_context(make_summary(cluster=f"phillips {HOSTILE}"), make_ledger(), make_efficiency(), META,
                        sections=top)
    paths = render_report(ctx, out)
    return paths, paths["html"].read_text(encoding="utf-8")


# --- formatting --------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    (1_234_567, "1,234,567"), (0, "0"), (None, "unknown"), (np.int64(5000), "5,000"),
])
def test_fmt_int(value, expected):
    assert context.fmt_int(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (123_456.7, "123,457"), (100.0, "100"), (12.34, "12.3"), (1.234, "1.23"), (0.0, "0.00"),
    (-1234.5, "-1,234"), (float("nan"), "unknown"), (float("inf"), "∞"),
])
def test_fmt_number_precision_follows_size(value, expected):
    assert context.fmt_number(value) == expected


def test_fmt_units_percentages_dollars_and_times():
    assert context.fmt_quantity(1_234_567.8, "core-h") == f"1,234,568{NBSP}core-h"
    assert context.fmt_quantity(None, "core-h") == "unknown"
    assert context.fmt_pct(0.4567) == "45.7%"
    assert context.fmt_pct(1.25) == "125.0%"
    assert context.fmt_pct(None) == "unknown"
    assert context.fmt_usd(12_345.6) == "$12,346"
    assert context.fmt_usd(3.4) == "$3.40"
    assert context.fmt_usd(-1500) == "-$1,500"
    assert context.fmt_time("2024-03-01T00:00:00+00:00") == "2024-03-01 00:00 UTC"
    assert context.fmt_time("2024-03-01T05:30:00") == "2024-03-01 05:30"
    assert context.fmt_time("not a time") == "not a time"


def test_context_formats_but_never_recomputes():
    ctx = build_context(make_summary(), make_ledger(), None, META)
    cpu, mem, gpu = ctx["headline"]
    assert (cpu["allocated"], cpu["used"], cpu["efficiency"]) == (
        f"1,234,568{NBSP}core-h", f"456,789{NBSP}core-h", "37.0%")
    # 456,789.1 / 1,234,567.8 would be 37.0% too; a summary that says otherwise is shown as it says.
    lying = build_context(make_summary(cpu_efficiency=0.5), make_ledger(), None, META)
    assert lying["headline"][0]["efficiency"] == "50.0%"
    assert (mem["allocated"], mem["used"], mem["efficiency"]) == (
        f"9,876,543{NBSP}GiB-h", f"1,234,567{NBSP}GiB-h", "12.5%")
    assert (gpu["allocated"], gpu["used"], gpu["efficiency"]) == (f"54.3{NBSP}GPU-h", f"12.3{NBSP}GPU-h", "unknown")
    assert [r["jobs_with_data"] for r in ctx["headline"]] == ["118,000 of 122,000", "110,000 of 122,000",
                                                              "0 of 122,000"]
    assert [s["state"] for s in ctx["states"]] == ["COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED"]
    assert ctx["cover"]["jobs"] == "122,000"
    assert ctx["data_quality"]["totals"]["read"] == "400,010"
    assert "efficiency_chart" not in ctx


def test_unknown_use_has_no_used_or_peak_label():
    row = build_context(make_summary(core_hours_used=None), make_ledger(), None, META)["headline"][0]
    assert (row["used"], row["used_kind"]) == ("unknown", "")
    assert build_context(make_summary(), make_ledger(), None, META)["headline"][1]["used_kind"] == "peak"


def test_state_ties_sorted_by_name():
    rows = context.state_rows({"TIMEOUT": 3, "FAILED": 3, "COMPLETED": 9})
    assert [r["state"] for r in rows] == ["COMPLETED", "FAILED", "TIMEOUT"]


def test_long_raw_lines_are_shortened_with_a_mark():
    ctx = build_context(make_summary(), make_ledger(), None, META)
    raw = ctx["data_quality"]["sample"][0]["raw"]
    assert len(raw) == context.RAW_DISPLAY_CHARS and raw.endswith("…")


def test_unknown_optional_section_is_an_error():
    with pytest.raises(ValueError, match="unknown report section 'dolars'"):
        build_context(make_summary(), make_ledger(), None, META, sections={"dolars": {}})


# --- chart -------------------------------------------------------------------------------------

def test_efficiency_histogram_by_hand():
    counts, overflow, unknown = charts.efficiency_histogram(np.array(CPU))
    assert counts.tolist() == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert (overflow, unknown) == (2, 1)


def test_efficiency_counts_by_hand():
    counts = charts.efficiency_counts(make_efficiency())
    assert counts == {
        "cpu_eff": {"known": 7, "unknown": 1, "overflow": 2},
        "mem_eff": {"known": 2, "unknown": 6, "overflow": 1},
        "time_eff": {"known": 8, "unknown": 0, "overflow": 0},
    }


def test_efficiency_frame_errors_name_the_column():
    bad = make_efficiency()
    bad.loc[3, "mem_eff"] = -0.2
    with pytest.raises(ValueError, match="'mem_eff'.*negative"):
        charts.efficiency_chart(bad)
    with pytest.raises(ValueError, match="missing column 'time_eff'"):
        charts.efficiency_counts(make_efficiency().drop(columns="time_eff"))


def test_chart_is_inline_svg_deterministic_and_states_unknowns():
    frame = make_efficiency()
    svg = charts.efficiency_chart(frame)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg
    assert "7 known, 1 unknown" in svg and "2 known, 6 unknown" in svg and "8 known, 0 unknown" in svg
    assert "dc:date" not in svg
    assert charts.efficiency_chart(frame.copy()) == svg


def test_chart_of_no_jobs():
    empty = pd.DataFrame({c: pd.Series([], dtype="float64") for c in charts.EFFICIENCY_COLUMNS})
    svg = charts.efficiency_chart(empty)
    assert svg.count("no data") == 3 and svg.count("0 known, 0 unknown") == 3


def test_chart_with_nullable_dtype_and_all_unknown():
    frame = make_efficiency().astype("Float64")
    frame["mem_eff"] = pd.NA
    svg = charts.efficiency_chart(frame)
    assert "0 known, 8 unknown" in svg and "no data" in svg


# --- URL fetcher -------------------------------------------------------------------------------

def test_url_allowed_only_data_and_files_under_root(tmp_path):
    root = tmp_path / "templates"
    root.mkdir()
    assert url_allowed("data:image/png;base64,iVBORw0KGgo=", root)
    assert url_allowed((root / "report.css").as_uri(), root)
    assert url_allowed("file://localhost" + str(root / "a b.css").replace(" ", "%20"), root)
    assert not url_allowed((tmp_path / "secret.txt").as_uri(), root)
    assert not url_allowed(root.as_uri() + "/../secret.txt", root)
    assert not url_allowed("file://otherhost" + str(root / "report.css"), root)
    for url in ("http://example.invalid/x.png", "https://example.invalid/x.png", "ftp://example.invalid/x",
                "HTTP://EXAMPLE.INVALID/X", "//example.invalid/x.png", "javascript:alert(1)"):
        assert not url_allowed(url, root), url


def test_fetcher_refuses_before_any_network(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    fetcher = LocalOnlyFetcher(tmp_path)
    with pytest.raises(URLRefused, match="example.invalid"):
        fetcher.fetch("http://example.invalid/x.png")
    (tmp_path / "ok.css").write_text("p { color: red }", encoding="utf-8")
    response = fetcher.fetch((tmp_path / "ok.css").as_uri())
    try:
        assert response.read() == b"p { color: red }"
    finally:
        response.close()


class RecordingFetcher(LocalOnlyFetcher):
    """Records every URL WeasyPrint asks for and whether it was refused."""

    def __init__(self, root, **kwargs):
        super().__init__(root, **kwargs)
        self.asked: list[tuple[str, bool]] = []

    def fetch(self, url, headers=None):
        try:
            response = super().fetch(url, headers)
        except URLRefused:
            self.asked.append((url, True))
            raise
        self.asked.append((url, False))
        return response


def test_raw_remote_references_are_asked_for_and_refused(tmp_path, monkeypatch):
    """Positive control: unescaped remote references do reach the fetcher, which refuses them."""
    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: pytest.fail("network access attempted"))
    fetcher = RecordingFetcher(Path(str(render.templates_root())))
    html = ('<html><head><link rel="stylesheet" href="https://example.invalid/a.css"></head>'
            '<body><p>x</p><img src="http://example.invalid/x.png"></body></html>')
    pdf = render.html_to_pdf(html, tmp_path / "raw.pdf", fetcher=fetcher)
    assert pdf.read_bytes().startswith(b"%PDF")
    assert ("http://example.invalid/x.png", True) in fetcher.asked
    assert ("https://example.invalid/a.css", True) in fetcher.asked


def test_report_never_asks_for_a_remote_url(tmp_path, monkeypatch):
    asked = []
    original = LocalOnlyFetcher.fetch

    def recording(self, url, headers=None):
        asked.append(url)
        return original(self, url, headers)

    monkeypatch.setattr(LocalOnlyFetcher, "fetch", recording)
    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: pytest.fail("network access attempted"))
    ctx = build_context(make_summary(cluster=HOSTILE), make_ledger(), make_efficiency(), META)
    paths = render_report(ctx, tmp_path)
    assert paths["pdf"].read_bytes().startswith(b"%PDF")
    remote = [u for u in asked if not u.startswith(("data:", "file:"))]
    assert remote == []


# --- rendered report ---------------------------------------------------------------------------

def test_report_files_exist(rendered):
    paths, _ = rendered
    assert set(paths) == {"html", "pdf"}
    assert paths["pdf"].name == "report.pdf" and paths["html"].name == "report.html"
    assert paths["pdf"].read_bytes()[:5] == b"%PDF-"
    assert paths["pdf"].stat().st_size > 10_000


def test_html_shows_formatted_headline(rendered):
    _, html = rendered
    for text in (f"1,234,568{NBSP}core-h", f"456,789{NBSP}core-h", f"9,876,543{NBSP}GiB-h",
                 f"1,234,567{NBSP}GiB-h", f"54.3{NBSP}GPU-h", "37.0%", "12.5%", "118,000 of 122,000",
                 "110,000 of 122,000", "0 of 122,000", "2024-03-01 00:00 UTC", "2026-11-30 14:00 UTC",
                 "122,000", "100,000", "OUT_OF_MEMORY"):
        assert text in html, text


def test_html_escapes_untrusted_text(rendered):
    _, html = rendered
    assert "<script" not in html
    assert "<img" not in html
    assert "example.invalid" in html  # it is there, as text
    assert "&lt;img src=&#34;http://example.invalid/x.png&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_html_has_chart_caption_and_ledger(rendered):
    _, html = rendered
    assert html.count("<svg") == 1
    assert "CPU: 7 jobs known, 1 unknown, 2 above 100%." in html
    assert "Memory: 2 jobs known, 6 unknown, 1 above 100%." in html
    for text in ("400,010", "278,000", "Elapsed: bad duration", "ReqMem: unknown unit",
                 "The ledger balances for every file."):
        assert text in html, text


def test_optional_sections_render_only_when_present(rendered, tmp_path):
    _, html = rendered
    assert 'id="top-n"' in html and 'href="#top-n"' in html
    assert "Top users by idle GPU-hours" in html and "1,234" in html
    for absent in ("dollars", "failed-work", "predictions", "replay"):
        assert f'id="{absent}"' not in html and f'href="#{absent}"' not in html
    plain = render.render_html(build_context(make_summary(), make_ledger(), None, META))
    assert 'id="top-n"' not in plain and 'id="efficiency"' not in plain and "<svg" not in plain
    with_money = render.render_html(build_context(
        make_summary(cost_usd_alloc=12_345.6, cost_usd_idle=3.4,
                     price_book={"name": "aws-on-demand", "date": "2025-06-01"},
                     failed_hours_by_state={"TIMEOUT": 1500.0, "OUT_OF_MEMORY": 20.25}),
        make_ledger(), None, META))
    assert 'id="dollars"' in with_money and "$12,346" in with_money and "$3.40" in with_money
    assert "Price book: aws-on-demand, 2025-06-01" in with_money
    assert 'id="failed-work"' in with_money and "1,500" in with_money and "20.2" in with_money


def test_pdf_metadata_date_is_the_generation_time_passed_in(rendered):
    _, html = rendered
    assert '<meta name="dcterms.created" content="2026-11-30T14:00:00+00:00">' in html


def test_unbalanced_ledger_is_flagged():
    html = render.render_html(build_context(make_summary(), make_ledger(balanced=False), None, META))
    assert "does not balance" in html and '<strong class="bad">no</strong>' in html


def test_template_loader_stays_inside_the_package():
    env = render.make_environment()
    with pytest.raises(Exception, match="report.html"):
        env.get_template("../templates/report.html")
    assert env.get_template("report.html") is not None


def test_output_is_deterministic(tmp_path, rendered):
    paths, html = rendered
    ctx = build_context(make_summary(cluster=f"phillips {HOSTILE}"), make_ledger(), make_efficiency(), META,
                        sections={"top_n": {"title": "Top users by idle GPU-hours",
                                            "tables": [{"caption": "Idle GPU-hours",
                                                        "columns": ["user", "job name", "GPU-h"],
                                                        "rows": [["alice", HOSTILE, 1234.5], ["bob", "train", 7]]}]}})
    again = render_report(ctx, tmp_path)
    assert again["html"].read_text(encoding="utf-8") == html
    from weasyprint.text import ffi
    if ffi.harfbuzz_subset is None:
        pytest.skip("fontTools subsetting stamps the time into embedded fonts; install libharfbuzz-subset0")
    assert again["pdf"].read_bytes() == paths["pdf"].read_bytes()


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) not installed")
def test_pdf_text(rendered):
    paths, _ = rendered
    text = subprocess.run(["pdftotext", "-layout", str(paths["pdf"]), "-"], check=True, capture_output=True,
                          text=True).stdout.replace(NBSP, " ")
    for expected in ("1,234,568 core-h", "37.0%", "118,000 of 122,000", "Page 1 of", "Appendix: data quality",
                     "<script>alert(1)</script>", "Top users by idle GPU-hours"):
        assert expected in text, expected
