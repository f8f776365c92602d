"""``reclaim collect pbs`` on a PATH that holds only shims: each shim logs the argument vector it was started
with, refuses (and records) anything that is not an entry of the frozen read-only table, and serves canned output
written from pbsnodes(8B) and qstat(1B); the accounting folder is a fake one of daily ``YYYYMMDD`` files.

:class:`Shim` is shared with the LSF and Grid Engine collectors' tests."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tarfile
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from audit.collect import READ_ONLY, CommandRunner, collect_pbs
from audit.collect.commands import copy_file
from audit.collect.pbs import find_accounting
from audit.readers.pilot import read_pilot
from tests.readers.test_node_outputs import PBSNODES_AV, PBSNODES_TORQUE, QSTAT_BF, QSTAT_QF, QSTAT_QF_TORQUE

SHIM = r'''#!{python}
import hashlib, json, os, sys
from pathlib import Path

state = Path(os.environ["SHIM_STATE"])
argv = [Path(sys.argv[0]).name, *sys.argv[1:]]
with open(state / "calls.jsonl", "a") as f:
    f.write(json.dumps(argv) + "\n")
table = json.loads((state / "table.json").read_text())
if not any(len(t) == len(argv) and all(a == b or (b[:1] == "{{" and b[-1:] == "}}") for a, b in zip(argv, t))
           for t in table):
    with open(state / "violations.jsonl", "a") as f:
        f.write(json.dumps(argv) + "\n")
    sys.stderr.write("not a read-only command of the table\n")
    sys.exit(97)
key = " ".join(argv)
canned = json.loads((state / "canned.json").read_text()).get(key)
if canned is None:
    sys.stderr.write("no canned output for " + key + "\n")
    sys.exit(1)
counter = state / ("n-" + hashlib.sha256(key.encode()).hexdigest()[:16])
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
if n < canned.get("fail", 0):
    sys.stderr.write(canned.get("stderr", "failed") + "\n")
    sys.exit(canned.get("code", 1))
sys.stdout.write(canned["out"])
'''

#: every command a shim stands in for: the table's, and commands that change a cluster (never to be run)
SHIMMED = ("qstat", "pbsnodes", "lsid", "lshosts", "bhosts", "bqueues", "bmgroup", "qhost", "qconf", "qmgr", "qdel",
           "qrun", "qhold", "qalter", "bkill", "badmin", "bctrld", "qmod", "sh", "bash", "rm", "cp", "cat")


class Shim:
    """A folder of shims that is the whole PATH of the commands the collector runs."""

    def __init__(self, tmp_path: Path, canned: dict):
        self.bin = tmp_path / "shim-bin"
        self.state = tmp_path / "shim-state"
        self.bin.mkdir()
        self.state.mkdir()
        (self.state / "table.json").write_text(json.dumps([list(c.argv) for c in READ_ONLY.values()]))
        (self.state / "canned.json").write_text(json.dumps(canned))
        for name in SHIMMED:
            p = self.bin / name
            p.write_text(SHIM.format(python=sys.executable))
            p.chmod(0o755)
        self.env = {"PATH": str(self.bin), "SHIM_STATE": str(self.state), "LANG": "C"}

    def runner(self) -> CommandRunner:
        return CommandRunner(env=self.env, pause_s=0.0)

    def calls(self) -> list:
        f = self.state / "calls.jsonl"
        return [json.loads(line) for line in f.read_text().splitlines()] if f.exists() else []

    def violations(self) -> list:
        f = self.state / "violations.jsonl"
        return [json.loads(line) for line in f.read_text().splitlines()] if f.exists() else []


def ran_as_recorded(shim: Shim, manifest) -> None:
    """Every start a shim saw is a command of the manifest, and every command of the manifest that ran was seen
    as often as its attempts."""
    assert shim.violations() == []
    seen = [tuple(c) for c in shim.calls()]
    expected = [tuple(c["argv"]) for c in manifest.commands if c["argv"][0] not in ("copy", "accounting-folder", "accounting-file")
                for _ in range(c["attempts"])]
    assert sorted(seen) == sorted(expected)


def epoch(*args) -> int:
    return int(datetime(*args).timestamp())


def e_record(jid: int, day: int, queue: str, host: str, ncpus: int) -> str:
    """A PBS Pro ``E`` (job ended) record as the PBS Professional Reference Guide's "Accounting Log" lays it out."""
    q, s, e = epoch(2026, 11, day, 9), epoch(2026, 11, day, 10), epoch(2026, 11, day, 11)
    return (f"11/{day:02d}/2026 11:00:00;E;{jid}.pbs01;user=alice group=users project=_pbs_project_default "
            f"jobname=sim{jid} queue={queue} ctime={q} qtime={q} etime={q} start={s} exec_host={host}/0*{ncpus} "
            f"exec_vnode=({host}:ncpus={ncpus}:mem=8388608kb) Resource_List.mem=8gb Resource_List.ncpus={ncpus} "
            f"Resource_List.nodect=1 Resource_List.place=pack Resource_List.select=1:ncpus={ncpus}:mem=8gb "
            f"Resource_List.walltime=02:00:00 session=4242 end={e} Exit_status=0 resources_used.cpupercent=390 "
            f"resources_used.cput=03:50:00 resources_used.mem=6000000kb resources_used.ncpus={ncpus} "
            f"resources_used.vmem=7000000kb resources_used.walltime=01:00:00 run_count=1")


def day_file(jid: int, day: int, queue: str = "workq", host: str = "cpu01", ncpus: int = 4) -> str:
    return (f"11/{day:02d}/2026 09:00:00;Q;{jid}.pbs01;queue={queue}\n"
            f"11/{day:02d}/2026 10:00:00;S;{jid}.pbs01;user=alice group=users jobname=sim{jid} queue={queue} "
            f"ctime={epoch(2026, 11, day, 9)} qtime={epoch(2026, 11, day, 9)} etime={epoch(2026, 11, day, 9)} "
            f"start={epoch(2026, 11, day, 10)} exec_host={host}/0*{ncpus}\n"
            + e_record(jid, day, queue, host, ncpus) + "\n")


@pytest.fixture
def accounting(tmp_path) -> Path:
    folder = tmp_path / "pbs_home" / "server_priv" / "accounting"
    folder.mkdir(parents=True)
    (folder / "20261101").write_text(day_file(100, 1))  # before the window: never copied
    (folder / "20261102").write_text(day_file(101, 2))
    (folder / "20261103").write_text(day_file(102, 3, "gpuq", "gpu01", 16))
    return folder  # no 20261104: nothing ended that day


def canned(fail: dict | None = None, torque: bool = False) -> dict:
    """The commands' outputs; ``fail`` maps a command line to the number of times it fails first."""
    out = {"qstat -Bf": {"out": QSTAT_BF}, "qstat -Qf": {"out": QSTAT_QF_TORQUE if torque else QSTAT_QF},
           "pbsnodes -av": {"out": PBSNODES_AV}, "pbsnodes -a": {"out": PBSNODES_TORQUE}}
    for key, times in (fail or {}).items():
        out[key]["fail"] = times
    return out


@pytest.fixture
def pbs_conf(tmp_path) -> dict:
    conf = tmp_path / "pbs.conf"
    conf.write_text(f"PBS_EXEC=/opt/pbs\nPBS_HOME={tmp_path / 'pbs_home'}\nPBS_START_SERVER=1\n")
    return {"PBS_CONF_FILE": str(conf)}


def test_the_pbs_entries_only_list(tmp_path):
    pbs = {k: c.argv for k, c in READ_ONLY.items() if c.argv[0] in ("qstat", "pbsnodes")}
    assert pbs == {"pbs_server": ("qstat", "-Bf"), "pbs_queues": ("qstat", "-Qf"), "pbsnodes": ("pbsnodes", "-av"),
                   "pbsnodes_torque": ("pbsnodes", "-a")}


def test_pbs_home_is_found_as_pbs_conf_documents_it(tmp_path, pbs_conf):
    (tmp_path / "pbs_home" / "server_priv" / "accounting").mkdir(parents=True)
    where = find_accounting(pbs_conf, torque_home=tmp_path / "no-torque")
    assert where.accounting == tmp_path / "pbs_home" / "server_priv" / "accounting"
    assert where.flavour == "pbspro" and where.how.startswith("PBS_HOME in")
    # the environment's PBS_HOME overrides the file's
    other = tmp_path / "other"
    (other / "server_priv" / "accounting").mkdir(parents=True)
    where = find_accounting({**pbs_conf, "PBS_HOME": str(other)}, torque_home=tmp_path / "no-torque")
    assert where.accounting == other / "server_priv" / "accounting" and where.how == "PBS_HOME in the environment"
    # Torque: no pbs.conf, and its home
    torque = tmp_path / "torque"
    (torque / "server_priv" / "accounting").mkdir(parents=True)
    where = find_accounting({"PBS_CONF_FILE": str(tmp_path / "none.conf")}, torque_home=torque)
    assert where.accounting == torque / "server_priv" / "accounting" and where.flavour == "torque"


def test_collect_pbs_copies_the_window_retries_and_reads_back(tmp_path, accounting, pbs_conf):
    shim = Shim(tmp_path, canned({"qstat -Qf": 1}))
    tarball, manifest = collect_pbs(tmp_path / "out", since="2026-11-02", until="2026-11-05", env=pbs_conf,
                                    runner=shim.runner(), pause_s=0.0, now=datetime(2026, 11, 5))
    assert tarball.name == "reclaim-pilot-pbs-2026-11-05.tar.gz"
    ran_as_recorded(shim, manifest)
    by_name = [(c["name"], c["argv"][1:] if c["name"] != "copy" else Path(c["argv"][1]).name) for c in manifest.commands]
    assert by_name == [("pbs_server", ["-Bf"]), ("copy", "20261102"), ("copy", "20261103"), ("copy", "20261104"),
                       ("pbs_queues", ["-Qf"]), ("pbsnodes", ["-av"])]
    queues = manifest.commands[4]
    assert queues["attempts"] == 2 and queues["exit_code"] == 0  # failed once, retried
    copies = [c for c in manifest.commands if c["name"] == "copy"]
    for c, day in zip(copies[:2], ("20261102", "20261103"), strict=True):
        data = (accounting / day).read_bytes()
        assert c["file"] == f"pbs/accounting/{day}" and c["source"] == str(accounting / day)
        assert c["sha256"] == hashlib.sha256(data).hexdigest() and c["bytes"] == c["source_bytes"] == len(data)
        assert "note" not in c  # whole days: the file is what the window needs
    assert copies[2]["exit_code"] == 0 and copies[2]["file"] is None and "no records" in copies[2]["note"]
    assert manifest.failed == [] and manifest.versions == {"pbs_flavour": "pbspro", "pbs": "2022.1.1",
                                                           "pbs_server": "pbs01"}
    with tarfile.open(tarball) as tar:
        names = sorted(n.split("/", 1)[1] for n in tar.getnames())
        m = json.load(tar.extractfile("reclaim-pilot-pbs-2026-11-05/manifest.json"))
    assert names == ["manifest.json", "pbs/accounting/20261102", "pbs/accounting/20261103", "pbs/pbsnodes.txt",
                     "pbs/qstat_queues.txt", "pbs/qstat_server.txt"]
    assert m["kind"] == "pbs" and m["failed"] == 0
    assert m["files"] == {"pbs/accounting/20261102": "accounting", "pbs/accounting/20261103": "accounting",
                          "pbs/pbsnodes.txt": "pbs-nodes", "pbs/qstat_queues.txt": "pbs-queues",
                          "pbs/qstat_server.txt": "pbs-server"}
    pilot = read_pilot(tarball, tmp_path / "read")
    assert sorted(p.name for p in pilot.files) == ["20261102", "20261103"]
    shape = pilot.shape.read_text()
    assert 'name = "pbs01"' in shape and 'partitions = ["gpuq"]' in shape and "count = 2" in shape


def test_a_partial_day_is_copied_whole_and_said_so(tmp_path, accounting, pbs_conf):
    shim = Shim(tmp_path, canned())
    _, manifest = collect_pbs(tmp_path / "out", since="2026-11-02T06:00:00", until="2026-11-03T12:00:00",
                              env=pbs_conf, runner=shim.runner(), pause_s=0.0)
    copies = [c for c in manifest.commands if c["name"] == "copy"]
    assert [c["window"] for c in copies] == [["2026-11-02T06:00:00", "2026-11-03T00:00:00"],
                                            ["2026-11-03T00:00:00", "2026-11-03T12:00:00"]]
    assert [c["note"] for c in copies] == [
        "copied whole: the day's file; the window needs 06:00:00-00:00:00 of it",
        "copied whole: the day's file; the window needs 00:00:00-12:00:00 of it"]


def test_torque_is_asked_pbsnodes_a(tmp_path):
    torque = tmp_path / "torque"
    (torque / "server_priv" / "accounting").mkdir(parents=True)
    (torque / "server_priv" / "accounting" / "20261102").write_text(day_file(7, 2))
    where = find_accounting({"PBS_CONF_FILE": str(tmp_path / "none.conf")}, torque_home=torque)
    shim = Shim(tmp_path, canned(torque=True))
    tarball, manifest = collect_pbs(tmp_path / "out", since="2026-11-02", until="2026-11-03", where=where,
                                    runner=shim.runner(), pause_s=0.0)
    ran_as_recorded(shim, manifest)
    assert ["pbsnodes", "-a"] in shim.calls() and ["pbsnodes", "-av"] not in shim.calls()
    pilot = read_pilot(tarball, tmp_path / "read")
    assert 'partitions = ["batch", "bigmem"]' in pilot.shape.read_text()


def test_a_command_failing_twice_is_recorded_and_the_collection_goes_on(tmp_path, accounting, pbs_conf):
    shim = Shim(tmp_path, canned({"pbsnodes -av": 5}))
    tarball, manifest = collect_pbs(tmp_path / "out", since="2026-11-02", until="2026-11-04", env=pbs_conf,
                                    runner=shim.runner(), pause_s=0.0)
    ran_as_recorded(shim, manifest)
    [failed] = manifest.failed
    assert failed["argv"] == ["pbsnodes", "-av"] and failed["attempts"] == 2 and failed["exit_code"] == 1
    assert failed["stderr"].strip() == "failed" and failed["file"] == "pbs/pbsnodes.txt"
    pilot = read_pilot(tarball, tmp_path / "read")
    assert len(pilot.files) == 2 and pilot.shape is None  # no node list, no shape; the jobs still read


def test_the_cli_exits_4_when_commands_failed(tmp_path, accounting, pbs_conf, monkeypatch):
    shim = Shim(tmp_path, canned({"pbsnodes -av": 5}))
    monkeypatch.setattr("audit.collect.commands.sleep", lambda s: None)  # this module's pause, not time.sleep
    from audit.cli import main

    env = {**shim.env, **pbs_conf, "PATH": shim.env["PATH"]}
    result = CliRunner().invoke(main, ["collect", "pbs", "--since", "2026-11-02", "--until", "2026-11-04", "--out",
                                       str(tmp_path / "out"), "--accounting-dir", str(accounting), "--quiet"], env=env)
    assert result.exit_code == 4, result.output
    assert "reclaim-pilot-pbs-2026-11-04.tar.gz" in result.output and "pbsnodes -av exited 1" in result.output
    (tmp_path / "ok").mkdir()
    ok = Shim(tmp_path / "ok", canned())
    result = CliRunner().invoke(main, ["collect", "pbs", "--since", "2026-11-02", "--until", "2026-11-04", "--out",
                                       str(tmp_path / "out2"), "--accounting-dir", str(accounting), "--quiet"],
                                env={**ok.env, **pbs_conf})
    assert result.exit_code == 0, result.output
    assert "(5 commands, 0 failed)" in result.output


def test_no_accounting_folder_is_a_recorded_failure(tmp_path, pbs_conf):
    shim = Shim(tmp_path, canned())
    _, manifest = collect_pbs(tmp_path / "out", since="2026-11-02", until="2026-11-03",
                              accounting_dir=tmp_path / "nowhere", env=pbs_conf, runner=shim.runner(), pause_s=0.0)
    [failed] = manifest.failed
    assert failed["name"] == "find_accounting" and str(tmp_path / "nowhere") in failed["stderr"]
    assert [c["name"] for c in manifest.commands] == ["pbs_server", "find_accounting", "pbs_queues", "pbsnodes"]


def test_copying_reads_only_regular_files_inside_the_collection(tmp_path):
    source = tmp_path / "acct"
    source.write_bytes(b"line one\nline two\npartial rec")
    folder = tmp_path / "coll"
    folder.mkdir()
    copied = copy_file(source, folder, "pbs/accounting/20261102", pause_s=0.0)
    assert copied.ok and (folder / "pbs/accounting/20261102").read_bytes() == b"line one\nline two\n"
    assert copied.bytes_copied == 18 and copied.source_bytes == 29 and copied.tail_left == 11
    assert copied.sha256 == hashlib.sha256(b"line one\nline two\n").hexdigest()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused = copy_file(fifo, folder, "pbs/accounting/20261103", pause_s=0.0)  # must not block on a FIFO
    assert refused.exit_code == 1 and "not a regular file" in refused.stderr and refused.attempts == 2
    assert not (folder / "pbs/accounting/20261103").exists()
    for bad in ("../escape", "/etc/passwd", "pbs/../../escape", "pbs/.hidden/x", "pbs/x\n"):
        with pytest.raises(ValueError):
            copy_file(source, folder, bad, pause_s=0.0)


def test_the_tarball_reads_back_as_jobs(tmp_path, accounting, pbs_conf):
    """End to end: the copied daily files are read by the PBS reader through ``read_inputs``."""
    from audit.ingest import read_inputs

    shim = Shim(tmp_path, canned())
    tarball, _ = collect_pbs(tmp_path / "out", since="2026-11-02", until="2026-11-05", env=pbs_conf,
                             runner=shim.runner(), pause_s=0.0)
    result = read_inputs([tarball], extract_to=tmp_path / "x")
    assert sorted(result.jobs["job_id"].astype(str).str.split(".").str[0]) == ["101", "102"]
    assert result.ledger["pilot"]["tarballs"][0]["kind"] == "pbs"
    assert result.cluster_shape is not None and Path(result.cluster_shape).name == "cluster_shape.toml"
