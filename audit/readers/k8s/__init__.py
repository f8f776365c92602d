"""Kubernetes: ``kubectl get pods -A -o json`` (:mod:`.pods`), ``kubectl get nodes -o json`` (:mod:`.nodes`), pods
known only from kube-state-metrics series (:mod:`.kube_state`); resource quantities and pool labels are
the core's (:mod:`audit.kubernetes`)."""

from .kube_state import EXTRA_LABELS, pods_from_kube_state, state_frame
from .nodes import pools_for_pods, read_k8s_nodes
from .pods import read_k8s_pods

__all__ = ["EXTRA_LABELS", "pods_from_kube_state", "pools_for_pods", "read_k8s_nodes", "read_k8s_pods",
           "state_frame"]
