"""Plain output records of a run: per-job arrays, the attempt log, and per-job records on demand."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: why a job waited at a scheduling pass (index into the ``reasons`` columns)
REASONS = ("resources", "priority", "reservation", "budget")
RESOURCES, PRIORITY, RESERVATION, BUDGET = range(4)


def whole_units(held: np.ndarray, unit: int) -> np.ndarray:
    """CPUs or GPUs counted in ``unit`` (1000: millis) as CPUs or GPUs (unchanged when ``unit`` is 1)."""
    return held if unit == 1 else held / unit


@dataclass(slots=True, frozen=True)
class JobRecord:
    """One job's outcome.  ``wait`` is first start minus submission; ``waits`` counts the scheduling
    passes the job waited through, by reason (see :data:`REASONS`)."""

    id: int
    submit: float
    start: float
    end: float
    wait: float
    attempts: int
    kills: tuple
    state: str
    waits: dict


@dataclass(slots=True)
class SimResult:
    """Arrays over jobs (sorted by submit time, then job number) and over attempts.

    Jobs: ``id, submit, run, start`` (first start), ``end`` (last attempt's end), ``wait``,
    ``attempts, ooms, timeouts, preemptions``, ``state`` (COMPLETED, OUT_OF_MEMORY, TIMEOUT after the
    last allowed attempt, PENDING, REJECTED), ``reasons`` (jobs × 4 pass counts), ``user, account, gpu_type``,
    ``cpus, gpus`` (per job totals of the first request).  Attempts: ``a_job`` (position in the job
    arrays), ``a_queued, a_start, a_end, a_outcome, a_cpus, a_mem, a_gpus`` (totals held: CPUs and GPUs
    in whole units, as floats when the jobs counted them in millis),
    ``a_overhead`` (restart seconds paid), ``a_nodes`` (tuple of node indices held; ``None`` for a pool).
    ``gave_up``: the run stopped early (see :class:`~simulator.engine.GiveUp`); the arrays then describe
    the run up to that moment.
    """

    id: np.ndarray
    submit: np.ndarray
    run: np.ndarray
    start: np.ndarray
    end: np.ndarray
    wait: np.ndarray
    attempts: np.ndarray
    ooms: np.ndarray
    timeouts: np.ndarray
    preemptions: np.ndarray
    state: np.ndarray
    reasons: np.ndarray
    user: np.ndarray
    account: np.ndarray
    gpu_type: np.ndarray
    cpu_util: np.ndarray
    gpu_util: np.ndarray
    mem_peak: np.ndarray
    resumable: np.ndarray
    a_job: np.ndarray
    a_queued: np.ndarray
    a_start: np.ndarray
    a_end: np.ndarray
    a_outcome: np.ndarray
    a_cpus: np.ndarray
    a_mem: np.ndarray
    a_gpus: np.ndarray
    a_overhead: np.ndarray
    a_nodes: np.ndarray
    capacity: dict
    passes: int
    wall_s: float
    gave_up: bool = False

    @classmethod
    def build(cls, ctx, wall_s: float, reasons_names=REASONS) -> SimResult:
        n = ctx.n
        log = ctx.log
        a_nodes = np.empty(len(log), dtype=object)
        if log.keep_allocs:
            nodes_of = ctx.model.nodes_of
            for k, a in enumerate(log.allocs):
                a_nodes[k] = nodes_of(a)
        reasons = np.zeros((n, len(reasons_names)), dtype=np.int64)
        for k, counts in enumerate(ctx.reason_counts):
            reasons[:, k] = counts
        state = np.array(ctx.state, dtype=str)
        return cls.assemble(
            ctx.jobs.columns, ctx.order, ids=np.array(ctx.ids, dtype=np.int64),
            submit=np.array(ctx.submit, dtype=np.float64), run=np.array(ctx.run_s, dtype=np.float64),
            start=np.array(ctx.first_start, dtype=np.float64), end=np.array(ctx.final_end, dtype=np.float64),
            attempts=np.array(ctx.attempts, dtype=np.int64), state=state, reasons=reasons,
            waited=np.array(ctx.waited_passes, dtype=np.int64), enq_pass=ctx.enq_pass, a_job=log.column("job"),
            a_queued=log.column("queued"), a_start=log.column("start"), a_end=log.column("end"),
            a_outcome=log.outcomes(), a_cpus=log.column("cpus"), a_mem=log.column("mem"), a_gpus=log.column("gpus"),
            a_overhead=log.column("overhead"), a_nodes=a_nodes, cpu_unit=ctx.cpu_unit, gpu_unit=ctx.gpu_unit,
            capacity=ctx.sim.cluster.capacity(), passes=ctx.passes, wall_s=wall_s, gave_up=ctx.gave_up,
        )

    @classmethod
    def assemble(cls, columns: dict, order: np.ndarray, *, ids, submit, run, start, end, attempts, state, reasons,
                 waited, enq_pass, a_job, a_queued, a_start, a_end, a_outcome, a_cpus, a_mem, a_gpus, a_overhead,
                 a_nodes, cpu_unit: int, gpu_unit: int, capacity: dict, passes: int, wall_s: float,
                 gave_up: bool) -> SimResult:
        """The result from a run's per-job arrays (in submit order; ``columns[name][order]`` is a job column
        in that order), its wait notes (``reasons``, jobs × reasons, the priority column left to fill from
        ``waited``, the passes each started job waited) and its attempt log (CPUs and GPUs in the jobs' units)."""
        n = len(ids)

        def count(outcome):
            return np.bincount(a_job[a_outcome == outcome], minlength=n)

        pending = state == "PENDING"
        if pending.any():
            waited[pending] += passes - np.asarray(enq_pass)[pending]
        reasons[:, PRIORITY] = np.maximum(0, waited - reasons.sum(axis=1) + reasons[:, PRIORITY])
        c = columns
        return cls(
            id=ids, submit=submit, run=run, start=start, end=end, wait=start - submit, attempts=attempts,
            ooms=count("OUT_OF_MEMORY"), timeouts=count("TIMEOUT"), preemptions=count("PREEMPTED"),
            state=state, reasons=reasons,
            user=c["user"][order], account=c["account"][order], gpu_type=c["gpu_type"][order], cpu_util=c["cpu_util"][order],
            gpu_util=c["gpu_util"][order], resumable=c["resumable"][order], mem_peak=c["mem_peak"][order] * c["nodes"][order],
            a_job=a_job, a_queued=a_queued, a_start=a_start, a_end=a_end, a_outcome=a_outcome,
            a_cpus=whole_units(a_cpus, cpu_unit), a_mem=a_mem, a_gpus=whole_units(a_gpus, gpu_unit),
            a_overhead=a_overhead, a_nodes=a_nodes, capacity=capacity, passes=passes, wall_s=wall_s, gave_up=gave_up,
        )

    def __len__(self) -> int:
        return len(self.id)

    @classmethod
    def concat(cls, results) -> SimResult:
        """The runs of clusters that share no node (a cluster's pools, replayed apart) as one run: jobs and
        attempts side by side (each run's attempts point at its own jobs), capacities and passes summed.
        Jobs keep each run's order, so the whole is not sorted by submit time."""
        results = list(results)
        if len(results) == 1:
            return results[0]
        names = [f for f in cls.__dataclass_fields__ if f not in ("capacity", "passes", "wall_s", "gave_up")]
        cols = {}
        for name in names:
            parts = [getattr(r, name) for r in results]
            if name == "a_job":
                offsets = np.cumsum([0] + [len(r.id) for r in results[:-1]])
                parts = [p + o for p, o in zip(parts, offsets, strict=True)]
            cols[name] = np.concatenate(parts) if parts[0].ndim == 1 else np.vstack(parts)
        capacity = {k: sum(r.capacity[k] for r in results) for k in results[0].capacity}
        return cls(**cols, capacity=capacity, passes=sum(r.passes for r in results),
                   wall_s=sum(r.wall_s for r in results), gave_up=any(r.gave_up for r in results))

    def records(self) -> list:
        """Per-job records (kills as ``(time, outcome)`` pairs)."""
        kills: dict = {}
        for j, t, o in zip(self.a_job.tolist(), self.a_end.tolist(), self.a_outcome.tolist(), strict=True):
            if o != "COMPLETED":
                kills.setdefault(j, []).append((t, o))
        out = []
        for k in range(len(self.id)):
            out.append(JobRecord(
                id=int(self.id[k]), submit=float(self.submit[k]), start=float(self.start[k]),
                end=float(self.end[k]), wait=float(self.wait[k]), attempts=int(self.attempts[k]),
                kills=tuple(kills.get(k, ())), state=str(self.state[k]),
                waits=dict(zip(REASONS, self.reasons[k].tolist(), strict=True)),
            ))
        return out

    def starts_by_id(self) -> dict:
        return dict(zip(self.id.tolist(), self.start.tolist(), strict=True))
