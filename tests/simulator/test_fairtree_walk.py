"""Fair Tree factors against the algorithm as written (Slurm's Fair Tree, docs/simulator.md): at each
node, siblings get Level Fairshare S / U (S: their share of the siblings' shares, U: their share of
the siblings' usage, infinite when they have none), are visited from highest to lowest (ties by
name), depth first; users are ranked in visiting order, tied users under one parent share a rank, and
a user's factor is rank / users.  The reference below walks the tree one node at a time with plain
Python arithmetic; the simulator computes every level at once, so the two must agree exactly, ties
included, on trees with tied shares and usage."""

import math

import numpy as np
import pytest

from simulator import FairTree


def reference_factors(tree: FairTree) -> dict:
    usage = tree.usage.tolist()
    ranked: list = []

    def walk(node):
        kids = tree.children[node]
        shares = [tree.share[k] for k in kids]
        s_tot = sum(shares) or 1.0
        u_tot = sum(usage[k] for k in kids)
        level = {}
        for k, s in zip(kids, shares, strict=True):
            u = usage[k]
            level[k] = (math.inf if s > 0 else 0.0) if u <= 0 or u_tot <= 0 else (s / s_tot) / (u / u_tot)
        group: list = []
        for k in sorted(kids, key=lambda k: (-level[k], tree.names[k])):
            if tree.is_user[k]:
                if group and level[k] != level[group[-1]]:
                    ranked.append(group)
                    group = []
                group.append(k)
            else:
                if group:
                    ranked.append(group)
                    group = []
                walk(k)
        if group:
            ranked.append(group)

    walk(0)
    users = sum(len(g) for g in ranked)
    out, rank = {}, users
    for g in ranked:
        for k in g:
            out[k] = rank / users
        rank -= len(g)
    return out


def test_two_accounts_by_hand():
    # A has 1 share, B 3; A used 1, B used 1: S/U is 0.25/0.5 for A and 0.75/0.5 for B, so B's user
    # ranks first (factor 1) and A's second (factor 1/2)
    tree = FairTree(shares={"A": 1, "B": 3})
    tree.charge("A", "a", 1.0)
    tree.charge("B", "b", 1.0)
    assert tree.factors() == {"B:b": 1.0, "A:a": 0.5}


@pytest.mark.parametrize("seed", range(40))
def test_matches_reference_walk(seed):
    rng = np.random.default_rng(seed)
    accounts = ["x", "x/p", "x/q", "y", "y/p", "z", ""]
    shares = {a: int(rng.integers(0, 3)) for a in accounts if a}
    user_shares = {f"{a}:u{k}": int(rng.integers(0, 3)) for a in accounts for k in range(3)}
    tree = FairTree(shares=shares, user_shares=user_shares, half_life_s=50.0)
    for step in range(30):
        account = str(rng.choice(accounts))
        amount = float(rng.choice([0.0, 1.0, 2.0, rng.exponential(10.0)]))  # whole numbers tie often
        tree.charge(account, f"u{rng.integers(0, 3)}", amount)
        if rng.random() < 0.3:
            tree.decay(float(step))
        got = tree.node_factors()
        want = reference_factors(tree)
        assert got == want
        assert list(got) == list(want)  # visiting order too
