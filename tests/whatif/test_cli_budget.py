"""``--kill-budget`` and ``--gpu-hours-budget``: shares as operators write them, refused with a clear error
otherwise, and carried into the sweep's options."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from audit.cli import main


@pytest.mark.parametrize("command", ["whatif", "audit", "monthly"])
def test_a_budget_that_is_not_a_share_is_refused(command, tmp_path):
    args = {"whatif": ["whatif", str(tmp_path)], "audit": ["audit", str(tmp_path), "--out", str(tmp_path / "o")],
            "monthly": ["monthly", "--month", "2026-10", "--out", str(tmp_path / "o")]}[command]
    for option, value in (("--gpu-hours-budget", "150%"), ("--gpu-hours-budget", "lots"), ("--kill-budget", "-1")):
        res = CliRunner().invoke(main, [*args, option, value])
        assert res.exit_code == 2 and option in res.output and "share" in res.output


def test_the_budgets_reach_the_sweep(monkeypatch, tmp_path):
    import audit.pipeline as pipeline

    seen = {}

    def fake(paths, **options):
        seen.update(options)
        raise ValueError("stop here")

    monkeypatch.setattr(pipeline, "whatif", fake)
    res = CliRunner().invoke(main, ["whatif", str(tmp_path), "--kill-budget", "2%", "--gpu-hours-budget", "0.5%"])
    assert res.exit_code == 2 and "stop here" in res.output
    assert seen["kill_budget"] == pytest.approx(0.02) and seen["gpu_hours_budget"] == pytest.approx(0.005)
    res = CliRunner().invoke(main, ["whatif", str(tmp_path)])
    assert seen["kill_budget"] == pytest.approx(0.01) and seen["gpu_hours_budget"] is None
