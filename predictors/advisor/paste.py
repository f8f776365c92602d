"""The lines to paste: each suggested request in the syntax of the script it came from, at the line it
replaces, with what the change frees.

Slurm: ``#SBATCH --time=…``; memory in the form the script used (``--mem`` per node, ``--mem-per-cpu``,
``--mem-per-gpu``; ``--mem`` when it asked none or ``--mem=0``); CPUs as ``--cpus-per-task`` (as ``--ntasks``
when the job runs several single-CPU tasks); GPUs in the option the script used.  PBS: ``#PBS -l walltime=…``;
CPUs, GPUs and memory in the statement the script used (``select`` rewritten chunk by chunk, ``nodes`` with its
``ppn`` and ``gpus``, or the job-wide ``ncpus``, ``ngpus``, ``mem``, ``pmem`` per process, ``vmem``); ``mem``
when it asked none (in the chunks when it wrote ``select``).  LSF: ``#BSUB -W …`` (minutes, or hours:minutes as
the script wrote it), ``-n``, the ``-gpu`` string with its ``num``, the ``-R`` string with its ``rusage`` ``mem``
(per host, per task or per job as written) and ``-M`` for the whole job, memory with its unit (``GB``, ``MB``).
Kubernetes: the container's ``cpu``, ``memory`` and ``nvidia.com/gpu`` and ``activeDeadlineSeconds``.  A change
is proposed when the suggestion is below what was asked (by 10 % or more for time and memory), or above it for
time and memory.
"""

from __future__ import annotations

import math

from .bsub import with_gpus, with_mem
from .job_request import JobRequest
from .qsub import chunks_text, parse_nodes, parse_select
from .sched_units import (
    GIB,
    duration_words,
    hours_words,
    kube_size,
    lsf_size,
    lsf_time,
    pbs_size,
    pbs_time,
    readable_size,
    readable_text,
    size_bytes,
    slurm_size,
    slurm_time,
)

#: a cut smaller than this share of the request is not worth an edit
MIN_CUT = 0.10
GPU_OPTIONS = ("gpus", "gpus-per-node", "gres", "gpus-per-task", "tres-per-task")


def _worth(asked: float | None, suggested: float, *, allow_raise: bool) -> bool:
    if asked is None:
        return False
    if suggested > asked:
        return allow_raise
    return suggested <= asked * (1 - MIN_CUT) if allow_raise else suggested < asked


def _frees(kind: str, amount: float, tasks: int, run_h: float | None, show=readable_size) -> dict:
    """What a cut frees, per job and over an array, and in resource-hours at the median run time (memory written
    with ``show``)."""
    unit = {"memory": "bytes", "cpus": "CPUs", "gpus": "GPUs", "walltime": "seconds"}[kind]
    out = {"amount": amount, "unit": unit, "tasks": tasks}
    if kind == "walltime":
        out["text"] = f"frees {duration_words(amount)} of the limit: a shorter limit starts sooner in backfill"
        return out
    each = show(amount) if kind == "memory" else f"{amount:g} {unit if amount != 1 else unit[:-1]}"
    text = f"frees {each} per job" + (f" (× {tasks} tasks)" if tasks > 1 else "")
    if run_h is not None and run_h > 0:
        per = {"memory": amount / GIB, "cpus": amount, "gpus": amount}[kind]
        hu = {"memory": "GiB-h", "cpus": "core-h", "gpus": "GPU-h"}[kind]
        hours = per * run_h * tasks
        out["resource_hours"], out["resource_hours_unit"] = round(hours, 1), hu
        text += f", about {hours_words(hours, hu)} at the median run time"
    out["text"] = text
    return out


def _raises(kind: str, asked: float, suggested: float, censored: bool = False, show=readable_size) -> dict:
    words = duration_words(suggested - asked) if kind == "walltime" else show(suggested - asked)
    why = ("similar jobs stopped at their limit, so what they need past it is not known (1.5 times the request)"
           if censored else "what similar jobs needed")
    return {"amount": asked - suggested, "unit": "seconds" if kind == "walltime" else "bytes", "tasks": 1,
            "text": f"raises the request by {words}: {why}"}


def _change(resource, option, line, paste, replaces, frees) -> dict:
    return {"resource": resource, "option": option, "line": line, "paste": paste, "replaces": replaces,
            "frees": frees}


def slurm_changes(req: JobRequest, res: dict, run_h: float | None) -> list[dict]:
    """Lines to paste into an sbatch script."""
    out = []
    tasks = req.array_tasks
    w = res.get("walltime")
    if w and _worth(w["asked"], w["suggested"], allow_raise=True):
        f = _frees("walltime", w["asked"] - w["suggested"], tasks, None) if w["suggested"] < w["asked"] else \
            _raises("walltime", w["asked"], w["suggested"], w.get("censored", False))
        out.append(_change("walltime", "time", req.lines.get("time"), f"#SBATCH --time={slurm_time(w['suggested'])}",
                           f"--time={slurm_time(w['asked'])}", f))
    cpus_after = req.cpus
    c = res.get("cpus")
    if c and c["asked"] is not None and c["suggested"] < c["asked"]:
        if req.ntasks > 1 and req.cpus_per_task == 1:
            paste, option, cpus_after = f"#SBATCH --ntasks={int(c['suggested'])}", "ntasks", int(c["suggested"])
        else:
            per = max(1, math.ceil(c["suggested"] / req.ntasks))
            paste, option, cpus_after = f"#SBATCH --cpus-per-task={per}", "cpus-per-task", per * req.ntasks
        ch = _change("cpus", option, req.lines.get(option), paste, f"{req.cpus} CPUs",
                     _frees("cpus", c["asked"] - cpus_after, tasks, run_h))
        if req.exclusive:
            ch["also"] = f"remove --exclusive (line {req.lines.get('exclusive')})"
        out.append(ch)
    gpus_after = req.gpus
    g = res.get("gpus")
    if g and req.gpus > 0 and g["suggested"] < req.gpus:
        option = next((o for o in GPU_OPTIONS if o in req.lines), "gpus")
        kind = f"{req.gpu_type}:" if req.gpu_type else ""
        per_node = max(1, math.ceil(g["suggested"] / req.nodes))
        per_task = max(1, math.ceil(g["suggested"] / req.ntasks))
        paste, gpus_after = {
            "gpus": (f"#SBATCH --gpus={kind}{int(g['suggested'])}", int(g["suggested"])),
            "gpus-per-node": (f"#SBATCH --gpus-per-node={kind}{per_node}", per_node * req.nodes),
            "gres": (f"#SBATCH --gres=gpu:{kind}{per_node}", per_node * req.nodes),
            "gpus-per-task": (f"#SBATCH --gpus-per-task={kind}{per_task}", per_task * req.ntasks),
            "tres-per-task": (f"#SBATCH --tres-per-task=gres/gpu:{kind}{per_task}", per_task * req.ntasks),
        }[option]
        out.append(_change("gpus", option, req.lines.get(option), paste, f"{req.gpus} GPUs",
                           _frees("gpus", req.gpus - gpus_after, tasks, run_h)))
    m = res.get("memory")
    at_cap = m is not None and m.get("capped_by") and m["asked"] is not None and m["suggested"] >= m["asked"]
    if m and not at_cap and (req.mem_all or req.mem_form is None or _worth(m["asked"], m["suggested"],
                                                                         allow_raise=True)):
        form = req.mem_form if req.mem_form in ("mem-per-cpu", "mem-per-gpu") and not req.mem_all else "mem"
        units = {"mem": req.nodes, "mem-per-cpu": cpus_after or 1, "mem-per-gpu": max(gpus_after, 1)}[form]
        each = slurm_size(m["suggested"] / units)
        total = size_bytes(each) * units
        if m["asked"] is None:
            f = {"amount": None, "unit": "bytes", "tasks": tasks,
                 "text": "sets the memory the job is held to" + (" instead of whole nodes" if req.mem_all else
                                                                 " instead of the site's default")}
        elif total < m["asked"]:
            f = _frees("memory", m["asked"] - total, tasks, run_h)
        else:
            f = _raises("memory", m["asked"], total, m.get("censored", False))
        out.append(_change("memory", form, req.lines.get(req.mem_form or "mem"), f"#SBATCH --{form}={each}",
                           f"--{req.mem_form}" if req.mem_form else None, f))
    return out


def kube_changes(req: JobRequest, res: dict, run_h: float | None) -> list[dict]:
    """Fields to change in a Kubernetes manifest (the container named in ``req.container``)."""
    out = []
    tasks = req.array_tasks
    own = req.container_requests
    w = res.get("walltime")
    if w and (w["asked"] is None or _worth(w["asked"], w["suggested"], allow_raise=True)):
        f = ({"amount": None, "unit": "seconds", "tasks": tasks, "text": "sets a deadline the pod is held to"}
             if w["asked"] is None else _frees("walltime", w["asked"] - w["suggested"], tasks, None)
             if w["suggested"] < w["asked"] else _raises("walltime", w["asked"], w["suggested"], w.get("censored", False)))
        out.append(_change("walltime", "activeDeadlineSeconds", req.lines.get("activeDeadlineSeconds"),
                           f"activeDeadlineSeconds: {int(w['suggested'])}", None, f))
    c = res.get("cpus")
    if c and c["asked"] is not None and c["suggested"] < c["asked"]:
        others = c["asked"] - own.get("cpu", c["asked"])
        mine = max(1, math.ceil(c["suggested"] - others))
        out.append(_change("cpus", "cpu", req.lines.get("cpu"), f'cpu: "{mine}"', f"{own.get('cpu', c['asked']):g}",
                           _frees("cpus", c["asked"] - (mine + others), tasks, run_h)))
    g = res.get("gpus")
    if g and req.gpus > 0 and g["suggested"] < req.gpus:
        n = int(g["suggested"])
        out.append(_change("gpus", "nvidia.com/gpu", req.lines.get("nvidia.com/gpu"), f"nvidia.com/gpu: {n}",
                           f"{req.gpus}", _frees("gpus", req.gpus - n, tasks, run_h)))
    m = res.get("memory")
    if m and (m["asked"] is None or _worth(m["asked"], m["suggested"], allow_raise=True)):
        others = (m["asked"] or 0.0) - own.get("memory", m["asked"] or 0.0)
        mine = kube_size(max(m["suggested"] - others, 2**20))
        total = size_bytes(mine) + others
        f = ({"amount": None, "unit": "bytes", "tasks": tasks, "text": "sets the memory the container is held to"}
             if m["asked"] is None else _frees("memory", m["asked"] - total, tasks, run_h)
             if total < m["asked"] else _raises("memory", m["asked"], total, m.get("censored", False)))
        out.append(_change("memory", "memory", req.lines.get("memory"), f"memory: {mine}", None, f))
    return out


def _memory_wanted(req: JobRequest, m: dict | None) -> bool:
    """Whether the memory line is worth an edit: asked none, a cut of 10 % or more, or a raise (not when the
    suggestion is already held at what the nodes allow)."""
    if not m:
        return False
    at_cap = m.get("capped_by") and m["asked"] is not None and m["suggested"] >= m["asked"]
    return not at_cap and (req.mem_all or req.mem_form is None or _worth(m["asked"], m["suggested"], allow_raise=True))


def _memory_frees(m: dict, total: float, tasks: int, run_h: float | None, show) -> dict:
    if m["asked"] is None:
        return {"amount": None, "unit": "bytes", "tasks": tasks,
                "text": "sets the memory the job is held to instead of the site's default"}
    if total < m["asked"]:
        return _frees("memory", m["asked"] - total, tasks, run_h, show)
    return _raises("memory", m["asked"], total, m.get("censored", False), show)


def _time_change(req: JobRequest, w: dict | None, option: str, paste, replaces) -> dict | None:
    if not w or not _worth(w["asked"], w["suggested"], allow_raise=True):
        return None
    f = _frees("walltime", w["asked"] - w["suggested"], req.array_tasks, None) if w["suggested"] < w["asked"] else \
        _raises("walltime", w["asked"], w["suggested"], w.get("censored", False))
    return _change("walltime", option, req.lines.get(option), paste(w["suggested"]), replaces(w["asked"]), f)


def _nodes_text(nodes: str, ppn_ratio: float | None, gpus_ratio: float | None) -> str:
    """A Torque node spec with ``ppn`` and ``gpus`` of each part scaled (rounded up, at least 1)."""
    head, sep, suffix = nodes.partition("#")
    parts = []
    for part in head.split("+"):
        items = []
        for it in part.split(":"):
            k, eq, v = it.partition("=")
            ratio = {"ppn": ppn_ratio, "gpus": gpus_ratio}.get(k.lower())
            if eq and ratio is not None and v.isdigit() and int(v):
                it = f"{k}={max(1, math.ceil(int(v) * ratio - 1e-9))}"
            items.append(it)
        parts.append(":".join(items))
    return "+".join(parts) + sep + suffix


def pbs_changes(req: JobRequest, res: dict, run_h: float | None) -> list[dict]:
    """Lines to paste into a ``#PBS`` script.  ``select`` (and ``nodes``) carry CPUs, GPUs and memory together:
    every change made there pastes the one statement holding all of them."""
    out = []
    tasks = req.array_tasks
    raw = req.raw
    show = readable_text("pbs")
    shape = "select" if "select" in raw else "nodes" if "nodes" in raw else None
    t = _time_change(req, res.get("walltime"), "walltime", lambda s: f"#PBS -l walltime={pbs_time(s)}",
                     lambda s: f"walltime={pbs_time(s)}")
    if t:
        out.append(t)
    ratios: dict[str, float] = {}
    in_shape: list[dict] = []
    cpus_after, gpus_after, tasks_after = req.cpus, req.gpus, req.ntasks
    c = res.get("cpus")
    if c and c["asked"] is not None and c["suggested"] < c["asked"]:
        # scaled against the CPUs the statement itself names (an exclusive job was asked the whole nodes' CPUs)
        if shape == "select":
            chunks = parse_select(raw["select"], None)
            own = sum(ch["n"] * ch.get("ncpus", 1) for ch in chunks)
            ratios["cpus"] = min(1.0, c["suggested"] / own)
            cpus_after = sum(ch["n"] * max(1, math.ceil(ch.get("ncpus", 1) * ratios["cpus"] - 1e-9))
                             for ch in chunks)
        elif shape == "nodes":
            specs, _ = parse_nodes(raw["nodes"], None)
            own = sum(s["n"] * s["ppn"] * s["cpp"] for s in specs)
            ratios["cpus"] = min(1.0, c["suggested"] / own)
            specs, _ = parse_nodes(_nodes_text(raw["nodes"], ratios["cpus"], None), None)
            cpus_after = sum(s["n"] * s["ppn"] * s["cpp"] for s in specs)
            tasks_after = sum(s["n"] * s["ppn"] for s in specs)
        else:
            cpus_after = int(c["suggested"])
        option = shape or "ncpus"
        ch = _change("cpus", option, req.lines.get(option), f"#PBS -l ncpus={cpus_after}", f"{req.cpus} CPUs",
                     _frees("cpus", c["asked"] - cpus_after, tasks, run_h))
        if req.exclusive:
            where = next((k for k in ("place", "nodes", "n", "naccesspolicy") if k in req.lines), None)
            ch["also"] = "ask for shared nodes" + (f" (line {req.lines[where]})" if where and req.lines[where] else "")
        out.append(ch)
        if shape:
            in_shape.append(ch)
    g = res.get("gpus")
    if g and req.gpus > 0 and g["suggested"] < req.gpus:
        ratios["gpus"] = g["suggested"] / req.gpus
        if shape == "select":
            chunks = parse_select(raw["select"], None)
            gpus_after = sum(ch["n"] * (max(1, math.ceil(ch.get("ngpus", 0) * ratios["gpus"] - 1e-9))
                                        if ch.get("ngpus") else 0) for ch in chunks) or int(g["suggested"])
        elif shape == "nodes" and "gpus=" in raw["nodes"].lower():
            specs, _ = parse_nodes(_nodes_text(raw["nodes"], None, ratios["gpus"]), None)
            gpus_after = sum(s["n"] * s["gpus"] for s in specs)
        else:
            gpus_after = int(g["suggested"])
        option = shape if shape == "select" and "ngpus=" in raw["select"].lower() or shape == "nodes" and \
            "gpus=" in raw["nodes"].lower() else "ngpus"
        ch = _change("gpus", option, req.lines.get(option), f"#PBS -l ngpus={gpus_after}", f"{req.gpus} GPUs",
                     _frees("gpus", req.gpus - gpus_after, tasks, run_h))
        out.append(ch)
        if option == shape:
            in_shape.append(ch)
    m = res.get("memory")
    mem_total = None
    if _memory_wanted(req, m):
        form = req.mem_form or ("select" if shape == "select" else "mem")
        if form == "select":
            mem_total = m["suggested"]
            new = chunks_text(raw["select"], mem_total=mem_total, size=pbs_size)
            total = sum(ch["n"] * ch.get("mem", 0.0) for ch in parse_select(new, None))
            ch = _change("memory", "select", req.lines.get("select"), "", f"select={raw['select']}" if req.mem_form
                         else None, _memory_frees(m, total, tasks, run_h, show))
            in_shape.append(ch)
        else:
            units = tasks_after if form in ("pmem", "pvmem") else 1
            each = pbs_size(m["suggested"] / max(units, 1))
            total = size_bytes(each) * max(units, 1)
            ch = _change("memory", form, req.lines.get(form), f"#PBS -l {form}={each}",
                         f"{form}={raw[form]}" if form in raw else None, _memory_frees(m, total, tasks, run_h, show))
        out.append(ch)
    if in_shape:
        if shape == "select":
            text = chunks_text(raw["select"], ncpus_ratio=ratios.get("cpus"), ngpus_ratio=ratios.get("gpus"),
                               mem_total=mem_total, size=pbs_size)
        else:
            text = _nodes_text(raw["nodes"], ratios.get("cpus"), ratios.get("gpus"))
        for ch in in_shape:
            ch["paste"] = f"#PBS -l {shape}={text}"
    return out


def lsf_changes(req: JobRequest, res: dict, run_h: float | None) -> list[dict]:
    """Lines to paste into a ``#BSUB`` script."""
    out = []
    tasks = req.array_tasks
    raw = req.raw
    show = readable_text("lsf")
    form = raw.get("W_form", "hm")
    t = _time_change(req, res.get("walltime"), "W", lambda s: f"#BSUB -W {lsf_time(s, form)}",
                     lambda s: f"-W {lsf_time(s, form)}")
    if t:
        out.append(t)
    ntasks_after = req.ntasks
    c = res.get("cpus")
    if c and c["asked"] is not None and c["suggested"] < c["asked"]:
        ntasks_after = int(c["suggested"])
        ch = _change("cpus", "n", req.lines.get("n"), f"#BSUB -n {ntasks_after}", f"{req.cpus} CPUs",
                     _frees("cpus", c["asked"] - ntasks_after, tasks, run_h))
        if req.exclusive:
            ch["also"] = f"remove -x (line {req.lines.get('x')})" if req.lines.get("x") else "remove -x"
        out.append(ch)
    hosts_after = math.ceil(ntasks_after / int(raw["ptile"])) if "ptile" in raw else req.nodes
    g = res.get("gpus")
    if g and req.gpus > 0 and g["suggested"] < req.gpus and "gpu" in raw:
        units = ntasks_after if raw.get("gpu_per") == "task" else hosts_after
        num = max(1, math.ceil(g["suggested"] / max(units, 1) - 1e-9))
        out.append(_change("gpus", "gpu", req.lines.get("gpu"), f'#BSUB -gpu "{with_gpus(raw["gpu"], num)}"',
                           f"{req.gpus} GPUs", _frees("gpus", req.gpus - num * units, tasks, run_h)))
    m = res.get("memory")
    if _memory_wanted(req, m):
        total = m["suggested"]
        if req.mem_form in ("rusage", None):
            per = raw.get("mem_per", "host")
            units = max({"task": ntasks_after, "job": 1}.get(per, hosts_after), 1)
            each = lsf_size(total / units)
            paste = f'#BSUB -R "{with_mem(raw["R"], each)}"' if "R" in raw else f'#BSUB -R "rusage[mem={each}]"'
            total = size_bytes(each) * units
            out.append(_change("memory", "rusage", req.lines.get("rusage"), paste,
                               f"rusage[mem] ({per})" if req.mem_form else None,
                               _memory_frees(m, total, tasks, run_h, show)))
        if req.mem_form == "M" or "M" in req.lines:
            limit = lsf_size(total)
            f = _memory_frees(m, size_bytes(limit), tasks, run_h, show) if req.mem_form == "M" else \
                {"amount": None, "unit": "bytes", "tasks": tasks,
                 "text": f"keeps the limit in step with the reservation ({show(size_bytes(limit))})"}
            out.append(_change("memory", "M", req.lines.get("M"), f"#BSUB -M {limit}{raw.get('M_hard', '')}", "-M",
                               f))
    return out
