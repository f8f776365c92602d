"""Multifactor priority (Slurm's priority/multifactor): a weighted sum of age, fair-share, job size and
QOS factors, each in [0, 1].  An *order*: pass it to FIFO, EASY or Conservative.

Priorities are recomputed every ``calc_period_s`` of simulated time (Slurm's PriorityCalcPeriod);
usage is charged then, for the part of every attempt since the last charge, kept as a rate per
association updated when attempts start and stop (billing:
``cpu_weight`` per CPU, ``gpu_weight`` per GPU, ``mem_weight`` per GiB), and decayed by the fair
tree's half-life.  Jobs arriving between recalculations get their priority on arrival.  Ties go to
the earlier queue time, then the lower job number.
"""

from __future__ import annotations

import numpy as np

from .fairtree import FairTree
from .order import place_new

GIB = 1024.0**3


class Multifactor:
    name = "multifactor"

    def __init__(self, fairtree: FairTree | None = None, *, age_weight: float = 1000.0,
                 fairshare_weight: float = 10000.0, size_weight: float = 0.0, qos_weight: float = 0.0,
                 max_age_s: float = 7 * 86400.0, qos_priority: dict | None = None,
                 calc_period_s: float = 300.0, cpu_weight: float = 1.0, gpu_weight: float = 0.0,
                 mem_weight: float = 0.0):
        self.fairtree = fairtree if fairtree is not None else FairTree()
        self.weights = (age_weight, fairshare_weight, size_weight, qos_weight)
        self.max_age_s = float(max_age_s)
        self.qos_priority = dict(qos_priority or {})
        self.calc_period_s = float(calc_period_s)
        self.billing = (cpu_weight, mem_weight / GIB, gpu_weight)

    def reset(self, ctx) -> None:
        self.fairtree.reset()
        self.last_calc = None
        self.log_seen = 0
        self.key = [None] * ctx.n
        self.total_cpus = max(1, ctx.sim.cluster.capacity()["cpus"] * ctx.cpu_unit)  # in the jobs' units
        wc, wm, wg = self.billing
        self.bill_weights = (wc / ctx.cpu_unit, wm, wg / ctx.gpu_unit)  # billing per whole CPU and GPU
        top = max(self.qos_priority.values(), default=0)
        self.qos_top = top if top > 0 else 1
        pairs = sorted(set(zip(ctx.account, ctx.user, strict=True)))
        index = {p: k for k, p in enumerate(pairs)}
        self.pairs = pairs
        self.assoc = np.array([index[p] for p in zip(ctx.account, ctx.user, strict=True)], dtype=np.int64)
        self.assoc = self.assoc.tolist()
        self.bill = [0.0] * ctx.n
        self.rate = np.zeros(len(pairs))
        self.offset = np.zeros(len(pairs))
        self.leaf_of = np.array([self.fairtree.leaf(a, u) for a, u in pairs], dtype=np.int64)
        self.job_leaf = self.leaf_of[np.array(self.assoc, dtype=np.int64)].tolist() if ctx.n else []
        self.factor_of = {}
        self.size_qos = None

    def _bill(self, held) -> float:
        cpus, mem, gpus = held
        wc, wm, wg = self.bill_weights
        return wc * cpus + wm * mem + wg * gpus

    def started(self, ctx, i: int) -> None:
        """Usage accrues at ``rate`` per association; ``offset`` corrects for attempts that start or
        stop between two recalculations, so each is charged exactly for its time held."""
        bill = self._bill(ctx.model.held(ctx.alloc[i]))
        self.bill[i] = bill
        a = self.assoc[i]
        self.rate[a] += bill
        if self.last_calc is not None:
            self.offset[a] -= bill * (ctx.now - self.last_calc)

    def stopped(self, ctx, i: int, t: float) -> None:
        bill = self.bill[i]
        a = self.assoc[i]
        self.rate[a] -= bill
        if self.last_calc is not None:
            self.offset[a] += bill * (t - self.last_calc)
        else:
            self.offset[a] += bill * (t - ctx.started[i])

    def _charge(self, ctx) -> None:
        """Charge the usage since the last recalculation to every association (O(associations))."""
        now = ctx.now
        tree = self.fairtree
        tree.decay(now)
        if self.last_calc is None:
            total = self.offset + self.rate * 0.0
            for i in (j for _, _, j in ctx.running):
                total[self.assoc[i]] += self.bill[i] * (now - ctx.started[i])
        else:
            total = self.rate * (now - self.last_calc) + self.offset
        self.offset = np.zeros(len(self.pairs))
        live = total > 0
        if live.any():
            tree.charge_leaves(self.leaf_of[live], total[live])
        self.factor_of = tree.node_factors()

    def _size_qos(self, ctx) -> list:
        """Each job's weighted size and QOS terms (fixed for the job), computed once."""
        if self.size_qos is None:
            ws, wq = self.weights[2:]
            self.size_qos = [(ws * min(1.0, a * b / self.total_cpus), wq * (self.qos_priority.get(q, 0) / self.qos_top))
                             for a, b, q in zip(ctx.nodes_req, ctx.cpus_req, ctx.qos, strict=True)]
        return self.size_qos

    def priority(self, ctx, i: int) -> float:
        wa, wf = self.weights[:2]
        age = min(1.0, (ctx.now - ctx.queued_at[i]) / self.max_age_s) if self.max_age_s > 0 else 1.0
        fs = self.factor_of.get(self.job_leaf[i], 0.0)
        size, qos = self._size_qos(ctx)[i]  # already weighted
        return wa * age + wf * fs + size + qos

    def arrange(self, ctx) -> None:
        q = ctx.queue
        key = self.key
        if self.last_calc is None or ctx.now - self.last_calc >= self.calc_period_s:
            self._charge(ctx)
            now = self.last_calc = ctx.now
            # priority() for every queued job, inline (the same terms added in the same order)
            wa, wf = self.weights[:2]
            max_age = self.max_age_s
            fs = self.factor_of.get
            job_leaf = self.job_leaf
            queued_at = ctx.queued_at
            ids = ctx.ids
            size_qos = self._size_qos(ctx)
            for i in q:
                age = min(1.0, (now - queued_at[i]) / max_age) if max_age > 0 else 1.0
                size, qos = size_qos[i]
                key[i] = (-(wa * age + wf * fs(job_leaf[i], 0.0) + size + qos), queued_at[i], ids[i])
            q.sort(key=key.__getitem__)
            return
        # between recalculations the queue stays sorted but for the jobs added since the last pass
        place_new(q, key, lambda i: (-self.priority(ctx, i), ctx.queued_at[i], ctx.ids[i]))

    def requeued(self, ctx, i: int) -> None:
        self.key[i] = None
