"""What a job asks for, scheduler-neutral: the advisor's reading of a job script or a Kubernetes manifest.

Every reader (``predictors.advisor.sbatch``, ``qsub``, ``bsub`` and ``kube``) returns a :class:`JobRequest`;
:func:`job_row` turns it into one row of the canonical job table, as if submitted at a given time, so that the
predictors see it as they see every past job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


class ScriptError(ValueError):
    """A job script or manifest that its scheduler would reject.  ``line`` is 1-based; ``None`` with ``cli``
    for an option given on the command line, ``None`` alone where no line is known."""

    def __init__(self, message: str, line: int | None = None, *, cli: bool = False, origin: str | None = None):
        self.message, self.line, self.cli, self.origin = message, line, cli, origin
        where = f"line {line}" if line is not None else ("command line" if cli else None)
        super().__init__(": ".join(p for p in (origin, where, message) if p))

    def named(self, origin: str) -> ScriptError:
        """The same error naming the file it came from."""
        return ScriptError(self.message, self.line, cli=self.cli, origin=self.origin or origin)


@dataclass
class JobRequest:
    """One job's request.  Sizes are per job (all nodes together) unless the name says otherwise; ``None``
    where the script leaves it to the site's default.

    ``lines`` maps each option the request came from (long name, e.g. ``mem-per-cpu``) to its 1-based line
    (``None``: given on the command line); ``commands`` are the script's command lines (or the container's
    command), which the advisor reads for how many processes the job starts, never runs.
    """

    scheduler: str                      # "slurm", "pbs", "lsf" or "kubernetes"
    job_name: str | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    user: str | None = None             # named by the input itself (a Kubernetes ``user`` label)
    nodes: int = 1
    ntasks: int = 1
    cpus_per_task: int = 1
    cpus: int | None = 1                # total CPUs (None: the whole node, size unknown)
    mem_bytes: float | None = None      # total memory (None: the site's default, or all of each node)
    mem_form: str | None = None         # "mem", "mem-per-cpu", "mem-per-gpu", or the manifest's field
    mem_all: bool = False               # --mem=0: all the memory of each node
    gpus: int = 0
    gpu_type: str | None = None
    time_limit_s: float | None = None   # None: no limit given, or unlimited
    time_unlimited: bool = False
    exclusive: bool = False
    array_tasks: int = 1
    array_spec: str | None = None
    container: str | None = None        # the container the lines to paste change (Kubernetes)
    container_requests: dict[str, float] = field(default_factory=dict)  # that container's own requests
    lines: dict[str, int | None] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)  # options as written (qsub, bsub): the lines to paste rewrite them
    ignored: list[tuple[int, str]] = field(default_factory=list)
    commands: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """JSON-ready: every field, sizes in bytes and seconds (the units of the canonical table)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("commands", "ignored", "raw")}
        d["ignored"] = [{"line": ln, "text": t} for ln, t in self.ignored]
        return d


def count_indices(ranges: list[range]) -> int:
    """Array indices named by ``ranges``, each counted once (past a million, ranges are taken not to overlap: a
    script's text never makes the advisor hold more than that many numbers)."""
    if sum(len(r) for r in ranges) > 1_000_000:
        return sum(len(r) for r in ranges)
    return len(set().union(*ranges)) if ranges else 0


def split_directive(text: str, lineno: int | None) -> list[str]:
    """The words of one ``#PBS`` or ``#BSUB`` directive (after its prefix), split as a shell splits a command line:
    whitespace separates, single or double quotes group (quotes removed), a backslash escapes the next character,
    and a word that starts with an unquoted ``#`` begins a comment that runs to the end of the line."""
    words: list[str] = []
    cur: list[str] = []
    have, quote, i, n = False, None, 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"' and i + 1 < n and text[i + 1] in '"\\':
                cur.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            else:
                cur.append(ch)
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            cur.append(text[i + 1])
            have = True
            i += 2
            continue
        if ch in "\"'":
            quote, have = ch, True
        elif ch == "#" and not have:
            break
        elif ch.isspace():
            if have:
                words.append("".join(cur))
                cur, have = [], False
        else:
            cur.append(ch)
            have = True
        i += 1
    if quote:
        raise ScriptError(f"unterminated {quote} quote", lineno)
    if have:
        words.append("".join(cur))
    return words


#: string columns of the one-row frame
_TEXT = ("user", "account", "partition", "qos", "job_name", "gpu_type")


def job_row(req: JobRequest, *, user: str | None, submit_time: pd.Timestamp) -> pd.DataFrame:
    """One canonical-style job row from a request, submitted at ``submit_time`` (usage fields null)."""
    nan = np.nan
    cpus = float(req.cpus) if req.cpus is not None else nan
    mem = float(req.mem_bytes) if req.mem_bytes is not None else nan
    limit = float(req.time_limit_s) if req.time_limit_s is not None else nan
    row = {"cluster": None, "job_id": None, "user": user, "account": req.account, "partition": req.partition,
           "qos": req.qos, "job_name": req.job_name, "submit_time": submit_time, "end_time": pd.NaT,
           "time_limit_s": limit, "req_cpus": cpus, "alloc_cpus": cpus, "req_mem_bytes": mem, "alloc_mem_bytes": mem,
           "req_gpus": float(req.gpus), "alloc_gpus": float(req.gpus), "gpu_type": req.gpu_type,
           "req_nodes": float(req.nodes), "elapsed_s": nan, "state": None, "caveats": None, "cpu_used_s": nan,
           "mem_peak_bytes": nan, "gpu_util_mean": nan, "gpu_mem_peak_bytes": nan}
    frame = pd.DataFrame([row])
    for c in (*_TEXT, "cluster", "job_id", "state", "caveats"):
        frame[c] = frame[c].astype("string")
    frame["submit_time"] = pd.to_datetime(frame["submit_time"], utc=True)
    frame["end_time"] = pd.to_datetime(frame["end_time"], utc=True)
    return frame
