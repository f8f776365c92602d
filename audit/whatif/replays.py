"""One replay as a task: a scenario of the month on a cluster (whole, or one pool of it, rescaled),
perhaps on shaken inputs or with arrivals compressed; the answer is a small dict of metrics (and,
when asked, the per-job records), so any Dask worker can run it from the shared month.

Pools (node groups joined by partitions) share no node, so each pool is replayed as its own
cluster with its own jobs: a capacity search shrinks one pool at a time, and a scenario's figures
on the whole cluster are those of its pools' replays taken together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator import EASY, GiveUp, Simulator, metrics
from simulator.metrics import codes
from simulator.records import Cluster, Partition, Pool
from simulator.result import whole_units
from simulator.simulate import make_policy

from .scenarios import Month, Scenario, requests_for, to_jobs
from .shaking import shaken_submits

EPS = 1e-9  # float noise allowed when comparing a replay's service with its target


@dataclass(frozen=True)
class Replay:
    """What to replay: ``scenario`` on ``pool`` (its number; ``None``: the whole cluster at once)
    with ``counts`` (group → nodes) overriding the cluster's, submissions shaken with seed ``shake``,
    arrivals compressed by ``arrival_scale``; ``target`` (p95 wait s, mean bounded slowdown, jobs
    rejected) lets the run stop early once its p95 wait is out of reach; ``keep_jobs`` returns the
    per-job records too."""

    scenario: Scenario
    pool: int | None = None
    counts: tuple = ()
    shake: int | None = None
    arrival_scale: float = 1.0
    target: tuple | None = None
    keep_jobs: bool = False
    policy: str = "easy"


@dataclass
class Setting:
    """What every replay of a sweep shares: the month, the cluster, the policy's options."""

    month: Month
    cluster: Cluster
    shares: dict | None = None
    backfill_order: str = "fcfs"
    kill_at_limit: bool = True


def pool_cluster(cluster: Cluster, pool: int) -> Cluster:
    """The node groups of pool ``pool`` as a cluster of their own, with the partitions over them."""
    names = cluster.pools()[pool]
    groups = tuple(g for g in cluster.groups if g.name in names)
    parts = tuple(Partition(p.name, p.groups) for p in cluster.partitions if set(p.groups) <= set(names))
    return Cluster(groups=groups, partitions=parts, strict_partitions=cluster.strict_partitions)


def job_pools(cluster: Cluster, partition: np.ndarray) -> np.ndarray:
    """Each job's pool number from its partition; -1 where the partition names no pool's nodes (a
    job every node could run: it is replayed with the whole cluster only)."""
    pools = cluster.pools()
    of_group = {g: k for k, names in enumerate(pools) for g in names}
    of_part = {p.name: of_group[p.groups[0]] for p in cluster.partitions if p.groups}
    if len(pools) == 1:
        return np.zeros(len(partition), dtype=np.int64)
    return np.array([of_part.get(str(p), -1) for p in partition], dtype=np.int64)


def policy_for(name: str, setting: Setting):
    """The policy ``name``; ``easy-sjf`` (or ``easy`` with the setting's ``sjf`` order) backfills shortest first."""
    if name == "easy-sjf" or (name == "easy" and setting.backfill_order == "sjf"):
        return EASY(backfill_order="sjf")
    if name == "easy-fcfs":
        return EASY()
    return make_policy(name, shares=setting.shares)


def run(task: Replay, setting: Setting) -> dict:
    """Replay ``task``; return its metrics (``gave_up`` when it stopped early), or with ``keep_jobs`` the
    whole result, the per-job records and the run's :func:`pool_metrics` (``{"result": SimResult, "jobs":
    columns, "metrics": dict}``)."""
    month = setting.month
    cluster = setting.cluster
    if task.pool is not None:
        month = month.take(np.flatnonzero(month.pool == task.pool))
        cluster = pool_cluster(cluster, task.pool)
    if task.counts:
        counts = dict(task.counts)
        cluster = Pool(counts["procs"]) if isinstance(cluster, Pool) else cluster.with_counts(counts)
    submit = None if task.shake is None else shaken_submits(month.submit, task.shake)
    jobs = to_jobs(month, requests_for(month, task.scenario), submit=submit, arrival_scale=task.arrival_scale)
    give_up = None
    if task.target is not None:
        p95, slowdown, _ = task.target
        # p95 of n waits exceeds the target for certain once more than 5 % of them (and one) do; the mean
        # bounded slowdown once the completed jobs' excess over 1 is past what n jobs may hold
        give_up = GiveUp(wait_s=p95, jobs=int(0.05 * len(jobs)) + 1, slowdown=slowdown * (1 + EPS) + EPS)
    sim = Simulator(cluster, policy_for(task.policy, setting), kill_at_limit=setting.kill_at_limit, give_up=give_up)
    result = sim.run(jobs)
    if task.keep_jobs:
        return {"result": result, "jobs": job_records(result, jobs), "metrics": pool_metrics(result)}
    return summarise(result, cluster)


def pool_metrics(result) -> dict:
    """The run's :func:`simulator.metrics` (without the per-account GPU-hours), ``gave_up`` added."""
    m = metrics(result, accounts=False)
    m["gave_up"] = bool(result.gave_up)
    return m


def summarise(result, cluster: Cluster) -> dict:
    """The run's metrics, plus GPU-hours held and used per GPU type and per account (plain dicts)."""
    m = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in pool_metrics(result).items()}
    m["capacity"] = dict(result.capacity)
    if result.gave_up:
        return m
    dur = result.a_end - result.a_start
    gtype = _text_codes(_gpu_type_of(result))  # once for the GPU-hours held and used
    held = _sums(*gtype, result.a_gpus * dur / 3600.0)
    used = _sums(*gtype, result.a_gpus * dur * result.gpu_util[result.a_job] / 3600.0 if len(result.a_job)
                 else np.zeros(0))
    caps = _gpu_capacity(cluster)
    hours = m["makespan_s"] / 3600.0
    m["gpu_types"] = {t: {"gpus": caps[t], "gpu_hours_held": held.get(t, 0.0), "gpu_hours_used": used.get(t, 0.0),
                          "occupancy": held.get(t, 0.0) / (caps[t] * hours) if hours > 0 else 0.0,
                          "utilization": used.get(t, 0.0) / (caps[t] * hours) if hours > 0 else 0.0}
                      for t in sorted(caps)}
    accounts = result.account[result.a_job] if len(result.a_job) else np.zeros(0, dtype=object)
    m["gpu_hours_by_account"] = _sum_by(accounts, result.a_gpus * dur / 3600.0)
    m["waits"] = _wait_summary(result)
    return m


def _gpu_type_of(result) -> np.ndarray:
    types = np.where(result.gpu_type == "", "(none)", result.gpu_type).astype(object)
    return types[result.a_job] if len(result.a_job) else np.zeros(0, dtype=object)


def _sum_by(keys: np.ndarray, values: np.ndarray) -> dict:
    """``{str(key): sum of its values}`` in key order, each sum added up in the values' order."""
    return _sums(*_text_codes(keys), values)


def _text_codes(keys: np.ndarray) -> tuple:
    """``(names, codes)``: the distinct texts of the keys and each key's index in them."""
    got, uniques = pd.factorize(keys)  # only the distinct keys are turned into text
    if not len(uniques) or (got < 0).any():  # missing keys (code -1): the text of every key
        return codes(np.array([str(k) for k in keys.tolist()], dtype=object))
    text = [str(u) for u in uniques]
    names = list(dict.fromkeys(text))
    at = {k: i for i, k in enumerate(names)}
    return names, np.array([at[k] for k in text], dtype=np.int64)[got]


def _sums(names: list, got: np.ndarray, values: np.ndarray) -> dict:
    """``{name: sum of its values}`` in name order, each sum added up in the values' order."""
    sums = np.bincount(got, weights=np.asarray(values, dtype=np.float64), minlength=len(names)).tolist()
    return dict(sorted(zip(names, sums, strict=True)))


def _gpu_capacity(cluster) -> dict:
    out: dict = {}
    for g in getattr(cluster, "groups", ()):
        if g.gpus:
            key = g.gpu_type or "(none)"
            out[key] = out.get(key, 0) + g.gpus * g.count
    return out


def _wait_summary(result) -> dict:
    """Waits of started jobs, as the quantiles a CDF is drawn from (0, 1, …, 100th percentile)."""
    w = result.wait[~np.isnan(result.start)]
    return {"percentiles": np.percentile(w, np.arange(101)).tolist() if len(w) else []}


def job_records(result, jobs) -> dict:
    """Per job: the request replayed (totals; CPUs and GPUs in whole units, fractions where the jobs
    count millis), start, end, attempts, kills (by reason), state."""
    c = jobs.columns
    order = np.lexsort((c["id"], c["submit"]))
    nodes = c["nodes"][order]
    return {
        "job_id": result.id, "req_cpus": whole_units(c["cpus"][order] * nodes, jobs.cpu_unit),
        "req_mem_bytes": c["mem"][order] * nodes,
        "req_gpus": whole_units(c["gpus"][order] * nodes, jobs.gpu_unit), "time_limit_s": c["limit"][order],
        "submit_s": result.submit,
        "start_s": result.start, "end_s": result.end, "attempts": result.attempts, "kills_oom": result.ooms,
        "kills_timeout": result.timeouts, "state": result.state,
    }
