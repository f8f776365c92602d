"""GPU-hour budgets over a rolling window, with protected minimum runtimes and preemption.

Each project (a job's account path) is entitled to ``shares[project]`` (a fraction) of the
cluster's GPU-seconds over the last ``window_s`` (default 7 days).  Jobs fall in three classes,
scheduled in this order (then by queue time and job number) with EASY backfill:

0. budgeted jobs of projects that have used less than their entitlement in the window;
1. budgeted jobs of projects at or over it, or with no share (they wait with reason ``budget`` when they cannot start);
2. jobs whose declared minimum runtime is 0: they run on spare capacity, use no budget and may be
   preempted at any time.

A budgeted job is protected from preemption for its declared minimum runtime and preemptible after
it; a job that declares none (``nan``) is never preempted.  When a class-0 job cannot start, running
jobs of a worse class that are past their protection are preempted for it — class 2 first, then the
most recently started — if that lets it start now.  Preempted jobs re-queue; resumable ones keep
their progress and pay the simulator's restart cost (``restart_cost_s``).  Usage is recounted every
``calc_period_s`` of simulated time.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

import numpy as np

from ..result import BUDGET
from .easy import EASY
from .order import place_new

UNDER, OVER, SPARE = 0, 1, 2


class Budget:
    name = "budget"

    def __init__(self, shares: dict | None = None, *, window_s: float = 7 * 86400.0, depth: int | None = None,
                 preempt: bool = True, calc_period_s: float = 300.0):
        self.shares = dict(shares or {})
        if any(v < 0 for v in self.shares.values()):
            raise ValueError("budget shares must be ≥ 0")
        self.window_s = float(window_s)
        self.depth = depth
        self.preempt = preempt
        self.calc_period_s = float(calc_period_s)
        self.preemptions = 0
        self.cls: dict = {}
        self._easy = EASY(order=_ByClass(self), depth=depth)

    def reset(self, ctx) -> None:
        self.used: dict = {}
        self.last_calc = None
        self.over: set = set()
        self.preemptions = 0
        gpus = ctx.sim.cluster.capacity()["gpus"] * ctx.gpu_unit  # in the jobs' units, as GPU use is counted
        self.entitled = {p: s * gpus * self.window_s for p, s in self.shares.items()}
        self.projects = sorted(set(ctx.account))
        index = {p: k for k, p in enumerate(self.projects)}
        self.project = np.array([index[a] for a in ctx.account], dtype=np.int64)
        self.budgeted = np.array(ctx.min_runtime) != 0
        # per node as the model holds it (with GPU devices one GPU or more is rounded up to whole devices)
        gpus = [r.need_t[2] for r in ctx.req] if ctx.on_nodes else ctx.gpus_req
        self.gpus_held = np.array(gpus, dtype=np.float64) * np.array(ctx.nodes_req, dtype=np.float64)
        #: running jobs that may ever be preempted (a declared minimum runtime)
        self.exposed: set = set()
        #: running budgeted jobs holding GPUs (the only running jobs that use budget)
        self.charging: set = set()
        #: attempts of budgeted jobs that held GPUs, as they ended: end, start, GPUs, project
        self.ended = _EndLog()
        self.key = [None] * ctx.n
        self.cls = _Classes(None)
        self._sorted_at = 0
        self._easy.reset(ctx)

    # ---- classes -----------------------------------------------------------------------
    @staticmethod
    def spare(ctx, i: int) -> bool:
        return ctx.min_runtime[i] == 0

    def job_class(self, ctx, i: int) -> int:
        if ctx.min_runtime[i] == 0:
            return SPARE
        account = ctx.account[i]
        return OVER if account in self.over or account not in self.entitled else UNDER

    def preemptible(self, ctx, i: int, now: float) -> bool:
        m = ctx.min_runtime[i]
        return m == 0 or (not math.isnan(m) and now - ctx.started[i] >= m)

    # ---- usage over the window ------------------------------------------------------------
    def window_usage(self, ctx) -> dict:
        """GPU-seconds each project's budgeted jobs held within the last ``window_s`` (vectorised:
        attempts that held GPUs are logged as they end, so the window is a suffix of that log)."""
        now = ctx.now
        lo = now - self.window_s
        total = np.zeros(len(self.projects))
        ended = self.ended
        if ended.n:
            end = ended.end[:ended.n]
            k0 = int(np.searchsorted(end, lo, side="right"))
            held = ended.gpus[k0:ended.n] * (end[k0:] - np.maximum(ended.start[k0:ended.n], lo))
            total += np.bincount(ended.project[k0:ended.n], weights=held, minlength=len(total))
        if self.charging:
            idx = np.fromiter(self.charging, dtype=np.int64, count=len(self.charging))
            started = np.array([ctx.started[i] for i in idx.tolist()])
            held = self.gpus_held[idx] * (now - np.maximum(started, lo))
            total += np.bincount(self.project[idx], weights=held, minlength=len(total))
        return {self.projects[k]: float(total[k]) for k in np.flatnonzero(total).tolist()}

    def _recount(self, ctx) -> None:
        self.used = self.window_usage(ctx)
        over = {p for p in set(self.used) | set(self.entitled) if self.used.get(p, 0.0) >= self.entitled.get(p, 0.0)}
        if over != self.over:
            self.key = [None] * ctx.n  # classes changed: recompute the order keys
        self.over = over

    # ---- one pass --------------------------------------------------------------------------
    def arrange(self, ctx) -> None:
        """The order (used by the inner EASY pass): class, then queue time, then job number."""
        key = self.key
        q = ctx.queue
        if self.cls.key is key and self._sorted_at == self.preemptions:
            # the queue is still sorted but for the jobs added since
            place_new(q, key, lambda i: (self.job_class(ctx, i), ctx.queued_at[i], ctx.ids[i]))
            return
        # keys were reset (classes changed) or preempted jobs were put back: sort afresh
        for i in q:
            if key[i] is None:
                key[i] = (self.job_class(ctx, i), ctx.queued_at[i], ctx.ids[i])
        q.sort(key=key.__getitem__)
        self.cls = _Classes(key)
        self._sorted_at = self.preemptions

    def schedule(self, ctx) -> None:
        q = ctx.queue
        if not q:
            return
        if self.last_calc is None or ctx.now - self.last_calc >= self.calc_period_s:
            self._recount(ctx)
            self.last_calc = ctx.now
        self._easy.schedule(ctx)
        cls = self.cls
        preempted = self.preemptions
        if self.preempt:
            self._preempt(ctx, q, cls)
        if self.over:
            key = self.key
            if self.preemptions == preempted:
                # the queue is still in key order (starts only removed jobs): class OVER is one run
                klass = _class_of(key)
                block = q[bisect_left(q, OVER, key=klass):bisect_right(q, OVER, key=klass)]
                ctx.pass_notes.update(dict.fromkeys(block, BUDGET))
            else:  # preempted jobs were put back at the end
                for i in q:
                    if key[i] is not None and key[i][0] == OVER:
                        ctx.note(i, BUDGET)

    def stopped(self, ctx, i: int, t: float) -> None:
        self.charging.discard(i)
        self.exposed.discard(i)
        if self.budgeted[i]:
            gpus = ctx.model.held(ctx.alloc[i])[2]
            if gpus:
                self.ended.add(t, ctx.started[i], gpus, self.project[i])

    def requeued(self, ctx, i: int) -> None:
        self.key[i] = None
        self._easy.requeued(ctx, i)

    def _preempt(self, ctx, q, cls) -> None:
        now = ctx.now
        model = ctx.model
        while q and cls.get(q[0]) == UNDER:
            head = q[0]
            victims = [i for i in self.exposed
                       if self.job_class(ctx, i) > UNDER and self.preemptible(ctx, i, now)]
            if not victims:
                return
            victims.sort(key=lambda i: (-self.job_class(ctx, i), -ctx.started[i], -ctx.ids[i]))
            f = model.copy(ctx.free)
            chosen = []
            fit = None
            for v in victims:
                f = model.give(f, ctx.alloc[v])
                chosen.append(v)
                fit = model.fits(f, ctx.req[head])
                if fit is not None:
                    break
            if fit is None:
                return
            for v in chosen:
                ctx.preempt(v)
                self.preemptions += 1
            a = model.fits(ctx.free, ctx.req[head])
            ctx.start(head, a)
            q.remove(head)
            for v in chosen:
                self.key[v] = (self.job_class(ctx, v), ctx.queued_at[v], ctx.ids[v])

    def started(self, ctx, i: int) -> None:
        if self.budgeted[i] and self.gpus_held[i] > 0:
            self.charging.add(i)
        m = ctx.min_runtime[i]
        if not math.isnan(m):
            self.exposed.add(i)
        if m > 0 and not math.isnan(m):
            ctx.wake_at(ctx.now + m)


class _ByClass:
    """The budget order as an order object for the inner EASY pass."""

    name = "budget"
    static = False

    def __init__(self, budget: Budget):
        self.budget = budget

    def reset(self, ctx) -> None:
        pass

    def arrange(self, ctx) -> None:
        self.budget.arrange(ctx)


def _class_of(key: list):
    """``i`` → the budget class in its order key."""
    return lambda i: key[i][0]


class _Classes:
    """``cls[i]`` / ``cls.get(i)``: a job's budget class, read from the order keys."""

    __slots__ = ("key",)

    def __init__(self, key: list):
        self.key = key

    def get(self, i: int, default=None):
        k = self.key[i]
        return default if k is None else k[0]

    def __getitem__(self, i: int) -> int:
        return self.key[i][0]


class _EndLog:
    """Attempts that held GPUs, in the order they ended (so ``end`` is sorted): numpy columns grown by
    doubling.  Views handed out stay valid: growing allocates new columns and never resizes one in use."""

    def __init__(self, capacity: int = 1024):
        self.n = 0
        self.end = np.empty(capacity)
        self.start = np.empty(capacity)
        self.gpus = np.empty(capacity)
        self.project = np.empty(capacity, dtype=np.int64)

    def add(self, end: float, start: float, gpus: float, project: int) -> None:
        n = self.n
        if n == len(self.end):
            self.end, self.start, self.gpus, self.project = (
                np.concatenate([c, np.empty_like(c)]) for c in (self.end, self.start, self.gpus, self.project))
        self.end[n], self.start[n], self.gpus[n], self.project[n] = end, start, gpus, project
        self.n = n + 1
