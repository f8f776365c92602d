"""Textbook EASY backfill (Lifka 1995; Mu'alem & Feitelson 2001).

Start jobs in order while they fit.  The first job that does not fit (the head) gets a reservation
at the *shadow time*: running jobs are released in order of estimated end (then start order) until
the head fits; that job's estimated end is the shadow time, and what has been released beyond the
head's placement is the *extra*.  With ``release_ties=True`` every job estimated to end at the shadow
time is released into the extra, not only those up to the one that made the head fit (a little
more backfilling: on KTH-SP2 the mean wait drops by about 2 %; see docs/simulator.md).  On a node
cluster, nodes outside the head's partition are never needed by it, so their extra is everything.

A later job may start now ("backfill") only if it fits now and either its estimate ends by the
shadow time or it fits inside the extra (which it then uses up), so it can never delay the head's
reservation.  ``depth`` caps how many queued jobs a pass examines (Slurm's ``bf_max_job_test``);
``None`` examines all; ``backfill_order="sjf"`` examines the candidates shortest estimate first
(with predicted estimates, Tsafrir, Etsion & Feitelson's EASY++).  ``record=True`` keeps each job's first reservation in ``reservations``
(job id → shadow time).  ``compiled=True`` (the default) runs each pass as the compiled full pass of
:mod:`.easy_pass` on the node models where it is exactly this pass, and lets a run on one pool take the
compiled replay of :mod:`simulator.pool_replay` when it qualifies; ``False`` always runs the code below.

Incremental passes: a pass in which nothing was released since the previous one, no running job's
estimated end moved (a job that outlives a predicted estimate is given a later one), and the head is
unchanged cannot start the head or any job examined before — free resources and the extra only
shrank and the clock only advanced — so the reservation is kept and, under an order that only
appends, only the new jobs are examined (under other orders the skip memo of the node path does
the same).  The kept reservation is the one a full pass would compute only while every job started
since it either ends by its estimate before the shadow time (released before the head fits, so it
changes nothing), or after it inside the extra (never released before the head fits: the extra
shrinks by exactly its allocation, and first fit places the head on the same nodes).  So a pass
that starts a job estimated to end exactly at the shadow time (without ``release_ties`` it sorts
after the job that lets the head fit and is not released) or, under best fit or with shared GPU
devices, a job inside the extra (the tightest nodes, or the fullest device, for the head may
change) drops the reservation: the next pass is full.
With that, incremental passes give the same starts and wait reasons as full passes, on a pool and
on nodes (property-tested against a policy that forgets everything before each pass).
"""

from __future__ import annotations

import math

import numpy as np

from ..result import RESERVATION, RESOURCES
from ..screen import Screen
from .fifo import replaced, start_head
from .order import SubmitOrder

BACKFILL_ORDERS = ("fcfs", "sjf")
SCREEN_FROM = 8  # candidates in a pass from which they are screened together (simulator.screen)
SCREEN_AFTER = 4  # … once this many were tried one by one since the last start


class EASY:
    name = "easy"

    def __init__(self, order=None, depth: int | None = None, record: bool = False, release_ties: bool = False,
                 backfill_order: str = "fcfs", compiled: bool = True):
        if depth is not None and depth < 0:
            raise ValueError("depth must be ≥ 0 or None")
        if backfill_order not in BACKFILL_ORDERS:
            raise ValueError(f"backfill_order must be one of {BACKFILL_ORDERS}, got {backfill_order!r}")
        self.backfill_order = backfill_order
        self.order = order if order is not None else SubmitOrder()
        self.depth = depth
        self.record = record
        self.release_ties = release_ties
        self.compiled = compiled
        self.reservations: dict = {}
        self._cache = None
        self._memo: dict = {"marks": set(), "xmarks": set(), "releases": 0}
        self._held: list = []
        self._index = None

    def reset(self, ctx) -> None:
        self.order.reset(ctx)
        self.reservations = {}
        self._cache = None
        self._memo = {"marks": set(), "xmarks": set(), "releases": 0}
        self._held: list = []
        self._index = None
        if self.compiled and compilable(ctx.model):
            from .easy_pass import RunningIndex  # Numba is imported only by replays that use it

            # as the run's own policy, nothing else notes why jobs wait (the pass counts its holds itself)
            # nor takes jobs off the queue (under an order that only appends, the pass keeps it as an array)
            own = ctx.policy is self
            appends = own and getattr(self.order, "static", False)
            self._index = RunningIndex(ctx, direct=own, appends=appends)
            if appends:  # nothing but the compiled pass reads the running jobs, and it keeps its own index
                ctx.keep_running = ctx.keep_released = False

    def pool_pass(self):
        """``(easy, release_ties, depth)`` for the compiled pool replay (:mod:`simulator.pool_replay`), or None
        when these passes are not its own: ``compiled`` off, an order other than submit order, shortest-first
        backfill, recorded reservations, or a pass replaced on the instance."""
        if (not self.compiled or type(self) is not EASY or type(self.order) is not SubmitOrder
                or self.backfill_order != "fcfs" or self.record or replaced(self) or replaced(self.order)):
            return None
        return True, self.release_ties, -1 if self.depth is None else self.depth

    def requeued(self, ctx, i: int) -> None:
        self._memo["marks"].discard(i)
        self._memo["xmarks"].discard(i)

    def schedule(self, ctx) -> None:
        q = ctx.queue
        if not q:
            self._cache = None
            return
        self.order.arrange(ctx)
        if self._index is not None:
            self._compiled_pass(ctx, q)
            return
        cache = self._cache
        if cache is not None and cache[0] == q[0] and cache[5] == ctx.revisions:
            head, shadow, extra, seen, releases, _ = cache
            if releases == ctx.releases:
                ctx.note(head, RESOURCES)
                # a static order only appends: the jobs from ``seen`` on are the new ones; another
                # order may have put new jobs anywhere, so look at all (the memo skips the old ones)
                first = seen if getattr(self.order, "static", False) else 1
                if first > 1 and self._held and not ctx.exhausted():
                    note_held(ctx, self._held)
                extra, keep, seen = backfill(ctx, q, shadow, extra, self.depth, first=first, memo=self._memo,
                                             ties=not self.release_ties, sjf=self.backfill_order == "sjf")
                self._finish_pass(ctx, head, shadow, extra, keep, seen)
                return
            if not touches(ctx, head, releases):
                # resources came back only on nodes the head cannot use: its reservation stands,
                # but every waiting job may now fit, and those nodes' extra is all of them again
                ctx.note(head, RESOURCES)
                open_outside(ctx.model, ctx.req[head], extra)
                extra, keep, seen = backfill(ctx, q, shadow, extra, self.depth, memo=self._memo,
                                             ties=not self.release_ties, sjf=self.backfill_order == "sjf")
                self._finish_pass(ctx, head, shadow, extra, keep, seen)
                return
        self._cache = None
        started = start_head(ctx, q)
        if started:
            del q[:started]
        if not q:
            return
        head = q[0]
        ctx.note(head, RESOURCES)
        shadow, extra = reservation(ctx, head, self.release_ties)
        if self.record and ctx.ids[head] not in self.reservations:
            self.reservations[ctx.ids[head]] = shadow
        extra, keep, seen = backfill(ctx, q, shadow, extra, self.depth, memo=self._memo, ties=not self.release_ties,
                                     sjf=self.backfill_order == "sjf")
        self._finish_pass(ctx, head, shadow, extra, keep, seen)

    def _compiled_pass(self, ctx, q) -> None:
        """The full pass, compiled (:mod:`.easy_pass`): the same starts and notes as below."""
        head, shadow, held = self._index.run(ctx, q, self.release_ties, self.depth, self.backfill_order == "sjf")
        if head is None:
            return
        ctx.note(head, RESOURCES)
        if self.record and ctx.ids[head] not in self.reservations:
            self.reservations[ctx.ids[head]] = shadow
        if held:
            ctx.pass_notes.update(dict.fromkeys(held, RESERVATION))

    def _finish_pass(self, ctx, head: int, shadow: float, extra, keep: bool, seen: int) -> None:
        if not keep:  # a start this pass changed what a full pass would reserve (module text)
            self._cache = None
            return
        self._cache = (head, shadow, extra, seen, ctx.releases, ctx.revisions)
        self._held = [i for i, r in ctx.pass_notes.items() if r == RESERVATION]


def compilable(model) -> bool:
    """Whether the compiled pass (:mod:`.easy_pass`) is exactly this module's pass on ``model``: nodes
    under first fit where a request fits exactly when enough of them each hold its per-node need (no
    GPU devices, no switch group required: ``counts_exact``)."""
    return model.kind == "nodes" and model.counts_exact and model.fit == "first"


def note_held(ctx, held) -> None:
    """Note the jobs the reservation held back at the last pass (nothing released since) that still
    fit now: a full pass would find each late, fitting, and not fitting in the (smaller) extra."""
    notes = ctx.pass_notes
    req = ctx.req
    if ctx.model.kind == "pool":
        free = ctx.free
        for i in held:
            if req[i] <= free:
                notes[i] = RESERVATION
        return
    fits = ctx.model.fits
    free = ctx.free
    if len(held) >= SCREEN_FROM:
        screen = Screen(ctx.model, req, held, range(len(held)))
        for k, i in enumerate(held):
            ok = screen.answer(k, free, free)[0]
            if ok or (ok is None and fits(free, req[i]) is not None):
                notes[i] = RESERVATION
        return
    fit_now: dict = {}  # request → whether it fits the free state (unchanged during this loop)
    for i in held:
        r = req[i]
        ok = fit_now.get(id(r))
        if ok is None:
            ok = fit_now[id(r)] = fits(free, r) is not None
        if ok:
            notes[i] = RESERVATION


def touches(ctx, head: int, since: int) -> bool:
    """Whether any attempt stopped after the first ``since`` released resources the head could use."""
    if ctx.model.kind == "pool":
        return True
    allowed = ctx.req[head].allowed_list
    released = ctx.released
    for k in range(since, len(released)):
        for node in released[k][2]:
            if allowed[node]:
                return True
    return False


def reservation(ctx, head: int, release_ties: bool = False) -> tuple:
    """``(shadow time, extra free state)`` for the head job, from running jobs' estimated ends."""
    model = ctx.model
    if model.kind == "pool":
        return _pool_reservation(ctx, head, release_ties)
    if model.topology == "require" or model.devices:  # per-node readiness knows no GPU devices
        shadow, extra = _generic_reservation(ctx, head, release_ties)
    else:
        shadow, extra = _node_reservation(ctx, head, release_ties)
    open_outside(model, ctx.req[head], extra)
    return shadow, extra


def open_outside(model, r, extra) -> None:
    """Set the extra of every node outside the head's partition (``r``) to its capacity, in place:
    the head never needs those nodes."""
    cap = model.capacity
    if r.mask is not None:
        outside = ~r.mask
        extra[:, outside] = cap[:, outside]
    else:  # a range of nodes: the rest lies on either side
        extra[:, : r.lo] = cap[:, : r.lo]
        extra[:, r.hi :] = cap[:, r.hi :]


def _pool_reservation(ctx, head: int, release_ties: bool) -> tuple:
    need = ctx.req[head]
    f = ctx.free
    running = ctx.running
    alloc = ctx.alloc
    n = len(running)
    for k in range(n):
        e, _, j = running[k]
        f += alloc[j]
        if f >= need:
            m = k + 1
            while release_ties and m < n and running[m][0] == e:
                f += alloc[running[m][2]]
                m += 1
            return e, f - need
    return math.inf, f


def _node_reservation(ctx, head: int, release_ties: bool) -> tuple:
    """Per-node readiness: identical per-node needs make nodes independent, so the head fits as soon
    as ``nodes`` allowed nodes each hold its need (placement may prefer a switch, never require one)."""
    model = ctx.model
    r = ctx.req[head]
    nc, nm, ng = r.need_t
    allowed = r.allowed_list
    free = ctx.free
    ready = model.count_fitting(free, r)
    f = {}
    cols = None  # the free state per node as lists, read at the first need
    shadow = math.inf
    need = r.nodes
    alloc = ctx.alloc
    # jobs holding no node of the head's partition change nothing here: read only those that do
    for e, _, j in ctx.running_in[r.part] if r.part else ctx.running:
        if ready >= need and not (release_ties and e == shadow):
            break
        a = alloc[j]
        for node in a[2]:
            if not allowed[node]:
                continue
            v = f.get(node)
            if v is None:
                if cols is None:
                    cols = free.T.tolist()
                v = f[node] = cols[node]
            was = v[0] >= nc and v[1] >= nm and v[2] >= ng
            a0, a1, a2 = a[3]
            v[0] += a0
            v[1] += a1
            v[2] += a2
            if not was and v[0] >= nc and v[1] >= nm and v[2] >= ng:
                ready += 1
        if ready >= need and shadow == math.inf:
            shadow = e
    at_shadow = free.copy()
    if f:
        at_shadow[:, list(f)] = np.array(list(f.values()), dtype=np.int64).T
    if shadow == math.inf:
        return shadow, at_shadow
    return shadow, model.take(at_shadow, model.fits(at_shadow, r))


def _generic_reservation(ctx, head: int, release_ties: bool) -> tuple:
    model = ctx.model
    fits = model.fits
    give = model.give
    r = ctx.req[head]
    f = model.copy(ctx.free)
    running = ctx.running
    alloc = ctx.alloc
    n = len(running)
    for k in range(n):
        e, _, j = running[k]
        f = give(f, alloc[j])
        if fits(f, r) is None:
            continue
        m = k + 1
        while release_ties and m < n and running[m][0] == e:
            f = give(f, alloc[running[m][2]])
            m += 1
        # with GPU devices the head takes the whole devices busy now first: those idle now stay in the
        # extra for backfilling, as on a count of GPUs
        head = model.fits(f, r, keep=ctx.free) if model.devices else fits(f, r)
        return e, model.take(f, head)
    return math.inf, f


def backfill(ctx, q, shadow: float, extra, depth, first: int = 1, memo=None, ties: bool = False,
             sjf: bool = False):
    """Start later jobs (from position ``first``) that cannot delay the head's reservation (see the
    module text).  Return what is left of the extra; whether the reservation may be kept for the
    next pass (not when ``ties`` — jobs ending at the shadow time are not all released — and a job
    estimated to end exactly at the shadow time started, nor when under best fit a job started
    inside the extra); and the queue position before which every job has now been examined (the
    depth cap and a cluster left with nothing free stop the examination short).  With ``sjf`` the
    candidates are examined shortest estimate first (then in queue order), and the reservation is
    never kept (each pass is full)."""
    stop = len(q) if depth is None else min(len(q), depth + 1)
    if first >= stop or ctx.exhausted():
        return extra, not sjf, min(first, len(q))
    order = None
    if sjf:
        est = ctx.est
        order = sorted(range(first, stop), key=lambda p: (est[q[p]], p))
    if ctx.model.kind == "pool":
        started, extra, end = _backfill_pool(ctx, q, first, stop, shadow, extra, order)
    else:
        started, extra, end = _backfill_nodes(ctx, q, first, stop, shadow, extra, memo, order)
    if sjf:
        for pos in sorted(started, reverse=True):
            del q[pos]
        return extra, False, 1
    keep = True
    if started:
        est = ctx.est
        now = ctx.now
        # with GPU devices the head's device on a node may change (shares go to the fullest device)
        stable = ctx.model.kind == "pool" or (ctx.model.fit == "first" and not ctx.model.devices)
        for pos in started:
            ends = now + est[q[pos]]
            if (ties and ends == shadow) or (not stable and ends > shadow):
                keep = False
                break
    for pos in reversed(started):
        del q[pos]
    return extra, keep, end - len(started)


def _backfill_pool(ctx, q, first: int, stop: int, shadow: float, extra: int, order=None) -> tuple:
    """The rule on plain processor counts (the hot path of trace replays)."""
    req = ctx.req
    est = ctx.est
    now = ctx.now
    free = ctx.free
    notes = ctx.pass_notes
    started = []
    end = stop
    for pos in order if order is not None else range(first, stop):
        i = q[pos]
        r = req[i]
        if r > free:
            continue
        if now + est[i] > shadow:
            if r > extra:
                notes[i] = RESERVATION
                continue
            extra -= r
        ctx.start(i, r)
        free = ctx.free
        started.append(pos)
        if free <= 0:
            end = pos + 1
            break
    return started, extra, end


def _fits_on(r, rows) -> bool:
    """Whether a one-node request fits on one of ``rows`` (node, free [CPUs, memory, GPUs]) in its partition."""
    nc, nm, ng = r.need_t
    allowed = r.allowed_list
    for n, v in rows:
        if allowed[n] and v[0] >= nc and v[1] >= nm and v[2] >= ng:
            return True
    return False


def _sorted_free(free, r) -> tuple:
    """The free CPUs, memory and GPUs of the nodes of ``r``'s partition, each sorted largest first."""
    block = free[:3, r.lo : r.hi]
    if r.mask is not None:
        block = block[:, r.mask[r.lo : r.hi]]
    return tuple(np.sort(block, axis=1)[:, ::-1].tolist())


def _may_fit(r, bound) -> bool:
    """False when ``r`` surely fits nowhere: fewer of the partition's nodes than it needs hold each
    resource it asks for (``bound``: :func:`_sorted_free`)."""
    n = r.nodes
    bc, bm, bg = bound
    if n > len(bc):
        return False
    c, m, g = r.need_t
    k = n - 1
    return c <= bc[k] and m <= bm[k] and g <= bg[k]


def _refuse(failed: set, least_failed: dict, key, r) -> None:
    """Note that request ``r`` (shape ``key``) fits nowhere for the rest of the pass."""
    failed.add(key)
    nc, nm, ng = r.need_t
    k = (r.part, r.nodes, nc, ng)
    if nm < least_failed.get(k, nm + 1):
        least_failed[k] = nm


def _backfill_nodes(ctx, q, first: int, stop: int, shadow: float, extra, memo=None, order=None) -> tuple:
    """The rule on nodes, with shortcuts that never change the outcome.  Within a pass free resources
    and the extra only shrink, so a request shape that failed once is not tried again.  Across passes
    (``memo``): a job that did not fit stays unable to fit until resources come back on a node of its
    partition, so it is skipped while its partition has had no release, and a one-node job is then
    looked for only on the nodes released since (free resources elsewhere only shrank)."""
    model = ctx.model
    fits = model.fits
    req = ctx.req
    est = ctx.est
    now = ctx.now
    notes = ctx.pass_notes
    failed = set()  # request shapes that fit nowhere (free resources only shrink within a pass)
    # … and the least memory per node that fit nowhere, by (partition, nodes, CPUs, GPUs): a shape asking
    # as much of every resource fits nowhere either (right-sized requests make most shapes unique)
    least_failed: dict = {}
    failed_extra = set()  # … that do not fit within the extra
    fit_free: set = set()  # … that fit the free state as it is since the last start
    lim = None  # the smaller of the free state and the extra, since the last start
    bounds: dict = {}  # partition → its nodes' free CPUs, memory and GPUs, each sorted, largest first
    rows = None  # (node, free) on the nodes released since the last pass (read at first need)
    xrows = ()
    on_rows: dict = {}  # request → whether it fits on ``rows`` (read then)
    on_xrows: dict = {}
    if memo is not None:
        marks = memo["marks"]
        released = ctx.released
        nodes = set()
        for k in range(memo["releases"], len(released)):
            nodes.update(released[k][2])
        touched = [False] * len(model.part_id)
        node_parts = model.node_parts
        for node in nodes:
            for part in node_parts[node]:
                touched[part] = True
        nodes = sorted(nodes)
        xmarks = memo["xmarks"]
        if memo.get("xgen") is not extra:
            xmarks.clear()  # a new reservation: nothing is known about its extra
            memo["xgen"] = extra
        if xmarks and nodes:
            # the extra at the start of the pass (a job examined later must not see it shrunk by
            # this pass's starts: its note would differ from a full examination's)
            free = ctx.free
            xrows = list(zip(nodes, np.minimum(free[:, nodes], extra[:, nodes]).T.tolist(), strict=True))
    started = []
    broke = False
    end = stop
    if memo is not None and marks:
        # most waiting jobs did not fit at the last pass and saw no release in their partition
        part = memo.get("part")
        if part is None:  # each job's partition number (a re-submitted request keeps its partition)
            part = memo["part"] = [r.part for r in req]
        if order is None:
            positions = [pos for pos, i in enumerate(q[first:stop], first) if i not in marks or touched[part[i]]]
        else:
            positions = [pos for pos in order if q[pos] not in marks or touched[part[q[pos]]]]
    else:
        positions = range(first, stop) if order is None else order
    screen = Screen(model, req, q, positions, after=SCREEN_AFTER) if len(positions) >= SCREEN_FROM else None
    sf = sl = None  # the screen's answers for the job examined (see simulator.screen)
    for k, pos in enumerate(positions):
        i = q[pos]
        r = req[i]
        late = now + est[i] > shadow
        key = id(r)
        if memo is not None:
            if i in marks:  # did not fit at the last pass (its partition has had a release)
                # only the nodes released since can have gained room: a job none of them can hold
                # one node's share of still fits nowhere (on one node, or as a gang)
                fit = on_rows.get(key)  # requests share shapes: one look per shape and pass
                if fit is None:
                    if rows is None:
                        # now rather than at the start of the pass: a job that no longer fits
                        # on these nodes fits nowhere, and the full examination would say the same
                        rows = list(zip(nodes, ctx.free[:, nodes].T.tolist(), strict=True)) if nodes else []
                    fit = on_rows[key] = _fits_on(r, rows)
                if not fit:
                    continue
                if r.nodes > 1 and key not in failed and key not in fit_free:
                    bound = bounds.get(r.part)
                    if bound is None:
                        bound = bounds[r.part] = _sorted_free(ctx.free, r)
                    if not _may_fit(r, bound):
                        _refuse(failed, least_failed, key, r)
                        continue  # still marked
                marks.discard(i)
            elif late and i in xmarks and r.nodes == 1 and key not in failed_extra:
                fit = on_xrows.get(key)
                if fit is None:
                    fit = on_xrows[key] = _fits_on(r, xrows)
                if not fit:
                    # did not fit in the extra at the last pass, nor on the nodes released since: it
                    # is held by the reservation if it fits the free state at all (below)
                    failed_extra.add(key)
        if key not in failed and key not in fit_free:
            # a quick test that cannot be wrong when it refuses: each resource of the partition's
            # nodes sorted, at the pass start (free resources only shrink within it)
            bound = bounds.get(r.part)
            if bound is None:
                bound = bounds[r.part] = _sorted_free(ctx.free, r)
            if not _may_fit(r, bound):
                _refuse(failed, least_failed, key, r)
        if key not in failed and least_failed:
            nc, nm, ng = r.need_t
            most = least_failed.get((r.part, r.nodes, nc, ng))
            if most is not None and nm >= most:
                failed.add(key)
        if key in failed:
            if memo is not None:
                marks.add(i)
            continue
        # a late job must fit within the extra; what fits there fits the free state too, so that is
        # tried first and the free state only when it fails (to tell "no room" from "reservation")
        if late and key not in failed_extra:
            if lim is None:
                lim = model.cap(ctx.free, extra)
            if screen is not None:
                sf, sl = screen.answer(k, ctx.free, lim)
            a = None if sl is False else fits(lim, r)
            if a is None:
                if sf is False or (sf is None and fits(ctx.free, r) is None):
                    _refuse(failed, least_failed, key, r)
                    if memo is not None:
                        marks.add(i)
                    continue
                failed_extra.add(key)
                fit_free.add(key)
                notes[i] = RESERVATION
                if memo is not None:
                    xmarks.add(i)
                continue
            extra = model.take(extra, a)
        elif late and key in fit_free:  # its shape failed within the extra and fits the free state
            notes[i] = RESERVATION
            continue
        else:
            if screen is not None:
                if lim is None:
                    lim = model.cap(ctx.free, extra)
                sf = screen.answer(k, ctx.free, lim)[0]
            if late and sf is True:  # its shape already failed within the extra this pass, and it fits
                fit_free.add(key)
                notes[i] = RESERVATION
                continue
            a = None if sf is False else fits(ctx.free, r)
            if a is None:
                _refuse(failed, least_failed, key, r)
                if memo is not None:
                    marks.add(i)
                continue
            if late:  # its shape already failed within the extra this pass
                fit_free.add(key)
                notes[i] = RESERVATION
                continue
        ctx.start(i, a)
        lim = None  # the free state (and perhaps the extra) shrank
        if screen is not None:
            screen.stale()
        fit_free.clear()
        started.append(pos)
        if ctx.exhausted():
            broke = pos + 1 < stop
            end = pos + 1
            break
    if memo is not None:
        if broke:
            marks.clear()  # jobs after the stop were not re-checked against this pass's releases
            xmarks.clear()
        elif stop < len(q):
            marks.difference_update(q[stop:])  # nor were jobs beyond the depth cap
            xmarks.difference_update(q[stop:])
        memo["releases"] = ctx.releases
    return started, extra, end
