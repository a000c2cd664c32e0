"""Task groups (simsched.profile.groups): the §6.1 hierarchy against a recursive oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from simsched.profile import build_groups
from simsched.profile.groups import KIND_NAMES, KIND_SPLIT, ROLE_PAR
from simsched.trace import open_trace
from tests.oracles.profile_oracle import group_tree_oracle
from tests.profile._traces import build_fanout, build_random


def _check_invariants(g) -> None:
    n = len(g)
    assert g.start[0] == 0 and g.stop[0] == g.n_strands - 1
    assert (g.parent[1:] < np.arange(1, n)).all()  # pre-order
    for x in range(n):
        kids = g.children_of(x)
        if len(kids) == 0:
            assert g.start[x] == g.stop[x] and g.leaf_of[g.start[x]] == x
            continue
        # the children partition the parent's strands, in order
        assert g.start[kids[0]] == g.start[x] and g.stop[kids[-1]] == g.stop[x]
        assert (g.start[kids[1:]] == g.stop[kids[:-1]] + 1).all()
        assert (g.depth[kids] == g.depth[x] + 1).all()
    off, nodes, starts = g.ancestors()
    for s in range(g.n_strands):
        chain = nodes[off[s] : off[s + 1]]
        assert chain[0] == 0 and chain[-1] == g.leaf_of[s]
        assert (np.diff(starts[off[s] : off[s + 1]]) >= 0).all()


@given(seed=st.integers(0, 2**32 - 1))
def test_group_tree_matches_recursive_oracle(tmp_path_factory, seed):
    path = build_random(tmp_path_factory.mktemp("g") / "r.sst", seed, depth=3)
    with open_trace(path) as t:
        g = build_groups(t)
        expected = group_tree_oracle(t)
    got = [
        (int(a), int(b), KIND_NAMES[int(k)])
        for a, b, k in zip(g.start, g.stop, g.kind, strict=True)
    ]
    assert got == expected
    _check_invariants(g)


def test_k_siblings_split_into_ceil_and_floor_halves(tmp_path):
    # §6.1: "recursively dividing a group containing K tasks into two sub-groups containing
    # ⌈K/2⌉ and ⌊K/2⌋ tasks"
    with open_trace(build_fanout(tmp_path / "f.sst", 5)) as t:
        g = build_groups(t)
    _check_invariants(g)
    # main: phase 0 (its strand and the five spawns), then the post-sync strand
    phase, tail = g.children_of(0)
    assert KIND_NAMES[g.kind[phase]] == "phase" and KIND_NAMES[g.kind[tail]] == "strand"
    root_par = [c for c in g.children_of(phase) if g.role[c] == ROLE_PAR]
    assert len(root_par) == 2
    sizes = []
    for c in root_par:
        assert g.kind[c] == KIND_SPLIT
        sizes.append(int(g.child_hi[c] - g.child_lo[c] + 1))
    assert sizes == [3, 2]
    # the 3-sibling half splits into 2 + 1: a split and a frame
    a, b = [c for c in g.children_of(root_par[0]) if g.role[c] == ROLE_PAR]
    assert (int(g.child_hi[a] - g.child_lo[a] + 1), KIND_NAMES[g.kind[b]]) == (2, "frame")
