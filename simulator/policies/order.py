"""The default order: first come, first served (queue time, then job number)."""

from __future__ import annotations

from bisect import insort


def place_new(q: list, key: list, make_key) -> None:
    """Place the jobs appended to a sorted queue since it was last sorted (the engine appends them; only
    they have no key yet) by bisection, each after any equal key, as a stable sort would.
    ``make_key(i)`` gives a new job's key."""
    k = len(q)
    while k and key[q[k - 1]] is None:
        k -= 1
    if k == len(q):
        return
    new = q[k:]
    del q[k:]
    for i in new:
        key[i] = make_key(i)
        insort(q, i, key=key.__getitem__)


class SubmitOrder:
    """Keep the queue in arrival order.  The engine appends jobs as they arrive (re-submissions after
    the events of their time, new submissions in job-number order), so nothing needs sorting."""

    name = "submit"
    #: the order of queued jobs never changes between passes (new jobs go to the back)
    static = True

    def reset(self, ctx) -> None:
        pass

    def arrange(self, ctx) -> None:
        pass
