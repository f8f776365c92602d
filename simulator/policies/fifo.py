"""First come, first served: start jobs from the head of the queue until one does not fit.

``compiled=True`` (the default) lets a run on one pool take the compiled replay of
:mod:`simulator.pool_replay` when it qualifies; ``False`` always runs the code below."""

from __future__ import annotations

from ..result import RESOURCES
from .order import SubmitOrder


class FIFO:
    name = "fifo"

    def __init__(self, order=None, compiled: bool = True):
        self.order = order if order is not None else SubmitOrder()
        self.compiled = compiled

    def pool_pass(self):
        """``(easy, release_ties, depth)`` for the compiled pool replay (:mod:`simulator.pool_replay`), or None
        when these passes are not its own: ``compiled`` off, another order, or a pass replaced on the instance."""
        if not self.compiled or type(self) is not FIFO or type(self.order) is not SubmitOrder or replaced(self):
            return None
        return False, False, -1

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


def replaced(policy) -> bool:
    """Whether a pass or a hook was set on the policy object itself (not its class)."""
    return not vars(policy).keys().isdisjoint(("schedule", "reset", "requeued", "started", "stopped", "revised",
                                                "finished", "arrange"))


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
