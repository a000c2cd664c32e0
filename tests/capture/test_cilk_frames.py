"""Cilk frame semantics: every invocation of a Cilk function has a frame of its own.

The textbook form of a divide-and-conquer step calls its last child
(``cilk_spawn f(lo, mid); f(mid, hi); cilk_sync;``); the spawn-everything form spawns it.
A Cilk runtime gives both the same frame tree (cactus stack), and so must a capture:
the same frames, parents, levels and branching degrees.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from simsched.capture import capture, compile_program
from simsched.errors import CaptureError, TraceFormatError
from simsched.trace import open_trace, validate
from simsched.trace.format import EDGE_JOIN
from simsched.trace.raw import M_ITER, RAW_VERSION, REC_MARKER, import_raw, iter_raw_blocks
from tests.trace.test_raw_inner_iterations import assert_same_trace

from .conftest import PROGRAMS, needs_gcc

pytestmark = needs_gcc

# program, arguments, the flag that gives the spawn-everything form, the called form's flag
FORMS = {
    "fib": (["14", "4"], "-DSPAWN_ALL_CHILDREN", "-DCALL_LAST_CHILD"),
    "mergesort": (["4096", "256"], "-DSPAWN_ALL_CHILDREN", "-DCALL_LAST_CHILD"),
    "jacobi": (["62", "3", "4"], "-DSPAWN_ALL_CHILDREN", "-DCALL_LAST_CHILD"),
}


def _build(bindir, name: str, *flags: str):
    exe = bindir / f"frames-{name}{''.join(flags)}"
    if not exe.exists():
        src = PROGRAMS / "cilk" / f"{name}.c"
        assert compile_program(["-O2", *flags, str(src), "-o", str(exe), "-lm"]) == 0
    return exe


@pytest.mark.parametrize("name", sorted(FORMS))
def test_called_last_child_gives_the_spawn_everything_frame_tree(cache, bindir, tmp_path, name):
    args, spawn_flag, call_flag = FORMS[name]
    s = capture(str(_build(bindir, name, spawn_flag)), args, tmp_path / "s.sst")
    c = capture(str(_build(bindir, name, call_flag)), args, tmp_path / "c.sst")
    validate(c.out)
    with open_trace(s.out) as ts, open_trace(c.out) as tc:
        assert ts.header.n_frames > 20
        assert ts.header.n_frames == tc.header.n_frames
        for col in ("parent", "level", "branching", "spawn_index"):
            np.testing.assert_array_equal(getattr(ts.frames, col), getattr(tc.frames, col))
        kids = np.bincount(tc.frames.parent[1:], minlength=tc.header.n_frames)
        if name != "mergesort":  # (sort_par also calls merge_par: three children)
            # main starts one fib, or calls the fill and one sweep per time step; below, a binary
            # recursion: every frame that has children has two
            assert kids[0] == (1 + 3 if name == "jacobi" else 1)  # jacobi: fill, 3 steps
            assert set(kids[1:][kids[1:] > 0].tolist()) == {2}

        # a called child is joined at once: its parent's very next strand waits for it
        def at_once(t):
            join = t.edges.kind == EDGE_JOIN
            return int((t.edges.dst[join] == t.edges.src[join] + 1).sum())

        assert at_once(tc) > at_once(ts)


def test_jacobi_frame_tree_depth_follows_the_halving(cache, bindir, tmp_path):
    # 62 rows halved down to at most 4: 62 -> 31 -> 15/16 -> 7/8 -> 3/4: 4 levels of
    # splitting below each step's frame, which sits below main
    exe = _build(bindir, "jacobi", "-DCALL_LAST_CHILD")
    res = capture(str(exe), ["62", "3", "4"], tmp_path / "j.sst")
    with open_trace(res.out) as t:
        assert int(t.frames.level.max()) == 1 + 4


def test_time_steps_of_an_unmarked_program_are_found_as_iterations(cache, bindir, tmp_path):
    exe = _build(bindir, "jacobi", "-DCALL_LAST_CHILD")
    res = capture(str(exe), ["62", "5", "4"], tmp_path / "j.sst")
    assert res.header.params["iterations_found"] == 5
    with open_trace(res.out) as t:
        it = t.frames.iteration
        assert sorted(set(it.tolist())) == [-1, 0, 1, 2, 3, 4]
        assert np.bincount(it[it >= 0]).tolist() == [int((it == 0).sum())] * 5
    off = capture(str(exe), ["62", "5", "4"], tmp_path / "m.sst", iterations="markers")
    with open_trace(off.out) as t:
        assert int(t.frames.iteration.max()) == -1


def test_iterations_none_drops_the_marks(cache, bindir, tmp_path):
    exe = _build(bindir, "heat", "-DCALL_LAST_CHILD")  # heat marks its steps with SS_ITER
    marked = capture(str(exe), ["30", "3", "8"], tmp_path / "h.sst")
    none = capture(str(exe), ["30", "3", "8"], tmp_path / "n.sst", iterations="none")
    assert "iterations_found" not in marked.header.params
    with open_trace(marked.out) as a, open_trace(none.out) as b:
        assert int(a.frames.iteration.max()) == 2
        assert int(b.frames.iteration.max()) == -1


def test_a_time_loop_marked_in_a_called_function_gives_the_frames_of_one_in_main(
    cache, bindir, tmp_path
):
    # heat built with the loop and its SS_ITER in solve(), which main calls (the import
    # stopped: "iteration mark 0 inside a Cilk function that main calls"): solve() does
    # nothing but instructions before its first mark, so its call is undone and the frames
    # are those of the loop written in main
    solved = capture(
        str(_build(bindir, "heat", "-DLOOP_IN_SOLVE")), ["30", "3", "8"], tmp_path / "s"
    )
    inmain = capture(str(_build(bindir, "heat", "-O2")), ["30", "3", "8"], tmp_path / "m")
    with open_trace(solved.out) as ts, open_trace(inmain.out) as tm:
        assert ts.header.n_refs == tm.header.n_refs and ts.header.n_frames > 9
        assert np.bincount(ts.frames.iteration[1:]).tolist() == [ts.header.n_frames // 3] * 3
        for col in ("parent", "level", "branching", "spawn_index", "iteration"):
            np.testing.assert_array_equal(getattr(ts.frames, col), getattr(tm.frames, col))


@pytest.mark.parametrize("form", [(), ("-DCALL_LAST_CHILD",)])
def test_an_unmarked_time_loop_in_a_called_function_is_found_and_marked_as_written(
    cache, bindir, tmp_path, form
):
    # heat with its loop in solve() and the SS_ITER marks compiled out: the import finds
    # the steps among solve()'s children and reads the stream again, marking each step
    # where SS_ITER stood, so the trace has the marked build's frames, strands, edges and
    # references (the two builds differ in the marks' calls: instruction counts, and the
    # layout of stack frames)
    args = ["30", "3", "8"]
    exe = _build(bindir, "heat", "-DLOOP_IN_SOLVE", *form)
    marked = capture(str(exe), args, tmp_path / "m.sst", raw=tmp_path / "m.raw")
    auto = capture(str(_build(bindir, "heat", "-DLOOP_IN_SOLVE", "-DNO_MARKS", *form)), args,
                   tmp_path / "a.sst")  # fmt: skip
    assert auto.header.params["iterations_found"] == 3 and auto.no_iterations is None
    assert "iterations_found" not in marked.header.params
    with open_trace(marked.out) as tm, open_trace(auto.out) as ta:
        for table, cols in (
            ("frames", [f.name for f in fields(tm.frames)]),
            ("edges", ["src", "dst", "kind"]),
            ("strands", ["frame", "ref_start"]),
        ):
            for col in cols:
                np.testing.assert_array_equal(
                    getattr(getattr(tm, table), col), getattr(getattr(ta, table), col), col
                )
        assert tm.header.n_refs == ta.header.n_refs and ta.header.n_frames > 9
        rm, ra = tm.refs(0, tm.header.n_refs), ta.refs(0, ta.header.n_refs)
        for col in ("size", "write"):
            np.testing.assert_array_equal(getattr(rm, col), getattr(ra, col), col)
        lo, hi = tm.header.stack
        data = (rm.addr < lo) | (rm.addr >= hi)
        assert data.sum() > tm.header.n_refs // 2
        np.testing.assert_array_equal(rm.addr[data], ra.addr[data])
    # and to the instruction: the marked build's raw stream without its ITER records
    recs = np.concatenate([r for _, r in iter_raw_blocks(tmp_path / "m.raw")])
    keep = ~((recs["kind"] == REC_MARKER) & (recs["c"] == M_ITER))
    assert int((~keep).sum()) == 3
    recs = recs[keep]
    recs[0]["b"] = RAW_VERSION  # written back as 16-byte records
    (tmp_path / "u.raw").write_bytes(recs.tobytes())
    h = import_raw(tmp_path / "u.raw", tmp_path / "u.sst", program=exe.name, args=args)
    assert h.params == {"iterations_found": 3}
    assert_same_trace(marked.out, tmp_path / "u.sst")


DATA = Path(__file__).resolve().parent / "data"


def _build_data(bindir, source: str, *flags: str):
    exe = bindir / (source.removesuffix(".c") + "".join(flags))
    if not exe.exists():
        assert compile_program(["-O1", *flags, str(DATA / source), "-o", str(exe)]) == 0
    return exe


def test_recursion_through_a_function_pointer_gives_the_direct_frame_tree(cache, bindir, tmp_path):
    # the frame is opened by the callee's own body, so a call or spawn through a pointer
    # opens it as a call by name does
    direct = capture(str(_build_data(bindir, "fnptr_fib.c", "-DDIRECT")), ["10"], tmp_path / "d")
    ptr = capture(str(_build_data(bindir, "fnptr_fib.c")), ["10"], tmp_path / "p")
    assert ptr.warnings == direct.warnings
    with open_trace(direct.out) as td, open_trace(ptr.out) as tp:
        assert td.header.n_frames == tp.header.n_frames == 178  # fib(10): 177 calls with n >= 2
        for col in ("parent", "level", "branching", "spawn_index"):
            np.testing.assert_array_equal(getattr(td.frames, col), getattr(tp.frames, col))
        assert td.header.n_strands == tp.header.n_strands


def test_setjmp_in_a_cilk_function_is_refused_at_compile_time(bindir):
    with pytest.raises(CaptureError) as e:
        _build_data(bindir, "longjmp_spawned.c", "-DIN_CILK")
    msg = str(e.value)
    assert msg.startswith(f"{DATA / 'longjmp_spawned.c'}:15:9: setjmp: a non-local jump in ")
    assert "the Cilk function work()" in msg and "\n" not in msg


@pytest.mark.parametrize("source", ["longjmp_spawned.c", "exit_in_cilk.c"])
def test_a_non_local_exit_from_a_cilk_frame_is_a_one_line_capture_error(
    cache, bindir, tmp_path, source
):
    # leaf() is no Cilk function, so the rewriter lets it be; its longjmp to main leaves
    # work()'s frame and a spawn open (as exit() inside work() does), which the import
    # reports, naming the program
    exe = _build_data(bindir, source)
    with pytest.raises(TraceFormatError) as e:
        capture(str(exe), [], tmp_path / "j.sst")
    msg = str(e.value)
    assert msg.startswith(f"{exe.name}: 1 Cilk call(s) without a matching CALL_END at the end")
    assert "longjmp out of a spawned call" in msg and "\n" not in msg
    assert not (tmp_path / "j.sst").exists()


def _kids(t, f: int) -> list[int]:
    return np.flatnonzero(t.frames.parent == f).tolist()


def test_cilk_functions_a_spawned_plain_function_calls_are_each_a_child_frame(
    cache, bindir, tmp_path
):
    # wrapper() is spawned and calls pair() twice: the first call was merged into
    # wrapper's spawned frame (its task at level 2), the second became a child frame (its
    # task at level 3).  And pair(first(6)): first() was merged into the spawned frame,
    # pair() became its child.
    res = capture(str(_build_data(bindir, "spawned_wrapper.c")), [], tmp_path / "w.sst")
    with open_trace(res.out) as t:
        lvl = t.frames.level
        wrapper, spawned_pair = _kids(t, 0)
        calls = _kids(t, wrapper)
        assert len(calls) == 2  # pair(0), pair(2)
        for c in calls:
            (task,) = _kids(t, c)  # pair's spawned work()
            assert (lvl[c], lvl[task]) == (2, 3)
            assert _kids(t, task) == []
        # the spawned pair is the frame its spawn opened: first(6), called in the spawn's
        # arguments, and pair's own spawned work() are its children
        called, task = _kids(t, spawned_pair)
        assert len(_kids(t, called)) == 1 and _kids(t, task) == []
        assert t.frames.first_strand[called] < t.frames.first_strand[task]
        assert t.header.n_frames == 10


def _rows(bindir, *flags: str):
    return _build_data(bindir, "cilk_for_calls.c", *flags)


def test_a_cilk_for_in_main_calling_a_cilk_function_invents_no_iteration(cache, bindir, tmp_path):
    # one loop of 8 rows at grain 4: the upper half runs in main's frame, whose 4 calls of
    # row() were 4 repeated phases, "4 iterations found"
    res = capture(str(_rows(bindir, "-DGRAIN4")), ["8", "1"], tmp_path / "r.sst")
    assert "iterations_found" not in res.header.params
    assert res.no_iterations is not None and "one phase" in res.no_iterations
    with open_trace(res.out) as t:
        assert int(t.frames.iteration.max()) == -1
        # main: the spawned lower half and the 4 calls of its own leaf; the half: 4 calls
        half, *calls = _kids(t, 0)
        assert len(calls) == 4 and len(_kids(t, half)) == 4
        assert all(len(_kids(t, c)) == 1 for c in [*calls, *_kids(t, half)])


@pytest.mark.parametrize(("rows", "steps"), [(64, 3), (64, 2), (32, 3), (64, 1)])
def test_time_steps_of_a_cilk_for_in_main_calling_a_cilk_function_are_found(
    cache, bindir, tmp_path, rows, steps
):
    # 64 rows at the default grain 8: main calls row() 8 times per step, 9 phases a step
    # (more than the 8 of a block), and no iteration was found
    res = capture(str(_rows(bindir)), [str(rows), str(steps)], tmp_path / "r.sst")
    assert res.header.params.get("iterations_found") == (steps if steps > 1 else None)
    with open_trace(res.out) as t:
        it = t.frames.iteration[1:]  # (main is in no iteration)
        if steps > 1:
            assert sorted(set(it.tolist())) == list(range(steps))
            assert np.bincount(it).tolist() == [int((it == 0).sum())] * steps
