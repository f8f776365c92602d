"""The requests each scenario replays, built from one month's jobs (NumPy only, so that any Dask
worker builds its scenario from the shared month instead of receiving it).

- ``actual``: requests as made.
- ``rightsized@q``: each job's memory, cores, GPUs and time limit replaced by its out-of-sample
  prediction at level ``q``, never above what the user asked (for a time limit: the limit the job
  replays with under ``actual``, its logged run where the log shows it past the limit, and a
  prediction reaching the limit asked is that limit); a job without a prediction keeps its request.
  Memory is rounded up to whole GiB, time limits to whole minutes, cores and GPUs up to whole ones;
  a job keeps at least one core per node, and a GPU job at least one GPU (never more than it asked:
  a 0.46 share of a GPU, or 0.25 of a core, stays so).  A month whose CPUs or GPUs are counted in
  millis (``cpu_unit``/``gpu_unit``, see :mod:`.to_simulator`) is right-sized in the same units.
  (Memory is asked per whole GiB, as ``--mem=282G`` does; a job's total is rounded up to a whole GiB
  per node.)
- ``rightsized@budget/MODE``: each job's requests at the levels a kill budget chose for its (resource,
  stratum) (:mod:`.budget`); the request where its pair keeps it.
- ``oracle``: requests equal to actual use (peak memory to the MiB, busy cores and GPUs rounded up, the
  run time as limit): the bound nobody can reach.

Two ways to apply a prediction: ``enforce`` (the job gets only the right-sized request and is
killed where it would cross it, then re-submitted with its original request) and ``advise`` (the
scheduler plans with the predicted run time, the job keeps its own time limit, and once it outlives
the prediction the scheduler's estimate becomes that limit).  Memory, cores and GPUs are physical,
so both modes enforce them.  A job given fewer cores or GPUs than it keeps busy on average runs
longer in proportion (``stretch``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.kills import first_kills
from simulator.records import Jobs

GIB = 2**30
MIB = 2**20
MODES = ("enforce", "advise")
#: the site rules on each job's habit (``predictors.models.HABIT_RULES``), each a predictor of its own
RULES = ("habit_max", "habit_krr", "habit_vpa", "habit_autopilot")
PREDICTORS = ("lightgbm", "last_two", "request", *RULES)


@dataclass(frozen=True)
class Scenario:
    """``kind``: ``actual``, ``rightsized`` or ``oracle``; ``level`` and ``mode`` for right-sized ones."""

    kind: str
    level: float | None = None
    mode: str = "enforce"
    predictor: str = "lightgbm"

    @property
    def name(self) -> str:
        if self.kind != "rightsized":
            return self.kind
        at = self.predictor if self.predictor != "lightgbm" else f"{self.level:g}"
        return f"rightsized@{at}/{self.mode}"


@dataclass
class Month:
    """One month's jobs in replay order (submit time, then job number), as job totals.

    ``limit`` is the kill limit (a logged run past its limit keeps that run as its limit),
    ``asked_limit`` the user's time limit (``inf`` when unlimited) and ``estimate`` what the scheduler
    plans with under the request (the limit, else the run); ``mem_peak``, ``cpu_need`` (cores
    busy on average) and ``gpu_need`` (GPUs busy on average) are NaN where unknown.
    ``predictions`` maps a level (or a predictor name) to ``{"memory"|"cpus"|"gpus"|"walltime":
    totals}``, NaN where a job has no prediction.  ``pool`` is each job's pool number (see
    :meth:`simulator.records.Cluster.pools`), -1 for jobs any pool may run.
    """

    id: np.ndarray
    submit: np.ndarray
    run: np.ndarray
    nodes: np.ndarray
    cpus: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray
    limit: np.ndarray
    asked_limit: np.ndarray
    estimate: np.ndarray
    mem_peak: np.ndarray
    cpu_need: np.ndarray
    gpu_need: np.ndarray
    logged_start: np.ndarray
    cpu_util: np.ndarray  # share of the requested cores / GPUs busy on average, as logged (1 where unknown)
    gpu_util: np.ndarray
    text: dict  # user, account, partition, qos, gpu_type
    pool: np.ndarray
    predictions: dict = field(default_factory=dict)
    history: dict = field(default_factory=dict)  # per target, the jobs with a history to be right-sized from
    cpu_unit: int = 1  # what one CPU and one GPU count in ``cpus``/``gpus`` (1000: millis, see to_simulator)
    gpu_unit: int = 1

    def __len__(self) -> int:
        return len(self.id)

    def take(self, rows: np.ndarray) -> Month:
        """The jobs at ``rows`` (in order)."""
        cut = {k: getattr(self, k)[rows] for k in ("id", "submit", "run", "nodes", "cpus", "mem", "gpus", "limit",
                                                   "asked_limit", "estimate", "mem_peak", "cpu_need", "gpu_need", "logged_start",
                                                   "cpu_util", "gpu_util", "pool")}
        return Month(**cut, text={k: v[rows] for k, v in self.text.items()},
                     predictions={lv: {t: a[rows] for t, a in p.items()} for lv, p in self.predictions.items()},
                     history={t: a[rows] for t, a in self.history.items()},
                     cpu_unit=self.cpu_unit, gpu_unit=self.gpu_unit)


@dataclass
class Requests:
    """Job totals a scenario replays, and how the run stretches under them."""

    cpus: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray
    limit: np.ndarray
    estimate: np.ndarray
    estimate_after: np.ndarray
    stretch: np.ndarray


def per_node(total: np.ndarray, nodes: np.ndarray, unit: int = 1) -> np.ndarray:
    """Per-node requests of job totals counted in ``unit``: a whole number of units is divided as whole
    units (rounded up, as on whole counts); a fraction is divided in ``unit`` (rounded up)."""
    if unit == 1:
        return -(-total // nodes)
    return np.where(total % unit == 0, -(-(total // unit) // nodes) * unit, -(-total // nodes))


def gpus_per_node(total: np.ndarray, nodes: np.ndarray, unit: int = 1) -> np.ndarray:
    """:func:`per_node` for GPUs: one GPU or more a node is whole GPUs (rounded up: 1.5 takes 2 devices)."""
    g = per_node(total, nodes, unit)
    return g if unit == 1 else np.where(g > unit, -(-g // unit) * unit, g)


def _up(x: np.ndarray, unit: float) -> np.ndarray:
    return np.ceil(x / unit) * unit


def actual_requests(m: Month) -> Requests:
    nan = np.full(len(m), np.nan)
    return Requests(cpus=m.cpus.copy(), mem=m.mem.copy(), gpus=m.gpus.copy(), limit=m.limit.copy(),
                    estimate=m.estimate.copy(), estimate_after=nan, stretch=np.ones(len(m)))


def as_replayed(target: str, pred, asked, nodes, *, unit: int = 1, mem_unit: int = GIB) -> np.ndarray:
    """Predicted totals as a right-sized request asks them: memory up to whole ``mem_unit`` a node (one at least),
    cores and GPUs up to whole ones counted in ``unit`` (one core a node at least; a GPU job one GPU, or the share
    it asked), a time limit up to whole minutes (one at least); never above ``asked`` (NaN: no bound); NaN where
    there is no prediction.  ``pred`` may hold several bounds a job (jobs × levels) for one ``asked`` and ``nodes``
    a job."""
    pred = np.asarray(pred, dtype=np.float64)
    if pred.ndim == 2:
        asked, nodes = (np.asarray(x, dtype=np.float64)[:, None] if np.ndim(x) == 1 else x for x in (asked, nodes))
    with np.errstate(invalid="ignore"):
        if target == "memory":
            r, low = _up(pred / nodes, mem_unit) * nodes, mem_unit * np.asarray(nodes)
        elif target == "cpus":
            r, low = np.ceil(pred - 1e-9) * unit, np.asarray(nodes) * unit
        elif target == "gpus":
            r, low = np.ceil(pred - 1e-9) * unit, np.minimum(asked, unit)
        else:
            r, low = _up(pred, 60.0), 60.0
        return np.where(np.isfinite(pred), np.fmin(np.maximum(r, low), asked), np.nan)


def _sized(asked: np.ndarray, given: np.ndarray) -> np.ndarray:
    """What :func:`as_replayed` gives; the request where there is no prediction."""
    return np.where(np.isfinite(given), given, asked).astype(np.int64)


def _stretch(need: np.ndarray, given: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where((given > 0) & np.isfinite(need), need / given, 1.0)
    return np.maximum(1.0, s)


def sized_requests(m: Month, mem_pred, cpu_pred, gpu_pred, wall_pred, mode: str, mem_unit: int = GIB) -> Requests:
    """Requests from predicted totals (NaN: keep the request) applied in ``mode``; memory per node in
    whole ``mem_unit``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    nan = np.full(len(m), np.nan)
    cu, gu = m.cpu_unit, m.gpu_unit  # predictions are in cores and GPUs; requests in the month's units
    mem = np.where(m.mem > 0, _sized(m.mem, nan if mem_pred is None else
                                     as_replayed("memory", mem_pred, m.mem, m.nodes, mem_unit=mem_unit)), m.mem)
    cpus = _sized(m.cpus, nan if cpu_pred is None else as_replayed("cpus", cpu_pred, m.cpus, m.nodes, unit=cu))
    gpus = _sized(m.gpus, nan if gpu_pred is None else as_replayed("gpus", gpu_pred, m.gpus, m.nodes, unit=gu))
    wall = nan if wall_pred is None else as_replayed("walltime", wall_pred, np.inf, m.nodes)
    # never above the limit the job replays with under ``actual``: the user's, or for a run the log shows
    # past it (the kill grace time) that run; a prediction reaching what was asked is that limit, so the
    # grace is not charged to right-sizing as a kill
    wall = np.where(np.isfinite(wall), np.where(wall >= m.asked_limit, m.limit, np.minimum(wall, m.limit)), np.nan)
    stretch = np.maximum(_stretch(m.cpu_need * cu, cpus), _stretch(m.gpu_need * gu, gpus))
    has = np.isfinite(wall)
    if mode == "enforce":
        limit = np.where(has, wall, m.limit)
        return Requests(cpus=cpus, mem=mem, gpus=gpus, limit=limit, estimate=np.where(has, wall, m.estimate),
                        estimate_after=nan, stretch=stretch)
    return Requests(cpus=cpus, mem=mem, gpus=gpus, limit=m.limit.copy(), estimate=np.where(has, wall, m.estimate),
                    estimate_after=np.where(has, m.estimate, np.nan), stretch=stretch)


def oracle_requests(m: Month) -> Requests:
    """Requests equal to actual use (the request where use is unknown)."""
    r = sized_requests(m, m.mem_peak, m.cpu_need, m.gpu_need, None, "enforce", mem_unit=MIB)
    run = np.maximum(m.run, 1.0)
    r.limit = np.minimum(run, m.limit)
    r.estimate = r.limit.copy()
    return r


def requests_for(m: Month, s: Scenario) -> Requests:
    if s.kind == "actual" or (s.kind == "rightsized" and s.predictor == "request"):
        return actual_requests(m)
    if s.kind == "oracle":
        return oracle_requests(m)
    if s.kind != "rightsized":
        raise ValueError(f"unknown scenario kind {s.kind!r}")
    key = s.level if s.predictor == "lightgbm" else f"budget/{s.mode}" if s.predictor == "budget" else s.predictor
    p = m.predictions.get(key)
    if p is None:
        raise ValueError(f"no predictions for {key!r}")
    return sized_requests(m, p.get("memory"), p.get("cpus"), p.get("gpus"), p.get("walltime"), s.mode)


def _scaled_util(util: np.ndarray, asked: np.ndarray, given: np.ndarray) -> np.ndarray:
    """The logged share busy of what was asked, as a share of what is given (at most 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(given == asked, util, util * asked / given)
    return np.clip(np.where(np.isfinite(u), u, 1.0), 0, 1)


def held_gpus(m: Month, gpus: np.ndarray) -> np.ndarray:
    """The GPUs a job holds for ``gpus`` asked in all (in the month's unit), as the replay places them: whole GPUs
    a node, rounded up (:func:`gpus_per_node`), on each of its nodes."""
    return gpus_per_node(gpus, m.nodes, m.gpu_unit) * m.nodes / m.gpu_unit


def killed_after(m: Month, r: Requests, *, kill_at_limit: bool = True) -> np.ndarray:
    """Per job, the seconds its first attempt under requests ``r`` runs before it is killed (NaN: it is not), as
    the replay's engine decides it (:func:`simulator.kills.first_kills`, on the per-node requests of
    :func:`to_jobs`, without telemetry): use growing to its peak crosses its memory a node (a memory limit given)
    at ``run × memory / peak`` of its work, and a run stretched for want of cores or GPUs stops at its time
    limit."""
    n = m.nodes
    peak = np.nan_to_num(m.mem_peak, nan=0.0).astype(np.int64) // n
    return first_kills(m.run, r.stretch, r.limit, r.mem // n, peak, kill_at_limit=kill_at_limit)


def to_jobs(m: Month, r: Requests, *, submit: np.ndarray | None = None, arrival_scale: float = 1.0) -> Jobs:
    """Simulator jobs (per-node requests) for requests ``r``; ``submit`` replaces the submit times
    (shaken inputs), ``arrival_scale`` > 1 compresses them (the same mix, arriving faster)."""
    sub = m.submit if submit is None else submit
    if arrival_scale != 1.0 and len(sub):
        sub = sub.min() + (sub - sub.min()) / arrival_scale
    n = m.nodes
    peak = np.nan_to_num(m.mem_peak, nan=0.0).astype(np.int64)
    order = np.lexsort((m.id, sub))
    cols = dict(
        id=m.id, submit=sub, run=m.run, nodes=n, cpus=per_node(r.cpus, n, m.cpu_unit), mem=r.mem // n,
        gpus=gpus_per_node(r.gpus, n, m.gpu_unit), limit=r.limit, estimate=r.estimate, estimate_after=r.estimate_after,
        stretch=r.stretch, mem_peak=peak // n, orig_mem=m.mem // n, orig_limit=m.limit,
        orig_cpus=per_node(m.cpus, n, m.cpu_unit), orig_gpus=gpus_per_node(m.gpus, n, m.gpu_unit),
        logged_start=m.logged_start,
        cpu_util=_scaled_util(m.cpu_util, m.cpus, r.cpus), gpu_util=_scaled_util(m.gpu_util, m.gpus, r.gpus),
        **m.text,
    )
    return Jobs.from_arrays(cpu_unit=m.cpu_unit, gpu_unit=m.gpu_unit,
                            **{k: np.asarray(v)[order] for k, v in cols.items()})
