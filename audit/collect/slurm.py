"""``reclaim collect slurm``: a week (or any window) of a Slurm cluster's accounting and shape, collected
with read-only commands (:mod:`.commands`) into a folder and a tarball with its manifest.

Accounting is asked for one day at a time (a month in one ``sacct`` call can take the database a long
while), as text with Reclaim's field list and, where the Slurm version has it, as ``--json`` for a check;
then the shape (``sinfo``, ``scontrol show node|partition|config``) and the fair-share tree (``sshare``).
A failed command is retried once, then recorded in the manifest, and the collection goes on.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from .commands import CommandRunner, output_of
from .manifest import Manifest, fresh_folder, write_output, write_tarball
from .times import days, parse_when, stamp

SHAPE_COMMANDS = ("sinfo", "scontrol_nodes", "scontrol_partitions", "scontrol_config", "sshare")


def collect_slurm(out, *, since: str = "7d", until: str | None = None, runner: CommandRunner | None = None,
                  json_too: bool = True, now: datetime | None = None, log=None) -> tuple[Path, Manifest]:
    """Collect into ``out/reclaim-pilot-slurm-<end day>/`` and its tarball; return ``(tarball, manifest)``."""
    runner = runner or CommandRunner()
    now = now or datetime.now().replace(microsecond=0)
    t0, t1 = parse_when(since, now), parse_when(until, now) if until else now
    name = f"reclaim-pilot-slurm-{t1:%Y-%m-%d}"
    folder = fresh_folder(out, name)
    manifest = Manifest(kind="slurm", since=stamp(t0), until=stamp(t1))
    version = runner.run("slurm_version")
    manifest.record(version, output_of("slurm_version") if version.ok else None, "version")
    if version.ok:
        write_output(folder, output_of("slurm_version"), version.output)
        manifest.versions["slurm"] = version.output.decode("utf-8", "replace").strip()
    use_json = json_too and _has_json(manifest.versions.get("slurm", ""))
    for a, b in days(t0, t1):
        day = f"{a:%Y-%m-%d}"
        for cmd in ("sacct_text", "sacct_json") if use_json else ("sacct_text",):
            ran = runner.run(cmd, since=stamp(a), until=stamp(b))
            path = output_of(cmd, day=day)
            if ran.ok:
                write_output(folder, path, ran.output)
            manifest.record(ran, path, "accounting" if cmd == "sacct_text" else "accounting-json",
                            window=[stamp(a), stamp(b)])
            if log is not None:
                log(f"{cmd} {day}: exit {ran.exit_code}, {len(ran.output):,} bytes, {ran.seconds:.1f} s")
    for cmd in SHAPE_COMMANDS:
        ran = runner.run(cmd)
        path = output_of(cmd)
        if ran.ok:
            write_output(folder, path, ran.output)
        manifest.record(ran, path, _role(cmd))
    return write_tarball(folder, manifest, name), manifest


def _role(cmd: str) -> str:
    from .commands import READ_ONLY

    return READ_ONLY[cmd].role


def _has_json(version: str) -> bool:
    """``sacct --json`` exists from Slurm 20.11 on."""
    parts = version.split()[-1].split(".") if version else []
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return False
    return (major, minor) >= (20, 11)
