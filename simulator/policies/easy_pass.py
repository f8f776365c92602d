"""EASY's pass on nodes, compiled: the same starts and wait reasons as :mod:`.easy`'s full pass.

A replay's time goes into its scheduling passes: one per distinct event time, each testing the
waiting jobs against the nodes and walking the running jobs for the head's reservation.  On a node
model where a request fits exactly when ``nodes`` nodes of its partition each hold its per-node need
(first fit, no devices, no required switch group), that pass is a few loops over small integer
arrays, compiled here with Numba.

:class:`RunningIndex` keeps what the pass reads and the engine's lists hold as Python objects: the
running jobs in order of estimated end (then start order), the nodes and per-node amounts each holds,
and each job's current per-node need, nodes, partition and estimate.  It hears of starts, stops,
re-queues and revised estimates through the context's hooks.  :func:`easy_pass` is one full pass (start the head while it
fits, reserve for the first that does not, backfill the rest), computed on copies; the caller applies
its starts through ``ctx.start`` in the order given, so the engine's records are unchanged.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..result import RESERVATION

INF = math.inf


@numba.njit(cache=True)
def _holds(a, b, use_b, node, c, m, g) -> bool:
    """Whether ``node`` has ``(c, m, g)`` free in ``a`` (in the smaller of ``a`` and ``b`` with ``use_b``)."""
    f0 = a[0, node]
    f1 = a[1, node]
    f2 = a[2, node]
    if use_b:
        f0 = min(f0, b[0, node])
        f1 = min(f1, b[1, node])
        f2 = min(f2, b[2, node])
    return f0 >= c and (m == 0 or f1 >= m) and (g == 0 or f2 >= g)


@numba.njit(cache=True)
def _place(a, b, use_b, c, m, g, n, allowed, lo, hi, switch, prefer, cand, counts, out, off) -> bool:
    """First fit of ``n`` nodes each holding ``(c, m, g)``: the lowest-numbered fitting nodes, inside
    the lowest-numbered switch group that can hold them all when ``prefer``.  The nodes go to
    ``out[off:off + n]``; False when the request cannot start."""
    k = 0
    for node in range(lo, hi):
        if allowed[node] and _holds(a, b, use_b, node, c, m, g):
            if n == 1:
                out[off] = node
                return True
            cand[k] = node
            k += 1
    if n == 1 or k < n:
        return False
    if prefer:
        counts[:] = 0
        for t in range(k):
            counts[switch[cand[t]]] += 1
        chosen = -1
        for s in range(len(counts)):
            if counts[s] >= n:
                chosen = s
                break
        if chosen >= 0:
            u = 0
            for t in range(k):
                if switch[cand[t]] == chosen:
                    out[off + u] = cand[t]
                    u += 1
                    if u == n:
                        break
            return True
    for t in range(n):
        out[off + t] = cand[t]
    return True


@numba.njit(cache=True)
def _take(state, c, m, g, nodes, off, n) -> None:
    for t in range(n):
        node = nodes[off + t]
        state[0, node] -= c
        state[1, node] -= m
        state[2, node] -= g


@numba.njit(cache=True)
def _reserve(free, cap, c, m, g, n, allowed, lo, hi, ends, jobs, count, held, node_off, nnodes, node_pool,
             release_ties, switch, prefer, cand, counts, tmp, extra) -> float:
    """The head's shadow time, and in ``extra`` the free state left at it beyond the head's placement
    (every node outside its partition at capacity): :func:`.easy._node_reservation`."""
    ready = 0
    for node in range(lo, hi):
        if allowed[node] and _holds(free, free, False, node, c, m, g):
            ready += 1
    extra[:, :] = free
    shadow = INF
    for t in range(count):
        e = ends[t]
        if ready >= n and not (release_ties and e == shadow):
            break
        j = jobs[t]
        base = node_off[j]
        for u in range(nnodes[j]):
            node = node_pool[base + u]
            if not allowed[node]:
                continue
            was = _holds(extra, extra, False, node, c, m, g)
            extra[0, node] += held[j, 0]
            extra[1, node] += held[j, 1]
            extra[2, node] += held[j, 2]
            if not was and _holds(extra, extra, False, node, c, m, g):
                ready += 1
        if ready >= n and shadow == INF:
            shadow = e
    if shadow < INF:
        _place(extra, extra, False, c, m, g, n, allowed, lo, hi, switch, prefer, cand, counts, tmp, 0)
        _take(extra, c, m, g, tmp, 0, n)
    for node in range(extra.shape[1]):
        if not allowed[node]:
            extra[0, node] = cap[0, node]
            extra[1, node] = cap[1, node]
            extra[2, node] = cap[2, node]
    return shadow


@numba.njit(cache=True)
def position(ends, seqs, count, e, s) -> int:
    """Where ``(e, s)`` sits among the first ``count`` entries, kept sorted by (end, seq) (binary search)."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        if ends[mid] < e or (ends[mid] == e and seqs[mid] < s):
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _insert(ends, seqs, jobs, count, e, s, j) -> int:
    """Insert ``(e, s, j)`` into the first ``count`` entries; the new count."""
    at = position(ends, seqs, count, e, s)
    for t in range(count, at, -1):
        ends[t] = ends[t - 1]
        seqs[t] = seqs[t - 1]
        jobs[t] = jobs[t - 1]
    ends[at] = e
    seqs[at] = s
    jobs[at] = j
    return count + 1


@numba.njit(cache=True)
def _remove(ends, seqs, jobs, count, e, s) -> int:
    """Remove the entry ``(e, s)`` from the first ``count`` entries; the new count."""
    for t in range(position(ends, seqs, count, e, s), count - 1):
        ends[t] = ends[t + 1]
        seqs[t] = seqs[t + 1]
        jobs[t] = jobs[t + 1]
    return count - 1


@numba.njit(cache=True)
def _purge(ends, seqs, jobs, count, gone_e, gone_s, k) -> int:
    """Remove the entries ``(gone_e[t], gone_s[t])``, ``t < k``, from the first ``count`` (in one sweep); the
    new count."""
    if k == 0:
        return count
    first = count
    for t in range(k):
        at = position(ends, seqs, count, gone_e[t], gone_s[t])
        jobs[at] = -1  # the keys stay in place, so the searches that follow still find theirs
        first = min(first, at)
    w = first
    for r in range(first, count):
        if jobs[r] >= 0:
            ends[w] = ends[r]
            seqs[w] = seqs[r]
            jobs[w] = jobs[r]
            w += 1
    return w


@numba.njit(cache=True)
def _drop(q, n, pos, k) -> int:
    """Remove the positions ``pos[:k]`` from ``q[:n]`` in place, keeping the order of the rest; the new length."""
    gone = np.sort(pos[:k])
    w = gone[0]
    j = 0
    for r in range(gone[0], n):
        if j < k and r == gone[j]:
            j += 1
        else:
            q[w] = q[r]
            w += 1
    return w


@numba.njit(cache=True)
def _start(i, pos, free, c, m, g, n, now, est, seq, ends, seqs, jobs, held, node_off, node_pool, out_pos, out_nodes,
           out) -> None:
    """Start job ``i`` (queue position ``pos``) on the ``n`` nodes placed at ``out_nodes[out[2]:]``, as
    ``ctx.start`` will: take them from ``free``, enter the job as running with the sequence number its
    start gets (``seq`` was the last before the pass), and count it in ``out`` (starts, nodes written,
    running jobs)."""
    k, w = out[1], out[2]
    _take(free, c, m, g, out_nodes, w, n)
    base = node_off[i]
    for u in range(n):
        node_pool[base + u] = out_nodes[w + u]
    held[i, 0], held[i, 1], held[i, 2] = c, m, g
    out[5] = _insert(ends, seqs, jobs, out[5], now + est[i], seq + k + 1, i)
    out_pos[k] = pos
    out[1], out[2] = k + 1, w + n


@numba.njit(cache=True)
def easy_pass(free0, q, now, seq, count, release_ties, depth, sjf, by_node, by_job, slots, slot_times, placed, spans,
              allowed, prefer, direct, out, memo, stamp, gone):
    """:func:`_pass` on the arrays :class:`RunningIndex` keeps, in a few blocks (module text): a call from
    Python pays for each array it passes, and a pass is called once per event time."""
    return _pass(free0, q, now, seq, count, release_ties, depth, sjf, by_node[0:3], by_job[:, 0:3], by_job[:, 6],
                 by_job[:, 7], allowed, spans[0], spans[1], slot_times[2], slot_times[0], slots[0], slots[1],
                 by_job[:, 3:6], by_job[:, 8], placed[0], by_node[12], prefer, by_node[3:12], slots[2], placed[1],
                 slots[3], out, slots[5], direct, by_job[:, 9], memo[0:3], memo[3:6], stamp, slot_times[1], slots[4],
                 gone)


@numba.njit(cache=True)
def _pass(free0, q, now, seq, count, release_ties, depth, sjf, cap, need, nnodes, part, allowed, part_lo,
          part_hi, est, ends, seqs, jobs, held, node_off, node_pool, switch, prefer, scratch, out_pos, out_nodes,
          out_notes, out, tally, direct, shape, memo, memo_at, stamp, gone_e, gone_s, gone):
    """One full EASY pass over queue ``q`` (job positions, in the policy's order).

    Writes the queue positions started, in start order, to ``out_pos``, their nodes to ``out_nodes``
    (``nnodes`` of each, in the same order) and the positions the reservation holds back to
    ``out_notes`` (with ``direct``, each of those jobs is counted once more in ``tally`` instead); enters
    the started jobs as running (``ends``/``seqs``/``jobs``, ``held``, ``node_pool``) with the sequence
    numbers ``ctx.start`` gives them.  ``out`` gets [head starts, starts, nodes written, notes, head
    position or -1, running jobs]; the shadow time is returned (``inf`` without a reservation).  ``scratch``: a (9, nodes) int64 array, overwritten.

    ``shape[i]`` numbers job ``i``'s per-node CPUs and GPUs, nodes and partition, and ``memo``/``memo_at``
    remember, per shape, the per-node memory known not to fit beside the reservation (row 0) or at all
    (row 1), and known to fit (row 2), as of ``memo_at`` (``stamp``, a number no earlier pass had; row 2
    also counts this pass's starts).  Free resources only shrink in a pass, so a memory that did not fit
    does not fit later in it, nor does a larger one; one that fits stays fitting until the next start.

    The running entries ``(gone_e[t], gone_s[t])``, ``t < gone``, stopped since the last pass: they are
    removed first (:func:`_purge`)."""
    count = _purge(ends, seqs, jobs, count, gone_e, gone_s, gone)
    nq = len(q)
    nodes_total = free0.shape[1]
    free = scratch[0:3]
    free[:, :] = free0
    extra = scratch[3:6]
    cand = scratch[6]
    tmp = scratch[7]
    counts = scratch[8]
    out[:] = 0
    out[4] = -1
    out[5] = count
    nh = 0  # start jobs from the head while they fit
    while nh < nq:
        i = q[nh]
        c, m, g, n, p = need[i, 0], need[i, 1], need[i, 2], nnodes[i], part[i]
        if not _place(free, free, False, c, m, g, n, allowed[p], part_lo[p], part_hi[p], switch, prefer, cand,
                      counts, out_nodes, out[2]):
            break
        _start(i, nh, free, c, m, g, n, now, est, seq, ends, seqs, jobs, held, node_off, node_pool, out_pos, out_nodes,
               out)
        nh += 1
    out[0] = nh
    if nh == nq:
        return INF
    head = q[nh]
    out[4] = nh
    hp = part[head]
    shadow = _reserve(free, cap, need[head, 0], need[head, 1], need[head, 2], nnodes[head], allowed[hp],
                      part_lo[hp], part_hi[hp], ends, jobs, out[5], held, node_off, nnodes, node_pool, release_ties,
                      switch, prefer, cand, counts, tmp, extra)
    first = nh + 1
    stop = nq if depth < 0 else min(nq, nh + 1 + depth)
    idle_c = 0
    idle_g = 0
    for node in range(nodes_total):
        idle_c += free[0, node]
        idle_g += free[2, node]
    if first >= stop or not (idle_c > 0 or idle_g > 0):
        return shadow
    # the most of each resource one node of each partition has free: free resources only shrink in a
    # pass, so a request asking more than that of one node fits nowhere for the rest of it
    parts = allowed.shape[0]
    most = np.zeros((parts, 3), dtype=np.int64)
    for p in range(parts):
        al = allowed[p]
        for node in range(part_lo[p], part_hi[p]):
            if al[node]:
                for r in range(3):
                    if free[r, node] > most[p, r]:
                        most[p, r] = free[r, node]
    order = np.arange(first, stop)
    if sjf:
        keys = np.empty(stop - first, dtype=np.float64)
        for t in range(stop - first):
            keys[t] = est[q[first + t]]
        order = order[np.argsort(keys, kind="mergesort")]
    notes = 0
    per = len(need) + 1  # row 2's stamps: this pass's, and its starts so far
    for pos in order:
        i = q[pos]
        c, m, g, n, p = need[i, 0], need[i, 1], need[i, 2], nnodes[i], part[i]
        if c > most[p, 0] or m > most[p, 1] or g > most[p, 2]:
            continue
        al, lo, hi, w = allowed[p], part_lo[p], part_hi[p], out[2]
        k = shape[i]
        if memo_at[1, k] == stamp and m >= memo[1, k]:
            continue  # it fits nowhere now
        if now + est[i] > shadow:
            if not (memo_at[0, k] == stamp and m >= memo[0, k]) and _place(free, extra, True, c, m, g, n, al, lo, hi,
                                                                           switch, prefer, cand, counts, out_nodes, w):
                _take(extra, c, m, g, out_nodes, w, n)
            else:
                if memo_at[0, k] != stamp or m < memo[0, k]:
                    memo[0, k], memo_at[0, k] = m, stamp
                now_at = stamp * per + out[1]
                if memo_at[2, k] == now_at and m <= memo[2, k]:
                    fits = True
                else:
                    fits = _place(free, free, False, c, m, g, n, al, lo, hi, switch, prefer, cand, counts, tmp, 0)
                    if fits:
                        if memo_at[2, k] != now_at or m > memo[2, k]:
                            memo[2, k], memo_at[2, k] = m, now_at
                    elif memo_at[1, k] != stamp or m < memo[1, k]:
                        memo[1, k], memo_at[1, k] = m, stamp
                if fits:
                    if direct:
                        tally[i] += 1
                    else:
                        out_notes[notes] = pos
                        notes += 1
                continue
        elif not _place(free, free, False, c, m, g, n, al, lo, hi, switch, prefer, cand, counts, out_nodes, w):
            if memo_at[1, k] != stamp or m < memo[1, k]:
                memo[1, k], memo_at[1, k] = m, stamp
            continue
        _start(i, pos, free, c, m, g, n, now, est, seq, ends, seqs, jobs, held, node_off, node_pool, out_pos, out_nodes,
               out)
        idle_c -= c * n
        idle_g -= g * n
        if not (idle_c > 0 or idle_g > 0):
            break
    out[3] = notes
    return shadow


class RunningIndex:
    """What :func:`easy_pass` reads of a run, kept as arrays beside the context's lists (module text),
    with the pass's per-shape memo.  It registers itself on ``ctx``'s start, stop, re-queue and revision
    hooks; with ``direct`` (the run's own policy: nothing else notes why jobs wait) the pass counts the
    reservation's holds itself and :meth:`finished` adds them to the run's tally."""

    def __init__(self, ctx, direct: bool = False, appends: bool = False):
        model = ctx.model
        n = ctx.n
        req = ctx.req
        nodes_total = model.capacity.shape[1]
        spans = model.spans
        # each job's request as its row of the model's table: per-node CPUs, memory, GPUs, nodes, partition
        nums = np.fromiter((r.num for r in req), dtype=np.int64, count=n)
        if n and nums.min() < 0:
            raise ValueError("requests not made by the model (no row in its table)")
        table = model.shapes()[nums]
        nnodes = table[:, 3]
        placed = max(1, int(nnodes.sum()))
        # the arrays in a few blocks, each passed to the pass as one (its attributes below are views)
        self.by_node = np.zeros((13, nodes_total), dtype=np.int64)
        self.by_job = np.zeros((n, 10), dtype=np.int64)
        self.slots = np.zeros((6, n + 1), dtype=np.int64)
        self.slot_times = np.zeros((3, n + 1), dtype=np.float64)
        self.placed = np.zeros((2, placed), dtype=np.int64)
        self.spans = np.array([[span.lo for span in spans], [span.hi for span in spans]], dtype=np.int64).reshape(2, -1)
        self.cap = self.by_node[0:3]
        self.cap[:] = model.capacity
        self.scratch = self.by_node[3:12]  # switch groups number fewer than nodes
        self.switch = self.by_node[12]
        self.switch[:] = model.switch
        self.need = self.by_job[:, 0:3]
        self.need[:] = table[:, 0:3]
        self.held = self.by_job[:, 3:6]
        self.nnodes = self.by_job[:, 6]
        self.nnodes[:] = nnodes
        self.part = self.by_job[:, 7]
        self.part[:] = table[:, 4]
        self.node_off = self.by_job[:, 8]
        self.node_off[:] = np.concatenate([[0], np.cumsum(nnodes)[:-1]]).astype(np.int64)
        self.shape = self.by_job[:, 9]
        self.seqs, self.jobs, self.out_pos, self.out_notes = self.slots[0], self.slots[1], self.slots[2], self.slots[3]
        self.ends = self.slot_times[0]
        self.est = self.slot_times[2, :n]
        self.est[:] = ctx.est
        self.node_pool, self.out_nodes = self.placed[0], self.placed[1]
        self.allowed = np.array([span.allowed for span in spans], dtype=np.bool_).reshape(len(spans), nodes_total)
        self.part_lo, self.part_hi = self.spans[0], self.spans[1]
        self.count = 0
        #: running entries stopped since the last pass (still in ``ends``/``seqs``/``jobs``, stale)
        self.gone_e = self.slot_times[1]
        self.gone_s = self.slots[4]
        self.gone = 0
        self.prefer = model.topology == "prefer"
        self.out = np.zeros(6, dtype=np.int64)
        self.applying = False  # while the pass's own starts are applied (it has entered them itself)
        #: with ``direct`` (nothing else notes why jobs wait), the passes each job was held back by a
        #: reservation, counted by the pass itself and added to the run's tally when it ends
        self.direct = direct
        self.tally = self.slots[5, :n]
        #: with ``appends`` (an order that only appends, and nothing but this pass takes jobs off the
        #: queue), the queue as an array, kept from pass to pass: only the jobs appended since are copied
        self.appends = appends
        self.queue = np.empty(n if appends else 0, dtype=np.int64)
        self.queued = 0
        # shapes: requests alike but for memory, numbered (a re-queued job's may change)
        self._shapes: dict = {}
        self.shape[:] = self._shapes_of(req, nums)
        self.memo = np.zeros((6, 0), dtype=np.int64)  # rows 0-2 the memo, 3-5 when each entry was made
        self._room()
        self.stamp = 0
        #: what easy_pass reads after its per-pass arguments (the arrays are updated in place)
        self.arrays = (self.by_node, self.by_job, self.slots, self.slot_times, self.placed, self.spans, self.allowed,
                       self.prefer, direct, self.out)
        ctx.start_hooks.append(self.started)
        #: whether nothing but this index hears of starts (then a pass's starts leave the free state at once)
        self.alone = ctx.start_hooks == [self.started]
        ctx.stop_hooks.append(self.stopped)
        ctx.requeue_hooks.append(self.requeued)
        ctx.revise_hooks.append(self.revised)
        if direct:
            ctx.finish_hooks.append(self.finished)

    # ---- hooks ------------------------------------------------------------------------------
    def started(self, ctx, i: int) -> None:
        if self.applying:
            return
        if self.gone:  # the stale entries go before a live one comes in: never more entries than jobs
            self._purge()
        e, s, _ = ctx.running_key[i]
        self.count = _insert(self.ends, self.seqs, self.jobs, self.count, e, s, i)
        alloc = ctx.alloc[i]
        nodes = alloc[2]
        off = int(self.node_off[i])
        if len(nodes) == 1:
            self.node_pool[off] = nodes[0]
        else:
            self.node_pool[off : off + len(nodes)] = nodes
        self.held[i] = alloc[3]

    def stopped(self, ctx, i: int, t: float) -> None:
        """The entry stays (stale) until the next pass removes every stopped one in one sweep."""
        e, s, _ = ctx.running_key[i]
        k = self.gone
        self.gone_e[k] = e
        self.gone_s[k] = s
        self.gone = k + 1

    def _purge(self) -> None:
        self.count = _purge(self.ends, self.seqs, self.jobs, self.count, self.gone_e, self.gone_s, self.gone)
        self.gone = 0

    def requeued(self, ctx, i: int) -> None:
        r = ctx.req[i]
        self.need[i] = r.need_t
        self.est[i] = ctx.est[i]
        self.shape[i] = self._shape_of(r)
        self._room()

    def _room(self) -> None:
        """Room in the memo for every shape numbered so far, the new ones stamped as never seen."""
        have = self.memo.shape[1]
        if have < len(self._shapes):
            grow = max(len(self._shapes), 2 * have) - have
            more = np.concatenate([np.zeros((3, grow), dtype=np.int64), np.full((3, grow), -1, dtype=np.int64)])
            self.memo = np.concatenate([self.memo, more], axis=1)

    def _shapes_of(self, req: list, nums: np.ndarray) -> np.ndarray:
        """:meth:`_shape_of` every job's request (numbered in the order the jobs first show them), each
        distinct request asked once."""
        if not len(nums):
            return nums
        distinct, first, inverse = np.unique(nums, return_index=True, return_inverse=True)
        shape_of = np.empty(len(distinct), dtype=np.int64)
        for k in np.argsort(first, kind="stable").tolist():
            shape_of[k] = self._shape_of(req[int(first[k])])
        return shape_of[inverse.reshape(-1)]

    def _shape_of(self, r) -> int:
        need = r.need_t
        key = (need[0], need[2], r.nodes, r.part)
        at = self._shapes.get(key)
        if at is None:
            at = self._shapes[key] = len(self._shapes)
        return at

    def revised(self, ctx, i: int, old) -> None:
        self.count = _remove(self.ends, self.seqs, self.jobs, self.count, old[0], old[1])
        e, s, _ = ctx.running_key[i]
        self.count = _insert(self.ends, self.seqs, self.jobs, self.count, e, s, i)

    def finished(self, ctx) -> None:
        counts = ctx.reason_counts
        counts[RESERVATION] = (np.asarray(counts[RESERVATION], dtype=np.int64) + self.tally).tolist()

    # ---- the pass ---------------------------------------------------------------------------
    def run(self, ctx, q: list, release_ties: bool, depth: int | None, sjf: bool) -> tuple:
        """One pass over ``q``: start its jobs through ``ctx.start`` and remove them from ``q``;
        return ``(head, shadow)`` (``head`` the job reserved for, or ``None``) and the jobs the
        reservation held back."""
        out = self.out
        self.stamp += 1
        shadow = easy_pass(ctx.free, self._array(q), ctx.now, ctx.seq, self.count, release_ties,
                           -1 if depth is None else depth, sjf, *self.arrays, self.memo, self.stamp, self.gone)
        self.gone = 0
        _, starts, written, notes, head_pos, self.count = out.tolist()
        head = None if head_pos < 0 else q[head_pos]
        held = [q[p] for p in self.out_notes[:notes].tolist()] if notes else []
        if starts:
            req = ctx.req
            positions = self.out_pos[:starts].tolist()
            flat = self.out_nodes[:written]
            nodes = flat.tolist()
            w = 0
            taken = self.alone  # no other hook hears of the starts: the free state they leave is written at once
            if taken:
                np.copyto(ctx.free, self.scratch[0:3])
            self.applying = True
            try:
                for pos in positions:
                    i = q[pos]
                    r = req[i]
                    n = r.nodes
                    if n == 1:
                        node = nodes[w]
                        alloc = (node, r.col, [node], r.need_t)
                    else:
                        alloc = (flat[w : w + n].copy(), r.col, nodes[w : w + n], r.need_t)
                    w += n
                    ctx.start(i, alloc, taken)
            finally:
                self.applying = False
            for pos in sorted(positions, reverse=True):
                del q[pos]
            if self.appends:
                self.queued = _drop(self.queue, self.queued, self.out_pos, starts)
        return head, shadow, held

    def _array(self, q: list) -> np.ndarray:
        """``q`` as an int64 array: with ``appends``, the kept array with the jobs appended since the last pass."""
        if not self.appends:
            return np.array(q, dtype=np.int64)
        had, n = self.queued, len(q)
        if n < had or (had and q[had - 1] != self.queue[had - 1]):  # not the queue it was kept from: copy it all
            had = 0
        if n > had:
            self.queue[had:n] = q[had:]
        self.queued = n
        return self.queue[:n]
