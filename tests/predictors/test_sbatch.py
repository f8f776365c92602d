"""The sbatch grammar on scripts written by hand: each must parse to the request worked out from sbatch(1), or
fail with an error naming the line Slurm would refuse."""

from __future__ import annotations

import pytest

from predictors.advisor.job_request import ScriptError
from predictors.advisor.sbatch import array_size, line_words, parse_memory_mb, parse_sbatch, parse_time_limit

G, M = 2**30, 2**20
H = "#!/bin/bash\n"

# (name, script body after the shebang, command-line options, fields the request must have)
GOOD = [
    ("long with =", "#SBATCH --time=02:00:00\n#SBATCH --mem=16G\n#SBATCH --cpus-per-task=8\n",
     (), {"time_limit_s": 7200, "mem_bytes": 16 * G, "cpus": 8, "mem_form": "mem"}),
    ("long with a space", "#SBATCH --time 90 --mem 4000 --ntasks 4\n", (),
     {"time_limit_s": 5400, "mem_bytes": 4000 * M, "ntasks": 4, "cpus": 4}),
    ("short with a space", "#SBATCH -t 30 -n 2 -c 3 -N 1\n", (), {"time_limit_s": 1800, "cpus": 6, "nodes": 1}),
    ("short attached", "#SBATCH -t30:00 -n2 -c3\n", (), {"time_limit_s": 1800, "cpus": 6}),
    ("several per line, comment after", "#SBATCH -J relax_0042 -p cpu -A chem -q long   # the usual\n", (),
     {"job_name": "relax_0042", "partition": "cpu", "account": "chem", "qos": "long"}),
    ("quoted name with spaces", "#SBATCH --job-name=\"my run #3\"\n", (), {"job_name": "my run #3"}),
    ("unique prefix of a long name", "#SBATCH --cpus-per-t=4 --job=x\n", (), {"cpus": 4, "job_name": "x"}),
    ("#SLURM still read", "#SLURM --time=10\n", (), {"time_limit_s": 600}),
    # --time in every form Slurm takes (seconds round up to the minute)
    ("time minutes", "#SBATCH --time=45\n", (), {"time_limit_s": 45 * 60}),
    ("time minutes:seconds", "#SBATCH --time=45:30\n", (), {"time_limit_s": 46 * 60}),
    ("time hours:minutes:seconds", "#SBATCH --time=1:02:03\n", (), {"time_limit_s": 3600 + 3 * 60}),
    ("time days-hours", "#SBATCH --time=2-12\n", (), {"time_limit_s": 2.5 * 86400}),
    ("time days-hours:minutes", "#SBATCH --time=1-23:15\n", (), {"time_limit_s": 86400 + 23 * 3600 + 15 * 60}),
    ("time days-hours:minutes:seconds", "#SBATCH --time=1-23:15:00\n", (), {"time_limit_s": 170100}),
    ("time unlimited", "#SBATCH --time=UNLIMITED\n", (), {"time_limit_s": None, "time_unlimited": True}),
    ("time zero is no limit", "#SBATCH -t 0\n", (), {"time_limit_s": None, "time_unlimited": True}),
    # memory forms
    ("mem per node × nodes", "#SBATCH -N 2 --mem=100G\n", (), {"mem_bytes": 200 * G, "nodes": 2}),
    ("mem in K rounds up to MB", "#SBATCH --mem=1025K\n", (), {"mem_bytes": 2 * M}),
    ("mem with B", "#SBATCH --mem=2GB\n", (), {"mem_bytes": 2 * G}),
    ("mem in T", "#SBATCH --mem=1T\n", (), {"mem_bytes": 1024 * G}),
    ("mem-per-cpu × CPUs", "#SBATCH -n 4 -c 2 --mem-per-cpu=4000M\n", (),
     {"mem_bytes": 8 * 4000 * M, "mem_form": "mem-per-cpu", "cpus": 8}),
    ("mem-per-gpu × GPUs", "#SBATCH --gpus=2 --mem-per-gpu=40G\n", (),
     {"mem_bytes": 80 * G, "mem_form": "mem-per-gpu", "gpus": 2}),
    ("mem=0 is all of each node", "#SBATCH --mem=0\n", (), {"mem_all": True, "mem_bytes": None}),
    ("no memory asked", "#SBATCH -c 4\n", (), {"mem_bytes": None, "mem_form": None}),
    # GPUs
    ("--gpus typed", "#SBATCH --gpus=a100:4\n", (), {"gpus": 4, "gpu_type": "a100"}),
    ("-G untyped", "#SBATCH -G 2\n", (), {"gpus": 2, "gpu_type": None}),
    ("--gpus-per-node × nodes", "#SBATCH -N 2 --gpus-per-node=h100:4\n", (), {"gpus": 8, "gpu_type": "h100"}),
    ("--gres=gpu:TYPE:N per node", "#SBATCH --nodes=2 --gres=gpu:a100:2\n", (), {"gpus": 4, "gpu_type": "a100"}),
    ("--gres=gpu:N", "#SBATCH --gres=gpu:3\n", (), {"gpus": 3, "gpu_type": None}),
    ("--gres=gpu alone is one", "#SBATCH --gres=gpu\n", (), {"gpus": 1}),
    ("--gres list with other gres", "#SBATCH --gres=shard:2,gpu:v100:1\n", (), {"gpus": 1, "gpu_type": "v100"}),
    ("--gpus-per-task × tasks", "#SBATCH -n 4 --gpus-per-task=1\n", (), {"gpus": 4}),
    ("--cpus-per-gpu", "#SBATCH --gpus=2 --cpus-per-gpu=6\n", (), {"cpus": 12}),
    # tasks and nodes
    ("ntasks-per-node × nodes", "#SBATCH -N 3 --ntasks-per-node=8\n", (), {"ntasks": 24, "cpus": 24, "nodes": 3}),
    ("ntasks wins over ntasks-per-node", "#SBATCH -N 2 --ntasks-per-node=8 -n 10\n", (), {"ntasks": 10}),
    ("node range takes the least", "#SBATCH --nodes=2-4\n", (), {"nodes": 2}),
    ("exclusive flag", "#SBATCH --exclusive\n", (), {"exclusive": True}),
    ("exclusive=user", "#SBATCH --exclusive=user\n", (), {"exclusive": True}),
    # arrays
    ("array range", "#SBATCH --array=0-99\n", (), {"array_tasks": 100}),
    ("array list and ranges", "#SBATCH -a 0,6,16-32\n", (), {"array_tasks": 19}),
    ("array step", "#SBATCH --array=0-15:4\n", (), {"array_tasks": 4}),
    ("array throttle", "#SBATCH --array=1-10%2\n", (), {"array_tasks": 10}),
    # order and overrides
    ("later option wins", "#SBATCH --time=10\n#SBATCH --time=20\n", (), {"time_limit_s": 1200}),
    ("command line overrides the script", "#SBATCH --time=10 --mem=4G\n", ("-t", "60", "--mem-per-cpu=1G"),
     {"time_limit_s": 3600, "mem_form": "mem-per-cpu", "mem_bytes": G}),
    ("directives after the first command are ignored",
     "#SBATCH --mem=4G\n\n# a comment\nmodule load x\n#SBATCH --mem=400G\n", (), {"mem_bytes": 4 * G}),
    ("a value may sit on the next directive line", "#SBATCH --time\n#SBATCH 15\n", (), {"time_limit_s": 900}),
    ("indented #SBATCH is a comment to Slurm", "  #SBATCH --mem=400G\n#SBATCH --mem=1G\n", (), {"mem_bytes": G}),
    ("only the first hetjob component", "#SBATCH -c 2\n#SBATCH hetjob\n#SBATCH -c 64\n", (), {"cpus": 2}),
]


@pytest.mark.parametrize("name,body,args,want", GOOD, ids=[g[0] for g in GOOD])
def test_scripts_parse_to_the_request(name, body, args, want):
    req = parse_sbatch(H + body + "srun ./a.out\n", args)
    got = {k: getattr(req, k) for k in want}
    assert got == want


# (name, script after the shebang, command-line options, line named (None: the command line), words in the message)
BAD = [
    ("unknown option", "#SBATCH --time=10\n#SBATCH --memory=4G\n", (), 3, "unrecognized option '--memory'"),
    ("ambiguous prefix", "#SBATCH --mem-per=4G\n", (), 2, "ambiguous"),
    ("unknown short option", "#SBATCH -Z 3\n", (), 2, "invalid option -- 'Z'"),
    ("missing value at the end", "#SBATCH --mem=1G\n#SBATCH --time\n", (), 3, "requires an argument"),
    ("a flag given a value", "#SBATCH --hold=yes\n", (), 2, "doesn't allow an argument"),
    ("not an option", "#SBATCH 4G\n", (), 2, "not an option"),
    ("bad time", "#SBATCH --time=1:2:3:4\n", (), 2, "invalid time limit"),
    ("bad time words", "#SBATCH -t 2h\n", (), 2, "invalid time limit"),
    ("fractional memory", "#SBATCH --mem=4.5G\n", (), 2, "invalid memory size"),
    ("memory unit unknown", "#SBATCH --mem=4Q\n", (), 2, "invalid memory size"),
    ("two memory forms", "#SBATCH --mem=4G\n#SBATCH --mem-per-cpu=1G\n", (), 3, "mutually exclusive"),
    ("two memory forms on the command line", "", ("--mem=1G", "--mem-per-gpu=2G"), None, "mutually exclusive"),
    ("zero tasks", "#SBATCH -n 0\n", (), 2, "--ntasks"),
    ("tasks not a number", "#SBATCH --ntasks=four\n", (), 2, "--ntasks"),
    ("cpus per task not a number", "#SBATCH -c 2.5\n", (), 2, "--cpus-per-task"),
    ("bad node range", "#SBATCH -N 4-2\n", (), 2, "node count"),
    ("bad array", "#SBATCH --array=5-1\n", (), 2, "array"),
    ("bad array throttle", "#SBATCH --array=1-5%x\n", (), 2, "array"),
    ("bad gres", "#SBATCH --gres=gpu:a100:two\n", (), 2, "generic resource"),
    ("bad gpus", "#SBATCH --gpus=lots\n", (), 2, "--gpus"),
    ("bad exclusive", "#SBATCH --exclusive=always\n", (), 2, "--exclusive"),
    ("exclusive and oversubscribe", "#SBATCH --exclusive\n#SBATCH --oversubscribe\n", (), 3, "mutually exclusive"),
    ("unterminated quote", "#SBATCH -J \"half\n", (), 2, "quote"),
    ("leading colon", "#SBATCH :x\n", (), 2, "unexpected ':'"),
    ("command-line word that is not an option", "", ("job.sh",), None, "not an option"),
    ("command-line bad time", "", ("--time=soon",), None, "invalid time limit"),
]


@pytest.mark.parametrize("name,body,args,line,words", BAD, ids=[b[0] for b in BAD])
def test_mistakes_slurm_rejects_name_the_line(name, body, args, line, words):
    with pytest.raises(ScriptError) as err:
        parse_sbatch(H + body + "srun ./a.out\n", args)
    assert err.value.line == line
    assert words in str(err.value)
    assert (f"line {line}" in str(err.value)) if line else ("command line" in str(err.value))


@pytest.mark.parametrize("text,line,words", [
    ("", None, "empty"), ("  \n\n", None, "whitespace"),
    ("#SBATCH --mem=1G\nsrun x\n", 1, "#!"),
    ("#!/bin/bash\n#SBATCH --mem=1G\r\nsrun x\r\n", 2, "DOS line breaks"),
])
def test_scripts_sbatch_refuses_before_reading_directives(text, line, words):
    with pytest.raises(ScriptError) as err:
        parse_sbatch(text)
    assert err.value.line == line and words in str(err.value)


def test_ignored_directives_are_reported_with_their_lines():
    req = parse_sbatch(H + "#SBATCH -c 2\necho start\n#SBATCH -c 64\n#SBATCH --mem=1T\nsrun x\n")
    assert req.cpus == 2 and [ln for ln, _ in req.ignored] == [4, 5]
    assert any("ignored" in n and "line 3" in n for n in req.notes)
    assert req.lines == {"cpus-per-task": 2}


def test_lines_say_where_each_option_was_written():
    req = parse_sbatch(H + "#SBATCH -J a\n#SBATCH --mem=1G -c 2\nsrun x\n", ["--time=5"])
    assert req.lines == {"job-name": 2, "mem": 3, "cpus-per-task": 3, "time": None}


def test_words_split_as_slurm_splits_them():
    assert line_words(" --job-name='a b' -t 5 # rest", 1) == ["--job-name=a b", "-t", "5"]
    assert line_words(r" --comment=a\ b --x=\#y", 1) == ["--comment=a b", "--x=#y"]
    assert line_words(' -J "say \\"hi\\""', 1) == ['-J', 'say "hi"']


def test_values_by_hand():
    assert parse_time_limit("1") == 60 and parse_time_limit("0:01") == 60 and parse_time_limit("1-") == 86400
    assert parse_time_limit("INFINITE") is None and parse_time_limit("-1") is None
    assert parse_memory_mb("1", "mem") == 1 and parse_memory_mb("1k", "mem") == 1 and parse_memory_mb("3g", "mem") == 3072
    assert array_size("0-9,20-29:5,40") == 13 and array_size("3") == 1
