"""The pilot collector on fake Slurm and kubectl commands: only the frozen read-only table runs, chunks are
retried then recorded, the manifest holds every command with its sha256, and the tarball ingests."""

import json
import os
import stat
import tarfile
from datetime import datetime
from pathlib import Path

import pytest

from audit.collect import READ_ONLY, CommandRunner, collect_slurm
from audit.collect.commands import argv_of
from audit.collect.times import days, parse_when
from audit.ingest import ingest

HEADER = ("JobID|JobIDRaw|Cluster|Partition|QOS|Account|User|Submit|Eligible|Start|End|Elapsed|Timelimit|State|"
          "ExitCode|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|TotalCPU|MaxRSS|AveRSS|NTasks|TRESUsageInTot|"
          "NodeList|JobName|AdminComment")


def job(jid, day, state="COMPLETED"):
    t = f"2026-11-{day:02d}T10:00:00"
    e = f"2026-11-{day:02d}T11:00:00"
    return (f"{jid}|{jid}|c1|cpu|normal|acct|alice|{t}|{t}|{t}|{e}|01:00:00|02:00:00|{state}|0:0|1|4|4|8G|"
            f"billing=4,cpu=4,mem=8G,node=1|billing=4,cpu=4,mem=8G,node=1|02:00:00|||||n1|job{jid}|")


def step(jid, day):
    t = f"2026-11-{day:02d}T10:00:00"
    e = f"2026-11-{day:02d}T11:00:00"
    return (f"{jid}.batch|{jid}.batch|c1||||||{t}|{t}|{e}|01:00:00||COMPLETED|0:0|1|4|4|||cpu=4,mem=8G,node=1|"
            f"02:00:00|3000000K|2000000K|1|cpu=02:00:00,mem=3000000K|n1|batch|")


SACCT = """#!/bin/sh
echo "$0 $*" >> "$LOG"
case "$*" in *--json*) echo '{"jobs": []}'; exit 0;; esac
day=$(echo "$*" | sed -n 's/.*--starttime 2026-11-\\([0-9]*\\)T.*/\\1/p')
if [ "$day" = "03" ] && [ ! -e "$STATE/failed-once" ]; then touch "$STATE/failed-once"; echo "slurmdbd busy" >&2; exit 1; fi
if [ "$day" = "04" ]; then echo "Connection refused" >&2; exit 1; fi
echo '%s'
case "$day" in
  02) echo '%s'; echo '%s';;
  03) echo '%s'; echo '%s'; echo '%s';;
esac
"""

NODES = ("NodeName=n1 Arch=x86_64 CoresPerSocket=4 CPUAlloc=0 CPUTot=8 RealMemory=16000 Gres=gpu:a100:2(S:0) "
         "State=IDLE Partitions=gpu,all\nNodeName=n2 CPUTot=8 RealMemory=16000 Gres=gpu:a100:2 Partitions=gpu,all\n"
         "NodeName=n3 CPUTot=32 RealMemory=64000 Gres=(null) Partitions=cpu,all\n")


def fake_bin(tmp_path: Path) -> dict:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    log = tmp_path / "commands.log"

    def script(name, body):
        p = bin_ / name
        p.write_text(body)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)

    script("sacct", SACCT % (HEADER, job(101, 2), step(101, 2), job(102, 3), step(102, 3), job(101, 2)))
    script("sinfo", '#!/bin/sh\necho "$0 $*" >> "$LOG"\ncase "$*" in *--version*) echo "slurm 22.05.8";; *) echo n1;; esac\n')
    script("scontrol", f'#!/bin/sh\necho "$0 $*" >> "$LOG"\ncase "$2" in node) printf "{NODES}";; partition) '
                       'echo "PartitionName=gpu Nodes=n[1-2]";; config) echo "ClusterName = c1";; esac\n')
    script("sshare", '#!/bin/sh\necho "$0 $*" >> "$LOG"\necho "Account|User|RawShares"\n')
    return {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "LOG": str(log), "STATE": str(state)}, log


def test_the_table_holds_only_read_only_commands():
    allowed = {"sacct", "sinfo", "scontrol", "sshare", "kubectl", "qstat", "pbsnodes", "lsid", "lshosts", "bhosts",
               "bqueues", "bmgroup", "qhost", "qconf"}
    for c in READ_ONLY.values():
        assert c.argv[0] in allowed, c
        if c.argv[0] == "scontrol":
            assert c.argv[1] == "show"
        if c.argv[0] == "kubectl":
            assert c.argv[1] in ("get", "version")
        if c.argv[0] == "qconf":  # Grid Engine's configuration tool: only its -s (show) options
            assert c.argv[1].startswith("-s"), c
        words = " ".join(c.argv).lower()
        for verb in ("update", "delete", "create", "cancel", "hold", "requeue", "suspend", "modify", "reconfigure",
                     "apply", "patch", "edit", "exec", "drain", "cordon"):
            assert verb not in words.split(), (verb, c)
    with pytest.raises(TypeError):
        READ_ONLY["x"] = READ_ONLY["sinfo"]  # frozen
    with pytest.raises(KeyError):
        argv_of("scancel")
    with pytest.raises(ValueError):
        argv_of("sacct_text", since="2026-11-01; rm -rf /", until="2026-11-02T00:00:00")


def test_days_cut_at_midnight():
    now = datetime(2026, 11, 5, 12, 30)
    assert parse_when("3d", now) == datetime(2026, 11, 2, 12, 30)
    cut = days(datetime(2026, 11, 2, 12, 30), now)
    assert [(a.day, a.hour, b.day, b.hour) for a, b in cut] == [(2, 12, 3, 0), (3, 0, 4, 0), (4, 0, 5, 0), (5, 0, 5, 12)]


def test_collect_retries_records_and_ingests(tmp_path):
    env, log = fake_bin(tmp_path)
    runner = CommandRunner(env=env, pause_s=0.0)
    tarball, manifest = collect_slurm(tmp_path / "out", since="2026-11-02", until="2026-11-05", runner=runner,
                                      now=datetime(2026, 11, 5))
    ran = [c for c in manifest.commands if c["name"] == "sacct_text"]
    assert [c["window"][0][:10] for c in ran] == ["2026-11-02", "2026-11-03", "2026-11-04"]
    assert [c["exit_code"] for c in ran] == [0, 0, 1] and [c["attempts"] for c in ran] == [1, 2, 2]
    assert "Connection refused" in ran[2]["stderr"]
    assert manifest.versions["slurm"] == "slurm 22.05.8"
    # every command the fakes saw is an entry of the table, exactly as the manifest records it
    seen = [line.split(" ", 1)[1].split() for line in log.read_text().splitlines()]
    recorded = [c["argv"][1:] for c in manifest.commands]
    assert all(argv in recorded for argv in seen)
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
        m = json.load(tar.extractfile(next(n for n in names if n.endswith("manifest.json"))))
    assert m["failed"] == 1 and "sacct/2026-11-02.txt" in m["files"] and "sacct/2026-11-04.txt" not in m["files"]
    store = tmp_path / "store"
    result = ingest([tarball], store)
    assert sorted(result.jobs["job_id"]) == ["101", "102"]  # 101 was in two chunks: kept once
    assert result.ledger["pilot"]["duplicate_jobs_dropped"] == 1
    assert (store / "cluster_shape.toml").exists()
    shape = (store / "cluster_shape.toml").read_text()
    assert "count = 2" in shape and "gpu_type = \"a100\"" in shape and "cpus = 32" in shape


def test_a_tarball_cannot_write_outside_its_folder(tmp_path):
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        m = tmp_path / "manifest.json"
        m.write_text(json.dumps({"files": {}, "commands": []}))
        tar.add(m, arcname="p/manifest.json")
        tar.add(m, arcname="../../escaped.json")
    from audit.textio import InputError

    with pytest.raises(InputError):
        ingest([evil], tmp_path / "store")
    assert not (tmp_path / "escaped.json").exists() and not (tmp_path.parent / "escaped.json").exists()


def test_an_anonymised_ingest_of_a_tarball_leaves_no_raw_export_among_the_outputs(tmp_path):
    from audit.anonymise import Pseudonyms

    env, _ = fake_bin(tmp_path)
    tarball, _ = collect_slurm(tmp_path / "out", since="2026-11-02", until="2026-11-04",
                               runner=CommandRunner(env=env, pause_s=0.0), now=datetime(2026, 11, 5))
    store = tmp_path / "store"
    result = ingest([tarball], store, pseudonyms=Pseudonyms("pilot-salt-1"))
    assert not (store / "pilot").exists() and (store / "cluster_shape.toml").exists()
    assert set(result.jobs["user"]) != {"alice"} and all(u.startswith("user-") for u in result.jobs["user"])
    hits = [p.name for p in store.rglob("*") if p.is_file() and p.suffix != ".parquet"
            and (b"alice" in p.read_bytes() or b"|acct|" in p.read_bytes())]
    assert hits == []
    plain = ingest([tarball], tmp_path / "plain")
    assert (tmp_path / "plain" / "pilot").is_dir() and set(plain.jobs["user"]) == {"alice"}
