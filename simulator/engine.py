"""The event loop: one SimPy process advances the clock from event time to event time.

At each distinct time every event is applied first — attempt ends (in end-time, then start-order),
then the re-submissions they cause, then new submissions (in submit-time, then job-number order) —
and then the policy makes exactly one scheduling pass.  Nothing here depends on hash order or
wall-clock time, so the same inputs give identical results.
"""

from __future__ import annotations

import gc
import heapq
import math
import time
from bisect import bisect_left, insort
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import simpy

from .attempts import AttemptLog
from .kills import COMPLETED, PREEMPTED, attempt
from .nodes import node_model
from .policies.fifo import FIFO
from .pool import PoolModel
from .pool_replay import pool_plan, replay_on_pool
from .records import Job, Jobs, Pool
from .result import REASONS, SimResult
from .retry import Retry

INF = math.inf


@dataclass(slots=True, frozen=True)
class GiveUp:
    """Stop a run as soon as more than ``jobs`` jobs are known to wait longer than ``wait_s`` (a job
    still queued ``wait_s`` after its submission; rejected jobs do not count), or as soon as its mean
    bounded slowdown (``tau_s``, over completed jobs) is sure to exceed ``slowdown``: a capacity search
    needs no more of a run that has already missed its target.

    The slowdown bound: of the n jobs at most n complete, each with a bounded slowdown of at least 1, so
    the mean is at least 1 + (the excess over 1 of the jobs completed so far) / n."""

    wait_s: float
    jobs: int
    slowdown: float = math.inf
    tau_s: float = 10.0


@contextmanager
def paused_gc():
    """The cyclic garbage collector paused (as it was after): a run makes a few small objects per event and
    keeps none in cycles, but each collection of the oldest generation walks every object the process holds
    (8-20 % of a replay's time in a process that holds a month)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Simulator:
    """Replay jobs on a cluster under a scheduling policy.

    ``cluster`` is a :class:`~simulator.records.Pool` or :class:`~simulator.records.Cluster`;
    ``policy`` any object with ``schedule(ctx)`` (and optionally ``reset(ctx)``), default FIFO;
    ``fit``/``topology`` choose placement on a node cluster; ``kill_at_limit=False`` lets jobs run
    past their time limit (the Standard Workload Format replay rule); ``retry`` says what killed
    jobs come back with; ``restart_cost_s`` is the checkpoint/restart overhead a preempted resumable
    job pays when it resumes; ``give_up`` stops a run early once it has missed a wait target.

    A run on a :class:`~simulator.records.Pool` under FIFO or EASY in which every attempt completes is
    replayed by the compiled loop of :mod:`simulator.pool_replay` (the same records; docs/simulator.md).
    """

    def __init__(self, cluster, policy=None, *, fit: str = "first", topology: str = "none",
                 kill_at_limit: bool = True, retry: Retry | None = None, restart_cost_s: float = 0.0,
                 give_up: GiveUp | None = None):
        self.cluster = cluster
        self.policy = policy if policy is not None else FIFO()
        self.fit = fit
        self.topology = topology
        self.kill_at_limit = kill_at_limit
        self.retry = retry if retry is not None else Retry()
        if restart_cost_s < 0:
            raise ValueError("restart_cost_s must be ≥ 0")
        self.restart_cost_s = float(restart_cost_s)
        self.give_up = give_up

    def model(self, cpu_unit: int = 1, gpu_unit: int = 1):
        """The resource model for jobs whose CPUs and GPUs are counted in ``cpu_unit``/``gpu_unit``."""
        if isinstance(self.cluster, Pool):
            return PoolModel(self.cluster.procs * cpu_unit)
        return node_model(self.cluster, fit=self.fit, topology=self.topology, cpu_unit=cpu_unit, gpu_unit=gpu_unit)

    def run(self, jobs) -> SimResult:
        """Simulate ``jobs`` (a :class:`Jobs` table or a sequence of :class:`Job`) and return the result."""
        if not isinstance(jobs, Jobs):
            jobs = Jobs.from_records(jobs if not isinstance(jobs, Job) else [jobs])
        wall = time.perf_counter()
        plan = pool_plan(self, jobs)
        if plan is not None:  # FIFO or EASY on one pool, every attempt completing: compiled (simulator.pool_replay)
            return replay_on_pool(self, jobs, plan, wall, time.perf_counter)
        ctx = Context(self, jobs)
        env = simpy.Environment(initial_time=ctx.first_time())
        env.process(ctx.loop(env))
        with paused_gc():
            env.run()
        return ctx.result(time.perf_counter() - wall)


class Context:
    """The state of one run, as policies see it.

    Policies read ``now``, ``queue`` (pending job positions, in the order the policy keeps),
    ``free`` (the resource model's free state), ``model``, ``req[i]`` and ``est[i]`` (the current
    request and the scheduler's run-time estimate), ``running`` (sorted ``(estimated end, seq, i)``),
    ``alloc[i]`` and ``started[i]`` (a policy that keeps its own index of the running jobs may set
    ``keep_running`` False as it resets: ``running`` and ``running_in`` then stay empty, and
    ``running_key[i]`` still names each attempt); policies and orders may define ``started(ctx, i)``,
    ``stopped(ctx, i, t)``, ``requeued(ctx, i)`` and ``revised(ctx, i, old key)`` (a running job's
    estimated end moved) to hear of attempts, and ``finished(ctx)`` to hear that the run ended; they act
    through :meth:`start`, :meth:`preempt`, :meth:`note` (why a job waits this pass) and :meth:`wake_at`
    (ask for a pass at a later time).
    """

    def __init__(self, sim: Simulator, jobs: Jobs):
        self.sim = sim
        self.jobs = jobs
        c = jobs.columns
        order = np.lexsort((c["id"], c["submit"]))
        self.order = order
        n = len(order)
        self.n = n
        take = lambda name: c[name][order]  # noqa: E731
        self.ids = take("id").tolist()
        self.submit = take("submit").tolist()
        self.run_s = take("run").tolist()
        self.nodes_req = take("nodes").tolist()
        self.cpus_req = take("cpus").tolist()
        self.gpus_req = take("gpus").tolist()
        self.mem_peak = take("mem_peak").tolist()
        mem = take("mem")
        orig_mem = take("orig_mem")
        self.orig_mem = np.where(orig_mem >= 0, orig_mem, mem).tolist()
        limit = take("limit")
        orig_limit = take("orig_limit")
        self.orig_limit = np.where(np.isnan(orig_limit), limit, orig_limit).tolist()
        estimate = take("estimate")
        self.fixed_est = (~np.isnan(estimate)).tolist()
        est = np.where(np.isnan(estimate), np.where(np.isfinite(limit), limit, take("run")), estimate)
        self.orig_cpus = np.where(take("orig_cpus") >= 0, take("orig_cpus"), take("cpus")).tolist()
        self.orig_gpus = np.where(take("orig_gpus") >= 0, take("orig_gpus"), take("gpus")).tolist()
        self.stretch = take("stretch").tolist()
        self.est_after = take("estimate_after").tolist()
        self.min_runtime = take("min_runtime").tolist()
        self.resumable = take("resumable").tolist()
        self.partition = take("partition").tolist()
        self.user = take("user").tolist()
        self.account = take("account").tolist()
        self.qos = take("qos").tolist()
        traces = jobs.mem_traces
        self.traces = {pos: traces[int(k)] for pos, k in enumerate(order) if int(k) in traces} if traces else {}
        self.mem = mem.tolist()
        self.limit = limit.tolist()
        self.est = est.tolist()
        #: what one CPU and one GPU count in the jobs' requests (and in the model's free state)
        self.cpu_unit, self.gpu_unit = jobs.cpu_unit, jobs.gpu_unit
        self.model = model = sim.model(jobs.cpu_unit, jobs.gpu_unit)
        self.ever_fits = model.ever_fits
        self.free = model.initial()
        #: CPUs and GPUs free in total (on node clusters, kept with each start and stop; see :meth:`exhausted`)
        self.idle = model.idle(self.free)
        if isinstance(model, PoolModel):
            self.req = (take("nodes") * take("cpus")).tolist()
        else:
            self.req = [model.request(a, b, m, g, p) for a, b, m, g, p in
                        zip(self.nodes_req, self.cpus_req, self.mem, self.gpus_req, self.partition, strict=True)]
        self.kill_at_limit = sim.kill_at_limit
        self.retry = sim.retry
        self.restart_cost = sim.restart_cost_s
        self.policy = sim.policy
        self.now = 0.0
        self.queue: list = []
        self.running: list = []
        # on node clusters, the same entries again for each partition (by number; 0, every node, is
        # ``running`` itself) whose nodes they hold: a head's reservation reads only its own
        self.parts_of_node = [tuple(p for p in parts if p) for parts in model.node_parts] if model.kind != "pool" else None
        self.running_in = [[] for _ in model.part_id] if model.kind != "pool" else None
        self.parts_held: dict = {}
        self.ends: list = []
        self.wakes: list = []
        self.resubs: list = []
        self.seq = 0
        self.passes = 0
        self.releases = 0  # attempts stopped so far: policies compare it to see whether anything was freed
        self.revisions = 0  # running jobs whose estimated end moved (outlived their estimate) so far
        self.revise: list = []  # (time, seq, i): when a running attempt outlives its estimate
        self.on_nodes = model.kind != "pool"
        self.keep_running = True
        self.keep_released = self.on_nodes
        self.released: list = []  # the allocations given back, in order (node clusters only)
        # per job state
        nan = math.nan
        self.alloc = [None] * n
        self.started = [nan] * n
        self.first_start = [nan] * n
        self.final_end = [nan] * n
        self.queued_at = list(self.submit)
        self.enq_pass = [0] * n
        self.waited_passes = [0] * n
        self.attempts = [0] * n
        self.token = [-1] * n
        self.outcome = [None] * n
        self.running_key = [None] * n
        self.progress = [0.0] * n
        self.overhead = [0.0] * n
        self.state = ["PENDING"] * n
        self.reason_counts = [[0] * n for _ in REASONS]  # per reason, per job: passes noted
        self.pass_notes: dict = {}
        owners = (self.policy, getattr(self.policy, "order", None))
        self.requeue_hooks = [h for h in (getattr(o, "requeued", None) for o in owners) if h is not None]
        self.start_hooks = [h for h in (getattr(o, "started", None) for o in owners) if h is not None]
        self.stop_hooks = [h for h in (getattr(o, "stopped", None) for o in owners) if h is not None]
        self.revise_hooks = [h for h in (getattr(o, "revised", None) for o in owners) if h is not None]
        self.finish_hooks = [h for h in (getattr(o, "finished", None) for o in owners) if h is not None]
        self.log = AttemptLog(keep_allocs=model.kind != "pool")
        self.gave_up = False
        give_up = sim.give_up
        #: the run gives up once the completed jobs' bounded slowdowns exceed 1 by more than this in sum
        self.excess_allowed = INF if give_up is None else (give_up.slowdown - 1.0) * max(1, n)
        self.excess = 0.0

    def first_time(self) -> float:
        return self.submit[0] if self.n else 0.0

    # ---- the loop ---------------------------------------------------------------------------
    def loop(self, env):
        subs = self.submit
        n = self.n
        ends = self.ends
        wakes = self.wakes
        resubs = self.resubs
        revise = self.revise
        schedule = self.policy.schedule
        reset = getattr(self.policy, "reset", None)
        if reset is not None:
            reset(self)
        k = 0
        timeout = env.timeout
        heappop = heapq.heappop
        token = self.token
        finish = self._finish
        ever_fits = self.ever_fits
        req = self.req
        queue = self.queue
        queued_at = self.queued_at
        enq_pass = self.enq_pass
        notes = self.pass_notes
        tally = self.reason_counts
        give_up = self.sim.give_up
        watched = late = 0  # jobs (in submit order) whose wait target has passed; of them, late ones
        first_start = self.first_start
        state = self.state
        while True:
            t = subs[k] if k < n else INF
            if ends and ends[0][0] < t:
                t = ends[0][0]
            if wakes and wakes[0] < t:
                t = wakes[0]
            if resubs and resubs[0][0] < t:
                t = resubs[0][0]
            if revise and revise[0][0] < t:
                t = revise[0][0]
            if t == INF:
                break
            if give_up is not None:
                cut = t - give_up.wait_s
                while watched < k and subs[watched] < cut:
                    if not first_start[watched] <= subs[watched] + give_up.wait_s and state[watched] != "REJECTED":
                        late += 1
                    watched += 1
                if late > give_up.jobs:
                    self.gave_up = True
                    break
            if t > env.now:
                yield timeout(t - env.now)
            self.now = t
            while ends and ends[0][0] <= t:
                _, seq, i = heappop(ends)
                if token[i] == seq:
                    finish(i, t)
            if self.excess > self.excess_allowed:
                self.gave_up = True
                break
            while revise and revise[0][0] <= t:
                _, seq, i = heappop(revise)
                if token[i] == seq:
                    self._revise(i)
            while wakes and wakes[0] <= t:
                heappop(wakes)
            while resubs and resubs[0][0] <= t:
                self._requeue(heappop(resubs)[2], t)
            passes = self.passes
            while k < n and subs[k] <= t:
                if ever_fits(req[k]):
                    queued_at[k] = t
                    enq_pass[k] = passes
                    queue.append(k)
                else:
                    self.state[k] = "REJECTED"
                k += 1
            self.passes = passes + 1
            schedule(self)
            if notes:
                for i, r in notes.items():
                    tally[r][i] += 1
                notes.clear()

    # ---- actions for policies --------------------------------------------------------------
    def start(self, i: int, alloc, taken: bool = False) -> None:
        """Start job ``i`` now on ``alloc`` (which must fit the free state); ``taken``: the free state
        already holds the start (a policy that placed its pass's starts itself wrote the state they leave)."""
        now = self.now
        model = self.model
        if not taken:
            self.free = model.take(self.free, alloc)
        if self.on_nodes:  # keep the totals (a pool's free state is its total)
            cpus, _, gpus = model.held(alloc)
            idle = self.idle
            idle[0] -= cpus
            idle[1] -= gpus
        self.attempts[i] += 1
        if self.first_start[i] != self.first_start[i]:
            self.first_start[i] = now
        waited = self.passes - 1 - self.enq_pass[i]
        if waited > 0:
            self.waited_passes[i] += waited
        progress = self.progress[i]
        stretch = self.stretch[i]
        remaining = (self.run_s[i] - progress) * stretch + self.overhead[i]
        limit = self.limit[i] if self.kill_at_limit else INF
        mem = self.mem[i]
        if (mem <= 0 or self.mem_peak[i] <= mem) and remaining <= limit and i not in self.traces:
            dur, outcome = remaining, COMPLETED
        else:
            dur, outcome = attempt(remaining, progress, self.run_s[i], limit, mem, self.mem_peak[i],
                                   self.traces.get(i), stretch)
        self.seq += 1
        seq = self.seq
        heapq.heappush(self.ends, (now + dur, seq, i))
        est = self.est[i]
        if est < dur and self.est_after[i] == self.est_after[i]:  # it will outlive its estimate
            heapq.heappush(self.revise, (now + est, seq, i))
        key = (now + est, seq, i)
        self.running_key[i] = key
        if self.keep_running:
            insort(self.running, key)
            if self.parts_of_node is not None:
                nodes = alloc[2]
                parts = self.parts_of_node[nodes[0]] if len(nodes) == 1 else sorted({p for n in nodes for p in self.parts_of_node[n]})
                self.parts_held[i] = parts
                running_in = self.running_in
                for p in parts:
                    insort(running_in[p], key)
        self.token[i] = seq
        self.outcome[i] = outcome
        self.started[i] = now
        self.alloc[i] = alloc
        self.state[i] = "RUNNING"
        self.pass_notes.pop(i, None)
        for hook in self.start_hooks:
            hook(self, i)

    def preempt(self, i: int) -> None:
        """Stop running job ``i`` now and re-queue it (keeping its progress when resumable)."""
        now = self.now
        elapsed = now - self.started[i]
        self._stop(i, now, PREEMPTED)
        if self.resumable[i]:
            done = max(0.0, elapsed - self.overhead[i]) / self.stretch[i]
            self.progress[i] = min(self.run_s[i], self.progress[i] + done)
            self.overhead[i] = self.restart_cost
        else:
            self.progress[i] = 0.0
            self.overhead[i] = 0.0
        self._set_estimate(i)
        self._requeue(i, now)

    def note(self, i: int, reason: int) -> None:
        """Record why job ``i`` is still waiting after this pass (an index into :data:`REASONS`); the
        last note of a pass wins, and a job that starts in the pass is not counted."""
        self.pass_notes[i] = reason

    def exhausted(self) -> bool:
        """Whether no CPU and no GPU is free anywhere (``model.empty(free)``, without reading the state)."""
        if not self.on_nodes:
            return self.free <= 0
        idle = self.idle
        return not (idle[0] > 0 or idle[1] > 0)

    def wake_at(self, t: float) -> None:
        """Ask for a scheduling pass at time ``t``."""
        if t > self.now:
            heapq.heappush(self.wakes, t)

    # ---- internals -------------------------------------------------------------------------
    def _revise(self, i: int) -> None:
        """Running job ``i`` outlived its estimate: the scheduler's estimate becomes ``estimate_after``
        (counted from the attempt's start, less the work already done before it)."""
        old = self.running_key[i]
        new_end = self.started[i] + max(0.0, self.est_after[i] - self.progress[i] + self.overhead[i])
        if new_end <= old[0]:
            return
        key = (new_end, old[1], i)
        if self.keep_running:
            self._rekey(self.running, old, key)
            if self.parts_of_node is not None:
                for p in self.parts_held[i]:
                    self._rekey(self.running_in[p], old, key)
        self.running_key[i] = key
        self.revisions += 1
        for hook in self.revise_hooks:
            hook(self, i, old)

    @staticmethod
    def _rekey(entries: list, old, key) -> None:
        del entries[bisect_left(entries, old)]
        insort(entries, key)

    def _stop(self, i: int, t: float, outcome: str) -> None:
        for hook in self.stop_hooks:
            hook(self, i, t)
        alloc = self.alloc[i]
        self.free = self.model.give(self.free, alloc)
        self.releases += 1
        if self.keep_released:
            self.released.append(alloc)
        if self.keep_running:
            running = self.running
            key = self.running_key[i]
            del running[bisect_left(running, key)]
            if self.parts_of_node is not None:
                running_in = self.running_in
                for p in self.parts_held.pop(i):
                    held = running_in[p]
                    del held[bisect_left(held, key)]
        self.token[i] = -1
        cpus, mem, gpus = self.model.held(alloc)
        if self.on_nodes:
            idle = self.idle
            idle[0] += cpus
            idle[1] += gpus
        self.log.append(i, self.queued_at[i], self.started[i], t, outcome, cpus, mem, gpus, self.overhead[i], alloc)
        self.alloc[i] = None

    def _finish(self, i: int, t: float) -> None:
        outcome = self.outcome[i]
        self._stop(i, t, outcome)
        if outcome == COMPLETED:
            self.final_end[i] = t
            self.state[i] = COMPLETED
            if self.excess_allowed < INF:
                tau = self.sim.give_up.tau_s
                self.excess += max(0.0, (t - self.submit[i]) / max(self.run_s[i], tau) - 1.0)
            return
        self.final_end[i] = t
        self.state[i] = outcome
        if self.attempts[i] >= self.retry.max_attempts:
            return
        retry = self.retry
        mem, limit = self.mem[i], self.limit[i]
        if retry.rule == "original":  # the whole request its user made
            mem, limit = self.orig_mem[i], self.orig_limit[i]
        elif outcome == "OUT_OF_MEMORY":
            mem = retry.memory(mem, self.orig_mem[i])
        else:
            limit = retry.limit(limit, self.orig_limit[i])
        # cores and GPUs come back as asked, and the job runs at its own pace again
        cpus, gpus = self.orig_cpus[i], self.orig_gpus[i]
        if outcome == "OUT_OF_MEMORY":
            fixed = mem > self.mem[i]
        else:
            fixed = limit > self.limit[i] or (cpus, gpus) != (self.cpus_req[i], self.gpus_req[i])
        if not fixed:
            return  # the same request would fail the same way: the job stays failed
        self.mem[i], self.limit[i] = mem, limit
        if (cpus, gpus) != (self.cpus_req[i], self.gpus_req[i]):
            self.cpus_req[i], self.gpus_req[i] = cpus, gpus
            self.stretch[i] = 1.0
        self.req[i] = self.model.request(self.nodes_req[i], self.cpus_req[i], self.mem[i], self.gpus_req[i],
                                         self.partition[i])
        self.progress[i] = 0.0
        self.overhead[i] = 0.0
        self._set_estimate(i)
        if not self.model.ever_fits(self.req[i]):
            return
        delay = self.retry.delay_s
        if delay > 0:
            self.seq += 1
            heapq.heappush(self.resubs, (t + delay, self.seq, i))
            return
        self._requeue(i, t)

    def _set_estimate(self, i: int) -> None:
        base = self.est_base(i)
        self.est[i] = max(0.0, base - self.progress[i] + self.overhead[i])

    def est_base(self, i: int) -> float:
        c = self.jobs.columns
        if self.fixed_est[i]:
            return float(c["estimate"][self.order[i]])
        return self.limit[i] if self.limit[i] < INF else self.run_s[i]

    def _requeue(self, i: int, t: float) -> None:
        self.state[i] = "PENDING"
        self.queued_at[i] = t
        self.enq_pass[i] = self.passes
        self.queue.append(i)
        for hook in self.requeue_hooks:
            hook(self, i)

    # ---- result ----------------------------------------------------------------------------
    def result(self, wall_s: float) -> SimResult:
        for hook in self.finish_hooks:
            hook(self)
        return SimResult.build(self, wall_s, REASONS)
