"""Reader of a pilot tarball (``reclaim collect``): its manifest, its files checked against their sha256,
the files ingestion reads (by role: the copied PBS, LSF and Grid Engine accounting files are ``accounting`` too,
their format told from their content), and the cluster shape the node outputs describe: ``scontrol show node``
(Slurm), ``pbsnodes`` with ``qstat -Qf`` (PBS), ``lshosts``/``bhosts``/``bqueues``/``bmgroup`` (LSF), ``qhost -F``
with ``qconf -sq`` and ``qconf -shgrp_resolved`` (Grid Engine).  The node outputs are read only when the manifest
lists them (their sha256 checked); a PBS, LSF or Grid Engine shape is written only when its hosts fall in some
queue (a shape without partitions cannot be used by accounting), and what it could not know is kept in
``Pilot.shape_notes``.

The tarball is extracted with the tar "data" filter (no absolute paths, no links out of the folder, no
devices), so a tarball cannot write outside the folder it is read into.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ..cluster_shape import toml_text
from ..textio import InputError
from .lsf_hosts import read_lsf_hosts
from .pbsnodes import read_pbsnodes
from .qhost import read_qhost
from .scontrol import read_scontrol_nodes

MANIFEST = "manifest.json"
#: roles whose files ingestion reads (sacct --json is kept as a check of the text, not read twice)
READ_ROLES = ("accounting", "telemetry", "pods", "k8s-nodes")


@dataclass
class Pilot:
    """An extracted pilot: its folder, manifest, the files to read, and the shape TOML written (or None)."""

    tarball: Path
    folder: Path
    manifest: dict
    files: list = field(default_factory=list)
    shape: Path | None = None
    shape_notes: list = field(default_factory=list)


def is_pilot_tarball(path) -> bool:
    p = Path(path)
    if not p.is_file() or not p.name.endswith((".tar.gz", ".tgz", ".tar")):
        return False
    try:
        with tarfile.open(p) as tar:
            return any(Path(m.name).name == MANIFEST for m in tar.getmembers())
    except (tarfile.TarError, OSError):
        return False


def read_pilot(tarball, into) -> Pilot:
    """Extract ``tarball`` into ``into`` and check it; errors name the tarball and the file."""
    tarball = Path(tarball)
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(tarball) as tar:
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise InputError(f"{tarball}: not a readable pilot tarball: {exc}") from None
    manifests = sorted(into.rglob(MANIFEST))
    if len(manifests) != 1:
        raise InputError(f"{tarball}: expected one {MANIFEST}, found {len(manifests)}")
    folder = manifests[0].parent
    try:
        manifest = json.loads(manifests[0].read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{tarball}: {MANIFEST} is not JSON: {exc}") from None
    sums = {c["file"]: c["sha256"] for c in manifest.get("commands", []) if c.get("exit_code") == 0 and c.get("file")}
    files = []
    for rel, role in sorted(manifest.get("files", {}).items()):
        path = folder / rel
        if not path.is_file():
            raise InputError(f"{tarball}: {rel} is listed in the manifest but missing")
        if rel in sums and hashlib.sha256(path.read_bytes()).hexdigest() != sums[rel]:
            raise InputError(f"{tarball}: {rel} does not match its sha256 in the manifest")
        if role in READ_ROLES and path.stat().st_size > 0:
            files.append(path)
    pilot = Pilot(tarball=tarball, folder=folder, manifest=manifest, files=files)
    nodes = folder / "scontrol_nodes.txt"
    if nodes.is_file():
        config = folder / "scontrol_config.txt"
        shape = read_scontrol_nodes(nodes, config=config if config.is_file() else None).shape
        if shape["node_groups"]:
            pilot.shape = folder / "cluster_shape.toml"
            pilot.shape.write_text(toml_text(shape), encoding="utf-8")
    if pilot.shape is None:
        read = _scheduler_shape(folder, set(manifest.get("files", {})))
        if read is not None:
            pilot.shape_notes = list(read.notes)
            if read.shape["node_groups"] and read.shape["partitions"]:
                pilot.shape = folder / "cluster_shape.toml"
                pilot.shape.write_text(toml_text(read.shape), encoding="utf-8")
            elif read.shape["node_groups"]:
                pilot.shape_notes.append("no host is in a queue: no cluster shape written")
    return pilot


def _scheduler_shape(folder: Path, listed: set):
    """The shape read from a PBS, LSF or Grid Engine collection's node outputs (those the manifest lists)."""
    def got(rel: str) -> Path | None:
        return folder / rel if rel in listed and (folder / rel).is_file() else None

    if got("pbs/pbsnodes.txt"):
        return read_pbsnodes(got("pbs/pbsnodes.txt"), server=got("pbs/qstat_server.txt"),
                             queues=got("pbs/qstat_queues.txt"))
    if got("lsf/lshosts.txt"):
        return read_lsf_hosts(got("lsf/lshosts.txt"), bhosts=got("lsf/bhosts.txt"), queues=got("lsf/bqueues.txt"),
                              hostgroups=got("lsf/bmgroup.txt"), lsid=got("lsf/lsid.txt"))
    if got("sge/qhost.txt"):
        queues = sorted(folder / rel for rel in listed if rel.startswith("sge/queues/") and got(rel))
        groups = {Path(rel).stem: folder / rel for rel in sorted(listed)
                  if rel.startswith("sge/hostgroups/") and got(rel)}
        return read_qhost(got("sge/qhost.txt"), queues=queues, hostgroups=groups)
    return None
