"""``--iterations auto`` on a time loop written in a Cilk function main calls.

Main's only phase is then the call of ``solve()``, and the steps are that function's
children: the import finds them there and reads the stream a second time, marking
iteration ``t`` right before the spawn or call that starts step ``t``, which gives the
trace of the program with ``SS_ITER(t)`` written at the top of its loop body.
"""

from __future__ import annotations

import filecmp
from dataclasses import dataclass, fields

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# --- the property: any time loop of repeated steps in solve() gets its marked trace -----

GRID_A, GRID_B = 0x100000, 0x180000  # the two grids a ping-pong step swaps
#: where an instruction gap may stand (its size: the place's index + 1, so a gap that moved
#: to another strand changes that strand's instructions)
GAP_PLACES = (
    "main", "init", "before_call", "solve", "prologue", "top", "in_call", "child", "nested",
    "between", "before_sync", "after_sync", "after_step", "epilogue", "after_loop",
    "after_call",
)  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One step of the time loop: ``sweeps`` phases (2: a ping-pong pair), each spawning a
    child per entry of ``kids`` (its references, and whether it spawns a child of its own),
    with a sync; ``call``: made in a step function solve() calls.  A ping-pong sweep reads
    one grid and, when ``shared``, writes one word per child of the other (so both sweeps
    reference both grids), else references its own grid only.  ``top`` (``""``, ``"refs"``,
    ``"spawn"``): work of solve() at the top of the step, before its first spawn or call."""

    kids: tuple[tuple[int, bool], ...]
    call: bool = False
    sweeps: int = 1
    shared: bool = False
    top: str = ""


@dataclass(frozen=True)
class Program:
    """main: a reference, a parallel ``init`` (or not), ``solve()`` (or the loop itself,
    ``in_main``), a reference; solve(): a ``prologue`` (``""``, ``"refs"``, ``"spawn"``: a
    spawned child, synced), the ``steps``, each followed by a ``swap`` reference in solve()
    when set, an ``epilogue`` (as the prologue); instruction gaps at the ``gaps`` places."""

    steps: tuple[Step, ...]
    prologue: str = ""
    init: bool = False
    epilogue: str = ""
    swap: bool = False
    between: bool = False  # a reference of solve() after each spawn of a sweep but the last
    gaps: frozenset[str] = frozenset()
    in_main: bool = False


def loop_records(p: Program, marks: str | None = None, *, late: bool = False) -> list:
    """The raw stream of ``p``: unmarked, or with ``SS_ITER`` at the top of every step
    (``marks="step"``) or before every sweep (``"sweep"``); ``late``: the first mark after
    the instructions at the top of the first step, right before its first spawn or call."""
    out: list = []

    def gap(place: str) -> None:
        if place in p.gaps:
            out.append(rec(R.REC_GAP, b=GAP_PLACES.index(place) + 1))

    def spawn_one(addr: int, size: int = 64) -> None:
        out.append(_marker(R.M_SPAWN, NO_CALLEE))
        out.append(rec(R.REC_REF, addr, 1, size, 1))
        out.append(_marker(R.M_SPAWN_END))

    def around(kind: str, refs_at: int, spawn_at: int) -> None:
        # the work of a prologue or an epilogue: two references, or a child synced
        if kind == "refs":
            out.extend([rec(R.REC_REF, refs_at, 1, 8), rec(R.REC_REF, refs_at + 0x40, 1, 8, 1)])
        elif kind == "spawn":
            spawn_one(spawn_at)
            out.append(_marker(R.M_SYNC))

    out += [header(), rec(R.REC_REF, 0x8000, 3, 8)]
    gap("main")
    if p.init:
        for half in range(2):
            spawn_one(0x40000 + 0x100 * half)
            gap("init")
        out.append(_marker(R.M_SYNC))
    gap("before_call")
    if not p.in_main:
        out.append(_marker(R.M_CALL, SOLVE))
    gap("solve")
    around(p.prologue, 0x20000, 0x300000)
    gap("prologue")
    mark = 0
    for t, s in enumerate(p.steps):
        if marks and not (late and t == 0):
            out.append(_marker(R.M_ITER, mark))
            mark += 1
        gap("top")
        if marks and late and t == 0:
            out.append(_marker(R.M_ITER, mark))
            mark += 1
        if s.top == "refs":
            out.append(rec(R.REC_REF, 0x9100, 1, 8))
        elif s.top == "spawn":
            spawn_one(0x9200, 8)
            out.append(_marker(R.M_SYNC))
        if s.call:
            out.append(_marker(R.M_CALL, SOLVE + 1))
            gap("in_call")
        for w in range(s.sweeps):
            if w and marks == "sweep":
                out.append(_marker(R.M_ITER, mark))
                mark += 1
            if s.sweeps == 1:
                src = dst = GRID_A
            else:
                src = (GRID_A, GRID_B)[w]
                dst = (GRID_B, GRID_A)[w] if s.shared else src
            for j, (refs, nested) in enumerate(s.kids):
                out.append(_marker(R.M_SPAWN, NO_CALLEE))
                gap("child")
                base = 0x1000 * j
                for k in range(refs):
                    out.append(rec(R.REC_REF, src + base + 8 * k, 2, 8, 0))
                if src != dst:
                    out.append(rec(R.REC_REF, dst + base, 1, 8, 1))
                else:  # the last reference writes
                    out[-1] = rec(R.REC_REF, src + base + 8 * (refs - 1), 2, 8, 1)
                if nested:
                    out.append(_marker(R.M_SPAWN, NO_CALLEE))
                    out.append(rec(R.REC_REF, src + base + 0x800, 1, 8, 1))
                    gap("nested")
                    out.append(_marker(R.M_SPAWN_END))
                    out.append(_marker(R.M_SYNC))
                out.append(_marker(R.M_SPAWN_END))
                if j < len(s.kids) - 1:
                    if p.between:
                        out.append(rec(R.REC_REF, src + base + 0x900, 1, 8))
                    gap("between")
            gap("before_sync")
            out.append(_marker(R.M_SYNC))
            gap("after_sync")
        if s.call:
            out.append(_marker(R.M_CALL_END))
        if p.swap:
            out.append(rec(R.REC_REF, 0x9000, 1, 8, 1))
        gap("after_step")
    around(p.epilogue, 0x20080, 0x380000)
    gap("epilogue")
    if not p.in_main:
        gap("after_loop")
        out.append(_marker(R.M_CALL_END))
    gap("after_call")
    return [*out, rec(R.REC_REF, 0x8008, 1, 8), _marker(R.M_END)]


def found_marks(step: Step) -> str:
    """Where the search of solve()'s phases starts the iterations of a loop of ``step``
    (``""``: nowhere).

    What is found is what repeats (docs/capture.md): a step spawning one child of no
    children of its own, directly in solve(), is a phase of one frame, and a repeated
    block holds a parallel phase (more than one frame), so a loop of such steps has no
    iterations.  The two sweeps of a ping-pong step written in solve() itself are two
    phases of it, and when both reference both grids (``shared``) their address ranges
    match, so every sweep is an iteration (2 per step), as if ``SS_ITER`` stood before
    each sweep; sweeps each in a grid of their own do not match, and the block of both
    repeats (an iteration per step).  In a step function, the step is one phase (one
    called frame, with the step's children) whatever it holds."""
    if step.call:
        return "step"
    if len(step.kids) == 1 and not step.kids[0][1]:
        return ""
    return "sweep" if step.sweeps == 2 and step.shared else "step"


_kids = st.lists(st.tuples(st.integers(1, 5), st.booleans()), min_size=1, max_size=4)
_steps = st.builds(
    Step, kids=_kids.map(tuple), call=st.booleans(), sweeps=st.integers(1, 2), shared=st.booleans()
)
_gaps = st.frozensets(st.sampled_from(GAP_PLACES))


def _program(steps, **kw) -> st.SearchStrategy[Program]:
    return st.builds(
        Program,
        steps=steps,
        prologue=st.sampled_from(["", "refs", "spawn"]),
        init=st.booleans(),
        epilogue=st.sampled_from(["", "refs", "spawn"]),
        swap=st.booleans(),
        between=st.booleans(),
        gaps=_gaps,
        **kw,
    )


#: a time loop in solve(): 2 to 6 steps alike
loops = _program(st.tuples(_steps, st.integers(2, 6)).map(lambda x: (x[0],) * x[1]))


@settings(max_examples=60, deadline=None)
@given(p=loops)
def test_any_loop_of_repeated_steps_in_a_called_function_gets_its_marked_trace(tmp_path_factory, p):
    d = tmp_path_factory.mktemp("loop")
    where = found_marks(p.steps[0])  # a mark per step, or per ping-pong sweep, or none
    h, auto = _import(d, "a", loop_records(p))
    if not where:  # serial steps: nothing found, the trace of the stream as it is
        assert "iterations_found" not in h.params
        _, plain = _import(d, "k", loop_records(p), "markers")
        assert_same_trace(plain, auto)
        return
    # Instructions at the top of the first step stay in solve()'s frame when it did work
    # before the loop (the stream cannot tell them from that work; docs/capture.md): its
    # frame ends at the first mark, which the import makes right before the step's first
    # spawn or call, as the program with its mark written there.
    late = p.prologue != "" and "top" in p.gaps
    _, marked = _import(d, "m", loop_records(p, marks=where, late=late))
    with open_trace(marked) as t:
        n = int(t.frames.iteration.max()) + 1
    assert n == len(p.steps) * (2 if where == "sweep" else 1)
    assert h.params.get("iterations_found") == n
    assert_same_trace(marked, auto)


#: any program of the same parts: steps that differ, work at their top, the loop in main
programs = _program(
    st.lists(
        st.builds(
            Step,
            kids=_kids.map(tuple),
            call=st.booleans(),
            sweeps=st.integers(1, 2),
            shared=st.booleans(),
            top=st.sampled_from(["", "refs", "spawn"]),
        ),
        min_size=2,
        max_size=6,
    ).map(tuple),
    in_main=st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(p=programs)
def test_the_auto_import_of_any_loop_gives_a_valid_trace(tmp_path_factory, p):
    # Steps that differ, or work at their top, may be found as fewer iterations, or
    # other ones, or none: whatever is found, the import makes a valid trace of the same
    # references and instructions, and without iterations the trace of the stream as it is.
    d = tmp_path_factory.mktemp("any")
    h, auto = _import(d, "a", loop_records(p))
    assert validate(auto)["ok"]
    _, plain = _import(d, "k", loop_records(p), "markers")
    n = h.params.get("iterations_found")
    if n is None:
        assert_same_trace(plain, auto)
        return
    with open_trace(auto) as ta, open_trace(plain) as tp:
        it = np.asarray(ta.frames.iteration)
        assert ta.header.n_instructions == tp.header.n_instructions
        # (a reference's gap counts from its strand's start: the strands differ)
        ca, cp = ta.refs(0, ta.header.n_refs), tp.refs(0, tp.header.n_refs)
        for col in ("addr", "size", "write"):
            np.testing.assert_array_equal(getattr(ca, col), getattr(cp, col), err_msg=col)
    # iterations 0 .. n - 1, in frame order, after the frames before the loop
    assert n >= 2 and set(it.tolist()) - {-1} == set(range(n))
    assert np.all(np.diff(it) >= 0)
