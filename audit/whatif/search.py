"""Bisection over whole numbers, driven from outside (ask, replay, tell), so that the probes of many
searches can be replayed together as one round of tasks.

A search looks for the smallest ``n`` in ``[lo, hi]`` that passes, assuming that passing is monotone
(a larger cluster, or a lighter load, never serves worse).  ``hi`` is taken to pass unless told
otherwise; when ``hi`` itself fails the answer is ``None``.
"""

from __future__ import annotations


class _Search:
    """What both searches answer: the smallest value found to pass (``None`` when ``hi`` fails), and whether
    there is nothing left to probe."""

    failed: bool
    hi: int | None

    def probe(self) -> int | None:
        raise NotImplementedError

    @property
    def answer(self) -> int | None:
        return None if self.failed else self.hi

    @property
    def done(self) -> bool:
        return self.probe() is None


class Bisection(_Search):
    """Smallest passing whole number in ``[lo, hi]``, to within ``tol`` (the answer passes and
    ``answer − tol`` is known to fail or is below ``lo``).  ``check_hi`` asks for ``hi`` first."""

    def __init__(self, lo: int, hi: int, *, tol: int = 1, check_hi: bool = False):
        if lo > hi:
            raise ValueError(f"empty search range [{lo}, {hi}]")
        self.lo = int(lo) - 1  # the largest value known to fail (lo − 1: nothing below lo counts)
        self.hi = int(hi)      # the smallest value known (or taken) to pass
        self.tol = max(1, int(tol))
        self.unchecked_hi = check_hi
        self.failed = False
        self.tried: dict = {}  # value → passed, in the order told

    def probe(self) -> int | None:
        """The next value to replay, or ``None`` when the search is done."""
        if self.failed:
            return None
        if self.unchecked_hi:
            return self.hi
        if self.hi - self.lo <= self.tol:
            return None
        return (self.lo + self.hi) // 2

    def tell(self, value: int, passed: bool) -> None:
        self.tried[value] = passed
        if value == self.hi and self.unchecked_hi:
            self.unchecked_hi = False
            self.failed = not passed
            return
        if passed:
            self.hi = min(self.hi, value)
        else:
            self.lo = max(self.lo, value)


class Gallop(_Search):
    """The smallest passing whole number in ``[lo, hi]`` searched outward from a ``guess`` (an answer
    known to be close, such as the unshaken one for a shaken copy): steps of 1, 2, 4 … down while it
    passes or up while it fails, then bisection between the last failing and first passing values.
    ``hi`` is taken to pass unless probed and found failing (then the answer is ``None``)."""

    def __init__(self, lo: int, hi: int, guess: int):
        if not lo <= guess <= hi:
            raise ValueError(f"guess {guess} outside [{lo}, {hi}]")
        self.floor, self.ceil = int(lo), int(hi)
        self.lo: int | None = None  # largest value known to fail
        self.hi: int | None = None  # smallest value known to pass
        self.step = 1
        self.next: int | None = int(guess)
        self.failed = False
        self.tried: dict = {}

    def probe(self) -> int | None:
        if self.failed:
            return None
        if self.next is not None:
            return self.next
        lo = self.floor - 1 if self.lo is None else self.lo
        if self.hi is None or self.hi - lo <= 1:
            return None
        return (lo + self.hi) // 2

    def tell(self, value: int, passed: bool) -> None:
        self.tried[value] = passed
        galloping = self.next == value
        if passed:
            self.hi = value if self.hi is None else min(self.hi, value)
        else:
            self.lo = value if self.lo is None else max(self.lo, value)
            if value >= self.ceil:
                self.failed = True
        if not galloping:  # known from elsewhere (the full pool's own replay): the gallop goes on
            return
        self.next = None
        if passed and self.lo is None and value > self.floor:  # still passing: go down
            self.next = max(self.floor, value - self.step)
        elif not passed and self.hi is None and value < self.ceil:  # still failing: go up
            self.next = min(self.ceil, value + self.step)
        self.step *= 2
