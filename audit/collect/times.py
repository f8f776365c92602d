"""The window a collection covers: ``--since 7d|DATE [--until DATE]``, cut into days."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

_AGO = re.compile(r"^(\d+)([dh])$")


def parse_when(text: str, now: datetime) -> datetime:
    """``7d`` / ``12h`` before ``now``, or ``YYYY-MM-DD`` / ``YYYY-MM-DDTHH:MM[:SS]`` (the cluster's local time)."""
    m = _AGO.match(text.strip())
    if m:
        n, unit = int(m.group(1)), m.group(2)
        return now - (timedelta(days=n) if unit == "d" else timedelta(hours=n))
    try:
        return datetime.fromisoformat(text.strip()).replace(tzinfo=None)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use 7d, 12h, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS)") from None


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def parse_window(since: str, until: str | None, now: datetime) -> tuple[datetime, datetime]:
    """``(start, end)`` of ``--since`` / ``--until`` (end ``now`` when not given); an empty window is an error."""
    t0, t1 = parse_when(since, now), parse_when(until, now) if until else now
    if t1 <= t0:
        raise ValueError(f"the window is empty: {stamp(t0)} .. {stamp(t1)}")
    return t0, t1


def epoch_utc(t: float) -> str:
    """Seconds since the epoch as an ISO time in UTC, whole seconds (``2026-12-01T00:00:00+00:00``)."""
    return datetime.fromtimestamp(t, UTC).replace(microsecond=0).isoformat()


def head_and_tail(path: Path, head: int = 1 << 16, tail: int = 1 << 18) -> tuple[bytes, bytes] | None:
    """The first ``head`` and the last ``tail`` bytes of a file (whose records say the span it covers), without
    reading what lies between; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            first = f.read(head)
            f.seek(max(0, f.seek(0, 2) - tail))
            return first, f.read()
    except OSError:
        return None


def days(since: datetime, until: datetime) -> list[tuple[datetime, datetime]]:
    """``[since, until)`` cut at midnights: one window a day, the first and last perhaps partial."""
    if until <= since:
        raise ValueError(f"the window is empty: {stamp(since)} .. {stamp(until)}")
    out = []
    t = since
    while t < until:
        nxt = min(until, datetime(t.year, t.month, t.day) + timedelta(days=1))
        out.append((t, nxt))
        t = nxt
    return out
