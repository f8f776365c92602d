"""First come, first served: start jobs from the head of the queue until one does not fit."""

from __future__ import annotations

from ..result import RESOURCES
from .order import SubmitOrder


class FIFO:
    name = "fifo"

    def __init__(self, order=None):
        self.order = order if order is not None else SubmitOrder()

    def reset(self, ctx) -> None:
        self.order.reset(ctx)

    def schedule(self, ctx) -> None:
        q = ctx.queue
        if not q:
            return
        self.order.arrange(ctx)
        started = start_head(ctx, q)
        if started:
            del q[:started]
        if q:
            ctx.note(q[0], RESOURCES)


def start_head(ctx, q) -> int:
    """Start jobs from the front of ``q`` while they fit; return how many started."""
    fits = ctx.model.fits
    req = ctx.req
    k = 0
    n = len(q)
    while k < n:
        a = fits(ctx.free, req[q[k]])
        if a is None:
            break
        ctx.start(q[k], a)
        k += 1
    return k
