"""The compiled pool replay: whether a run may take it, and its result in the engine's own records.

A run on one :class:`~simulator.records.Pool` under FIFO or EASY backfill in submit order needs nothing
of the engine but its loop and the pass when nothing can change a job once it starts: every attempt
completes (no memory limit below the peak, no telemetry, no time limit reached, or jobs not killed at
their limit), no running job outlives an estimate that then moves, no early stop (``give_up``).  The
policy says whether its passes can be compiled (``pool_pass()``: plain FIFO or EASY in submit order, no
shortest-first backfill, no recorded reservations, nothing replaced on the instance, ``compiled``
left on); :class:`~simulator.engine.Simulator` then runs :func:`.pool_kernel.replay` instead of its
event loop.  The result is the one the engine gives, array for array: the same starts and ends, pass
counts, wait reasons and attempt log in the same order (``tests/simulator/test_pool_replay.py``).
"""

from __future__ import annotations

import math

import numpy as np

from .attempts import OUTCOMES
from .records import Jobs, Pool
from .result import REASONS, RESERVATION, RESOURCES, SimResult

#: the kernel's state codes (:data:`.pool_kernel.PENDING` …) by name
STATES = ("PENDING", "RUNNING", "COMPLETED", "REJECTED")


def pool_plan(sim, jobs: Jobs):
    """``(easy, release_ties, depth, arrays)`` when the run of ``jobs`` by ``sim`` may take the compiled
    pool replay, else None; ``arrays`` are the kernel's per-job inputs in submit order."""
    if not isinstance(sim.cluster, Pool) or sim.give_up is not None:
        return None
    plan = getattr(sim.policy, "pool_pass", None)
    spec = plan() if plan is not None else None
    if spec is None or jobs.mem_traces:
        return None
    c = jobs.columns
    order = np.lexsort((c["id"], c["submit"]))
    take = lambda name: c[name][order]  # noqa: E731
    run, limit, estimate = take("run"), take("limit"), take("estimate")
    req = take("nodes") * take("cpus")
    procs = sim.cluster.procs * jobs.cpu_unit
    fits = req <= procs
    # the attempt's length as :meth:`.engine.Context.start` computes it (no progress, no overhead)
    dur = (run - 0.0) * take("stretch") + 0.0
    est = np.where(np.isnan(estimate), np.where(np.isfinite(limit), limit, run), estimate)
    mem, peak = take("mem"), take("mem_peak")
    completes = ((mem <= 0) | (peak <= mem)) & (dur <= (limit if sim.kill_at_limit else math.inf))
    revised = (est < dur) & ~np.isnan(take("estimate_after"))
    if not (completes | ~fits).all() or (revised & fits).any():
        return None
    return (*spec, (order, take("submit"), dur, est, req, procs))


def replay_on_pool(sim, jobs: Jobs, plan, started: float, clock) -> SimResult:
    """Run the plan of :func:`pool_plan` and return the engine's :class:`SimResult` for it (``clock()`` read
    against ``started`` for its wall time)."""
    from .pool_kernel import replay  # Numba is imported only by the runs that take this path

    easy, release_ties, depth, (order, submit, dur, est, req, procs) = plan
    start, end, codes, enq_pass, waited, resources, reservation, finished, passes = replay(
        submit, dur, est, req, procs, easy, release_ties, depth)
    n = len(submit)
    # the states' text as ``np.array(list of names, dtype=str)`` gives it: as wide as the longest present
    present = np.flatnonzero(np.bincount(codes, minlength=len(STATES)))
    width = max((len(STATES[k]) for k in present.tolist()), default=1)
    state = np.array(STATES, dtype=f"<U{width}")[codes]
    reasons = np.zeros((n, len(REASONS)), dtype=np.int64)
    reasons[:, RESOURCES] = resources
    reasons[:, RESERVATION] = reservation
    k = len(finished)
    zeros = np.zeros(k, dtype=np.int64)
    return SimResult.assemble(
        jobs.columns, order, ids=jobs.columns["id"][order], submit=submit, run=jobs.columns["run"][order],
        start=start, end=end, attempts=((codes == 1) | (codes == 2)).astype(np.int64), state=state, reasons=reasons,
        waited=waited, enq_pass=enq_pass, a_job=finished, a_queued=submit[finished], a_start=start[finished], a_end=end[finished],
        a_outcome=np.array(OUTCOMES)[np.zeros(k, dtype=np.int8)], a_cpus=req[finished], a_mem=zeros,
        a_gpus=zeros.copy(), a_overhead=np.zeros(k), a_nodes=np.empty(k, dtype=object), cpu_unit=jobs.cpu_unit,
        gpu_unit=jobs.gpu_unit, capacity=sim.cluster.capacity(), passes=int(passes), wall_s=clock() - started,
        gave_up=False,
    )
