"""Users, accounts and job names carrying HTML, a remote image, CSS and very long strings render as text, and
the report asks for no URL but its own data: URLs and templates."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from audit.pipeline import audit
from reports.render import LocalOnlyFetcher

ROOT = Path(__file__).resolve().parents[2]
WEEK = ROOT / "sample_traces" / "week"
USER = '<img src=http://127.0.0.1:9/user.png>'
ACCOUNT = '<style>*{background:url(http://127.0.0.1:9/a.png)}</style>'
NAME = "<b>bold</b>" + "x" * 3000


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    src = tmp_path_factory.mktemp("hostile-in")
    text = (WEEK / "sacct.txt").read_text(encoding="utf-8")
    text = re.sub(r"(?<=\|)u0001(?=\|)", USER, text)
    text = re.sub(r"(?<=\|)phys-a(?=\|)", ACCOUNT, text)
    text = re.sub(r"(?<=\|)relax_\d+(?=\|)", NAME, text)
    (src / "sacct.txt").write_text(text, encoding="utf-8")
    shutil.copy(WEEK / "cluster.toml", src / "cluster.toml")
    return src


def test_hostile_text_renders_as_text_and_nothing_is_fetched(hostile, tmp_path, monkeypatch):
    asked = []
    original = LocalOnlyFetcher.fetch

    def recording(self, url, headers=None):
        asked.append(url)
        return original(self, url, headers)

    monkeypatch.setattr(LocalOnlyFetcher, "fetch", recording)
    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: pytest.fail("network access attempted"))
    out = tmp_path / "run"
    audit([hostile], out, whatif=False)
    html = (out / "report.html").read_text(encoding="utf-8").replace("\u200b", "")
    assert "&lt;img src=http://127.0.0.1:9/user.png&gt;" in html
    assert "&lt;style&gt;" in html and "<img src=http" not in html and "<style>*{" not in html
    assert [u for u in asked if not u.startswith(("data:", "file:"))] == []
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(out / "report.pdf"), "-"], check=True, capture_output=True,
                              text=True).stdout
        assert "<img src=http://127.0.0.1:9/user.png>" in text.replace("\u200b", "").replace("\n", "")
    if shutil.which("pdftotext"):
        bbox = subprocess.run(["pdftotext", "-bbox", str(out / "report.pdf"), "-"], check=True, capture_output=True,
                              text=True).stdout
        for w, body in re.findall(r'<page width="([\d.]+)" height="[\d.]+">(.*?)</page>', bbox, flags=re.S):
            assert all(float(x) <= float(w) + 0.5 for x in re.findall(r'xMax="([\d.-]+)"', body))
