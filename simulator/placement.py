"""Choosing nodes for a gang of identical per-node requests (pure functions on NumPy arrays).

``free`` is a (3, nodes) array of free CPUs, memory bytes and GPUs (one row per resource, so a
partition's nodes are contiguous slices); ``need`` the per-node need as a tuple.  A partition is the
node range ``[lo, hi)`` with an optional boolean ``mask`` over all nodes when it is not a range.
Every function returns the chosen node indices (ascending) or ``None``.
"""

from __future__ import annotations

import numpy as np

FIT_RULES = ("first", "best")
TOPOLOGY_RULES = ("none", "prefer", "require")


def fitting(free: np.ndarray, need: tuple, lo: int, hi: int, mask) -> np.ndarray:
    """Whether each node ``lo … hi − 1`` of the partition has at least ``need`` of every resource free."""
    c, m, g = need
    ok = free[0, lo:hi] >= c
    if m:
        ok &= free[1, lo:hi] >= m
    if g:
        ok &= free[2, lo:hi] >= g
    if mask is not None:
        ok &= mask[lo:hi]
    return ok


def candidates(free: np.ndarray, need: tuple, lo: int, hi: int, mask) -> np.ndarray:
    """Indices of the partition's nodes with at least ``need`` of every resource free."""
    idx = fitting(free, need, lo, hi, mask).nonzero()[0]
    return idx + lo if lo else idx


def first_candidate(free: np.ndarray, need: tuple, lo: int, hi: int, mask) -> int:
    """The lowest-numbered node of the partition with at least ``need`` free, or -1."""
    if hi <= lo:
        return -1
    ok = fitting(free, need, lo, hi, mask)
    k = int(ok.argmax())
    return k + lo if ok[k] else -1


def leftover_score(free: np.ndarray, need: tuple, capacity: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Best-fit score: the sum over resources of the share of the node left free after placing."""
    cap = capacity[:, cand]
    cap = np.where(cap > 0, cap, 1)
    return ((free[:, cand] - np.array(need)[:, None]) / cap).sum(axis=0)


def pick(cand: np.ndarray, n: int, rule: str, free, need, capacity) -> np.ndarray:
    """``n`` nodes of ``cand``: the lowest-numbered (first fit) or the tightest (best fit)."""
    if rule == "first":
        return cand[:n]
    score = leftover_score(free, need, capacity, cand)
    order = np.lexsort((cand, score))
    return np.sort(cand[order[:n]])


def place(free: np.ndarray, need: tuple, n: int, lo: int, hi: int, mask, switch: np.ndarray,
          capacity: np.ndarray, fit: str = "first", topology: str = "none", cand: np.ndarray | None = None):
    """Nodes for a job of ``n`` nodes needing ``need`` on each, or ``None`` when it cannot start.

    Topology: ``prefer`` places the job inside one switch group when any can hold it (the first
    such group under first fit, the one with fewest fitting nodes under best fit) and spreads it
    otherwise; ``require`` refuses to spread.  ``cand``: the fitting nodes when the caller knows
    them (a model with more to check than the three rows).
    """
    if cand is None:
        cand = candidates(free, need, lo, hi, mask)
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
