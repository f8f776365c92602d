"""The sbatch grammar the advisor reads: ``#SBATCH`` directives and command-line options, as Slurm parses them.

Read, never run: a job script is untrusted text.  What follows Slurm's own reading (``sbatch(1)`` and its
option parser):

- a directive is a line that *starts* with ``#SBATCH`` (``#SLURM`` too, deprecated); Slurm stops reading
  directives at the first line that is neither blank nor a comment (the first command), so later ``#SBATCH``
  lines are ignored (kept in :attr:`JobRequest.ignored`);
- each directive line is split into words as Slurm does: whitespace separates, single or double quotes group,
  a backslash escapes the next character, an unquoted ``#`` ends the line;
- the words of all directive lines form one argument list, read as ``getopt_long`` reads a command line:
  ``--time=10``, ``--time 10``, ``-t 10``, ``-t10``, a unique prefix of a long name (``--cpus-per-t=4``),
  flags that take no value (``--exclusive``, ``-H``) and options whose value is optional (``--exclusive=user``);
  a later option overrides an earlier one; options given on the command line override the script's;
- a line that reads ``#SBATCH hetjob`` (or ``packjob``) starts the next component of a heterogeneous job:
  only the first component is read (noted).

Values are read as Slurm reads them (each error names the line and says what Slurm takes):
``--time`` ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``, ``days-hours``, ``days-hours:minutes``,
``days-hours:minutes:seconds`` (seconds rounded up to the minute; 0, ``-1``, ``INFINITE`` and ``UNLIMITED``
mean no limit); memory a whole number with an optional ``K``/``M``/``G``/``T`` (and ``B``), megabytes by default;
``--mem``, ``--mem-per-cpu`` and ``--mem-per-gpu`` exclusive of each other; GPUs from ``--gpus``/``-G``,
``--gpus-per-node``, ``--gpus-per-task``, ``--gres=gpu[:TYPE][:N]`` and ``--tres-per-task=gres/gpu…``.
"""

from __future__ import annotations

import math
import re

from .job_request import JobRequest, ScriptError

#: every sbatch long option and whether it takes a value ("required", "optional") or none ("none")
OPTIONS: dict[str, str] = {
    **dict.fromkeys((
        "account", "acctg-freq", "array", "batch", "bb", "bbf", "begin", "chdir", "cluster-constraint", "clusters",
        "comment", "constraint", "container", "container-id", "core-spec", "cores-per-socket", "cpu-freq",
        "cpus-per-gpu", "cpus-per-task", "deadline", "delay-boot", "dependency", "distribution", "error", "exclude",
        "export", "export-file", "extra", "extra-node-info", "gid", "gpu-bind", "gpu-freq", "gpus", "gpus-per-node",
        "gpus-per-socket", "gpus-per-task", "gres", "gres-flags", "hint", "input", "job-name", "kill-on-invalid-dep",
        "licenses", "mail-type", "mail-user", "mcs-label", "mem", "mem-bind", "mem-per-cpu", "mem-per-gpu",
        "mincpus", "network", "nodefile", "nodelist", "nodes", "ntasks", "ntasks-per-core", "ntasks-per-gpu",
        "ntasks-per-node", "ntasks-per-socket", "open-mode", "output", "partition", "power", "prefer", "priority",
        "profile", "qos", "reservation", "segment", "signal", "sockets-per-node", "switches", "thread-spec",
        "threads-per-core", "time", "time-min", "tmp", "tres-bind", "tres-per-task", "uid", "wait-all-nodes",
        "wckey", "wrap"), "required"),
    **dict.fromkeys(("exclusive", "get-user-env", "nice", "no-kill", "oom-kill-step", "propagate", "resv-ports"),
                    "optional"),
    **dict.fromkeys(("contiguous", "help", "hold", "ignore-pbs", "no-requeue", "overcommit", "oversubscribe",
                     "parsable", "quiet", "reboot", "requeue", "spread-job", "test-only", "usage", "use-min-nodes",
                     "verbose", "version", "wait"), "none"),
}
#: sbatch's short options and the long option each stands for
SHORT: dict[str, str] = {
    "A": "account", "a": "array", "B": "extra-node-info", "b": "begin", "C": "constraint", "c": "cpus-per-task",
    "D": "chdir", "d": "dependency", "e": "error", "F": "nodefile", "G": "gpus", "H": "hold", "h": "help",
    "i": "input", "J": "job-name", "k": "no-kill", "L": "licenses", "M": "clusters", "m": "distribution",
    "N": "nodes", "n": "ntasks", "O": "overcommit", "o": "output", "p": "partition", "Q": "quiet", "q": "qos",
    "S": "core-spec", "s": "oversubscribe", "t": "time", "u": "usage", "V": "version", "v": "verbose",
    "W": "wait", "w": "nodelist", "x": "exclude",
}
MAGIC = ("#SBATCH", "#SLURM")
HETJOB_WORDS = ("hetjob", "packjob")
MEMORY_OPTIONS = ("mem", "mem-per-cpu", "mem-per-gpu")
MB = 2**20


def line_words(text: str, lineno: int) -> list[str]:
    """The words of one directive (after the magic word), split as Slurm splits them."""
    words, cur, have = [], [], False
    quote = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and i + 1 < n:
                cur.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            else:
                cur.append(ch)
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            cur.append(text[i + 1])
            have = True
            i += 2
            continue
        if ch in "\"'":
            quote, have = ch, True
        elif ch == "#":
            break
        elif ch.isspace():
            if have:
                words.append("".join(cur))
                cur, have = [], False
        else:
            if ch == ":" and not have:
                raise ScriptError(f"unexpected ':' in {text.strip()!r} (Slurm stops here)", lineno)
            cur.append(ch)
            have = True
        i += 1
    if quote:
        raise ScriptError(f"unterminated {quote} quote", lineno)
    if have:
        words.append("".join(cur))
    return words


def read_directives(text: str) -> tuple[list[tuple[str, int]], list[tuple[int, str]], list[tuple[int, str]], bool]:
    """``(words with their line, ignored directives, command lines, heterogeneous)`` of a job script.

    Words come from the directive lines before the first command, up to a ``hetjob`` separator.
    """
    words: list[tuple[str, int]] = []
    ignored: list[tuple[int, str]] = []
    commands: list[tuple[int, str]] = []
    in_header, het = True, False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        magic = next((m for m in MAGIC if raw.startswith(m)), None)
        if magic is None:
            stripped = raw.strip()
            if stripped and not stripped.startswith("#"):
                in_header = False
                commands.append((lineno, stripped))
            continue
        if not in_header:
            ignored.append((lineno, raw.strip()))
            continue
        if het:
            continue
        found = line_words(raw[len(magic):], lineno)
        if any(w.lower() in HETJOB_WORDS for w in found):
            het = True
            found = found[: next(i for i, w in enumerate(found) if w.lower() in HETJOB_WORDS)]
        words.extend((w, lineno) for w in found)
    return words, ignored, commands, het


def _long(name: str, lineno: int | None, cli: bool) -> str:
    if name in OPTIONS:
        return name
    hits = [o for o in OPTIONS if o.startswith(name)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise ScriptError(f"option '--{name}' is ambiguous (could be --{', --'.join(sorted(hits))})", lineno, cli=cli)
    raise ScriptError(f"unrecognized option '--{name}'", lineno, cli=cli)


def parse_options(words: list[tuple[str, int | None]], *, cli: bool = False) -> list[tuple[str, str | None, int | None]]:
    """``getopt_long`` over the words: ``(long name, value or None, line of the option)`` in order."""
    out = []
    i = 0
    while i < len(words):
        w, ln = words[i]
        if w == "--" or not w.startswith("-") or w == "-":
            what = "the job script is given on its own" if cli else "Slurm takes only options here"
            raise ScriptError(f"{w!r} is not an option ({what})", ln, cli=cli)
        if w.startswith("--"):
            name, eq, val = w[2:].partition("=")
            name = _long(name, ln, cli)
            kind = OPTIONS[name]
            if kind == "none":
                if eq:
                    raise ScriptError(f"option '--{name}' doesn't allow an argument", ln, cli=cli)
                out.append((name, None, ln))
            elif kind == "optional":
                out.append((name, val if eq else None, ln))
            elif eq:
                out.append((name, val, ln))
            elif i + 1 < len(words):
                i += 1
                out.append((name, words[i][0], words[i][1]))
            else:
                raise ScriptError(f"option '--{name}' requires an argument", ln, cli=cli)
            i += 1
            continue
        j = 1
        while j < len(w):
            letter = w[j]
            if letter not in SHORT:
                raise ScriptError(f"invalid option -- '{letter}'", ln, cli=cli)
            name = SHORT[letter]
            kind = OPTIONS[name]
            rest = w[j + 1:]
            if kind == "none":
                out.append((name, None, ln))
                j += 1
                continue
            if rest:
                out.append((name, rest, ln))
            elif kind == "optional":
                out.append((name, None, ln))
            elif i + 1 < len(words):
                i += 1
                out.append((name, words[i][0], words[i][1]))
            else:
                raise ScriptError(f"option requires an argument -- '{letter}'", ln, cli=cli)
            break
        i += 1
    return out


# ---- values ------------------------------------------------------------------------------------------------

_TIME_FORMS = "minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes or days-hours:minutes:seconds"


def parse_time_limit(value: str, line: int | None = None, *, cli: bool = False) -> float | None:
    """Slurm's ``--time`` in seconds, rounded up to the minute as Slurm does; ``None`` for no limit."""
    v = value.strip()
    if v.upper() in ("-1", "INFINITE", "UNLIMITED"):
        return None
    m = re.fullmatch(r"(\d+)-(\d*)(?::(\d+))?(?::(\d+))?", v)
    if m and (m.group(2) or not m.group(3)):
        d, h, mi, s = (int(x) if x else 0 for x in m.groups())
        secs = d * 86400 + h * 3600 + mi * 60 + s
    else:
        m = re.fullmatch(r"(\d+)(?::(\d+))?(?::(\d+))?", v)
        if not m:
            raise ScriptError(f"invalid time limit {value!r} (Slurm takes {_TIME_FORMS})", line, cli=cli)
        a, b, c = (int(x) if x is not None else None for x in m.groups())
        secs = a * 3600 + b * 60 + c if c is not None else a * 60 + (b or 0)
    minutes = math.ceil(secs / 60)
    return None if minutes == 0 else float(minutes * 60)


def parse_memory_mb(value: str, option: str, line: int | None = None, *, cli: bool = False) -> int:
    """Slurm memory sizes in MB: a whole number, then optionally K, M, G or T (and B); K rounds up."""
    m = re.fullmatch(r"(\d+)(?:([KMGTkmgt])[Bb]?)?", value.strip())
    if not m:
        raise ScriptError(f"invalid memory size --{option}={value} (Slurm takes a whole number with an optional "
                          "K, M, G or T, megabytes by default: e.g. 4000, 500M, 32G)", line, cli=cli)
    n, unit = int(m.group(1)), (m.group(2) or "M").upper()
    return {"K": -(-n // 1024), "M": n, "G": n * 1024, "T": n * 1024 * 1024}[unit]


def parse_count(value: str, option: str, line: int | None = None, *, cli: bool = False, lowest: int = 1) -> int:
    """A whole number ≥ ``lowest`` (Slurm's numeric options)."""
    v = value.strip()
    if not re.fullmatch(r"\d+", v) or int(v) < lowest:
        raise ScriptError(f"invalid --{option}={value} (Slurm takes a whole number ≥ {lowest})", line, cli=cli)
    return int(v)


def parse_nodes(value: str, line: int | None = None, *, cli: bool = False) -> int:
    """The least node count of ``N``, ``MIN-MAX`` or a size list (``1,2,4``, ``2-8:2``)."""
    sizes = []
    for part in value.strip().split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?(?::(\d+))?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise ScriptError(f"invalid node count --nodes={value} (Slurm takes N, MIN-MAX or a list of sizes)",
                              line, cli=cli)
        sizes.append(int(m.group(1)))
    if min(sizes) < 1:
        raise ScriptError(f"invalid node count --nodes={value} (a job runs on at least one node)", line, cli=cli)
    return min(sizes)


def array_size(value: str, line: int | None = None, *, cli: bool = False) -> int:
    """Tasks of a job array: ``0-15``, ``0,6,16-32``, ``0-15:4``, each optionally ``%LIMIT``."""
    body, pct, limit = value.strip().partition("%")
    indices: set[int] = set()
    ok = bool(body) and (not pct or limit.isdigit())
    for item in body.split(",") if ok else ():
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", item)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))) or (m.group(3) and int(m.group(3)) < 1):
            ok = False
            break
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        indices.update(range(a, b + 1, int(m.group(3) or 1)))
    if not ok:
        raise ScriptError(f"invalid job array specification --array={value} (Slurm takes indices and ranges such as "
                          "0-15, 0,6,16-32, 0-15:4 or 0-15%4)", line, cli=cli)
    return len(indices)


def gpu_list(value: str, option: str, line: int | None = None, *, cli: bool = False) -> tuple[int, str | None]:
    """``[TYPE:]N[,TYPE:N…]`` (``--gpus``, ``--gpus-per-node``, ``--gpus-per-task``) → (total, first type)."""
    total, kind = 0, None
    for part in value.strip().split(","):
        m = re.fullmatch(r"(?:([A-Za-z][\w.-]*):)?(\d+)", part.strip())
        if not m:
            raise ScriptError(f"invalid --{option}={value} (Slurm takes [TYPE:]COUNT, e.g. 2 or a100:2)", line, cli=cli)
        total += int(m.group(2))
        kind = kind or m.group(1)
    return total, kind


def gres_gpus(value: str, option: str, line: int | None = None, *, cli: bool = False) -> tuple[int, str | None]:
    """GPUs in a gres list (``gpu``, ``gpu:2``, ``gpu:a100:2``, ``gres/gpu:a100=2``, ``none``) → (count, type)."""
    total, kind = 0, None
    v = value.strip()
    if v.lower() == "none":
        return 0, None
    for part in v.split(","):
        p = part.strip()
        p = p[5:] if p.startswith("gres/") else p
        p = re.sub(r"\(.*\)$", "", p)  # socket binding hints such as gpu:2(S:0-1)
        m = re.fullmatch(r"([A-Za-z][\w.-]*)(?::([A-Za-z][\w.-]*))?(?:[:=](\d+))?", p)
        if not m:
            raise ScriptError(f"invalid generic resource specification --{option}={value} (Slurm takes "
                              "NAME[:TYPE][:COUNT], e.g. gpu:a100:2)", line, cli=cli)
        if m.group(1) == "gpu":
            total += int(m.group(3)) if m.group(3) else 1
            kind = kind or m.group(2)
        elif m.group(1) == "cpu":
            continue
    return total, kind


def tres_cpus(value: str) -> int | None:
    m = re.search(r"(?:^|,)cpu[:=](\d+)", value)
    return int(m.group(1)) if m else None


# ---- the request -------------------------------------------------------------------------------------------

def _last(opts: list[tuple[str, str | None, int | None]]) -> dict[str, tuple[str | None, int | None]]:
    """The last value (and line) of each option."""
    out: dict[str, tuple[str | None, int | None]] = {}
    for name, val, ln in opts:
        out[name] = (val, ln)
    return out


def _check_memory(given: dict, cli: bool) -> None:
    forms = [k for k in MEMORY_OPTIONS if k in given]
    if len(forms) > 1:
        lines = ", ".join(f"--{k}" + (f" (line {given[k][1]})" if given[k][1] is not None else "") for k in forms)
        raise ScriptError(f"--mem, --mem-per-cpu and --mem-per-gpu are mutually exclusive; this asks for {lines}",
                          given[forms[-1]][1], cli=cli)


def request_from_options(script_opts, cli_opts=()) -> dict[str, tuple[str | None, int | None]]:
    """The options in force: the script's, overridden by the command line's (a memory option on the command
    line replaces the script's memory option, whichever form, as Slurm does)."""
    script, cli = _last(script_opts), _last(cli_opts)
    _check_memory(script, cli=False)
    _check_memory(cli, cli=True)
    if any(k in cli for k in MEMORY_OPTIONS):
        script = {k: v for k, v in script.items() if k not in MEMORY_OPTIONS}
    merged = {**script, **cli}
    if "exclusive" in merged and "oversubscribe" in merged:
        raise ScriptError("--exclusive and --oversubscribe are mutually exclusive", merged["oversubscribe"][1],
                          cli="oversubscribe" in cli)
    return merged


def build_request(given: dict[str, tuple[str | None, int | None]], cli_names=frozenset()) -> JobRequest:
    """A :class:`JobRequest` from the options in force (``cli_names``: those given on the command line)."""
    def arg(name):
        val, ln = given[name]
        return val or "", ln, name in cli_names

    req = JobRequest(scheduler="slurm", lines={k: v[1] for k, v in given.items()})
    for name, attr in (("job-name", "job_name"), ("partition", "partition"), ("account", "account"), ("qos", "qos")):
        if name in given:
            setattr(req, attr, arg(name)[0] or None)
    if "nodes" in given:
        v, ln, c = arg("nodes")
        req.nodes = parse_nodes(v, ln, cli=c)
    tpn = None
    if "ntasks-per-node" in given:
        v, ln, c = arg("ntasks-per-node")
        tpn = parse_count(v, "ntasks-per-node", ln, cli=c)
    if "ntasks" in given:
        v, ln, c = arg("ntasks")
        req.ntasks = parse_count(v, "ntasks", ln, cli=c)
    elif tpn is not None:
        req.ntasks = tpn * req.nodes
    if "cpus-per-task" in given:
        v, ln, c = arg("cpus-per-task")
        req.cpus_per_task = parse_count(v, "cpus-per-task", ln, cli=c)
    if "array" in given:
        v, ln, c = arg("array")
        req.array_tasks, req.array_spec = array_size(v, ln, cli=c), v
    if "time" in given:
        v, ln, c = arg("time")
        req.time_limit_s = parse_time_limit(v, ln, cli=c)
        req.time_unlimited = req.time_limit_s is None
    _gpus(req, given, arg)
    per_task = req.cpus_per_task
    if "cpus-per-gpu" in given and "cpus-per-task" not in given:
        v, ln, c = arg("cpus-per-gpu")
        cpg = parse_count(v, "cpus-per-gpu", ln, cli=c)
        req.cpus = max(cpg * req.gpus, req.ntasks)
    else:
        t = tres_cpus(arg("tres-per-task")[0]) if "tres-per-task" in given else None
        if t is not None and "cpus-per-task" not in given:
            per_task = req.cpus_per_task = t
        req.cpus = req.ntasks * per_task
    if "mincpus" in given:
        v, ln, c = arg("mincpus")
        req.cpus = max(req.cpus, parse_count(v, "mincpus", ln, cli=c) * req.nodes)
    if "exclusive" in given:
        v, ln, c = arg("exclusive")
        if v not in ("", "user", "mcs", "topo"):
            raise ScriptError(f"invalid --exclusive={v} (Slurm takes --exclusive, or =user, =mcs or =topo)", ln, cli=c)
        req.exclusive = True
    _memory(req, given, arg)
    return req


def _gpus(req: JobRequest, given: dict, arg) -> None:
    if "gpus" in given:
        v, ln, c = arg("gpus")
        req.gpus, req.gpu_type = gpu_list(v, "gpus", ln, cli=c)
    elif "gpus-per-node" in given:
        v, ln, c = arg("gpus-per-node")
        n, req.gpu_type = gpu_list(v, "gpus-per-node", ln, cli=c)
        req.gpus = n * req.nodes
    elif "gres" in given:
        v, ln, c = arg("gres")
        n, req.gpu_type = gres_gpus(v, "gres", ln, cli=c)
        req.gpus = n * req.nodes
    elif "gpus-per-task" in given:
        v, ln, c = arg("gpus-per-task")
        n, req.gpu_type = gpu_list(v, "gpus-per-task", ln, cli=c)
        req.gpus = n * req.ntasks
    elif "tres-per-task" in given:
        v, ln, c = arg("tres-per-task")
        n, req.gpu_type = gres_gpus(v, "tres-per-task", ln, cli=c)
        req.gpus = n * req.ntasks
    if "gpus-per-socket" in given and req.gpus == 0:
        v, ln, c = arg("gpus-per-socket")
        n, req.gpu_type = gpu_list(v, "gpus-per-socket", ln, cli=c)
        req.gpus = n * req.nodes
        req.notes.append("--gpus-per-socket read as per node (the number of sockets is not known here)")


def _memory(req: JobRequest, given: dict, arg) -> None:
    form = next((k for k in MEMORY_OPTIONS if k in given), None)
    if form is None:
        return
    v, ln, c = arg(form)
    mb = parse_memory_mb(v, form, ln, cli=c)
    req.mem_form = form
    if form == "mem":
        if mb == 0:
            req.mem_all = True
            return
        req.mem_bytes = float(mb) * MB * req.nodes
    elif form == "mem-per-cpu":
        req.mem_bytes = float(mb) * MB * req.cpus
    else:
        if req.gpus == 0:
            req.notes.append(f"--mem-per-gpu without a GPU request (line {ln}): no memory is asked for")
            return
        req.mem_bytes = float(mb) * MB * req.gpus


def check_script(text: str) -> None:
    """What sbatch refuses before it reads a directive: an empty script, one without ``#!`` on its first line,
    DOS line breaks."""
    if not text:
        raise ScriptError("the script is empty (Slurm refuses it)")
    if not text.strip():
        raise ScriptError("the script holds only whitespace (Slurm refuses it)")
    if not text.startswith("#!"):
        raise ScriptError("the first line must start with #! and the path of an interpreter, e.g. #!/bin/bash "
                          "(Slurm refuses a script without it)", 1)
    if "\r\n" in text:
        first = text[: text.index("\r\n")].count("\n") + 1
        raise ScriptError("DOS line breaks (\\r\\n) where Slurm expects UNIX ones (\\n): convert with dos2unix",
                          first)


def parse_sbatch(text: str, args=()) -> JobRequest:
    """The request of a job script, with ``args`` (sbatch's command-line options, a list of words) overriding
    its directives as Slurm does."""
    check_script(text)
    words, ignored, commands, het = read_directives(text)
    script_opts = parse_options(words)
    cli_opts = parse_options([(a, None) for a in args], cli=True)
    given = request_from_options(script_opts, cli_opts)
    req = build_request(given, frozenset(n for n, _, _ in cli_opts))
    req.ignored, req.commands = ignored, commands
    if ignored:
        first = commands[0][0] if commands else None
        req.notes.append(f"{len(ignored)} #SBATCH line(s) after the first command (line {first}) are ignored, "
                         "as Slurm ignores them: " + ", ".join(str(ln) for ln, _ in ignored))
    if het:
        req.notes.append("heterogeneous job: only its first component is advised")
    return req
