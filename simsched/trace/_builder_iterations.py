"""The iterations of a :class:`~simsched.trace.builder.TraceBuilder`: the marks a program
makes (:meth:`~simsched.trace.builder.TraceBuilder.iteration`), the repeated part
(:meth:`~simsched.trace.builder.TraceBuilder.repeat_begin`,
:meth:`~simsched.trace.builder.TraceBuilder.repeat_end`), and the iterations found from the
DAG when none was marked (:meth:`~simsched.trace.builder.TraceBuilder.relabel_iterations`).

Apart from the builder's DAG rules because iterations label the DAG rather than shape it
(docs/trace-format.md, "Iterations"), save for one case, and that is the builder's most
intricate logic: a mark inside Cilk functions main calls ends or undoes their frames and
runs the rest of them in main's (``_inline_calls``).  Here it reads alone, next to the
other rules about where marks and repeated parts may stand.  :class:`_IterationMarks` is a
mixin of :class:`~simsched.trace.builder.TraceBuilder` and holds no state of its own: the
builder's ``__init__`` makes every field, and the class body only declares those used here,
for the type checker.  The frame stack's entry, :class:`_Frame`, is defined here, below the
builder that imports it, since the marks pop, end and undo frames.
"""

from __future__ import annotations

import bisect
import operator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.errors import IterationMarkError, TraceBuildError
from simsched.trace import format as fmt
from simsched.trace import repeat
from simsched.trace.writer import ChunkWriter

#: How :meth:`~simsched.trace.builder.TraceBuilder.call` records a call whose frame an iteration mark inside it
#: ended or undid, the rest of it running in main's frame
#: (:meth:`_inline_calls`).
_INLINED = "inlined"


class _Frame:
    __slots__ = (
        "fid",
        "strand",
        "spawn_strand",
        "joins",
        "nspawn",
        "children",
        "fresh",
        "called",
        "callee",
    )

    def __init__(self, fid: int, strand: int):
        self.fid = fid
        self.strand = strand  # current strand
        self.spawn_strand = -1  # strand that made the last spawn (continuation edge source)
        self.joins: list[int] = []  # last strands of children not yet synced
        self.nspawn = 0  # spawns so far (since the last iteration mark, for an iteration root)
        self.children: list[int] = []  # frames spawned since then (branching is patched later)
        self.fresh = False  # just spawned: nothing has happened in the frame yet
        self.called = False  # opened by call(): its return joins the caller at once
        # the function the spawn that opened the frame calls (spawn(callee=...)): 0 unknown,
        # -1 once a call() has been merged into the frame
        self.callee = 0


class _IterationMarks:
    """Iteration marks, the repeated part and found iterations of a :class:`TraceBuilder`."""

    # TraceBuilder's fields used here (made by its __init__, which describes them)
    path: Path
    found_iterations: int
    inner_iterations: list[int]
    _meta: fmt.TraceMeta
    _w: ChunkWriter
    _s_frame: list[int]
    _s_ref_start: list[int]
    _s_instr: list[int]
    _s_tail: list[int]
    _f_parent: list[int]
    _f_spawn_index: list[int]
    _f_branching: list[int]
    _f_level: list[int]
    _f_iter: list[int]
    _f_first: list[int]
    _f_last: list[int]
    _e_src: list[int]
    _e_dst: list[int]
    _e_kind: list[int]
    _iteration: int
    _marked: bool
    _mark_due: bool
    _roi_mode: bool
    _pending_gap: int
    _cur_instr: int
    _stack: list[_Frame]
    _calls: list[bool | str]
    _rep_open: tuple[int, int, int] | None
    _repeat: dict[str, Any] | None
    _rep_end: tuple[int, int, int]

    if TYPE_CHECKING:  # for the type checker only: TraceBuilder's (_integer: _References')

        def _check_open(self) -> None: ...
        def _patch_branching(self, fr: _Frame) -> None: ...
        def _close_child(self, called: bool) -> None: ...
        def _integer(self, what: str, v: Any) -> int: ...

    def iteration(self, i: int) -> None:
        """Mark the start of iteration ``i``: frames spawned from now on carry it.

        Position keys of main's children restart, so the same task has the same key in
        every iteration (LAWS §3.3).  The rule (docs/trace-format.md, "Iterations"): marks
        are made in main, with increasing numbers in ``0..2**63-1``; a mark made inside
        Cilk functions main calls runs them in main's frame from then on
        (:meth:`_inline_calls`).

        Raises
        ------
        IterationMarkError
            ``i`` is not an integer, is out of range or not above the previous mark, the
            mark is made inside a spawned frame, or inside a called one while a frame on
            the stack has a spawned child not synced, or after work in it since the call
            once iterations have begun.
        """
        self._check_open()
        try:
            n = operator.index(i)
        except TypeError:
            raise IterationMarkError(
                f"{self.path}: iteration mark {i!r} is not an integer"
            ) from None
        if len(self._stack) != 1:
            depth = len(self._stack) - 1
            if not all(fr.called for fr in self._stack[1:]):
                raise IterationMarkError(
                    f"{self.path}: iteration mark {n} inside a spawned frame (depth "
                    f"{depth}): iterations are marked in main"
                )
        if not 0 <= n <= fmt.MAX_ITERATION:
            raise IterationMarkError(f"{self.path}: iteration mark {n} is outside 0..2^63-1")
        if n <= self._iteration:
            raise IterationMarkError(
                f"{self.path}: iteration mark {n} after iteration {self._iteration}: "
                "iteration numbers must increase"
            )
        if len(self._stack) != 1:
            problem = self._inline_calls()
            if problem:
                raise IterationMarkError(
                    f"{self.path}: iteration mark {n} inside a Cilk function that main "
                    f"calls (depth {len(self._stack) - 1}) {problem}"
                )
        self._marked = True
        self._mark_due = False
        fr = self._stack[-1]
        fr.fresh = False
        self._patch_branching(fr)
        fr.nspawn = 0
        self._iteration = n

    def _inline_calls(self) -> str | None:
        """Run the Cilk functions open on main's stack (all called, none spawned), inside
        which an iteration mark is made, in main's own frame from now on; None when done,
        else why it cannot be (the builder is unchanged then).

        A time loop is often written in a function main calls (``solve()``), or its step
        in one main calls each time (``step(t) { SS_ITER(t); ... }``); but a called Cilk
        function has a frame of its own, and iterations are groups of main's children.
        A call in which nothing but instructions has happened is undone, as if the
        function ran in its caller's frame from its start (its instructions are the
        caller's again, exactly where they were); one that did more (a prologue before
        the loop: references, spawns) ends at the mark, as if it returned there, what it
        did a called child of main before the first iteration, and it is refused once
        iterations have begun (that work would fall into the iteration before).  Either
        way the function's later spawns, syncs and calls are main's, and its return is a
        sync of main (:meth:`~simsched.trace.builder.TraceBuilder.call_ret`): the steps get the frames they have with the loop
        written in main.  No dependence changes as long as no frame on the stack has a
        child outstanding; one is refused, since the frame's early end would sync it, or,
        for main's, a sync inside the loop would wait for it too.
        """
        if self._rep_open is not None:
            return "within a repeated part: mark a repeated part's iterations in main"
        moved = _INLINED in self._calls  # main runs the rest of a function already
        for depth, fr in enumerate(self._stack):
            if fr.joins:
                who = (
                    f"the Cilk function at depth {depth}"
                    if depth
                    else "main (with the Cilk function an earlier mark moved into it)"
                    if moved
                    else "main"
                )
                return (
                    f"while {who} has {len(fr.joins)} spawned child(ren) not synced: the "
                    "mark would move the sync; sync before the mark"
                )
        # the frames a call can be undone for: the newest ones, in which nothing happened
        undo = 0
        for fr in reversed(self._stack[1:]):
            first = self._f_first[fr.fid]
            if not (
                fr.fid == len(self._f_parent) - 1 - undo
                and fr.strand == first == len(self._s_frame) - 1 - undo
                and self._s_ref_start[first] == self._w.n_refs
            ):
                break
            undo += 1
        opened = len(self._stack) - 1
        if opened > undo and self._marked:
            return (
                "after references or spawns in it since the call, while iterations run: "
                "they would be a frame of the iteration before; make the mark the first "
                "thing the function does, or make it in main"
            )
        self._calls[-opened:] = [_INLINED] * opened
        for _ in range(undo):
            self._undo_call(self._stack.pop(), self._stack[-1])
        while len(self._stack) > 1:
            self._close_child(called=True)
        return None

    def _undo_call(self, fr: _Frame, up: _Frame) -> None:
        """Remove the newest frame ``fr``, opened by a call in which only instructions
        have run, and reopen the strand of its caller ``up`` that the call ended, with
        those instructions after its own (:meth:`_inline_calls`)."""
        first = self._f_first[fr.fid]
        for lst in (self._e_src, self._e_dst, self._e_kind):  # the call's edge into it
            lst.pop()
        for lst in (self._s_frame, self._s_ref_start, self._s_instr, self._s_tail):
            lst.pop()
        for lst in (
            self._f_parent,
            self._f_spawn_index,
            self._f_branching,
            self._f_level,
            self._f_iter,
            self._f_first,
            self._f_last,
        ):
            lst.pop()
        up.children.pop()
        up.nspawn -= 1
        s = first - 1
        self._pending_gap += self._s_tail[s]
        self._cur_instr = self._s_instr[s] - self._s_tail[s]
        up.strand = s

    def _check_main_synced(self, what: str) -> _Frame:
        self._check_open()
        if len(self._stack) != 1:
            raise TraceBuildError(
                f"{self.path}: {what} inside a spawned frame (depth {len(self._stack) - 1}): "
                "a repeated part begins and ends in main"
            )
        main = self._stack[0]
        if main.joins:
            raise TraceBuildError(
                f"{self.path}: {what} while main has {len(main.joins)} child(ren) not "
                "synced: a repeated part begins and ends with main's children synced"
            )
        return main

    def repeat_begin(self) -> None:
        """Start the part of the program that repeats (whole iterations; one per trace).

        What follows until :meth:`repeat_end` is written once and stored with its repeat
        count (docs/trace-format.md, "Repeated parts").  It must begin with an iteration
        mark before main spawns, and main records nothing until then.

        Raises
        ------
        TraceBuildError
            Inside a spawned frame, with main's children not synced, in a builder made
            with ``roi=True``, or a second time.
        """
        main = self._check_main_synced("repeat_begin()")
        if self._roi_mode:
            raise TraceBuildError(f"{self.path}: repeat_begin() on a builder made with roi=True")
        if self._rep_open is not None or self._repeat is not None:
            raise TraceBuildError(f"{self.path}: a trace has at most one repeated part")
        self._rep_open = (
            main.strand,
            self._cur_instr + self._pending_gap,
            self._w.n_refs,
        )
        self._mark_due = True

    def repeat_end(self, count: int, stride: int | None = None) -> None:
        """End the repeated part begun by :meth:`repeat_begin`: it runs ``count`` times.

        Copy ``k`` (from 0) has every iteration number raised by ``k * stride``; marks
        made after this one continue above the last copy's.  Main records nothing more in
        its current strand, and marks an iteration before it spawns again.

        Parameters
        ----------
        count
            How many times the part runs (1: it is written as an ordinary part).
        stride
            Iteration numbers between copies; default and least: the part's last mark
            less its first, plus one.

        Raises
        ------
        TraceBuildError
            Without :meth:`repeat_begin`, inside a spawned frame, with main's children
            not synced, a part that spawned nothing or that main recorded something in
            before its first spawn, or a bad ``count`` or ``stride``.
        """
        main = self._check_main_synced("repeat_end()")
        if self._rep_open is None:
            raise TraceBuildError(f"{self.path}: repeat_end() without repeat_begin()")
        before, instr0, r0 = self._rep_open
        self._rep_open = None
        s0, s1 = before + 1, len(self._s_frame)
        if s1 <= s0:
            raise TraceBuildError(f"{self.path}: the repeated part spawned nothing")
        if self._s_ref_start[s0] != r0 or self._s_instr[before] != instr0:
            raise TraceBuildError(
                f"{self.path}: main recorded references or instructions between "
                "repeat_begin() and its first spawn (they would not repeat)"
            )
        n = self._integer("repeat count", count)
        first_it = self._f_iter[self._s_frame[s0]]
        span = self._iteration - first_it + 1
        p = span if stride is None else self._integer("iteration stride", stride)
        if n < 1 or p < span:
            raise TraceBuildError(
                f"{self.path}: repeat count {n} (at least 1) or iteration stride {p} (at "
                f"least {span}, the part's iterations) out of range"
            )
        last = self._iteration + (n - 1) * p
        if last > fmt.MAX_ITERATION:
            raise TraceBuildError(f"{self.path}: {n} copies number iterations past 2^63 - 1")
        self._patch_branching(main)
        self._mark_due = True
        if n == 1:
            return  # an ordinary part: nothing for a reader to expand
        self._check_expansion(s0, s1, r0, n)
        self._iteration = last
        self._repeat = {
            "strands": [s0, s1],
            "count": n,
            "iteration_stride": p,
            "chunk_refs": self._w.cap,
        }
        self._rep_end = (s1 - 1, self._cur_instr + self._pending_gap, self._w.n_refs)

    def _check_expansion(self, s0: int, s1: int, r0: int, n: int) -> None:
        """Refuse ``n`` copies of strands ``s0..s1 - 1`` that a reader could not expand
        (:func:`simsched.trace.repeat.parse`), now rather than in :meth:`~simsched.trace.builder.TraceBuilder.close` after the
        rest of the program: what is written so far, with the copies, already passes its
        limits.  Every edge goes into the strand newest when it is made, so the edges
        into the part are the last ones."""
        strands = s1 - s0
        frames = len(self._f_parent) - self._s_frame[s0]
        edges = len(self._e_dst) - bisect.bisect_left(self._e_dst, s0)
        rows = len(self._s_frame) + len(self._f_parent) + len(self._e_dst)
        rows += (n - 1) * (strands + frames + edges)
        refs = self._w.n_refs + (n - 1) * (self._w.n_refs - r0)
        chunks = -(-refs // self._w.cap)
        if rows > repeat.MAX_ROWS or chunks > repeat.MAX_CHUNKS:
            raise TraceBuildError(
                f"{self.path}: {n} copies of the repeated part would expand to {rows:,} "
                f"table rows and {chunks:,} chunks; a reader holds at most "
                f"{repeat.MAX_ROWS:,} rows and {repeat.MAX_CHUNKS:,} chunks (fewer copies, "
                "coarser tasks or larger chunks)"
            )

    def _find_iterations(self, lo: np.ndarray, hi: np.ndarray) -> None:
        """Mark the iterations found among main's children; when there are none and main
        calls a Cilk function as a phase of its own (:func:`called_function`), leave the children of that function that
        start repeated steps in :attr:`inner_iterations` (marking those changes the frame
        table: the raw importer imports the stream again with marks before them)."""
        from simsched.trace.iterations import called_function, find_iterations

        ns = len(self._s_frame)
        if lo.shape[0] < ns:  # strands without references at the end
            pad = ns - lo.shape[0]
            lo = np.concatenate([lo, np.full(pad, np.iinfo(np.int64).max, np.int64)])
            hi = np.concatenate([hi, np.full(pad, -1, np.int64)])
        rs = np.asarray([*self._s_ref_start, self._w.n_refs], np.int64)
        starts = find_iterations(
            self._f_parent, self._f_level, self._f_first, self._f_last,
            self._e_src, self._e_dst, self._e_kind, rs, lo[:ns], hi[:ns],
        )  # fmt: skip
        if starts:
            self.relabel_iterations(starts)
            return
        f = called_function(
            self._f_parent, self._f_first, self._f_last, self._e_src, self._e_dst, self._e_kind
        )
        if f > 0:
            self.inner_iterations = find_iterations(
                self._f_parent, self._f_level, self._f_first, self._f_last,
                self._e_src, self._e_dst, self._e_kind, rs, lo[:ns], hi[:ns], root=f,
            )  # fmt: skip

    def relabel_iterations(self, starts: list[int]) -> None:
        """Mark iterations after the fact: iteration ``t`` starts at main's child ``starts[t]``.

        The frames from ``starts[t]`` up to the next start get iteration ``t``, and main's
        children and their position keys are renumbered from 0 in every iteration, as if
        :meth:`iteration` had been called before each start was spawned.  Called by
        :meth:`~simsched.trace.builder.TraceBuilder.close` once main has synced.
        """
        from simsched.trace.iterations import relabel

        if self._repeat is not None or self._rep_open is not None:
            raise TraceBuildError(f"{self.path}: iterations of a repeated part are marked")
        relabel(
            self._f_parent, self._f_spawn_index, self._f_branching, self._f_iter, starts
        )  # fmt: skip
        self.iterations_were_found(len(starts))

    def iterations_were_found(self, n: int) -> None:
        """Say in the header that the trace's ``n`` iterations were found, not marked (the
        ``iterations_found`` parameter): :meth:`relabel_iterations` does, and the raw
        importer for marks it made itself before the steps of a time loop it found inside
        a Cilk function main calls."""
        self.found_iterations = n
        self._meta["params"] = {**self._meta["params"], "iterations_found": n}
