"""The sweep: every scenario replayed on the full cluster, its capacity searched, the risk levels
weighed against their kills, the contenders for the recommendation searched again on shaken copies of the
month (weighed on their average, the recommended one's spread its interval), the policies compared.

Every replay is a task of :mod:`.replays` run by a :class:`.runner.Runner` (serially or on Dask):
the full-size replays as one batch, read in task order; the searches' probes as a stream, each search's
next probe handed out as soon as its last one is known (:func:`.capacity.run_searches`), and their
answers gathered by scenario and pool, so the result does not depend on how they were scheduled; the
capacity searches and the shaken copies' share one stream (:func:`recover`, searches of :mod:`.recovery`).
The figures are plain dicts; :mod:`.outputs` writes them.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from dataclasses import dataclass, field, replace

import numpy as np

from simulator import SimResult
from simulator.records import Cluster

from .capacity import Headroom, Target, run_searches, start_searches
from .recovery import ScenarioSearches, ShakenSearches, capacity_rows, shaken_actuals, shaken_seeds
from .replays import Replay, Setting, run, summarise
from .scenarios import MODES, Scenario

DEFAULT_RISK = (0.5, 0.8, 0.9, 0.95, 0.99)
POLICIES = ("fifo", "easy", "fairshare", "budget")


@dataclass(frozen=True)
class Options:
    """What to sweep (``reclaim whatif``'s options; defaults in docs/whatif.md)."""

    risk: tuple = DEFAULT_RISK
    modes: tuple = MODES
    predictor: str = "lightgbm"
    backfill_order: str = "fcfs"
    policy: str = "easy"
    capacity_search: bool = True
    headroom: bool = True
    replicates: int = 10
    tolerance: float = 0.01
    seed: int = 0
    policies: tuple = POLICIES
    kill_budget: float | None = 0.01
    gpu_hours_budget: float | None = None


@dataclass
class Sweep:
    """What a sweep found: per scenario its metrics on the full cluster (``full``), its per-job records
    (``jobs``), its capacity (``capacity``), the trade-off rows, the recommendation, the intervals, the
    headroom and the policy what-ifs; ``stages`` holds the seconds each stage took."""

    scenarios: list
    full: dict = field(default_factory=dict)
    pools_full: dict = field(default_factory=dict)
    jobs: dict = field(default_factory=dict)
    capacity: dict = field(default_factory=dict)
    tradeoff: list = field(default_factory=list)
    recommended: str | None = None
    means: dict = field(default_factory=dict)
    shaken: dict = field(default_factory=dict)
    headroom: dict = field(default_factory=dict)
    policies: dict = field(default_factory=dict)
    probes: dict = field(default_factory=dict)
    stages: dict = field(default_factory=dict)
    replays: int = 0


def scenarios_for(options: Options, month=None) -> list:
    """``actual``, ``oracle`` and the right-sized scenarios the options ask for: with the calibrated
    predictions, one per level and mode, and with a kill budget one more (``rightsized@budget/MODE``, in
    :func:`budget_mode`; given the ``month``, only when it holds the budget's predictions)."""
    out = [Scenario("actual"), Scenario("oracle")]
    if options.predictor == "lightgbm":
        out += [Scenario("rightsized", level=float(q), mode=m) for q in options.risk for m in options.modes]
        mode = budget_mode(options.modes)
        if options.kill_budget is not None and (month is None or f"budget/{mode}" in month.predictions):
            out.append(Scenario("rightsized", mode=mode, predictor="budget"))
    else:
        out += [Scenario("rightsized", mode=m, predictor=options.predictor) for m in options.modes]
    return out


def budget_mode(modes) -> str:
    """The mode the kill budget is replayed in: ``advise`` when swept (the time limit stays the user's and its
    estimate only plans; memory, cores and GPUs spend the budget), else the one mode swept."""
    return "advise" if "advise" in modes else modes[0]


def pools_of(setting: Setting) -> list:
    """Pools replayed apart (numbers), or ``[None]``: one cluster, or jobs any node may run."""
    c = setting.cluster
    if not isinstance(c, Cluster) or len(c.pools()) == 1 or (setting.month.pool < 0).any():
        return [None]
    return [k for k in range(len(c.pools())) if (setting.month.pool == k).any()]


class _Replayer:
    """Runs batches (and streams, :meth:`stream`) of replays through the runner and counts them.  In a
    batch the largest replays (by jobs in their pool) are handed out first, so workers finish together;
    answers come back in order."""

    def __init__(self, runner, setting: Setting):
        self.runner = runner
        self.shared = runner.share(setting)
        self.count = 0
        month = setting.month
        self.jobs = {None: len(month), **{int(p): int(n) for p, n in zip(*np.unique(month.pool, return_counts=True),
                                                                          strict=True)}}

    def size(self, pool) -> int:
        """Jobs of ``pool`` (all jobs for ``None``)."""
        return self.jobs.get(pool, 0)

    def stream(self):
        """A stream of replays (:meth:`.runner.Runner.stream`), counted as their answers are read."""
        return _Counted(self, self.runner.stream(run, self.shared))

    def adopt(self, stream: _Counted) -> _Counted:
        """``stream`` (another replayer's), its answers from now on counted here and the replays put into
        it from now on run on this replayer's setting."""
        return _Counted(self, stream.inner)

    def __call__(self, tasks: list) -> list:
        self.count += len(tasks)
        order = sorted(range(len(tasks)), key=lambda k: (-self.jobs.get(tasks[k].pool, 0), k))
        done = self.runner.map(run, [tasks[k] for k in order], self.shared)
        out = [None] * len(tasks)
        for k, r in zip(order, done, strict=True):
            out[k] = r
        return out


class _Counted:
    """A stream whose tasks count as replays of the sweep."""

    def __init__(self, replayer: _Replayer, stream):
        self.replayer = replayer
        self.inner = stream

    def put(self, key, task, priority: int = 0) -> None:
        self.inner.put(key, task, priority, (self.replayer.shared,))

    def cancel(self) -> None:
        self.inner.cancel()

    def __iter__(self):
        for pair in self.inner:
            self.replayer.count += 1
            yield pair


def _merge(results: list, cluster) -> dict:
    merged = SimResult.concat(results)
    return summarise(merged, cluster), merged


@dataclass
class Early:
    """Replays that read no prediction, handed out before the predictions are made (:func:`begin`): ``full``
    streams ``actual`` and ``oracle`` on every pool at full size (keys ``(name, pool)``), ``shaken``
    ``actual`` on each shaken copy (:func:`shaken_actuals`, or None); ``replayer`` counts them."""

    replayer: _Replayer
    full: object
    shaken: object = None


PREDICTION_FREE = ("actual", "oracle")


def begin(setting: Setting, runner, options: Options, replay: _Replayer | None = None) -> Early:
    """Hand out the sweep's replays that read no prediction on ``setting`` (its month need hold none), below
    every other task: the full-size ``actual`` and ``oracle``, then the shaken copies' ``actual``, lowest.
    ``replay``: a replayer of ``setting`` to use instead of a new one."""
    replay = replay if replay is not None else _Replayer(runner, setting)
    pools = pools_of(setting)
    full = replay.stream()
    for name in PREDICTION_FREE:
        for p in sorted(pools, key=lambda pool: -replay.size(pool)):
            full.put((name, p), Replay(Scenario(name), pool=p, keep_jobs=True, policy=options.policy), -1)
    shaken = None
    if options.capacity_search and options.replicates > 0:
        shaken = start_searches(shaken_actuals(pools, options.seed, options.replicates, options.policy),
                                setting.cluster, replay, priority=-2)
    return Early(replay, full, shaken)


def full_round(scns: list, pools: list, replay, setting: Setting, options: Options, *, shake=None,
               done=None) -> tuple:
    """Every scenario on every pool at full size: ``(merged metrics, per-pool metrics, merged results)``.

    The largest pool's replays are handed out first (the longest tasks, so the workers finish
    together), then the other pools' scenario by scenario; each scenario's pools are merged as soon as
    they are all known, while the workers go on with the rest.  ``done``: a stream of some of these
    replays already handed out (:attr:`Early.full`), keys ``(scenario name, pool)``."""
    stream = replay.stream()
    largest = max(pools, key=lambda pool: replay.size(pool))
    skip = set(PREDICTION_FREE) if done is not None else set()
    order = sorted(((k, p) for k in range(len(scns)) for p in pools if scns[k].name not in skip),
                   key=lambda kp: (kp[1] != largest, kp[0], -replay.size(kp[1])))
    for k, p in order:
        stream.put((k, p), Replay(scns[k], pool=p, shake=shake, keep_jobs=True, policy=options.policy))
    number = {s.name: k for k, s in enumerate(scns)}
    answers = (((number[name], p), a) for (name, p), a in done) if done is not None else iter(())
    got: dict = {}
    merged: dict = {}
    for (k, p), answer in itertools.chain(answers, stream):
        got[(k, p)] = answer
        if all((k, q) in got for q in pools):
            merged[k] = _merge_scenario([got.pop((k, q)) for q in pools], pools, setting)
    full, per_pool, jobs = {}, {}, {}
    for k, s in enumerate(scns):
        full[s.name], per_pool[s.name], jobs[s.name] = merged[k]
    return full, per_pool, jobs


def _merge_scenario(got: list, pools: list, setting: Setting) -> tuple:
    """One scenario's replays of ``pools`` (in that order): merged metrics, per-pool metrics, job records."""
    per_pool = {p: g["metrics"] for p, g in zip(pools, got, strict=True)}
    full, _ = _merge([g["result"] for g in got], setting.cluster)
    jobs = {c: np.concatenate([g["jobs"][c] for g in got]) for c in got[0]["jobs"]}
    return full, per_pool, jobs


def probe_rows(probes: dict, targets: dict) -> dict:
    """The capacity search's replays as plain rows: ``{scenario: [{pool, nodes, p95_wait_s,
    mean_bounded_slowdown, gave_up, passed}, …]}`` (a replay that gave up stopped once it was known to miss
    the target: its waits are those seen until then) sorted by pool and node count (``whatif/summary.json``,
    key ``capacity_probes``)."""
    out = {}
    for name, by_pool in probes.items():
        rows = []
        for p, by_n in sorted(by_pool.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
            for n, m in sorted(by_n.items()):
                rows.append({"pool": p, "nodes": int(n), "p95_wait_s": float(m["p95_wait_s"]),
                             "mean_bounded_slowdown": float(m["mean_bounded_slowdown"]),
                             "gave_up": bool(m.get("gave_up", False)),
                             "passed": bool(targets[p].met({**m, "gave_up": m.get("gave_up", False)}))})
        out[name] = rows
    return out


#: at most this many scenarios within tolerance are searched on the shaken copies and weighed for the
#: recommendation on them (each costs one capacity search per copy)
CONTENDERS = 3


def contenders(rows: list, floor: float | None = None) -> list:
    """The scenarios within tolerance searched on the shaken copies, recovering most on the month as it ran
    first (ties: the safer, higher level, then ``advise``): the first of them, the leader, alone; with
    ``floor`` (the leader's 5th percentile over its shaken copies), the leader and those recovering at least
    ``floor`` on the month as it ran (the copies cannot tell them from the leader), :data:`CONTENDERS` at
    most."""
    ok = [r for r in rows if r["within_tolerance"]]
    ok.sort(key=lambda r: (r["nodes_recovered"] or 0, r["level"] or 0.0, r["mode"] == "advise"), reverse=True)
    if floor is None:
        return [r["scenario"] for r in ok[:1]]
    return [r["scenario"] for r in ok[:1] + [r for r in ok[1:] if (r["nodes_recovered"] or 0) >= floor]][:CONTENDERS]


def mean_recovered(nodes: int | None, shaken: dict) -> float | None:
    """The nodes recovered on average over the month as it ran (``nodes``) and its shaken copies (``shaken``:
    seed → nodes); None where a copy or the month has no answer."""
    values = [nodes, *shaken.values()]
    return None if any(v is None for v in values) else float(np.mean(values))


def tradeoff_rows(scns: list, full: dict, capacity: dict, tolerance: float, means: dict | None = None) -> tuple:
    """Recovery against failure cost per right-sized scenario, and the recommended one: the most nodes
    recovered whose kills stay at or under ``tolerance`` of jobs (ties: the safer, higher level).  With
    ``means`` (scenario → nodes recovered on average over the month and its shaken copies, :func:`mean_recovered`)
    the contenders are weighed on that average first (input shaking, Tsafrir, Ouaknine & Feitelson 2007: one
    run of a month can rank two close scenarios either way; the copies are the same for every contender, so
    the comparison is paired), then on the month as it ran."""
    means = means or {}
    rows = []
    for s in scns:
        if s.kind != "rightsized":
            continue
        m = full[s.name]
        kills = m["kills_oom"] + m["kills_timeout"]
        cap = capacity.get(s.name)
        rows.append({
            "scenario": s.name, "level": s.level, "mode": s.mode, "predictor": s.predictor,
            "nodes_recovered": None if cap is None else cap["nodes_recovered"],
            "share_recovered": None if cap is None else cap["share_recovered"],
            "kills": kills, "kills_per_1000_jobs": 1000.0 * kills / max(1, m["jobs"]),
            "kills_oom": m["kills_oom"], "kills_timeout": m["kills_timeout"],
            "gpu_hours_lost": m["lost_gpu_hours"], "core_hours_lost": m["lost_cpu_hours"],
            "within_tolerance": kills <= tolerance * m["jobs"],
            "nodes_recovered_mean": means.get(s.name),
        })
    ok = [r for r in rows if r["within_tolerance"]]
    if not ok:
        return rows, None
    on_copies = [r for r in ok if r["nodes_recovered_mean"] is not None] or ok
    best = max(on_copies, key=lambda r: (r["nodes_recovered_mean"] or 0.0, r["nodes_recovered"] or 0,
                                         r["level"] or 0.0, r["mode"] == "advise"))
    return rows, best["scenario"]


def recover(sw: Sweep, pools: list, replay, setting: Setting, options: Options, prices: dict, started=None,
            mark=None) -> None:
    """The capacity search of every scenario and the shaken copies of the contenders, as one stream of replays;
    fills ``sw.capacity``, ``sw.probes``, ``sw.tradeoff``, ``sw.recommended``, ``sw.means`` and ``sw.shaken``
    (the recommended scenario's copies).

    Only the scenarios within tolerance can be recommended (their kills are known from the full-size
    replays), so their searches go first; as soon as they all have answers the leader's searches of the shaken
    copies start, while the other scenarios' searches go on, and once the leader's have ended those of the
    other contenders (:func:`contenders`: the copies cannot tell them from the leader); the recommendation
    weighs the contenders on their average over the month and the copies (:func:`tradeoff_rows`).
    ``started``: a stream of the copies' ``actual`` replays (:func:`begin`) to drive as well; ``mark(stage)``
    hears of ``capacity`` (every scenario's search ended) and of ``shaken`` (the rest, when a scenario was
    shaken) as they end."""
    scns, full, per_pool = sw.scenarios, sw.full, sw.pools_full
    rows, _ = tradeoff_rows(scns, full, {}, options.tolerance)
    tolerable = [r["scenario"] for r in rows if r["within_tolerance"]]
    caps = ScenarioSearches(scns, pools, per_pool, setting, options.policy, urgent=tolerable)
    names = [s.name for s in scns]
    shaken = None
    if options.replicates > 0 and tolerable:
        shaken = ShakenSearches(pools, setting, shaken_seeds(options.seed, options.replicates), options.policy)
    elif started is not None:
        started.cancel()  # nothing to shake: no level within tolerance
        started = None
    marked: list = []
    chosen: list = []  # the leader, then the other contenders
    ranked: list = []  # the trade-off rows of the scenarios within tolerance, once they have answers
    widened: list = []  # once the leader's copies have ended

    def progress() -> list:
        """Choose the contenders once the scenarios within tolerance have answers; mark the end of the searches."""
        more = []
        if not chosen and tolerable and caps.ended(tolerable):
            known = {n: capacity_rows(n, f, setting, prices) for n, f in caps.answers(tolerable).items()}
            ranked.extend(tradeoff_rows(scns, full, known, options.tolerance)[0])
            chosen.extend(contenders(ranked))
            if shaken is not None:
                more = shaken.add([s for s in scns if s.name in chosen], caps.answers(chosen))
        if shaken is not None and not widened and chosen and shaken.ended(chosen[0]):
            widened.append(True)
            others = [n for n in contenders(ranked, shaken.result(chosen[0])["nodes_recovered_p5"]) if n not in chosen]
            chosen.extend(others)
            more += shaken.add([s for s in scns if s.name in others], caps.answers(others))
        if not marked and caps.ended(names):
            marked.append("capacity")
            if mark is not None:
                mark("capacity")
        return more

    def then(srch) -> list:
        more = caps.then(srch)
        if shaken is not None:
            more += shaken.then(srch)
        return more + progress()

    first = caps.first()
    if shaken is not None and started is None:
        first += shaken_actuals(pools, options.seed, options.replicates, options.policy)
    run_searches(first + progress(), setting.cluster, replay, then=then, stream=started)
    progress()
    sw.probes = probe_rows(caps.probes(), caps.targets)
    sw.capacity = {name: capacity_rows(name, f, setting, prices) for name, f in caps.answers().items()}
    if shaken is not None:
        sw.means = {n: mean_recovered(sw.capacity[n]["nodes_recovered"], shaken.recovered(n)) for n in chosen}
    sw.tradeoff, sw.recommended = tradeoff_rows(scns, full, sw.capacity, options.tolerance, sw.means)
    if shaken is not None:
        sw.shaken = shaken.result(sw.recommended) if sw.recommended in chosen else {}
        if mark is not None:
            mark("shaken")


def headroom(scns: list, pools: list, per_pool: dict, replay, setting: Setting, options: Options) -> dict:
    """Per scenario: the largest arrival-rate scale (%) per pool at which the full pool keeps
    ``actual``'s p95 wait, and the extra jobs per month that makes."""
    targets = {p: Target.of(per_pool["actual"][p]) for p in pools}
    hs = [Headroom((s.name, p), Replay(s, pool=p, policy=options.policy), targets[p]) for s in scns for p in pools]
    run_searches(hs, setting.cluster, replay)
    out = {}
    month = setting.month
    for s in scns:
        rows = {}
        extra = 0.0
        for h in hs:
            if h.key[0] != s.name:
                continue
            p = h.key[1]
            jobs = int(len(month) if p is None else (month.pool == p).sum())
            pct = h.answer
            rows[p] = {"arrival_scale_pct": pct, "jobs": jobs}
            extra += 0.0 if pct is None else jobs * (pct - 100) / 100.0
        out[s.name] = {"pools": rows, "extra_jobs_per_month": extra}
    return out


def policy_whatifs(pools: list, replay, setting: Setting, options: Options) -> dict:
    """``actual`` requests under each policy on the full cluster (merged over pools); EASY backfills in
    queue order here, as schedulers do by default, whatever order the scenarios use."""
    out = {}
    names = ["easy-fcfs" if pol == "easy" else pol for pol in options.policies]
    tasks = [Replay(Scenario("actual"), pool=p, keep_jobs=True, policy=pol) for pol in names for p in pools]
    res = replay(tasks)
    for k, pol in enumerate(options.policies):
        parts = [res[k * len(pools) + j]["result"] for j in range(len(pools))]
        out[pol], _ = _merge(parts, setting.cluster)
    return out


def shared_pool(setting: Setting, options: Options) -> dict:
    """``actual`` on one shared pool: every job may use every node (for a month holding Kubernetes and
    Slurm jobs, against the pools run apart as everywhere else)."""
    open_cluster = Cluster(groups=setting.cluster.groups)
    month = replace(setting.month, text={**setting.month.text,
                                         "partition": np.full(len(setting.month), "", dtype=object)},
                    pool=np.zeros(len(setting.month), dtype=np.int64))
    res = run(Replay(Scenario("actual"), keep_jobs=True, policy=options.policy),
                      replace(setting, cluster=open_cluster, month=month))
    return summarise(res["result"], open_cluster)


def distinct(scns: list, setting: Setting) -> tuple[list, dict]:
    """``(scenarios to replay, {twin name: the replayed scenario's name})``: a right-sized scenario whose requests
    are those of one before it, array for array (at a high level a predicted time reaching the limit asked is that
    limit in both modes, so ``enforce`` and ``advise`` can give one schedule), is not replayed again."""
    from .scenarios import requests_for

    seen, keep, twins = {}, [], {}
    for sc in scns:
        if sc.kind != "rightsized":
            keep.append(sc)
            continue
        r = requests_for(setting.month, sc)
        key = hashlib.sha256(b"".join(np.ascontiguousarray(getattr(r, f)).tobytes() for f in REQUEST_FIELDS))
        key = key.hexdigest()
        if key in seen:
            twins[sc.name] = seen[key]
        else:
            seen[key] = sc.name
            keep.append(sc)
    return keep, twins


REQUEST_FIELDS = ("cpus", "mem", "gpus", "limit", "estimate", "estimate_after", "stretch")


def _expand(sw: Sweep, every: list, twins: dict, options: Options) -> None:
    """Give every twin its replayed scenario's figures, and weigh the recommendation over all of them again
    (ties between twins go to the higher level and ``advise``, as if each had been replayed)."""
    for twin, name in twins.items():
        for d in (sw.full, sw.pools_full, sw.jobs, sw.probes):
            if name in d:
                d[twin] = d[name]
        if name in sw.capacity:
            sw.capacity[twin] = {**sw.capacity[name], "scenario": twin}
    sw.scenarios = every
    shaken_of = sw.shaken.get("scenario") if sw.shaken else None
    sw.means = {**sw.means, **{twin: sw.means[name] for twin, name in twins.items() if name in sw.means}}
    sw.tradeoff, sw.recommended = tradeoff_rows(every, sw.full, sw.capacity, options.tolerance, sw.means)
    if shaken_of is not None and sw.recommended is not None and twins.get(sw.recommended, sw.recommended) == shaken_of:
        sw.shaken = {**sw.shaken, "scenario": sw.recommended}
    order = {sc.name: k for k, sc in enumerate(every)}
    for d in (sw.full, sw.pools_full, sw.jobs, sw.probes, sw.capacity):
        items = sorted(d.items(), key=lambda kv: order.get(kv[0], len(order)))
        d.clear()
        d.update(items)


def sweep(setting: Setting, runner, options: Options, prices: dict, *, mixed: bool = False, log=None,
          early: Early | None = None) -> Sweep:
    """Run the whole sweep; ``prices`` maps a price book name to ``{group: USD per node-hour}``;
    ``mixed``: the month holds Kubernetes and Slurm jobs (the shared-pool what-if is added);
    ``log(stage, seconds)`` hears of each stage as it ends; ``early``: its replays that read no prediction,
    already handed out (:func:`begin`, on the same month and cluster)."""
    every = scenarios_for(options, setting.month)
    scns, twins = distinct(every, setting)
    pools = pools_of(setting)
    replay = _Replayer(runner, setting)
    early = early if early is not None else begin(setting, runner, options, replay)
    sw = Sweep(scenarios=scns)

    def stage(name, fn, *args, **kwargs):
        t = time.perf_counter()
        value = fn(*args, **kwargs)
        sw.stages[name] = time.perf_counter() - t
        if log is not None:
            log(name, sw.stages[name])
        return value

    full, per_pool, sw.jobs = stage("replay", full_round, scns, pools, replay, setting, options, done=early.full)
    sw.full, sw.pools_full = full, per_pool
    # the shaken copies' targets, under way whenever a worker is free; their searches run on this month
    started = replay.adopt(early.shaken) if early.shaken is not None else None
    if options.capacity_search:
        t = time.perf_counter()

        def mark(name) -> None:  # the shaken copies' searches start before the last scenarios' end
            nonlocal t
            sw.stages[name] = time.perf_counter() - t
            t = time.perf_counter()
            if log is not None:
                log(name, sw.stages[name])

        recover(sw, pools, replay, setting, options, prices, started, mark)
    else:
        if started is not None:
            started.cancel()
        sw.tradeoff, sw.recommended = tradeoff_rows(scns, full, sw.capacity, options.tolerance)
    if twins:
        _expand(sw, every, twins, options)
        scns = every
    if options.headroom:
        picks = [s for s in scns if s.kind == "oracle" or s.name == sw.recommended]
        sw.headroom = stage("headroom", headroom, picks, pools, per_pool, replay, setting, options)
    sw.policies = stage("policies", policy_whatifs, pools, replay, setting, options)
    if mixed:
        sw.policies["shared_pool"] = shared_pool(setting, options)
    sw.replays = replay.count + (early.replayer.count if early.replayer is not replay else 0)
    return sw
