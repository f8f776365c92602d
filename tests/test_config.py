"""The report config: every default, and plain errors that name the key; progress lines on stderr; the
pseudonyms stable for a salt."""

from __future__ import annotations

import io
import time

import pandas as pd
import pytest

from audit.accounting.findings import Thresholds
from audit.anonymise import Pseudonyms, anonymise_jobs
from audit.config import PAGES, ConfigError, ReportConfig, load_config, parse_config
from audit.progress import Progress
from reports.formats import Formatter


def test_defaults():
    cfg = load_config(None)
    assert cfg == ReportConfig() and cfg.pages == PAGES and cfg.thresholds == Thresholds()
    assert cfg.currency_symbol == "$" and not cfg.anonymise


def test_a_file_overrides_what_it_names(tmp_path):
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "report.toml").write_text('''
[report]
client = "Example University"
logo = "logo.png"
accent = "#AA3300"
locale = "de"
currency = "EUR"
pages = ["findings", "summary"]
[whatif]
risk = [0.95, 0.9]
[findings]
low_gpu_util_below = 0.2
[anonymise]
enabled = true
salt = "a long secret"
''', encoding="utf-8")
    cfg = load_config(tmp_path / "report.toml")
    assert cfg.client == "Example University" and cfg.logo == tmp_path / "logo.png" and cfg.accent == "#aa3300"
    assert cfg.pages == ("summary", "findings") and cfg.risk == (0.9, 0.95) and cfg.currency_symbol == "€"
    assert cfg.thresholds.low_gpu_util_below == 0.2 and cfg.thresholds.min_run_time_min == 61
    assert cfg.anonymise and cfg.salt == "a long secret"


@pytest.mark.parametrize(("spec", "message"), [
    ({"report": {"colour": "#000000"}}, "unknown key report.colour"),
    ({"reprot": {}}, r"unknown section \[reprot\]"),
    ({"report": {"accent": "blue"}}, "report.accent: must be a colour"),
    ({"report": {"locale": "xx"}}, "report.locale: must be one of"),
    ({"report": {"pages": ["summary", "appendix"]}}, "unknown page 'appendix'"),
    ({"report": {"top_accounts": 0}}, "report.top_accounts: must be ≥ 1"),
    ({"report": {"logo": "missing.png"}}, "report.logo: no such file"),
    ({"whatif": {"risk": [0.5, 1.0]}}, "whatif.risk: every level must lie strictly between 0 and 1"),
    ({"findings": {"low_gpu_util_below": "low"}}, "findings.low_gpu_util_below: must be a number"),
    ({"anonymise": {"enabled": True}}, "anonymise.salt: anonymisation needs a secret salt"),
])
def test_errors_name_the_key(spec, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        parse_config(spec, "report.toml", base=tmp_path)


def test_pseudonyms_are_stable_for_a_salt_and_keep_the_hierarchy():
    jobs = pd.DataFrame({"user": ["alice", "bob", None], "account": ["org/ml", "org/hpc", "org"],
                         "job_name": ["alice_run", "train", None], "job_id_raw": ["1", "2", "3"]})
    a = anonymise_jobs(jobs, Pseudonyms("salt-one-x"))
    b = anonymise_jobs(jobs.iloc[::-1], Pseudonyms("salt-one-x"))
    c = anonymise_jobs(jobs, Pseudonyms("salt-two-x"))
    assert a["user"].iloc[0] == b["user"].iloc[2] and a["user"].iloc[0] != c["user"].iloc[0]
    assert a["user"].iloc[0].startswith("user-") and pd.isna(a["user"].iloc[2])
    top = a["account"].str.split("/").str[0]
    assert top.nunique() == 1 and "org" not in a["account"].iloc[0]
    assert "alice" not in a["job_name"].iloc[0] and a["job_name"].iloc[0].endswith("_run")


def test_progress_plain_lines_off_a_terminal_and_silent_when_quiet():
    out = io.StringIO()
    p = Progress(out, tty=False)
    with p.stage("ingest"):
        p.count("what-if", 3)
    p.substage("what-if", "replay", 61.0)
    p.done()
    lines = out.getvalue().splitlines()
    assert lines[0] == "reclaim: ingest …" and lines[1].startswith("reclaim: ingest ") and lines[1].endswith(" s")
    assert lines[2] == "reclaim: what-if: replay 1 min 01 s" and lines[3].startswith("reclaim: done in")
    assert "\r" not in out.getvalue()
    tty = io.StringIO()
    Progress(tty, tty=True).count("what-if", 12)
    assert tty.getvalue().startswith("\rreclaim: what-if: 12 replays done")
    quiet = io.StringIO()
    q = Progress(quiet, quiet=True)
    with q.stage("ingest"):
        q.count("what-if", 1)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize(("locale", "money", "pct", "num"), [
    ("en", "$12,346", "45.7%", "1,234"), ("de", "12.346\u00a0$", "45,7\u00a0%", "1.234"),
    ("fr", "12\u202f346\u00a0$", "45,7\u00a0%", "1\u202f234")])
def test_formats_by_locale(locale, money, pct, num):
    f = Formatter(locale, "$")
    assert (f.money(12345.6), f.pct(0.4567), f.number(1234.4)) == (money, pct, num)


def test_units_people_use():
    f = Formatter()
    assert f.duration(171000) == "1-23:30:00" and f.duration(59) == "00:00:59"
    assert f.gib(282.2) == "282G" and f.gib(3.52) == "3.5G" and f.money(3.4) == "$3.40"
    assert f.number(0.000123) == "0.0001" and "e" not in f.number(1e-7) and f.number(None) == "n/a"


def test_a_long_stage_says_so_every_heartbeat_and_no_minute_is_silent():
    out = io.StringIO()
    p = Progress(out, tty=False, heartbeat_s=0.2)
    with p.stage("predictions"):
        p.count("predictions", 7, "targets")
        time.sleep(0.75)
    lines = out.getvalue().splitlines()
    beats = [ln for ln in lines if "still running" in ln]
    assert 2 <= len(beats) <= 4 and all(ln.startswith("reclaim: predictions … still running, ") for ln in beats)
    assert beats[0].endswith("(7 targets done)") and lines[-1].startswith("reclaim: predictions ")
    tty = io.StringIO()
    t = Progress(tty, tty=True, heartbeat_s=0.2)
    with t.stage("ingest"):
        time.sleep(0.5)
    assert "\rreclaim: ingest … still running" in tty.getvalue()
    silent = io.StringIO()
    with Progress(silent, quiet=True, heartbeat_s=0.1).stage("ingest"):
        time.sleep(0.3)
    assert silent.getvalue() == ""
