"""FIFO and EASY on one pool of processors, the whole replay compiled: the event loop of
:mod:`.engine` and the passes of :mod:`.policies.fifo` and :mod:`.policies.easy` on plain processor
counts, step for step, for a run in which every attempt completes (:mod:`.pool_replay` says when).

The loop is the engine's: at each distinct event time the attempts ending then are released (in end
time, then start order), the jobs submitted then join the queue (in submit, then job-number order; a
job wider than the pool is rejected), and the policy makes exactly one pass.  The EASY pass is
:mod:`.policies.easy`'s on a pool, its kept reservation included (a pass with nothing released since
the last one and the same head notes the jobs the reservation held back that still fit and examines
only the new ones), and it notes why jobs wait as the Python pass does: the head for resources, a
later job that fits now but not in the extra for the reservation.  Every float is computed as the
Python code computes it (``now + dur``, ``now + est``, the comparisons with the shadow time), so the
starts, ends, pass counts and wait reasons are the engine's, bit for bit.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .policies.easy_pass import position

INF = math.inf

#: job states, as codes (the engine's names: :data:`.pool_replay.STATES`)
PENDING, RUNNING, COMPLETED, REJECTED = 0, 1, 2, 3
#: scalar slots of the run's state vector
FREE, SEQ, HEAP, RUN, NOTED = range(5)


@numba.njit(cache=True)
def _push(ht, hs, hi, size, t, s, i) -> int:
    """Push ``(t, s, i)`` on the heap of the first ``size`` entries ordered by ``(t, s)``; the new size."""
    k = size
    while k > 0:
        p = (k - 1) >> 1
        if ht[p] < t or (ht[p] == t and hs[p] < s):
            break
        ht[k] = ht[p]
        hs[k] = hs[p]
        hi[k] = hi[p]
        k = p
    ht[k] = t
    hs[k] = s
    hi[k] = i
    return size + 1


@numba.njit(cache=True)
def _pop(ht, hs, hi, size) -> int:
    """Drop the heap's smallest entry (read it first); the new size."""
    size -= 1
    t = ht[size]
    s = hs[size]
    i = hi[size]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        if c + 1 < size and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hs[c + 1] < hs[c])):
            c += 1
        if ht[c] < t or (ht[c] == t and hs[c] < s):
            ht[k] = ht[c]
            hs[k] = hs[c]
            hi[k] = hi[c]
            k = c
        else:
            break
    if size > 0:
        ht[k] = t
        hs[k] = s
        hi[k] = i
    return size


@numba.njit(cache=True)
def _note(i, reason, note, listed, noted, sv) -> None:
    """Why job ``i`` still waits after this pass (the last note of a pass wins)."""
    if not listed[i]:
        listed[i] = True
        noted[sv[NOTED]] = i
        sv[NOTED] += 1
    note[i] = reason


@numba.njit(cache=True)
def _start(i, now, passes, sv, req, dur, est, enq, waited, start, state, note, keys, seqs, ht, hs, hi, re, rs, ri) -> None:
    """Start job ``i`` now (:meth:`.engine.Context.start` on a pool, for an attempt that completes)."""
    sv[FREE] -= req[i]
    start[i] = now
    w = passes - 1 - enq[i]
    if w > 0:
        waited[i] += w
    sv[SEQ] += 1
    seq = sv[SEQ]
    sv[HEAP] = _push(ht, hs, hi, sv[HEAP], now + dur[i], seq, i)
    e = now + est[i]
    count = sv[RUN]
    k = position(re, rs, count, e, seq)
    for m in range(count, k, -1):
        re[m] = re[m - 1]
        rs[m] = rs[m - 1]
        ri[m] = ri[m - 1]
    re[k] = e
    rs[k] = seq
    ri[k] = i
    sv[RUN] = count + 1
    keys[i] = e
    seqs[i] = seq
    state[i] = RUNNING
    note[i] = -1  # a job that starts in a pass is not counted as waiting in it


@numba.njit(cache=True)
def replay(submit, dur, est, req, procs, easy, release_ties, depth):
    """Replay the jobs (arrays in submit order: ``dur`` the attempt's length, ``est`` the scheduler's
    estimate, ``req`` the processors) on ``procs`` processors under EASY (``easy``) or FIFO.

    Returns ``(start, end, state, enqueued, waited, resources, reservation, finished, passes)``: per job
    the start and end (NaN where none), the state code, the pass it joined the queue at, the passes it
    waited until it started and those noted for resources and for the reservation; the job positions
    in the order their attempts ended; the number of passes."""
    n = len(submit)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    state = np.zeros(n, np.int8)
    waited = np.zeros(n, np.int64)
    enq = np.zeros(n, np.int64)
    n_res = np.zeros(n, np.int64)
    n_resv = np.zeros(n, np.int64)
    finished = np.empty(n, np.int64)
    nfin = 0
    keys = np.zeros(n, np.float64)  # each running job's entry among the running: (estimated end, seq)
    seqs = np.zeros(n, np.int64)
    ht = np.empty(n, np.float64)
    hs = np.empty(n, np.int64)
    hi = np.empty(n, np.int64)
    re = np.empty(n + 1, np.float64)
    rs = np.empty(n + 1, np.int64)
    ri = np.empty(n + 1, np.int64)
    q = np.empty(n, np.int64)
    qh = 0
    qt = 0
    note = np.full(n, -1, np.int8)
    listed = np.zeros(n, np.bool_)
    noted = np.empty(n, np.int64)
    held = np.empty(n, np.int64)
    nheld = 0
    picked = np.empty(n, np.int64)  # queue positions started by a backfill
    sv = np.zeros(5, np.int64)
    sv[FREE] = procs
    # the kept reservation (:class:`.policies.easy.EASY` ``_cache``)
    kept = False
    k_head = -1
    k_shadow = 0.0
    k_extra = 0
    k_seen = 0
    k_releases = 0
    releases = 0
    passes = 0
    k = 0
    while True:
        t = submit[k] if k < n else INF
        if sv[HEAP] and ht[0] < t:
            t = ht[0]
        if t == INF:
            break
        now = t
        while sv[HEAP] and ht[0] <= t:
            i = hi[0]
            sv[HEAP] = _pop(ht, hs, hi, sv[HEAP])
            # release (:meth:`.engine.Context._stop`)
            sv[FREE] += req[i]
            releases += 1
            count = sv[RUN]
            m = position(re, rs, count, keys[i], seqs[i])
            for u in range(m, count - 1):
                re[u] = re[u + 1]
                rs[u] = rs[u + 1]
                ri[u] = ri[u + 1]
            sv[RUN] = count - 1
            finished[nfin] = i
            nfin += 1
            end[i] = t
            state[i] = COMPLETED
        while k < n and submit[k] <= t:
            if req[k] <= procs:
                enq[k] = passes
                q[qt] = k
                qt += 1
            else:
                state[k] = REJECTED
            k += 1
        passes += 1
        # ---- the pass ----
        if qt == qh:
            kept = False
        elif not easy:
            while qh < qt and req[q[qh]] <= sv[FREE]:
                _start(q[qh], now, passes, sv, req, dur, est, enq, waited, start, state, note, keys, seqs, ht, hs, hi,
                       re, rs, ri)
                qh += 1
            if qh < qt:
                _note(q[qh], 0, note, listed, noted, sv)
        else:
            first = 1
            head = -1
            shadow = INF
            extra = 0
            incremental = kept and k_head == q[qh] and k_releases == releases
            if incremental:
                head = k_head
                shadow = k_shadow
                extra = k_extra
                _note(head, 0, note, listed, noted, sv)
                first = k_seen
                if first > 1 and nheld > 0 and not sv[FREE] <= 0:
                    for u in range(nheld):
                        j = held[u]
                        if req[j] <= sv[FREE]:
                            _note(j, 2, note, listed, noted, sv)
            else:
                kept = False
                while qh < qt and req[q[qh]] <= sv[FREE]:
                    _start(q[qh], now, passes, sv, req, dur, est, enq, waited, start, state, note, keys, seqs, ht, hs,
                           hi, re, rs, ri)
                    qh += 1
                if qh < qt:
                    head = q[qh]
                    _note(head, 0, note, listed, noted, sv)
                    # the head's reservation (:func:`.policies.easy._pool_reservation`)
                    need = req[head]
                    f = sv[FREE]
                    count = sv[RUN]
                    found = False
                    for u in range(count):
                        e = re[u]
                        f += req[ri[u]]
                        if f >= need:
                            m = u + 1
                            while release_ties and m < count and re[m] == e:
                                f += req[ri[m]]
                                m += 1
                            shadow = e
                            extra = f - need
                            found = True
                            break
                    if not found:
                        extra = f
            if head >= 0:
                # backfill (:func:`.policies.easy.backfill` and ``_backfill_pool``)
                size = qt - qh
                stop = size if depth < 0 else min(size, depth + 1)
                keep = True
                if first >= stop or sv[FREE] <= 0:
                    seen = min(first, size)
                else:
                    npicked = 0
                    last = stop
                    for pos in range(first, stop):
                        i = q[qh + pos]
                        r = req[i]
                        if r > sv[FREE]:
                            continue
                        if now + est[i] > shadow:
                            if r > extra:
                                _note(i, 2, note, listed, noted, sv)
                                continue
                            extra -= r
                        _start(i, now, passes, sv, req, dur, est, enq, waited, start, state, note, keys, seqs, ht, hs,
                               hi, re, rs, ri)
                        picked[npicked] = pos
                        npicked += 1
                        if sv[FREE] <= 0:
                            last = pos + 1
                            break
                    if npicked:
                        if not release_ties:
                            for u in range(npicked):
                                if now + est[q[qh + picked[u]]] == shadow:
                                    keep = False
                                    break
                        # take the started jobs out of the queue, the others keeping their order
                        w = qh + picked[0]
                        u = 0
                        for pos in range(picked[0], qt - qh):
                            if u < npicked and picked[u] == pos:
                                u += 1
                                continue
                            q[w] = q[qh + pos]
                            w += 1
                        qt = w
                    seen = last - npicked
                if keep:
                    kept = True
                    k_head = head
                    k_shadow = shadow
                    k_extra = extra
                    k_seen = seen
                    k_releases = releases
                    nheld = 0
                    for u in range(sv[NOTED]):
                        j = noted[u]
                        if note[j] == 2:
                            held[nheld] = j
                            nheld += 1
                else:
                    kept = False
        # ---- the pass's notes ----
        for u in range(sv[NOTED]):
            j = noted[u]
            if note[j] == 0:
                n_res[j] += 1
            elif note[j] == 2:
                n_resv[j] += 1
            note[j] = -1
            listed[j] = False
        sv[NOTED] = 0
    return start, end, state, enq, waited, n_res, n_resv, finished[:nfin], passes
