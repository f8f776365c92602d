"""When an attempt ends, and why: pure functions of the request, the actual use and the progress so far.

Memory: a job whose actual peak exceeds its memory limit is killed OUT_OF_MEMORY when its use
first crosses the limit.  With telemetry (samples of ``(seconds since start, bytes)``) that is the
first sample above the limit.  Without it we assume use grows linearly from zero at the start of the
work to the peak at its end, so a limit ``L`` below a peak ``M`` is crossed after ``run × L / M`` of
work — the latest defensible crossing (an earlier one only loses less work), and documented in
``docs/simulator.md``.  Time: a job whose remaining run exceeds its limit is killed TIMEOUT at the
limit.  When both apply, whichever comes first wins (memory on a tie).
"""

from __future__ import annotations

import math

import numpy as np

COMPLETED = "COMPLETED"
OUT_OF_MEMORY = "OUT_OF_MEMORY"
TIMEOUT = "TIMEOUT"
PREEMPTED = "PREEMPTED"


def oom_progress(run: float, mem_limit: int, mem_peak: int, trace=None) -> float:
    """Work done (seconds from the start of the job's work) when use first exceeds ``mem_limit``;
    ``inf`` when it never does (no limit given, i.e. ``mem_limit`` ≤ 0, or peak within the limit)."""
    if mem_limit <= 0 or mem_peak <= mem_limit:
        if trace is None:
            return math.inf
    if trace is not None:
        times, values = trace
        for t, v in zip(times, values, strict=True):
            if mem_limit > 0 and v > mem_limit:
                return float(t)
        return math.inf
    return run * mem_limit / mem_peak


def attempt(remaining: float, progress: float, run: float, limit: float, mem_limit: int, mem_peak: int,
            trace=None, stretch: float = 1.0) -> tuple:
    """``(duration, outcome)`` of an attempt that starts with ``progress`` seconds of work already done
    and ``remaining`` seconds still to do (``remaining`` includes any restart overhead and the
    ``stretch`` of a job that runs slower than logged: each second of work takes ``stretch`` seconds,
    and memory use follows the work)."""
    cross = oom_progress(run, mem_limit, mem_peak, trace)
    oom_after = max(0.0, cross - progress) * stretch if cross < math.inf else math.inf
    end = remaining
    outcome = COMPLETED
    if oom_after < end:
        end, outcome = oom_after, OUT_OF_MEMORY
    if limit < end:
        end, outcome = limit, TIMEOUT
    return end, outcome


def first_kills(run, stretch, limit, mem_limit, mem_peak, *, kill_at_limit: bool = True) -> np.ndarray:
    """:func:`attempt` for every job's first attempt at once (no progress, no overhead, no telemetry): per job,
    the seconds it runs before it is killed, NaN where it completes.  Arrays per job, memory per node."""
    run = np.asarray(run, dtype=np.float64)
    remaining = run * stretch
    mem_limit, mem_peak = np.asarray(mem_limit), np.asarray(mem_peak)
    with np.errstate(divide="ignore", invalid="ignore"):
        oom_after = np.where((mem_limit > 0) & (mem_peak > mem_limit), run * mem_limit / mem_peak * stretch, np.inf)
    oom = oom_after < remaining
    end = np.where(oom, oom_after, remaining)
    late = end > limit if kill_at_limit else np.zeros(len(run), dtype=bool)
    return np.where(late, limit, np.where(oom, oom_after, np.nan))
