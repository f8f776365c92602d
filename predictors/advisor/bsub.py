"""The bsub grammar the advisor reads: ``#BSUB`` directives and command-line options, as IBM Spectrum LSF reads them.

Read, never run: a job script is untrusted text.  What follows LSF's reading (the ``bsub`` command reference of
LSF 10.1, its ``job_script`` and ``command`` operands, and ``lsf.conf``):

- a directive is a line that starts with ``#BSUB``; bsub reads such lines wherever they stand in the script (the
  reference's own example puts ``#BSUB -P`` after the commands), so none is ignored;
- each directive is bsub's options in command-line syntax (words split as a shell splits them; a word that starts
  with ``#`` begins a comment); an option takes its value from the next word (``-n 4``), or written joined to a
  one-letter option (``-n4``); a later option overrides an earlier one, except ``-R``, whose strings LSF merges;
  an option given on the command line overrides the script's.

Values (each error names the line and says what LSF takes):

- ``-W [hour:]minute[/host]``: the run limit (minutes may pass 59: ``90`` and ``1:30`` are the same); a host or
  host model after ``/`` names the CPU the limit is normalised to (noted, not applied);
- ``-n min[,max]``: tasks (slots), the least taken; one CPU each;
- ``-R "… rusage[mem=M] span[ptile=P] …"``: ``rusage`` memory is reserved on each host of a parallel job by
  default (LSF's "per-host" reservation; ``mem=M/task``, ``/host`` and ``/job`` say it outright); ``span[hosts=1]``
  puts every task on one host, ``span[ptile=P]`` P tasks on each host; without ``span`` the hosts are not fixed
  and the job is read as on one (noted);
- ``-M mem[!]``: the memory limit, read as the job's (LSF applies it per process unless ``LSB_JOB_MEMLIMIT=y``);
- memory figures take a unit (``KB``/``K``, ``MB``/``M``, ``GB``/``G``, ``TB``/``T``, …, 1024 multiples); without
  one, ``-M`` is in ``LSF_UNIT_FOR_LIMITS``, which is KB when ``lsf.conf`` leaves it out but MB as
  ``lsfinstall`` writes it: the advisor assumes MB (``parse_bsub(…, unit_for_limits="KB")`` changes it), and
  ``rusage`` ``mem`` is in that unit too, MB when the unit is KB;
- ``-gpu "num=N[/task|host][:gmodel=NAME]…"``: N GPUs on each host (``/task``: for each task); ``-gpu -`` takes the
  default, one;
- ``-q "queue …"`` (the first of a list is read), ``-J name`` or ``-J "name[1-100:2,200]%10"`` (an array),
  ``-P project`` (the account), ``-x`` (whole hosts).

The job's memory is the ``rusage`` reservation when one is written (what the scheduler holds), else ``-M``.
"""

from __future__ import annotations

import math
import re

from .job_request import JobRequest, ScriptError, count_indices, split_directive

MAGIC = "#BSUB"
#: bsub's options that take a value
VALUED = frozenset((
    "a", "alloc_flags", "app", "b", "C", "c", "clusters", "cn_cu", "cn_mem", "core_isolation", "csm", "cwd", "D",
    "data", "datagrp", "E", "Ep", "e", "eo", "eptl", "env", "ext", "extsched", "F", "f", "freq", "G", "g", "gpu",
    "hostfile", "i", "is", "J", "Jd", "jobaff", "json", "jsdl", "jsdl_strict", "jsm", "k", "L", "Lp", "ln_mem",
    "ln_slots", "M", "m", "mig", "n", "network", "nnodes", "notify", "o", "oo", "outdir", "P", "p", "pack", "ptl",
    "Q", "q", "R", "rcacct", "rnc", "S", "s", "sla", "smt", "sp", "stage", "step_cgroup", "T", "t", "U", "u", "v",
    "W", "We", "w", "wa", "wt", "yaml"))
#: bsub's options that take none
FLAGS = frozenset(("ar", "B", "datachk", "H", "h", "hl", "I", "Ip", "IS", "ISp", "ISs", "Is", "IX", "K", "N", "Ne",
                   "r", "rn", "ti", "tty", "ul", "V", "x", "XF", "Zs"))
UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50, "E": 2**60, "Z": 2**70}
GPU_KEYS = ("num", "mode", "mps", "j_exclusive", "aff", "block", "gpack", "gvendor", "gmodel", "gtile", "gmem",
            "glink", "mig", "nvlink")
_SIZE = r"(\d+(?:\.\d+)?)\s*([KMGTPEZ]B?)?"


# ---- directives ----------------------------------------------------------------------------------------------

def read_directives(text: str):
    """``(words with their line, command lines, lines of directives after the first command)``."""
    words: list[tuple[str, int]] = []
    commands: list[tuple[int, str]] = []
    late: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if raw.startswith(MAGIC):
            words.extend((w, lineno) for w in split_directive(raw[len(MAGIC):], lineno))
            if commands:
                late.append(lineno)
            continue
        s = raw.strip()
        if s and not s.startswith("#"):
            commands.append((lineno, s))
    return words, commands, late


def parse_options(words, *, cli: bool = False) -> list[tuple[str, str | None, int | None]]:
    """bsub's options over the words: ``(name, value or None, line)`` in order."""
    out = []
    i = 0
    while i < len(words):
        w, ln = words[i]
        if not w.startswith("-") or w in ("-", "--"):
            what = "the job script is given on its own" if cli else "bsub takes only options here"
            raise ScriptError(f"{w!r} is not an option ({what})", ln, cli=cli)
        name = w[1:]
        if name in FLAGS:
            out.append((name, None, ln))
        elif name in VALUED:
            if i + 1 >= len(words):
                raise ScriptError(f"option -{name} requires an argument", ln, cli=cli)
            i += 1
            out.append((name, words[i][0], words[i][1]))
        else:
            joined = next((o for o in sorted(VALUED, key=len, reverse=True)
                           if len(o) == 1 and name.startswith(o) and len(name) > 1), None)
            if joined is None:
                raise ScriptError(f"unknown option -{name} (bsub takes -W run limit, -n tasks, -R resources, "
                                  "-M memory, -gpu, -q queue, -J name, -P project, -x and the like)", ln, cli=cli)
            out.append((joined, name[1:], ln))
        i += 1
    return out


# ---- values --------------------------------------------------------------------------------------------------

def parse_run_limit(value: str, line: int | None = None, *, cli: bool = False) -> tuple[float, str, str | None]:
    """``-W [hour:]minute[/host]`` → (seconds, "hm" or "m" as written, the host or model named)."""
    m = re.fullmatch(r"(?:(\d+):)?(\d+)(?:/(\S+))?", value.strip())
    if not m:
        raise ScriptError(f"invalid run limit -W {value} (LSF takes [hour:]minute, e.g. 90 or 1:30)", line, cli=cli)
    minutes = int(m.group(1) or 0) * 60 + int(m.group(2))
    if minutes <= 0:
        raise ScriptError(f"run limit -W {value} is zero (give a limit above zero)", line, cli=cli)
    return float(minutes * 60), "hm" if m.group(1) is not None else "m", m.group(3)


def parse_tasks(value: str, line: int | None = None, *, cli: bool = False) -> int:
    """``-n min[,max]`` → the least number of tasks."""
    m = re.fullmatch(r"(\d+)(?:,(\d+))?", value.strip())
    if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < int(m.group(1))):
        raise ScriptError(f"invalid -n {value} (LSF takes min_tasks[,max_tasks], whole numbers from 1)", line, cli=cli)
    return int(m.group(1))


def size_bytes(value: str, default_unit: str, what: str, line: int | None = None, *, cli: bool = False) -> float:
    """A memory figure with an optional unit (``4000``, ``4GB``, ``4G``, ``1.5GB``) in bytes; a bare number is in
    ``default_unit`` and must be whole."""
    m = re.fullmatch(_SIZE, value.strip(), flags=re.IGNORECASE)
    if not m or (m.group(2) is None and "." in m.group(1)):
        raise ScriptError(f"invalid {what} {value} (LSF takes a whole number in {default_unit}, or a number with a "
                          "unit: KB, MB, GB, TB, e.g. 4000 or 4GB)", line, cli=cli)
    unit = (m.group(2) or default_unit)[0].upper()
    return float(m.group(1)) * UNITS[unit]


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def parse_resreq(value: str, line: int | None, *, cli: bool = False) -> dict:
    """One ``-R`` string → ``{"mem": (text, per) , "hosts": n, "ptile": p, "ngpus": (n, per)}`` (what is named)."""
    if not _balanced(value):
        raise ScriptError(f"invalid resource requirement -R {value!r} (unbalanced [ ]; LSF takes sections such as "
                          "select[...] rusage[mem=4000] span[hosts=1])", line, cli=cli)
    out: dict = {}
    for section, body in re.findall(r"(\w+)\[([^\]]*)\]", value):
        section = section.lower()
        if section == "rusage" and "mem" not in out:
            first = body.split("||")[0]
            for usage in first.split(","):
                for item in usage.split(":"):
                    k, _, v = item.strip().partition("=")
                    v = v.strip()
                    per = None
                    if "/" in v:
                        v, _, per = v.partition("/")
                        if per.lower() not in ("task", "host", "job"):
                            raise ScriptError(f"invalid rusage {item.strip()} (LSF takes VALUE, VALUE/task, "
                                              "VALUE/host or VALUE/job)", line, cli=cli)
                        per = per.lower()
                    if k.strip().lower() == "mem":
                        out["mem"] = (v, per or "host")
                    elif k.strip().lower() == "ngpus_physical":
                        out["ngpus"] = (v, per or "host")
        elif section == "span":
            for item in body.split(":"):
                k, _, v = item.strip().partition("=")
                if k.strip() in ("hosts", "ptile") and re.fullmatch(r"\d+", v.strip()):
                    out[k.strip()] = int(v)
    return out


def parse_gpu(value: str, line: int | None, *, cli: bool = False) -> tuple[int, str, str | None]:
    """``-gpu "num=N[/task|host][:…]"`` or ``-gpu -`` → (N, "host" or "task", the gmodel named)."""
    v = value.strip()
    if v == "-":
        return 1, "host", None
    num, per, model = 1, "host", None
    for item in v.split(":"):
        k, eq, val = item.strip().partition("=")
        k = k.strip().lower()
        if k not in GPU_KEYS or not eq:
            raise ScriptError(f"invalid -gpu {value!r} (LSF takes num=N[/task|host][:mode=shared|exclusive_process]"
                              "[:gmodel=MODEL]..., or -)", line, cli=cli)
        if k == "num":
            m = re.fullmatch(r"(\d+)(?:/(task|host))?", val.strip())
            if not m:
                raise ScriptError(f"invalid -gpu num={val} (LSF takes num=N, num=N/task or num=N/host)", line, cli=cli)
            num, per = int(m.group(1)), m.group(2) or "host"
        elif k == "gmodel":
            model = re.sub(r"-\d+(?:[KMGT]B?)?$", "", val.strip(), flags=re.IGNORECASE) or None
    return num, per, model


def array_size(value: str, line: int | None = None, *, cli: bool = False) -> tuple[str, int, str | None]:
    """``-J name[index_list]%limit`` → (name, elements, index spec or None)."""
    m = re.fullmatch(r"([^\[\]%]*)(?:\[([^\]]*)\](?:%(\d+))?)?", value.strip())
    if not m:
        raise ScriptError(f"invalid job name -J {value!r} (LSF takes NAME or NAME[1-100], NAME[1-100:2,200]%10)",
                          line, cli=cli)
    if m.group(2) is None:
        return m.group(1), 1, None
    ranges: list[range] = []
    for item in m.group(2).split(","):
        r = re.fullmatch(r"\s*(\d+)(?:-(\d+)(?::(\d+))?)?\s*", item)
        if not r or int(r.group(1)) < 1 or (r.group(2) and int(r.group(2)) < int(r.group(1))) or \
                (r.group(3) and int(r.group(3)) < 1):
            raise ScriptError(f"invalid job array -J {value!r} (LSF takes indices from 1 as start[-end[:step]], "
                              "comma-separated, e.g. NAME[1-100:2,200]%10)", line, cli=cli)
        a = int(r.group(1))
        b = int(r.group(2)) if r.group(2) else a
        ranges.append(range(a, b + 1, int(r.group(3) or 1)))
    return m.group(1), count_indices(ranges), m.group(2)


# ---- the request ---------------------------------------------------------------------------------------------

def _gather(opts) -> dict[str, list[tuple[str | None, int | None]]]:
    """Every value of each option, in order."""
    out: dict[str, list[tuple[str | None, int | None]]] = {}
    for name, val, ln in opts:
        out.setdefault(name, []).append((val, ln))
    return out


def build_request(given: dict, *, unit_for_limits: str = "MB") -> JobRequest:
    """A :class:`JobRequest` from the options in force (each option: its values and lines, in order)."""
    def last(name):
        val, ln = given[name][-1]
        return val or "", ln, ln is None

    unit = unit_for_limits.upper()
    rusage_unit = "MB" if unit in ("KB", "K") else unit
    req = JobRequest(scheduler="lsf", lines={k: v[-1][1] for k, v in given.items()})
    if "J" in given:
        v, ln, c = last("J")
        name, req.array_tasks, req.array_spec = array_size(v, ln, cli=c)
        req.job_name = name or None
    if "q" in given:
        req.partition = (last("q")[0].split() or [None])[0]
    if "P" in given:
        req.account = last("P")[0] or None
    if "W" in given:
        v, ln, c = last("W")
        req.time_limit_s, req.raw["W_form"], host = parse_run_limit(v, ln, cli=c)
        if host:
            req.notes.append(f"-W {v} (line {ln}) is normalised to the CPU of {host}: read as wall time")
    if "n" in given:
        v, ln, c = last("n")
        req.ntasks = parse_tasks(v, ln, cli=c)
    req.cpus = req.ntasks
    if "x" in given:
        req.exclusive = True
    rr: dict = {}
    for v, ln in given.get("R", []):
        one = parse_resreq(v or "", ln, cli=ln is None)
        if "mem" in one and "mem" not in rr:
            req.raw["R"], req.lines["rusage"] = v or "", ln
        rr = {**one, **rr}
    hosts = 1
    if "hosts" in rr:
        hosts = max(1, rr["hosts"])
    elif "ptile" in rr and rr["ptile"] > 0:
        hosts = math.ceil(req.ntasks / rr["ptile"])
        req.raw["ptile"] = str(rr["ptile"])
    elif req.ntasks > 1:
        req.notes.append(f"{req.ntasks} tasks without span[hosts=…] or span[ptile=…]: read as on one host")
    req.nodes = hosts
    if "gpu" in given:
        v, ln, c = last("gpu")
        num, per, req.gpu_type = parse_gpu(v, ln, cli=c)
        req.gpus = num * (req.ntasks if per == "task" else hosts)
        req.raw["gpu"], req.raw["gpu_per"] = v, per
    elif "ngpus" in rr:
        n, per = rr["ngpus"]
        if not re.fullmatch(r"\d+(?:\.0+)?", n):
            raise ScriptError(f"invalid rusage ngpus_physical={n} (LSF takes a whole number of GPUs)",
                              req.lines.get("R"))
        req.gpus = int(float(n)) * {"task": req.ntasks, "job": 1}.get(per, hosts)
    _memory(req, given, rr, last, unit, rusage_unit, hosts)
    return req


def _memory(req, given, rr, last, unit, rusage_unit, hosts) -> None:
    limit = None
    if "M" in given:
        v, ln, c = last("M")
        hard = v.rstrip().endswith("!")
        limit = size_bytes(v.rstrip().rstrip("!"), unit, "-M", ln, cli=c)
        req.raw["M_hard"] = "!" if hard else ""
        req.raw["M_unit"] = "written" if re.search(r"[A-Za-z]", v) else "assumed"
    if "mem" in rr:
        text, per = rr["mem"]
        ln = req.lines.get("rusage")
        each = size_bytes(text, rusage_unit, "rusage mem=", ln, cli=ln is None)
        req.mem_bytes = each * {"task": req.ntasks, "job": 1}.get(per, hosts)
        req.mem_form = "rusage"
        req.raw["mem_per"] = per
        if not re.search(r"[A-Za-z]", text):
            req.notes.append(f"rusage mem={text} (line {ln}) read in {rusage_unit}")
        if limit is not None and abs(limit - req.mem_bytes) > 0.5:
            req.notes.append(f"-M (line {req.lines.get('M')}) limits the job to {limit / 2**20:,.0f} MB; the rusage "
                             "reservation is read as the memory asked")
    elif limit is not None:
        req.mem_bytes, req.mem_form = limit, "M"
    if limit is not None and req.raw.get("M_unit") == "assumed":
        req.notes.append(f"-M {last('M')[0]} (line {req.lines.get('M')}) read in {unit}, taken as the cluster's "
                         "LSF_UNIT_FOR_LIMITS: write the unit (-M 4GB) to be sure")
    if limit is not None and req.ntasks > 1 and req.mem_form == "M":
        req.notes.append("-M read as the job's limit (LSF applies it to each process unless LSB_JOB_MEMLIMIT=y)")


def check_script(text: str) -> None:
    if not text.strip():
        raise ScriptError("the script is empty")


def parse_bsub(text: str, args=(), *, unit_for_limits: str = "MB") -> JobRequest:
    """The request of a ``#BSUB`` job script, with ``args`` (bsub's command-line options, a list of words)
    overriding its directives as bsub does; memory figures without a unit in ``unit_for_limits`` (``-M``)."""
    if unit_for_limits.upper() not in ("KB", "MB", "GB", "TB", "PB", "EB", "ZB"):
        raise ValueError(f"LSF_UNIT_FOR_LIMITS is one of KB, MB, GB, TB, PB, EB, ZB, not {unit_for_limits!r}")
    check_script(text)
    words, commands, late = read_directives(text)
    script = _gather(parse_options(words))
    cli = _gather(parse_options([(a, None) for a in args], cli=True))
    req = build_request({**script, **cli}, unit_for_limits=unit_for_limits)
    req.commands = commands
    if late:
        req.notes.append(f"line{'s' if len(late) > 1 else ''} {', '.join(map(str, late))}: read, as bsub reads "
                         f"#BSUB lines anywhere in the script (the first command is on line {commands[0][0]})")
    return req


def with_mem(resreq: str, value: str) -> str:
    """The ``-R`` string with its (first) rusage ``mem`` set to ``value`` (its ``/task``, ``/host`` or ``/job``
    kept)."""
    def one(m: re.Match) -> str:
        body = re.sub(r"(\bmem\s*=\s*)[0-9.]+\s*(?:[KMGTPEZ]B?)?", lambda x: x.group(1) + value, m.group(2), count=1,
                      flags=re.IGNORECASE)
        return m.group(1) + body + "]"
    return re.sub(r"(rusage\[)([^\]]*)\]", one, resreq, count=1)


def with_gpus(gpu: str, num: int) -> str:
    """The ``-gpu`` string with ``num`` set (``/task`` or ``/host`` kept)."""
    if gpu.strip() == "-" or not re.search(r"\bnum\s*=", gpu):
        return f"num={num}" + ("" if gpu.strip() in ("-", "") else ":" + gpu.strip())
    return re.sub(r"(\bnum\s*=\s*)\d+", lambda m: f"{m.group(1)}{num}", gpu, count=1)
