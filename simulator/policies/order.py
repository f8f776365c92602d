"""The default order: first come, first served (queue time, then job number)."""

from __future__ import annotations


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
