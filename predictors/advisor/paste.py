"""The lines to paste: each suggested request in the syntax of the script it came from, at the line it
replaces, with what the change frees.

Slurm: ``#SBATCH --time=…``; memory in the form the script used (``--mem`` per node, ``--mem-per-cpu``,
``--mem-per-gpu``; ``--mem`` when it asked none or ``--mem=0``); CPUs as ``--cpus-per-task`` (as ``--ntasks``
when the job runs several single-CPU tasks); GPUs in the option the script used.  Kubernetes: the container's
``cpu``, ``memory`` and ``nvidia.com/gpu`` and ``activeDeadlineSeconds``.  A change is proposed when the
suggestion is below what was asked (by 10 % or more for time and memory), or above it for time and memory.
"""

from __future__ import annotations

import math

from .job_request import JobRequest
from .sched_units import (
    GIB,
    duration_words,
    hours_words,
    kube_size,
    readable_size,
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


def _frees(kind: str, amount: float, tasks: int, run_h: float | None) -> dict:
    """What a cut frees, per job and over an array, and in resource-hours at the median run time."""
    unit = {"memory": "bytes", "cpus": "CPUs", "gpus": "GPUs", "walltime": "seconds"}[kind]
    out = {"amount": amount, "unit": unit, "tasks": tasks}
    if kind == "walltime":
        out["text"] = f"frees {duration_words(amount)} of the limit: a shorter limit starts sooner in backfill"
        return out
    each = readable_size(amount) if kind == "memory" else f"{amount:g} {unit if amount != 1 else unit[:-1]}"
    text = f"frees {each} per job" + (f" (× {tasks} tasks)" if tasks > 1 else "")
    if run_h is not None and run_h > 0:
        per = {"memory": amount / GIB, "cpus": amount, "gpus": amount}[kind]
        hu = {"memory": "GiB-h", "cpus": "core-h", "gpus": "GPU-h"}[kind]
        hours = per * run_h * tasks
        out["resource_hours"], out["resource_hours_unit"] = round(hours, 1), hu
        text += f", about {hours_words(hours, hu)} at the median run time"
    out["text"] = text
    return out


def _raises(kind: str, asked: float, suggested: float, censored: bool = False) -> dict:
    words = duration_words(suggested - asked) if kind == "walltime" else readable_size(suggested - asked)
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
