"""Shared test fixtures: where the real traces live, and skipping cleanly when they are absent; the
hypothesis profiles (``tests/profiles.py``), and a ``property`` mark on every hypothesis test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.profiles import register

register()

ROOT = Path(__file__).resolve().parents[1]
TRACES = (ROOT / ".." / "shared" / "traces").resolve()


def pytest_collection_modifyitems(items):
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)


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
