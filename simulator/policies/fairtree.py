"""Fair Tree fair-share (Slurm's algorithm, simplified where noted).

Associations form a tree: account path components (``org/team/project``), with users as leaves
under their account.  Each node has *shares* (default 1) and *usage* (resource-seconds, decayed
with a half-life).  Among siblings, the Level Fairshare is ``S / U`` with ``S`` the node's share of
its siblings' shares and ``U`` its share of their usage (no usage: infinitely deserving).  A
depth-first walk visits siblings from highest to lowest Level Fairshare (ties by name); users are
ranked in visiting order, and a user's fair-share factor is ``rank / users`` (1 for the first).
Users with equal Level Fairshare under the same parent share a rank.  Simplification: Slurm merges
tied *accounts* before descending; we order them by name.
"""

from __future__ import annotations

import math


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


class _Node:
    __slots__ = ("name", "children", "usage", "is_user")

    def __init__(self, name: str, is_user: bool = False):
        self.name = name
        self.children: dict = {}
        self.usage = 0.0
        self.is_user = is_user


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
        self.root = _Node("")
        self.last_decay = None
        self._paths: dict = {}

    def _leaf(self, account: str, user: str) -> list:
        """The path of nodes from the root to the user's leaf (created on first use)."""
        path = self._paths.get((account, user))
        if path is None:
            path = self._paths[(account, user)] = self._make_leaf(account, user)
        return path

    def _make_leaf(self, account: str, user: str) -> list:
        node = self.root
        path = [node]
        parts = [p for p in account.split("/") if p] if account else []
        for k in range(len(parts)):
            key = "/".join(parts[: k + 1])
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Node(key)
            node = child
            path.append(node)
        ukey = f"{account}:{user}"
        leaf = node.children.get(ukey)
        if leaf is None:
            leaf = node.children[ukey] = _Node(ukey, is_user=True)
        path.append(leaf)
        return path

    def decay(self, now: float) -> None:
        if self.last_decay is not None and now > self.last_decay:
            f = decay_factor(now - self.last_decay, self.half_life_s)
            if f != 1.0:
                stack = [self.root]
                while stack:
                    node = stack.pop()
                    node.usage *= f
                    stack.extend(node.children.values())
        self.last_decay = now

    def charge(self, account: str, user: str, amount: float) -> None:
        """Add ``amount`` of usage to the user and every account above it."""
        for node in self._leaf(account, user):
            node.usage += amount

    def touch(self, account: str, user: str) -> None:
        """Make sure the association exists (a user with no usage yet)."""
        self._leaf(account, user)

    def _share(self, node: _Node) -> float:
        if node.is_user:
            return float(self.user_shares.get(node.name, 1.0))
        return float(self.shares.get(node.name, 1.0))

    def factors(self) -> dict:
        """``"account:user"`` → fair-share factor in (0, 1]."""
        ranked: list = []  # groups of users sharing a rank, in visiting order
        self._walk(self.root, ranked)
        total = sum(len(g) for g in ranked)
        out = {}
        rank = total
        for group in ranked:
            for name in group:
                out[name] = rank / total
            rank -= len(group)
        return out

    def _walk(self, node: _Node, ranked: list) -> None:
        kids = list(node.children.values())
        if not kids:
            return
        lf = level_fairshare([self._share(k) for k in kids], [k.usage for k in kids])
        order = sorted(range(len(kids)), key=lambda k: (-lf[k], kids[k].name))
        pending_users: list = []
        last_lf = None
        for k in order:
            kid = kids[k]
            if kid.is_user:
                if pending_users and lf[k] != last_lf:
                    ranked.append(pending_users)
                    pending_users = []
                pending_users.append(kid.name)
                last_lf = lf[k]
            else:
                if pending_users:
                    ranked.append(pending_users)
                    pending_users = []
                self._walk(kid, ranked)
        if pending_users:
            ranked.append(pending_users)
