"""Finding iterations without markers (simsched.trace.iterations, via TraceBuilder.close)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.trace import open_trace, validate
from simsched.trace.builder import NO_CALLEE, TraceBuilder
from simsched.trace.iterations import no_iterations_reason


def _loop(path, steps, *, ranges=True, mark=False, odd_last=False):
    """main: a serial loop whose every step spawns a two-way split over one array."""
    b = TraceBuilder(path, program="loop")
    lo: list[int] = []
    hi: list[int] = []

    def ref(addr):
        b.ref(addr, 8, False)
        s = b.n_strands - 1
        while len(lo) <= s:
            lo.append(1 << 62)
            hi.append(-1)
        lo[s], hi[s] = min(lo[s], addr), max(hi[s], addr)

    ref(0x100)  # serial set-up in main
    for t in range(steps):
        if mark:
            b.iteration(t)
        b.spawn()  # the step: its own frame (as a called Cilk function would be)
        for half in range(2):
            b.spawn()
            for i in range(4):
                ref(0x10000 + 0x1000 * half + 8 * i)
            b.ret()
        b.sync()
        b.ret()
        b.sync()
        ref(0x200)  # the loop's own serial work (a pointer swap)
    if odd_last:
        b.spawn()
        ref(0x900000)
        b.ret()
        b.sync()
    n = b.n_strands
    arr = (np.asarray(lo + [1 << 62] * (n - len(lo))), np.asarray(hi + [-1] * (n - len(hi))))
    h = b.close(strand_ranges=arr if ranges else None)
    validate(path)
    return h


def test_repeated_steps_of_main_become_iterations(tmp_path):
    h = _loop(tmp_path / "a.sst", 5)
    assert h.params["iterations_found"] == 5
    with open_trace(tmp_path / "a.sst") as t:
        f = t.frames
        assert f.iteration.tolist() == [-1] + [i for i in range(5) for _ in range(3)]
        steps = np.flatnonzero(f.parent == 0)
        assert f.spawn_index[steps].tolist() == [0] * 5
        assert f.branching[steps].tolist() == [1] * 5
        # the same task has the same position key in every iteration
        assert len(set(f.key_hash[steps].tolist())) == 1
        kids = np.flatnonzero(f.parent == steps[3])
        assert (
            f.key_hash[kids].tolist() == f.key_hash[np.flatnonzero(f.parent == steps[0])].tolist()
        )


def test_found_iterations_equal_marked_ones(tmp_path):
    _loop(tmp_path / "found.sst", 4)
    _loop(tmp_path / "marked.sst", 4, ranges=False, mark=True)
    with open_trace(tmp_path / "found.sst") as a, open_trace(tmp_path / "marked.sst") as m:
        for col in ("parent", "iteration", "spawn_index", "branching", "level", "key_hash"):
            np.testing.assert_array_equal(getattr(a.frames, col), getattr(m.frames, col))


def test_no_repetition_no_iterations(tmp_path):
    h = _loop(tmp_path / "one.sst", 1)
    assert "iterations_found" not in h.params
    with open_trace(tmp_path / "one.sst") as t:
        assert int(t.frames.iteration.max()) == -1


def test_marks_win_and_a_trailing_phase_joins_the_last_iteration(tmp_path):
    h = _loop(tmp_path / "m.sst", 3, mark=True)
    assert "iterations_found" not in h.params  # marked: nothing to find
    _loop(tmp_path / "tail.sst", 3, odd_last=True)
    with open_trace(tmp_path / "tail.sst") as t:
        # as if SS_ITER(t) preceded each step: the different phase after the loop belongs
        # to the last iteration, as it would with markers
        assert int(t.frames.iteration.max()) == 2
        assert int(t.frames.iteration[-1]) == 2


def _tables(t):
    f = t.frames
    return {
        k: getattr(f, k).tolist() for k in ("spawn_index", "branching", "iteration", "key_hash")
    }


def test_with_iterations_gives_the_tables_an_import_with_that_mode_writes(tmp_path):
    """A replay's ``--iterations`` relabelling equals marking (or not) when the trace was built."""
    from simsched.trace.iterations import strand_ranges, with_iterations

    _loop(tmp_path / "found.sst", 4)
    _loop(tmp_path / "marked.sst", 4, mark=True)
    _loop(tmp_path / "plain.sst", 4, ranges=False)
    with (
        open_trace(tmp_path / "found.sst") as found,
        open_trace(tmp_path / "marked.sst") as marked,
        open_trace(tmp_path / "plain.sst") as plain,
    ):
        assert _tables(found) == _tables(marked) != _tables(plain)
        # auto on a trace without iterations finds them from its references
        lo, hi = strand_ranges(plain)
        assert lo[0] == 0x100 and hi[0] == 0x107 and lo[1] > hi[1]  # main's set-up; a fork
        auto = with_iterations(plain, "auto")
        assert _tables(auto) == _tables(found)
        assert auto.header.params["iterations_found"] == 4
        assert "iterations_found" not in plain.header.params  # the original is untouched
        # none removes marked and found iterations alike; markers only found ones
        assert _tables(with_iterations(marked, "none")) == _tables(plain)
        assert _tables(with_iterations(found, "none")) == _tables(plain)
        assert _tables(with_iterations(found, "markers")) == _tables(plain)
        assert with_iterations(marked, "markers") is marked
        assert with_iterations(found, "auto") is found
        assert with_iterations(plain, None) is plain


@pytest.mark.parametrize("mode", [["auto"], np.array(["auto", "none"]), 3])
def test_an_iterations_mode_that_is_no_text_is_named(tmp_path, mode):
    """Before: an array or table as the mode was compared element by element ("The truth
    value of an array ... is ambiguous")."""
    from simsched.trace.iterations import with_iterations

    _loop(tmp_path / "plain.sst", 2, ranges=False)
    with open_trace(tmp_path / "plain.sst") as t, pytest.raises(ConfigError) as info:
        with_iterations(t, mode)
    assert str(info.value).startswith("iterations=")
    assert str(info.value).endswith(": choose one of auto, markers, none")


def test_what_is_not_an_open_trace_is_named(tmp_path):
    """Before: a path or a number failed with "'int' object has no attribute 'frames'"."""
    from simsched.trace.iterations import with_iterations

    for t in (123, str(tmp_path / "plain.sst")):
        with pytest.raises(ConfigError, match=r"^t=.*: expected an open Trace \(simsched"):
            with_iterations(t, "auto")


def _cilk_for_in_main(path, steps, calls):
    """main: per step, a cilk_for whose lower half is spawned and whose last leaf runs in
    main's own frame, calling a Cilk function (a frame with one spawned task) ``calls``
    times while the half is outstanding; then the loop's sync."""
    b = TraceBuilder(path, program="loop")
    ranges: list[tuple[int, int]] = []

    def ref(addr):
        b.ref(addr, 8, False)
        while len(ranges) < b.n_strands:
            ranges.append((1 << 62, -1))
        lo, hi = ranges[b.n_strands - 1]
        ranges[b.n_strands - 1] = (min(lo, addr), max(hi, addr))

    def body(i):
        b.call(fn=7)
        b.spawn(callee=8)
        ref(0x10000 + 64 * i)
        b.ret()
        ref(0x10008 + 64 * i)
        b.sync()
        b.call_ret()

    for _ in range(steps):
        b.spawn(callee=NO_CALLEE)  # the lower half: a leaf of calls of its own
        for i in range(calls):
            body(i)
        b.ret()
        for i in range(calls, 2 * calls):
            body(i)
        b.sync()
    n = b.n_strands
    ranges += [(1 << 62, -1)] * (n - len(ranges))
    lo, hi = (np.asarray(x) for x in zip(*ranges, strict=True))
    h = b.close(strand_ranges=(lo, hi))
    validate(path)
    return h


@pytest.mark.parametrize(("steps", "found"), [(1, None), (3, 3)])
def test_calls_in_main_while_a_spawn_is_outstanding_belong_to_its_phase(tmp_path, steps, found):
    # one loop: its 4 calls in main were 4 repeated phases (4 "iterations"); 3 steps of 9
    # calls each were 10 phases a step, a block longer than the 8 looked for (none found)
    h = _cilk_for_in_main(tmp_path / "a.sst", steps, 4 if steps == 1 else 9)
    assert h.params.get("iterations_found") == found
    with open_trace(tmp_path / "a.sst") as t:
        f = t.frames
        calls = np.flatnonzero(f.parent == 0)[1:]
        # every call of the body is a frame of its own, in the spawned half too
        assert len(np.flatnonzero(f.parent == np.flatnonzero(f.parent == 0)[0])) == (
            4 if steps == 1 else 9
        )
        if found:
            assert f.iteration[calls].max() == steps - 1


def _solve(path, *, tail=False):
    """main calls solve(), whose loop runs 3 steps of two spawned halves; ``tail``: main
    spawns one more frame after the call."""
    with TraceBuilder(path) as b:
        b.call(fn=9)
        for _ in range(3):
            for half in range(2):
                b.spawn(callee=NO_CALLEE)
                b.ref(0x10000 + 0x1000 * half, 8, False)
                b.ret()
            b.sync()
        b.call_ret()
        if tail:
            b.spawn()
            b.ret()


def test_a_time_loop_inside_a_called_function_is_said_to_be_found_only_at_import(tmp_path):
    # solve(steps) called from main: one phase, and the capture said nothing at all; its
    # marks change the frame table, so a trace already imported cannot have them
    p = tmp_path / "solve.sst"
    _solve(p)
    with open_trace(p) as t:
        why = no_iterations_reason(t)
    assert why.startswith("main has one phase, one Cilk function it calls (with 6 children")
    assert "whose 3 repeated steps are iterations only when the raw stream is imported" in why
    assert "re-import it with `simsched trace import --iterations auto`" in why
    assert "write the time loop in main" in why


def test_find_iterations_searches_the_children_of_a_given_frame(tmp_path):
    from simsched.trace.iterations import called_function, find_iterations, strand_ranges

    for tail in (False, True):
        p = tmp_path / f"solve{tail}.sst"
        _solve(p, tail=tail)
        with open_trace(p) as t:
            f, e = t.frames, t.edges
            table = (f.parent, f.level, f.first_strand, f.last_strand, e.src, e.dst, e.kind)
            lo, hi = strand_ranges(t)
            args = (*table, t.strands.ref_start, lo, hi)
            # main's phases: solve() (and the tail): nothing repeats there
            assert find_iterations(*args) == find_iterations(*args, root=0) == []
            # solve() is found alone and beside a phase after it (an output loop)
            assert called_function(f.parent, *table[2:]) == 1
            # solve()'s children: 3 steps of 2 halves, frames 2 to 7
            assert find_iterations(*args, root=1) == [2, 4, 6]


def test_why_no_iterations_names_main_phases(tmp_path):
    _loop(tmp_path / "one.sst", 1)
    _loop(tmp_path / "two.sst", 1, odd_last=True)  # a step, then something else
    with open_trace(tmp_path / "one.sst") as t:
        assert no_iterations_reason(t) == (
            "main has one phase (1 child frame(s) joined together): nothing repeats"
        )
    with open_trace(tmp_path / "two.sst") as t:
        assert int(t.frames.iteration.max()) == -1
        assert no_iterations_reason(t).startswith("main's 2 phases hold no block of up to 8")


_PHASE = st.one_of(
    st.tuples(st.just("spawns"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("call"), st.integers(0, 4), st.booleans()),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(phases=st.lists(_PHASE, min_size=1, max_size=12))
def test_the_called_function_is_the_largest_call_main_waits_for_that_has_children(tmp_path, phases):
    # main runs phases of spawned children (some spawning one more) and calls of Cilk
    # functions spawning 0-4 children (some calling one more function inside); the frame
    # found is the largest call with children, the first of equals
    from simsched.trace.iterations import called_function

    p = tmp_path / "phases.sst"
    want, most = -1, 0
    with TraceBuilder(p) as b:
        for i, (what, n, nested) in enumerate(phases):
            b.ref(0x1000 + 64 * i, 8, False)
            if what == "spawns":
                for _ in range(n):
                    b.spawn(callee=NO_CALLEE)
                    if nested:
                        b.spawn(callee=NO_CALLEE)
                        b.ret()
                        b.sync()
                    b.ret()
                b.sync()
                continue
            f = b.n_frames
            b.call(fn=9)
            for _ in range(n):
                b.spawn(callee=NO_CALLEE)
                b.ret()
            if nested:
                b.call(fn=10)
                b.spawn(callee=NO_CALLEE)
                b.ret()
                b.sync()
                b.call_ret()
            b.sync()
            b.call_ret()
            if n + nested and b.n_frames - f > most:
                want, most = f, b.n_frames - f
    with open_trace(p) as t:
        fr, e = t.frames, t.edges
        assert (
            called_function(fr.parent, fr.first_strand, fr.last_strand, e.src, e.dst, e.kind)
            == want
        )
