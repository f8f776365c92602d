"""Placement: put jobs on nodes and GPU indices over time (FIFO with greedy skip-ahead, first fit).

This is not a scheduler model; it only has to give consistent node lists, start times and GPU indices
under a realistic load, so queues form at busy hours.  Jobs wait in per-partition FIFO queues; whenever
resources free up the queue is scanned from its head and every job that fits starts (at most
``depth`` failures per pass, like Slurm's ``bf_max_job_test``).  Optionally, a head job that has waited
longer than ``reserve_after_s`` blocks the queue behind it until it starts (off by default: without
backfill that drains whole partitions).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .cluster import Cluster


@dataclass
class Placement:
    """Per row: start time (-1 when never started), and the flat (row, node, gpu mask) allocation records."""

    start: np.ndarray
    alloc_row: np.ndarray     # one entry per (row, node)
    alloc_node: np.ndarray    # global node index
    alloc_gmask: np.ndarray   # bitmask of GPU indices held on that node


class _Partition:
    __slots__ = ("nodes", "cpu", "mem", "gmask", "gcount", "tot_cpu", "tot_mem", "tot_g", "queue")

    def __init__(self, nodes: np.ndarray, cluster: Cluster):
        self.nodes = nodes.tolist()
        self.tot_cpu = cluster.node_cpus[nodes].tolist()
        self.tot_mem = cluster.node_mem_mib[nodes].tolist()
        self.tot_g = cluster.node_gpus[nodes].tolist()
        self.cpu = list(self.tot_cpu)
        self.mem = list(self.tot_mem)
        self.gcount = list(self.tot_g)
        self.gmask = [(1 << g) - 1 for g in self.tot_g]
        self.queue: list[int] = []


class Placer:
    """First-fit placement of scheduling units (a job, or the components of a heterogeneous job)."""

    def __init__(self, depth: int = 64, reserve_after_s: int | None = None):
        self.depth = int(depth)
        self.reserve_after_s = int(reserve_after_s) if reserve_after_s is not None else 2**62

    def place(self, cluster: Cluster, submit, elapsed, partition, nodes, cpus_pn, mem_pn, gpus_pn, exclusive,
              skip, het_next) -> Placement:
        """``het_next[i]`` is True when row i+1 is a further component of row i's heterogeneous job."""
        n = len(submit)
        parts = [_Partition(np.flatnonzero(cluster.node_partition == p), cluster) for p in range(len(cluster.partitions))]
        submit_l, elapsed_l, part_l = submit.tolist(), elapsed.tolist(), partition.tolist()
        req = list(zip(nodes.tolist(), cpus_pn.tolist(), mem_pn.tolist(), gpus_pn.tolist(), exclusive.tolist(),
                       strict=True))
        het_l = het_next.tolist()
        is_comp = np.zeros(n, dtype=bool)
        is_comp[1:] = het_next[:-1]
        units = [i for i in np.flatnonzero(~is_comp & ~skip).tolist()]
        units.sort(key=lambda i: (submit_l[i], i))
        start = [-1] * n
        rec_row, rec_node, rec_mask = [], [], []
        held: dict[int, list] = {}
        heap: list = []
        ai = 0
        depth, reserve = self.depth, self.reserve_after_s

        def rows_of(u):
            out = [u]
            while het_l[out[-1]]:
                out.append(out[-1] + 1)
            return out

        def fit(p: _Partition, r):
            k, c, m, g, ex = r
            chosen = []
            cpu, mem, gc = p.cpu, p.mem, p.gcount
            if ex:
                tc, tm, tg = p.tot_cpu, p.tot_mem, p.tot_g
                for j in range(len(cpu)):
                    if cpu[j] == tc[j] and mem[j] == tm[j] and gc[j] == tg[j]:
                        chosen.append(j)
                        if len(chosen) == k:
                            return chosen
                return None
            for j in range(len(cpu)):
                if cpu[j] >= c and mem[j] >= m and gc[j] >= g:
                    chosen.append(j)
                    if len(chosen) == k:
                        return chosen
            return None

        def take(p: _Partition, row, js, r):
            _, c, m, g, ex = r
            out = []
            for j in js:
                cc, mm = (p.tot_cpu[j], p.tot_mem[j]) if ex else (c, m)
                gg = p.tot_g[j] if ex else g
                mask, free = 0, p.gmask[j]
                while gg and free:
                    low = free & -free
                    mask |= low
                    free ^= low
                    gg -= 1
                p.cpu[j] -= cc
                p.mem[j] -= mm
                p.gcount[j] -= bin(mask).count("1")
                p.gmask[j] = free
                out.append((j, cc, mm, mask))
            held[row] = out
            return out

        def give_back(p: _Partition, row):
            for j, cc, mm, mask in held.pop(row):
                p.cpu[j] += cc
                p.mem[j] += mm
                p.gcount[j] += bin(mask).count("1")
                p.gmask[j] |= mask

        def try_start(p: _Partition, u, t) -> bool:
            rows = rows_of(u)
            done = []
            for row in rows:
                r = req[row]
                js = fit(p, r)
                if js is None:
                    for d in done:
                        give_back(p, d)
                    return False
                take(p, row, js, r)
                done.append(row)
            end = t + max(elapsed_l[row] for row in rows)
            for row in rows:
                start[row] = t
                for j, _cc, _mm, mask in held[row]:
                    rec_row.append(row)
                    rec_node.append(p.nodes[j])
                    rec_mask.append(mask)
            heapq.heappush(heap, (end, u, part_l[u]))
            return True

        def schedule(pi: int, t: int) -> None:
            p = parts[pi]
            q = p.queue
            keep, fails, i = [], 0, 0
            mc, mm, mg = max(p.cpu), max(p.mem), max(p.gcount)
            while i < len(q) and fails < depth and mc > 0:
                u = q[i]
                i += 1
                r = req[u]
                if r[1] <= mc and r[2] <= mm and r[3] <= mg and try_start(p, u, t):
                    mc, mm, mg = max(p.cpu), max(p.mem), max(p.gcount)
                    continue
                keep.append(u)
                fails += 1
                if i == 1 and t - submit_l[u] > reserve:
                    break
            if i:
                p.queue = keep + q[i:]

        while ai < len(units) or heap:
            t_arr = submit_l[units[ai]] if ai < len(units) else None
            if heap and (t_arr is None or heap[0][0] <= t_arr):
                t = heap[0][0]
                dirty = set()
                while heap and heap[0][0] == t:
                    _, u, pi = heapq.heappop(heap)
                    for row in rows_of(u):
                        give_back(parts[pi], row)
                    dirty.add(pi)
                for pi in sorted(dirty):
                    schedule(pi, t)
                continue
            u = units[ai]
            ai += 1
            p = parts[part_l[u]]
            if len(p.queue) < depth and not (p.queue and t_arr - submit_l[p.queue[0]] > reserve):
                if try_start(p, u, t_arr):
                    continue
            p.queue.append(u)
        return Placement(
            start=np.asarray(start, dtype=np.int64),
            alloc_row=np.asarray(rec_row, dtype=np.int64),
            alloc_node=np.asarray(rec_node, dtype=np.int64),
            alloc_gmask=np.asarray(rec_mask, dtype=np.int64),
        )
