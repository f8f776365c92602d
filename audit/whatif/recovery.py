"""The capacity searches of a sweep's scenarios and the shaken copies of the recommended one, as searches
that :func:`.capacity.run_searches` drives (each class hands out its searches and hears of each one ending).

:class:`ScenarioSearches` finds, per scenario and pool, the smallest passing node count: ``actual`` and
``oracle`` first, every other scenario as soon as those two of its pool have ended.  :class:`ShakenSearches`
finds the capacity of the scenarios that may be recommended on each shaken copy of the month, against
``actual`` on the same copy.  Driven on one stream, the shaken searches start as soon as those scenarios have
their answers, while the other scenarios' searches go on (:func:`.sweep.recover`); a search's probes depend
on its own answers only, so the answers do not depend on how the replays were scheduled.
"""

from __future__ import annotations

from .capacity import OneReplay, PoolSearch, Target, between_guess, occupancy_guess, pool_nodes, scaled_counts
from .replays import Replay, Setting
from .scenarios import Scenario
from .shaking import SHAKE_S, interval

HOURS_PER_YEAR = 8766.0
BOUNDS = ("actual", "oracle")


class ScenarioSearches:
    """The capacity searches of ``scns`` on ``pools`` (``per_pool``: each scenario's metrics per pool on the
    full cluster).  ``actual`` (outward from one node below the full pool) and ``oracle`` (by bisection from
    the occupancy guess) come first; every other scenario's search of a pool starts once those two of that
    pool have ended, outward from where its full-size occupancy puts it between their answers
    (:func:`.capacity.between_guess`).  Under a monotone service the answers are those of plain bisection;
    the warm start only saves probes.  ``urgent``: scenario names whose searches are handed out first."""

    def __init__(self, scns: list, pools: list, per_pool: dict, setting: Setting, policy: str, *, urgent=()):
        self.scns, self.pools, self.per_pool, self.setting = scns, pools, per_pool, setting
        self.policy, self.urgent = policy, set(urgent)
        self.targets = {p: Target.of(per_pool["actual"][p]) for p in pools}
        self.searches: dict = {}  # (scenario, pool) → its search
        self.pending = {(s.name, p) for s in scns for p in pools}  # searches not ended yet
        self.waiting = {p: 0 for p in pools}  # per pool: its bound searches still running
        self.others = [s for s in scns if s.kind not in BOUNDS]

    def first(self) -> list:
        """The searches to start with: ``actual``'s and ``oracle``'s (and the others' of a pool without them)."""
        out = []
        for s in (s for s in self.scns if s.kind in BOUNDS):
            for p in self.pools:
                n = pool_nodes(self.setting.cluster, p)
                # today's requests keep today's service on the full pool by definition: look just below it
                opened = self._open(s, p, near=n - 1 if s.kind == "actual" and n > 1 else None)
                self.waiting[p] += len(opened)
                out += opened
        for p in self.pools:
            if self.waiting[p] == 0:
                out += self._open_others(p)
        return out

    def then(self, srch) -> list:
        """Hear that ``srch`` ended; once ``actual``'s and ``oracle``'s searches of a pool end, every other
        scenario's search of it starts between their answers."""
        if getattr(srch, "key", None) not in self.pending or self.searches.get(srch.key) is not srch:
            return []
        self.pending.discard(srch.key)
        name, p = srch.key
        if name not in BOUNDS:
            return []
        self.waiting[p] -= 1
        return self._open_others(p) if self.waiting[p] == 0 else []

    def ended(self, names) -> bool:
        """Whether every search of the scenarios ``names`` has its answer."""
        return not any((name, p) in self.pending for name in names for p in self.pools)

    def answer(self, name: str, p) -> int | None:
        srch = self.searches.get((name, p))
        return None if srch is None else srch.answer

    def answers(self, names=None) -> dict:
        """``{scenario: {pool: smallest passing node count or None}}`` (of ``names``, default every scenario)."""
        names = [s.name for s in self.scns] if names is None else names
        return {name: {p: self.answer(name, p) for p in self.pools} for name in names}

    def probes(self) -> dict:
        """Every replay of the searches, ``{scenario: {pool: {nodes: metrics}}}``, the full pool included."""
        out: dict = {}
        for s in self.scns:
            for p in self.pools:
                out.setdefault(s.name, {})[p] = {pool_nodes(self.setting.cluster, p): self.per_pool[s.name][p]}
                srch = self.searches.get((s.name, p))
                if srch is not None:
                    out[s.name][p].update(srch.results)
        return out

    def _open(self, s: Scenario, p, near=None) -> list:
        n = pool_nodes(self.setting.cluster, p)
        m = self.per_pool[s.name][p]
        if not self.targets[p].met(m):
            self.pending.discard((s.name, p))
            return []  # it misses today's service even on the full pool: no answer
        base = Replay(s, pool=p, policy=self.policy)
        srch = self.searches[(s.name, p)] = PoolSearch((s.name, p), base, self.targets[p], n, occupancy_guess(n, m),
                                                       near=near, full_passes=True,
                                                       priority=1 if s.name in self.urgent else 0)
        return [srch]

    def _open_others(self, p) -> list:
        got = {name: {p: self.answer(name, p)} for name in BOUNDS}
        out = []
        for s in self.others:
            out += self._open(s, p, near=between_guess(p, s.name, got, self.per_pool,
                                                       pool_nodes(self.setting.cluster, p)))
        return out


def shaken_seeds(seed: int, replicates: int) -> list:
    """The seeds of the shaken copies: ``seed + 1 …``, one per replicate."""
    return [seed + 1 + r for r in range(replicates)]


def shaken_actuals(pools: list, seed: int, replicates: int, policy: str) -> list:
    """``actual`` on each shaken copy of each pool (the targets of :class:`ShakenSearches`), as searches of
    one probe."""
    return [OneReplay((s, p), Replay(Scenario("actual"), pool=p, shake=s, policy=policy))
            for s in shaken_seeds(seed, replicates) for p in pools]


class ShakenSearches:
    """Scenarios' capacity on shaken copies of the month (seeds ``seeds``), each against ``actual`` on the same
    copy (:func:`shaken_actuals`, heard of through :meth:`then`), searched outward from the unshaken answer.
    The scenarios are named later (:meth:`add`, more than once): the copies' ``actual`` replays need none."""

    def __init__(self, pools: list, setting: Setting, seeds: list, policy: str):
        self.pools, self.setting, self.seeds, self.policy = pools, setting, seeds, policy
        self.actuals: dict = {}  # (seed, pool) → actual's metrics on that copy, as they come
        self.scns: list = []
        self.found: dict = {}
        self.searches: dict = {}  # (scenario, seed, pool) → the scenario's search of that copy

    def add(self, scns: list, found: dict) -> list:
        """Search each of ``scns`` too (their unshaken answers ``found``: scenario → pool → nodes) on every copy:
        the searches of the copies whose ``actual`` is known, at once; the others as theirs comes."""
        self.scns += list(scns)
        self.found = {**self.found, **found}
        return [srch for key in list(self.actuals) for srch in self._open(key, scns)]

    def ended(self, name: str) -> bool:
        """Whether scenario ``name``'s search of every copy of every pool has its answer."""
        keys = [(name, seed, p) for seed in self.seeds for p in self.pools]
        return all(k in self.searches and self.searches[k].probe() is None for k in keys)

    def then(self, done) -> list:
        """Hear of a search ending: once ``actual`` on a shaken copy of a pool is known, the scenarios'
        searches of that copy start (when they are chosen)."""
        if not isinstance(done, OneReplay) or done.key in self.actuals:
            return []
        self.actuals[done.key] = done.answer
        return self._open(done.key, self.scns)

    def _open(self, key, scns) -> list:
        seed, p = key
        n = pool_nodes(self.setting.cluster, p)
        out = []
        for scn in scns:
            near = self.found.get(scn.name, {}).get(p)
            near = n if near is None else near
            base = Replay(scn, pool=p, shake=seed, policy=self.policy)
            # only the nodes recovered are kept of a shaken copy, and a full pool recovers none whether it
            # passes or not: the full pool is taken to pass and never replayed.  The first probe is one node
            # below the unshaken answer, the last size that failed there: where the answer stays, that probe
            # and the answer's own settle it, and where it moves down a node, that probe and the next
            srch = self.searches[(scn.name, seed, p)] = PoolSearch(
                (scn.name, seed, p), base, Target.of(self.actuals[key]), n, n, near=max(1, min(near - 1, n - 1)),
                full_passes=True)
            out.append(srch)
        return out

    def recovered(self, name: str) -> dict:
        """``{seed: nodes recovered}`` of scenario ``name`` on each shaken copy."""
        answers = {seed: {p: self.searches[(name, seed, p)].answer for p in self.pools} for seed in self.seeds}
        return {seed: capacity_rows(name, f, self.setting, {})["nodes_recovered"] for seed, f in answers.items()}

    def result(self, name: str) -> dict:
        """Scenario ``name``'s nodes recovered per replicate and their 5th–95th percentile."""
        recovered = self.recovered(name)
        lo, hi = interval(list(recovered.values()))
        return {"scenario": name, "replicates": len(self.seeds), "shake_s": SHAKE_S,
                "nodes_recovered": recovered, "nodes_recovered_p5": lo, "nodes_recovered_p95": hi}


def capacity_rows(name: str, found: dict, setting: Setting, prices: dict) -> dict:
    """Nodes kept per group, nodes recovered, the share of the cluster, and dollars by price book."""
    cluster = setting.cluster
    total = pool_nodes(cluster, None)
    groups = getattr(cluster, "groups", None)
    kept: dict = {g.name: g.count for g in groups} if groups else {"procs": total}
    missed = [p for p, n in found.items() if n is None]
    for p, n in found.items():
        if n is not None:
            kept.update(dict(scaled_counts(cluster, p, n)))
    full_counts = {g.name: g.count for g in groups} if groups else {"procs": total}
    recovered = {g: full_counts[g] - kept[g] for g in full_counts}
    nodes = sum(recovered.values())
    dollars = {}
    for book, per_node in prices.items():
        hourly = sum(recovered[g] * per_node.get(g, 0.0) for g in recovered)
        dollars[book] = {"usd_per_month": hourly * HOURS_PER_YEAR / 12.0, "usd_per_year": hourly * HOURS_PER_YEAR}
    return {"scenario": name, "nodes_total": total, "nodes_kept": total - nodes, "nodes_recovered": nodes,
            "share_recovered": nodes / total if total else 0.0, "kept_by_group": kept,
            "recovered_by_group": recovered, "pools_missing_service": missed, "dollars": dollars}
