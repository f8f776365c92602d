"""``reclaim collect sge``: a Grid Engine cluster's accounting (a copy of the ``accounting`` file) and its shape
(``qhost -F``, ``qconf -sql``, then ``qconf -sq <queue>`` for each queue it lists and ``qconf -shgrp_resolved
<@group>`` for each host group those queues name), into a folder and a tarball with its manifest.

``sge_qmaster`` appends a line to ``$SGE_ROOT/$SGE_CELL/common/accounting`` as each job ends (accounting(5);
``SGE_CELL`` is ``default`` when unset); Debian's packages keep ``SGE_ROOT`` in ``/var/lib/gridengine``;
``--accounting`` names the file directly.  It is one file for the cluster's whole history, so it is copied whole
(the manifest gives the span of its records' end times beside the window).

Queue and host group names are read from the commands' output, so they are untrusted: each must be a plain
name (:func:`audit.collect.commands.plain_name`) before it is passed, as one argument of its own and never through
a shell; a name that is not is refused, recorded, and the collection goes on.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from ..readers.qhost import queue_hostgroups
from .commands import CommandRunner, NotRun, copy_file, plain_name, record_copy, run_into
from .manifest import Manifest, fresh_folder, write_tarball
from .times import epoch_utc, head_and_tail, parse_window, stamp

DEBIAN_SGE_ROOT = Path("/var/lib/gridengine")


def find_accounting(env=None, accounting=None) -> tuple[Path | None, list]:
    """The accounting file, and the places tried."""
    if accounting is not None:
        return Path(accounting), [str(accounting)]
    env = os.environ if env is None else env
    cell = env.get("SGE_CELL") or "default"
    roots = ([Path(env["SGE_ROOT"])] if env.get("SGE_ROOT") else []) + [DEBIAN_SGE_ROOT]
    tried = []
    for root in roots:
        path = root / cell / "common" / "accounting"
        tried.append(str(path))
        if path.is_file():
            return path, tried
    return None, tried


def end_span(path: Path) -> tuple[float | None, float | None]:
    """End times (epoch seconds) of the first and last record (field 11 of 45 colon-separated fields; Univa
    writes milliseconds, told apart by their size); None where unreadable."""
    ends = head_and_tail(path)
    if ends is None:
        return None, None
    head, tail = ends

    def end(line: bytes) -> float | None:
        if line.startswith(b"#"):
            return None
        fields = line.split(b":")
        if len(fields) < 12 or not fields[10].isdigit() or int(fields[10]) == 0:
            return None
        t = int(fields[10])
        return t / 1000.0 if t > 10**11 else float(t)

    first = next((t for t in map(end, head.splitlines()) if t is not None), None)
    last = next((t for t in map(end, reversed(tail.splitlines())) if t is not None), None)
    return first, last


def collect_sge(out, *, since: str = "7d", until: str | None = None, accounting=None,
                runner: CommandRunner | None = None, env=None, now: datetime | None = None, retries: int = 1,
                pause_s: float = 5.0, log=None) -> tuple[Path, Manifest]:
    """Collect into ``out/reclaim-pilot-sge-<end day>/`` and its tarball; return ``(tarball, manifest)``."""
    runner = runner or CommandRunner(retries=retries, pause_s=pause_s)
    now = now or datetime.now().replace(microsecond=0)
    t0, t1 = parse_window(since, until, now)
    name = f"reclaim-pilot-sge-{t1:%Y-%m-%d}"
    folder = fresh_folder(out, name)
    manifest = Manifest(kind="sge", since=stamp(t0), until=stamp(t1))
    source, tried = find_accounting(env, accounting)
    if source is None:
        manifest.record(NotRun("find_accounting", ("accounting-file",), 1,
                               "no Grid Engine accounting file: tried " + ", ".join(tried) + " (give --accounting)"),
                        None, "accounting")
    else:
        copied = copy_file(source, folder, "sge/accounting", retries=retries, pause_s=pause_s)
        extra = {"window": [epoch_utc(t0.timestamp()), epoch_utc(t1.timestamp())],
                 "note": "copied whole: one file holds the cluster's whole history"}
        first, last = end_span(source)
        if first is not None and last is not None:
            extra["records"] = [epoch_utc(first), epoch_utc(last)]
        record_copy(manifest, copied, "sge/accounting", **extra)
        if log is not None:
            log(f"accounting: exit {copied.exit_code}, {copied.bytes_copied:,} bytes, {copied.seconds:.1f} s")
    run_into(runner, manifest, folder, "qhost")
    listed = run_into(runner, manifest, folder, "qconf_queues")
    groups: list = []
    if listed.ok:
        for queue in queue_names(listed.output.decode("utf-8", "replace")):
            if not plain_name(queue, "queue"):
                _refuse(manifest, "qconf_queue", ("qconf", "-sq"), "queue", queue)
                continue
            ran = run_into(runner, manifest, folder, "qconf_queue", queue=queue)
            if ran.ok:
                groups += queue_hostgroups(ran.output.decode("utf-8", "replace"))
    for group in dict.fromkeys(groups):
        if not plain_name(group, "hostgroup"):
            _refuse(manifest, "qconf_hostgroup", ("qconf", "-shgrp_resolved"), "host group", group)
            continue
        run_into(runner, manifest, folder, "qconf_hostgroup", hostgroup=group)
    return write_tarball(folder, manifest, name), manifest


def queue_names(text: str) -> list[str]:
    """The lines of ``qconf -sql``'s output (one queue a line), blank ones left out; not yet checked."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _refuse(manifest, name: str, argv: tuple, what: str, value: str) -> None:
    manifest.record(NotRun(name, argv, 126, f"refused {what} name {value[:200]!r}: not a plain name (letters, digits, "
                                            "_ . -); not run"), None, "refused")
