"""The qsub grammar on ``#PBS`` scripts written by hand: each must parse to the request worked out from the qsub(1B)
and pbs_resources(7B) pages of OpenPBS and Torque, or fail naming the line PBS would refuse; the lines to paste are
worked out by hand too; and one script goes through ``reclaim predict`` end to end."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from predictors.advisor.advise import read_job
from predictors.advisor.job_request import ScriptError
from predictors.advisor.paste import pbs_changes
from predictors.advisor.qsub import chunks_text, parse_duration, parse_qsub, parse_size
from predictors.advisor.sched_units import pbs_size, pbs_time, size_bytes
from predictors.cli import predict

from .histories import group, history

G, M, K = 2**30, 2**20, 2**10
H = "#!/bin/bash\n"

# (name, script body after the shebang, command-line options, fields the request must have)
GOOD = [
    # walltime: seconds, or [[hours:]minutes:]seconds (pbs_resources_linux(7B): "time")
    ("walltime hours:minutes:seconds", "#PBS -l walltime=01:30:00\n", (), {"time_limit_s": 5400}),
    ("walltime in seconds", "#PBS -l walltime=3600\n", (), {"time_limit_s": 3600}),
    ("walltime minutes:seconds (Torque's example)", "#PBS -l walltime=10:30,mem=320kb\n", (),
     {"time_limit_s": 630, "mem_bytes": 320 * K}),
    ("walltime hours run past a day", "#PBS -l walltime=48:00:00\n", (), {"time_limit_s": 172800}),
    ("walltime half a second rounds up", "#PBS -l walltime=59.5\n", (), {"time_limit_s": 60}),
    ("walltime under half a second rounds down", "#PBS -l walltime=59.4\n", (), {"time_limit_s": 59}),
    # sizes: integer, optional k m g t, optional b or w, bytes by default, any case
    ("mem in bytes by default", "#PBS -l mem=1048576\n", (), {"mem_bytes": M, "mem_form": "mem"}),
    ("mem gb", "#PBS -l mem=4gb\n", (), {"mem_bytes": 4 * G}),
    ("mem GB upper case", "#PBS -l mem=4GB\n", (), {"mem_bytes": 4 * G}),
    ("mem g without b", "#PBS -l mem=4g\n", (), {"mem_bytes": 4 * G}),
    ("mem in words of 8 bytes", "#PBS -l mem=1mw\n", (), {"mem_bytes": 8 * M}),
    # select: [N:]chunk[+[N:]chunk]; memory and CPUs summed over chunks (qsub(1B), pbs_resources(7B) examples)
    ("one chunk (qsub's example)", "#PBS -l select=1:ncpus=3:mem=1gb\n", (),
     {"nodes": 1, "cpus": 3, "ntasks": 1, "cpus_per_task": 3, "mem_bytes": G, "mem_form": "select"}),
    ("two kinds of chunk (pbs_resources' example)", "#PBS -l select=2:ncpus=1:mem=10GB+3:ncpus=2:mem=8GB\n", (),
     {"nodes": 5, "cpus": 8, "mem_bytes": 44 * G}),
    ("mpiprocs are the tasks", "#PBS -l select=2:ncpus=8:mpiprocs=8\n", (),
     {"nodes": 2, "cpus": 16, "ntasks": 16, "cpus_per_task": 1}),
    ("ngpus in chunks", "#PBS -l select=2:ncpus=4:ngpus=2\n", (), {"gpus": 4, "cpus": 8}),
    ("a chunk without N is one chunk", "#PBS -l select=ncpus=4:mem=2gb\n", (), {"nodes": 1, "cpus": 4,
                                                                               "mem_bytes": 2 * G}),
    ("chunk mem overrides a job-wide mem", "#PBS -l select=2:ncpus=1:mem=4gb\n#PBS -l mem=100gb\n", (),
     {"mem_bytes": 8 * G, "mem_form": "select"}),
    # nodes (Torque, and PBS's old syntax converted to chunks of ncpus = cpp × ppn)
    ("nodes with ppn (pbs_resources' conversion example)", "#PBS -l nodes=4:ppn=2\n", (),
     {"nodes": 4, "cpus": 8, "ntasks": 8, "cpus_per_task": 1}),
    ("nodes with properties and ncpus", "#PBS -l nodes=3:green:ncpus=2:ppn=2+2:red\n", (),
     {"nodes": 5, "cpus": 14, "ntasks": 8}),
    ("Torque gpus per node", "#PBS -l nodes=2:ppn=8:gpus=2\n", (), {"gpus": 4, "cpus": 16, "nodes": 2}),
    ("a named host counts one node", "#PBS -l nodes=node07:ppn=4\n", (), {"nodes": 1, "cpus": 4}),
    ("nodes #excl asks whole nodes", "#PBS -l nodes=2:ppn=4#excl\n", (), {"exclusive": True, "cpus": 8}),
    ("ncpus shared over nodes without ncpus", "#PBS -l nodes=2,ncpus=8\n", (), {"cpus": 8, "nodes": 2}),
    ("job-wide ncpus and mem", "#PBS -l ncpus=4,mem=16gb\n", (),
     {"cpus": 4, "nodes": 1, "ntasks": 1, "mem_bytes": 16 * G}),
    ("job-wide ngpus", "#PBS -l ngpus=2\n", (), {"gpus": 2}),
    ("Torque procs", "#PBS -l procs=16\n", (), {"cpus": 16, "ntasks": 16, "nodes": 1}),
    # per-process memory
    ("pmem × processes", "#PBS -l nodes=2:ppn=4,pmem=1gb\n", (), {"mem_bytes": 8 * G, "mem_form": "pmem"}),
    ("pmem with one MPI process", "#PBS -l select=1:ncpus=8\n#PBS -l pmem=2gb\n", (),
     {"mem_bytes": 2 * G, "mem_form": "pmem"}),
    ("vmem when no mem is asked", "#PBS -l vmem=6gb\n", (), {"mem_bytes": 6 * G, "mem_form": "vmem"}),
    ("no memory asked", "#PBS -l ncpus=2\n", (), {"mem_bytes": None, "mem_form": None}),
    # placement
    ("place excl", "#PBS -l select=2:ncpus=4\n#PBS -l place=scatter:excl\n", (), {"exclusive": True, "nodes": 2}),
    ("place exclhost", "#PBS -l select=1:ncpus=4 -l place=exclhost\n", (), {"exclusive": True}),
    ("place pack is one host", "#PBS -l select=2:ncpus=4 -l place=pack\n", (), {"nodes": 1, "exclusive": False}),
    ("Torque's -n", "#PBS -n\n", (), {"exclusive": True}),
    # name, queue, account
    ("name, queue at a server, account", "#PBS -N Weather1\n#PBS -q workq@server1\n#PBS -A chem\n", (),
     {"job_name": "Weather1", "partition": "workq", "account": "chem"}),
    ("a server alone names no queue", "#PBS -q @server1\n", (), {"partition": None}),
    # arrays
    ("-J with a step (qsub's example: 2, 4, 6)", "#PBS -J 2-7:2\n", (), {"array_tasks": 3, "array_spec": "2-7:2"}),
    ("-J range", "#PBS -J 1-100\n", (), {"array_tasks": 100}),
    ("-J with a limit", "#PBS -J 1-10%2\n", (), {"array_tasks": 10}),
    ("Torque -t range", "#PBS -t 1-100\n", (), {"array_tasks": 100}),
    ("Torque -t list (qsub's example)", "#PBS -t 1,10,50-100\n", (), {"array_tasks": 53}),
    # getopt and the scan
    ("attached values and several options on a line", "#PBS -lwalltime=600 -Nrun_3 -l ncpus=2\n", (),
     {"time_limit_s": 600, "job_name": "run_3", "cpus": 2}),
    ("a later option wins", "#PBS -l walltime=600\n#PBS -l walltime=1200\n", (), {"time_limit_s": 1200}),
    ("a comment after the options", "#PBS -l walltime=600 # ten minutes\n", (), {"time_limit_s": 600}),
    ("an indented directive is read", "   #PBS -l walltime=600\n", (), {"time_limit_s": 600}),
    ("comment and blank lines do not end the scan", "# setup\n\n#PBS -l walltime=600\n", (), {"time_limit_s": 600}),
    ("directives after the first command are ignored", "#PBS -l mem=4gb\ncd $PBS_O_WORKDIR\n#PBS -l mem=400gb\n",
     (), {"mem_bytes": 4 * G}),
    ("the command line overrides the script, resource by resource", "#PBS -l walltime=3600,mem=4gb\n",
     ("-l", "walltime=7200"), {"time_limit_s": 7200, "mem_bytes": 4 * G}),
    ("-C on the command line changes the prefix", "#MY -l walltime=600\n", ("-C", "#MY"), {"time_limit_s": 600}),
    ("-C in a directive is ignored", "#PBS -C XX -l walltime=600\n", (), {"time_limit_s": 600}),
]


@pytest.mark.parametrize("name,body,args,want", GOOD, ids=[g[0] for g in GOOD])
def test_scripts_parse_to_the_request(name, body, args, want):
    req = parse_qsub(H + body + "mpirun ./a.out\n", args)
    assert req.scheduler == "pbs"
    got = {k: getattr(req, k) for k in want}
    assert got == want


# (name, script after the shebang, command-line options, line named (None: the command line), words in the message)
BAD = [
    ("walltime in words", "#PBS -l walltime=1h\n", (), 2, "invalid walltime=1h"),
    ("walltime with days", "#PBS -l walltime=1:00:00:00\n", (), 2, "[[hours:]minutes:]seconds"),
    ("walltime of zero", "#PBS -l walltime=0\n", (), 2, "above zero"),
    ("fractional size", "#PBS -l mem=4.5gb\n", (), 2, "invalid mem=4.5gb"),
    ("unknown size unit", "#PBS -l mem=4qb\n", (), 2, "kb, mb, gb or tb"),
    ("select beside nodes", "#PBS -l select=1:ncpus=2\n#PBS -l nodes=1:ppn=2\n", (), 3, "old node syntax"),
    ("select in the script, nodes on the command line", "#PBS -l select=1:ncpus=2\n", ("-l", "nodes=2"), None,
     "old node syntax"),
    ("select beside a job-wide ncpus", "#PBS -l select=1:ncpus=2,ncpus=4\n", (), 2, "job-wide ncpus"),
    ("place without select", "#PBS -l nodes=2 -l place=excl\n", (), 2, "place needs a select"),
    ("place with an unknown word", "#PBS -l select=1:ncpus=1 -l place=everywhere\n", (), 2, "invalid place"),
    ("a chunk element without a value", "#PBS -l select=2:ncpus\n", (), 2, "invalid select"),
    ("no chunks at all", "#PBS -l select=0:ncpus=1\n", (), 2, "invalid select"),
    ("ppn not a number", "#PBS -l nodes=2:ppn=x\n", (), 2, "invalid ppn=x"),
    ("-J without a range", "#PBS -J 1,2\n", (), 2, "invalid -J"),
    ("-J whose end is not above its start", "#PBS -J 5-5\n", (), 2, "Y above X"),
    ("-t backwards", "#PBS -t 5-1\n", (), 2, "invalid -t"),
    ("unknown option", "#PBS -Z 3\n", (), 2, "invalid option -- 'Z'"),
    ("missing value at the end", "#PBS -l\n", (), 2, "requires an argument -- 'l'"),
    ("a word that is not an option", "#PBS walltime=600\n", (), 2, "not an option"),
    ("a resource list with an empty value", "#PBS -l walltime=,mem=1gb\n", (), 2, "invalid resource list"),
    ("a job name with a space", "#PBS -N 'my job'\n", (), 2, "invalid job name"),
    ("a job name starting with a sign", "#PBS -N _x\n", (), 2, "a letter or a digit"),
    ("unterminated quote", "#PBS -N \"half\n", (), 2, "quote"),
    ("command-line word that is not an option", "", ("job.pbs",), None, "not an option"),
    ("command-line bad walltime", "", ("-l", "walltime=soon"), None, "invalid walltime"),
]


@pytest.mark.parametrize("name,body,args,line,words", BAD, ids=[b[0] for b in BAD])
def test_mistakes_pbs_rejects_name_the_line(name, body, args, line, words):
    with pytest.raises(ScriptError) as err:
        parse_qsub(H + body + "mpirun ./a.out\n", args)
    assert err.value.line == line
    assert words in str(err.value)
    assert (f"line {line}" in str(err.value)) if line else ("command line" in str(err.value))


def test_values_by_hand():
    assert parse_duration("1:00:00") == 3600 and parse_duration("90:00") == 5400 and parse_duration("0.5") == 1
    assert parse_size("1kb") == 1024 and parse_size("2") == 2 and parse_size("3Tb") == 3 * 2**40
    assert parse_size("2w") == 16 and parse_size("1pb") == 2**50


def test_units_as_pbs_writes_them():
    assert pbs_time(172800) == "48:00:00" and pbs_time(5400) == "01:30:00" and pbs_time(59.2) == "00:01:00"
    assert pbs_size(19 * G) == "19gb" and pbs_size(0.3 * G) == "400mb" and pbs_size(7.6 * G) == "7800mb"
    assert size_bytes("19gb") == 19 * G and size_bytes("400mb") == 400 * M


def test_ignored_directives_and_lines():
    req = parse_qsub(H + "#PBS -N a\n#PBS -l walltime=600,mem=1gb\nmodule load x\n#PBS -l mem=1tb\n./a\n",
                     ["-A", "chem"])
    assert [ln for ln, _ in req.ignored] == [5]
    assert any("ignored" in n and "line 4" in n for n in req.notes)
    assert req.lines == {"N": 2, "walltime": 3, "mem": 3, "A": None}
    assert [ln for ln, _ in req.commands] == [4, 6]


def test_directives_of_two_schedulers_are_an_error_naming_both():
    with pytest.raises(ScriptError) as err:
        read_job(H + "#PBS -l walltime=600\n#SBATCH --time=10\n./a\n", origin="job.sh")
    msg = str(err.value)
    assert "#PBS (line 2)" in msg and "#SBATCH (line 3)" in msg and msg.startswith("job.sh: line 3:")
    assert read_job(H + "#PBS -l walltime=600\n./a\n").scheduler == "pbs"


def test_select_rewritten_by_hand():
    # chunks held 2 × 16gb and 1 × 8gb (40gb): 20gb shared in the same proportion is 8gb and 4gb a chunk
    assert chunks_text("2:ncpus=8:mem=16gb+1:ncpus=4:mem=8gb", ncpus_ratio=0.5, mem_total=20 * G,
                       size=pbs_size) == "2:ncpus=4:mem=8gb+1:ncpus=2:mem=4gb"
    # no chunk named mem: the total shared evenly over the 4 chunks
    assert chunks_text("4:ncpus=2", mem_total=10 * G, size=pbs_size) == "4:ncpus=2:mem=2600mb"


def _res(walltime=None, cpus=None, gpus=None, memory=None):
    out = {}
    for key, pair in (("walltime", walltime), ("cpus", cpus), ("gpus", gpus), ("memory", memory)):
        if pair is not None:
            out[key] = {"asked": pair[0], "suggested": pair[1], "censored": False, "capped_by": None}
    return out


def test_lines_to_paste_in_pbs_form():
    req = parse_qsub(H + "#PBS -N relax_7\n#PBS -l walltime=48:00:00\n#PBS -l select=1:ncpus=16:mem=64gb\n./a\n")
    ch = pbs_changes(req, _res(walltime=(172800, 80100), cpus=(16, 11), memory=(64 * G, 19 * G)), 15.0)
    assert [(c["option"], c["line"], c["paste"]) for c in ch] == [
        ("walltime", 3, "#PBS -l walltime=22:15:00"),
        ("select", 4, "#PBS -l select=1:ncpus=11:mem=19gb"),
        ("select", 4, "#PBS -l select=1:ncpus=11:mem=19gb"),
    ]
    assert ch[1]["frees"]["amount"] == 5 and ch[2]["frees"]["amount"] == 45 * G
    assert ch[2]["frees"]["text"].startswith("frees 45gb per job")


def test_lines_to_paste_for_torque_nodes_and_per_process_memory():
    req = parse_qsub(H + "#PBS -l nodes=2:ppn=8:gpus=2\n#PBS -l walltime=10:00:00,pmem=4gb\n./a\n")
    assert (req.cpus, req.ntasks, req.gpus, req.mem_bytes) == (16, 16, 4, 64 * G)
    # 16 → 8 CPUs halves ppn (8 → 4 a node); 4 → 2 GPUs halves gpus (1 a node); 8 processes left share 16gb: 2gb each
    ch = pbs_changes(req, _res(cpus=(16, 8), gpus=(4, 2), memory=(64 * G, 16 * G)), None)
    assert [(c["option"], c["line"], c["paste"]) for c in ch] == [
        ("nodes", 2, "#PBS -l nodes=2:ppn=4:gpus=1"),
        ("nodes", 2, "#PBS -l nodes=2:ppn=4:gpus=1"),
        ("pmem", 3, "#PBS -l pmem=2gb"),
    ]


def test_memory_added_when_none_was_asked():
    req = parse_qsub(H + "#PBS -l walltime=600,ncpus=2\n./a\n")
    ch = pbs_changes(req, _res(memory=(None, 3 * G)), None)
    assert [(c["option"], c["line"], c["paste"]) for c in ch] == [("mem", None, "#PBS -l mem=3gb")]


# ---- end to end: reclaim predict SCRIPT --history STORE ------------------------------------------------------

@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(5)
    jobs = history(group(rng, "bg1", "sim", 400, limit_s=8 * 3600, cpus=8, mem_gib=32),
                   group(rng, "bg2", "assembly", 400, limit_s=2 * 3600, cpus=2, mem_gib=8),
                   group(rng, "alice", "relax", 200, limit_s=48 * 3600, cpus=16, mem_gib=64, time_use=(0.2, 0.5),
                         mem_use=(0.1, 0.3), cores_busy=(0.4, 0.6)))
    out = tmp_path_factory.mktemp("store")
    jobs.to_parquet(out / "jobs.parquet")
    assert CliRunner().invoke(predict, ["fit", str(out)]).exit_code == 0
    return out


ALICE = (H + "#PBS -N relax_7\n#PBS -l walltime=48:00:00\n#PBS -l select=1:ncpus=16:mem=64gb\n"
         "cd $PBS_O_WORKDIR\nmpirun relax.x in_7\n")


def _run(store, tmp_path, *args):
    path = tmp_path / "job.pbs"
    path.write_text(ALICE, encoding="utf-8")
    return CliRunner().invoke(predict, [str(path), "--history", str(store), "--user", "alice", *args])


def test_reclaim_predict_reads_a_pbs_script(store, tmp_path):
    res = _run(store, tmp_path)
    assert res.exit_code == 0, res.output
    out = res.output
    table = out[: out.index("Lines to paste")]
    assert re.search(r"time +48:00:00 +\d\d:\d\d:\d\d", table) and re.search(r"memory +64gb +[\d.]+gb", table)
    assert re.search(r"CPUs +16 ", table) and "queue" not in out.splitlines()[0]
    assert re.search(r"#PBS -l walltime=\d\d:\d\d:00 +line 3 +frees", out)
    assert re.search(r"#PBS -l select=1:ncpus=\d+:mem=\d+gb +line 4 +frees \d+ CPUs", out)
    assert re.search(r"#PBS -l select=1:ncpus=\d+:mem=\d+gb +line 4 +frees \d+gb per job", out)
    assert "Rests on: 200 of alice's past relax_# jobs" in out


def test_reclaim_predict_json_and_command_line_options(store, tmp_path):
    d = json.loads(_run(store, tmp_path, "--json", "--", "-l", "walltime=24:00:00").output)
    assert d["input"]["scheduler"] == "pbs" and d["input"]["job_name"] == "relax_7"
    w, m, c = (d["resources"][k] for k in ("walltime", "memory", "cpus"))
    assert w["asked"] == 24 * 3600 and w["asked_text"] == "24:00:00"
    assert m["asked"] == 64 * G and m["asked_text"] == "64gb" and re.fullmatch(r"\d+(gb|00mb)", m["suggested_text"])
    assert c["asked"] == 16
    assert d["input"]["request"]["lines"]["walltime"] is None
    assert all(p.startswith("#PBS -l ") for p in d["suggested"]) and len(d["suggested"]) == len(set(d["suggested"]))
