"""``reclaim collect sge`` on a PATH of shims (:class:`tests.collect.test_collect_pbs.Shim`) serving ``qhost -F``,
``qconf -sql``, ``qconf -sq <queue>`` and ``qconf -shgrp_resolved <@group>`` as qhost(1) and qconf(1) show them,
and a fake ``$SGE_ROOT/$SGE_CELL/common/accounting`` (accounting(5): 45 colon-separated fields a job).  Queue and
host group names come from the commands' output: one with shell characters is refused, never run."""

from __future__ import annotations

import hashlib
import tarfile
from datetime import datetime
from pathlib import Path

import pytest

from audit.collect import READ_ONLY, collect_sge
from audit.collect.commands import argv_of, output_of, plain_name
from audit.collect.sge import end_span, find_accounting
from audit.readers.pilot import read_pilot
from tests.collect.test_collect_pbs import Shim, ran_as_recorded
from tests.readers.test_node_outputs import ALLHOSTS, GPUHOSTS, QCONF_ALL_Q, QCONF_GPU_Q, QHOST_F


def epoch(*args) -> int:
    return int(datetime(*args).timestamp())


def record(jid: int, end: int, queue: str = "all.q", host: str = "node01", slots: int = 4) -> str:
    """One accounting(5) line: qname … ar_submission_time, 45 fields; a job that ran an hour on ``slots``."""
    submit, start = end - 7200, end - 3600
    fields = [queue, host, "users", "alice", f"sim{jid}", str(jid), "sge", "0", str(submit), str(start), str(end),
              "0", "0", "3600", "3500.000000", "100.000000", "6000000.000000", "0", "0", "0", "0", "1000", "0", "0",
              "0", "0", "0", "0", "0", "100", "10", "NONE", "defaultdepartment", "smp", str(slots), "0",
              "3600.000000", "1000.000000", "0.100000", f"-U users -q {queue} -l h_rt=7200,h_vmem=2G -pe smp {slots}",
              "0.000000", "NONE", "8000000000.000000", "0", "0"]
    assert len(fields) == 45
    return ":".join(fields)


HEADER = "# Version: 8.1.9\n#\n# DO NOT MODIFY THIS FILE MANUALLY!\n#\n"


@pytest.fixture
def sge_root(tmp_path) -> tuple[dict, Path]:
    common = tmp_path / "sge" / "cell1" / "common"
    common.mkdir(parents=True)
    acct = common / "accounting"
    acct.write_text(HEADER + "\n".join([record(301, epoch(2026, 10, 30, 12)), record(302, epoch(2026, 11, 2, 12)),
                                        record(303, epoch(2026, 11, 3, 12), "gpu.q", "gpu01", 8)]) + "\n")
    return {"SGE_ROOT": str(tmp_path / "sge"), "SGE_CELL": "cell1"}, acct


def canned(queues: str = "all.q\ngpu.q\n", fail: dict | None = None) -> dict:
    out = {"qhost -F": {"out": QHOST_F}, "qconf -sql": {"out": queues}, "qconf -sq all.q": {"out": QCONF_ALL_Q},
           "qconf -sq gpu.q": {"out": QCONF_GPU_Q}, "qconf -shgrp_resolved @allhosts": {"out": ALLHOSTS},
           "qconf -shgrp_resolved @gpuhosts": {"out": GPUHOSTS}}
    for key, times in (fail or {}).items():
        out[key]["fail"] = times
    return out


def test_the_sge_entries_only_show():
    sge = {k: c.argv for k, c in READ_ONLY.items() if c.argv[0] in ("qhost", "qconf")}
    assert sge == {"qhost": ("qhost", "-F"), "qconf_queues": ("qconf", "-sql"), "qconf_queue": ("qconf", "-sq", "{queue}"),
                   "qconf_hostgroup": ("qconf", "-shgrp_resolved", "{hostgroup}")}
    assert all(c.argv[1].startswith("-s") for c in READ_ONLY.values() if c.argv[0] == "qconf")


@pytest.mark.parametrize("name", ["all.q; rm -rf /", "$(reboot)", "-dq", "../x", "a b", "q`id`", "", ".hidden",
                                  "all.q\n", "x|y", "@grp"])
def test_a_queue_name_that_is_not_plain_fills_no_placeholder(name):
    assert not plain_name(name, "queue")
    with pytest.raises(ValueError):
        argv_of("qconf_queue", queue=name)
    with pytest.raises(ValueError):
        output_of("qconf_queue", queue=name)


def test_plain_names_fill_their_placeholder_as_one_argument():
    assert argv_of("qconf_queue", queue="gpu.q") == ("qconf", "-sq", "gpu.q")
    assert output_of("qconf_queue", queue="gpu.q") == "sge/queues/gpu.q.txt"
    assert argv_of("qconf_hostgroup", hostgroup="@allhosts") == ("qconf", "-shgrp_resolved", "@allhosts")
    assert not plain_name("allhosts", "hostgroup") and not plain_name("@all hosts", "hostgroup")
    with pytest.raises(ValueError):
        argv_of("qconf_queue")  # the placeholder must be filled


def test_the_accounting_file_is_found_under_sge_root_and_cell(sge_root):
    env, acct = sge_root
    assert find_accounting(env) == (acct, [str(acct)])
    path, tried = find_accounting({"SGE_ROOT": "/nonexistent"})
    assert path is None or path.parent.parent.parent == Path("/var/lib/gridengine")
    assert tried[0] == "/nonexistent/default/common/accounting"


def test_end_span_reads_the_first_and_last_end_times(sge_root):
    _, acct = sge_root
    assert end_span(acct) == (epoch(2026, 10, 30, 12), epoch(2026, 11, 3, 12))


def test_collect_sge_copies_the_file_and_follows_the_queues(tmp_path, sge_root):
    env, acct = sge_root
    shim = Shim(tmp_path, canned(fail={"qconf -sq gpu.q": 1}))
    tarball, manifest = collect_sge(tmp_path / "out", since="2026-11-02", until="2026-11-05", env=env,
                                    runner=shim.runner(), pause_s=0.0)
    ran_as_recorded(shim, manifest)
    assert [c["argv"] if c["name"] != "copy" else ["copy"] for c in manifest.commands] == [
        ["copy"], ["qhost", "-F"], ["qconf", "-sql"], ["qconf", "-sq", "all.q"], ["qconf", "-sq", "gpu.q"],
        ["qconf", "-shgrp_resolved", "@allhosts"], ["qconf", "-shgrp_resolved", "@gpuhosts"]]
    copy = manifest.commands[0]
    assert copy["source"] == str(acct) and copy["file"] == "sge/accounting"
    assert copy["sha256"] == hashlib.sha256(acct.read_bytes()).hexdigest()
    assert copy["note"] == "copied whole: one file holds the cluster's whole history"
    assert copy["records"][0].startswith("2026-10-30")
    assert manifest.commands[4]["attempts"] == 2 and manifest.failed == []
    with tarfile.open(tarball) as tar:
        names = sorted(n.split("/", 1)[1] for n in tar.getnames())
    assert names == ["manifest.json", "sge/accounting", "sge/hostgroups/@allhosts.txt", "sge/hostgroups/@gpuhosts.txt",
                     "sge/qconf_sql.txt", "sge/qhost.txt", "sge/queues/all.q.txt", "sge/queues/gpu.q.txt"]
    pilot = read_pilot(tarball, tmp_path / "read")
    assert [p.name for p in pilot.files] == ["accounting"]
    shape = pilot.shape.read_text()
    assert 'partitions = ["all.q", "gpu.q"]' in shape and "count = 2" in shape
    assert len(pilot.shape_notes) == 1 and "gpu01" in pilot.shape_notes[0]


def test_a_queue_name_with_shell_characters_is_refused_and_recorded(tmp_path, sge_root):
    env, _ = sge_root
    shim = Shim(tmp_path, canned(queues="all.q\nevil; touch /tmp/pwned\n$(id)\n-dq\n"))
    _, manifest = collect_sge(tmp_path / "out", since="2026-11-02", until="2026-11-05", env=env,
                              runner=shim.runner(), pause_s=0.0)
    ran_as_recorded(shim, manifest)
    refused = [c for c in manifest.commands if c["exit_code"] == 126]
    assert [c["argv"] for c in refused] == [["qconf", "-sq"]] * 3 and all(c["attempts"] == 0 for c in refused)
    assert [c["stderr"].split(":")[0] for c in refused] == [
        "refused queue name 'evil; touch /tmp/pwned'", "refused queue name '$(id)'", "refused queue name '-dq'"]
    assert [c for c in shim.calls() if c[:2] == ["qconf", "-sq"]] == [["qconf", "-sq", "all.q"]]
    assert len(manifest.failed) == 3  # recorded as failures: the collection says so (exit 4) and goes on


def test_no_accounting_file_and_a_command_failing_twice_are_recorded(tmp_path):
    shim = Shim(tmp_path, canned(fail={"qhost -F": 9}))
    tarball, manifest = collect_sge(tmp_path / "out", since="2026-11-02", until="2026-11-05",
                                    accounting=tmp_path / "none", runner=shim.runner(), pause_s=0.0)
    ran_as_recorded(shim, manifest)
    copy, qhost = manifest.failed
    assert copy["name"] == "copy" and copy["attempts"] == 2 and "cannot read" in copy["stderr"]
    assert qhost["argv"] == ["qhost", "-F"] and qhost["attempts"] == 2 and qhost["exit_code"] == 1
    assert [c["name"] for c in manifest.commands][2:] == ["qconf_queues", "qconf_queue", "qconf_queue",
                                                          "qconf_hostgroup", "qconf_hostgroup"]  # it went on
    pilot = read_pilot(tarball, tmp_path / "read")
    assert pilot.files == [] and pilot.shape is None


def test_the_tarball_reads_back_as_jobs(tmp_path, sge_root):
    """End to end: the copied accounting file is read by the Grid Engine reader through ``read_inputs``."""
    from audit.ingest import read_inputs

    env, _ = sge_root
    shim = Shim(tmp_path, canned())
    tarball, _ = collect_sge(tmp_path / "out", since="2026-11-02", until="2026-11-05", env=env,
                             runner=shim.runner(), pause_s=0.0)
    result = read_inputs([tarball], extract_to=tmp_path / "x")
    # the file is copied whole; job 301 ended before the window, and is left out and counted
    assert sorted(result.jobs["job_id"].astype(str)) == ["302", "303"]
    assert result.ledger["pilot"]["outside_window_jobs"] == 1
    assert result.cluster_shape is not None
