"""Shared test fixtures: where the real traces live, and skipping cleanly when they are absent."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACES = (ROOT / ".." / "shared" / "traces").resolve()


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
