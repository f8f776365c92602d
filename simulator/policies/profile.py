"""An availability profile: the free state over future time, given running jobs' estimated ends and
the reservations made so far (used by conservative backfill)."""

from __future__ import annotations

import math
from bisect import bisect_left


class Profile:
    """Breakpoint times ``times[k]`` with the free state ``states[k]`` holding on ``[times[k], times[k+1])``.

    Running jobs whose estimate has already passed (possible when jobs are not killed at their limit)
    are assumed to end immediately after now.
    """

    def __init__(self, model, now: float, free, running, alloc):
        self.model = model
        self.times = [now]
        self.states = [model.copy(free)]
        soon = math.nextafter(now, math.inf)
        for e, _, j in running:
            t = e if e > now else soon
            if t != self.times[-1]:
                self.times.append(t)
                self.states.append(model.copy(self.states[-1]))
            self.states[-1] = model.give(self.states[-1], alloc[j])

    def earliest(self, req, duration: float) -> tuple:
        """``(k, start time, allocation)``: the first breakpoint from which ``req`` fits for ``duration``."""
        model = self.model
        times, states = self.times, self.states
        n = len(times)
        for k in range(n):
            end = times[k] + duration
            avail = states[k]
            m = k + 1
            while m < n and times[m] < end:
                avail = model.cap(avail, states[m])
                m += 1
            a = model.fits(avail, req)
            if a is not None:
                return k, times[k], a
        return n, math.inf, None

    def _cut(self, t: float) -> int:
        """Index of the breakpoint at ``t`` (inserted, copying the state before it, if missing)."""
        times, states = self.times, self.states
        m = bisect_left(times, t)
        if m == len(times) or times[m] != t:
            times.insert(m, t)
            states.insert(m, self.model.copy(states[m - 1]))
        return m

    def reserve(self, start: float, duration: float, alloc) -> None:
        """Hold ``alloc`` over ``[start, start + duration)``."""
        self._apply(start, duration, alloc, self.model.take)

    def release(self, start: float, duration: float, alloc) -> None:
        """Give back a reservation made with :meth:`reserve`."""
        self._apply(start, duration, alloc, self.model.give)

    def _apply(self, start: float, duration: float, alloc, op) -> None:
        if alloc is None or duration <= 0 or math.isinf(start):
            return
        lo = self._cut(start)
        hi = self._cut(start + duration)
        for k in range(lo, hi):
            self.states[k] = op(self.states[k], alloc)
