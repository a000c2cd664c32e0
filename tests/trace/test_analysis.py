"""simsched.trace.analysis: the DAG shape and footprint that ``trace info`` prints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.cli import main
from simsched.errors import ConfigError
from simsched.trace import TraceBuilder, open_trace, summary
from simsched.trace.analysis import dag_shape

SAMPLES = Path(__file__).resolve().parents[2] / "traces" / "samples"


def build(path, program):
    """Write the DAG ``program(b)`` makes, with one reference per strand it touches."""
    b = TraceBuilder(path, program="t")
    program(b)
    return b.close()


def tree(b, degrees, depth=0):
    """A frame that spawns ``degrees[depth]`` children, each doing the same one level down."""
    b.ref(0x1000 + 64 * depth, 8, False)
    if depth == len(degrees):
        return
    for _ in range(degrees[depth]):
        b.spawn()
        tree(b, degrees, depth + 1)
        b.ret()
    b.sync()


def test_hand_built_tree(tmp_path):
    # main spawns 3, each spawns 2, each of those spawns 4: 1 + 3 + 6 + 24 frames
    build(tmp_path / "t.sst", lambda b: tree(b, [3, 2, 4]))
    with open_trace(tmp_path / "t.sst") as t:
        s = dag_shape(t)
    assert s["levels"] == 4 and s["leaf_frames"] == 24
    assert s["branching"] == {
        "min": 2,
        "mean": 33 / 10,
        "max": 4,
        "histogram": [[2, 3], [3, 1], [4, 6]],
    }
    assert s["branching_by_level"] == [
        {"level": 0, "groups": 1, "min": 3, "mean": 3.0, "max": 3},
        {"level": 1, "groups": 3, "min": 2, "mean": 2.0, "max": 2},
        {"level": 2, "groups": 6, "min": 4, "mean": 4.0, "max": 4},
    ]
    assert s["iterations"] == 0
    assert s["frames_per_iteration"] == {"min": 0, "mean": 0.0, "max": 0}


def test_iterations_make_one_group_each(tmp_path):
    # main spawns k + 1 children in iteration k: one spawning group per iteration
    def prog(b):
        for k in range(3):
            b.iteration(k)
            for _ in range(k + 1):
                b.spawn()
                b.ref(0x2000, 8, True)
                b.ret()
            b.sync()

    build(tmp_path / "i.sst", prog)
    with open_trace(tmp_path / "i.sst") as t:
        s = dag_shape(t)
    assert s["branching"]["histogram"] == [[1, 1], [2, 1], [3, 1]]
    assert s["iterations"] == 3
    assert s["frames_per_iteration"] == {"min": 1, "mean": 2.0, "max": 3}
    assert s["levels"] == 2 and s["leaf_frames"] == 6


def test_a_trace_without_spawns(tmp_path):
    build(tmp_path / "s.sst", lambda b: b.ref(0x40, 8, True))
    with open_trace(tmp_path / "s.sst") as t:
        s = dag_shape(t)
    assert s["levels"] == 1 and s["leaf_frames"] == 1
    assert s["branching"] == {"min": 0, "mean": 0.0, "max": 0, "histogram": []}
    assert s["branching_by_level"] == []


@settings(max_examples=25)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=4))
def test_uniform_trees(tmp_path_factory, degrees):
    path = tmp_path_factory.mktemp("u") / "u.sst"
    build(path, lambda b: tree(b, degrees))
    with open_trace(path) as t:
        s = dag_shape(t)
        nf = len(t.frames)
    assert nf == 1 + sum(int(np.prod(degrees[: i + 1])) for i in range(len(degrees)))
    assert s["levels"] == len(degrees) + 1
    groups = sum(int(np.prod(degrees[:i])) for i in range(len(degrees)))
    assert sum(c for _, c in s["branching"]["histogram"]) == groups
    assert [r["min"] for r in s["branching_by_level"]] == degrees
    assert s["leaf_frames"] == int(np.prod(degrees))


def test_summary_of_captured_samples():
    heat = summary(SAMPLES / "heat-128-4-8.valgrind.sst")
    # main spawns one root per iteration, which halves 128 rows down to 8: levels 0..5
    assert heat["levels"] == 6 == heat["max_level"] + 1
    assert heat["branching"]["histogram"] == [[1, 4], [2, 60]]
    assert heat["iterations"] == 4
    assert heat["frames_per_iteration"] == {"min": 31, "mean": 31.0, "max": 31}
    # two 130 x 130 grids of doubles, plus a few stack lines
    assert 2 * 130 * 130 * 8 <= heat["footprint_bytes"] <= 2 * 130 * 130 * 8 + 4096
    assert heat["footprint_bytes"] == heat["footprint_lines"] * heat["line_size"]
    ck = summary(SAMPLES / "ck-5-2-2.valgrind.sst")
    assert ck["iterations"] == 0 and ck["branching"]["max"] > 4  # legal moves, cut by alpha-beta
    assert ck["footprint_bytes"] < 64 * 1024  # CPU-bound: stack and a few globals


def run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out


def test_info_prints_the_shape(capsys):
    sample = str(SAMPLES / "ge-ir-96-8.valgrind.sst")
    code, out = run(["trace", "info", sample, "--json"], capsys)
    assert code == 0
    info = json.loads(out)
    assert info["iterations"] == 95 and info["levels"] >= 3
    assert info["branching"]["max"] == 4 and info["branching"]["min"] == 1
    assert info["frames_per_iteration"]["min"] == 1
    code, out = run(["trace", "info", sample], capsys)
    assert code == 0
    for text in ("branching", "level 1:", "frames_per_iteration", "footprint_bytes", "1-4, mean"):
        assert text in out


def _naive_lines(arrays):
    """The oracle: every line number sorted together."""
    return len(np.unique(np.concatenate(arrays))) if arrays else 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 2**40), min_size=0, max_size=40).map(
            lambda v: np.array(v, np.uint64)
        ),
        max_size=12,
    ),
    st.integers(1, 6),
    st.integers(0, 4),
)
def test_line_set_counts_the_distinct_lines(arrays, block_shift, max_blocks):
    """Any mix of arrays within one block, across blocks and past the block limit (small
    blocks and limits here, so that every path runs) counts what sorting them all does."""
    from simsched.trace.analysis import _LineSet

    class Small(_LineSet):
        BLOCK_SHIFT = block_shift
        MAX_BLOCKS = max_blocks

    # near neighbours too, so that arrays share blocks and repeat lines
    arrays = [*arrays, *[a // 1024 for a in arrays], *[a % 97 for a in arrays]]
    s = Small()
    for a in arrays:
        s.add(a)
    assert s.count() == _naive_lines(arrays)


def test_footprint_equals_the_sorted_count_of_every_line():
    for name in ("heat-128-4-8.valgrind.sst", "ck-5-2-2.valgrind.sst"):
        with open_trace(SAMPLES / name) as t:
            lines = []
            for c in t.iter_chunks():
                lo = c.addr >> np.uint64(6)
                hi = (c.addr + c.size.astype(np.uint64) - np.uint64(1)) >> np.uint64(6)
                lines += [lo, hi]
        assert summary(SAMPLES / name, line=64)["footprint_lines"] == _naive_lines(lines)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"line": 48}, "line=48: a line size is a power of two"),
        ({"line": b"x"}, "line"),
        ({"progress": 3}, "progress=3: expected a function or None"),
    ],
)
def test_summary_names_a_wrong_argument(tmp_path, kwargs, says):
    """Before: int(b'x') failed, a line of 48 bytes gave a wrong footprint without a word,
    and a progress that is no function failed after the first chunk."""
    from simsched.workloads import generate

    path = tmp_path / "h.sst"
    generate("heat", path, nx=10, ny=10, iters=1)
    with pytest.raises(ConfigError) as info:
        summary(path, **kwargs)
    assert says in str(info.value)
