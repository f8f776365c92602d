"""The one orchestrator: a policy by name, a run, its metrics (what ``reclaim simulate`` calls)."""

from __future__ import annotations

import time

from .engine import Simulator
from .metrics import metrics
from .policies import EASY, FIFO, Budget, Conservative, FairTree, Multifactor

POLICY_NAMES = ("fifo", "easy", "conservative", "fairshare", "budget")


def make_policy(name: str, *, shares: dict | None = None, depth: int | None = None,
                half_life_s: float = 7 * 86400.0, window_s: float = 7 * 86400.0):
    """A fresh policy object: ``fifo``, ``easy``, ``conservative``, ``fairshare`` (multifactor priority
    with Fair Tree over EASY; ``shares`` are account shares) or ``budget`` (``shares`` are each
    project's fraction of GPU-hours over ``window_s``)."""
    if name == "fifo":
        return FIFO()
    if name == "easy":
        return EASY(depth=depth)
    if name == "conservative":
        return Conservative(depth=depth)
    if name == "fairshare":
        return EASY(order=Multifactor(FairTree(shares=shares, half_life_s=half_life_s)), depth=depth)
    if name == "budget":
        return Budget(shares, window_s=window_s, depth=depth)
    raise ValueError(f"unknown policy {name!r}: choose one of {', '.join(POLICY_NAMES)}")


def simulate(jobs, cluster, policy: str = "easy", *, shares: dict | None = None, depth: int | None = None,
             kill_at_limit: bool = True, **simulator_options) -> tuple:
    """Run ``jobs`` on ``cluster`` under the named policy; return ``(SimResult, metrics dict)``.
    The metrics carry ``policy`` and ``wall_s`` (the simulation's own wall time)."""
    t = time.perf_counter()
    sim = Simulator(cluster, make_policy(policy, shares=shares, depth=depth), kill_at_limit=kill_at_limit,
                    **simulator_options)
    result = sim.run(jobs)
    out = metrics(result, shares=shares if policy == "budget" else None)
    out["policy"] = policy
    out["wall_s"] = time.perf_counter() - t
    return result, out
