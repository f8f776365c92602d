"""The bsub grammar on ``#BSUB`` scripts written by hand: each must parse to the request worked out from IBM Spectrum
LSF's bsub reference (-W, -n, -R, -M, -gpu, -J, lsf.conf's LSF_UNIT_FOR_LIMITS), or fail naming the line LSF would
refuse; the lines to paste are worked out by hand too; and one script goes through ``reclaim predict`` end to end."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from predictors.advisor.advise import read_job
from predictors.advisor.bsub import parse_bsub, with_gpus, with_mem
from predictors.advisor.job_request import ScriptError
from predictors.advisor.paste import lsf_changes
from predictors.advisor.sched_units import lsf_size, lsf_time, size_bytes
from predictors.cli import predict

from .histories import group, history

G, M, K = 2**30, 2**20, 2**10
H = "#!/bin/bash\n"

# (name, script body after the shebang, command-line options, keyword options, fields the request must have)
GOOD = [
    # -W [hour:]minute: "three and a half hours can either be specified as 3:30, or 210"
    ("-W hours:minutes", "#BSUB -W 3:30\n", (), {}, {"time_limit_s": 210 * 60}),
    ("-W minutes past 59", "#BSUB -W 210\n", (), {}, {"time_limit_s": 210 * 60}),
    ("-W normalised to a host", "#BSUB -W 60/hostA\n", (), {}, {"time_limit_s": 3600}),
    # -n min[,max]: tasks, one CPU each
    ("-n", "#BSUB -n 4\n", (), {}, {"ntasks": 4, "cpus": 4, "cpus_per_task": 1}),
    ("-n min,max takes the least", "#BSUB -n 2,8\n", (), {}, {"ntasks": 2, "cpus": 2}),
    ("-n written joined", "#BSUB -n4\n", (), {}, {"ntasks": 4}),
    # rusage mem: MB, reserved on each host by default ("bsub -n 4 -R rusage[mem=500]" reserves 500 MB a host)
    ("rusage mem on one host", '#BSUB -n 4 -R "rusage[mem=500] span[hosts=1]"\n', (), {},
     {"mem_bytes": 500 * M, "mem_form": "rusage", "nodes": 1}),
    ("rusage mem on each of two hosts", '#BSUB -n 4 -R "rusage[mem=500] span[ptile=2]"\n', (), {},
     {"mem_bytes": 1000 * M, "nodes": 2}),
    ("rusage mem per task (4 × 500 MB = 2 GB)", '#BSUB -n 4 -R "rusage[mem=500/task] span[hosts=1]"\n', (), {},
     {"mem_bytes": 2000 * M}),
    ("rusage mem per job", '#BSUB -n 4 -R "rusage[mem=2GB/job] span[ptile=1]"\n', (), {},
     {"mem_bytes": 2 * G, "nodes": 4}),
    ("rusage mem with a unit", '#BSUB -R "rusage[mem=4GB]"\n', (), {}, {"mem_bytes": 4 * G}),
    ("rusage with usage strings and a duration (the reference's example)",
     '#BSUB -R "rusage[mem=20, license=1:duration=2]"\n', (), {}, {"mem_bytes": 20 * M}),
    ("several -R strings merged", '#BSUB -n 4 -R "rusage[mem=100]"\n#BSUB -R "span[hosts=1]"\n', (), {},
     {"mem_bytes": 100 * M, "nodes": 1}),
    ("ptile decides the hosts", '#BSUB -n 8 -R "span[ptile=4]"\n', (), {}, {"nodes": 2}),
    ("no span: read as one host", "#BSUB -n 4\n", (), {}, {"nodes": 1}),
    # -M: the unit written, else LSF_UNIT_FOR_LIMITS (assumed MB; KB where lsf.conf leaves it out)
    ("-M with a unit", "#BSUB -M 8GB\n", (), {}, {"mem_bytes": 8 * G, "mem_form": "M"}),
    ("-M with a one-letter unit", "#BSUB -M 8G\n", (), {}, {"mem_bytes": 8 * G}),
    ("-M hard limit", "#BSUB -M 8GB!\n", (), {}, {"mem_bytes": 8 * G}),
    ("-M bare, MB assumed", "#BSUB -M 4000\n", (), {}, {"mem_bytes": 4000 * M}),
    ("-M bare in KB (LSF's default without lsf.conf)", "#BSUB -M 4000\n", (), {"unit_for_limits": "KB"},
     {"mem_bytes": 4000 * K}),
    ("-M 100 is 100 GB with LSF_UNIT_FOR_LIMITS=GB (the reference's example)", "#BSUB -M 100\n", (),
     {"unit_for_limits": "GB"}, {"mem_bytes": 100 * G}),
    ("rusage mem follows LSF_UNIT_FOR_LIMITS=GB", '#BSUB -R "rusage[mem=1]"\n', (), {"unit_for_limits": "GB"},
     {"mem_bytes": G}),
    ("rusage mem stays MB when the unit is KB", '#BSUB -R "rusage[mem=1]"\n', (), {"unit_for_limits": "KB"},
     {"mem_bytes": M}),
    ("rusage is the memory asked beside -M", '#BSUB -M 16GB -R "rusage[mem=8GB]"\n', (), {},
     {"mem_bytes": 8 * G, "mem_form": "rusage"}),
    # -gpu num=N[/task|host]: per host by default
    ("-gpu per host × hosts", '#BSUB -n 8 -R "span[ptile=4]" -gpu "num=2"\n', (), {}, {"gpus": 4, "nodes": 2}),
    ("-gpu per task", '#BSUB -n 4 -gpu "num=1/task"\n', (), {}, {"gpus": 4}),
    ("-gpu - takes the default, one", "#BSUB -gpu -\n", (), {}, {"gpus": 1}),
    ("-gpu model", '#BSUB -gpu "num=2:mode=exclusive_process:gmodel=TeslaV100_SXM2_32GB"\n', (), {},
     {"gpus": 2, "gpu_type": "TeslaV100_SXM2_32GB"}),
    ("-gpu model with its memory size", '#BSUB -gpu "num=1:gmodel=NVIDIAA100_SXM4-80GB"\n', (), {},
     {"gpu_type": "NVIDIAA100_SXM4"}),
    ("rusage ngpus_physical", '#BSUB -R "rusage[ngpus_physical=2]"\n', (), {}, {"gpus": 2}),
    # queue, name, arrays, project, exclusive
    ("first queue of a list", '#BSUB -q "normal long"\n', (), {}, {"partition": "normal"}),
    ("name", "#BSUB -J relax_7\n", (), {}, {"job_name": "relax_7", "array_tasks": 1}),
    ("array", '#BSUB -J "sweep[1-100]"\n', (), {}, {"job_name": "sweep", "array_tasks": 100, "array_spec": "1-100"}),
    ("array with steps, a list and a limit", '#BSUB -J "sweep[1-100:2,200]%10"\n', (), {}, {"array_tasks": 51}),
    ("array of single indices and a range", '#BSUB -J "a[1,3,5-10]"\n', (), {}, {"array_tasks": 8}),
    ("project is the account", "#BSUB -P chem\n", (), {}, {"account": "chem"}),
    ("-x asks whole hosts", "#BSUB -x\n", (), {}, {"exclusive": True}),
    # reading the script
    ("directives after the commands are read (the reference's example)",
     "#BSUB -n 2\nmyjob1 arg1\nmyjob2 arg2\n#BSUB -P myproj\n", (), {}, {"ntasks": 2, "account": "myproj"}),
    ("an indented #BSUB is a comment", "   #BSUB -n 8\n", (), {}, {"ntasks": 1}),
    ("a comment after the options", "#BSUB -W 90 # an hour and a half\n", (), {}, {"time_limit_s": 5400}),
    ("a later option wins", "#BSUB -W 10\n#BSUB -W 20\n", (), {}, {"time_limit_s": 1200}),
    ("the command line overrides the script", "#BSUB -W 90 -n 4\n", ("-n", "2"), {},
     {"ntasks": 2, "time_limit_s": 5400}),
    ("a command-line -R replaces the script's", '#BSUB -n 4 -R "rusage[mem=100]"\n', ("-R", "span[ptile=2]"), {},
     {"mem_bytes": None, "nodes": 2}),
]


@pytest.mark.parametrize("name,body,args,kw,want", GOOD, ids=[g[0] for g in GOOD])
def test_scripts_parse_to_the_request(name, body, args, kw, want):
    req = parse_bsub(H + body + "mpirun ./a.out\n", args, **kw)
    assert req.scheduler == "lsf"
    got = {k: getattr(req, k) for k in want}
    assert got == want


# (name, script after the shebang, command-line options, line named (None: the command line), words in the message)
BAD = [
    ("-W in words", "#BSUB -W 1h\n", (), 2, "invalid run limit -W 1h"),
    ("-W of zero", "#BSUB -W 0\n", (), 2, "above zero"),
    ("-n of zero", "#BSUB -n 0\n", (), 2, "invalid -n 0"),
    ("-n max below min", "#BSUB -n 8,4\n", (), 2, "min_tasks[,max_tasks]"),
    ("-n in words", "#BSUB -n four\n", (), 2, "invalid -n four"),
    ("-M fraction without a unit", "#BSUB -M 4.5\n", (), 2, "invalid -M 4.5"),
    ("-M unknown unit", "#BSUB -M 4QB\n", (), 2, "KB, MB, GB, TB"),
    ("rusage method unknown", '#BSUB -R "rusage[mem=4000/node]"\n', (), 2, "VALUE/task"),
    ("rusage mem in words", '#BSUB -R "rusage[mem=lots]"\n', (), 2, "invalid rusage mem= lots"),
    ("-R brackets unbalanced", '#BSUB -R "rusage[mem=4000"\n', (), 2, "unbalanced"),
    ("-gpu unknown key", '#BSUB -gpu "number=2"\n', (), 2, "invalid -gpu"),
    ("-gpu num in words", '#BSUB -gpu "num=two"\n', (), 2, "invalid -gpu num=two"),
    ("ngpus_physical fraction", '#BSUB -R "rusage[ngpus_physical=1.5]"\n', (), 2, "whole number of GPUs"),
    ("array backwards", '#BSUB -J "a[5-1]"\n', (), 2, "invalid job array"),
    ("array from zero", '#BSUB -J "a[0-9]"\n', (), 2, "indices from 1"),
    ("array bracket unclosed", '#BSUB -J "a[1-10"\n', (), 2, "invalid job name"),
    ("unknown option", "#BSUB -Z 3\n", (), 2, "unknown option -Z"),
    ("missing value at the end", "#BSUB -q\n", (), 2, "option -q requires an argument"),
    ("a word that is not an option", "#BSUB normal\n", (), 2, "not an option"),
    ("unterminated quote", '#BSUB -J "half\n', (), 2, "quote"),
    ("command-line word that is not an option", "", ("job.lsf",), None, "not an option"),
    ("command-line bad run limit", "", ("-W", "soon"), None, "invalid run limit"),
]


@pytest.mark.parametrize("name,body,args,line,words", BAD, ids=[b[0] for b in BAD])
def test_mistakes_lsf_rejects_name_the_line(name, body, args, line, words):
    with pytest.raises(ScriptError) as err:
        parse_bsub(H + body + "mpirun ./a.out\n", args)
    assert err.value.line == line
    assert words in str(err.value)
    assert (f"line {line}" in str(err.value)) if line else ("command line" in str(err.value))


def test_an_unknown_unit_for_limits_is_refused():
    with pytest.raises(ValueError, match="LSF_UNIT_FOR_LIMITS"):
        parse_bsub(H + "#BSUB -M 4000\n./a\n", unit_for_limits="XB")


def test_notes_say_what_was_assumed():
    req = parse_bsub(H + "#BSUB -n 4 -M 4000\n#BSUB -W 60/hostA\n./a\n")
    notes = " ".join(req.notes)
    assert "read in MB" in notes and "LSF_UNIT_FOR_LIMITS" in notes and "-M 4GB" in notes
    assert "read as on one host" in notes and "normalised to the CPU of hostA" in notes
    assert "LSB_JOB_MEMLIMIT" in notes


def test_lines_and_late_directives():
    req = parse_bsub(H + "#BSUB -J a\n#BSUB -W 90 -n 2\necho start\n#BSUB -P chem\n./a\n", ["-q", "short"])
    assert req.lines == {"J": 2, "W": 3, "n": 3, "P": 5, "q": None}
    assert any("line 5" in n and "read" in n for n in req.notes) and req.ignored == []


def test_read_job_tells_lsf_from_slurm_and_pbs():
    assert read_job(H + "#BSUB -W 90\n./a\n").scheduler == "lsf"
    assert read_job(H + "#BSUB -M 4000\n./a\n", lsf_unit="GB").mem_bytes == 4000 * G
    with pytest.raises(ScriptError) as err:
        read_job(H + "#BSUB -W 90\n#PBS -l walltime=600\n./a\n")
    assert "#BSUB (line 2)" in str(err.value) and "#PBS (line 3)" in str(err.value)


def test_units_as_lsf_writes_them():
    assert lsf_time(5400) == "1:30" and lsf_time(5400, "m") == "90" and lsf_time(2700) == "45"
    assert lsf_time(172800) == "48:00" and lsf_time(61) == "2"
    assert lsf_size(19 * G) == "19GB" and lsf_size(0.3 * G) == "400MB" and size_bytes("400MB") == 400 * M


def test_rewriting_the_strings():
    assert with_mem("select[avx] rusage[mem=8000/task:duration=10] span[hosts=1]", "4GB") == \
        "select[avx] rusage[mem=4GB/task:duration=10] span[hosts=1]"
    assert with_gpus("num=2/task:mode=shared", 1) == "num=1/task:mode=shared"
    assert with_gpus("-", 1) == "num=1" and with_gpus("mode=shared", 2) == "num=2:mode=shared"


def _res(walltime=None, cpus=None, gpus=None, memory=None):
    out = {}
    for key, pair in (("walltime", walltime), ("cpus", cpus), ("gpus", gpus), ("memory", memory)):
        if pair is not None:
            out[key] = {"asked": pair[0], "suggested": pair[1], "censored": False, "capped_by": None}
    return out


def test_lines_to_paste_in_lsf_form():
    req = parse_bsub(H + "#BSUB -W 48:00\n#BSUB -n 16 -R \"rusage[mem=64GB] span[hosts=1]\"\n#BSUB -M 64GB!\n./a\n")
    ch = lsf_changes(req, _res(walltime=(172800, 80100), cpus=(16, 11), memory=(64 * G, 19 * G)), 15.0)
    assert [(c["option"], c["line"], c["paste"]) for c in ch] == [
        ("W", 2, "#BSUB -W 22:15"),
        ("n", 3, "#BSUB -n 11"),
        ("rusage", 3, '#BSUB -R "rusage[mem=19GB] span[hosts=1]"'),
        ("M", 4, "#BSUB -M 19GB!"),
    ]
    assert ch[1]["frees"]["amount"] == 5 and ch[2]["frees"]["amount"] == 45 * G
    assert ch[2]["frees"]["text"].startswith("frees 45GB per job")


def test_lines_to_paste_per_task_and_per_host():
    req = parse_bsub(H + "#BSUB -W 90\n#BSUB -n 8 -R \"rusage[mem=2000/task] span[ptile=4]\"\n"
                     "#BSUB -gpu \"num=2:mode=exclusive_process\"\n./a\n")
    assert (req.nodes, req.gpus, req.mem_bytes) == (2, 4, 16000 * M)
    # 8 → 4 tasks fit one host (ptile=4): 2 GPUs are num=2 on it; 8 GB over 4 tasks is 2GB a task
    ch = lsf_changes(req, _res(walltime=(5400, 3600), cpus=(8, 4), gpus=(4, 2), memory=(16000 * M, 8 * G)), None)
    assert [(c["option"], c["line"], c["paste"]) for c in ch] == [
        ("W", 2, "#BSUB -W 60"),
        ("n", 3, "#BSUB -n 4"),
        ("gpu", 4, '#BSUB -gpu "num=2:mode=exclusive_process"'),
        ("rusage", 3, '#BSUB -R "rusage[mem=2GB/task] span[ptile=4]"'),
    ]


def test_memory_added_when_none_was_asked_and_a_bare_limit_rewritten():
    ch = lsf_changes(parse_bsub(H + "#BSUB -n 2\n./a\n"), _res(memory=(None, 3 * G)), None)
    assert [(c["option"], c["line"], c["paste"]) for c in ch] == [("rusage", None, '#BSUB -R "rusage[mem=3GB]"')]
    ch = lsf_changes(parse_bsub(H + "#BSUB -M 8000\n./a\n"), _res(memory=(8000 * M, 4 * G)), None)
    assert [(c["option"], c["line"], c["paste"]) for c in ch] == [("M", 2, "#BSUB -M 4GB")]


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


ALICE = (H + "#BSUB -J relax_7\n#BSUB -W 48:00\n#BSUB -n 16 -R \"rusage[mem=64GB] span[hosts=1]\"\n"
         "#BSUB -M 64GB\n#BSUB -P chem\nmpirun relax.x in_7\n")


def _run(store, tmp_path, *args):
    path = tmp_path / "job.lsf"
    path.write_text(ALICE, encoding="utf-8")
    return CliRunner().invoke(predict, [str(path), "--history", str(store), "--user", "alice", *args])


def test_reclaim_predict_reads_an_lsf_script(store, tmp_path):
    res = _run(store, tmp_path)
    assert res.exit_code == 0, res.output
    out = res.output
    table = out[: out.index("Lines to paste")]
    assert re.search(r"time +48:00 +\d+:\d\d ", table) and re.search(r"memory +64GB +[\d.]+GB", table)
    assert re.search(r"#BSUB -W \d+:\d\d +line 3 +frees", out)
    assert re.search(r"#BSUB -n \d+ +line 4 +frees \d+ CPUs", out)
    assert re.search(r'#BSUB -R "rusage\[mem=\d+GB\] span\[hosts=1\]" +line 4 +frees \d+GB per job', out)
    assert re.search(r"#BSUB -M \d+GB +line 5 +keeps the limit in step", out)
    assert "Rests on: 200 of alice's past relax_# jobs" in out


def test_reclaim_predict_json_and_command_line_options(store, tmp_path):
    d = json.loads(_run(store, tmp_path, "--json", "--", "-W", "24:00").output)
    assert d["input"]["scheduler"] == "lsf" and d["input"]["account"] == "chem"
    w, m, c = (d["resources"][k] for k in ("walltime", "memory", "cpus"))
    assert w["asked"] == 24 * 3600 and w["asked_text"] == "24:00"
    assert m["asked"] == 64 * G and m["asked_text"] == "64GB" and re.fullmatch(r"\d+(GB|00MB)", m["suggested_text"])
    assert c["asked"] == 16 and d["input"]["request"]["lines"]["W"] is None
    assert all(p.startswith("#BSUB -") for p in d["suggested"])
