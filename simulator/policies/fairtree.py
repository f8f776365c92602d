"""Fair Tree fair-share (Slurm's algorithm, simplified where noted).

Associations form a tree: account path components (``org/team/project``), with users as leaves
under their account.  Each node has *shares* (default 1) and *usage* (resource-seconds, decayed
with a half-life).  Among siblings, the Level Fairshare is ``S / U`` with ``S`` the node's share of
its siblings' shares and ``U`` its share of their usage (no usage: infinitely deserving).  A
depth-first walk visits siblings from highest to lowest Level Fairshare (ties by name); users are
ranked in visiting order, and a user's fair-share factor is ``rank / users`` (1 for the first).
Users with equal Level Fairshare under the same parent share a rank.  Simplification: Slurm merges
tied *accounts* before descending; we order them by name.

Usage is kept per tree node in one NumPy array: charging a batch of users adds through an
ancestor-membership matrix, and decay is one multiplication.
"""

from __future__ import annotations

import math

import numpy as np


def level_fairshare(shares: list, usage: list) -> list:
    """``S / U`` for each sibling (``inf`` when its usage is zero)."""
    s_tot = sum(shares) or 1.0
    u_tot = sum(usage)
    out = []
    for s, u in zip(shares, usage, strict=True):
        if u <= 0 or u_tot <= 0:
            out.append(math.inf if s > 0 else 0.0)
        else:
            out.append((s / s_tot) / (u / u_tot))
    return out


def decay_factor(dt: float, half_life_s: float) -> float:
    """How much usage remains after ``dt`` seconds."""
    if half_life_s <= 0 or math.isinf(half_life_s):
        return 1.0
    return 0.5 ** (dt / half_life_s)


class FairTree:
    """Fair-share factors over the account tree.

    ``shares``: account path → shares (e.g. ``{"physics": 3, "physics/astro": 1}``); ``user_shares``:
    ``"account path:user"`` → shares; unlisted nodes have 1.  ``half_life_s``: usage decay half-life.
    """

    def __init__(self, shares: dict | None = None, user_shares: dict | None = None,
                 half_life_s: float = 7 * 86400.0):
        self.shares = dict(shares or {})
        self.user_shares = dict(user_shares or {})
        self.half_life_s = float(half_life_s)
        self.reset()

    def reset(self) -> None:
        self.names = [""]          # node 0 is the root
        self.is_user = [False]
        self.children: list = [[]]
        self.share = [1.0]
        self.ancestors: list = [[0]]  # each node's path from the root, itself included
        self.index = {"": 0}
        self.usage = np.zeros(1)
        self.leaves: dict = {}       # (account, user) → node
        self.last_decay = None
        self._matrix = None
        self._plan = None

    # ---- building ---------------------------------------------------------------------------
    def _node(self, key: str, parent: int, is_user: bool) -> int:
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.names)
            self.names.append(key)
            self.is_user.append(is_user)
            self.children.append([])
            self.children[parent].append(k)
            shares = self.user_shares if is_user else self.shares
            self.share.append(float(shares.get(key, 1.0)))
            self.ancestors.append([*self.ancestors[parent], k])
            self.usage = np.append(self.usage, 0.0)
            self._matrix = None
            self._plan = None
        return k

    def leaf(self, account: str, user: str) -> int:
        """The node of a user under an account (created on first use)."""
        k = self.leaves.get((account, user))
        if k is None:
            node = 0
            parts = [p for p in account.split("/") if p] if account else []
            for j in range(len(parts)):
                node = self._node("/".join(parts[: j + 1]), node, False)
            k = self.leaves[(account, user)] = self._node(f"{account}:{user}", node, True)
        return k

    def touch(self, account: str, user: str) -> None:
        """Make sure the association exists (a user with no usage yet)."""
        self.leaf(account, user)

    # ---- usage ------------------------------------------------------------------------------
    def decay(self, now: float) -> None:
        if self.last_decay is not None and now > self.last_decay:
            f = decay_factor(now - self.last_decay, self.half_life_s)
            if f != 1.0:
                self.usage *= f
        self.last_decay = now

    def charge(self, account: str, user: str, amount: float) -> None:
        """Add ``amount`` of usage to the user and every account above it."""
        path = self.ancestors[self.leaf(account, user)]  # may grow the tree (and the usage array)
        self.usage[path] += amount

    def charge_leaves(self, leaves: np.ndarray, amounts: np.ndarray) -> None:
        """Add ``amounts[k]`` to leaf node ``leaves[k]`` and its ancestors, for all ``k`` at once."""
        if self._matrix is None:
            n = len(self.names)
            m = np.zeros((n, n))
            for k, path in enumerate(self.ancestors):
                m[path, k] = 1.0
            self._matrix = m
        contrib = np.zeros(len(self.names))
        np.add.at(contrib, leaves, amounts)
        self.usage += self._matrix @ contrib

    def total_usage(self) -> float:
        return float(self.usage[0])

    # ---- factors ----------------------------------------------------------------------------
    def factors(self) -> dict:
        """``"account:user"`` → fair-share factor in (0, 1]."""
        return {self.names[k]: f for k, f in self.node_factors().items()}

    def node_factors(self) -> dict:
        """User node → fair-share factor: users are ranked in visiting order, a group of tied
        siblings sharing the rank of its first member."""
        kids, level = self._visiting_order()
        first, users = self._layout()[4:]
        is_user = self.is_user
        out = {}
        rank = users  # the rank of the group being filled
        size = 0  # its members so far
        last = None
        stack = [(first[0], first[1])]
        while stack:
            pos, end = stack.pop()
            while pos < end:
                kid = kids[pos]
                if is_user[kid]:
                    if size and level[pos] != last:
                        rank -= size
                        size = 0
                    out[kid] = rank / users
                    size += 1
                    last = level[pos]
                    pos += 1
                else:  # an account: its subtree is visited before the siblings that follow it
                    rank -= size
                    size = 0
                    stack.append((pos + 1, end))
                    pos, end = first[kid], first[kid + 1]
            rank -= size  # a group never spans two parents
            size = 0
        return out

    def _layout(self) -> tuple:
        """What the walk needs of the tree's shape, kept until it grows: each non-root node's parent,
        share of its siblings' shares, Level Fairshare without usage, and name rank (arrays over nodes
        1…), where each node's children start in the parent-major order (``first[p]`` to
        ``first[p + 1]``), and how many users there are."""
        if self._plan is None:
            n = len(self.names)
            parent = np.array([path[-2] for path in self.ancestors[1:]], dtype=np.int64)
            frac = np.zeros(n - 1)
            idle = np.zeros(n - 1)
            for kids in self.children:
                if not kids:
                    continue
                total = sum([self.share[k] for k in kids]) or 1.0
                for k in kids:
                    frac[k - 1] = self.share[k] / total
                    idle[k - 1] = math.inf if self.share[k] > 0 else 0.0
            rank = np.empty(n, dtype=np.int64)
            rank[sorted(range(n), key=self.names.__getitem__)] = np.arange(n)
            first = [0] * (n + 1)
            for k in range(n):
                first[k + 1] = first[k] + len(self.children[k])
            self._plan = (parent, frac, idle, rank[1:], first, sum(self.is_user))
        return self._plan

    def _visiting_order(self) -> tuple:
        """Every non-root node grouped by parent, siblings from the highest Level Fairshare ``S / U``
        to the lowest (ties by name), as lists of nodes and of their Level Fairshare.  The same
        arithmetic as :func:`level_fairshare`: sibling usage is summed in child order (``bincount``
        adds in index order, and children are numbered in the order they were added)."""
        parent, frac, idle, rank = self._layout()[:4]
        usage = self.usage[1:]
        sibling_usage = np.bincount(parent, weights=usage, minlength=len(self.names))[parent]
        live = (usage > 0) & (sibling_usage > 0)
        level = idle.copy()
        level[live] = frac[live] / (usage[live] / sibling_usage[live])
        order = np.lexsort((rank, -level, parent))
        return (order + 1).tolist(), level[order].tolist()
