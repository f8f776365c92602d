"""Resource model of a cluster of nodes with CPUs, memory and GPUs (see :mod:`simulator.pool` for the algebra).

A free state is an (nodes, 3) int64 array; an allocation is ``(node indices, per-node need)``.
"""

from __future__ import annotations

import numpy as np

from .placement import FIT_RULES, TOPOLOGY_RULES, place
from .records import Cluster


class NodeRequest:
    """A per-node request for ``nodes`` nodes within the nodes ``allowed`` by its partition."""

    __slots__ = ("nodes", "need", "allowed", "total")

    def __init__(self, nodes: int, need: np.ndarray, allowed: np.ndarray):
        self.nodes = nodes
        self.need = need
        self.allowed = allowed
        self.total = int(need[0]) * nodes


class NodeModel:
    """Nodes grouped by type; multi-node jobs start as a gang on ``nodes`` nodes at once.

    ``fit``: ``"first"`` (lowest-numbered fitting nodes) or ``"best"`` (least left over);
    ``topology``: ``"none"``, ``"prefer"`` or ``"require"`` one switch group.
    """

    kind = "nodes"

    def __init__(self, cluster: Cluster, fit: str = "first", topology: str = "none"):
        if fit not in FIT_RULES:
            raise ValueError(f"fit must be one of {FIT_RULES}, got {fit!r}")
        if topology not in TOPOLOGY_RULES:
            raise ValueError(f"topology must be one of {TOPOLOGY_RULES}, got {topology!r}")
        self.cluster = cluster
        self.fit = fit
        self.topology = topology
        rows, groups, switches = [], [], []
        switch_ids: dict = {}
        for g in cluster.groups:
            for k in range(g.count):
                rows.append((g.cpus, g.mem_bytes, g.gpus))
                groups.append(g.name)
                if g.nodes_per_switch > 0:
                    key = f"{g.switch or g.name}#{k // g.nodes_per_switch}"
                else:
                    key = g.switch or g.name
                switches.append(switch_ids.setdefault(key, len(switch_ids)))
        self.capacity = np.array(rows, dtype=np.int64).reshape(-1, 3)
        self.group = np.array(groups, dtype=object)
        self.switch = np.array(switches, dtype=np.int64)
        everything = np.ones(len(rows), dtype=bool)
        self._allowed = {"": everything}
        for p in cluster.partitions:
            self._allowed[p.name] = np.isin(self.group, list(p.groups))
        self._everything = everything
        self._cache: dict = {}

    def initial(self) -> np.ndarray:
        return self.capacity.copy()

    def request(self, nodes: int, cpus: int, mem: int, gpus: int, partition: str) -> NodeRequest:
        key = (nodes, cpus, mem, gpus, partition)
        req = self._cache.get(key)
        if req is None:
            allowed = self._allowed.get(partition)
            if allowed is None:
                if self.cluster.strict_partitions:
                    raise ValueError(f"unknown partition {partition!r}")
                allowed = self._everything
            req = NodeRequest(nodes, np.array([cpus, mem, gpus], dtype=np.int64), allowed)
            self._cache[key] = req
        return req

    def ever_fits(self, req: NodeRequest) -> bool:
        return self.fits(self.capacity, req) is not None

    def fits(self, free: np.ndarray, req: NodeRequest):
        idx = place(free, req.need, req.nodes, req.allowed, self.switch, self.capacity, self.fit, self.topology)
        return None if idx is None else (idx, req.need)

    @staticmethod
    def take(free: np.ndarray, alloc) -> np.ndarray:
        free[alloc[0]] -= alloc[1]
        return free

    @staticmethod
    def give(free: np.ndarray, alloc) -> np.ndarray:
        free[alloc[0]] += alloc[1]
        return free

    @staticmethod
    def copy(free: np.ndarray) -> np.ndarray:
        return free.copy()

    @staticmethod
    def cap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.minimum(a, b)

    @staticmethod
    def empty(free: np.ndarray) -> bool:
        return not (free[:, 0].any() or free[:, 2].any())

    @staticmethod
    def held(alloc) -> tuple:
        n = len(alloc[0])
        return int(alloc[1][0]) * n, int(alloc[1][1]) * n, int(alloc[1][2]) * n

    @staticmethod
    def nodes_of(alloc) -> tuple:
        return tuple(int(k) for k in alloc[0])
