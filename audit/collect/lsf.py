"""``reclaim collect lsf``: a window of an LSF cluster's accounting (copies of ``lsb.acct`` and of the archived
``lsb.acct.N`` whose records can fall in the window) and its shape (``lshosts -w``, ``bhosts -l``, ``bqueues -l``,
``bmgroup -w -r``), with ``lsid`` for the version and the cluster's name, into a folder and a tarball.

``mbatchd`` appends a record to ``lsb.acct`` as each job finishes; the file is in ``LSB_SHAREDIR/<cluster>/logdir``
(lsb.acct(5)), ``LSB_SHAREDIR`` set in ``lsf.conf`` (in ``$LSF_ENVDIR``, else ``/etc``) and the cluster named by
``lsid``; ``--logdir`` names the folder directly.  Archived files (``ACCT_ARCHIVE_AGE``/``SIZE``/``TIME``) sit
beside it as ``lsb.acct.N``.  Each record begins with its type, the format's version and the time it was logged
(seconds since the epoch): a file is copied when its records, from its first line's time to its last line's
(else the file's modification time), meet the window; it is copied whole (the manifest gives its records' span
beside the window), and a file out of the window is noted, not copied.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..readers.lsf_hosts import cluster_name
from .commands import CommandRunner, NotRun, copy_file, plain_name, record_copy, run_into
from .manifest import Manifest, fresh_folder, write_tarball
from .times import epoch_utc, head_and_tail, parse_window, stamp

LSF_CONF = Path("/etc/lsf.conf")
_ACCT = re.compile(r"^lsb\.acct(?:\.(\d+))?$")
_RECORD = re.compile(rb'^"[A-Za-z0-9_]+"\s+"[^"]*"\s+(\d+)\s')
SHAPE_COMMANDS = ("lshosts", "bhosts", "bqueues", "bmgroup")


@dataclass
class LogDir:
    """The accounting folder (None: not found), how it was found, and what was tried."""

    path: Path | None
    how: str
    tried: list = field(default_factory=list)


def _conf_value(conf: Path, key: str) -> str | None:
    try:
        lines = conf.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        k, sep, value = line.strip().partition("=")
        if sep and k.strip() == key:
            return value.split("#", 1)[0].strip().strip("\"'") or None
    return None


def find_logdir(lsid_text: str, env=None, logdir=None) -> LogDir:
    """``LSB_SHAREDIR/<cluster>/logdir`` (see the module's docstring), or ``logdir`` when given."""
    if logdir is not None:
        return LogDir(Path(logdir), "--logdir", [str(logdir)])
    env = os.environ if env is None else env
    conf = Path(env["LSF_ENVDIR"]) / "lsf.conf" if env.get("LSF_ENVDIR") else LSF_CONF
    share = _conf_value(conf, "LSB_SHAREDIR")
    cluster = cluster_name(lsid_text)
    tried = [f"LSB_SHAREDIR in {conf}: {share or 'not set'}", f"cluster name from lsid: {cluster or 'none'}"]
    if share and cluster and plain_name(cluster):
        path = Path(share) / cluster / "logdir"
        tried.append(str(path))
        if path.is_dir():
            return LogDir(path, f"LSB_SHAREDIR in {conf} and lsid", tried)
    return LogDir(None, "not found", tried)


def record_span(path: Path) -> tuple[float | None, float | None]:
    """Times (epoch seconds) of the first and the last record of an ``lsb.acct`` file; None where unreadable."""
    ends = head_and_tail(path)
    if ends is None:
        return None, None
    head, tail = ends
    first = next((int(m.group(1)) for m in map(_RECORD.match, head.splitlines()) if m), None)
    last = next((int(m.group(1)) for m in map(_RECORD.match, reversed(tail.splitlines())) if m), None)
    return first, last


def collect_lsf(out, *, since: str = "7d", until: str | None = None, logdir=None,
                runner: CommandRunner | None = None, env=None, now: datetime | None = None, retries: int = 1,
                pause_s: float = 5.0, log=None) -> tuple[Path, Manifest]:
    """Collect into ``out/reclaim-pilot-lsf-<end day>/`` and its tarball; return ``(tarball, manifest)``.
    The window is in this machine's local time; ``lsb.acct`` stamps records in seconds since the epoch."""
    runner = runner or CommandRunner(retries=retries, pause_s=pause_s)
    now = now or datetime.now().replace(microsecond=0)
    t0, t1 = parse_window(since, until, now)
    name = f"reclaim-pilot-lsf-{t1:%Y-%m-%d}"
    folder = fresh_folder(out, name)
    manifest = Manifest(kind="lsf", since=stamp(t0), until=stamp(t1))
    lsid = run_into(runner, manifest, folder, "lsid")
    lsid_text = lsid.output.decode("utf-8", "replace") if lsid.ok else ""
    if lsid.ok:
        manifest.versions["lsf"] = next((ln.strip() for ln in lsid_text.splitlines() if ln.strip()), "")
        manifest.versions["lsf_cluster"] = cluster_name(lsid_text) or ""
    where = find_logdir(lsid_text, env, logdir)
    if where.path is None or not where.path.is_dir():
        manifest.record(NotRun("find_accounting", ("accounting-folder",), 1,
                               "no LSF accounting folder: " + "; ".join(where.tried) + " (give --logdir)"),
                        None, "accounting")
    else:
        _copy_logdir(manifest, folder, where.path, t0.timestamp(), t1.timestamp(), retries, pause_s, log)
    for cmd in SHAPE_COMMANDS:
        run_into(runner, manifest, folder, cmd)
    return write_tarball(folder, manifest, name), manifest


def _copy_logdir(manifest, folder, logdir: Path, start: float, end: float, retries, pause_s, log) -> None:
    names = sorted((p.name for p in logdir.iterdir() if _ACCT.match(p.name)),
                   key=lambda n: int(_ACCT.match(n).group(1) or 0))
    window = [epoch_utc(start), epoch_utc(end)]
    for fname in names:
        source = logdir / fname
        first, last = record_span(source)
        try:
            last = last if last is not None else source.stat().st_mtime
        except OSError:
            pass
        if first is not None and last is not None and (first >= end or last < start):
            manifest.record(NotRun("copy", ("copy", str(source)), 0, ""), None, "accounting", window=window,
                            records=[epoch_utc(first), epoch_utc(last)],
                            note="not copied: its records are out of the window")
            continue
        relative = f"lsf/logdir/{fname}"
        copied = copy_file(source, folder, relative, retries=retries, pause_s=pause_s)
        extra = {"window": window}
        if first is None or last is None:
            extra["note"] = "copied whole: the times of its records could not be read"
        else:
            extra["records"] = [epoch_utc(first), epoch_utc(last)]
            if first < start or last > end:
                extra["note"] = "copied whole: it holds records outside the window too"
        record_copy(manifest, copied, relative, **extra)
        if log is not None:
            log(f"{fname}: exit {copied.exit_code}, {copied.bytes_copied:,} bytes, {copied.seconds:.1f} s")
