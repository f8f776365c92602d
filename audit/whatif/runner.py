"""Running replays: one after another (``serial``), or as Dask tasks on a local cluster (one worker
process per core, the default) or on an existing Dask scheduler (``tcp://HOST:8786``).

Results come back in task order, so a sweep gives the same answer however its tasks were scheduled.
Data every task reads (the month's jobs, the predictions) is shared once (:meth:`Runner.share`)
instead of travelling with each task.  On a terminal a progress line counts finished replays on
stderr (or ``on_done(count)`` hears of each, for a caller that draws its own); elsewhere (cron, CI)
nothing is printed.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque


class Runner:
    """``with Runner(scheduler=None, serial=False) as run: run.map(fn, tasks)``."""

    def __init__(self, scheduler: str | None = None, *, serial: bool = False, workers: int | None = None,
                 progress: bool | None = None, label: str = "replays", on_done=None):
        self.scheduler = scheduler
        self.serial = serial
        self.workers = workers or os.cpu_count() or 1
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.label = label
        self.on_done = on_done
        self.client = None
        self.cluster = None
        self.done = 0

    def __enter__(self) -> Runner:
        if self.serial:
            return self
        import logging

        import dask
        from dask.distributed import Client, LocalCluster

        logging.getLogger("distributed").setLevel(logging.ERROR)
        if self.scheduler:
            self.client = Client(self.scheduler)
        else:
            # Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536, so that a long-lived worker gives freed
            # memory back at once; ours live for one command, and the trim makes each task's large arrays fault in
            # fresh pages again (a 122k-job month's memory predictions 19 % slower in one process with it, the
            # sweep's prediction stage 112 s against 84 s).  glibc's own default is kept; the one-thread settings
            # for OpenMP and BLAS stay.
            with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
                self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                            dashboard_address=":0", silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        return self

    def __exit__(self, *exc) -> None:
        if self.progress and self.done and self.on_done is None:
            sys.stderr.write("\n")
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    @property
    def kind(self) -> str:
        if self.serial:
            return "serial"
        return f"dask {self.scheduler}" if self.scheduler else f"dask local, {self.workers} workers"

    def share(self, data):
        """A handle on ``data`` for tasks: the data itself when serial, else a future held by every worker."""
        if self.client is None:
            return data
        return self.client.scatter(data, broadcast=True)

    def map(self, fn, tasks: list, *shared) -> list:
        """``[fn(task, *shared) for task in tasks]``, run on the workers; in task order."""
        if not tasks:
            return []
        if self.client is None:
            out = []
            for t in tasks:
                out.append(fn(t, *shared))
                self._tick()
            return out
        from dask.distributed import as_completed

        futures = [self.client.submit(fn, t, *shared, pure=False) for t in tasks]
        index = {f.key: k for k, f in enumerate(futures)}
        out = [None] * len(tasks)
        # each answer is fetched as it finishes, while the workers go on with the rest
        for future, answer in as_completed(futures, with_results=True):
            out[index[future.key]] = answer
            self._tick()
        return out

    def stream(self, fn, *shared) -> Stream:
        """A :class:`Stream` of ``fn(task, *shared)`` on the workers."""
        return Stream(self, fn, shared)

    def _tick(self) -> None:
        self.done += 1
        if self.on_done is not None:  # the caller draws (or not) as it sees fit
            self.on_done(self.done)
        elif self.progress:
            sys.stderr.write(f"\rwhat-if: {self.done} {self.label} done")
            sys.stderr.flush()


class Stream:
    """Tasks handed out as they come (:meth:`put`) and their answers read as they finish (iterate:
    ``(key, answer)`` pairs until none is left), so a caller can put the next task of a search as soon
    as the last one is known instead of waiting for a whole round.  Serially the tasks run in the order
    put; on Dask in whatever order they finish (and by priority), so callers must not let the order
    matter."""

    def __init__(self, runner: Runner, fn, shared: tuple):
        self.runner = runner
        self.fn = fn
        self.shared = shared
        self.queue: deque = deque()  # serial: (key, task) waiting
        self.keys: dict = {}  # Dask: future key → caller's key
        self.pending = None

    def put(self, key, task, priority: int = 0, shared: tuple | None = None) -> None:
        """Hand out ``task``; on Dask a task of higher ``priority`` goes first to a free worker.  ``shared``:
        the data it reads, when not the stream's."""
        shared = self.shared if shared is None else shared
        client = self.runner.client
        if client is None:
            self.queue.append((key, task, shared))
            return
        future = client.submit(self.fn, task, *shared, pure=False, priority=priority)
        self.keys[future.key] = key
        if self.pending is None:
            from dask.distributed import as_completed

            self.pending = as_completed([future])
        else:
            self.pending.add(future)

    def cancel(self) -> None:
        """Drop the tasks not yet read."""
        self.queue.clear()
        if self.pending is not None:
            futures = list(self.pending.futures)
            self.pending.clear()
            self.runner.client.cancel(futures)
        self.keys.clear()

    def __iter__(self):
        if self.runner.client is None:
            while self.queue:
                key, task, shared = self.queue.popleft()
                answer = self.fn(task, *shared)
                self.runner._tick()
                yield key, answer
            return
        while self.pending is not None and not self.pending.is_empty():
            future = next(self.pending)
            key = self.keys.pop(future.key)
            answer = future.result()
            self.runner._tick()
            yield key, answer


def timed(fn, *args, **kwargs) -> tuple:
    """``(fn(*args, **kwargs), seconds)``."""
    t = time.perf_counter()
    return fn(*args, **kwargs), time.perf_counter() - t
