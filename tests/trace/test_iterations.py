"""The iteration rule: marks are made in main, with increasing numbers (docs/trace-format.md).

Damaged iteration marks used to pass ``trace validate`` and change LAWS's makespan; now the
builder refuses to write them and opening a trace refuses them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from simsched.errors import IterationMarkError, TraceBuildError, TraceFormatError
from simsched.trace import TraceBuilder, open_trace, validate
from tests.trace import forge


def _tree(b: TraceBuilder, depth: int) -> None:
    b.ref(0x1000 + 64 * depth, 8, False, 1)
    if depth:
        for _ in range(2):
            b.spawn()
            _tree(b, depth - 1)
            b.ret()
        b.sync()


@pytest.fixture(scope="module")
def iterated(tmp_path_factory):
    """Main marks iterations 0, 1, 2 and spawns two trees of depth 2 in each."""
    p = tmp_path_factory.mktemp("it") / "iterated.sst"
    with TraceBuilder(p, chunk_refs=16) as b:
        for it in range(3):
            b.iteration(it)
            for _ in range(2):
                b.spawn()
                _tree(b, 2)
                b.ret()
            b.sync()
    return p


def _main_children(parts):
    return np.flatnonzero(parts.tables["frame_parent"] == 0)


def _reverse(parts):
    it = parts.tables["frame_iteration"]
    it[it >= 0] = 2 - it[it >= 0]


def _main_marked(parts):
    parts.tables["frame_iteration"][0] = 0


def _deep_mismarked(parts):
    it, parent = parts.tables["frame_iteration"], parts.tables["frame_parent"]
    f = int(np.flatnonzero(parent > 0)[0])
    it[f] = it[f] + 1


def _child_mismarked(parts):
    # the second child of main in iteration 0 claims iteration 1, with its subtree
    it, parent = parts.tables["frame_iteration"], parts.tables["frame_parent"]
    c = int(_main_children(parts)[1])
    it[c] = 1
    sub = np.zeros(it.shape[0], bool)
    sub[c] = True
    for f in range(c + 1, it.shape[0]):
        sub[f] = sub[parent[f]]
    it[sub] = 1


def _repeated(parts):
    # what iteration(1) twice wrote: iterations 0, 1, 1 and duplicate position keys
    it = parts.tables["frame_iteration"]
    it[it == 2] = 1


CASES = {
    "reversed numbers": (_reverse, "iteration numbers must increase"),
    "mark on main": (_main_marked, "frame 0 \\(main\\) has iteration 0"),
    "frame below main mis-marked": (_deep_mismarked, "only main's children start an iteration"),
    "child of main mis-marked": (_child_mismarked, "restart at every iteration mark"),
    "iteration repeated": (_repeated, "iteration numbers must increase"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_damaged_iteration_marks_are_refused(tmp_path, iterated, case):
    damage, message = CASES[case]
    forge.assert_refused(iterated, damage, message, tmp_path / "bad.sst")


def test_the_undamaged_trace_is_valid(iterated):
    assert validate(iterated)["ok"]
    with open_trace(iterated) as t:
        assert sorted(set(t.frames.iteration.tolist())) == [-1, 0, 1, 2]


def test_validate_checks_the_position_key_hashes(tmp_path, iterated):
    # a grandchild's hash is its parent's key's, not its own (parent and spawn index)
    parts = forge.read(iterated)
    t = parts.tables
    f = int(np.flatnonzero(t["frame_level"] == 2)[0])
    t["frame_key_hash"][f] = t["frame_key_hash"][t["frame_parent"][f]]
    bad = forge.seal(parts, tmp_path / "bad.sst")
    with pytest.raises(TraceFormatError, match=f"frame {f}: position key hash mismatch"):
        validate(bad)


def _twice(b):
    b.iteration(1)
    b.iteration(1)


def _inside(b):
    b.spawn()
    b.iteration(0)


def _while_main_has_a_child_outstanding(b):
    b.spawn()
    b.ret()
    b.call()
    b.iteration(0)


def _while_the_called_function_has_one(b):
    b.call()
    b.spawn()
    b.ret()
    b.iteration(0)


def _a_step_function_working_before_its_mark(b):
    # the work before the mark would be a frame of the iteration before
    for t in range(2):
        b.call()
        b.ref(64 * t, 8, False)
        b.iteration(t)
        b.call_ret()


def _a_spawn_outstanding_in_the_moved_function(b):
    b.call()
    b.iteration(0)
    b.spawn()
    b.ret()
    b.call()
    b.iteration(1)


def _called_inside_a_spawn(b):
    b.spawn(callee=5)
    b.call(fn=6)
    b.iteration(0)


@pytest.mark.parametrize(
    "action, message",
    [
        (_twice, "iteration mark 1 after iteration 1: iteration numbers must increase"),
        (lambda b: (b.iteration(3), b.iteration(2)), "iteration mark 2 after iteration 3"),
        (_inside, "iteration mark 0 inside a spawned frame \\(depth 1\\)"),
        (
            _while_main_has_a_child_outstanding,
            "iteration mark 0 inside a Cilk function that main calls \\(depth 1\\) while "
            "main has 1 spawned child\\(ren\\) not synced: the mark would move the sync",
        ),
        (
            _while_the_called_function_has_one,
            "iteration mark 0 inside a Cilk function that main calls \\(depth 1\\) while "
            "the Cilk function at depth 1 has 1 spawned child",
        ),
        (
            _a_step_function_working_before_its_mark,
            "iteration mark 1 inside a Cilk function that main calls \\(depth 1\\) after "
            "references or spawns in it since the call, while iterations run: .* make the "
            "mark the first thing the function does",
        ),
        (
            _a_spawn_outstanding_in_the_moved_function,
            "iteration mark 1 inside a Cilk function that main calls \\(depth 1\\) while "
            "main \\(with the Cilk function an earlier mark moved into it\\) has 1 spawned",
        ),
        (_called_inside_a_spawn, "iteration mark 0 inside a spawned frame \\(depth 2\\)"),
        (lambda b: b.iteration(-1), "iteration mark -1 is outside 0..2\\^63-1"),
        (lambda b: b.iteration(2**70), "iteration mark 1180591620717411303424 is outside"),
        (lambda b: b.iteration(1.5), "iteration mark 1.5 is not an integer"),
        (lambda b: b.iteration(float("nan")), "iteration mark nan is not an integer"),
    ],
)
def test_builder_refuses_bad_iteration_marks(tmp_path, action, message):
    p = tmp_path / "bad.sst"
    with pytest.raises(IterationMarkError, match=f"^{re.escape(str(p))}: {message}"):
        with TraceBuilder(p) as b:
            action(b)
    assert issubclass(IterationMarkError, ValueError)
    assert issubclass(IterationMarkError, TraceBuildError)
    assert list(tmp_path.iterdir()) == []


def test_builder_accepts_sparse_increasing_marks(tmp_path):
    p = tmp_path / "sparse.sst"
    with TraceBuilder(p) as b:
        for it in (0, 5, 2**40):
            b.iteration(it)
            b.spawn()
            b.ref(64, 8, False)
            b.ret()
    assert validate(p)["ok"]
    with open_trace(p) as t:
        assert t.frames.iteration.tolist() == [-1, 0, 5, 2**40]


def _step(b, t):
    """One time step: two leaves and the step's own work, synced."""
    for k in range(2):
        b.spawn()
        b.ref(4096 * k + 64 * t, 8, False, gap=3)
        b.ret()
    b.ref(64 * 999, 8, True, gap=1)
    b.sync()


def _loop(b, called_step):
    for t in range(3):
        b.iteration(t)
        if called_step:
            b.call()
        _step(b, t)
        if called_step:
            b.call_ret()
    b.ref(64 * 7, 8, False)


def _prologue(b):
    b.ref(0, 8, True, gap=2)
    b.spawn()
    b.ref(1 << 20, 8, True)
    b.ret()
    b.sync()


def _iteration_frames(p):
    """Each frame in an iteration: (iteration, parent's, level, spawn index, branching,
    references), the parent named the same way (main: None)."""
    with open_trace(p) as t:
        f = t.frames
        it, par = f.iteration.tolist(), f.parent.tolist()
        ref_start = t.strands.ref_start.tolist() + [t.header.n_refs]
        strand_frame = t.strands.frame.tolist()
        refs = [0] * t.header.n_frames
        for s, fr in enumerate(strand_frame):
            refs[fr] += ref_start[s + 1] - ref_start[s]
        order = [i for i in range(len(it)) if it[i] >= 0]
        name = {i: k for k, i in enumerate(order)}
        return [
            (
                it[i],
                name.get(par[i]),
                int(f.level[i]),
                int(f.spawn_index[i]),
                int(f.branching[i]),
                refs[i],
            )
            for i in order
        ], t.header.n_refs


@pytest.mark.parametrize("prologue", [False, True])
@pytest.mark.parametrize("called_step", [False, True])
@pytest.mark.parametrize("depth", [1, 2])
def test_a_time_loop_in_a_called_cilk_function_gives_main_its_steps(
    tmp_path, prologue, called_step, depth
):
    # main() { solve(); } with the time loop and its marks in solve(): the steps get the
    # frames they have with the loop in main; a solve() that did work first keeps it in
    # a called child of main before the first iteration, one that did not is undone
    with TraceBuilder(tmp_path / "main.sst") as b:
        b.instr(5)
        if prologue:
            _prologue(b)
        b.instr(7)
        _loop(b, called_step)
    with TraceBuilder(tmp_path / "solve.sst") as b:
        b.instr(5)
        for _ in range(depth):
            b.call()
        if prologue:
            _prologue(b)
        b.instr(7)
        _loop(b, called_step)
        for _ in range(depth):
            b.call_ret()
        assert b.open_calls == 0
    for p in ("main.sst", "solve.sst"):
        assert validate(tmp_path / p)["ok"]
    assert _iteration_frames(tmp_path / "solve.sst") == _iteration_frames(tmp_path / "main.sst")
    with open_trace(tmp_path / "solve.sst") as t, open_trace(tmp_path / "main.sst") as m:
        f = t.frames
        before = [i for i in range(t.header.n_frames) if f.iteration[i] < 0][1:]
        if prologue:
            # solve()'s frames before its first mark: the call chain and the prologue's child
            assert len(before) == depth + 1
            assert f.parent[before[0]] == 0 and f.level[before[0]] == 1
        else:
            # nothing but instructions before the mark: the trace of the loop in main,
            # instructions where they were
            assert before == []
            for table in ("frames", "strands", "edges"):
                for col, values in vars(getattr(m, table)).items():
                    np.testing.assert_array_equal(getattr(getattr(t, table), col), values)
        assert t.header.n_instructions == m.header.n_instructions


def test_a_step_function_that_marks_its_step_first_gives_the_steps_of_main(tmp_path):
    # main() { for (t...) step(t); } with step(t) { SS_ITER(t); ... }: each call was a
    # frame of its own holding nothing, in the iteration before (3, 3 and 2 frames)
    with TraceBuilder(tmp_path / "main.sst") as b:
        for t in range(3):
            b.instr(4)
            b.iteration(t)
            _step(b, t)
    with TraceBuilder(tmp_path / "step.sst") as b:
        for t in range(3):
            b.instr(2)
            b.call()
            b.instr(2)
            b.iteration(t)
            _step(b, t)
            b.call_ret()
    with open_trace(tmp_path / "step.sst") as t, open_trace(tmp_path / "main.sst") as m:
        assert np.bincount(t.frames.iteration[1:]).tolist() == [2, 2, 2]
        for col, values in vars(m.frames).items():
            np.testing.assert_array_equal(getattr(t.frames, col), values)
        assert t.header.n_instructions == m.header.n_instructions


def _never_returned(b):
    b.call()
    b.iteration(0)
    _step(b, 0)


def _returned_with_a_spawn_open(b):
    b.call()
    b.iteration(0)
    b.spawn()
    b.call_ret()


@pytest.mark.parametrize(
    "action, message",
    [
        (_never_returned, "1 Cilk call\\(s\\) never returned"),
        (_returned_with_a_spawn_open, "a Cilk call returns while a frame it spawned"),
    ],
)
def test_a_call_a_mark_moved_into_main_returns_to_main(tmp_path, action, message):
    with pytest.raises(TraceBuildError, match=message):
        with TraceBuilder(tmp_path / "t.sst") as b:
            action(b)
    assert list(tmp_path.iterdir()) == []
