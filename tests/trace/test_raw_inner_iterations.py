"""``--iterations auto`` on a time loop written in a Cilk function main calls.

Main's only phase is then the call of ``solve()``, and the steps are that function's
children: the import finds them there and reads the stream a second time, marking
iteration ``t`` right before the spawn or call that starts step ``t``, which gives the
trace of the program with ``SS_ITER(t)`` written at the top of its loop body.
"""

from __future__ import annotations

import filecmp
from dataclasses import fields

import numpy as np
import pytest

from simsched.errors import IterationMarkError, OutputError
from simsched.trace import open_trace, validate
from simsched.trace import raw as R
from simsched.trace.builder import NO_CALLEE, TraceBuilder
from simsched.trace.iterations import no_iterations_reason
from tests.trace.test_raw import header, rec, write

SOLVE = 9  # the called function's identifier


def _marker(m, a=0):
    return rec(R.REC_MARKER, a, 0, m)


def _step(t: int, *, refs: int = 4, marked: bool) -> list:
    """One time step: SS_ITER(t) if ``marked``, two spawned halves, sync, a swap."""
    out = [_marker(R.M_ITER, t)] if marked else []
    for half in range(2):
        out.append(_marker(R.M_SPAWN, NO_CALLEE))
        for k in range(refs):
            out.append(rec(R.REC_REF, 0x10000 + 0x1000 * half + 8 * k, 2, 8, t % 2))
        out.append(rec(R.REC_GAP, b=5))
        out.append(_marker(R.M_SPAWN_END))
    out.append(_marker(R.M_SYNC))
    out.append(rec(R.REC_REF, 0x9000, 1, 8, 1))  # the swap, after the step's sync
    return out


def solve_records(
    steps: int,
    *,
    marked: bool,
    prologue: tuple = (),
    refs=lambda t: 4,
    in_main=False,
    init=False,
) -> list:
    """main: a reference (and a parallel ``init``: two spawned children, synced), then
    ``solve()`` (or the loop itself, ``in_main``), a reference."""
    out = [header(), rec(R.REC_REF, 0x8000, 3, 8), rec(R.REC_GAP, b=2)]
    if init:
        for half in range(2):
            out.append(_marker(R.M_SPAWN, NO_CALLEE))
            out.append(rec(R.REC_REF, 0x40000 + 0x100 * half, 1, 64, 1))
            out.append(_marker(R.M_SPAWN_END))
        out.append(_marker(R.M_SYNC))
    if not in_main:
        out.append(_marker(R.M_CALL, SOLVE))
        out.append(rec(R.REC_GAP, b=3))  # solve()'s own instructions before the loop
    out.extend(prologue)
    for t in range(steps):
        out.extend(_step(t, refs=refs(t), marked=marked))
    if not in_main:
        out.append(_marker(R.M_CALL_END))
    out += [rec(R.REC_REF, 0x8008, 1, 8), _marker(R.M_END)]
    return out


def _import(tmp_path, name, records, iterations="auto", **kw):
    out = tmp_path / f"{name}.sst"
    h = R.import_raw(write(tmp_path / f"{name}.raw", records), out, iterations=iterations, **kw)
    validate(out)
    return h, out


def assert_same_trace(a, b) -> None:
    """Every table and every reference equal (the header's parameters aside)."""
    with open_trace(a) as ta, open_trace(b) as tb:
        for table in ("frames", "strands", "edges"):
            x, y = getattr(ta, table), getattr(tb, table)
            for f in fields(x):
                np.testing.assert_array_equal(
                    np.asarray(getattr(x, f.name)), np.asarray(getattr(y, f.name)), err_msg=f.name
                )
        assert ta.header.n_refs == tb.header.n_refs
        assert ta.header.n_instructions == tb.header.n_instructions
        ca, cb = ta.refs(0, ta.header.n_refs), tb.refs(0, tb.header.n_refs)
        for col in ("addr", "size", "write", "gap"):
            np.testing.assert_array_equal(getattr(ca, col), getattr(cb, col), err_msg=col)


@pytest.fixture
def passes(monkeypatch):
    """How many times each import read the stream."""
    count = [0]
    real = R._import_pass

    def counted(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(R, "_import_pass", counted)
    return count


def test_a_repeated_loop_in_a_called_function_gets_the_marked_trace(tmp_path, passes):
    hm, marked = _import(tmp_path, "m", solve_records(4, marked=True))
    assert passes[0] == 1
    ha, auto = _import(tmp_path, "a", solve_records(4, marked=False))
    assert passes[0] == 3  # found in solve(): the stream read twice
    assert "iterations_found" not in hm.params
    assert ha.params["iterations_found"] == 4
    assert_same_trace(marked, auto)
    with open_trace(auto) as t:
        # solve() ran in main's frame (its call undone): the 8 halves are main's children
        assert t.frames.parent.tolist() == [-1] + [0] * 8
        assert t.frames.iteration.tolist() == [-1, 0, 0, 1, 1, 2, 2, 3, 3]


def test_a_loop_in_a_function_called_after_a_parallel_init_is_found(tmp_path, passes):
    # main(){ cilk_for init; solve(); }: main has two phases, the call one of them
    _, marked = _import(tmp_path, "m", solve_records(3, marked=True, init=True))
    h, auto = _import(tmp_path, "a", solve_records(3, marked=False, init=True))
    assert passes[0] == 3 and h.params["iterations_found"] == 3
    assert_same_trace(marked, auto)
    with open_trace(auto) as t:
        assert t.frames.iteration.tolist() == [-1, -1, -1, 0, 0, 1, 1, 2, 2]
    # marks-only import: the reason names the call beside main's other phase
    _, plain = _import(tmp_path, "k", solve_records(3, marked=False, init=True), "markers")
    with open_trace(plain) as t:
        why = no_iterations_reason(t)
    assert why.startswith(
        "main's 2 phases hold no repeated block, and the Cilk function it calls in one of "
        "them has 6 children of its own, whose 3 repeated steps are iterations only when"
    )


def test_the_second_pass_goes_on_with_the_progress_of_the_first(tmp_path):
    seen: list[tuple[int, int]] = []
    _import(tmp_path, "a", solve_records(3, marked=False), progress=lambda *x: seen.append(x))
    n = len(solve_records(3, marked=False))
    assert len(seen) == 2 and seen[1][0] == 2 * seen[0][0] == 2 * n
    assert seen[1][1] == 2 * seen[0][1]


def test_a_second_pass_that_cannot_write_keeps_the_first_trace(tmp_path, monkeypatch):
    records = solve_records(3, marked=False)
    _, plain = _import(tmp_path, "p", records, iterations="markers")
    real = R._import_pass

    def full_disk(*args, **kwargs):
        if kwargs.get("marks"):
            raise OutputError(f"{args[1]}: cannot write (no space left on the device)")
        return real(*args, **kwargs)

    monkeypatch.setattr(R, "_import_pass", full_disk)
    why: list[str] = []
    h, out = _import(tmp_path, "a", records, iterations_refused=why.append)
    assert why == [
        "writing the trace with them failed (cannot write (no space left on the device))"
    ]
    assert "iterations_found" not in h.params and filecmp.cmp(plain, out, shallow=False)


def test_a_called_function_with_steps_that_differ_gets_no_iterations(tmp_path, passes):
    h, out = _import(tmp_path, "d", solve_records(4, marked=False, refs=lambda t: 2 + t))
    assert passes[0] == 1 and "iterations_found" not in h.params
    with open_trace(out) as t:
        assert int(t.frames.iteration.max()) == -1
        assert t.header.n_frames == 1 + 1 + 8  # main, solve(), its halves
        why = no_iterations_reason(t)
    assert "whose phases hold no block of up to 8 phases" in why


def test_work_in_the_called_function_before_its_loop_stays_a_frame_before_the_iterations(
    tmp_path,
):
    # a prologue (references and a spawned child, synced) before the loop: the first mark
    # ends solve()'s frame, which is a called child of main before the first iteration
    prologue = (
        rec(R.REC_REF, 0x20000, 1, 8),
        _marker(R.M_SPAWN, NO_CALLEE),
        rec(R.REC_REF, 0x30000, 1, 64, 1),
        _marker(R.M_SPAWN_END),
        _marker(R.M_SYNC),
    )
    _, marked = _import(tmp_path, "m", solve_records(3, marked=True, prologue=prologue))
    h, auto = _import(tmp_path, "a", solve_records(3, marked=False, prologue=prologue))
    assert h.params["iterations_found"] == 3
    assert_same_trace(marked, auto)
    with open_trace(auto) as t:
        f = t.frames
        assert f.parent.tolist() == [-1, 0, 1] + [0] * 6
        assert f.iteration.tolist() == [-1, -1, -1, 0, 0, 1, 1, 2, 2]


def test_a_loop_in_main_is_found_in_one_pass(tmp_path, passes):
    h, auto = _import(tmp_path, "a", solve_records(3, marked=False, in_main=True))
    assert passes[0] == 1 and h.params["iterations_found"] == 3
    _, marked = _import(tmp_path, "m", solve_records(3, marked=True, in_main=True))
    assert_same_trace(marked, auto)


def test_marks_or_other_modes_read_the_stream_once(tmp_path, passes):
    _import(tmp_path, "m", solve_records(3, marked=True))
    _import(tmp_path, "k", solve_records(3, marked=False), iterations="markers")
    _import(tmp_path, "n", solve_records(3, marked=False), iterations="none")
    assert passes[0] == 3


def test_a_refused_mark_keeps_the_trace_without_iterations_and_says_why(tmp_path, monkeypatch):
    # No stream of this form is refused by today's builder (the first mark is made with
    # nothing outstanding and undoes or ends solve()'s call; the later ones are main's);
    # a refusal must still leave the first pass's trace, and say why.
    records = solve_records(3, marked=False)
    _, plain = _import(tmp_path, "p", records, iterations="markers")

    def refuse(self, i):
        raise IterationMarkError(f"{self.path}: iteration mark {i} refused for the test")

    monkeypatch.setattr(TraceBuilder, "iteration", refuse)
    why: list[str] = []
    h, out = _import(tmp_path, "a", records, iterations_refused=why.append)
    assert why == ["iteration mark 0 refused for the test"]
    assert "iterations_found" not in h.params
    assert filecmp.cmp(plain, out, shallow=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.raw", "a.sst", "p.raw", "p.sst"]
    with open_trace(out) as t:
        said = no_iterations_reason(t, why[0])
    assert said == (
        "main has one phase, one Cilk function it calls (with 6 children of its own), "
        "whose steps repeat, but marking them there was refused: iteration mark 0 refused "
        "for the test; mark its steps with SS_ITER there, or write the time loop in main"
    )


def test_an_imported_trace_says_to_reimport_for_a_loop_in_a_called_function(tmp_path):
    _, out = _import(tmp_path, "k", solve_records(3, marked=False), iterations="markers")
    with open_trace(out) as t:
        why = no_iterations_reason(t)
    assert why.startswith(
        "main has one phase, one Cilk function it calls (with 6 children of its own), whose "
        "3 repeated steps are iterations only when the raw stream is imported"
    )
    assert "simsched trace import --iterations auto" in why
    assert "simsched capture --iterations auto" in why


def test_trace_import_says_why_a_refused_mark_left_no_iterations(tmp_path, monkeypatch, capsys):
    from tests.trace.test_cli import run

    raw = write(tmp_path / "s.raw", solve_records(3, marked=False))
    sst = tmp_path / "s.sst"
    code, _, err = run(["trace", "import", str(raw), "-o", str(sst)], capsys)
    assert code == 0 and "refused" not in err
    with open_trace(sst) as t:
        assert t.header.params == {"iterations_found": 3}

    def refuse(self, i):
        raise IterationMarkError(f"{self.path}: iteration mark {i} refused for the test")

    monkeypatch.setattr(TraceBuilder, "iteration", refuse)
    code, _, err = run(["trace", "import", str(raw), "-o", str(sst)], capsys)
    assert code == 0
    assert (
        f"{sst}: no iterations: the steps of the time loop in the Cilk function main calls "
        "repeat, but marking them there was refused: iteration mark 0 refused for the test"
    ) in " ".join(err.split())
    with open_trace(sst) as t:
        assert t.header.params == {}
