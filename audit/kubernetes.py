"""What Kubernetes objects say alike wherever they are read: resource quantities (``500m``, ``8``, ``64Gi``,
``1.5G``, ``129e6``) → numbers, vectorised; the node labels that name a pool; Kueue's queue label; the extended
resources that count whole GPUs.  The pods and nodes readers and the advisor's manifest reader share them."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: node labels that name a node's pool (a pod's ``nodeSelector`` on one of them names its partition), first found wins
POOL_LABELS = ("cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool",
               "kubernetes.azure.com/agentpool", "agentpool", "node.kubernetes.io/pool", "nodepool", "pool")
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
#: extended resources counted as whole GPUs
WHOLE_GPU = ("nvidia.com/gpu", "amd.com/gpu")

SUFFIX = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}
_QUANTITY = r"^\s*(?P<num>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?P<suf>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?\s*$"


def parse_quantity(values) -> tuple[np.ndarray, np.ndarray]:
    """(values as float, bad mask): null/empty → NaN and not bad; anything unparseable → NaN and bad."""
    s = pd.Series(values, dtype="object").astype("string")
    present = s.notna() & (s.str.strip() != "")
    parts = s.str.extract(_QUANTITY)
    num = pd.to_numeric(parts["num"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    mult = parts["suf"].fillna("").map(SUFFIX).to_numpy(dtype="float64", na_value=np.nan)
    out = num * mult
    bad = present.to_numpy(dtype=bool) & ~np.isfinite(out)
    return np.where(present.to_numpy(dtype=bool), out, np.nan), bad
