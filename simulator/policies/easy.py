"""Textbook EASY backfill (Lifka 1995; Mu'alem & Feitelson 2001).

Start jobs in order while they fit.  The first job that does not fit (the head) gets a reservation
at the *shadow time*: running jobs are released in order of estimated end (then start order) until
the head fits; that job's estimated end is the shadow time, and what has been released beyond the
head's placement is the *extra*.  With ``release_ties=True`` every job estimated to end at the shadow
time is released into the extra, not only those up to the one that made the head fit (a little
more backfilling: on KTH-SP2 the mean wait drops by about 2 %; see docs/simulator.md).  A later job may start now ("backfill") only if it fits now and either
its estimate ends by the shadow time or it fits inside the extra (which it then uses up), so it can
never delay the head's reservation.  ``depth`` caps how many queued jobs a pass examines (Slurm's
``bf_max_job_test``); ``None`` examines all.  ``record=True`` keeps each job's first reservation in
``reservations`` (job id → shadow time).
"""

from __future__ import annotations

import math

from ..result import RESERVATION, RESOURCES
from .fifo import start_head
from .order import SubmitOrder


class EASY:
    name = "easy"

    def __init__(self, order=None, depth: int | None = None, record: bool = False, release_ties: bool = False):
        if depth is not None and depth < 0:
            raise ValueError("depth must be ≥ 0 or None")
        self.order = order if order is not None else SubmitOrder()
        self.depth = depth
        self.record = record
        self.release_ties = release_ties
        self.reservations: dict = {}

    def reset(self, ctx) -> None:
        self.order.reset(ctx)
        self.reservations = {}

    def schedule(self, ctx) -> None:
        q = ctx.queue
        if not q:
            return
        self.order.arrange(ctx)
        started = start_head(ctx, q)
        if started:
            del q[:started]
        if not q:
            return
        head = q[0]
        ctx.note(head, RESOURCES)
        model = ctx.model
        if len(q) == 1 or model.empty(ctx.free):
            return
        shadow, extra = reservation(ctx, head, self.release_ties)
        if self.record and ctx.ids[head] not in self.reservations:
            self.reservations[ctx.ids[head]] = shadow
        backfill(ctx, q, shadow, extra, self.depth)


def reservation(ctx, head: int, release_ties: bool = False) -> tuple:
    """``(shadow time, extra free state)`` for the head job, from running jobs' estimated ends."""
    model = ctx.model
    fits = model.fits
    give = model.give
    held = model.held
    r = ctx.req[head]
    f = model.copy(ctx.free)
    running = ctx.running
    alloc = ctx.alloc
    need = r if model.kind == "pool" else r.total
    total = total_free(model, f)
    n = len(running)
    for k in range(n):
        e, _, j = running[k]
        a = alloc[j]
        f = give(f, a)
        total += held(a)[0]
        if total < need:
            continue
        if fits(f, r) is None:
            continue
        m = k + 1
        while release_ties and m < n and running[m][0] == e:
            f = give(f, alloc[running[m][2]])
            m += 1
        return e, model.take(f, fits(f, r))
    return math.inf, f


def total_free(model, f) -> int:
    return f if model.kind == "pool" else int(f[:, 0].sum())


def backfill(ctx, q, shadow: float, extra, depth) -> None:
    """Start later jobs that cannot delay the head's reservation (see the module text)."""
    model = ctx.model
    stop = len(q) if depth is None else min(len(q), depth + 1)
    if model.kind == "pool":
        started = _backfill_pool(ctx, q, stop, shadow, extra)
    else:
        started = _backfill_nodes(ctx, q, stop, shadow, extra)
    for pos in reversed(started):
        del q[pos]


def _backfill_pool(ctx, q, stop: int, shadow: float, extra: int) -> list:
    """The same rule on plain processor counts (the hot path of trace replays)."""
    req = ctx.req
    est = ctx.est
    now = ctx.now
    free = ctx.free
    notes = ctx.pass_notes
    started = []
    for pos in range(1, stop):
        i = q[pos]
        r = req[i]
        if r > free:
            continue
        if now + est[i] > shadow:
            if r > extra:
                notes[i] = RESERVATION
                continue
            extra -= r
        ctx.start(i, r)
        free = ctx.free
        started.append(pos)
        if free <= 0:
            break
    return started


def _backfill_nodes(ctx, q, stop: int, shadow: float, extra) -> list:
    model = ctx.model
    fits = model.fits
    req = ctx.req
    est = ctx.est
    now = ctx.now
    started = []
    for pos in range(1, stop):
        i = q[pos]
        r = req[i]
        a = fits(ctx.free, r)
        if a is None:
            continue
        if now + est[i] > shadow:
            a = fits(model.cap(ctx.free, extra), r)
            if a is None:
                ctx.note(i, RESERVATION)
                continue
            extra = model.take(extra, a)
        ctx.start(i, a)
        started.append(pos)
        if model.empty(ctx.free):
            break
    return started
