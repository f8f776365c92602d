"""The collector's read-only commands: a frozen table, and a runner that runs nothing else.

Every command the pilot collector may run is an entry of :data:`READ_ONLY`: a name, the exact argument
vector (with ``{since}``/``{until}`` placeholders for times), and what its output is.  The runner takes a
*name*, never an argument vector, fills the placeholders only with times it formatted itself, and runs
the command without a shell.  Nothing in this table writes to the cluster: ``sacct``, ``sinfo`` and
``sshare`` only read, ``scontrol`` is only asked to ``show``, ``kubectl`` only to ``get``; PBS's ``qstat`` and
``pbsnodes`` only list, LSF's ``lsid``, ``lshosts``, ``bhosts``, ``bqueues`` and ``bmgroup`` only display, Grid
Engine's ``qhost`` only displays and ``qconf`` is only asked to show (``-s…``).  A ``{queue}`` or ``{hostgroup}``
placeholder is filled only with a name that passed :func:`plain_name`, as one argument of its own.

Copying an accounting file is reading it (:func:`copy_file`): opened for reading, never through a command,
written only into the collection's folder, and recorded in the manifest like a command.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from time import sleep
from types import MappingProxyType

#: the fields of the sacct text export (any order reads; this one is the README's)
SACCT_FIELDS = ("JobID,JobIDRaw,Cluster,Partition,QOS,Account,User,Submit,Eligible,Start,End,Elapsed,Timelimit,"
                "State,ExitCode,NNodes,NCPUS,ReqCPUS,ReqMem,ReqTRES,AllocTRES,TotalCPU,MaxRSS,AveRSS,NTasks,"
                "TRESUsageInTot,NodeList,JobName,AdminComment")
#: jobs that ended: with -S/-E, sacct then returns the jobs that reached these states in the window
TERMINAL_STATES = "CA,CD,DL,F,NF,OOM,PR,TO,BF"


@dataclass(frozen=True)
class Command:
    """One read-only command: ``argv`` (placeholders ``{since}``, ``{until}``, ``{queue}``, ``{hostgroup}``),
    the file its output goes to (placeholders ``{day}``, ``{queue}``, ``{hostgroup}``), and its ``role`` for
    ingestion (``accounting``, ``accounting-json``, ``nodes``, ``partitions``, ``config``, ``fairshare``,
    ``version``, ``pods``, ``k8s-nodes``; the node outputs of PBS, LSF and Grid Engine: ``pbs-server``,
    ``pbs-queues``, ``pbs-nodes``, ``lsf-hosts``, ``lsf-slots``, ``lsf-queues``, ``lsf-hostgroups``,
    ``sge-hosts``, ``sge-queue-list``, ``sge-queue``, ``sge-hostgroup``)."""

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
    # PBS Pro / OpenPBS / Torque (audit/collect/pbs.py): server, queues and nodes; Torque's pbsnodes has no -v
    Command("pbs_server", ("qstat", "-Bf"), "pbs/qstat_server.txt", "pbs-server"),
    Command("pbs_queues", ("qstat", "-Qf"), "pbs/qstat_queues.txt", "pbs-queues"),
    Command("pbsnodes", ("pbsnodes", "-av"), "pbs/pbsnodes.txt", "pbs-nodes"),
    Command("pbsnodes_torque", ("pbsnodes", "-a"), "pbs/pbsnodes.txt", "pbs-nodes"),
    # LSF (audit/collect/lsf.py): version and cluster name, hosts, slots and GPUs, queues and host groups
    Command("lsid", ("lsid",), "lsf/lsid.txt", "version"),
    Command("lshosts", ("lshosts", "-w"), "lsf/lshosts.txt", "lsf-hosts"),
    Command("bhosts", ("bhosts", "-l"), "lsf/bhosts.txt", "lsf-slots"),
    Command("bqueues", ("bqueues", "-l"), "lsf/bqueues.txt", "lsf-queues"),
    Command("bmgroup", ("bmgroup", "-w", "-r"), "lsf/bmgroup.txt", "lsf-hostgroups"),
    # Grid Engine (audit/collect/sge.py): hosts with their resources, the queues, each queue, each host group
    Command("qhost", ("qhost", "-F"), "sge/qhost.txt", "sge-hosts"),
    Command("qconf_queues", ("qconf", "-sql"), "sge/qconf_sql.txt", "sge-queue-list"),
    Command("qconf_queue", ("qconf", "-sq", "{queue}"), "sge/queues/{queue}.txt", "sge-queue"),
    Command("qconf_hostgroup", ("qconf", "-shgrp_resolved", "{hostgroup}"), "sge/hostgroups/{hostgroup}.txt",
            "sge-hostgroup"),
)

_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}(_\d{2})?$")
#: names read from a command's output (untrusted) that may fill a placeholder: letters, digits, ``_ . -``,
#: not starting with ``-`` or ``.`` (never an option, never a path); a host group starts with ``@``
_NAMES = {"queue": re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"),
          "hostgroup": re.compile(r"@[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")}


def plain_name(text, kind: str = "queue") -> bool:
    """Whether ``text`` (read from a command's output) may fill the ``{queue}`` or ``{hostgroup}`` placeholder."""
    return isinstance(text, str) and bool(_NAMES[kind].fullmatch(text))  # whole: no newline after it


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


def _checked_names(name: str, names: dict) -> dict:
    for kind, value in names.items():
        if value is not None and not plain_name(value, kind):
            raise ValueError(f"{name}: not a plain {kind} name: {value!r}")
    return names


def argv_of(name: str, *, since: str | None = None, until: str | None = None, queue: str | None = None,
            hostgroup: str | None = None) -> tuple:
    """The argument vector of table entry ``name`` (``KeyError`` for anything else); times must be
    ``YYYY-MM-DDTHH:MM:SS``, a queue or host group a plain name (:func:`plain_name`)."""
    command = READ_ONLY[name]
    for value in (since, until):
        if value is not None and not _TIME.match(value):
            raise ValueError(f"not a time of the form YYYY-MM-DDTHH:MM:SS: {value!r}")
    names = _checked_names(name, {"queue": queue, "hostgroup": hostgroup})
    out = []
    for arg in command.argv:
        if arg == "{since}" or arg == "{until}":
            value = since if arg == "{since}" else until
            if value is None:
                raise ValueError(f"{name} needs {arg}")
            out.append(value)
        elif arg in ("{queue}", "{hostgroup}"):
            value = names[arg[1:-1]]
            if value is None:
                raise ValueError(f"{name} needs {arg}")
            out.append(value)
        else:
            out.append(arg)
    return tuple(out)


def output_of(name: str, *, day: str | None = None, queue: str | None = None, hostgroup: str | None = None) -> str:
    """The output file (relative path) of ``name``; ``day`` is ``YYYY-MM-DD``, a queue or host group a plain
    name."""
    path = READ_ONLY[name].output
    if "{day}" in path:
        if day is None or not _DAY.match(day):
            raise ValueError(f"{name} needs a day of the form YYYY-MM-DD, got {day!r}")
        path = path.replace("{day}", day)
    for kind, value in _checked_names(name, {"queue": queue, "hostgroup": hostgroup}).items():
        if "{" + kind + "}" in path:
            if value is None:
                raise ValueError(f"{name} needs a {kind} name")
            path = path.replace("{" + kind + "}", value)
    return path


class CommandRunner:
    """Runs entries of :data:`READ_ONLY` by name, without a shell; a failure is retried ``retries`` times
    after ``pause_s``, and then returned, not raised (the collection goes on)."""

    def __init__(self, *, timeout_s: float = 600.0, retries: int = 1, pause_s: float = 5.0, env: dict | None = None):
        self.timeout_s = timeout_s
        self.retries = retries
        self.pause_s = pause_s
        self.env = env

    def run(self, name: str, *, since: str | None = None, until: str | None = None, queue: str | None = None,
            hostgroup: str | None = None) -> Ran:
        argv = argv_of(name, since=since, until=until, queue=queue, hostgroup=hostgroup)
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
            sleep(self.pause_s)


@dataclass
class NotRun:
    """A manifest entry for what the collector did not run or copy: a name refused, a file not found; a
    ``exit_code`` of 0 is a note (nothing to copy), anything else a failure."""

    name: str
    argv: tuple
    exit_code: int
    stderr: str
    seconds: float = 0.0
    attempts: int = 0
    output: bytes = b""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.output).hexdigest()

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class _Size:
    """Stands for a copied file's bytes in the manifest (their count), without holding them."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n


@dataclass
class Copied:
    """A file copied into the collection's folder: ``argv`` is ``("copy", source)``; ``bytes_copied`` and
    ``digest`` (sha256) are the copy's, ``source_bytes`` the source's size when the copy began, ``tail_left``
    the bytes after its last complete line that were left out (a record still being written)."""

    name: str
    argv: tuple
    exit_code: int
    seconds: float
    stderr: str
    attempts: int
    bytes_copied: int = 0
    digest: str = ""
    source_bytes: int = 0
    source_mtime: float = 0.0
    tail_left: int = 0

    @property
    def output(self) -> _Size:
        return _Size(self.bytes_copied)

    @property
    def sha256(self) -> str:
        return self.digest or hashlib.sha256(b"").hexdigest()

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


_PART = re.compile(r"[A-Za-z0-9_@][A-Za-z0-9_.@-]*")
_CHUNK = 1 << 20
_MAX_PENDING = 16 << 20


def _inside(folder: Path, relative: str) -> Path:
    parts = relative.split("/")
    if relative.startswith("/") or not all(_PART.fullmatch(p) for p in parts):
        raise ValueError(f"not a plain relative path inside the collection: {relative!r}")
    dest = folder / Path(*parts)
    if not dest.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"{relative!r} lands outside the collection")
    return dest


def _copy_once(source: Path, dest: Path) -> tuple[int, str, int, float, int]:
    """Copy ``source`` as it is when opened (its size then) up to its last complete line; return (bytes
    copied, sha256, source size, source mtime, bytes left after the last line)."""
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO put in its place cannot block us
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{source}: not a regular file")
        digest, written, pending, left = hashlib.sha256(), 0, b"", st.st_size
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as out:
            while left > 0:
                chunk = src.read(min(_CHUNK, left))
                if not chunk:  # the file shrank while it was read (rotated): keep what was read
                    break
                left -= len(chunk)
                data = pending + chunk
                cut = data.rfind(b"\n") + 1
                if not cut and len(data) > _MAX_PENDING:  # not a file of lines: copy it as it comes
                    cut = len(data)
                out.write(data[:cut])
                digest.update(data[:cut])
                written += cut
                pending = data[cut:]
    return written, digest.hexdigest(), st.st_size, st.st_mtime, len(pending)


def copy_file(source, folder, relative: str, *, retries: int = 1, pause_s: float = 5.0) -> Copied:
    """Copy the accounting file ``source`` to ``folder/relative`` (read only, no command, nothing written outside
    ``folder``); a failure is retried ``retries`` times after ``pause_s``, then returned, not raised."""
    source, folder = Path(source), Path(folder)
    dest = _inside(folder, relative)
    attempts = 0
    while True:
        attempts += 1
        t = time.perf_counter()
        try:
            if not stat.S_ISREG(os.stat(source).st_mode):
                raise OSError(f"{source}: not a regular file")
            n, digest, size, mtime, tail = _copy_once(source, dest)
            return Copied("copy", ("copy", str(source)), 0, time.perf_counter() - t, "", attempts, n, digest, size,
                          mtime, tail)
        except OSError as exc:
            dest.unlink(missing_ok=True)
            if attempts > retries:
                return Copied("copy", ("copy", str(source)), 1, time.perf_counter() - t,
                              f"cannot read: {exc}"[-2000:], attempts)
        sleep(pause_s)


def run_into(runner, manifest, folder, name: str, *, queue: str | None = None, hostgroup: str | None = None,
             **extra):
    """Run table entry ``name``; write its output into ``folder`` when it succeeded; record it in ``manifest``
    (its role the table's); return what it gave."""
    ran = runner.run(name, queue=queue, hostgroup=hostgroup)
    path = output_of(name, queue=queue, hostgroup=hostgroup)
    if ran.ok:
        dest = _inside(Path(folder), path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(ran.output)
    manifest.record(ran, path, READ_ONLY[name].role, **extra)
    return ran


def record_copy(manifest, copied: Copied, path: str, role: str = "accounting", **extra) -> None:
    """Record a copy in ``manifest`` like a command: its source, the source's size and time, and what was left."""
    info = {"source": copied.argv[1], **extra}
    if copied.ok:
        info.update(source_bytes=copied.source_bytes, source_mtime=_iso(copied.source_mtime))
        if copied.tail_left:
            info["tail_left_bytes"] = copied.tail_left
    manifest.record(copied, path, role, **info)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).replace(microsecond=0).isoformat()
