"""``reclaim collect lsf`` on a PATH of shims (:class:`tests.collect.test_collect_pbs.Shim`) serving ``lsid``,
``lshosts -w``, ``bhosts -l``, ``bqueues -l`` and ``bmgroup -w -r`` as their manuals show them, and a fake
``LSB_SHAREDIR/<cluster>/logdir`` of ``lsb.acct`` and archived ``lsb.acct.N`` whose records (lsb.acct(5): type,
version, the time it was logged, …) fall in, across or out of the window."""

from __future__ import annotations

import hashlib
import tarfile
from datetime import datetime
from pathlib import Path

import pytest

from audit.collect import READ_ONLY, collect_lsf
from audit.collect.lsf import find_logdir, record_span
from audit.readers.pilot import read_pilot
from tests.collect.test_collect_pbs import Shim, ran_as_recorded
from tests.readers.test_node_outputs import BHOSTS_L, BMGROUP, BQUEUES_L, LSHOSTS_W, LSID


def epoch(*args) -> int:
    return int(datetime(*args).timestamp())


def finish(jid: int, end: int, host: str = "cn001", queue: str = "normal", user: str = "alice") -> str:
    """A ``JOB_FINISH`` record of LSF 10.1 (lsb.acct(5)'s fields in order): a one-slot job that ran an hour."""
    submit, start = end - 7200, end - 3600
    return (f'"JOB_FINISH" "10.1" {end} {jid} 1001 33554438 1 {submit} 0 0 {start} "{user}" "{queue}" "" "" "" '
            f'"login01" "/home/{user}" "" "" "" "{submit}.{jid}" 1 "{host}" 1 "{host}" 64 60.0 "sim{jid}" "./sim.sh" '
            "3500.000000 100.000000 6000000 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 "
            f'"" "default" 0 1 "" "" 0 6000 0 "" "" "" "" 0 "" 0 "" -1 "/{user}" "" "" "" -1 "" "" 5136 "" {start} '
            '"" "" 2 1032 "0" 1033 "0" 0 0 0 2048 "select[type == any] order[r15s:pg] " "" -1 "" -1 0 "" 0 0 "" '
            f'3600 "" 0 "" 0.000000 0.00 0.00 0.00 0.00 1 "{host}" -1 0 0 0')


@pytest.fixture
def share(tmp_path) -> tuple[dict, Path]:
    """``lsf.conf`` naming ``LSB_SHAREDIR``, and the logdir of cluster hpc1 under it."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "lsf.conf").write_text(f"LSF_TOP=/opt/lsf\nLSB_SHAREDIR={tmp_path / 'work'}   # shared\n")
    logdir = tmp_path / "work" / "hpc1" / "logdir"
    logdir.mkdir(parents=True)
    (logdir / "lsb.acct").write_text(finish(503, epoch(2026, 11, 3, 12)) + "\n" + finish(504, epoch(2026, 11, 4, 9))
                                     + "\n")
    (logdir / "lsb.acct.1").write_text(finish(501, epoch(2026, 10, 31, 12)) + "\n"
                                       + finish(502, epoch(2026, 11, 2, 12), host="gn001", queue="gpu") + "\n")
    (logdir / "lsb.acct.2").write_text(finish(401, epoch(2026, 10, 20, 12)) + "\n"
                                       + finish(402, epoch(2026, 10, 25, 12)) + "\n")
    (logdir / "lsb.events").write_text("#  1234\n")  # not accounting: never copied
    return {"LSF_ENVDIR": str(conf)}, logdir


def canned(fail: dict | None = None) -> dict:
    out = {"lsid": {"out": LSID}, "lshosts -w": {"out": LSHOSTS_W}, "bhosts -l": {"out": BHOSTS_L},
           "bqueues -l": {"out": BQUEUES_L}, "bmgroup -w -r": {"out": BMGROUP}}
    for key, times in (fail or {}).items():
        out[key]["fail"] = times
    return out


def test_the_lsf_entries_only_display():
    lsf = {k: c.argv for k, c in READ_ONLY.items() if c.argv[0] in ("lsid", "lshosts", "bhosts", "bqueues", "bmgroup")}
    assert lsf == {"lsid": ("lsid",), "lshosts": ("lshosts", "-w"), "bhosts": ("bhosts", "-l"),
                   "bqueues": ("bqueues", "-l"), "bmgroup": ("bmgroup", "-w", "-r")}


def test_the_logdir_is_lsb_sharedir_cluster_logdir(share):
    env, logdir = share
    where = find_logdir(LSID, env)
    assert where.path == logdir and where.how.startswith("LSB_SHAREDIR in")
    # a cluster name that is no plain name is never made into a path
    evil = LSID.replace("hpc1", "../../etc")
    assert find_logdir(evil, env).path is None
    assert find_logdir("", env).path is None and find_logdir(LSID, {"LSF_ENVDIR": "/nonexistent"}).path is None


def test_record_span_reads_the_first_and_last_records_times(share):
    _, logdir = share
    assert record_span(logdir / "lsb.acct.1") == (epoch(2026, 10, 31, 12), epoch(2026, 11, 2, 12))
    assert record_span(logdir / "lsb.events") == (None, None)


def test_collect_lsf_copies_the_files_the_window_needs(tmp_path, share):
    env, logdir = share
    shim = Shim(tmp_path, canned({"bhosts -l": 1}))
    tarball, manifest = collect_lsf(tmp_path / "out", since="2026-11-02", until="2026-11-05", env=env,
                                    runner=shim.runner(), pause_s=0.0)
    ran_as_recorded(shim, manifest)
    assert [(c["name"], Path(c["argv"][1]).name if c["name"] == "copy" else c["argv"]) for c in manifest.commands] == [
        ("lsid", ["lsid"]), ("copy", "lsb.acct"), ("copy", "lsb.acct.1"), ("copy", "lsb.acct.2"),
        ("lshosts", ["lshosts", "-w"]), ("bhosts", ["bhosts", "-l"]), ("bqueues", ["bqueues", "-l"]),
        ("bmgroup", ["bmgroup", "-w", "-r"])]
    acct, acct1, acct2 = manifest.commands[1:4]
    assert acct["file"] == "lsf/logdir/lsb.acct" and "note" not in acct
    assert acct["sha256"] == hashlib.sha256((logdir / "lsb.acct").read_bytes()).hexdigest()
    assert acct1["file"] == "lsf/logdir/lsb.acct.1"
    assert acct1["note"] == "copied whole: it holds records outside the window too"  # 31 October is before it
    assert acct2["file"] is None and acct2["exit_code"] == 0
    assert acct2["note"] == "not copied: its records are out of the window"
    assert manifest.commands[5]["attempts"] == 2 and manifest.failed == []
    assert manifest.versions == {"lsf": "IBM Spectrum LSF Standard 10.1.0.13, Jan 10 2022", "lsf_cluster": "hpc1"}
    with tarfile.open(tarball) as tar:
        names = sorted(n.split("/", 1)[1] for n in tar.getnames())
    assert names == ["lsf/bhosts.txt", "lsf/bmgroup.txt", "lsf/bqueues.txt", "lsf/logdir/lsb.acct",
                     "lsf/logdir/lsb.acct.1", "lsf/lshosts.txt", "lsf/lsid.txt", "manifest.json"]
    pilot = read_pilot(tarball, tmp_path / "read")
    assert sorted(p.name for p in pilot.files) == ["lsb.acct", "lsb.acct.1"]
    shape = pilot.shape.read_text()
    assert 'name = "hpc1"' in shape and 'partitions = ["gpu", "night", "prio"]' in shape and "gpus = 4" in shape


def test_no_logdir_and_a_failing_command_are_recorded(tmp_path):
    shim = Shim(tmp_path, canned({"lsid": 9, "bqueues -l": 9}))
    tarball, manifest = collect_lsf(tmp_path / "out", since="2026-11-02", until="2026-11-05",
                                    env={"LSF_ENVDIR": str(tmp_path / "none")}, runner=shim.runner(), pause_s=0.0)
    ran_as_recorded(shim, manifest)
    assert [c["name"] for c in manifest.failed] == ["lsid", "find_accounting", "bqueues"]
    assert "give --logdir" in manifest.failed[1]["stderr"]
    pilot = read_pilot(tarball, tmp_path / "read")
    assert pilot.files == [] and pilot.shape is None  # no queues: no partitions, no shape
    assert "no bqueues -l output: the hosts are in no partition" in pilot.shape_notes


def test_an_unreadable_span_is_copied_whole_and_said_so(tmp_path):
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / "lsb.acct").write_text("not a record\n")
    shim = Shim(tmp_path, canned())
    _, manifest = collect_lsf(tmp_path / "out", since="2026-11-02", until="2026-11-05", logdir=logdir,
                              runner=shim.runner(), pause_s=0.0)
    [copy] = [c for c in manifest.commands if c["name"] == "copy"]
    assert copy["file"] == "lsf/logdir/lsb.acct" and copy["note"].startswith("copied whole: the times")


def test_the_tarball_reads_back_as_jobs(tmp_path, share):
    """End to end: the copied ``lsb.acct`` files are read by the LSF reader through ``read_inputs``."""
    from audit.ingest import read_inputs

    env, _ = share
    shim = Shim(tmp_path, canned())
    tarball, _ = collect_lsf(tmp_path / "out", since="2026-11-02", until="2026-11-05", env=env,
                             runner=shim.runner(), pause_s=0.0)
    result = read_inputs([tarball], extract_to=tmp_path / "x")
    # lsb.acct.1 is copied whole for 502; 501 ended before the window, and is left out and counted
    assert sorted(result.jobs["job_id"].astype(str)) == ["502", "503", "504"]
    assert result.ledger["pilot"]["outside_window_jobs"] == 1
    assert result.cluster_shape is not None
