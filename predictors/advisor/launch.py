"""How many processes a job script (or a container's command) starts, read from its text, never run.

A job starts more than one process when a command goes through a parallel launcher (``srun``, ``mpirun``,
``mpiexec``, ``torchrun``, ``python -m torch.distributed.run``, ``deepspeed``, ``accelerate launch``,
``horovodrun``, ``jsrun``, ``aprun``, ``ibrun``, ``charmrun``, GNU ``parallel``, ``xargs -P``) or runs in the
background (``cmd &``).  A single process uses several cores when it is told to: a thread count in the
environment (``OMP_NUM_THREADS=8`` …), a reference to the allocation (``$SLURM_CPUS_PER_TASK``, ``$(nproc)`` …)
or a thread option on its command line (``-t 8``, ``--threads=$N``, ``-j8`` …).  Reading text cannot be sure:
a word that looks like a launcher counts as one (a false alarm then suppresses a warning, never raises one).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

LAUNCHERS = ("srun", "mpirun", "mpiexec", "mpiexec.hydra", "torchrun", "deepspeed", "horovodrun", "jsrun", "aprun",
             "ibrun", "charmrun", "parallel", "mpirun_rsh", "orterun", "prun")
PYTHON_LAUNCH_MODULES = ("torch.distributed.run", "torch.distributed.launch", "deepspeed.launcher.runner")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "JULIA_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "NUMBA_NUM_THREADS", "RAYON_NUM_THREADS",
                    "POLARS_MAX_THREADS", "GOMAXPROCS")
ALLOCATION_VARIABLES = ("SLURM_CPUS_PER_TASK", "SLURM_NTASKS", "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE",
                        "SLURM_NPROCS", "SLURM_TASKS_PER_NODE")
THREAD_OPTIONS = ("-t", "-j", "-p", "-@", "-nt", "-np", "--threads", "--nthreads", "--num-threads", "--num_threads",
                  "--jobs", "--cpus", "--ncpus", "--cores", "--workers", "--num-workers", "--num_workers", "--procs",
                  "--n-jobs", "--n_jobs")


@dataclass(frozen=True)
class LaunchFacts:
    launcher: str | None       # the first parallel launcher found, e.g. "srun"
    launcher_line: int | None
    background: bool           # a command ends in a single "&"
    threads: str | None        # the first sign that one process runs several threads, as written
    commands: int              # command lines read

    @property
    def processes_one(self) -> bool:
        """The script starts a single process (not known when no command was read: a container that runs its
        image's own entry point)."""
        return self.commands > 0 and self.launcher is None and not self.background

    @property
    def serial(self) -> bool:
        """A single process with no sign of threads."""
        return self.processes_one and self.threads is None


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True, posix=True)
    except ValueError:
        return line.split()


def _many(value: str) -> bool:
    """A thread count above one, or one taken from a variable or a command."""
    v = value.strip().strip("\"'")
    return v.startswith("$") or v.startswith("`") or (v.isdigit() and int(v) > 1)


def _launcher(words: list[str]) -> str | None:
    for i, w in enumerate(words):
        base = w.rsplit("/", 1)[-1]
        if base in LAUNCHERS:
            return base
        if base == "accelerate" and "launch" in words[i + 1:i + 2]:
            return "accelerate launch"
        if base == "xargs" and any(x.startswith("-P") or x == "--max-procs" for x in words[i + 1:]):
            return "xargs -P"
        if re.fullmatch(r"python[\d.]*", base) and "-m" in words[i + 1:i + 2] and \
                words[i + 2:i + 3] and words[i + 2] in PYTHON_LAUNCH_MODULES:
            return f"python -m {words[i + 2]}"
    return None


def _threads(line: str, words: list[str]) -> str | None:
    for var in THREAD_VARIABLES:
        m = re.search(rf"\b{var}=(\S+)", line)
        if m and _many(m.group(1)):
            return f"{var}={m.group(1)}"
    for var in ALLOCATION_VARIABLES:
        if re.search(rf"\$\{{?{var}\b", line):
            return f"${var}"
    if re.search(r"\$\(\s*nproc\b|`\s*nproc\b", line):
        return "$(nproc)"
    for i, w in enumerate(words[1:], start=1):
        name, eq, val = w.partition("=")
        if name in THREAD_OPTIONS and eq and _many(val):
            return w
        if w in THREAD_OPTIONS and i + 1 < len(words) and _many(words[i + 1]):
            return f"{w} {words[i + 1]}"
        m = re.fullmatch(r"-([jp@])(\d+)", w)
        if m and int(m.group(2)) > 1:
            return w
    return None


def launch_facts(commands) -> LaunchFacts:
    """Facts from ``(line, text)`` command lines."""
    launcher = line_of = threads = None
    background = False
    n = 0
    for ln, text in commands:
        n += 1
        words = _words(text)
        found = _launcher(words)
        if found and launcher is None:
            launcher, line_of = found, ln
        if re.search(r"(?<![&|>])&\s*(?:#.*)?$", text.strip()) or re.search(r"(?<![&|>])&\s*(?:wait|done)\b", text):
            background = True
        threads = threads or _threads(text, words)
    return LaunchFacts(launcher, line_of, background, threads, n)
