"""Small helpers shared by the benchmarks."""

from __future__ import annotations

import hashlib
import resource
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
#: the code that makes a bench's generated data: the generator (with its built-in profile and cluster), the
#: readers and the ingest that turn it into a store.  Data made by another version of these is made again.
MAKERS = ("audit/synthetic", "audit/readers", "audit/ingest.py", "audit/job_table.py", "audit/store.py")
_ROOT = Path(__file__).resolve().parent.parent


def makers_digest() -> str:
    """SHA-256 over the files of :data:`MAKERS` (their paths and bytes, in path order)."""
    h = hashlib.sha256()
    for m in MAKERS:
        top = _ROOT / m
        for f in sorted(top.rglob("*") if top.is_dir() else [top]):
            if f.is_file() and f.suffix in (".py", ".toml"):
                h.update(f.relative_to(_ROOT).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def current(root: Path) -> bool:
    """Whether ``root`` holds data made by this version of :data:`MAKERS` (a stamp written by :func:`made`).
    Data from another version is removed, so that the caller makes it again rather than timing stale data."""
    stamp = root / ".makers"
    if stamp.is_file() and stamp.read_text() == makers_digest():
        return True
    shutil.rmtree(root, ignore_errors=True)
    return False


def made(root: Path) -> None:
    """Stamp ``root`` as made by this version of :data:`MAKERS`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".makers").write_text(makers_digest())


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def timed():
    box = {}
    t0 = time.perf_counter()
    yield box
    box["s"] = time.perf_counter() - t0
