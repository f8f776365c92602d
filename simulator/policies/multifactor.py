"""Multifactor priority (Slurm's priority/multifactor): a weighted sum of age, fair-share, job size and
QOS factors, each in [0, 1].  An *order*: pass it to FIFO, EASY or Conservative.

Priorities are recomputed every ``calc_period_s`` of simulated time (Slurm's PriorityCalcPeriod);
usage is charged then, for the part of every attempt since the last charge (billing:
``cpu_weight`` per CPU, ``gpu_weight`` per GPU, ``mem_weight`` per GiB), and decayed by the fair
tree's half-life.  Jobs arriving between recalculations get their priority on arrival.  Ties go to
the earlier queue time, then the lower job number.
"""

from __future__ import annotations

from .fairtree import FairTree

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
        self.factor: dict = {}
        self.key = [None] * ctx.n
        self.total_cpus = max(1, ctx.sim.cluster.capacity()["cpus"])
        top = max(self.qos_priority.values(), default=0)
        self.qos_top = top if top > 0 else 1
        for a, u in sorted(set(zip(ctx.account, ctx.user, strict=True))):
            self.fairtree.touch(a, u)

    def _bill(self, ctx, i, held) -> float:
        cpu, mem, gpu = held
        wc, wm, wg = self.billing
        return wc * cpu + wm * mem + wg * gpu

    def _charge(self, ctx) -> None:
        now = ctx.now
        last = self.last_calc
        tree = self.fairtree
        tree.decay(now)
        log = ctx.log
        for k in range(self.log_seen, len(log)):
            i, start, end = log.job[k], log.start[k], log.end[k]
            cpus, mem, gpus = log.cpus[k], log.mem[k], log.gpus[k]
            t0 = start if last is None or start > last else last
            if end > t0:
                tree.charge(ctx.account[i], ctx.user[i], (end - t0) * self._bill(ctx, i, (cpus, mem, gpus)))
        self.log_seen = len(log)
        held = ctx.model.held
        for _, _, i in ctx.running:
            start = ctx.started[i]
            t0 = start if last is None or start > last else last
            if now > t0:
                tree.charge(ctx.account[i], ctx.user[i], (now - t0) * self._bill(ctx, i, held(ctx.alloc[i])))
        self.factor = tree.factors()

    def priority(self, ctx, i: int) -> float:
        wa, wf, ws, wq = self.weights
        age = min(1.0, (ctx.now - ctx.queued_at[i]) / self.max_age_s) if self.max_age_s > 0 else 1.0
        fs = self.factor.get(f"{ctx.account[i]}:{ctx.user[i]}", 0.0)
        size = min(1.0, ctx.nodes_req[i] * ctx.cpus_req[i] / self.total_cpus)
        qos = self.qos_priority.get(ctx.qos[i], 0) / self.qos_top
        return wa * age + wf * fs + ws * size + wq * qos

    def arrange(self, ctx) -> None:
        q = ctx.queue
        key = self.key
        if self.last_calc is None or ctx.now - self.last_calc >= self.calc_period_s:
            self._charge(ctx)
            self.last_calc = ctx.now
            for i in q:
                key[i] = (-self.priority(ctx, i), ctx.queued_at[i], ctx.ids[i])
        else:
            for i in q:
                if key[i] is None:
                    key[i] = (-self.priority(ctx, i), ctx.queued_at[i], ctx.ids[i])
        q.sort(key=key.__getitem__)

    def requeued(self, ctx, i: int) -> None:
        self.key[i] = None
