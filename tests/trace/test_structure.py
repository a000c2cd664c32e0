"""Structural damage sealed with valid checksums is refused when the trace is opened."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.trace import TraceBuilder, open_trace, validate
from tests.trace import forge


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    p = tmp_path_factory.mktemp("s") / "good.sst"
    with TraceBuilder(p, chunk_refs=16) as b:
        for i in range(3):
            b.spawn()
            b.refs(np.arange(10) * 64 + 4096 * i, 8, False, 1)
            b.spawn()
            b.ref(8, 8, True)
            b.ret()
            b.ret()
        b.sync()
    return p


def _set(name, i, v):
    def f(parts):
        parts.tables[name][i] = v

    return f


def _cycle(parts):
    parts.tables["frame_parent"][[1, 2]] = [2, 1]


def _junk(parts):
    parts.trailer = b"\0" * 8


def _drop_join(parts):
    j = int(np.flatnonzero(parts.tables["edge_kind"] == 2)[0])
    for k in ("edge_src", "edge_dst", "edge_kind"):
        parts.tables[k] = np.delete(parts.tables[k], j)


CASES = {
    "cyclic frame parents": (_cycle, "frame 1 has parent 2: frame parents are not a tree"),
    "self parent": (_set("frame_parent", 3, 3), "frame 3 has parent 3"),
    "strand frame out of range": (_set("strand_frame", 4, 99), "strand 4 names frame 99"),
    "edge strand out of range": (_set("edge_dst", 0, 10_000), "edge 0 \\(0 -> 10000\\) names"),
    "negative frame strand": (_set("frame_first_strand", 2, -5), "frame 2 has strands -5"),
    "backward edge": (_set("edge_dst", 0, 0), "does not follow serial order"),
    "unknown edge kind": (_set("edge_kind", 3, 7), "edge 3 has unknown kind 7"),
    "wrong edge kind": (_set("edge_kind", 0, 2), "edge 0 .* is a join edge between the wrong"),
    "level": (_set("frame_level", 2, 5), "frame 2: levels do not follow"),
    "branching": (_set("frame_branching", 1, 9), "frame 1 is spawn 0 of frame 0 with a branching"),
    "junk appended": (_junk, "8 bytes after the index section"),
    "missing join": (_drop_join, "frame .* is joined 0 times|strand .* join edges in"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_open_refuses(tmp_path, good, case):
    damage, message = CASES[case]
    forge.assert_refused(good, damage, message, tmp_path / "bad.sst")


def test_resealed_copy_is_valid(tmp_path, good):
    same = forge.seal(forge.read(good), tmp_path / "same.sst")
    assert same.read_bytes() == good.read_bytes() and validate(same)["ok"]


# -- edge targets: the right frame is not enough, the edge must reach the right strand ---------


@pytest.fixture(scope="module")
def two_syncs(tmp_path_factory):
    """main spawns A, B, syncs, spawns C, D, syncs.

    Strands: 0 main, 1 A, 2 main, 3 B, 4 main, 5 main after the sync (joins A and B),
    6 C, 7 main, 8 D, 9 main, 10 main after the sync (joins C and D).
    """
    p = tmp_path_factory.mktemp("e") / "two_syncs.sst"
    with TraceBuilder(p) as b:
        for _ in range(2):
            for _ in range(2):
                b.spawn()
                b.ref(64, 8, True)
                b.ret()
            b.sync()
    with open_trace(p) as t:
        assert t.strands.frame.tolist() == [0, 1, 0, 2, 0, 0, 3, 0, 4, 0, 0]
    return p


def _retarget(src, dst, kind, new_src=None, new_dst=None):
    def f(parts):
        t = parts.tables
        e = int(np.flatnonzero((t["edge_src"] == src) & (t["edge_dst"] == dst))[0])
        assert t["edge_kind"][e] == kind
        if new_src is not None:
            t["edge_src"][e] = new_src
        if new_dst is not None:
            t["edge_dst"][e] = new_dst
        order = np.lexsort((t["edge_dst"], t["edge_src"]))
        for k in ("edge_src", "edge_dst", "edge_kind"):
            t[k] = t[k][order]

    return f


TARGETS = {
    # the reported case: a join to another strand of the right parent
    "join to a strand before the sync": (
        _retarget(1, 5, 2, new_dst=4),
        "join edge .* \\(1 -> 4\\) joins frame 1 at the wrong strand of its parent frame 0: "
        "its first sync after the child returned is strand 5",
    ),
    "join to a later sync": (
        _retarget(1, 5, 2, new_dst=10),
        "join edge .* \\(1 -> 10\\) joins frame 1 at the wrong strand .* strand 5",
    ),
    "spawn from an earlier strand": (
        _retarget(2, 3, 0, new_src=0),
        "spawn edge .* \\(0 -> 3\\) does not come from the strand right before",
    ),
    "continuation from an earlier strand": (
        _retarget(2, 4, 1, new_src=0),
        "continuation edge .* \\(0 -> 4\\) does not come from",
    ),
}


@pytest.mark.parametrize("case", sorted(TARGETS))
def test_edges_to_the_wrong_strand_are_refused(tmp_path, two_syncs, case):
    damage, message = TARGETS[case]
    forge.assert_refused(two_syncs, damage, message, tmp_path / "bad.sst")


def test_join_into_the_continuation_is_a_called_frame(tmp_path, two_syncs):
    """A child joined right after its subtree is how a called Cilk function's frame is
    written (the caller waits for it at once): a valid DAG, not a damaged one."""
    parts = forge.read(two_syncs)
    _retarget(1, 5, 2, new_dst=2)(parts)
    assert validate(forge.seal(parts, tmp_path / "called.sst"))["ok"]
