"""Conservative backfill (Mu'alem & Feitelson 2001) with compression.

Every queued job holds a reservation: the earliest time it fits for its whole estimated run without
disturbing anyone else's.  At each pass the availability profile is rebuilt from running jobs'
estimated ends and the reservations held; then, in queue order, each job gives its reservation back
and takes the earliest slot now free — never later than the one it held, which is free again — and
jobs whose slot is now start now.  So reservations only move earlier (property-tested) and a job
that arrives later never delays one that arrived earlier.  ``depth`` caps how many queued jobs are
re-placed per pass (others keep their reservations; a job beyond it without one waits).
``record=True`` keeps each job's first reservation in ``reservations`` (job id → time).
"""

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
        self.slots: dict = {}

    def reset(self, ctx) -> None:
        self.order.reset(ctx)
        self.reservations = {}
        self.slots = {}

    def requeued(self, ctx, i: int) -> None:
        self.slots.pop(i, None)

    def schedule(self, ctx) -> None:
        q = ctx.queue
        if not q:
            return
        self.order.arrange(ctx)
        now = ctx.now
        profile = Profile(ctx.model, now, ctx.free, ctx.running, ctx.alloc)
        slots = self.slots
        for i in q:
            slot = slots.get(i)
            if slot is None:
                continue
            if slot[0] < now:  # its time passed unstarted (a job outran its estimate): place it afresh
                del slots[i]
            else:
                profile.reserve(*slot)
        stop = len(q) if self.depth is None else min(len(q), self.depth)
        started = []
        first_waiting = True
        for pos in range(stop):
            i = q[pos]
            old = slots.pop(i, None)
            if old is not None:
                profile.release(*old)
            duration = ctx.est[i]
            k, t0, a = profile.earliest(ctx.req[i], duration)
            if k == 0:
                ctx.start(i, a)
                started.append(pos)
            else:
                if first_waiting:
                    ctx.note(i, RESOURCES)
                    first_waiting = False
                slots[i] = (t0, duration, a)
                if self.record and ctx.ids[i] not in self.reservations:
                    self.reservations[ctx.ids[i]] = t0
            profile.reserve(t0, duration, a)
        for pos in reversed(started):
            del q[pos]
