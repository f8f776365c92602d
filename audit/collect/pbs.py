"""``reclaim collect pbs``: a window of a PBS Pro, OpenPBS or Torque cluster's accounting (copies of the server's
daily accounting files) and its shape (``qstat -Bf``, ``qstat -Qf``, ``pbsnodes``), into a folder and a tarball
with its manifest.

The server writes one accounting file a day, named ``YYYYMMDD`` (the server's local date), under
``$PBS_HOME/server_priv/accounting/``; a job's end record is in the file of the day it ended.  ``PBS_HOME`` is
found as PBS documents it (pbs.conf(8B)): the environment's ``PBS_HOME`` (which overrides the file), else the
``PBS_HOME=`` line of ``$PBS_CONF_FILE`` or ``/etc/pbs.conf``; Torque keeps it in ``/var/spool/torque``; PBS's
own default is ``/var/spool/pbs``.  ``--accounting-dir`` names the folder directly.  The files of the window's
days are copied whole (the first and last day's files hold the whole day; the manifest says so); a day without a
file had no records.

Torque's ``pbsnodes`` has no ``-v``: it is asked ``pbsnodes -a`` when the cluster is Torque (no pbs.conf and a
``/var/spool/torque``), PBS Pro and OpenPBS ``pbsnodes -av`` (all vnodes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from .commands import CommandRunner, NotRun, copy_file, record_copy, run_into
from .manifest import Manifest, fresh_folder, write_tarball
from .times import days, parse_when, stamp

PBS_CONF = Path("/etc/pbs.conf")
TORQUE_HOME = Path("/var/spool/torque")
PBS_DEFAULT_HOME = Path("/var/spool/pbs")
ACCOUNTING = Path("server_priv") / "accounting"


@dataclass
class Where:
    """Where the accounting files are (None: not found), how that was found, what was tried, and the flavour
    (``pbspro`` for PBS Pro and OpenPBS, ``torque``)."""

    accounting: Path | None
    how: str
    flavour: str
    tried: list = field(default_factory=list)


def _conf_home(conf: Path) -> str | None:
    try:
        lines = conf.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "PBS_HOME":
            return value.strip().strip("\"'") or None
    return None


def find_accounting(env=None, accounting_dir=None, *, conf: Path | None = None,
                    torque_home: Path = TORQUE_HOME) -> Where:
    """The accounting folder, found the documented way (see the module's docstring)."""
    env = os.environ if env is None else env
    conf = Path(env["PBS_CONF_FILE"]) if env.get("PBS_CONF_FILE") else (conf or PBS_CONF)
    flavour = "pbspro" if conf.is_file() or not torque_home.is_dir() else "torque"
    if accounting_dir is not None:
        return Where(Path(accounting_dir), "--accounting-dir", flavour, [str(accounting_dir)])
    candidates = []
    if env.get("PBS_HOME"):
        candidates.append((Path(env["PBS_HOME"]), "PBS_HOME in the environment"))
    home = _conf_home(conf)
    if home:
        candidates.append((Path(home), f"PBS_HOME in {conf}"))
    candidates += [(torque_home, "Torque's home"), (PBS_DEFAULT_HOME, "PBS's default home")]
    tried = []
    for base, how in candidates:
        folder = base / ACCOUNTING
        tried.append(str(folder))
        if folder.is_dir():
            return Where(folder, how, "torque" if base == torque_home and not conf.is_file() else flavour, tried)
    return Where(None, "not found", flavour, tried)


def collect_pbs(out, *, since: str = "7d", until: str | None = None, accounting_dir=None,
                runner: CommandRunner | None = None, env=None, now: datetime | None = None, retries: int = 1,
                pause_s: float = 5.0, log=None, where: Where | None = None) -> tuple[Path, Manifest]:
    """Collect into ``out/reclaim-pilot-pbs-<end day>/`` and its tarball; return ``(tarball, manifest)``.
    Times are the server's local time, as its accounting files are named and stamped."""
    runner = runner or CommandRunner(retries=retries, pause_s=pause_s)
    now = now or datetime.now().replace(microsecond=0)
    t0, t1 = parse_when(since, now), parse_when(until, now) if until else now
    cut = days(t0, t1)
    name = f"reclaim-pilot-pbs-{t1:%Y-%m-%d}"
    folder = fresh_folder(out, name)
    manifest = Manifest(kind="pbs", since=stamp(t0), until=stamp(t1))
    where = where or find_accounting(env, accounting_dir)
    manifest.versions["pbs_flavour"] = where.flavour
    server = run_into(runner, manifest, folder, "pbs_server")
    if server.ok:
        info = server_info(server.output.decode("utf-8", "replace"))
        manifest.versions.update({k: v for k, v in info.items() if v})
    if where.accounting is None or not where.accounting.is_dir():
        manifest.record(NotRun("find_accounting", ("accounting-folder",), 1,
                               "no PBS accounting folder: tried " + ", ".join(where.tried)
                               + " (give --accounting-dir)"), None, "accounting")
    else:
        for a, b in cut:
            _copy_day(manifest, folder, where.accounting, a, b, retries, pause_s, log)
    run_into(runner, manifest, folder, "pbs_queues")
    run_into(runner, manifest, folder, "pbsnodes_torque" if where.flavour == "torque" else "pbsnodes")
    return write_tarball(folder, manifest, name), manifest


def _copy_day(manifest, folder, accounting: Path, a: datetime, b: datetime, retries, pause_s, log) -> None:
    day = f"{a:%Y%m%d}"
    source = accounting / day
    window = [stamp(a), stamp(b)]
    if not source.exists():
        manifest.record(NotRun("copy", ("copy", str(source)), 0, ""), None, "accounting", window=window,
                        note="not copied: no such file (no records that day)")
        return
    copied = copy_file(source, folder, f"pbs/accounting/{day}", retries=retries, pause_s=pause_s)
    midnight = datetime(a.year, a.month, a.day)
    whole = a != midnight or b != midnight + timedelta(days=1)
    extra = {"window": window}
    if whole:
        extra["note"] = f"copied whole: the day's file; the window needs {a:%H:%M:%S}-{b:%H:%M:%S} of it"
    record_copy(manifest, copied, f"pbs/accounting/{day}", **extra)
    if log is not None:
        log(f"accounting {day}: exit {copied.exit_code}, {copied.bytes_copied:,} bytes, {copied.seconds:.1f} s")


def server_info(text: str) -> dict:
    """``pbs_version`` and the server's name from ``qstat -Bf`` (``Server: NAME`` then ``key = value`` lines)."""
    out = {"pbs": "", "pbs_server": ""}
    for line in text.splitlines():
        if line.startswith("Server:"):
            out["pbs_server"] = line.split(":", 1)[1].strip()
        key, sep, value = line.strip().partition(" = ")
        if sep and key == "pbs_version":
            out["pbs"] = value.strip()
    return out
