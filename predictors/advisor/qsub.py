"""The qsub grammar the advisor reads: ``#PBS`` directives and command-line options, as PBS Professional / OpenPBS
and Torque read them.

Read, never run: a job script is untrusted text.  What follows the two schedulers' own reading (the qsub(1B)
pages of OpenPBS and Torque, OpenPBS's ``pbs_resources(7B)`` and its script scanner):

- a directive is a line whose first non-blank characters are the prefix ``#PBS`` (``-C PREFIX`` on the command
  line changes it; ``-C`` in a directive is ignored); the rest of the line is qsub's options in command-line
  syntax (words split as a shell splits them; a word that starts with ``#`` begins a comment);
- qsub scans until the first executable line: a line that is not blank, not a directive, and does not start with
  ``#`` (or ``:``); later directives are ignored (kept in :attr:`JobRequest.ignored`);
- options are read as POSIX ``getopt`` reads them (``-l walltime=1:00:00``, ``-lwalltime=1:00:00``, ``-hV``); a
  later option overrides an earlier one; options given on the command line override the script's, resource by
  resource for ``-l``;
- ``-l`` takes ``resource=value[,resource=value…]``; ``select=[N:]chunk[+[N:]chunk…]`` (a chunk is
  ``resource=value[:resource=value…]``, taken N times) and the older ``nodes=N[:ppn=P][:gpus=G][:property…][+…]
  [#excl]``, which PBS converts to chunks of ``ncpus=P`` (``ncpus=X`` or ``cpp=X`` in a node spec multiplies it);
  the two syntaxes may not be mixed (nor ``select`` with a job-wide ``ncpus``), and ``place`` needs ``select``.

Values as PBS decodes them (each error names the line and says what PBS takes): durations ``seconds`` or
``[[hours:]minutes:]seconds[.fraction]`` (a fraction of half a second or more rounds up); sizes an integer with an
optional ``k``, ``m``, ``g``, ``t`` or ``p`` (multiples of 1024) and an optional ``b`` (bytes) or ``w`` (8-byte words),
bytes by default, any case.  Memory is the job's total: the sum over chunks of ``mem`` (which overrides a job-wide
``mem``), else the job-wide ``mem``, else ``pmem`` times the job's processes (MPI processes: ``mpiprocs`` of the
chunks, ``ppn`` of the nodes), else ``vmem`` or ``pvmem`` likewise (noted).  GPUs: ``ngpus`` of the chunks (or
job-wide), ``gpus`` of the Torque node spec per node; Torque's ``procs=N`` is N CPUs and tasks.  ``place=…:excl`` (or ``exclhost``), ``#excl`` after a node
spec, Torque's ``-n`` and ``naccesspolicy=singlejob`` ask for whole nodes.  Arrays: ``-J X-Y[:Z][%N]`` (PBS
Professional, Y above X) and ``-t 1-100,200[%N]`` (Torque).
"""

from __future__ import annotations

import math
import re

from .job_request import JobRequest, ScriptError, count_indices, split_directive

MAGIC = "#PBS"
#: qsub's options (PBS Professional and Torque together) that take a value
VALUED = frozenset("aAbcCdDeFjJklLmMNopPqrRStTuvwW")
#: qsub's options that take none (``-n``: Torque's node-exclusive flag)
FLAGS = frozenset("fGhInVxXz")
WORD_BYTES = 8
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_TIME_FORMS = "seconds, or [[hours:]minutes:]seconds, e.g. 3600 or 01:00:00"
_SIZE_FORMS = "a whole number with an optional kb, mb, gb or tb, bytes by default: e.g. 4gb, 500mb"
_CHUNK_FORMS = "select=[N:]chunk[+[N:]chunk...], a chunk being resource=value[:resource=value...], e.g. 2:ncpus=8:mem=16gb"
_NODE_FORMS = "nodes=N[:ppn=P][:gpus=G][:property...][+...][#excl], e.g. 2:ppn=8"
#: chunk resources holding counts, and sizes
CHUNK_COUNTS = ("ncpus", "mpiprocs", "ompthreads", "ngpus", "naccelerators")
CHUNK_SIZES = ("mem", "vmem")
GPU_TYPE_KEYS = ("gpu_model", "gpu_type", "gputype", "accelerator_model")
PLACE_WORDS = ("free", "pack", "scatter", "vscatter", "excl", "shared", "exclhost")


# ---- directives ----------------------------------------------------------------------------------------------

def _executable(raw: str) -> bool:
    """A line qsub stops scanning at: not blank, not starting with ``#`` (after blanks) or ``:``."""
    if raw.startswith(":"):
        return False
    s = raw.strip()
    return bool(s) and not s.startswith("#")


def read_directives(text: str, prefix: str = MAGIC):
    """``(words with their line, ignored directives, command lines)`` of a job script."""
    words: list[tuple[str, int]] = []
    ignored: list[tuple[int, str]] = []
    commands: list[tuple[int, str]] = []
    in_header = True
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.lstrip()
        if prefix and s.startswith(prefix):
            if in_header:
                words.extend((w, lineno) for w in split_directive(s[len(prefix):], lineno))
            else:
                ignored.append((lineno, raw.strip()))
            continue
        if lineno == 1 and raw.startswith("#!"):
            continue
        if _executable(raw):
            in_header = False
            commands.append((lineno, raw.strip()))
    return words, ignored, commands


def parse_options(words, *, cli: bool = False) -> list[tuple[str, str | None, int | None]]:
    """``getopt`` over the words: ``(letter, value or None, line)`` in order."""
    out = []
    i = 0
    while i < len(words):
        w, ln = words[i]
        if w == "--" or not w.startswith("-") or w == "-":
            what = "the job script is given on its own" if cli else "qsub takes only options here"
            raise ScriptError(f"{w!r} is not an option ({what})", ln, cli=cli)
        j = 1
        while j < len(w):
            letter = w[j]
            if letter in FLAGS:
                out.append((letter, None, ln))
                j += 1
                continue
            if letter not in VALUED:
                raise ScriptError(f"invalid option -- '{letter}' (qsub takes -l resources, -N name, -q queue, "
                                  "-A account, -J or -t array, -W attributes and the like)", ln, cli=cli)
            rest = w[j + 1:]
            if rest:
                out.append((letter, rest, ln))
            elif i + 1 < len(words):
                i += 1
                out.append((letter, words[i][0], words[i][1]))
            else:
                raise ScriptError(f"option requires an argument -- '{letter}'", ln, cli=cli)
            break
        i += 1
    return out


# ---- values --------------------------------------------------------------------------------------------------

def parse_duration(value: str, name: str = "walltime", line: int | None = None, *, cli: bool = False) -> float:
    """A PBS duration in seconds: ``seconds`` or ``[[hours:]minutes:]seconds[.fraction]``, each part any number
    of digits; a fraction of half a second or more rounds up (OpenPBS ``decode_time``)."""
    m = re.fullmatch(r"(\d+)(?::(\d+))?(?::(\d+))?(?:\.(\d*))?", value.strip())
    if not m:
        raise ScriptError(f"invalid {name}={value} (PBS takes {_TIME_FORMS})", line, cli=cli)
    secs = 0
    for part in m.groups()[:3]:
        if part is not None:
            secs = secs * 60 + int(part)
    frac = (m.group(4) or "") + "000"
    return float(secs + (1 if int(frac[:3]) >= 500 else 0))


def parse_size(value: str, name: str = "mem", line: int | None = None, *, cli: bool = False) -> float:
    """A PBS size in bytes: an integer, then optionally ``k``/``m``/``g``/``t``/``p`` (1024 multiples), then
    optionally ``b`` (bytes) or ``w`` (words of 8 bytes); bytes when no unit is written; any case."""
    m = re.fullmatch(r"(\d+)([kmgtp]?)([bw]?)", value.strip(), flags=re.IGNORECASE)
    if not m:
        raise ScriptError(f"invalid {name}={value} (PBS takes {_SIZE_FORMS})", line, cli=cli)
    n = int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    return float(n * (WORD_BYTES if m.group(3).lower() == "w" else 1))


def parse_count(value: str, name: str, line: int | None = None, *, cli: bool = False, lowest: int = 0) -> int:
    v = value.strip()
    if not re.fullmatch(r"\d+", v) or int(v) < lowest:
        raise ScriptError(f"invalid {name}={value} (PBS takes a whole number"
                          + (f" ≥ {lowest})" if lowest else ")"), line, cli=cli)
    return int(v)


def resource_list(value: str, line: int | None, *, cli: bool = False) -> list[tuple[str, str]]:
    """``-l resource[=value][,resource[=value]…]`` → ``[(name, value)]`` (names lower-cased)."""
    out = []
    for item in value.split(","):
        name, eq, val = item.strip().partition("=")
        if not re.fullmatch(r"[A-Za-z_][\w.-]*", name) or (eq and not val):
            raise ScriptError(f"invalid resource list -l {value} (PBS takes resource=value[,resource=value...], "
                              "e.g. walltime=01:00:00,mem=4gb)", line, cli=cli)
        out.append((name.lower(), val))
    return out


def parse_select(value: str, line: int | None, *, cli: bool = False) -> list[dict]:
    """``select=[N:]chunk[+…]`` → one dict per chunk kind: ``n`` (how many), the counts and sizes read, and the
    other resources as written."""
    chunks = []
    for part in value.split("+"):
        items = part.split(":")
        n = 1
        if items and re.fullmatch(r"\d+", items[0]):
            n = int(items.pop(0))
        if n < 1 or not items or any("=" not in it for it in items):
            raise ScriptError(f"invalid select={value} (PBS takes {_CHUNK_FORMS})", line, cli=cli)
        chunk: dict = {"n": n}
        for it in items:
            k, _, v = it.partition("=")
            k = k.strip().lower()
            if not k or not v:
                raise ScriptError(f"invalid select={value} (PBS takes {_CHUNK_FORMS})", line, cli=cli)
            if k in CHUNK_COUNTS:
                chunk[k] = parse_count(v, k, line, cli=cli)
            elif k in CHUNK_SIZES:
                chunk[k] = parse_size(v, k, line, cli=cli)
            else:
                chunk[k] = v
        chunks.append(chunk)
    return chunks


def parse_nodes(value: str, line: int | None, *, cli: bool = False) -> tuple[list[dict], list[str]]:
    """``nodes=…`` → (one dict per node spec: ``n``, ``ppn``, ``cpp``, ``gpus``), the ``#`` suffixes)."""
    head, *suffixes = value.split("#")
    specs = []
    for part in head.split("+"):
        items = [it for it in part.split(":")]
        if not part or any(not it for it in items):
            raise ScriptError(f"invalid nodes={value} (PBS takes {_NODE_FORMS})", line, cli=cli)
        n = 1
        if re.fullmatch(r"\d+", items[0]):
            n = int(items.pop(0))
            if n < 1:
                raise ScriptError(f"invalid nodes={value} (a job runs on at least one node)", line, cli=cli)
        spec = {"n": n, "ppn": 1, "cpp": 1, "gpus": 0}
        for it in items:
            k, eq, v = it.partition("=")
            k = k.lower()
            if k in ("ppn", "gpus", "ncpus", "cpp"):
                if not eq:
                    raise ScriptError(f"invalid nodes={value} ({k} takes a number, e.g. {k}=4)", line, cli=cli)
                spec["cpp" if k == "ncpus" else k] = parse_count(v, k, line, cli=cli, lowest=1 if k == "ppn" else 0)
        specs.append(spec)
    return specs, [s.lower() for s in suffixes]


def array_size(value: str, option: str, line: int | None = None, *, cli: bool = False) -> int:
    """Subjobs of ``-J X-Y[:Z][%N]`` (PBS Professional: Y above X, step at least 1) or ``-t 1-100,200[%N]``
    (Torque: indices and ranges)."""
    body, pct, limit = value.strip().partition("%")
    if pct and not limit.isdigit():
        body = ""
    if option == "J":
        m = re.fullmatch(r"(\d+)-(\d+)(?::(\d+))?", body)
        if m and int(m.group(2)) > int(m.group(1)) and int(m.group(3) or 1) >= 1:
            return len(range(int(m.group(1)), int(m.group(2)) + 1, int(m.group(3) or 1)))
        raise ScriptError(f"invalid -J {value} (PBS takes X-Y[:Z] with Y above X, e.g. 1-100 or 0-98:2)", line,
                          cli=cli)
    ranges: list[range] = []
    for item in body.split(",") if body else ("",):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise ScriptError(f"invalid -t {value} (Torque takes indices and ranges, e.g. 1-100 or 1,10,50-100, "
                              "optionally %LIMIT)", line, cli=cli)
        ranges.append(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return count_indices(ranges)


def check_name(value: str, line: int | None, *, cli: bool = False) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][!-~]{0,235}", value):
        raise ScriptError(f"invalid job name -N {value!r} (PBS takes up to 236 printable characters without spaces, "
                          "the first a letter or a digit)", line, cli=cli)
    return value


# ---- the request ---------------------------------------------------------------------------------------------

def _gather(opts) -> tuple[dict, dict]:
    """(last value and line of each option but ``-l``, last value and line of each resource)."""
    given: dict[str, tuple[str | None, int | None]] = {}
    res: dict[str, tuple[str, int | None]] = {}
    for letter, val, ln in opts:
        if letter == "l":
            for name, v in resource_list(val or "", ln, cli=ln is None):
                res[name] = (v, ln)
        elif letter != "C" or ln is None:   # -C in a directive is ignored (qsub(1B))
            given[letter] = (val, ln)
    return given, res


def _merge(script_opts, cli_opts) -> tuple[dict, dict, frozenset]:
    """The options and resources in force (the command line's over the script's) and the resources given on
    the command line."""
    sg, sr = _gather(script_opts)
    cg, cr = _gather(cli_opts)
    return {**sg, **cg}, {**sr, **cr}, frozenset(cr)


def _mixed(res: dict, a: str, b: str, why: str) -> None:
    if a in res and b in res:
        where = " and ".join(f"{k} ({'line ' + str(res[k][1]) if res[k][1] is not None else 'command line'})"
                             for k in (a, b))
        raise ScriptError(f"{where}: {why}", res[b][1], cli=res[b][1] is None)


def build_request(given: dict, res: dict) -> JobRequest:
    """A :class:`JobRequest` from the options and resources in force."""
    def arg(name, table=res):
        val, ln = table[name]
        return val or "", ln, ln is None

    req = JobRequest(scheduler="pbs", lines={**{k: v[1] for k, v in given.items()}, **{k: v[1] for k, v in res.items()}},
                     raw={k: v[0] for k, v in res.items()})
    _mixed(res, "select", "nodes", "PBS refuses the old node syntax beside select (use one or the other)")
    _mixed(res, "select", "ncpus", "PBS refuses a job-wide ncpus beside select (put ncpus in the chunks)")
    if "place" in res and "select" not in res:
        raise ScriptError("place needs a select statement (PBS refuses place without select)", res["place"][1],
                          cli=res["place"][1] is None)
    for letter, attr in (("A", "account"),):
        if letter in given:
            setattr(req, attr, given[letter][0] or None)
    if "N" in given:
        v, ln, c = arg("N", given)
        req.job_name = check_name(v, ln, cli=c)
    if "q" in given:
        req.partition = (given["q"][0] or "").partition("@")[0] or None
    for letter in ("J", "t"):
        if letter in given:
            v, ln, c = arg(letter, given)
            req.array_tasks, req.array_spec = array_size(v, letter, ln, cli=c), v
    if "walltime" in res:
        v, ln, c = arg("walltime")
        secs = parse_duration(v, "walltime", ln, cli=c)
        if secs <= 0:
            raise ScriptError(f"walltime={v} asks for no run time at all (give a limit above zero)", ln, cli=c)
        req.time_limit_s = secs
    mem_chunks = _shape(req, res, arg)
    _exclusive(req, given, res, arg)
    _memory(req, res, arg, mem_chunks)
    return req


def _shape(req: JobRequest, res: dict, arg) -> float | None:
    """Nodes, tasks, CPUs and GPUs from ``select``, ``nodes`` or the job-wide counts; the chunks' summed ``mem``
    (None when no chunk names one)."""
    ngpus = None
    for key in ("ngpus", "gpus"):
        if key in res:
            v, ln, c = arg(key)
            ngpus = parse_count(v, key, ln, cli=c)
    if "select" in res:
        v, ln, c = arg("select")
        chunks = parse_select(v, ln, cli=c)
        req.nodes = sum(ch["n"] for ch in chunks)
        req.cpus = sum(ch["n"] * ch.get("ncpus", 1) for ch in chunks)
        req.ntasks = max(1, sum(ch["n"] * ch.get("mpiprocs", 1 if ch.get("ncpus", 1) > 0 else 0) for ch in chunks))
        if any("ncpus" not in ch for ch in chunks):
            req.notes.append(f"a chunk of select (line {ln}) names no ncpus: read as 1 (the usual default_chunk)")
        if any("ngpus" in ch for ch in chunks):
            req.gpus = sum(ch["n"] * ch.get("ngpus", 0) for ch in chunks)
        elif ngpus is not None:
            req.gpus = ngpus
        req.gpu_type = next((str(ch[k]) for ch in chunks for k in GPU_TYPE_KEYS if k in ch), None)
        with_mem = [ch for ch in chunks if "mem" in ch]
        if with_mem and len(with_mem) < len(chunks):
            req.notes.append(f"only some chunks of select (line {ln}) name mem: the others count for none")
        return float(sum(ch["n"] * ch["mem"] for ch in with_mem)) if with_mem else None
    if "nodes" in res:
        v, ln, c = arg("nodes")
        specs, suffixes = parse_nodes(v, ln, cli=c)
        req.nodes = sum(s["n"] for s in specs)
        req.ntasks = sum(s["n"] * s["ppn"] for s in specs)
        req.cpus = sum(s["n"] * s["ppn"] * s["cpp"] for s in specs)
        if "ncpus" in res and all(s["cpp"] == 1 for s in specs):
            v2, ln2, c2 = arg("ncpus")
            req.cpus = max(parse_count(v2, "ncpus", ln2, cli=c2, lowest=1), req.cpus)
        req.gpus = sum(s["n"] * s["gpus"] for s in specs) or (ngpus or 0)
        if "excl" in suffixes:
            req.exclusive = True
        req.cpus_per_task = req.cpus // req.ntasks if req.cpus % req.ntasks == 0 else 1
        return None
    if "ncpus" in res:
        v, ln, c = arg("ncpus")
        req.cpus = parse_count(v, "ncpus", ln, cli=c, lowest=1)
        req.cpus_per_task = req.cpus
    elif "procs" in res:   # Torque: processors anywhere, one process each
        v, ln, c = arg("procs")
        req.cpus = req.ntasks = parse_count(v, "procs", ln, cli=c, lowest=1)
    if ngpus is not None:
        req.gpus = ngpus
    return None


def _exclusive(req: JobRequest, given: dict, res: dict, arg) -> None:
    if "place" in res:
        v, ln, c = arg("place")
        words = v.split(":")
        ok = bool(v) and not v.startswith(":") and all(
            w.lower() in PLACE_WORDS or re.fullmatch(r"group=[\w.-]+", w) for w in words)
        if not ok:
            raise ScriptError(f"invalid place={v} (PBS takes [free|pack|scatter|vscatter][:excl|shared|exclhost]"
                              "[:group=RESOURCE])", ln, cli=c)
        low = [w.lower() for w in words]
        if "excl" in low or "exclhost" in low:
            req.exclusive = True
        if "pack" in low:
            req.nodes = 1
    if "n" in given:
        req.exclusive = True
    if "naccesspolicy" in res and res["naccesspolicy"][0].lower() in ("singlejob", "singleuser"):
        req.exclusive = True
    if req.ntasks and req.cpus and req.cpus % req.ntasks == 0:
        req.cpus_per_task = req.cpus // req.ntasks


def _memory(req: JobRequest, res: dict, arg, mem_chunks: float | None) -> None:
    if mem_chunks is not None:
        req.mem_bytes, req.mem_form = mem_chunks, "select"
        return
    for form, per_process in (("mem", False), ("pmem", True), ("vmem", False), ("pvmem", True)):
        if form not in res:
            continue
        v, ln, c = arg(form)
        size = parse_size(v, form, ln, cli=c)
        req.mem_bytes = size * (req.ntasks if per_process else 1)
        req.mem_form = form
        if per_process:
            req.notes.append(f"{form} (line {ln}) is per process: × {req.ntasks} process"
                             + ("es" if req.ntasks != 1 else ""))
        if form in ("vmem", "pvmem"):
            req.notes.append(f"no mem asked: {form} (virtual memory, line {ln}) read as the memory request")
        return


def check_script(text: str) -> None:
    """What the advisor refuses before reading: an empty script (there is no job to advise on)."""
    if not text.strip():
        raise ScriptError("the script is empty")


def parse_qsub(text: str, args=()) -> JobRequest:
    """The request of a ``#PBS`` job script, with ``args`` (qsub's command-line options, a list of words)
    overriding its directives as qsub does."""
    check_script(text)
    cli_opts = parse_options([(a, None) for a in args], cli=True)
    prefix = next((v for k, v, _ in reversed(cli_opts) if k == "C"), MAGIC)
    words, ignored, commands = read_directives(text, prefix or "")
    given, res, _ = _merge(parse_options(words), cli_opts)
    req = build_request(given, res)
    req.ignored, req.commands = ignored, commands
    if ignored:
        first = commands[0][0] if commands else None
        req.notes.append(f"{len(ignored)} {prefix} line(s) after the first command (line {first}) are ignored, "
                         "as qsub ignores them: " + ", ".join(str(ln) for ln, _ in ignored))
    return req


def chunks_text(select: str, *, ncpus_ratio: float | None = None, ngpus_ratio: float | None = None,
                mem_total: float | None = None, size=None) -> str:
    """``select`` rewritten: ``ncpus`` and ``ngpus`` of each chunk scaled by the ratios (rounded up, at least 1),
    ``mem`` of each chunk set so that the chunks hold ``mem_total`` together (shared in proportion to what each
    chunk held, evenly when none named mem), written with ``size``."""
    parts = select.split("+")
    parsed = []
    for part in parts:
        items = part.split(":")
        n = int(items.pop(0)) if items and items[0].isdigit() else 1
        parsed.append((n, items))
    held = []
    for _n, items in parsed:
        m = next((it.partition("=")[2] for it in items if it.lower().startswith("mem=")), None)
        held.append(parse_size(m) if m is not None else None)
    known = sum(n * h for (n, _), h in zip(parsed, held, strict=True) if h is not None)
    total_n = sum(n for n, _ in parsed)
    out = []
    for (n, items), h in zip(parsed, held, strict=True):
        new = []
        for it in items:
            k, _, v = it.partition("=")
            kl = k.lower()
            if kl == "ncpus" and ncpus_ratio is not None:
                it = f"{k}={max(1, math.ceil(int(v) * ncpus_ratio - 1e-9))}"
            elif kl == "ngpus" and ngpus_ratio is not None:
                it = f"{k}={max(1, math.ceil(int(v) * ngpus_ratio - 1e-9)) if int(v) else 0}"
            elif kl == "mem" and mem_total is not None:
                continue
            new.append(it)
        if mem_total is not None and (h is not None or not known):
            share = (h / known) if known else 1.0 / total_n
            new.append(f"mem={size(mem_total * share)}")
        out.append(":".join([str(n), *new]))
    return "+".join(out)
