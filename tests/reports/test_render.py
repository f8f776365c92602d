"""The renderer: charts drawn deterministically as inline SVG, the template loader kept inside the package,
and the URL fetcher that refuses every remote URL before any network is touched."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reports import charts, render
from reports.render import LocalOnlyFetcher, URLRefused, url_allowed

# cpu_eff by hand: [0,0.1) 0.05 → 1; [0.1,0.2) 0.15, 0.15 → 2; [0.9,1.0] 0.95, 1.0 → 2;
# above 1: 1.5 and ∞ → 2; NaN → 1 unknown; 7 known.
CPU = [0.05, 0.15, 0.15, 0.95, 1.0, 1.5, np.inf, np.nan]
MEM = [np.nan, np.nan, np.nan, 0.5, np.nan, np.nan, np.nan, 2.0]
TIME = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]


def make_efficiency() -> pd.DataFrame:
    return pd.DataFrame({"cpu_eff": CPU, "mem_eff": MEM, "time_eff": TIME})


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


def test_template_loader_stays_inside_the_package():
    env = render.make_environment()
    with pytest.raises(Exception, match="report.html"):
        env.get_template("../templates/report.html")
    assert env.get_template("report.html") is not None


# --- notices -----------------------------------------------------------------------------------

def test_notices_one_file_per_user_even_when_safe_names_meet(tmp_path):
    from reports.formats import Formatter
    from reports.notices import write_notices

    row = {"account": "a", "job_family": "run", "resource": "memory", "unit": "GiB", "jobs": 3, "ask": 8.0,
           "need_p50": 1.0, "need_p90": 2.0, "need_p99": 3.0, "request": 3.0, "frees": 5.0, "frees_unit": "GiB-h",
           "slurm": "--mem=3G"}
    recs = pd.DataFrame([{**row, "user": u} for u in ("a/b", "a_b", "A_b", "../x")])
    folder = tmp_path / "notices"
    folder.mkdir()
    (folder / "gone.txt").write_text("an earlier run's notice")
    paths = write_notices(recs, folder, Formatter(), "c", "Reclaim")
    assert len(paths) == 4 and len({p.name.lower() for p in paths}) == 4
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in paths)
    assert all(p.parent == folder for p in paths)
    assert {p.read_text().splitlines()[0] for p in paths} == {f"To: {u}" for u in recs["user"]}


def test_tables_folder_holds_exactly_the_report_tables(tmp_path):
    from reports.tables import table, write_tables

    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "stale.csv").write_text("from a run with more pages\n")
    write_tables([table("one", "One", [("n", "int")], [[1], [2]])], folder)
    assert [p.name for p in folder.iterdir()] == ["one.csv"]
    assert (folder / "one.csv").read_text().splitlines() == ["n", "1", "2"]


# --- without HarfBuzz-Subset, a re-run is the same bytes ------------------------------------------------

PAGE = ('<html><head><style>body { font-family: "DejaVu Sans"; }</style></head>'
        '<body><p>Reclaim 1-23:00:00 282G</p></body></html>')


def _rendered(tmp_path, name, clock, monkeypatch, **kw) -> bytes:
    """The PDF of PAGE written with fontTools subsetting (as without HarfBuzz-Subset) while the clock reads
    ``clock`` (seconds since 1970) for the fonts' ``head`` table.  Only the head table's reading of the clock is
    replaced (as fontTools reads it: ``SOURCE_DATE_EPOCH`` when set), not ``time.time``: the services the
    session starts in a thread of this process time their waits with the real clock."""
    import fontTools.misc.timeTools as tt
    import fontTools.ttLib.tables._h_e_a_d as head
    import weasyprint.pdf.fonts as wfonts

    def now() -> int:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        return int(epoch if epoch is not None else clock) - tt.epoch_diff

    monkeypatch.setattr(wfonts, "harfbuzz_subset", None)
    monkeypatch.setattr(head, "timestampNow", now)
    return render.html_to_pdf(PAGE, tmp_path / name, **kw).read_bytes()


def test_fonts_subset_by_fonttools_are_dated_by_the_stamp_not_the_clock(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    # without a stamp the clock leaks into the bytes: a day apart, two renders differ (fontTools' head table)
    assert _rendered(tmp_path, "a.pdf", 1.7e9, monkeypatch) != _rendered(tmp_path, "b.pdf", 1.7e9 + 86400,
                                                                         monkeypatch)
    stamp = "2026-10-31T00:00:00+00:00"
    first = _rendered(tmp_path, "c.pdf", 1.7e9, monkeypatch, created=stamp)
    assert _rendered(tmp_path, "d.pdf", 1.7e9 + 86400, monkeypatch, created=stamp) == first
    assert "SOURCE_DATE_EPOCH" not in os.environ  # set for the write only


def test_epoch_of_a_stamp_by_hand():
    assert render.epoch_of("1970-01-02T00:00:00+00:00") == 86_400
    assert render.epoch_of("1970-01-02T01:00:00+01:00") == 86_400
    assert render.epoch_of("1970-01-02T00:00:00") == 86_400  # naive: UTC
    assert render.epoch_of("") is None and render.epoch_of(None) is None


def test_missing_system_packages_are_named_in_one_line():
    from reports import system

    found = {"pango-1.0", "pangoft2-1.0", "fontconfig", "harfbuzz"}
    absent = system.missing(find=lambda name: name if name in found else None, font=lambda: False)
    assert [p for p, _ in absent] == ["libharfbuzz-subset0"]
    line = system.notice(absent)
    assert "\n" not in line and line.endswith("apt-get install libharfbuzz-subset0")
    assert system.notice(system.missing(find=lambda name: name, font=lambda: False)) == ""
    both = system.missing(find=lambda name: None, font=lambda: True)
    assert [p for p, _ in both] == ["libpango-1.0-0", "libpangoft2-1.0-0", "libfontconfig1", "libharfbuzz0b",
                                    "libharfbuzz-subset0", "fonts-dejavu-core"]
