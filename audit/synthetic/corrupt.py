"""Inject a known number of corrupted sacct lines at seeded positions (for quarantine tests)."""

from __future__ import annotations

import numpy as np

from .sacct_text import FIELDS

KINDS = ("truncated", "bad_duration", "bad_memory_unit", "wrong_field_count")
_IX = {f: i for i, f in enumerate(FIELDS)}


def corrupt_lines(rng: np.random.Generator, lines: list[str], kinds: np.ndarray, n: int) -> list[dict]:
    """Corrupt ``n`` step lines that carry usage (``.batch`` and srun steps) in place; return what was done.

    Step lines are chosen so that quarantining one never orphans others; each corruption breaks a field
    every sacct reader must parse: the field count, TotalCPU (duration) or MaxRSS (memory size).
    Line numbers are 1-based file lines (the header is line 1).
    """
    if n <= 0:
        return []
    cand = np.flatnonzero(np.isin(kinds, ["batch", "step"]))
    if n > len(cand):
        raise ValueError(f"--corrupt {n}: only {len(cand)} step lines can be corrupted")
    pos = np.sort(rng.choice(cand, size=n, replace=False))
    what = rng.choice(len(KINDS), size=n)
    done = []
    for p, w in zip(pos.tolist(), what.tolist(), strict=True):
        kind = KINDS[w]
        parts = lines[p].split("|")
        if kind == "truncated":
            cut = len("|".join(parts[: len(parts) // 2]))
            new, field = lines[p][:cut], "line"
        elif kind == "bad_duration":
            parts[_IX["TotalCPU"]] = "12:7x:00"
            new, field = "|".join(parts), "TotalCPU"
        elif kind == "bad_memory_unit":
            parts[_IX["MaxRSS"]] = parts[_IX["MaxRSS"]].rstrip("K") + "Q"
            new, field = "|".join(parts), "MaxRSS"
        else:
            new, field = "|".join(parts + ["extra"]), "line"
        lines[p] = new
        done.append({"line": p + 2, "kind": kind, "field": field})
    return done
