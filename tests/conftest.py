"""Shared test fixtures: where the real traces live, and skipping cleanly when they are absent; the
hypothesis profiles (``tests/profiles.py``), and a ``property`` mark on every hypothesis test; the real services
(Slurm, Grid Engine) started in the background as the session starts, their tests run last (``tests/ahead.py``);
under pytest-xdist (``make test``) each module whole on one worker, the services in the first."""

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


#: the pytest-xdist worker that starts the real services and runs their modules (``pytest_xdist_make_scheduler``)
SERVICES_WORKER = "gw0"


def _in_worker(config) -> bool:
    """Whether this process is a pytest-xdist worker."""
    return hasattr(config, "workerinput")


def _ahead_files(root: Path) -> set[str]:
    """The test modules (paths from ``root``) that start a real service ahead (``def bring_up_ahead``), read from
    their text: xdist's controller, which schedules them, collects nothing and imports no test module."""
    return {p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py")
            if "\ndef bring_up_ahead(" in p.read_text(encoding="utf-8")}


#: scopes still queued when that worker takes the real services' modules: late, so that their waits are over,
#: yet with work left for the other workers meanwhile
SERVICES_TAKEN_WITH = 4


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs the suite on the machine's cores (pytest-xdist): each module goes whole to one worker,
    so its module fixtures are built once; the modules of the real services go together to the worker that
    started them as the session began (``SERVICES_WORKER``), near the end, and to no other while it runs."""
    from xdist.scheduler import LoadScopeScheduling

    ahead = _ahead_files(config.rootpath)
    group = "started-ahead"

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return group if path in ahead else path

        def _assign_work_unit(self, node) -> None:
            if group in self.workqueue:
                alive = {n.gateway.id for n in self.nodes if not n.shutting_down}
                mine = node.gateway.id == SERVICES_WORKER or SERVICES_WORKER not in alive
                late = len(self.workqueue) <= SERVICES_TAKEN_WITH + 1
                if mine and late:
                    self.workqueue.move_to_end(group, last=False)
                elif len(self.workqueue) > 1:
                    self.workqueue.move_to_end(group)
                else:
                    return  # theirs alone are left: their worker takes them when it is free
            super()._assign_work_unit(node)

    return ByModule(config, log)


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
        ahead = Ahead(starts)
        # they start now in one process, and among xdist workers in the one given their modules
        # (another would start them as it takes the first of them)
        mine = not _in_worker(session.config) or session.config.workerinput["workerid"] == SERVICES_WORKER
        session.config.stash[AHEAD] = ahead.begin() if mine else ahead


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
