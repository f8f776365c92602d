"""Safe publishing for runs from cron: one run at a time (an exclusive lock), and a month's folder that
appears whole or not at all (built beside it, then renamed into place)."""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path


class Busy(RuntimeError):
    """Another run holds the lock."""


@contextmanager
def locked(folder: Path, wait_s: float = 0.0):
    """Hold ``folder/.reclaim-monthly.lock`` (flock) for the block; :class:`Busy` after ``wait_s``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".reclaim-monthly.lock"
    fh = open(path, "a+")  # noqa: SIM115 - held for the whole block
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(f"{path}: another monthly run holds the lock") from None
                time.sleep(0.5)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield path
    finally:
        fh.close()


def staging(folder: Path, name: str) -> Path:
    """A fresh folder beside ``folder/name`` to build the month in (what a killed run left is removed)."""
    for old in folder.glob(f".{name}.partial-*"):
        shutil.rmtree(old, ignore_errors=True)
    path = folder / f".{name}.partial-{os.getpid()}"
    path.mkdir(parents=True)
    return path


def publish(built: Path, target: Path) -> None:
    """Put ``built`` at ``target`` in one rename; an earlier ``target`` is moved aside first, then removed."""
    aside = None
    if target.exists():
        aside = target.with_name(f".{target.name}.previous-{os.getpid()}")
        os.rename(target, aside)
    os.rename(built, target)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
