"""Reader for ``kubectl get pods -A -o json``: one canonical job row per pod, or per owning workload.

Pods owned by a Kubernetes Job, a JobSet (label ``jobset.sigs.k8s.io/jobset-name``) or a Kueue workload
(label ``kueue.x-k8s.io/workload-name``… or the owning Job) fold into one row for that workload; other pods
(Deployments, StatefulSets, bare pods) are rows of their own.  Mapping:

- ``job_id`` ``namespace/pod`` (or ``namespace/Kind/name`` for a workload), ``job_id_raw`` the pod's uid;
- ``account`` the namespace; ``partition`` the node pool (``nodeSelector`` pool label, else the Kueue queue,
  else ``k8s``; refined from the nodes dump when one is read); ``qos`` the pod's QoS class; ``user`` the
  ``user`` label, else the service account;
- requests are what the scheduler reserves: ``req_*`` = ``alloc_*`` = the pod's effective request (the sum over
  app containers, or the largest init container when larger); CPUs are rounded up to whole CPUs; a request
  left out defaults to the limit, as Kubernetes does.  GPUs: ``nvidia.com/gpu``, ``amd.com/gpu``, MIG slices
  ``nvidia.com/mig-*`` and shared ``*.shared`` resources (the last two with ``gpu_shared``); ``gpu_type`` stays
  unknown (a pod names no GPU model);
- ``submit_time`` creation, ``start_time`` ``status.startTime``, ``end_time`` the last container finish;
- ``state`` from the phase and termination reasons (``OOMKilled`` → OUT_OF_MEMORY; ``DeadlineExceeded`` →
  TIMEOUT; preemption → PREEMPTED; eviction → NODE_FAIL); ``exit_code`` the first failing container's, with
  ``signal`` = code − 128 above 128; restarts → ``pod_restarted``.

A workload row's allocation is the time-weighted mean of its pods' requests, so allocated core- and GPU-hours
equal the sum over its pods.  Ledger: one record per pod; a pod without name or namespace, with a phase that
is not one of Kubernetes' five, or with a quantity that does not parse, is quarantined (field named); the rest
are used, or folded into their workload row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...job_table import caveats_from_masks, conform, empty_jobs
from ...kubernetes import KUEUE_QUEUE, POOL_LABELS, WHOLE_GPU, parse_quantity
from ...ledger import FileLedger, Quarantine, ReadResult, record_quarantine
from ...textio import InputError, read_text

KUEUE_WORKLOAD = "kueue.x-k8s.io/workload-name"
JOBSET = "jobset.sigs.k8s.io/jobset-name"
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
POD_MAP_COLUMNS = ("namespace", "pod", "job_id", "node", "start_time", "end_time")


@dataclass
class PodsReadResult(ReadResult):
    """``ReadResult`` plus the pod → job map the telemetry join needs (``POD_MAP_COLUMNS``)."""

    pods: pd.DataFrame | None = None


def _resources(containers: list) -> dict:
    out: dict = {}
    for c in containers or []:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for k in set(req) | set(lim):
            out.setdefault(k, []).append((req.get(k, lim.get(k)), lim.get(k)))
    return out


def _gpu_resource(name: str) -> str | None:
    if name in WHOLE_GPU:
        return "whole"
    if name.startswith("nvidia.com/mig-") or name.endswith("gpu.shared") or name in ("aliyun.com/gpu-mem",):
        return "shared"
    return None


def _finish(status: dict) -> tuple[str | None, list]:
    """Latest container finish time and the termination records (state and last state) of all containers."""
    ends, terms = [], []
    for cs in (status.get("containerStatuses") or []):
        for key in ("state", "lastState"):
            t = (cs.get(key) or {}).get("terminated")
            if t:
                terms.append((cs.get("name"), key, t))
                if key == "state" and t.get("finishedAt"):
                    ends.append(t["finishedAt"])
    return (max(ends) if ends else None), terms


def _state(pod: dict, terms: list) -> tuple[str, int | None]:
    status = pod.get("status") or {}
    phase = status.get("phase") or "Unknown"
    reason = status.get("reason") or ""
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    disrupted = (conds.get("DisruptionTarget") or {}).get("reason", "")
    oom = any(t.get("reason") == "OOMKilled" for _, key, t in terms if key == "state")
    failing = [t for _, key, t in terms if key == "state" and t.get("exitCode", 0) != 0]
    code = failing[0].get("exitCode") if failing else (0 if terms else None)
    if phase == "Succeeded":
        return "COMPLETED", code
    if phase == "Running":
        return "RUNNING", None
    if phase == "Pending":
        return "PENDING", None
    if phase == "Failed":
        if "Preempt" in disrupted or reason == "Preempting":
            return "PREEMPTED", code
        if reason == "DeadlineExceeded":
            return "TIMEOUT", code
        if oom:
            return "OUT_OF_MEMORY", code
        if reason in ("Evicted", "NodeLost", "Shutdown", "Terminated", "NodeShutdown"):
            return "NODE_FAIL", code
        return "FAILED", code
    return "NODE_FAIL", code


def pod_record(pod: dict) -> tuple[dict, tuple[str, str] | None]:
    """One pod → a flat record (raw quantity strings kept for vectorised parsing); or (None, (field, reason))."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    name, ns = meta.get("name"), meta.get("namespace")
    if not name:
        return {}, ("metadata.name", "missing")
    if not ns:
        return {}, ("metadata.namespace", "missing")
    if status.get("phase") not in PHASES:
        return {}, ("status.phase", f"not a pod phase: {status.get('phase')!r}")
    labels = meta.get("labels") or {}
    owners = meta.get("ownerReferences") or []
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    group_kind, group_name = None, None
    if labels.get(JOBSET):
        group_kind, group_name = "JobSet", labels[JOBSET]
    elif labels.get(KUEUE_WORKLOAD):
        group_kind, group_name = "Workload", labels[KUEUE_WORKLOAD]
    elif owner.get("kind") == "Job":
        group_kind, group_name = "Job", owner.get("name")
    end, terms = _finish(status)
    state, code = _state(pod, terms)
    app = _resources(spec.get("containers"))
    init = _resources(spec.get("initContainers"))
    sel = spec.get("nodeSelector") or {}
    pool = next((sel[k] for k in POOL_LABELS if sel.get(k)), None) or labels.get(KUEUE_QUEUE) or "k8s"
    restarts = sum(int(cs.get("restartCount") or 0) for cs in status.get("containerStatuses") or [])
    oom_before = any(t.get("reason") == "OOMKilled" for _, key, t in terms if key == "lastState")
    rec = {
        "namespace": ns, "pod": name, "uid": meta.get("uid"), "node": spec.get("nodeName"),
        "created": meta.get("creationTimestamp"), "started": status.get("startTime"), "ended": end,
        "deadline": spec.get("activeDeadlineSeconds"), "state": state, "exit_code": code,
        "owner_kind": group_kind or owner.get("kind") or "Pod", "group_name": group_name,
        "pool": pool, "qos": status.get("qosClass"), "user": labels.get("user") or spec.get("serviceAccountName"),
        "restarts": restarts, "oom_restart": oom_before, "app": app, "init": init,
    }
    return rec, None


def _quantities(recs: pd.DataFrame, idx: int) -> dict[str, np.ndarray]:
    """Per resource name, per pod: the effective request (``idx`` 0) or limit (1), parsed; plus ``_bad``.

    Kubernetes' effective request is max(Σ app containers, largest init container).
    """
    n = len(recs)
    names = sorted({k for col in ("app", "init") for d in recs[col] for k in d})
    out, bad = {}, np.zeros(n, dtype=bool)
    for res in names:
        pod_of, in_init, raw = [], [], []
        for i, (app, init) in enumerate(zip(recs["app"], recs["init"], strict=True)):  # per pod, not per sample
            for is_init, spec in ((False, app), (True, init)):
                for q in spec.get(res, []):
                    pod_of.append(i)
                    in_init.append(is_init)
                    raw.append(q[idx])
        vals, b = parse_quantity(raw)
        pod_of, in_init = np.asarray(pod_of, dtype=np.int64), np.asarray(in_init, dtype=bool)
        bad |= np.bincount(pod_of[b], minlength=n) > 0
        v = np.nan_to_num(vals)
        app_sum = np.bincount(pod_of[~in_init], weights=v[~in_init], minlength=n)
        init_max = np.zeros(n)
        np.maximum.at(init_max, pod_of[in_init], v[in_init])
        out[res] = np.maximum(app_sum, init_max)
    out["_bad"] = bad
    return out


def read_k8s_pods(path, *, cluster: str | None = None, group_by_owner: bool = True) -> PodsReadResult:
    """Read one ``kubectl get pods -o json`` dump (a ``List`` of pods or a single pod)."""
    name = str(path)
    text = read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: line {exc.lineno}: not valid JSON: {exc.msg}") from exc
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    if not isinstance(items, list):
        raise InputError(f"{name}: 'items' is not a list")
    ledger = FileLedger(file=name, format="k8s-pods")
    quarantine = Quarantine()
    ledger.read = len(items)
    recs, lines = [], []
    for i, pod in enumerate(items, start=1):
        if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
            record_quarantine(ledger, quarantine, i, "kind", "not a Pod", json.dumps(pod)[:500])
            continue
        rec, err = pod_record(pod)
        if err:
            record_quarantine(ledger, quarantine, i, err[0], err[1], json.dumps(pod)[:500])
            continue
        rec["_record"] = i
        rec["_raw"] = json.dumps(pod)[:500]
        recs.append(rec)
        lines.append(i)
    if not recs:
        return PodsReadResult(empty_jobs(), ledger, quarantine, pods=pd.DataFrame(columns=list(POD_MAP_COLUMNS)))
    df = pd.DataFrame(recs)
    req = _quantities(df, 0)
    bad = req.pop("_bad")
    times = {c: pd.to_datetime(df[c], utc=True, errors="coerce", format="ISO8601") for c in ("created", "started", "ended")}
    bad_time = np.zeros(len(df), dtype=bool)
    for c, t in times.items():
        bt = (df[c].notna() & t.isna()).to_numpy()
        bad_time |= bt
    for k in np.flatnonzero(bad | bad_time):
        field_name = "resources" if bad[k] else "timestamps"
        reason = "a quantity does not parse" if bad[k] else "a timestamp does not parse"
        record_quarantine(ledger, quarantine, int(df["_record"].iloc[k]), field_name, reason, df["_raw"].iloc[k])
    keep = ~(bad | bad_time)
    df = df[keep].reset_index(drop=True)
    req = {k: v[keep] for k, v in req.items()}
    times = {c: t[keep].reset_index(drop=True) for c, t in times.items()}
    pods = _pod_rows(df, req, times, name, cluster)
    if group_by_owner:
        jobs, pod_map, folded = _group(pods)
    else:
        jobs, pod_map, folded = pods, pods, 0
    ledger.used = int(keep.sum()) - folded
    ledger.folded = folded
    ledger.jobs_emitted = len(jobs)
    pm = pd.DataFrame({"namespace": pod_map["_namespace"], "pod": pod_map["_pod"], "job_id": pod_map["_group_id"]
                       if "_group_id" in pod_map else pod_map["job_id"], "node": pod_map["node_list"],
                       "start_time": pod_map["start_time"], "end_time": pod_map["end_time"]})
    return PodsReadResult(conform(jobs.drop(columns=[c for c in jobs.columns if c.startswith("_")])), ledger,
                          quarantine, pods=pm)


def _exact(x) -> pd.arrays.FloatingArray:
    x = np.asarray(x, dtype="float64")
    return pd.array(np.where(np.isfinite(x), x, np.nan), dtype="Float64")


def _pod_rows(df: pd.DataFrame, req: dict, times: dict, name: str, cluster: str | None) -> pd.DataFrame:
    n = len(df)
    whole = sum((np.nan_to_num(req[k]) for k in req if _gpu_resource(k) == "whole"), np.zeros(n))
    shared_names = [k for k in req if _gpu_resource(k) == "shared"]
    # MIG slices and time-sliced replicas count as requested; a GPU-memory share is one shared device
    shared = sum((np.where(req[k] > 0, 1.0, 0.0) if k == "aliyun.com/gpu-mem" else np.nan_to_num(req[k])
                  for k in shared_names), np.zeros(n))
    any_shared = np.zeros(n, dtype=bool)
    for k in shared_names:
        any_shared |= np.nan_to_num(req[k]) > 0
    gpus = whole + shared
    # the GPU type is left unknown (priced as the book's default GPU): a pod names no GPU model, and a MIG
    # profile is a slice of one, not a type a price book lists
    gpu_type = pd.Series([None] * n, dtype="object")
    cpu = req.get("cpu", np.full(n, np.nan))
    mem = req.get("memory", np.full(n, np.nan))
    cpus = np.where(np.isfinite(cpu), np.round(cpu, 6), np.nan)  # exact: 3152m is 3.152 CPUs
    start, end, created = times["started"], times["ended"], times["created"]
    end = end.where(~df["state"].isin(["RUNNING", "PENDING"]))
    elapsed = ((end - start).dt.total_seconds()).where(start.notna() & end.notna())
    code = pd.to_numeric(df["exit_code"], errors="coerce")
    placed = df["node"].notna().to_numpy()  # a pod never bound to a node held nothing
    ints = lambda x: pd.array(np.where(np.isfinite(x), np.round(x), np.nan), dtype="Float64").astype("Int64")  # noqa: E731
    cav = caveats_from_masks(n, {
        "no_usage_fields": np.ones(n, dtype=bool),
        "no_gpu_telemetry": gpus > 0,
        "pod_restarted": (df["restarts"] > 0).to_numpy(),
        "gpu_shared": any_shared,
        "end_unknown": (df["state"].isin(["RUNNING"]) | (start.notna() & end.isna() & ~df["state"].isin(["PENDING"]))
                        ).to_numpy(),
    })
    out = pd.DataFrame({
        "cluster": cluster or "k8s",
        "job_id": df["namespace"] + "/" + df["pod"],
        "job_id_raw": df["uid"],
        "source": "k8s-pods",
        "source_file": name,
        "source_line": df["_record"].astype("Int64"),
        "user": df["user"],
        "account": df["namespace"],
        "partition": df["pool"],
        "qos": df["qos"],
        "job_name": df["group_name"].fillna(df["pod"]),
        "submit_time": created,
        "eligible_time": created,
        "start_time": start,
        "end_time": end,
        "elapsed_s": ints(elapsed.to_numpy(dtype="float64", na_value=np.nan)),
        "time_limit_s": ints(pd.to_numeric(df["deadline"], errors="coerce").to_numpy(dtype="float64")),
        "state": df["state"],
        "exit_code": ints(code.to_numpy(dtype="float64")),
        "signal": ints(np.where(code > 128, code - 128, np.where(code.notna(), 0, np.nan))),
        "req_nodes": 1,
        "req_cpus": _exact(cpus),
        "req_mem_bytes": ints(mem),
        "req_gpus": _exact(gpus),
        "gpu_type": gpu_type.astype("string"),
        "alloc_nodes": ints(np.where(df["node"].notna(), 1, np.nan)),
        "alloc_cpus": _exact(np.where(placed, cpus, np.nan)),
        "alloc_mem_bytes": ints(np.where(placed, mem, np.nan)),
        "alloc_gpus": _exact(np.where(placed, gpus, np.nan)),
        "node_list": df["node"],
        "caveats": cav,
        "_namespace": df["namespace"], "_pod": df["pod"], "_owner_kind": df["owner_kind"],
        "_group_name": df["group_name"], "_oom": (df["state"] == "OUT_OF_MEMORY") | df["oom_restart"],
    })
    return out


_STATE_RANK = {"RUNNING": 9, "PENDING": 8, "OUT_OF_MEMORY": 7, "TIMEOUT": 6, "PREEMPTED": 5, "NODE_FAIL": 4,
               "FAILED": 3, "CANCELLED": 2, "COMPLETED": 1}


def _group(pods: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Fold pods of one workload into a row: earliest submit/start, latest end, time-weighted requests."""
    grouped = pods["_group_name"].notna()
    text = lambda c: pods[c].astype("string")  # noqa: E731
    gid = (text("_namespace") + "/" + text("_owner_kind") + "/" + text("_group_name")).where(grouped)
    pods = pods.assign(_group_id=gid.fillna(pods["job_id"]))
    single = pods[~grouped]
    multi = pods[grouped]
    if multi.empty:
        return pods, pods, 0
    g = multi.groupby("_group_id", sort=False)
    el = multi["elapsed_s"].astype("Float64").fillna(0).astype("float64")
    agg = g.agg(submit_time=("submit_time", "min"), eligible_time=("eligible_time", "min"),
                start_time=("start_time", "min"), end_time=("end_time", "max"), source_line=("source_line", "min"),
                pods=("job_id", "size"))
    open_end = g["end_time"].apply(lambda s: s.isna().any())
    agg.loc[open_end.to_numpy(), "end_time"] = pd.NaT
    span = (agg["end_time"] - agg["start_time"]).dt.total_seconds()
    weighted = {}
    for col in ("alloc_cpus", "alloc_mem_bytes", "alloc_gpus", "req_cpus", "req_mem_bytes", "req_gpus"):
        rs = (multi[col].astype("Float64").fillna(0).astype("float64") * el).groupby(multi["_group_id"], sort=False).sum()
        peak = multi[col].astype("Float64").groupby(multi["_group_id"], sort=False).max()
        w = (rs / span.where(span > 0)).reindex(agg.index)
        weighted[col] = w.where(w.notna(), peak.reindex(agg.index).astype("float64"))
    # the row's state: the most serious of its pods' (running ones first)
    rank = multi["state"].map(_STATE_RANK).fillna(0)
    worst = multi.loc[rank.groupby(multi["_group_id"], sort=False).idxmax().reindex(agg.index).to_numpy()]
    first = multi.drop_duplicates("_group_id").set_index("_group_id").reindex(agg.index)
    nodes = multi.groupby("_group_id", sort=False)["node_list"].apply(
        lambda s: ",".join(sorted({x for x in s.dropna()})) or None).reindex(agg.index)
    cav = multi.groupby("_group_id", sort=False)["caveats"].apply(
        lambda s: ";".join(sorted({c for x in s.dropna() for c in x.split(";")})) or None).reindex(agg.index)
    rows = pd.DataFrame({
        "cluster": first["cluster"], "job_id": agg.index.to_numpy(), "job_id_raw": first["job_id_raw"],
        "source": "k8s-pods", "source_file": first["source_file"], "source_line": agg["source_line"],
        "user": first["user"], "account": first["account"], "partition": first["partition"], "qos": first["qos"],
        "job_name": first["_group_name"], "submit_time": agg["submit_time"], "eligible_time": agg["eligible_time"],
        "start_time": agg["start_time"], "end_time": agg["end_time"],
        "elapsed_s": span.round().astype("Float64").astype("Int64"), "time_limit_s": first["time_limit_s"],
        "state": worst["state"].to_numpy(), "exit_code": worst["exit_code"].to_numpy(),
        "signal": worst["signal"].to_numpy(), "req_nodes": multi.groupby("_group_id", sort=False)["node_list"].nunique(),
        "gpu_type": first["gpu_type"], "node_list": nodes, "caveats": cav,
        "alloc_nodes": multi.groupby("_group_id", sort=False)["node_list"].nunique().reindex(agg.index),
    })
    for col, w in weighted.items():
        vals = w.to_numpy(dtype="float64")
        if col.endswith("bytes"):
            rows[col] = pd.array(np.where(np.isfinite(vals), np.round(vals), np.nan), dtype="Float64").astype("Int64")
        else:  # CPUs and GPUs exact: the time-weighted mean of the pods' requests
            rows[col] = _exact(np.round(vals, 6))
    rows = rows.reset_index(drop=True)
    out = pd.concat([single, rows], ignore_index=True) if len(single) else rows
    folded = len(multi) - len(rows)
    return out, pods, folded
