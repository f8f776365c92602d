"""What ``reclaim audit`` says on stderr while it works: which stage runs and how long each took.

On a terminal a stage that counts its work (the what-if's replays) redraws one progress line in place;
elsewhere (cron, CI) every line is plain and printed once.  ``quiet`` silences it all.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


def seconds_text(s: float) -> str:
    """``4.2 s``, ``3 min 05 s``, ``1 h 02 min``."""
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


class Progress:
    """``with progress.stage("ingest"): …`` prints ``reclaim: ingest …`` then ``reclaim: ingest 4.2 s``."""

    def __init__(self, stream=None, *, quiet: bool = False, tty: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.tty = (self.stream.isatty() if hasattr(self.stream, "isatty") else False) if tty is None else tty
        self.timings: dict[str, float] = {}
        self._open = False
        self._t0 = time.perf_counter()

    def line(self, text: str) -> None:
        if self.quiet:
            return
        if self._open:
            self.stream.write("\n")
            self._open = False
        self.stream.write(f"reclaim: {text}\n")
        self.stream.flush()

    @contextmanager
    def stage(self, name: str):
        self.line(f"{name} …")
        t = time.perf_counter()
        try:
            yield self
        finally:
            took = time.perf_counter() - t
            self.timings[name] = took
            self.line(f"{name} {seconds_text(took)}")

    def substage(self, stage: str, name: str, seconds: float) -> None:
        """A part of a stage that ended (the what-if's replays, capacity search, …)."""
        self.line(f"{stage}: {name} {seconds_text(seconds)}")

    def count(self, stage: str, done: int, label: str = "replays") -> None:
        """A redrawn progress line on a terminal (nothing elsewhere: a cron log gets the stage lines)."""
        if self.quiet or not self.tty:
            return
        elapsed = time.perf_counter() - self._t0
        self.stream.write(f"\rreclaim: {stage}: {done:,} {label} done ({seconds_text(elapsed)} in all)")
        self.stream.flush()
        self._open = True

    def done(self) -> None:
        if self.timings:
            parts = ", ".join(f"{k} {seconds_text(v)}" for k, v in self.timings.items())
            self.line(f"done in {seconds_text(time.perf_counter() - self._t0)} ({parts})")
