"""Kubernetes pods as jobs from kube-state-metrics series in Prometheus, for clusters with no ``kubectl`` dump.

A pods dump only lists pods that still exist; Prometheus keeps kube-state-metrics history of the ones that are
gone.  From the long telemetry table (:mod:`audit.telemetry_table`):

- ``kube_pod_info{namespace, pod, uid, node, created_by_kind, created_by_name}`` — identity, node and owner;
  the last time a pod's series was seen stands for its end when nothing better is known;
- ``kube_pod_created`` (submit), ``kube_pod_start_time`` (start), ``kube_pod_completion_time`` (end), all
  epoch seconds as values;
- ``kube_pod_status_phase{phase}`` — the phase at the pod's last sample whose value is 1;
- ``kube_pod_container_resource_requests{resource}`` (``cpu`` cores, ``memory`` bytes, ``nvidia_com_gpu``):
  summed over containers at their last sample;
- ``kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}`` and
  ``kube_pod_container_status_restarts_total``.

Rows follow the ``kubectl`` reader (:mod:`audit.readers.k8s.pods`): ``job_id`` ``namespace/pod``, ``account`` the
namespace, CPUs rounded up; ``source`` ``k8s-metrics``.  An end taken from the last sample carries
``end_from_last_sample``.  The labels the series need (``phase``, ``reason``, ``created_by_*``) are read by
:func:`state_frame` from the files' own label sets, since the long table keeps only the join's labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...job_table import caveats_from_masks, conform, empty_jobs

STATE_METRICS = ("kube_pod_info", "kube_pod_created", "kube_pod_start_time", "kube_pod_completion_time",
                 "kube_pod_status_phase", "kube_pod_container_resource_requests",
                 "kube_pod_container_status_last_terminated_reason", "kube_pod_container_status_restarts_total")
PHASE = {"Succeeded": "COMPLETED", "Failed": "FAILED", "Running": "RUNNING", "Pending": "PENDING",
         "Unknown": "NODE_FAIL"}
GPU_RESOURCES = ("nvidia_com_gpu", "amd_com_gpu")


def _last(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The last sample (by time) of each group."""
    return df.sort_values("time", kind="stable").groupby(by, sort=False, observed=True).tail(1)


def pods_from_kube_state(state: pd.DataFrame, *, cluster: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(canonical job rows, pod map) from kube-state-metrics samples.

    ``state``: long-table rows of :data:`STATE_METRICS` plus the columns ``phase``, ``reason``,
    ``created_by_kind``, ``created_by_name``, ``source_file`` (from :func:`state_frame`).
    """
    info = state[state["metric"] == "kube_pod_info"]
    if info.empty:
        return empty_jobs(), pd.DataFrame(columns=["namespace", "pod", "job_id", "node", "start_time", "end_time"])
    key = ["namespace", "pod"]
    pods = _last(info, key)[key + ["node", "uid", "created_by_kind", "created_by_name", "source_file", "time"]]
    pods = pods.rename(columns={"time": "last_seen"}).astype({"namespace": "object", "pod": "object"})
    pods = pods.reset_index(drop=True)

    def value_of(metric: str) -> pd.Series:
        m = state[state["metric"] == metric]
        last = _last(m, key).astype({"namespace": "object", "pod": "object"})
        return pods.merge(last[key + ["value"]], on=key, how="left")["value"]

    created, started, completed = (value_of(m) for m in ("kube_pod_created", "kube_pod_start_time",
                                                         "kube_pod_completion_time"))
    ph = state[(state["metric"] == "kube_pod_status_phase") & (state["value"] == 1)]
    phase = pods.merge(_last(ph, key).astype({"namespace": "object", "pod": "object"})[key + ["phase"]],
                       on=key, how="left")["phase"]
    req = state[state["metric"] == "kube_pod_container_resource_requests"]
    req = _last(req, key + ["container", "resource"]).astype({"namespace": "object", "pod": "object"})
    per = req.groupby(key + [req["resource"].astype("object")], observed=True)["value"].sum().unstack("resource")
    per = pods[key].merge(per.reset_index(), on=key, how="left")
    oom = state[(state["metric"] == "kube_pod_container_status_last_terminated_reason") &
                (state["reason"] == "OOMKilled") & (state["value"] > 0)]
    oom_pods = set(zip(oom["namespace"].astype(str), oom["pod"].astype(str), strict=True))
    rs = state[state["metric"] == "kube_pod_container_status_restarts_total"]
    restarts = pods[key].merge(_last(rs, key + ["container"]).astype({"namespace": "object", "pod": "object"})
                               .groupby(key)["value"].sum().reset_index(), on=key, how="left")["value"].fillna(0)
    n = len(pods)
    state_name = phase.map(PHASE).fillna("RUNNING")
    is_oom = np.array([(a, b) in oom_pods for a, b in zip(pods["namespace"], pods["pod"], strict=True)], dtype=bool)
    state_name = state_name.where(~((state_name == "FAILED") & is_oom), "OUT_OF_MEMORY")
    running = state_name.isin(["RUNNING", "PENDING"]).to_numpy()
    last_seen = pods["last_seen"]
    end = pd.to_datetime(completed, unit="s", utc=True)
    from_last = end.isna().to_numpy() & ~running
    end = end.where(~from_last, last_seen).where(~running)
    start = pd.to_datetime(started, unit="s", utc=True)
    submit = pd.to_datetime(created, unit="s", utc=True)
    elapsed = (end - start).dt.total_seconds()
    col = lambda name: per[name].to_numpy(dtype="float64") if name in per else np.full(n, np.nan)  # noqa: E731
    cpus = np.round(col("cpu"), 6)  # exact: 3152m is 3.152 CPUs
    gpus = sum((np.nan_to_num(col(g)) for g in GPU_RESOURCES), np.zeros(n))
    ints = lambda x: pd.array(np.where(np.isfinite(x), np.round(x), np.nan), dtype="Float64").astype("Int64")  # noqa: E731
    exact = lambda x: pd.array(np.where(np.isfinite(x), x, np.nan), dtype="Float64")  # noqa: E731
    placed = pods["node"].notna().to_numpy()
    jobs = pd.DataFrame({
        "cluster": cluster or "k8s", "job_id": pods["namespace"] + "/" + pods["pod"],
        "job_id_raw": pods["uid"].astype("object"), "source": "k8s-metrics",
        "source_file": pods["source_file"].astype("object"), "account": pods["namespace"], "partition": "k8s",
        "job_name": pods["created_by_name"].astype("object").fillna(pods["pod"]),
        "submit_time": submit, "eligible_time": submit, "start_time": start, "end_time": end,
        "elapsed_s": ints(elapsed.to_numpy(dtype="float64", na_value=np.nan)), "state": state_name,
        "req_nodes": 1, "req_cpus": exact(cpus), "req_mem_bytes": ints(col("memory")), "req_gpus": exact(gpus),
        "alloc_nodes": ints(np.where(placed, 1, np.nan)), "alloc_cpus": exact(np.where(placed, cpus, np.nan)),
        "alloc_mem_bytes": ints(np.where(placed, col("memory"), np.nan)),
        "alloc_gpus": exact(np.where(placed, gpus, np.nan)), "node_list": pods["node"].astype("object"),
        "caveats": caveats_from_masks(n, {"no_usage_fields": np.ones(n, dtype=bool), "no_gpu_telemetry": gpus > 0,
                                          "pod_restarted": restarts.to_numpy() > 0, "end_unknown": running,
                                          "end_from_last_sample": from_last}),
    })
    pod_map = pd.DataFrame({"namespace": pods["namespace"], "pod": pods["pod"], "job_id": jobs["job_id"],
                            "node": pods["node"], "start_time": start, "end_time": end})
    return conform(jobs), pod_map


EXTRA_LABELS = ("phase", "reason", "created_by_kind", "created_by_name", "uid")


def state_frame(result) -> pd.DataFrame:
    """The kube-state-metrics rows of a Prometheus reader's result (read with ``keep_labels=EXTRA_LABELS``),
    with the labels :func:`pods_from_kube_state` needs as columns."""
    tel = result.telemetry
    keep = np.asarray(tel["metric"].isin(list(STATE_METRICS)).to_numpy(), dtype=bool)
    if not keep.any():
        return pd.DataFrame()
    out = tel[keep].reset_index(drop=True)
    labels = result.extra.get("labels")
    for c in EXTRA_LABELS:
        out[c] = labels[c].to_numpy()[keep] if labels is not None else None
    out["source_file"] = result.ledger.file
    return out
