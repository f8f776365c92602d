"""Small helpers shared by the benchmarks."""

from __future__ import annotations

import resource
import time
from contextlib import contextmanager
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def timed():
    box = {}
    t0 = time.perf_counter()
    yield box
    box["s"] = time.perf_counter() - t0
