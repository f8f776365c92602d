"""``reclaim monthly`` on generated months: trends and movers over three months, byte-identical re-runs, one
run at a time, and no partial month after a run killed halfway."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.config import ReportConfig
from audit.monthly import locked
from audit.pipeline import EXIT_BUSY, monthly
from audit.synthetic import generate
from predictors.advisor.model import is_current

ROOT = Path(__file__).resolve().parents[2]
JOBS = 600


def month_inputs(root: Path, month: str, seed: int) -> Path:
    """A generated month starting on the 1st of ``month`` (the generator's profile with that start)."""
    out = root / f"in-{month}"
    if (out / "sacct.txt").exists():
        return out
    profile = (ROOT / "audit" / "synthetic" / "profile.toml").read_text(encoding="utf-8")
    lines = [f'start = "{month}-01T00:00:00"' if ln.startswith("start = ") else ln for ln in profile.splitlines()]
    spec = root / f"profile-{month}.toml"
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    generate(out, jobs=JOBS, days=28.0, seed=seed, profile=spec, write_telemetry=False)
    return out


def digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def months(tmp_path_factory):
    root = tmp_path_factory.mktemp("monthly")
    out = root / "runs"
    for k, month in enumerate(("2026-08", "2026-09", "2026-10")):
        monthly(month, out, inputs=[month_inputs(root, month, seed=11 + k)], whatif=False)
    return root, out


def test_three_months_give_the_trend_page_and_the_movers(months):
    root, out = months
    s = json.loads((out / "2026-10" / "monthly.json").read_text())
    assert s["previous_month"] == "2026-09"
    first = json.loads((out / "2026-08" / "monthly.json").read_text())
    assert first["previous_month"] is None and first["movers"] == {}
    for level in ("account", "user"):
        rose, fell = s["movers"][level]["rose"], s["movers"][level]["fell"]
        assert rose or fell
        assert all(r["change"] > 0 for r in rose) and all(r["change"] < 0 for r in fell)
        assert [r["change"] for r in rose] == sorted((r["change"] for r in rose), reverse=True)
        for r in rose + fell:  # each change is this month's idle cost less last month's, as the aggregates say
            assert r["change"] == pytest.approx(r["cost_usd_idle"] - r["previous"])
    now = {r["name"]: r for r in s["movers"]["account"]["rose"] + s["movers"]["account"]["fell"]}
    import pandas as pd

    agg = pd.read_csv(out / "2026-10" / "aggregates" / "by_account.csv")
    top = agg[agg["level"] == agg["level"].min()].set_index("account_path")["cost_usd_idle"]
    for name, r in now.items():
        assert r["cost_usd_idle"] == pytest.approx(float(top.get(name, 0.0)))
    assert s["change"]["cost_usd_idle"] == pytest.approx(
        s["figures"]["cost_usd_idle"] - json.loads((out / "2026-09" / "monthly.json").read_text())["figures"]["cost_usd_idle"])
    html = (out / "2026-10" / "report.html").read_text()
    assert 'id="trend"' in html and "2026-08" in html and "2026-09" in html
    assert 'id="trend"' not in (out / "2026-08" / "report.html").read_text()  # one month: no trend yet
    prom = (out / "reclaim.prom").read_text()
    assert 'reclaim_waste_ratio{cluster="' in prom and 'month="2026-10"' in prom
    assert "# TYPE reclaim_cost_usd gauge" in prom
    md = (out / "2026-10" / "summary.md").read_text()
    assert "Movers since 2026-09" in md


def test_a_rerun_of_a_month_writes_the_same_bytes(months, tmp_path):
    root, out = months
    before = digest(out / "2026-09")
    assert "model/manifest.json" in before and is_current(out / "2026-09")  # the advisor's model, published
    monthly("2026-09", out, inputs=[month_inputs(root, "2026-09", seed=12)], whatif=False)
    assert digest(out / "2026-09") == before
    fresh = tmp_path / "again"
    # the what-if too, its sweep at one level beside the oracle and the kill budget (every stage, fewer replays)
    one_level = ReportConfig(risk=(0.9,))
    monthly("2026-08", fresh, inputs=[month_inputs(root, "2026-08", seed=11)], whatif=True,
            whatif_options={"serial": True, "quiet": True}, config=one_level)
    first = digest(fresh / "2026-08")
    assert "whatif/summary.json" in first and "report.pdf" in first
    monthly("2026-08", fresh, inputs=[month_inputs(root, "2026-08", seed=11)], whatif=True,
            whatif_options={"serial": True, "quiet": True}, config=one_level)
    assert digest(fresh / "2026-08") == first


def run_cli(*args, env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "audit.cli", "monthly", *args], env=env or os.environ.copy(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_overlapping_runs_wait_or_exit_with_the_busy_code(months, tmp_path):
    root, _ = months
    out = tmp_path / "runs"
    inputs = str(month_inputs(root, "2026-08", seed=11))
    with locked(out):
        p = run_cli("--month", "2026-08", "--input", inputs, "--out", str(out), "--no-whatif", "--quiet")
        _, err = p.communicate(timeout=120)
        assert p.returncode == EXIT_BUSY and "lock" in err
        waiting = run_cli("--month", "2026-08", "--input", inputs, "--out", str(out), "--no-whatif", "--quiet",
                          "--wait", "120")
        time.sleep(2)
    _, err = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, err
    assert (out / "2026-08" / "summary.md").exists()


def test_a_run_killed_halfway_leaves_no_month(months, tmp_path):
    root, _ = months
    out = tmp_path / "runs"
    p = run_cli("--month", "2026-09", "--input", str(month_inputs(root, "2026-09", seed=12)), "--out", str(out),
                "--no-whatif", "--quiet")
    deadline = time.monotonic() + 120
    while not list(out.glob(".2026-09.partial-*/2026-09/jobs.parquet")):
        assert time.monotonic() < deadline and p.poll() is None, "the run never got halfway"
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    assert not (out / "2026-09").exists()
    monthly("2026-09", out, inputs=[month_inputs(root, "2026-09", seed=12)], whatif=False)
    assert (out / "2026-09" / "summary.md").exists() and not list(out.glob(".2026-09.partial-*"))


def sacct_names(sacct: Path) -> set[str]:
    """The user and account names of a generated sacct text (its Account and User fields)."""
    with open(sacct, encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("|")
        cols = [head.index(c) for c in ("Account", "User")]
        return {f for line in fh for i, f in enumerate(line.rstrip("\n").split("|")) if i in cols and f}


def test_the_report_config_reaches_the_month_and_its_anonymisation_every_file(months, tmp_path):
    import duckdb

    root, _ = months
    out = tmp_path / "runs"
    cfg = tmp_path / "report.toml"
    cfg.write_text('[report]\nclient = "Example Lab"\npages = ["summary", "findings", "trend", "quality"]\n'
                   '[anonymise]\nenabled = true\nsalt = "monthly-salt"\n', encoding="utf-8")
    for month, seed in (("2026-08", 11), ("2026-09", 12)):
        p = run_cli("--month", month, "--input", str(month_inputs(root, month, seed=seed)), "--out", str(out),
                    "--no-whatif", "--quiet", "--config", str(cfg))
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    html = (out / "2026-09" / "report.html").read_text(encoding="utf-8")
    assert "Example Lab" in html and 'id="trend"' in html and 'id="capacity"' not in html
    assert "users and accounts pseudonymised" in html
    names = set()
    for month in ("2026-08", "2026-09"):
        names |= sacct_names(root / f"in-{month}" / "sacct.txt")
    assert len(names) > 10
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)).encode())
    hits = [str(f.relative_to(out)) for f in out.rglob("*") if f.is_file() and f.suffix != ".parquet"
            and pattern.search(f.read_bytes())]
    assert hits == []
    con = duckdb.connect(str(out / "reclaim.duckdb"), read_only=True)
    stored = {r[0] for r in con.execute("select distinct name from month_groups").fetchall()}
    assert stored and not stored & names
    moved = json.loads((out / "2026-09" / "monthly.json").read_text())["movers"]
    assert all(r["name"].startswith(("user-", "acct-")) for lv in moved.values() for k in lv.values() for r in k)


def test_last_month_is_the_calendar_month_before_today():
    from datetime import date

    from audit.pipeline import resolve_month

    assert resolve_month("last", today=date(2026, 1, 15)) == "2025-12"
    assert resolve_month("last", today=date(2026, 3, 1)) == "2026-02"
    assert resolve_month("last", today=date(2024, 3, 31)) == "2024-02"
    assert resolve_month("2026-07") == "2026-07"


def test_the_documented_cron_and_systemd_lines_are_valid_commands():
    """Every ``reclaim monthly`` line docs/operations.md gives (crontab, ExecStart) parses with the real CLI."""
    import shlex

    import click

    from audit.cli import main

    doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    lines = [ln for ln in doc.splitlines() if "bin/reclaim monthly" in ln]
    assert len(lines) == 2  # the crontab line and ExecStart
    for line in lines:
        argv = shlex.split(line.split("bin/reclaim", 1)[1])
        command = main.commands[argv[0]]
        ctx = command.make_context("monthly", argv[1:], resilient_parsing=False)
        assert ctx.params["month"] == "last" and ctx.params["quiet"] in (True, False)
        assert isinstance(ctx, click.Context)
