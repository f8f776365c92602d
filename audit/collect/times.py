"""The window a collection covers: ``--since 7d|DATE [--until DATE]``, cut into days."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

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
