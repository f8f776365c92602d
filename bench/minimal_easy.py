"""A minimal single-purpose SimPy EASY replay of an SWF trace: the reference `reclaim simulate` is timed against.

One pool of ``procs`` processors; jobs arrive at their submit time into a FCFS queue; at each arrival and
each end the head starts while it fits, else it gets one reservation (the earliest time enough processors are
free by the running jobs' estimated ends) and later jobs backfill when they fit now and either end by their
estimate before the reservation or use only processors it leaves spare.  A job runs its logged run time
(never killed at its limit: the Parallel Workloads Archive's convention, as `reclaim simulate --procs` has it);
its processors are the allocated ones (the requested where not logged), its estimate the requested time (its
run time where not logged).  Jobs wider than the pool or of no run time are left out.

    python bench/minimal_easy.py TRACE.swf[.gz] PROCS      prints jobs, mean wait (s), makespan (s)
"""

from __future__ import annotations

import gzip
import heapq
import sys

import simpy


def read_swf(path: str) -> list[tuple[float, float, int, float]]:
    """``(submit, run, procs, estimate)`` per job, in submit order."""
    opener = gzip.open if path.endswith(".gz") else open
    jobs = []
    with opener(path, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            v = line.split()
            submit, run, alloc, req_procs, req_time = float(v[1]), float(v[3]), int(v[4]), int(v[7]), float(v[8])
            procs = alloc if alloc > 0 else req_procs
            estimate = req_time if req_time > 0 else run
            jobs.append((submit, run, procs, estimate))
    jobs.sort(key=lambda j: j[0])
    return jobs


class Easy:
    def __init__(self, env: simpy.Environment, procs: int):
        self.env = env
        self.free = procs
        self.queue: list[tuple[int, float, int, float]] = []  # (index, run, procs, estimate), FCFS
        self.running: list[tuple[float, int, int]] = []  # heap of (estimated end, index, procs)
        self.waits: list[float] = []
        self.submitted: dict[int, float] = {}

    def start(self, job) -> None:
        i, run, procs, estimate = job
        now = self.env.now
        self.free -= procs
        self.waits.append(now - self.submitted.pop(i))
        heapq.heappush(self.running, (now + estimate, i, procs))
        self.env.process(self.end(i, run, procs))

    def end(self, i, run, procs):
        yield self.env.timeout(run)
        self.free += procs
        self.running = [r for r in self.running if r[1] != i]
        heapq.heapify(self.running)
        self.schedule()

    def schedule(self) -> None:
        q = self.queue
        while q and q[0][2] <= self.free:
            self.start(q.pop(0))
        if not q:
            return
        # the head's reservation: the earliest estimated end by which enough processors are free
        need, free, shadow = q[0][2], self.free, self.env.now
        for est_end, _, procs in sorted(self.running):
            free += procs
            if free >= need:
                shadow = est_end
                break
        spare = free - need
        now = self.env.now
        k = 1
        while k < len(q):
            _, _, procs, estimate = q[k]
            if procs <= self.free and (now + estimate <= shadow or procs <= spare):
                if now + estimate > shadow:
                    spare -= procs
                self.start(q.pop(k))
            else:
                k += 1

    def arrivals(self, jobs):
        for i, (submit, run, procs, estimate) in enumerate(jobs):
            if submit > self.env.now:
                yield self.env.timeout(submit - self.env.now)
            self.submitted[i] = submit
            self.queue.append((i, run, procs, estimate))
            self.schedule()


def main(path: str, procs: int) -> None:
    jobs = [j for j in read_swf(path) if 0 < j[2] <= procs and j[1] > 0]
    env = simpy.Environment()
    easy = Easy(env, procs)
    env.process(easy.arrivals(jobs))
    env.run()
    print(f"{len(easy.waits)} jobs, mean wait {sum(easy.waits) / len(easy.waits):.1f} s, makespan {env.now:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
