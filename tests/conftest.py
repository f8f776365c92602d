"""Shared test fixtures: where the real traces live, and skipping cleanly when they are absent; the
hypothesis profiles (``tests/profiles.py``), and a ``property`` mark on every hypothesis test; the real services
(Slurm, Grid Engine) started in the background as the session starts, their tests run last (``tests/ahead.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ahead import Ahead
from tests.profiles import register

register()

ROOT = Path(__file__).resolve().parents[1]
TRACES = (ROOT / ".." / "shared" / "traces").resolve()


AHEAD = pytest.StashKey[Ahead]()
#: how a test skipped for a system package says so: ``f"{LACKS}poppler-utils"``; the session ends with one line
#: naming what was skipped and how to get it
LACKS = "this machine lacks the Debian packages: "


def pytest_terminal_summary(terminalreporter):
    lacking = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
        if LACKS in reason:
            what = reason.split(LACKS, 1)[1].strip()
            lacking[what] = lacking.get(what, 0) + 1
    if lacking:
        n = sum(lacking.values())
        names = sorted({w.split(" (")[0] for w in lacking})
        terminalreporter.write_line(
            f"skipped {n} test{'s' * (n != 1)} for missing system packages: "
            + ", ".join(f"{w} ({k})" for w, k in sorted(lacking.items()))
            + f"; get them with `apt-get install {' '.join(names)}` or run `bash .ci/run` as root")


def pytest_collection_modifyitems(items):
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
    items.sort(key=lambda item: _started_ahead(item) is not None)  # stable: the real services' tests last


def _started_ahead(item):
    """The test's module when it starts a real service ahead (``bring_up_ahead``), else None."""
    module = getattr(item, "module", None)
    return module if hasattr(module, "bring_up_ahead") else None


def pytest_collection_finish(session):
    modules = []
    for item in session.items:
        module = _started_ahead(item)
        if module is not None and module not in modules:
            modules.append(module)
    if modules:  # the module run last starts first: its Slurm owns munged and is stopped last
        starts = {m.__name__: m.bring_up_ahead for m in reversed(modules)}
        session.config.stash[AHEAD] = Ahead(starts).begin()


def pytest_sessionfinish(session):
    ahead = session.config.stash.get(AHEAD, None)
    if ahead is not None:
        ahead.close()


@pytest.fixture(scope="module")
def started_ahead(request) -> dict:
    """The service started ahead for the requesting module (see ``tests/ahead.py``); it stops it."""
    return request.config.stash[AHEAD].take(request.module.__name__)


def trace(*parts: str) -> Path:
    """Path of a real trace under ../shared/traces, or skip the test when it is absent."""
    p = TRACES.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real trace not available: {p}")
    return p


@pytest.fixture
def traces() -> Path:
    if not TRACES.exists():
        pytest.skip("../shared/traces is absent")
    return TRACES
