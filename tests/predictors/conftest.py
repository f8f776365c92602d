"""Shared data: a small generated month (synthetic, seeded) and the real SWF traces when present."""

from __future__ import annotations

from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"


@pytest.fixture(scope="session")
def small_month(tmp_path_factory):
    """6,000 jobs over 10 days, read back through the sacct reader."""
    from audit.ingest import read_inputs
    from audit.synthetic import generate

    out = tmp_path_factory.mktemp("month")
    generate(out, jobs=6000, days=10.0, seed=11, write_telemetry=False)
    return read_inputs([out / "sacct.txt"]).jobs


def swf_jobs(name: str):
    path = TRACES / "swf" / name
    if not path.exists():
        pytest.skip(f"{path} absent")
    from audit.readers.swf import read_swf

    return read_swf(path).jobs
