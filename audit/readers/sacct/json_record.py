"""One slurmdb job or step record → a flat dict of the values the ``sacct --json`` reader assembles."""

from __future__ import annotations

from .json_values import (
    LEGACY_MEM_PER_CPU_FLAG,
    MEM_PER_CPU_FLAG,
    RecordError,
    cpu_seconds,
    epoch,
    exit_of,
    number,
    obj,
    short_value,
    state_of,
    text,
    tres_of,
    value,
)


def step_fields(step, field: str) -> dict:
    """One step record → the figures the job needs (raises :class:`RecordError`)."""
    step = obj(step, field)
    t = obj(step.get("time"), f"{field}.time")
    total = cpu_seconds(t, "total", f"{field}.time")
    user = cpu_seconds(t, "user", f"{field}.time")
    system = cpu_seconds(t, "system", f"{field}.time")
    if total is None and (user is not None or system is not None):
        total = (user or 0.0) + (system or 0.0)
    tasks = value(obj(step.get("tasks"), f"{field}.tasks").get("count"), f"{field}.tasks.count")
    tres = obj(step.get("tres"), f"{field}.tres")
    req = obj(tres.get("requested"), f"{field}.tres.requested")
    tot = tres_of(req.get("total"), f"{field}.tres.requested.total")
    ave = tres_of(req.get("average"), f"{field}.tres.requested.average")
    mx = tres_of(req.get("max"), f"{field}.tres.requested.max")
    nodes = step.get("nodes")
    nnodes = value(nodes.get("count"), f"{field}.nodes.count") if isinstance(nodes, dict) else None
    mem, single, upper = tot["mem"], False, False
    if mem is None and ave["mem"] is not None and tasks is not None:
        mem = ave["mem"] * tasks
    if mem is None and mx["mem"] is not None:
        # the largest task × tasks on its node, over the step's nodes (an upper bound); lower bound if unknown
        if tasks == 1:
            mem = mx["mem"]
        elif tasks and nnodes:
            per_node = -(-int(tasks) // int(nnodes))
            mem, upper = mx["mem"] * per_node * nnodes, True
        else:
            mem, single = mx["mem"], True
    return {
        "name": _step_name(step.get("step"), f"{field}.step"),
        "cpu_s": total,
        "mem": mem,
        "single_task_only": single,
        "upper_bound": upper,
        "has_usage": tot["present"] or ave["present"] or mx["present"],
        "state": state_of(step.get("state"), f"{field}.state"),
    }


def _step_name(v, field: str) -> str:
    """``batch``, ``extern``, ``0``… from ``{"id": "123.batch"}`` (v0.0.39+) or ``{"id": "batch"}`` (v0.0.38)."""
    s = obj(v, field)
    sid = s.get("id")
    if isinstance(sid, dict):
        sid = sid.get("step_id", sid.get("id"))
    if isinstance(sid, (int, str)) and not isinstance(sid, bool):
        return str(sid).rsplit(".", 1)[-1].strip().lower()
    return (text(s.get("name"), f"{field}.name") or "").lower()


def job_fields(rec) -> dict:
    """One job record → flat canonical-ish fields (raises :class:`RecordError`)."""
    if not isinstance(rec, dict):
        raise RecordError("record", f"not an object: {short_value(rec)}")
    if rec.get("job_id") is None:
        raise RecordError("job_id", "missing")
    jid = rec["job_id"]
    if isinstance(jid, str) and jid.strip().isdigit():
        jid = int(jid)
    if isinstance(jid, bool) or not isinstance(jid, int) or not 0 < jid < 2**32:
        raise RecordError("job_id", f"not a positive 32-bit integer: {short_value(rec['job_id'])}")
    t = obj(rec.get("time"), "time")
    limit, limit_inf = number(t.get("limit"), "time.limit")
    array = obj(rec.get("array"), "array")
    het = obj(rec.get("het"), "het")
    req = obj(rec.get("required"), "required")
    tres = obj(rec.get("tres"), "tres")
    assoc = rec.get("association") if isinstance(rec.get("association"), dict) else {}
    comment = rec.get("comment")
    admin = text(obj(comment, "comment").get("administrator"), "comment.administrator") if isinstance(
        comment, dict) or comment is None else None
    code, signal = exit_of(rec.get("exit_code"), "exit_code")
    out = {
        "job_id_int": jid,
        "cluster": text(rec.get("cluster"), "cluster"),
        "user": _user(rec.get("user"), "user") or _user(assoc.get("user"), "association.user"),
        "account": text(rec.get("account"), "account") or text(assoc.get("account"), "association.account"),
        "partition": text(rec.get("partition"), "partition"),
        "qos": text(rec.get("qos"), "qos") if not isinstance(rec.get("qos"), dict) else None,
        "job_name": text(rec.get("name"), "name"),
        "submit": epoch(t.get("submission"), "time.submission"),
        "eligible": epoch(t.get("eligible"), "time.eligible"),
        "start": epoch(t.get("start"), "time.start"),
        "end": epoch(t.get("end"), "time.end"),
        "elapsed": value(t.get("elapsed"), "time.elapsed"),
        "limit_min": None if (limit_inf or not limit) else limit,
        "job_cpu_s": cpu_seconds(t, "total", "time"),
        "state": state_of(rec.get("state"), "state"),
        "exit_code": code,
        "signal": signal,
        "array_job_id": value(array.get("job_id"), "array.job_id") or None,
        "array_task_id": value(array.get("task_id"), "array.task_id"),
        "array_range": text(array.get("task"), "array.task"),
        "het_job_id": value(het.get("job_id"), "het.job_id") or None,
        "het_job_offset": value(het.get("job_offset"), "het.job_offset"),
        "req_cpus_field": value(req.get("CPUs", req.get("cpus")), "required.CPUs") or None,
        "alloc_nodes_field": value(rec.get("allocation_nodes"), "allocation_nodes") or None,
        "node_list": _nodes(rec.get("nodes"), "nodes"),
        "admin_comment": admin,
    }
    out.update(_required_memory(req))
    for kind in ("requested", "allocated"):
        tr = tres_of(tres.get(kind), f"tres.{kind}")
        for key in ("cpu", "mem", "node", "gpus", "gpu_type", "present"):
            out[f"tres_{kind}_{key}"] = tr[key]
    return out


def _user(v, field: str) -> str | None:
    if isinstance(v, dict):  # some versions nest {"name": …}
        return text(v.get("name"), f"{field}.name")
    return text(v, field)


def _nodes(v, field: str) -> str | None:
    s = text(v, field)
    return None if s is None or s.lower() == "none assigned" else s


def _required_memory(req: dict) -> dict:
    """``required`` memory → MiB and its basis: 'c' per CPU, 'n' per node."""
    per_cpu = value(req.get("memory_per_cpu"), "required.memory_per_cpu")
    per_node = value(req.get("memory_per_node"), "required.memory_per_node")
    if per_cpu is not None:
        return {"req_mem_mib": per_cpu, "req_mem_per": "c"}
    if per_node is not None:
        return {"req_mem_mib": per_node, "req_mem_per": "n"}
    mem = value(req.get("memory"), "required.memory")
    if mem is None:
        return {"req_mem_mib": None, "req_mem_per": None}
    mem = int(mem)
    if mem < 0:
        raise RecordError("required.memory", f"negative: {mem}")
    if mem & MEM_PER_CPU_FLAG:
        return {"req_mem_mib": mem & ~MEM_PER_CPU_FLAG, "req_mem_per": "c"}
    if LEGACY_MEM_PER_CPU_FLAG <= mem < 2 * LEGACY_MEM_PER_CPU_FLAG:
        return {"req_mem_mib": mem - LEGACY_MEM_PER_CPU_FLAG, "req_mem_per": "c"}
    return {"req_mem_mib": mem, "req_mem_per": "n"}
