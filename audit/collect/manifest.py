"""The pilot's manifest and tarball: every command exactly as run, its exit code, seconds and the sha256
of its output; where the collection ran (host, time, versions); and which files ingestion reads."""

from __future__ import annotations

import json
import platform
import shutil
import socket
import tarfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

MANIFEST = "manifest.json"
FORMAT = "reclaim-pilot/1"


def reclaim_version() -> str:
    from .. import __version__

    return __version__


@dataclass
class Manifest:
    """What a collection ran and wrote; ``files`` maps each output (relative path) to its ``role``."""

    kind: str
    since: str
    until: str
    commands: list = field(default_factory=list)
    files: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    started: str = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0).isoformat())
    host: str = field(default_factory=socket.gethostname)

    def record(self, ran, path: str | None, role: str, **extra) -> None:
        entry = {"name": ran.name, "argv": list(ran.argv), "exit_code": ran.exit_code,
                 "seconds": round(ran.seconds, 3), "attempts": ran.attempts, "bytes": len(ran.output),
                 "sha256": ran.sha256, "file": path, **extra}
        if not ran.ok:
            entry["stderr"] = ran.stderr
        self.commands.append(entry)
        if ran.ok and path is not None:
            self.files[path] = role

    @property
    def failed(self) -> list:
        return [c for c in self.commands if c["exit_code"] != 0]

    def to_dict(self) -> dict:
        return {"format": FORMAT, "kind": self.kind, "since": self.since, "until": self.until,
                "started": self.started, "finished": datetime.now(UTC).replace(microsecond=0).isoformat(),
                "host": self.host, "platform": platform.platform(), "reclaim_version": reclaim_version(),
                "versions": self.versions, "commands": self.commands, "files": dict(sorted(self.files.items())),
                "failed": len(self.failed)}


def fresh_folder(out, name: str) -> Path:
    """``out/name``, emptied: a collection never mixes with an earlier one of the same name."""
    folder = Path(out) / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def write_output(folder: Path, relative: str, data: bytes) -> None:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_tarball(folder: Path, manifest: Manifest, name: str) -> Path:
    """``folder/manifest.json`` and the tarball ``folder/../NAME.tar.gz`` of the folder's files."""
    (folder / MANIFEST).write_text(json.dumps(manifest.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tar_path = folder.parent / f"{name}.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            tar.add(path, arcname=f"{name}/{path.relative_to(folder)}")
    return tar_path
