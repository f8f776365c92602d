"""Numbers as the report prints them, in the config's locale and currency: units people use (``1-23:00:00``,
``282G``, ``45.7%``, ``$12,346``), never scientific notation.  Formatting only: nothing here computes a figure."""

from __future__ import annotations

import math
from dataclasses import dataclass

UNKNOWN = "n/a"
NBSP = "\u00a0"
SEPARATORS = {"en": (",", "."), "de": (".", ","), "fr": ("\u202f", ",")}


def missing(x) -> bool:
    if x is None:
        return True
    try:
        return isinstance(x, float) and math.isnan(x) or (hasattr(x, "__float__") and math.isnan(float(x)))
    except (TypeError, ValueError):
        return False


TEXT_CHARS = 120
WORD_CHARS = 24
ZWSP = "\u200b"
COMPACT_SUFFIXES = ("", "k", "M", "B", "T")


def breakable(text: str, limit: int = TEXT_CHARS) -> str:
    """Text for a table cell: cut to ``limit`` characters (marked with an ellipsis) and long runs without a space
    given break opportunities (zero-width spaces), so no string runs off the page."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    words = text.split(" ")
    if all(len(w) <= WORD_CHARS for w in words):
        return text
    return " ".join(w if len(w) <= WORD_CHARS else ZWSP.join(w[i:i + WORD_CHARS] for i in range(0, len(w), WORD_CHARS))
                    for w in words)


@dataclass(frozen=True)
class Formatter:
    locale: str = "en"
    symbol: str = "$"

    def _sep(self, text: str) -> str:
        group, dec = SEPARATORS[self.locale]
        return text.replace(",", "\0").replace(".", dec).replace("\0", group)

    def int(self, n) -> str:
        if missing(n):
            return UNKNOWN
        return self._sep(f"{int(round(float(n))):,}")

    def number(self, x) -> str:
        if missing(x):
            return UNKNOWN
        x = float(x)
        if math.isinf(x):
            return "∞" if x > 0 else "-∞"
        if abs(x) >= 100:
            return self._sep(f"{x:,.0f}")
        if abs(x) >= 10:
            return self._sep(f"{x:,.1f}")
        if x == 0 or abs(x) >= 0.1:
            return self._sep(f"{x:,.2f}")
        return self._sep(f"{x:.4f}".rstrip("0").rstrip("."))

    def pct(self, ratio) -> str:
        if missing(ratio):
            return UNKNOWN
        text = self._sep(f"{float(ratio) * 100:,.1f}")
        return f"{text}%" if self.locale == "en" else f"{text}{NBSP}%"

    def money(self, x) -> str:
        if missing(x):
            return UNKNOWN
        x = float(x)
        sign = "-" if x < 0 else ""
        body = self._sep(f"{abs(x):,.0f}" if abs(x) >= 1000 else f"{abs(x):,.2f}")
        sym = self.symbol.strip()
        return f"{sign}{self.symbol}{body}" if self.locale == "en" else f"{sign}{body}{NBSP}{sym}"

    def duration(self, seconds) -> str:
        """Slurm's ``D-HH:MM:SS`` (``HH:MM:SS`` under a day)."""
        if missing(seconds):
            return UNKNOWN
        s = int(round(float(seconds)))
        d, s = divmod(s, 86400)
        h, s = divmod(s, 3600)
        m, s = divmod(s, 60)
        return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"

    def gib(self, x) -> str:
        """GiB as Slurm's ``--mem`` writes them: ``282G``; under 10 GiB with one decimal (``3.5G``)."""
        if missing(x):
            return UNKNOWN
        x = float(x)
        return (self.int(x) if x >= 10 else self._sep(f"{x:.1f}")) + "G"

    def quantity(self, x, unit: str) -> str:
        return UNKNOWN if missing(x) else f"{self.number(x)}{NBSP}{unit}"

    def compact(self, x) -> str:
        """A large amount as people read it: ``950``, ``12.3k``, ``123k``, ``1.2M``, ``11.4M``, ``2.5B`` (one
        decimal under 100 of its suffix, none from 100); under 1,000 as :meth:`number`."""
        if missing(x):
            return UNKNOWN
        x = float(x)
        if math.isinf(x):
            return "∞" if x > 0 else "-∞"
        v, k = abs(x), 0
        while v >= 999.5 and k < len(COMPACT_SUFFIXES) - 1:
            v, k = v / 1000.0, k + 1
        if k == 0:
            return self.number(x)
        sign = "-" if x < 0 else ""
        return sign + self._sep(f"{v:.1f}" if v < 99.95 else f"{v:.0f}") + COMPACT_SUFFIXES[k]

    def nodes(self, x) -> str:
        """A count of nodes that may be fractional: whole from 1 (``18``, ``-13``), one decimal below
        (``0.3``, ``-0.4``), ``0`` for none."""
        if missing(x):
            return UNKNOWN
        x = float(x)
        if x == 0:
            return "0"
        return self.int(x) if abs(x) >= 1 else self._sep(f"{x:.1f}")

    def cell(self, value, kind: str) -> str:
        """One table cell by its column's kind."""
        if kind == "text":
            return "" if value is None or (isinstance(value, float) and math.isnan(value)) else breakable(str(value))
        if kind == "bool":
            return UNKNOWN if value is None else ("yes" if value else "no")
        if missing(value):
            return UNKNOWN
        return {"int": self.int, "num": self.number, "pct": self.pct, "usd": self.money, "dur": self.duration,
                "gib": self.gib, "qty": self.compact, "nodes": self.nodes}[kind](value)
