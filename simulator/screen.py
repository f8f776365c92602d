"""Which of many waiting requests fit a free state, answered for all of them at once.

A backfill pass tests most waiting jobs against the same free state (and the same bound of the
reservation's extra) between two starts.  One NumPy comparison of every candidate's per-node need
against every node answers them together: a request fits when at least ``nodes`` nodes of its
partition each hold its per-node need.  On a model whose ``counts_exact`` holds, that is exactly
:meth:`~simulator.nodes.NodeModel.fits` finding a placement (``True``); otherwise a request that
fails surely fits nowhere (``False``) and one that passes must still be tried (``None``).
"""

from __future__ import annotations

import numpy as np


def fit_counts(state: np.ndarray, rows: np.ndarray, masks) -> np.ndarray:
    """Per request row (per-node CPUs, memory, GPUs, nodes, partition; see ``NodeModel.shapes``): whether
    at least ``nodes`` nodes of its partition each have its per-node need free in ``state``."""
    ok = state[0] >= rows[:, 0, None]
    mem = rows[:, 1]
    if mem.any():
        ok &= state[1] >= mem[:, None]
    gpus = rows[:, 2]
    if gpus.any():
        ok &= state[2] >= gpus[:, None]
    if masks is not None:
        ok &= masks[rows[:, 4]]
    return np.count_nonzero(ok, axis=1) >= rows[:, 3]


class Screen:
    """Answers for a pass's candidates ``q[positions[k]]`` (requests ``req[...]``, in examination order)
    against the free state and the extra's bound.  Between two starts the first ``after`` questions are
    left to the caller (``None``: a pass that starts a job every few candidates gains nothing from
    screening); then the candidates from the one asked on are screened together, once until the next
    start (:meth:`stale`).  Nothing is read before the first screening."""

    __slots__ = ("model", "req", "q", "positions", "after", "asked", "at", "free_ok", "lim_ok", "sure")

    def __init__(self, model, req: list, q: list, positions, after: int = 0):
        self.model = model
        self.req, self.q, self.positions = req, q, positions
        self.after = after
        self.asked = 0
        self.at = -1  # the first candidate the answers are for (-1: none computed)
        self.free_ok: list = []
        self.lim_ok: list = []
        self.sure = True if model.counts_exact else None  # what a pass means

    def stale(self) -> None:
        """A job started: the free state (and perhaps the extra) shrank."""
        self.at = -1
        self.asked = 0

    def answer(self, k: int, free: np.ndarray, lim: np.ndarray) -> tuple:
        """``(fits free, fits the bound)`` for candidate ``k``: each ``True``, ``False`` or ``None``
        (unknown: try it) as the module text says."""
        if self.at < 0 or k < self.at:
            self.asked += 1
            if self.asked <= self.after:
                return None, None
            req, q, rest = self.req, self.q, self.positions[k:]
            nums = np.fromiter((req[q[pos]].num for pos in rest), dtype=np.int64, count=len(rest))
            rows = self.model.shapes()[nums]
            masks = self.model.part_masks
            self.free_ok = fit_counts(free, rows, masks).tolist()
            self.lim_ok = self.free_ok if lim is free else fit_counts(lim, rows, masks).tolist()
            self.at = k
        j = k - self.at
        sure = self.sure
        return (sure if self.free_ok[j] else False), (sure if self.lim_ok[j] else False)
