"""Running replays: one after another (``serial``), or as Dask tasks on a local cluster (one worker
process per core, the default) or on an existing Dask scheduler (``tcp://HOST:8786``).

Results come back in task order, so a sweep gives the same answer however its tasks were scheduled.
Data every task reads (the month's jobs, the predictions) is shared once (:meth:`Runner.share`)
instead of travelling with each task.  On a terminal a progress line counts finished replays on
stderr; elsewhere (cron, CI) nothing is printed.
"""

from __future__ import annotations

import os
import sys
import time


class Runner:
    """``with Runner(scheduler=None, serial=False) as run: run.map(fn, tasks)``."""

    def __init__(self, scheduler: str | None = None, *, serial: bool = False, workers: int | None = None,
                 progress: bool | None = None, label: str = "replays"):
        self.scheduler = scheduler
        self.serial = serial
        self.workers = workers or os.cpu_count() or 1
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.label = label
        self.client = None
        self.cluster = None
        self.done = 0

    def __enter__(self) -> Runner:
        if self.serial:
            return self
        import logging

        from dask.distributed import Client, LocalCluster

        logging.getLogger("distributed").setLevel(logging.ERROR)
        if self.scheduler:
            self.client = Client(self.scheduler)
        else:
            self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                        dashboard_address=":0", silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        return self

    def __exit__(self, *exc) -> None:
        if self.progress and self.done:
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
        for _ in as_completed(futures):
            self._tick()
        return self.client.gather(futures)

    def _tick(self) -> None:
        self.done += 1
        if self.progress:
            sys.stderr.write(f"\rwhat-if: {self.done} {self.label} done")
            sys.stderr.flush()


def timed(fn, *args, **kwargs) -> tuple:
    """``(fn(*args, **kwargs), seconds)``."""
    t = time.perf_counter()
    return fn(*args, **kwargs), time.perf_counter() - t
