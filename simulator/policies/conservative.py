"""Conservative backfill (Mu'alem & Feitelson 2001): every queued job, in order, gets a reservation
at the earliest time it fits for its whole estimated run without moving any earlier reservation;
jobs whose reservation is now start now.  Reservations are rebuilt at every pass from running jobs'
estimated ends, so they move earlier when jobs end early and never later.  ``depth`` caps how many
queued jobs get a reservation per pass."""

from __future__ import annotations

from ..result import RESOURCES
from .order import SubmitOrder
from .profile import Profile


class Conservative:
    name = "conservative"

    def __init__(self, order=None, depth: int | None = None, record: bool = False):
        self.order = order if order is not None else SubmitOrder()
        self.depth = depth
        self.record = record
        self.reservations: dict = {}

    def reset(self, ctx) -> None:
        self.order.reset(ctx)
        self.reservations = {}

    def schedule(self, ctx) -> None:
        q = ctx.queue
        if not q:
            return
        self.order.arrange(ctx)
        now = ctx.now
        profile = Profile(ctx.model, now, ctx.free, ctx.running, ctx.alloc)
        stop = len(q) if self.depth is None else min(len(q), self.depth)
        started = []
        first_waiting = True
        for pos in range(stop):
            i = q[pos]
            k, t0, a = profile.earliest(ctx.req[i], ctx.est[i])
            if k == 0:
                ctx.start(i, a)
                started.append(pos)
            else:
                if first_waiting:
                    ctx.note(i, RESOURCES)
                    first_waiting = False
                if self.record and ctx.ids[i] not in self.reservations:
                    self.reservations[ctx.ids[i]] = t0
            profile.reserve(t0, ctx.est[i], a)
        if started:
            drop = set(started)
            q[:] = [i for k, i in enumerate(q) if k not in drop]
