"""Resource model of a cluster of nodes with CPUs, memory and GPUs (see :mod:`simulator.pool` for the algebra).

A free state is a (3, nodes) int64 array (rows: CPUs, memory bytes, GPUs, counted in the jobs' units:
whole CPUs and GPUs, or millicores and milli-GPUs); an allocation is ``(node indices, per-node need as
a column)`` as arrays (the index is a plain int for one node), followed by the same two as a Python
list and tuple (for loops that read them one by one).

When GPUs are shared (:class:`DeviceNodeModel`, jobs counting GPUs in milli-GPUs) the free state has
one more row per GPU device slot, and an allocation's second entry is the matrix of what it holds on
each of its nodes (rows as the free state's).
"""

from __future__ import annotations

import numpy as np

from .placement import FIT_RULES, TOPOLOGY_RULES, candidates, first_candidate, fitting, place
from .records import Cluster


class NodeRequest:
    """A per-node request for ``nodes`` nodes within the nodes ``allowed`` by its partition (the
    range ``[lo, hi)``, further restricted by ``mask`` when the partition is not a range)."""

    __slots__ = ("nodes", "need", "allowed", "total", "need_t", "allowed_list", "lo", "hi", "mask", "part", "col",
                 "ever", "num")

    def __init__(self, nodes: int, need: np.ndarray, part: Span):
        self.nodes = nodes
        self.part = part.number
        self.need = need
        self.allowed = part.allowed
        self.total = int(need[0]) * nodes
        self.need_t = tuple(int(x) for x in need)
        self.allowed_list = part.allowed_list
        self.lo, self.hi, self.mask = part.lo, part.hi, part.mask
        self.col = need[:, None]
        self.ever = None  # whether it fits the empty cluster (known once asked)
        self.num = -1  # its row in the model's table of requests (see NodeModel.shapes)


class Span:
    """The nodes of one partition, shared by all its requests: a mask, the same as a list, and the
    range ``[lo, hi)`` (with the mask kept only when the partition is not a range)."""

    __slots__ = ("number", "allowed", "allowed_list", "lo", "hi", "mask")

    def __init__(self, number: int, allowed: np.ndarray):
        self.number = number
        self.allowed = allowed
        self.allowed_list = allowed.tolist()
        idx = np.flatnonzero(allowed)
        self.lo = int(idx[0]) if len(idx) else 0
        self.hi = int(idx[-1]) + 1 if len(idx) else 0
        self.mask = None if len(idx) == self.hi - self.lo else allowed


class NodeModel:
    """Nodes grouped by type; multi-node jobs start as a gang on ``nodes`` nodes at once.

    ``fit``: ``"first"`` (lowest-numbered fitting nodes) or ``"best"`` (least left over);
    ``topology``: ``"none"``, ``"prefer"`` or ``"require"`` one switch group.  Free states are
    (3, nodes) arrays: rows are CPUs, memory bytes and GPUs (a node's CPUs × ``cpu_unit``, its GPUs ×
    ``gpu_unit``: the units the jobs' requests are counted in).
    """

    kind = "nodes"
    devices = 0  # GPU device rows below the three resource rows (see DeviceNodeModel)

    def __init__(self, cluster: Cluster, fit: str = "first", topology: str = "none", cpu_unit: int = 1,
                 gpu_unit: int = 1):
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
                rows.append((g.cpus * cpu_unit, g.mem_bytes, g.gpus * gpu_unit))
                groups.append(g.name)
                if g.nodes_per_switch > 0:
                    key = f"{g.switch or g.name}#{k // g.nodes_per_switch}"
                else:
                    key = g.switch or g.name
                switches.append(switch_ids.setdefault(key, len(switch_ids)))
        self.capacity = np.ascontiguousarray(np.array(rows, dtype=np.int64).reshape(-1, 3).T)
        self.group = np.array(groups, dtype=object)
        self.switch = np.array(switches, dtype=np.int64)
        everything = np.ones(len(rows), dtype=bool)
        self._allowed = {"": everything}
        for p in cluster.partitions:
            self._allowed[p.name] = np.isin(self.group, list(p.groups))
        self._everything = everything
        #: partition number of each partition name, and the partitions each node belongs to
        self.part_id = {name: k for k, name in enumerate(self._allowed)}
        self._spans = {name: Span(k, mask) for k, (name, mask) in enumerate(self._allowed.items())}
        #: each partition's :class:`Span`, by partition number
        self.spans = list(self._spans.values())
        masks = np.array(list(self._allowed.values()))
        self.node_parts = [np.flatnonzero(masks[:, n]).tolist() for n in range(len(rows))]
        #: each partition's nodes (rows by partition number), or ``None`` when every partition holds every node
        self.part_masks = None if masks.all() else masks
        #: whether "some ``nodes`` allowed nodes each hold the per-node need" is exactly "it fits"
        #: (false when a gang must sit inside one switch group)
        self.counts_exact = topology != "require"
        self._cache: dict = {}
        self._table = np.zeros((64, 5), dtype=np.int64)  # see shapes(); rows beyond the count unused
        self._count = 0

    def initial(self) -> np.ndarray:
        return self.capacity.copy()

    def request(self, nodes: int, cpus: int, mem: int, gpus: int, partition: str) -> NodeRequest:
        key = (nodes, cpus, mem, gpus, partition)
        req = self._cache.get(key)
        if req is None:
            span = self._spans.get(partition)
            if span is None:
                if self.cluster.strict_partitions:
                    raise ValueError(f"unknown partition {partition!r}")
                span = self._spans[""]
            req = NodeRequest(nodes, np.array([cpus, mem, gpus], dtype=np.int64), span)
            req.num = k = self._count
            if k == len(self._table):
                self._table = np.concatenate([self._table, np.zeros_like(self._table)])
            self._table[k] = (*req.need_t, nodes, span.number)
            self._count = k + 1
            self._cache[key] = req
        return req

    def shapes(self) -> np.ndarray:
        """Every request made so far, by request number (``NodeRequest.num``), as rows of an int64
        table: per-node CPUs, memory and GPUs, nodes, partition number (rows past the last request
        are unused)."""
        return self._table

    def ever_fits(self, req: NodeRequest) -> bool:
        if req.ever is None:
            req.ever = self.fits(self.capacity, req) is not None
        return req.ever

    def fits(self, free: np.ndarray, req: NodeRequest):
        if req.nodes == 1 and self.fit == "first":  # the lowest-numbered fitting node, whatever the topology
            k = first_candidate(free, req.need_t, req.lo, req.hi, req.mask)
            return None if k < 0 else (k, req.col, [k], req.need_t)
        idx = place(free, req.need_t, req.nodes, req.lo, req.hi, req.mask, self.switch, self.capacity, self.fit,
                    self.topology)
        return None if idx is None else (idx, req.col, idx.tolist(), req.need_t)

    def count_fitting(self, free: np.ndarray, req: NodeRequest) -> int:
        """How many allowed nodes could each hold the per-node need."""
        return len(candidates(free, req.need_t, req.lo, req.hi, req.mask))

    @staticmethod
    def take(free: np.ndarray, alloc) -> np.ndarray:
        nodes = alloc[2]
        if len(nodes) == 1:  # item by item: cheaper than fancy indexing for one node
            k = nodes[0]
            c, m, g = alloc[3]
            free[0, k] -= c
            if m:
                free[1, k] -= m
            if g:
                free[2, k] -= g
        else:
            free[:, alloc[0]] -= alloc[1]
        return free

    @staticmethod
    def give(free: np.ndarray, alloc) -> np.ndarray:
        nodes = alloc[2]
        if len(nodes) == 1:
            k = nodes[0]
            c, m, g = alloc[3]
            free[0, k] += c
            if m:
                free[1, k] += m
            if g:
                free[2, k] += g
        else:
            free[:, alloc[0]] += alloc[1]
        return free

    @staticmethod
    def copy(free: np.ndarray) -> np.ndarray:
        return free.copy()

    @staticmethod
    def cap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.minimum(a, b)

    @staticmethod
    def empty(free: np.ndarray) -> bool:
        return not (free[0].any() or free[2].any())

    @staticmethod
    def idle(free: np.ndarray) -> list:
        """[CPUs, GPUs] free in total."""
        return [int(free[0].sum()), int(free[2].sum())]

    @staticmethod
    def held(alloc) -> tuple:
        n = len(alloc[2])
        c, m, g = alloc[3]
        return c * n, m * n, g * n

    @staticmethod
    def nodes_of(alloc) -> tuple:
        return tuple(alloc[2])


class DeviceNodeModel(NodeModel):
    """Nodes whose GPUs are devices that jobs may share (GPUs counted in ``gpu_unit`` per GPU, e.g.
    milli-GPUs).  The free state has rows 0–2 as :class:`NodeModel` (row 2: the node's free GPU share
    in total) and one row per device slot below them: row ``3 + d`` is the free share of device ``d``
    of each node (``gpu_unit`` when idle, 0 on nodes with fewer devices).

    A request below one GPU is a share: it sits on one device of each of its nodes with at least that
    much free, the fullest such device (best fit, the lowest-numbered on ties), so shares pack a device
    up to a whole GPU.  A request of one GPU or more takes that many whole free devices (a share of a
    GPU or more that is not whole is rounded up to whole GPUs); a device partly held by shares is not
    free for it.  Nodes are chosen as by :class:`NodeModel` among the nodes that can hold the request.
    """

    def __init__(self, cluster: Cluster, fit: str = "first", topology: str = "none", cpu_unit: int = 1,
                 gpu_unit: int = 1000):
        super().__init__(cluster, fit=fit, topology=topology, cpu_unit=cpu_unit, gpu_unit=gpu_unit)
        self.unit = int(gpu_unit)
        per_node = self.capacity[2] // self.unit
        self.devices = int(per_node.max()) if len(per_node) else 0
        slots = [np.where(per_node > d, self.unit, 0) for d in range(self.devices)]
        self.capacity = np.ascontiguousarray(np.vstack([self.capacity, *slots]).astype(np.int64))
        self.counts_exact = False  # a node's free GPU total does not say whether one device holds a share

    def request(self, nodes: int, cpus: int, mem: int, gpus: int, partition: str) -> NodeRequest:
        unit = self.unit
        if gpus > unit:  # one GPU or more: whole devices
            gpus = -(-gpus // unit) * unit
        return super().request(nodes, cpus, mem, gpus, partition)

    def _candidates(self, free: np.ndarray, req: NodeRequest) -> np.ndarray:
        """The allowed nodes that can hold the per-node need, devices included (ascending)."""
        c, m, g = req.need_t
        lo, hi = req.lo, req.hi
        ok = fitting(free, (c, m, 0), lo, hi, req.mask)
        if g:
            dev = free[3:, lo:hi]
            if g < self.unit:
                ok &= (dev >= g).any(axis=0)
            else:
                ok &= (dev >= self.unit).sum(axis=0) >= g // self.unit
        idx = ok.nonzero()[0]
        return idx + lo if lo else idx

    def fits(self, free: np.ndarray, req: NodeRequest, keep: np.ndarray | None = None):
        """As :meth:`NodeModel.fits`; ``keep``: a free state whose idle devices a whole-GPU request
        leaves alone where it can (EASY places its head at the shadow time on the devices busy now
        first, so the devices idle now stay in the extra, as on a count of GPUs)."""
        cand = self._candidates(free, req)
        if len(cand) < req.nodes:
            return None
        if req.nodes == 1 and self.fit == "first":
            idx = cand[:1]
        else:
            idx = place(free[:3], req.need_t, req.nodes, req.lo, req.hi, req.mask, self.switch, self.capacity[:3],
                        self.fit, self.topology, cand=cand)
            if idx is None:
                return None
        c, m, g = req.need_t
        held = np.zeros((len(self.capacity), len(idx)), dtype=np.int64)
        held[0], held[1], held[2] = c, m, g
        if g:
            unit = self.unit
            dev = free[3:, idx]
            idle = None if keep is None else keep[3:, idx] >= unit
            for col in range(len(idx)):
                d = dev[:, col]
                if g < unit:  # the fullest device that still holds the share
                    held[3 + int(np.argmin(np.where(d >= g, d, unit + 1))), col] = g
                else:
                    whole = np.flatnonzero(d >= unit)
                    if idle is not None:  # devices idle in ``keep`` last
                        whole = whole[np.argsort(idle[whole, col], kind="stable")]
                    held[3 + whole[: g // unit], col] = unit
        return (idx, held, idx.tolist(), req.need_t)

    def count_fitting(self, free: np.ndarray, req: NodeRequest) -> int:
        return len(self._candidates(free, req))

    @staticmethod
    def take(free: np.ndarray, alloc) -> np.ndarray:
        free[:, alloc[0]] -= alloc[1]
        return free

    @staticmethod
    def give(free: np.ndarray, alloc) -> np.ndarray:
        free[:, alloc[0]] += alloc[1]
        return free

    @staticmethod
    def cap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.minimum(a, b)
        out[2] = out[3:].sum(axis=0)  # a node's GPU total is what its devices have free in both
        return out


def node_model(cluster: Cluster, fit: str = "first", topology: str = "none", cpu_unit: int = 1,
               gpu_unit: int = 1) -> NodeModel:
    """The model for jobs counted in ``cpu_unit``/``gpu_unit``: GPU devices are modelled only when
    GPUs are counted in shares (``gpu_unit`` > 1) and the cluster has GPUs."""
    if gpu_unit > 1 and any(g.gpus for g in cluster.groups):
        return DeviceNodeModel(cluster, fit=fit, topology=topology, cpu_unit=cpu_unit, gpu_unit=gpu_unit)
    return NodeModel(cluster, fit=fit, topology=topology, cpu_unit=cpu_unit, gpu_unit=gpu_unit)
