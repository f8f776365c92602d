"""What a killed job is re-submitted with: the original request (default) or an escalation."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Retry:
    """``rule="original"``: a job killed OUT_OF_MEMORY or TIMEOUT comes back with the request its user
    made (``orig_mem``/``orig_limit``; the same request when none is given).  ``rule="escalate"``:
    it comes back with ``factor`` × the request that failed, never less than the original.  A job is
    given at most ``max_attempts`` attempts; ``delay_s`` passes between the kill and re-submission."""

    rule: str = "original"
    factor: float = 2.0
    max_attempts: int = 10
    delay_s: float = 0.0

    def __post_init__(self):
        if self.rule not in ("original", "escalate"):
            raise ValueError(f"retry rule must be 'original' or 'escalate', got {self.rule!r}")
        if self.factor < 1 or self.max_attempts < 1 or self.delay_s < 0:
            raise ValueError("retry factor must be ≥ 1, max_attempts ≥ 1 and delay_s ≥ 0")

    def memory(self, failed: int, original: int) -> int:
        if self.rule == "original":
            return original
        return max(original, int(math.ceil(failed * self.factor)))

    def limit(self, failed: float, original: float) -> float:
        if self.rule == "original":
            return original
        return max(original, failed * self.factor)
