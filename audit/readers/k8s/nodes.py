"""Reader for ``kubectl get nodes -o json``: the cluster shape of a Kubernetes pool.

Per node: allocatable CPUs, memory and GPUs (``nvidia.com/gpu``, ``amd.com/gpu``); GPU product and memory
from NVIDIA GPU feature discovery labels (``nvidia.com/gpu.product``, ``nvidia.com/gpu.memory`` in MiB,
``nvidia.com/gpu.count``); pool (GKE/EKS/AKS/Karpenter pool labels, else ``k8s``); zone, region and rack
(``topology.kubernetes.io/zone``/``region``, any label ending ``/rack``) and instance type, as rows of the nodes
table (:mod:`audit.node_table`).  Ledger: one record per node; a node without a name or with an allocatable
quantity that does not parse is quarantined.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ...kubernetes import POOL_LABELS, parse_quantity
from ...ledger import FileLedger, Quarantine, record_quarantine
from ...node_table import NODE_COLUMNS, NodesResult
from ...textio import InputError, read_text


def _gpu_type(product: str | None) -> str | None:
    """``NVIDIA-A100-SXM4-80GB`` → ``a100``; unknown products kept whole, lower-cased."""
    if not product:
        return None
    p = product.lower().replace("nvidia-", "").replace("tesla-", "")
    return p.split("-")[0] or p


def read_k8s_nodes(path, *, cluster: str | None = None) -> NodesResult:
    name = str(path)
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: line {exc.lineno}: not valid JSON: {exc.msg}") from exc
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    ledger = FileLedger(file=name, format="k8s-nodes")
    quarantine = Quarantine()
    ledger.read = len(items)
    recs = []
    for i, node in enumerate(items, start=1):
        meta = (node or {}).get("metadata") or {}
        if not isinstance(node, dict) or node.get("kind", "Node") != "Node" or not meta.get("name"):
            record_quarantine(ledger, quarantine, i, "metadata.name", "not a named Node", json.dumps(node)[:500])
            continue
        labels = meta.get("labels") or {}
        alloc = (node.get("status") or {}).get("allocatable") or (node.get("status") or {}).get("capacity") or {}
        rack = next((v for k, v in labels.items() if k.endswith("/rack") or k == "rack"), None)
        recs.append({
            "_record": i, "_raw": json.dumps(node)[:500], "node": meta["name"],
            "pool": next((labels[k] for k in POOL_LABELS if labels.get(k)), None) or "k8s",
            "cpu": alloc.get("cpu"), "memory": alloc.get("memory"),
            "gpu": alloc.get("nvidia.com/gpu", alloc.get("amd.com/gpu", labels.get("nvidia.com/gpu.count"))),
            "product": labels.get("nvidia.com/gpu.product"), "gpu_mem_mib": labels.get("nvidia.com/gpu.memory"),
            "zone": labels.get("topology.kubernetes.io/zone") or labels.get("failure-domain.beta.kubernetes.io/zone"),
            "region": labels.get("topology.kubernetes.io/region"), "rack": rack,
            "instance_type": labels.get("node.kubernetes.io/instance-type") or labels.get("beta.kubernetes.io/instance-type"),
        })
    if not recs:
        return NodesResult(pd.DataFrame(columns=list(NODE_COLUMNS)), ledger, quarantine)
    df = pd.DataFrame(recs)
    cpu, b1 = parse_quantity(df["cpu"])
    mem, b2 = parse_quantity(df["memory"])
    gpu, b3 = parse_quantity(df["gpu"])
    gmem, b4 = parse_quantity(df["gpu_mem_mib"])
    bad = b1 | b2 | b3 | b4 | ~np.isfinite(cpu)
    for k in np.flatnonzero(bad):
        field_name = "allocatable.cpu" if b1[k] or not np.isfinite(cpu[k]) else "allocatable.memory" if b2[k] else \
            "allocatable.gpu" if b3[k] else "nvidia.com/gpu.memory"
        record_quarantine(ledger, quarantine, int(df["_record"].iloc[k]), field_name, "missing or does not parse",
                          df["_raw"].iloc[k])
    ok = ~bad
    ledger.used = int(ok.sum())
    gpus = np.nan_to_num(gpu)
    nodes = pd.DataFrame({
        "cluster": cluster or "k8s", "node": df["node"], "pool": df["pool"],
        "cpus": np.floor(cpu + 1e-9), "mem_bytes": np.nan_to_num(mem), "gpus": gpus,
        "gpu_type": [(_gpu_type(p) if g > 0 else None) for p, g in zip(df["product"], gpus, strict=True)],
        "gpu_mem_bytes": np.nan_to_num(gmem) * 2**20,
        "zone": df["zone"], "region": df["region"], "rack": df["rack"], "instance_type": df["instance_type"],
    })[ok].reset_index(drop=True)
    for c in ("cpus", "mem_bytes", "gpus", "gpu_mem_bytes"):
        nodes[c] = nodes[c].astype("int64")
    return NodesResult(nodes, ledger, quarantine)


def pools_for_pods(jobs: pd.DataFrame, nodes: pd.DataFrame) -> pd.Series:
    """Partition of each Kubernetes job row: the pool of its (first) node when the nodes dump knows it."""
    part = jobs["partition"].copy()
    if nodes is None or nodes.empty:
        return part
    pool = nodes.drop_duplicates("node").set_index("node")["pool"]
    first = jobs["node_list"].astype("string").str.split(",").str[0]
    mapped = first.map(pool)
    k8s = (jobs["source"] == "k8s-pods").fillna(False).to_numpy()
    return part.where(~(k8s & mapped.notna().to_numpy()), mapped.astype("string"))
