"""A Kubernetes Job, CronJob or Pod manifest (YAML or JSON) as a job request, read as the pods reader reads
pods (``audit.readers.k8s.pods``), so that a manifest meets the history of the pods it will become.

- the request is the pod's effective request: the sum over app containers, or the largest init container when
  larger; a container's request left out defaults to its limit, as Kubernetes does; CPUs rounded up to whole
  CPUs; GPUs ``nvidia.com/gpu`` and ``amd.com/gpu``;
- ``activeDeadlineSeconds`` (the Job's or the pod's, the smaller) is the time limit; a Job's ``completions``
  count its pods as the tasks of an array;
- ``account`` is the namespace, ``user`` the ``user`` label else the service account, ``partition`` the node
  pool of the ``nodeSelector`` (else the Kueue queue, else ``k8s``), ``qos`` the pod's QoS class, the job name
  the Job's name (``generateName`` when it has none).

Parsed with ``yaml.safe_load`` only: a manifest is untrusted text, and no tag may construct an object.  Errors
name the line of the field at fault.
"""

from __future__ import annotations

import json
import math

from audit.kubernetes import KUEUE_QUEUE, POOL_LABELS, WHOLE_GPU, parse_quantity

from .job_request import JobRequest, ScriptError

KINDS = ("Job", "CronJob", "Pod")


def _documents(text: str) -> list[tuple[object, object]]:
    """Each document with its composed YAML node (for line numbers; ``None`` when read as plain JSON)."""
    import yaml

    try:
        docs = list(yaml.safe_load_all(text))
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        return list(zip(docs, nodes, strict=True))
    except yaml.YAMLError as exc:
        try:
            return [(json.loads(text), None)]
        except ValueError:
            pass
        mark = getattr(exc, "problem_mark", None)
        raise ScriptError(f"not valid YAML or JSON: {getattr(exc, 'problem', None) or exc}",
                          mark.line + 1 if mark is not None else None) from exc


def _node_line(node, path: tuple) -> int | None:
    """1-based line of the value at ``path`` (keys and list indices) in a composed YAML node."""
    import yaml

    line = None
    for key in path:
        if node is None:
            return line
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == str(key)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            nxt = node.value[key]
        else:
            nxt = None
        if nxt is None:
            return line
        node = nxt
        line = node.start_mark.line + 1
    return line


class _Doc:
    """A manifest document with the line of any of its fields."""

    def __init__(self, obj: dict, node):
        self.obj, self.node = obj, node

    def line(self, *path) -> int | None:
        return _node_line(self.node, path) if self.node is not None else None

    def fail(self, message: str, *path) -> ScriptError:
        return ScriptError(message, self.line(*path))


def _pick(docs) -> tuple[_Doc, str]:
    """The first Job, CronJob or Pod (in a ``List`` too)."""
    seen = []
    for obj, node in docs:
        if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            for i, item in enumerate(obj["items"]):
                if isinstance(item, dict) and item.get("kind") in KINDS:
                    sub = None if node is None else _sub(node, ("items", i))
                    return _Doc(item, sub), item["kind"]
                seen.append(item.get("kind") if isinstance(item, dict) else type(item).__name__)
            continue
        if isinstance(obj, dict) and obj.get("kind") in KINDS:
            return _Doc(obj, node), obj["kind"]
        seen.append(obj.get("kind") if isinstance(obj, dict) else type(obj).__name__)
    raise ScriptError(f"no Job, CronJob or Pod in the manifest (found: {', '.join(map(str, seen)) or 'nothing'})")


def _sub(node, path):
    import yaml

    for key in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == str(key)), None)
        elif isinstance(node, yaml.SequenceNode):
            node = node.value[key]
        if node is None:
            return None
    return node


def _mapping(doc: _Doc, value, *path) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise doc.fail(f"{'.'.join(map(str, path))} must be a mapping", *path)
    return value


def _quantity(doc: _Doc, raw, *path) -> float:
    vals, bad = parse_quantity([None if raw is None else str(raw)])
    if bad[0]:
        raise doc.fail(f"{'.'.join(map(str, path))}: {raw!r} is not a Kubernetes quantity (e.g. 500m, 2, 64Gi)", *path)
    return float(vals[0])


def _container_requests(doc: _Doc, containers, base: tuple) -> list[dict]:
    """Per container: name, requests by resource (request, else limit) and where each was written."""
    if containers is None:
        return []
    if not isinstance(containers, list):
        raise doc.fail(f"{'.'.join(map(str, base))} must be a list", *base)
    out = []
    for i, c in enumerate(containers):
        c = _mapping(doc, c, *base, i)
        res = _mapping(doc, c.get("resources"), *base, i, "resources")
        req = _mapping(doc, res.get("requests"), *base, i, "resources", "requests")
        lim = _mapping(doc, res.get("limits"), *base, i, "resources", "limits")
        values, where = {}, {}
        for k in set(req) | set(lim):
            part = "requests" if k in req else "limits"
            raw = req.get(k, lim.get(k))
            values[k] = _quantity(doc, raw, *base, i, "resources", part, k)
            where[k] = (*base, i, "resources", part, k)
        cmd = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])] if isinstance(
            c.get("command") or [], list) and isinstance(c.get("args") or [], list) else []
        out.append({"name": c.get("name"), "values": values, "where": where, "limits": lim, "requests": req,
                    "command": cmd, "path": (*base, i)})
    return out


def _qos_class(containers: list[dict]) -> str:
    """Kubernetes' QoS class of a pod from its containers' requests and limits."""
    if not any(c["requests"] or c["limits"] for c in containers):
        return "BestEffort"
    guaranteed = all(
        all(k in c["limits"] for k in ("cpu", "memory"))
        and all(str(c["requests"].get(k, c["limits"][k])) == str(c["limits"][k]) for k in ("cpu", "memory"))
        for c in containers)
    return "Guaranteed" if guaranteed else "Burstable"


def _effective(app: list[dict], init: list[dict], resource: str) -> float:
    def get(c):
        v = c["values"].get(resource, 0.0)
        return 0.0 if math.isnan(v) else v

    app_sum = sum(get(c) for c in app)
    init_max = max((get(c) for c in init), default=0.0)
    return max(app_sum, init_max)


def parse_manifest(text: str) -> JobRequest:
    """The request of the first Job, CronJob or Pod of a YAML or JSON manifest."""
    doc, kind = _pick(_documents(text))
    obj = doc.obj
    meta = _mapping(doc, obj.get("metadata"), "metadata")
    spec = _mapping(doc, obj.get("spec"), "spec")
    job_path: tuple = ()
    if kind == "CronJob":
        job_path = ("spec", "jobTemplate", "spec")
        spec = _mapping(doc, _mapping(doc, spec.get("jobTemplate"), "spec", "jobTemplate").get("spec"), *job_path)
    elif kind == "Job":
        job_path = ("spec",)
    pod_path = (*job_path, "template", "spec") if kind != "Pod" else ("spec",)
    if kind == "Pod":
        pod = spec
        pod_meta = meta
    else:
        template = _mapping(doc, spec.get("template"), *job_path, "template")
        pod = _mapping(doc, template.get("spec"), *pod_path)
        pod_meta = _mapping(doc, template.get("metadata"), *job_path, "template", "metadata")
    app = _container_requests(doc, pod.get("containers"), (*pod_path, "containers"))
    if not app:
        raise doc.fail("the pod has no containers", *pod_path)
    init = _container_requests(doc, pod.get("initContainers"), (*pod_path, "initContainers"))
    labels = {**_mapping(doc, meta.get("labels"), "metadata", "labels"),
              **_mapping(doc, pod_meta.get("labels"), *pod_path[:-1], "metadata", "labels")}
    sel = _mapping(doc, pod.get("nodeSelector"), *pod_path, "nodeSelector")
    name = meta.get("name") or meta.get("generateName")
    req = JobRequest(scheduler="kubernetes", job_name=str(name) if name else None,
                     account=str(meta.get("namespace") or "default"),
                     partition=next((str(sel[k]) for k in POOL_LABELS if sel.get(k)), None)
                     or (str(labels[KUEUE_QUEUE]) if labels.get(KUEUE_QUEUE) else "k8s"),
                     qos=_qos_class(app + init),
                     user=str(labels.get("user") or pod.get("serviceAccountName") or "") or None)
    cpu = _effective(app, init, "cpu")
    req.cpus = math.ceil(round(cpu, 6)) if cpu > 0 else None
    req.cpus_per_task = req.cpus or 1
    mem = _effective(app, init, "memory")
    req.mem_bytes = mem if mem > 0 else None
    req.mem_form = "resources.requests.memory" if mem > 0 else None
    req.gpus = int(sum(_effective(app, init, g) for g in WHOLE_GPU))
    deadlines = []
    for path, value in ((job_path, spec.get("activeDeadlineSeconds") if kind != "Pod" else None),
                        (pod_path, pod.get("activeDeadlineSeconds"))):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise doc.fail(f"activeDeadlineSeconds must be a positive whole number of seconds, not {value!r}",
                           *path, "activeDeadlineSeconds")
        deadlines.append(float(value))
        req.lines["activeDeadlineSeconds"] = doc.line(*path, "activeDeadlineSeconds")
    req.time_limit_s = min(deadlines) if deadlines else None
    if kind != "Pod" and spec.get("completions") is not None:
        comp = spec.get("completions")
        if isinstance(comp, bool) or not isinstance(comp, int) or comp < 1:
            raise doc.fail(f"completions must be a whole number ≥ 1, not {comp!r}", *job_path, "completions")
        req.array_tasks = int(comp)
        req.array_spec = f"{comp} completions"
    main = max(app, key=lambda c: (c["values"].get("memory", 0.0), c["values"].get("cpu", 0.0)))
    req.lines.update({f"{k}": doc.line(*w) for k, w in main["where"].items()})
    req.lines["container"] = doc.line(*main["path"])
    req.commands = [(doc.line(*c["path"]) or 0, " ".join(c["command"])) for c in app if c["command"]]
    req.notes.append(f"{kind} {name or '(unnamed)'}: container {main['name'] or '#1'} of {len(app)}"
                     + (f", {len(init)} init container(s)" if init else ""))
    req.container = main["name"]
    req.container_requests = {k: v for k, v in main["values"].items() if not math.isnan(v)}
    if len(app) > 1:
        req.notes.append("several containers: the suggested requests are for the pod; the lines to paste change "
                         f"container {main['name']}")
    return req
