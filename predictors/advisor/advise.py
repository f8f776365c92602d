"""Submit-time advice for one job: what it asked, its calibrated p50/p90/p99 need, the request to suggest in the
scheduler's syntax, the risk of what it asked, the lines to paste, warnings, and what the prediction rests on.

:func:`advise` takes a :class:`JobRequest` (``read_job`` reads a job script, ``#SBATCH``, ``#PBS`` or ``#BSUB``,
or a Kubernetes manifest) and a fitted :class:`AdvisorModel`; it returns one JSON-ready dict (``docs/advisor.md``
describes every key).  The job is submitted, for the model, one second after the history's last job ended.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from audit.families import job_family

from .job_request import JobRequest, ScriptError, job_row
from .launch import launch_facts
from .model import AdvisorModel
from .paste import kube_changes, lsf_changes, pbs_changes, slurm_changes
from .preflight import blocking, preflight
from .sched_units import (
    EXCLUSIVE_OPTION,
    MEM_OPTION,
    TIME_OPTION,
    duration_words,
    kube_size,
    odds_words,
    readable_size,
    readable_text,
    round_time,
    size_bytes,
    size_text,
    slurm_size,
    time_text,
    whole,
)

UNITS = {"walltime": "seconds", "memory": "bytes", "cpus": "CPUs", "gpus": "GPUs", "gpu_memory": "bytes"}
LABELS = {"walltime": "time", "memory": "memory", "cpus": "CPUs", "gpus": "GPUs", "gpu_memory": "GPU memory"}
GPU_TARGETS = ("gpus", "gpu_memory")
#: similar past jobs below which a group says little
FEW = 5
#: past jobs asking nothing for a target (no time limit, no memory) below which a job asking nothing is not predicted
MIN_UNASKED = 50
UNASKED = {"walltime": "no time limit", "memory": "no memory", "cpus": "no CPUs", "gpus": "no GPUs",
           "gpu_memory": "GPUs of no known type, so no known card memory"}
#: the directive prefix of each scheduler's job scripts
PREFIXES = {"slurm": "#SBATCH", "pbs": "#PBS", "lsf": "#BSUB"}
CHANGES = {"slurm": slurm_changes, "pbs": pbs_changes, "lsf": lsf_changes, "kubernetes": kube_changes}


def script_scheduler(text: str) -> str:
    """The scheduler whose directives a job script holds: ``#SBATCH`` (or ``#SLURM``) and ``#BSUB`` at the start
    of a line, ``#PBS`` after any blanks (as qsub reads it); Slurm when there are none.  Directives of two
    schedulers are an error naming both."""
    first: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if raw.startswith(("#SBATCH", "#SLURM")):
            first.setdefault("slurm", lineno)
        elif raw.startswith("#BSUB"):
            first.setdefault("lsf", lineno)
        elif raw.lstrip().startswith("#PBS"):
            first.setdefault("pbs", lineno)
    if len(first) > 1:
        (a, la), (b, lb) = sorted(first.items(), key=lambda kv: kv[1])[:2]
        raise ScriptError(f"{PREFIXES[a]} (line {la}) and {PREFIXES[b]} (line {lb}) directives in one script: "
                          "a job script is submitted to one scheduler; keep that scheduler's directives", lb)
    return next(iter(first), "slurm")


def read_job(text: str, args=(), *, origin: str | None = None, lsf_unit: str = "MB") -> JobRequest:
    """A job script (``#SBATCH``, ``#PBS`` or ``#BSUB``, told apart by their directives) or a Kubernetes manifest
    (YAML or JSON); ``args`` are that scheduler's submit options (sbatch, qsub, bsub); ``lsf_unit`` is the LSF
    cluster's ``LSF_UNIT_FOR_LIMITS`` (the unit of an ``-M`` figure written without one)."""
    from .bsub import parse_bsub
    from .kube import parse_manifest
    from .qsub import parse_qsub
    from .sbatch import parse_sbatch

    head = text.lstrip()
    manifest = head.startswith(("{", "apiVersion:", "kind:", "---")) or (
        not head.startswith("#!") and any(line.startswith(("apiVersion:", "kind:")) for line in text.splitlines()))
    try:
        if manifest:
            if args:
                raise ScriptError("submit options cannot be applied to a Kubernetes manifest", cli=True)
            return parse_manifest(text)
        scheduler = script_scheduler(text)
        if scheduler == "pbs":
            return parse_qsub(text, list(args))
        if scheduler == "lsf":
            return parse_bsub(text, list(args), unit_for_limits=lsf_unit)
        return parse_sbatch(text, list(args))
    except ScriptError as exc:
        raise (exc.named(origin) if origin else exc) from None


def fill_from_shape(req: JobRequest, shape) -> None:
    """``--exclusive`` and ``--mem=0`` ask for whole nodes: their size from the cluster shape, when known."""
    if shape is None or not (req.exclusive or req.mem_all) or not getattr(shape, "groups", ()):
        return
    part = next((p for p in shape.partitions if p.name == req.partition), None) or \
        next((p for p in shape.partitions if p.default), None)
    names = part.groups if part is not None else tuple(g.name for g in shape.groups)
    group = next((g for g in shape.groups if g.name in names), None)
    if group is None:
        return
    if req.exclusive and group.cpus:
        req.cpus = max(req.cpus or 0, group.cpus * req.nodes)
        req.notes.append(f"{EXCLUSIVE_OPTION.get(req.scheduler, '--exclusive')}: {group.cpus} CPUs a node "
                         f"({group.name} nodes)")
    if req.mem_all and group.mem_bytes:
        req.mem_bytes = float(group.mem_bytes) * req.nodes
        req.notes.append(f"--mem=0: {readable_size(group.mem_bytes)} a node ({group.name} nodes)")


def _groups_of(shape, partition: str | None) -> list:
    part = next((p for p in shape.partitions if p.name == partition), None) or \
        next((p for p in shape.partitions if p.default), None)
    names = part.groups if part is not None else tuple(g.name for g in shape.groups)
    return [g for g in shape.groups if g.name in names]


def shape_limits(req: JobRequest, shape) -> dict:
    """The most a suggestion can ask on the job's partition, from the cluster shape (none when it is not known):
    ``{"memory": (bytes, why), "walltime": (seconds, why)}``, each ``why`` a phrase naming the limit and
    where a job needing more could go."""
    if shape is None or not getattr(shape, "groups", ()):
        return {}
    out = {}
    groups = _groups_of(shape, req.partition)
    part = next((p for p in shape.partitions if p.name == req.partition), None) or \
        next((p for p in shape.partitions if p.default), None)
    word = "queue" if req.scheduler in ("pbs", "lsf") else "partition"
    show = readable_text(req.scheduler)
    mems = [g.mem_bytes for g in groups if g.mem_bytes]
    if mems:
        per = float(max(mems))
        nodes = 1 if req.scheduler == "kubernetes" else req.nodes
        where = f"{word} {part.name}" if part is not None else "the cluster"
        bigger = [(max(g.mem_bytes for g in _groups_of(shape, p.name)), p.name) for p in shape.partitions
                  if _groups_of(shape, p.name) and max(g.mem_bytes for g in _groups_of(shape, p.name)) > per]
        hint = (f"ask a {word} with larger nodes ({max(bigger)[1]}: {show(max(bigger)[0])} a node) "
                "or split the work" if bigger else "split the work over more nodes or tasks")
        out["memory"] = (per * nodes, f"the nodes of {where} hold {show(per)} at most, so {hint}")
    if part is not None and part.max_time_s:
        out["walltime"] = (float(part.max_time_s),
                           f"{word} {part.name} allows at most {time_text(req.scheduler)(part.max_time_s)}, so "
                           "checkpoint and resubmit, or split the work")
    return out


def asked(req: JobRequest, target: str, job: pd.DataFrame) -> float | None:
    """What the job asked for ``target``, in its unit."""
    from ..features import request

    v = float(request(job, target)[0])
    return v if math.isfinite(v) else None


def _texts(target: str, req: JobRequest) -> tuple:
    """(readable figure, figure to paste) for one target, in the scheduler's units."""
    kube = req.scheduler == "kubernetes"
    if target == "walltime":
        show = time_text(req.scheduler)
        return (show, (lambda s: f"{int(s)} s") if kube else show)
    if target in ("memory", "gpu_memory"):
        return (readable_text(req.scheduler), size_text(req.scheduler))
    return (lambda x: str(whole(x)), lambda x: str(whole(x)))


def _suggest(target: str, q: float, req: JobRequest) -> float:
    """The request to suggest, rounded up as the scheduler takes it."""
    if target == "walltime":
        return round_time(q)
    if target == "memory":
        nodes = 1 if req.scheduler == "kubernetes" else req.nodes
        per = (kube_size if req.scheduler == "kubernetes" else slurm_size)(q / nodes)
        return size_bytes(per) * nodes
    if target == "cpus":
        return float(min(whole(q), req.cpus)) if req.cpus else float(whole(q))
    if target == "gpus":
        return float(min(whole(q), req.gpus)) if req.gpus else float(whole(q))
    return q


def _risk_words(target: str, r: float, bound: str, asked_text: str, asked_words: str, level: float,
                scheduler: str) -> str:
    odds = odds_words(r, bound)
    high = r > 1 - level
    if target == "walltime":
        return f"{odds} similar jobs ran past {asked_words}" + (
            f": raise {TIME_OPTION.get(scheduler, '--time')} or checkpoint" if high else "")
    if target == "memory":
        return f"{odds} similar jobs needed all of the {asked_text} asked" + (
            f": they are killed out of memory; raise {MEM_OPTION.get(scheduler, '--mem')}" if high else "")
    if target == "gpu_memory":
        return f"{odds} similar jobs filled the {asked_text} of GPU memory of the cards asked"
    what = "CPUs" if target == "cpus" else "GPUs"
    one = asked_text == "1"
    return (f"{odds} similar jobs kept {'the' if one else 'all'} {asked_text} {what[:-1] if one else what} busy"
            + (": they would run slower" if high and not one else ""))


#: when jobs reach the limit asked, their recorded need stops there (killed, or using all of it): the advice
#: cannot tell how much more they need, and suggests this much more than was asked
CENSORED_RAISE = 1.5


def resource_advice(model: AdvisorModel, target: str, job: pd.DataFrame, req: JobRequest, level: float,
                    limits: dict | None = None) -> dict:
    """One target's advice; ``limits`` (:func:`shape_limits`) caps the suggestion at what the nodes hold."""
    t = model.targets_[target]
    curve = t.curve(job)
    show, paste = _texts(target, req)
    q = {lv: t.quantile(curve, lv) for lv in (0.5, 0.9, 0.99, level)}
    a = asked(req, target, job)
    r, bound = t.risk(curve, a) if a is not None else (None, None)
    sug = _suggest(target, q[level], req)
    # the need at the level within 10 % of the request (before rounding up): the jobs stopped at their limit
    censored = (target in ("walltime", "memory") and r is not None and r > 1 - level and q[level] < a * 1.1)
    if censored:
        sug = _suggest(target, CENSORED_RAISE * a, req)
    cap, capped_by = (limits or {}).get(target, (None, None))
    if cap is not None and sug > cap:
        sug = cap
    else:
        capped_by = None
    out = {"unit": UNITS[target], "asked": a, "p50": q[0.5], "p90": q[0.9], "p99": q[0.99], "suggested_raw": q[level],
           "suggested": None if target == "gpu_memory" else sug, "censored": censored, "capped_by": capped_by,
           "asked_text": None if a is None else (str(req.cpus) if target == "cpus" else show(a)),
           "p50_text": show(q[0.5]), "p90_text": show(q[0.9]), "p99_text": show(q[0.99]),
           "suggested_text": None if target == "gpu_memory" else paste(sug),
           "asked_risk": r, "asked_risk_bound": bound, "asked_risk_words": None,
           "trained_on": t.n_train, "calibrated_on": t.n_calibration}
    if target == "walltime":
        out["asked_words"] = duration_words(a) if a is not None else None
    if a is not None:
        words = _risk_words(target, r, bound, out["asked_text"], out.get("asked_words") or "", level,
                            req.scheduler)
        if capped_by and sug <= a and r > 1 - level:  # no more to ask here: say where else to go
            words = words.split(":")[0] + f": {capped_by}"
        out["asked_risk_words"] = words
    return out


def _same_shape(rows: pd.DataFrame, job: pd.DataFrame) -> np.ndarray:
    from ..features import SHAPE_KEY, shape_frame

    a, b = shape_frame(rows), shape_frame(job).iloc[0]
    hit = np.ones(len(rows), dtype=bool)
    for c in SHAPE_KEY:
        v = a[c].to_numpy(dtype=np.float64)
        w = float(b[c])
        hit &= (np.isnan(v) & np.isnan(w)) | (v == w)
    return hit


def evidence(model: AdvisorModel, job: pd.DataFrame, user: str | None, family: str) -> tuple[dict, pd.DataFrame,
                                                                                               pd.DataFrame]:
    """(counts and what the prediction rests on, the user's similar jobs, all the user's jobs)."""
    rows = model.user_history(user)
    rows = rows[rows["end_time"].notna()] if len(rows) else rows
    fam = (rows["family"] == family).fillna(False).to_numpy(dtype=bool) if len(rows) else np.zeros(0, bool)
    same = _same_shape(rows, job) if len(rows) else np.zeros(0, bool)
    n_user, n_uf, n_same = len(rows), int(fam.sum()), int(same.sum())
    n_fam = model.family_count(family)
    if n_uf >= FEW:
        basis, words = "user_family", f"{n_uf:,} of {user}'s past {family} jobs"
    elif n_user >= FEW and n_fam >= FEW:
        basis, words = "user_and_family", f"{n_user:,} of {user}'s jobs (other families) and {n_fam:,} {family} jobs of other users"
    elif n_user >= FEW:
        basis, words = "user", f"{n_user:,} of {user}'s jobs of other families"
    elif n_fam >= FEW:
        basis, words = "family", f"{n_fam:,} {family} jobs of other users" + ("" if user else " (no user given)")
    else:
        basis, words = "cold_start", "too few similar past jobs to say much: the cluster's jobs in general"
    similar = rows[fam] if n_uf else rows[same]
    ev = {"user": user, "family": family, "user_jobs": n_user, "user_family_jobs": n_uf, "family_jobs": n_fam,
          "same_request_jobs": n_same, "basis": basis, "basis_words": words, "too_few": basis == "cold_start",
          "similar_jobs": len(similar),
          "model": {"jobs": model.n_jobs_, "history_from": model.first_submit_.isoformat(),
                    "history_to": model.last_end_.isoformat(), "calibration_from": model.cut_.isoformat(),
                    "fitted_at": getattr(model, "fitted_at_", None), "not_predicted": dict(model.skipped_)}}
    return ev, similar, rows


def advise(req: JobRequest, model: AdvisorModel, *, user: str | None = None, user_from: str | None = None,
           level: float = 0.9, shape=None, strict: bool = False, origin: str | None = None) -> dict:
    """The whole advice for one job (a JSON-ready dict; ``exit_code`` 3 when a warning blocks)."""
    if not 0 < level < 1:
        raise ValueError(f"the risk level must lie strictly between 0 and 1, got {level}")
    user = user or req.user
    if user_from is None and user:
        user_from = "manifest" if req.user == user else "option"
    fill_from_shape(req, shape)
    job = job_row(req, user=user, submit_time=model.query_time_)
    family = str(job_family(job["job_name"]).iloc[0])
    targets = [t for t in model.targets_ if req.gpus > 0 or t not in GPU_TARGETS]
    limits = shape_limits(req, shape)
    unasked = {}
    for t in list(targets):
        n = model.targets_[t].n_no_request
        if asked(req, t, job) is None and n < MIN_UNASKED:
            targets.remove(t)
            unasked[t] = (f"nothing asked ({UNASKED[t]}), and only {n:,} of the {model.targets_[t].n_train:,} past "
                          f"jobs the model learned from asked nothing: too few to predict a need without a request")
    resources = {t: resource_advice(model, t, job, req, level, limits) for t in targets}
    ev, similar, rows = evidence(model, job, user, family)
    w = resources.get("walltime")
    run_h = w["p50"] / 3600.0 if w else None
    changes = CHANGES.get(req.scheduler, slurm_changes)(req, resources, run_h)
    facts = launch_facts(req.commands)
    warns = preflight(req, facts, resources, similar, rows, level=level, history_end=model.last_end_, family=family)
    for x in warns:
        x["blocking"] = blocking([x], level, strict=strict)
    missing = [t for t in ("walltime", "memory", "cpus", *(GPU_TARGETS if req.gpus else ())) if t not in resources]
    return {
        "input": {"file": origin, "scheduler": req.scheduler, "job_name": req.job_name, "family": family,
                  "user": user, "user_from": user_from, "partition": req.partition, "account": req.account,
                  "array_tasks": req.array_tasks, "container": req.container, "request": req.as_dict(),
                  "notes": list(req.notes)},
        "level": level, "units": {t: UNITS[t] for t in resources},
        "resources": resources,
        "not_predicted": {t: unasked.get(t) or model.skipped_.get(t, "no model for this target") for t in missing},
        "changes": changes,
        "suggested": list(dict.fromkeys(c["paste"] for c in changes)),
        "warnings": warns,
        "evidence": ev,
        "launch": {"launcher": facts.launcher, "background": facts.background, "threads": facts.threads},
        "exit_code": 3 if blocking(warns, level, strict=strict) else 0,
    }
