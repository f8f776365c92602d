"""Choosing nodes for a gang of identical per-node requests (pure functions on NumPy arrays).

``free`` is an (nodes, 3) array of free CPUs, memory bytes and GPUs; ``need`` a length-3 array per
node.  Every function returns the chosen node indices (sorted) or ``None``.
"""

from __future__ import annotations

import numpy as np

FIT_RULES = ("first", "best")
TOPOLOGY_RULES = ("none", "prefer", "require")


def candidates(free: np.ndarray, need: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Indices of allowed nodes with at least ``need`` of every resource free."""
    return np.flatnonzero(allowed & (free >= need).all(axis=1))


def leftover_score(free: np.ndarray, need: np.ndarray, capacity: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Best-fit score: the sum over resources of the share of the node left free after placing."""
    cap = np.where(capacity[cand] > 0, capacity[cand], 1)
    return ((free[cand] - need) / cap).sum(axis=1)


def pick(cand: np.ndarray, n: int, rule: str, free, need, capacity) -> np.ndarray:
    """``n`` nodes of ``cand``: the lowest-numbered (first fit) or the tightest (best fit)."""
    if rule == "first":
        return cand[:n]
    score = leftover_score(free, need, capacity, cand)
    order = np.lexsort((cand, score))
    return np.sort(cand[order[:n]])


def place(free: np.ndarray, need: np.ndarray, n: int, allowed: np.ndarray, switch: np.ndarray,
          capacity: np.ndarray, fit: str = "first", topology: str = "none"):
    """Nodes for a job of ``n`` nodes needing ``need`` on each, or ``None`` when it cannot start.

    Topology: ``prefer`` places the job inside one switch group when any can hold it (the first
    such group under first fit, the one with fewest fitting nodes under best fit) and spreads it
    otherwise; ``require`` refuses to spread.
    """
    cand = candidates(free, need, allowed)
    if len(cand) < n:
        return None
    if topology == "none" or n == 1:
        return pick(cand, n, fit, free, need, capacity)
    sw = switch[cand]
    counts = np.bincount(sw)
    able = np.flatnonzero(counts >= n)
    if len(able):
        chosen = able[0] if fit == "first" else able[np.argmin(counts[able])]
        return pick(cand[sw == chosen], n, fit, free, need, capacity)
    if topology == "require":
        return None
    return pick(cand, n, fit, free, need, capacity)
