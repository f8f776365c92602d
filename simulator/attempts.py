"""The attempt log: one entry per attempt that ended (completed, killed or preempted), kept in typed
columns so the result arrays are built without copying through Python objects."""

from __future__ import annotations

from array import array

import numpy as np

OUTCOMES = ("COMPLETED", "OUT_OF_MEMORY", "TIMEOUT", "PREEMPTED")
CODE = {name: k for k, name in enumerate(OUTCOMES)}


class AttemptLog:
    """Columns: job position, queued, start, end, outcome code, CPUs, memory, GPUs held in total,
    restart overhead paid; ``allocs`` keeps node allocations when ``keep_allocs``."""

    __slots__ = ("job", "queued", "start", "end", "outcome", "cpus", "mem", "gpus", "overhead", "allocs",
                 "keep_allocs")

    def __init__(self, keep_allocs: bool):
        self.job = array("q")
        self.queued = array("d")
        self.start = array("d")
        self.end = array("d")
        self.outcome = array("b")
        self.cpus = array("q")
        self.mem = array("q")
        self.gpus = array("q")
        self.overhead = array("d")
        self.allocs: list = []
        self.keep_allocs = keep_allocs

    def __len__(self) -> int:
        return len(self.job)

    def append(self, i, queued, start, end, outcome, cpus, mem, gpus, overhead, alloc) -> None:
        self.job.append(i)
        self.queued.append(queued)
        self.start.append(start)
        self.end.append(end)
        self.outcome.append(CODE[outcome])
        self.cpus.append(cpus)
        self.mem.append(mem)
        self.gpus.append(gpus)
        self.overhead.append(overhead)
        if self.keep_allocs:
            self.allocs.append(alloc)

    def column(self, name: str) -> np.ndarray:
        col = getattr(self, name)
        dtype = {"d": np.float64, "q": np.int64, "b": np.int8}[col.typecode]
        return np.frombuffer(col, dtype=dtype).copy() if len(col) else np.zeros(0, dtype=dtype)

    def outcomes(self) -> np.ndarray:
        return np.array(OUTCOMES)[self.column("outcome")]
