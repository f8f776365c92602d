"""The collector's read-only commands: a frozen table, and a runner that runs nothing else.

Every command the pilot collector may run is an entry of :data:`READ_ONLY`: a name, the exact argument
vector (with ``{since}``/``{until}`` placeholders for times), and what its output is.  The runner takes a
*name*, never an argument vector, fills the placeholders only with times it formatted itself, and runs
the command without a shell.  Nothing in this table writes to the cluster: ``sacct``, ``sinfo`` and
``sshare`` only read, ``scontrol`` is only asked to ``show``, ``kubectl`` only to ``get``.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import time
from dataclasses import dataclass
from types import MappingProxyType

#: the fields of the sacct text export (any order reads; this one is the README's)
SACCT_FIELDS = ("JobID,JobIDRaw,Cluster,Partition,QOS,Account,User,Submit,Eligible,Start,End,Elapsed,Timelimit,"
                "State,ExitCode,NNodes,NCPUS,ReqCPUS,ReqMem,ReqTRES,AllocTRES,TotalCPU,MaxRSS,AveRSS,NTasks,"
                "TRESUsageInTot,NodeList,JobName,AdminComment")
#: jobs that ended: with -S/-E, sacct then returns the jobs that reached these states in the window
TERMINAL_STATES = "CA,CD,DL,F,NF,OOM,PR,TO,BF"


@dataclass(frozen=True)
class Command:
    """One read-only command: ``argv`` (placeholders ``{since}``, ``{until}``), the file its output goes
    to (placeholders ``{day}``), and its ``role`` for ingestion (``accounting``, ``accounting-json``,
    ``nodes``, ``partitions``, ``config``, ``fairshare``, ``version``, ``pods``, ``k8s-nodes``)."""

    name: str
    argv: tuple
    output: str
    role: str


def _table(*commands: Command) -> MappingProxyType:
    return MappingProxyType({c.name: c for c in commands})


READ_ONLY = _table(
    Command("slurm_version", ("sinfo", "--version"), "slurm_version.txt", "version"),
    Command("sacct_text", ("sacct", "--allusers", "--duplicates", "--parsable2", "--starttime", "{since}",
                           "--endtime", "{until}", "--state", TERMINAL_STATES, "--format", SACCT_FIELDS),
            "sacct/{day}.txt", "accounting"),
    Command("sacct_json", ("sacct", "--allusers", "--duplicates", "--json", "--starttime", "{since}",
                           "--endtime", "{until}", "--state", TERMINAL_STATES),
            "sacct-json/{day}.json", "accounting-json"),
    Command("sinfo", ("sinfo", "--all", "--Node", "--long", "--noheader"), "sinfo.txt", "nodes-summary"),
    Command("scontrol_nodes", ("scontrol", "show", "node", "--oneliner"), "scontrol_nodes.txt", "nodes"),
    Command("scontrol_partitions", ("scontrol", "show", "partition", "--oneliner"), "scontrol_partitions.txt",
            "partitions"),
    Command("scontrol_config", ("scontrol", "show", "config"), "scontrol_config.txt", "config"),
    Command("sshare", ("sshare", "--all", "--long", "--parsable2"), "sshare.txt", "fairshare"),
    Command("kubectl_version", ("kubectl", "version", "--client", "--output", "json"), "kubectl_version.json",
            "version"),
    Command("kubectl_pods", ("kubectl", "get", "pods", "--all-namespaces", "--output", "json"), "k8s/pods.json",
            "pods"),
    Command("kubectl_nodes", ("kubectl", "get", "nodes", "--output", "json"), "k8s/nodes.json", "k8s-nodes"),
)

_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}(_\d{2})?$")


@dataclass
class Ran:
    """What one run of a command gave: the exact argument vector, exit code, seconds, output and its sha256."""

    name: str
    argv: tuple
    exit_code: int
    seconds: float
    output: bytes
    stderr: str
    attempts: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.output).hexdigest()

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def argv_of(name: str, *, since: str | None = None, until: str | None = None) -> tuple:
    """The argument vector of table entry ``name`` (``KeyError`` for anything else); times must be
    ``YYYY-MM-DDTHH:MM:SS``."""
    command = READ_ONLY[name]
    for value in (since, until):
        if value is not None and not _TIME.match(value):
            raise ValueError(f"not a time of the form YYYY-MM-DDTHH:MM:SS: {value!r}")
    out = []
    for arg in command.argv:
        if arg == "{since}" or arg == "{until}":
            value = since if arg == "{since}" else until
            if value is None:
                raise ValueError(f"{name} needs {arg}")
            out.append(value)
        else:
            out.append(arg)
    return tuple(out)


def output_of(name: str, *, day: str | None = None) -> str:
    """The output file (relative path) of ``name``; ``day`` is ``YYYY-MM-DD``."""
    path = READ_ONLY[name].output
    if "{day}" in path:
        if day is None or not _DAY.match(day):
            raise ValueError(f"{name} needs a day of the form YYYY-MM-DD, got {day!r}")
        path = path.replace("{day}", day)
    return path


class CommandRunner:
    """Runs entries of :data:`READ_ONLY` by name, without a shell; a failure is retried ``retries`` times
    after ``pause_s``, and then returned, not raised (the collection goes on)."""

    def __init__(self, *, timeout_s: float = 600.0, retries: int = 1, pause_s: float = 5.0, env: dict | None = None):
        self.timeout_s = timeout_s
        self.retries = retries
        self.pause_s = pause_s
        self.env = env

    def run(self, name: str, *, since: str | None = None, until: str | None = None) -> Ran:
        argv = argv_of(name, since=since, until=until)
        attempts = 0
        while True:
            attempts += 1
            t = time.perf_counter()
            try:
                done = subprocess.run(list(argv), capture_output=True, timeout=self.timeout_s, env=self.env,
                                      stdin=subprocess.DEVNULL, check=False)
                code, out, err = done.returncode, done.stdout, done.stderr.decode("utf-8", "replace")
            except FileNotFoundError:
                code, out, err = 127, b"", f"{argv[0]}: command not found"
            except subprocess.TimeoutExpired:
                code, out, err = 124, b"", f"timed out after {self.timeout_s:.0f} s"
            seconds = time.perf_counter() - t
            if code == 0 or attempts > self.retries:
                return Ran(name, argv, code, seconds, out, err[-2000:], attempts)
            time.sleep(self.pause_s)
