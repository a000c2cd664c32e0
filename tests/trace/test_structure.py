"""Structural damage sealed with valid checksums is refused when the trace is opened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from simsched.errors import TraceFormatError
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
    parts = forge.read(good)
    damage(parts)
    bad = forge.seal(parts, tmp_path / "bad.sst")
    with pytest.raises(TraceFormatError, match=f"^{re.escape(str(bad))}: .*({message})"):
        open_trace(bad)
    with pytest.raises(TraceFormatError):
        validate(bad)


def test_resealed_copy_is_valid(tmp_path, good):
    same = forge.seal(forge.read(good), tmp_path / "same.sst")
    assert same.read_bytes() == good.read_bytes() and validate(same)["ok"]
