"""Recoverable capacity: for a scenario, the smallest cluster on which its service stays within
today's, pool by pool; and the headroom: how much more of the month's mix the full cluster carries.

Service is the p95 wait and the mean bounded slowdown of a pool's jobs (and no more jobs rejected as
too large): a scenario passes on a cluster when both stay at or under those of ``actual`` on the full
cluster.  A pool's node groups shrink together (each group's count × n / N, rounded, at least one
node) and the smallest passing n is found by bisection to the node, starting from the pool's
occupancy (a pool busy 80 % of the time cannot shrink much below 80 %).  Each search's next probe is
handed out as soon as its last one is known (:func:`run_searches`), so searches run side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from simulator.records import Cluster, Pool

from .replays import EPS, Replay, pool_cluster
from .search import Bisection, Gallop


@dataclass(frozen=True)
class Target:
    """Service to keep: p95 wait (s), mean bounded slowdown, jobs rejected as too large."""

    p95_wait_s: float
    bounded_slowdown: float
    rejected: int

    @classmethod
    def of(cls, m: dict) -> Target:
        return cls(float(m["p95_wait_s"]), float(m["mean_bounded_slowdown"]), int(m["jobs_rejected"]))

    def met(self, m: dict) -> bool:
        return (not m["gave_up"] and m["p95_wait_s"] <= self.p95_wait_s * (1 + EPS) + EPS
                and m["mean_bounded_slowdown"] <= self.bounded_slowdown * (1 + EPS) + EPS
                and m["jobs_rejected"] <= self.rejected)

    def as_tuple(self) -> tuple:
        return (self.p95_wait_s, self.bounded_slowdown, self.rejected)


def scaled_counts(cluster, pool: int | None, n: int) -> tuple:
    """Group counts of ``pool`` (the whole cluster when ``None``) scaled to ``n`` of its nodes; for a
    single pool of processors, ``(("procs", n),)``."""
    if isinstance(cluster, Pool):
        return (("procs", n),)
    groups = cluster.groups if pool is None else pool_cluster(cluster, pool).groups
    total = sum(g.count for g in groups)
    return tuple((g.name, max(1, round(g.count * n / total))) for g in groups)


def pool_nodes(cluster, pool: int | None) -> int:
    """Nodes of ``pool`` (processors of a single pool)."""
    if isinstance(cluster, Pool):
        return cluster.procs
    groups = cluster.groups if pool is None else pool_cluster(cluster, pool).groups
    return sum(g.count for g in groups)


@dataclass
class PoolSearch:
    """The smallest node count of one pool on which ``base`` (a replay of the full pool) keeps ``target``:
    by bisection from a first ``guess`` (the full pool known to pass), or, given ``near`` (an answer
    known to be close), outward from it (:class:`.search.Gallop`; the full pool is then not assumed to pass
    unless ``full_passes``: its replay is known to)."""

    key: tuple
    base: Replay
    target: Target
    nodes: int
    guess: int
    near: int | None = None
    full_passes: bool = False
    priority: int = 0  # its probes go to a free worker before those of lower priority
    bisection: object = field(init=False)
    results: dict = field(default_factory=dict)

    def __post_init__(self):
        self._first = None
        if self.near is not None:
            self.bisection = Gallop(1, self.nodes, min(max(1, self.near), self.nodes))
            if self.full_passes and self.near < self.nodes:
                self.bisection.tell(self.nodes, True)
            return
        self.bisection = Bisection(1, self.nodes)
        if 1 <= self.guess < self.nodes:
            self._first = self.guess

    def probe(self) -> int | None:
        if self._first is not None:
            return self._first
        return self.bisection.probe()

    def task(self, n: int, cluster: Cluster) -> Replay:
        return replace(self.base, counts=scaled_counts(cluster, self.base.pool, n), target=self.target.as_tuple(),
                       keep_jobs=False)

    def tell(self, n: int, m: dict) -> None:
        self._first = None
        self.results[n] = m
        self.bisection.tell(n, self.target.met(m))

    @property
    def answer(self) -> int:
        return self.bisection.answer


def occupancy_guess(nodes: int, m: dict) -> int:
    """A first probe: the node count the pool's busiest resource needs at its full-size occupancy."""
    return max(1, int(nodes * busiest(m)))


def busiest(m: dict) -> float:
    """The occupancy of a replay's busiest resource (CPUs, memory or GPUs)."""
    return max(m.get("occupancy_cpus", 0.0), m.get("occupancy_mem", 0.0), m.get("occupancy_gpus", 0.0))


def between_guess(pool, name: str, answers: dict, per_pool: dict, nodes: int) -> int | None:
    """Where to start a scenario's search on ``pool``: between ``actual``'s and ``oracle``'s answers, as far
    from ``actual``'s as its full-size busiest occupancy lies between theirs (``None`` when either answer or
    the spread is missing: the search then bisects)."""
    a, o = answers.get("actual", {}).get(pool), answers.get("oracle", {}).get(pool)
    if a is None or o is None:
        return None
    occ_a, occ_o, occ_s = (busiest(per_pool[k][pool]) for k in ("actual", "oracle", name))
    if occ_a <= occ_o:
        return None
    share = min(1.0, max(0.0, (occ_a - occ_s) / (occ_a - occ_o)))
    return int(min(nodes, max(1, round(a - (a - o) * share))))


def run_searches(searches: list, cluster: Cluster, replay, then=None, stream=None) -> None:
    """Drive ``searches`` to their answers.  Each search's next probe is handed out as soon as its last
    one is known (``replay.stream()``: tasks put, answers read as they finish), so no search waits for
    another; a search's probes depend on its own answers only, so the answers do not depend on the order
    the replays finish in.  ``then(search)``, when given, hears of each search as it ends and may return
    more searches to drive.  The largest pools' searches are handed out first (``replay.size(pool)``).
    ``stream``: a stream whose searches were already started (:func:`start_searches`), driven as well."""
    stream = stream if stream is not None else replay.stream()

    def start(srch) -> None:
        n = srch.probe()
        if n is not None:
            stream.put((srch, n), srch.task(n, cluster), getattr(srch, "priority", 0))
        elif then is not None:
            for more in then(srch) or ():
                start(more)

    size = getattr(replay, "size", lambda pool: 0)
    for srch in sorted(searches, key=lambda x: -size(x.base.pool)):
        start(srch)
    for (srch, n), m in stream:
        srch.tell(n, m)
        start(srch)


def start_searches(searches: list, cluster: Cluster, replay, priority: int = -1):
    """A stream with the first probe of each of ``searches`` handed out at ``priority`` (below the default:
    work that fills free workers while other searches run), for :func:`run_searches` to drive later."""
    stream = replay.stream()
    for srch in searches:
        n = srch.probe()
        if n is not None:
            stream.put((srch, n), srch.task(n, cluster), priority)
    return stream


@dataclass
class OneReplay:
    """One replay driven as a search of one probe (:func:`run_searches`), so that the searches that need
    its answer (its metrics) can start as soon as it ends."""

    key: tuple
    base: Replay
    results: dict = field(default_factory=dict)

    def probe(self) -> int | None:
        return None if self.results else 0

    def task(self, n: int, cluster: Cluster) -> Replay:
        return self.base

    def tell(self, n: int, m: dict) -> None:
        self.results[n] = m

    @property
    def answer(self) -> dict | None:
        return self.results.get(0)


@dataclass
class Headroom:
    """The largest arrival-rate scale (in per cent, ``lo``–``hi`` in steps of ``step``) at which ``base``
    keeps the p95 wait of ``target`` on the full pool: passing falls as the scale rises, so bisect on
    ``(hi − scale) / step``."""

    key: tuple
    base: Replay
    target: Target
    lo: int = 100
    hi: int = 300
    step: int = 5
    bisection: Bisection = field(init=False)
    results: dict = field(default_factory=dict)

    def __post_init__(self):
        self.bisection = Bisection(0, (self.hi - self.lo) // self.step, check_hi=True)

    def probe(self) -> int | None:
        x = self.bisection.probe()
        return None if x is None else self.hi - x * self.step

    def task(self, pct: int, cluster: Cluster) -> Replay:
        t = Target(self.target.p95_wait_s, float("inf"), self.target.rejected)
        return replace(self.base, arrival_scale=pct / 100.0, target=t.as_tuple(), keep_jobs=False)

    def tell(self, pct: int, m: dict) -> None:
        self.results[pct] = m
        ok = (not m["gave_up"] and m["p95_wait_s"] <= self.target.p95_wait_s * (1 + EPS) + EPS
              and m["jobs_rejected"] <= self.target.rejected)
        self.bisection.tell((self.hi - pct) // self.step, ok)

    @property
    def answer(self) -> int | None:
        """The largest passing scale in per cent (``None`` when even today's rate fails)."""
        x = self.bisection.answer
        return None if x is None else self.hi - x * self.step
