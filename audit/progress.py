"""What ``reclaim audit`` says on stderr while it works: which stage runs and how long each took.

On a terminal a stage that counts its work (the what-if's replays) redraws one progress line in place;
elsewhere (cron, CI) every line is plain and printed once.  A stage that runs on says so every ``heartbeat_s``
(30 s): a redrawn ``still running`` line on a terminal, a plain line elsewhere, so no minute passes silently.
``quiet`` silences it all.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

HEARTBEAT_S = 30.0


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

    def __init__(self, stream=None, *, quiet: bool = False, tty: bool | None = None,
                 heartbeat_s: float | None = HEARTBEAT_S):
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.tty = (self.stream.isatty() if hasattr(self.stream, "isatty") else False) if tty is None else tty
        self.heartbeat_s = heartbeat_s
        self.timings: dict[str, float] = {}
        self._open = False
        self._t0 = time.perf_counter()
        self._lock = threading.RLock()
        self._said = time.perf_counter()
        self._stack: list[str] = []  # the stages running, innermost last: only it beats
        self._counted: dict[str, str] = {}

    def line(self, text: str) -> None:
        if self.quiet:
            return
        with self._lock:
            if self._open:
                self.stream.write("\n")
                self._open = False
            self.stream.write(f"reclaim: {text}\n")
            self.stream.flush()
            self._said = time.perf_counter()

    def _redraw(self, text: str) -> None:
        with self._lock:
            self.stream.write(f"\rreclaim: {text}\033[K")
            self.stream.flush()
            self._open = True
            self._said = time.perf_counter()

    @contextmanager
    def stage(self, name: str):
        self.line(f"{name} …")
        t = time.perf_counter()
        stop = threading.Event()
        beat = None
        if not self.quiet and self.heartbeat_s:
            beat = threading.Thread(target=self._beat, args=(name, t, stop), daemon=True, name=f"progress-{name}")
            beat.start()
        self._stack.append(name)
        try:
            yield self
        finally:
            self._stack.remove(name)
            stop.set()
            if beat is not None:
                beat.join()
            took = time.perf_counter() - t
            self.timings[name] = took
            self.line(f"{name} {seconds_text(took)}")

    def _beat(self, name: str, t: float, stop: threading.Event) -> None:
        """While stage ``name`` runs: a line when nothing was said for ``heartbeat_s``."""
        while not stop.wait(min(1.0, self.heartbeat_s)):
            now = time.perf_counter()
            if now - self._said < self.heartbeat_s or (self._stack and self._stack[-1] != name):
                continue
            text = f"{name} … still running, {seconds_text(now - t)} so far"
            if name in self._counted:
                text += f" ({self._counted[name]})"
            if self.tty:
                self._redraw(text)
            else:
                self.line(text)

    def substage(self, stage: str, name: str, seconds: float) -> None:
        """A part of a stage that ended (the what-if's replays, capacity search, …)."""
        self.line(f"{stage}: {name} {seconds_text(seconds)}")

    def count(self, stage: str, done: int, label: str = "replays") -> None:
        """A redrawn progress line on a terminal (nothing elsewhere: a cron log gets the stage lines)."""
        self._counted[stage] = f"{done:,} {label} done"
        if self.quiet or not self.tty:
            return
        elapsed = time.perf_counter() - self._t0
        self._redraw(f"{stage}: {done:,} {label} done ({seconds_text(elapsed)} in all)")

    def done(self) -> None:
        if self.timings:
            parts = ", ".join(f"{k} {seconds_text(v)}" for k, v in self.timings.items())
            self.line(f"done in {seconds_text(time.perf_counter() - self._t0)} ({parts})")
