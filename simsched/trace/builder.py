"""TraceBuilder: the one writer of traces, used by every generator and importer.

It is driven by the program's serial execution (serial elision, docs/architecture.md §4.1): ``spawn``
enters a child frame, ``ret`` leaves it, ``sync`` waits for the children spawned so far,
``ref``/``refs`` record memory references of the current strand.  Strands are numbered in the
order they start, which is the serial (1DF) order, and every edge goes from a lower to a
higher number.  The builder enforces well-formedness: a ``ret`` needs a spawned frame, a frame
that spawned syncs implicitly when it returns, and ``close`` requires every spawned frame to
have returned.

The builder keeps the structure and the checks; the file is the business of the one
:class:`~simsched.trace.writer.ChunkWriter` it holds (:mod:`simsched.trace.writer`): the
chunk buffer, the background compression of full chunks, and the staged file renamed into
place when complete.  Split so that each half reads alone: here the DAG and the rules of
well-formedness, there file offsets, the digest and the order of the sections.  The one
seam on the hot path is :meth:`TraceBuilder.ref`, which writes into the writer's buffer in
place rather than through a call per reference.
"""

from __future__ import annotations

import bisect
import operator
import os
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from simsched.errors import ConfigError, IterationMarkError, TraceBuildError
from simsched.files import check_path
from simsched.identity import version
from simsched.params import check_callable, check_flag, check_int
from simsched.trace import format as fmt
from simsched.trace import repeat, structure
from simsched.trace.builder_checks import (
    check_meta,
    flags,
    json_params,
    per_reference,
    writer_name,
)
from simsched.trace.writer import ChunkWriter

NO_CALLEE = 1
"""``spawn(callee=NO_CALLEE)``: the spawned call calls no function (no function's identifier)."""


def _check_function(path: os.PathLike[str] | str, what: str, value: object) -> None:
    """Refuse a function identifier that is not an integer in ``[0, 2^64)``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or not 0 <= int(value) < 1 << 64
    ):
        raise TraceBuildError(
            f"{path}: {what} {value!r} is not a function identifier (an integer >= 0)"
        )


#: How :meth:`TraceBuilder.call` records a call whose frame an iteration mark inside it
#: ended or undid, the rest of it running in main's frame
#: (:meth:`TraceBuilder._inline_calls`).
_INLINED = "inlined"

#: the header's counts, in its order
_COUNT_KEYS = ("n_strands", "n_frames", "n_edges", "n_refs", "n_chunks", "n_instructions")


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


class TraceBuilder:
    """Write a trace from a program's serial execution.

    Parameters
    ----------
    path
        Output file (``.sst``), written through :func:`simsched.files.atomic_output`: a
        temporary file beside it, renamed on close (a symlink is written through, a device
        written into).
    program, args
        What was traced, for the header.
    backend
        ``synthetic``, ``gcc``, ``valgrind``, ``pin``, ...
    gaps_exact
        Whether instruction gaps are exact (``False`` for estimated gaps).
    line_size_hint
        Cache line size the program was tuned for (informational).
    params
        Generator or capture parameters, stored in the header as JSON.
    roi
        When true, only references between :meth:`roi_begin` and :meth:`roi_end` are kept;
        when false (the default) every reference is kept and ROI marks are errors.
    chunk_refs
        References per chunk.
    progress
        Called as ``progress(references_written, None)`` after each chunk (the total is not
        known while the program runs).

    Examples
    --------
    >>> with TraceBuilder("t.sst", program="demo") as b:   # doctest: +SKIP
    ...     b.ref(0x1000, 8, False, gap=2)
    ...     b.spawn(); b.ref(0x2000, 8, True); b.ret()
    ...     b.sync()
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        program: str = "",
        args: list[str] | tuple[str, ...] = (),
        backend: str = "synthetic",
        gaps_exact: bool = True,
        line_size_hint: int = 64,
        params: dict[str, Any] | None = None,
        roi: bool = False,
        stack: tuple[int, int] | None = None,
        chunk_refs: int = fmt.CHUNK_REFS,
        progress: Callable[[int, int | None], None] | None = None,
    ):
        self.path = check_path(path, "path")
        chunk_refs = check_int("chunk_refs", chunk_refs, 1, fmt.CHUNK_REFS)
        line_size_hint = check_meta(program, args, line_size_hint, backend)
        if stack is not None and (not isinstance(stack, tuple | list) or len(stack) != 2):
            raise ConfigError(f"stack={stack!r}: expected a pair (lo, hi) or None")
        check_callable(progress, "progress")
        self._meta: fmt.TraceMeta = {
            "backend": backend,
            "program": program,
            "args": [str(a) for a in args],
            "gaps_exact": check_flag(gaps_exact, "gaps_exact"),
            "line_size_hint": int(line_size_hint),
            "params": json_params(params),
            "roi": check_flag(roi, "roi"),  # "no" was True, and every reference dropped
            "writer": writer_name(version()),
        }
        if stack is not None:
            self.set_stack(*stack)
        self._roi_mode = bool(roi)
        self._in_roi = not roi
        # Opened last among the checks: a refused argument leaves no staging file behind.
        self._w = ChunkWriter(self.path, chunk_refs, progress)
        # tables
        self._s_frame: list[int] = []
        self._s_ref_start: list[int] = []
        self._s_instr: list[int] = []
        self._s_tail: list[int] = []
        self._f_parent: list[int] = []
        self._f_spawn_index: list[int] = []
        self._f_branching: list[int] = []
        self._f_level: list[int] = []
        self._f_iter: list[int] = []
        self._f_first: list[int] = []
        self._f_last: list[int] = []
        self._e_src: list[int] = []
        self._e_dst: list[int] = []
        self._e_kind: list[int] = []
        self._iteration = -1
        self._marked = False  # iteration() was called
        self.found_iterations = 0  # iterations close() found without marks
        self._pending_gap = 0
        self._cur_instr = 0
        self._closed = False
        self._stack: list[_Frame] = []
        # One entry per open call(): True if it opened a frame, False if it was merged
        # into the frame its spawn had just opened, _INLINED once an iteration mark
        # inside it ended or undid its frame (the rest runs in main's).
        self._calls: list[bool | str] = []
        # The repeated part (repeat_begin/repeat_end): while it is open, (strand before it,
        # main's instructions then, references then); once ended, its meta field and
        # (main's last strand, its instructions, references) at the end.
        self._rep_open: tuple[int, int, int] | None = None
        self._repeat: dict[str, Any] | None = None
        self._rep_end: tuple[int, int, int] = (-1, 0, 0)
        self._mark_due = False  # main's next spawn needs an iteration mark first
        root = self._new_frame(parent=-1, spawn_index=0, level=0)
        self._stack.append(_Frame(root, self._new_strand(root)))

    # -- structure ---------------------------------------------------------------------
    def _new_frame(self, parent: int, spawn_index: int, level: int) -> int:
        fid = len(self._f_parent)
        self._f_parent.append(parent)
        self._f_spawn_index.append(spawn_index)
        self._f_branching.append(0)
        self._f_level.append(level)
        self._f_iter.append(self._iteration)
        self._f_first.append(len(self._s_frame))
        self._f_last.append(-1)
        return fid

    def _new_strand(self, frame: int) -> int:
        sid = len(self._s_frame)
        self._s_frame.append(frame)
        self._s_ref_start.append(self._w.n_refs)
        self._s_instr.append(0)
        self._s_tail.append(0)
        self._cur_instr = 0
        return sid

    def _end_strand(self, sid: int) -> None:
        self._s_tail[sid] = self._pending_gap
        self._s_instr[sid] = self._cur_instr + self._pending_gap
        self._pending_gap = 0
        self._cur_instr = 0

    def _edge(self, src: int, dst: int, kind: int) -> None:
        self._e_src.append(src)
        self._e_dst.append(dst)
        self._e_kind.append(kind)

    def _check_open(self) -> None:
        if self._closed:
            raise TraceBuildError(f"{self.path}: the trace builder is closed")

    def _where(self, i: int) -> str:
        """Name the ``i``-th reference of the current call by chunk and index, as a reader would."""
        cap = self._w.cap
        k, j = divmod(self._w.n_refs + i, cap)
        return f"{self.path}: chunk {k}, reference {j} (reference {k * cap + j} of the trace)"

    @property
    def depth(self) -> int:
        """Number of frames open (1 in main)."""
        return len(self._stack)

    @property
    def recording(self) -> bool:
        """Whether references are kept now (inside the region of interest)."""
        return self._in_roi

    @property
    def open_calls(self) -> int:
        """Cilk calls (:meth:`call`) not yet returned."""
        return len(self._calls)

    @property
    def n_strands(self) -> int:
        """Strands started so far."""
        return len(self._s_frame)

    @property
    def n_refs(self) -> int:
        """References written so far (a repeated part once, as the file holds them)."""
        return self._w.n_refs

    def spawn(self, callee: int = 0) -> None:
        """The current frame spawns a child; what follows runs in the child until :meth:`ret`.

        Parameters
        ----------
        callee
            What the spawned call calls, for :meth:`call` to tell the spawned Cilk
            function from the ones it or a plain function it runs calls: the function's
            identifier (nonzero, as :meth:`call` gets it; ``simsched cc`` writes a hash of
            its name), :data:`NO_CALLEE` for a spawn
            that calls no function (the halves of a ``cilk_for``), 0 when unknown.
        """
        self._check_open()
        _check_function(self.path, "spawn callee", callee)
        self._open_child()
        self._stack[-1].fresh = True
        self._stack[-1].callee = int(callee)

    def _open_child(self) -> None:
        parent = self._stack[-1]
        if self._mark_due and len(self._stack) == 1:
            raise TraceBuildError(
                f"{self.path}: main spawns at the start or after the end of the repeated "
                "part without an iteration mark (a repeated part is whole iterations)"
            )
        parent.fresh = False
        s = parent.strand
        self._end_strand(s)
        i = parent.nspawn
        parent.nspawn += 1
        fid = self._new_frame(parent.fid, i, self._f_level[parent.fid] + 1)
        parent.children.append(fid)
        parent.spawn_strand = s
        first = self._new_strand(fid)
        self._edge(s, first, fmt.EDGE_SPAWN)
        self._stack.append(_Frame(fid, first))

    def _sync(self, fr: _Frame) -> None:
        if not fr.joins:
            return
        s = fr.strand
        self._end_strand(s)
        post = self._new_strand(fr.fid)
        self._edge(s, post, fmt.EDGE_CONT)
        for j in fr.joins:
            self._edge(j, post, fmt.EDGE_JOIN)
        fr.joins.clear()
        fr.strand = post

    def _patch_branching(self, fr: _Frame) -> None:
        for c in fr.children:
            self._f_branching[c] = fr.nspawn
        fr.children.clear()

    def sync(self) -> None:
        """Wait for every child the current frame has spawned since its last sync."""
        self._check_open()
        self._stack[-1].fresh = False
        self._sync(self._stack[-1])

    def call(self, fn: int = 0) -> None:
        """A Cilk function begins: it runs in a frame of its own until :meth:`call_ret`.

        Cilk gives every invocation of a function that spawns its own frame, whether it
        was spawned or called (the cactus stack).  If this is the spawned call itself,
        the frame the spawn opened is that frame, so the call is merged into it;
        otherwise a child frame opens whose return the caller waits for at once (a join
        edge into the caller's next strand), while the caller's own spawned children
        stay outstanding.

        Parameters
        ----------
        fn
            The function's identifier, 0 when unknown.  The call is the spawned one when
            ``fn`` is the ``callee`` of the spawn that opened the current frame (and no
            call has been merged into it yet); when either is unknown, when the call
            comes right after the spawn.  So a spawned plain function's calls of Cilk
            functions, and the calls of a ``cilk_for`` body, are child frames, the first
            one too.
        """
        self._check_open()
        _check_function(self.path, "call function", fn)
        top = self._stack[-1]
        fn = int(fn)
        known = top.callee != 0 and fn != 0
        if top.callee != -1 and (top.callee == fn if known else top.fresh):
            top.fresh = False
            top.callee = -1
            self._calls.append(False)
            return
        self._open_child()
        self._stack[-1].called = True
        self._calls.append(True)

    def call_ret(self) -> None:
        """The Cilk function begun by the matching :meth:`call` returns (syncing implicitly)."""
        self._check_open()
        if not self._calls:
            raise TraceBuildError(f"{self.path}: return from a Cilk call without a matching call")
        how = self._calls.pop()
        if how is _INLINED and len(self._stack) != 1:
            raise TraceBuildError(
                f"{self.path}: a Cilk call returns while a frame it spawned is still open"
            )
        if how is _INLINED or not how:
            # it runs in the frame of its spawn, or in main's since an iteration mark:
            # its return syncs what it spawned there
            fr = self._stack[-1]
            fr.fresh = False
            self._sync(fr)
            return
        if not self._stack[-1].called:
            raise TraceBuildError(
                f"{self.path}: a Cilk call returns while a frame it spawned is still open"
            )
        self._close_child(called=True)

    def ret(self) -> None:
        """Return from the current (spawned) frame to its parent, syncing implicitly."""
        self._check_open()
        if len(self._stack) == 1:
            raise TraceBuildError(f"{self.path}: return without a matching spawn")
        if self._stack[-1].called:
            raise TraceBuildError(
                f"{self.path}: a spawned call returns while a Cilk function it called is open"
            )
        self._close_child(called=False)

    def _close_child(self, called: bool) -> None:
        fr = self._stack.pop()
        self._sync(fr)
        self._end_strand(fr.strand)
        self._f_last[fr.fid] = fr.strand
        self._patch_branching(fr)
        parent = self._stack[-1]
        parent.fresh = False
        cont = self._new_strand(parent.fid)
        self._edge(parent.spawn_strand, cont, fmt.EDGE_CONT)
        if called:
            self._edge(fr.strand, cont, fmt.EDGE_JOIN)  # the caller waits for the call
        else:
            parent.joins.append(fr.strand)
        parent.strand = cont

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
        sync of main (:meth:`call_ret`): the steps get the frames they have with the loop
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
        (:func:`simsched.trace.repeat.parse`), now rather than in :meth:`close` after the
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

    def roi_begin(self) -> None:
        """Start keeping references (region of interest)."""
        self._check_open()
        if not self._roi_mode:
            raise TraceBuildError(f"{self.path}: roi_begin() on a builder made without roi=True")
        self._in_roi = True

    def roi_end(self) -> None:
        """Stop keeping references."""
        self._check_open()
        if not self._roi_mode:
            raise TraceBuildError(f"{self.path}: roi_end() on a builder made without roi=True")
        self._in_roi = False

    # -- references --------------------------------------------------------------------
    def _integer(self, what: str, v: Any) -> int:
        try:
            if isinstance(v, bool | np.bool_):  # instr(True) counted one instruction
                raise TypeError
            return operator.index(v)
        except TypeError:
            raise TraceBuildError(f"{self.path}: {what} {v!r} is not an integer") from None

    def _closed_or_outside_roi(self) -> bool:
        """Whether references are dropped (outside the ROI); raise once the builder is closed.

        ``close`` and ``abort`` leave the ROI, so an open builder in the ROI pays nothing.
        """
        self._check_open()
        return True

    def instr(self, n: int) -> None:
        """Account ``n`` non-memory instructions in the current strand.

        Raises
        ------
        TraceBuildError
            ``n`` is not an integer or is negative.
        ConfigError
            ``n`` is more than :data:`~simsched.trace.format.MAX_INSTRUCTIONS` (2^50), the
            instructions a whole trace may have (a trace over that limit in all is refused
            by :meth:`close`).
        """
        self._check_open()
        if type(n) is not int:
            n = self._integer("instruction count", n)
        if n < 0:
            raise TraceBuildError(f"{self.path}: negative instruction count {n}")
        if n > fmt.MAX_INSTRUCTIONS:
            # more than a whole trace may hold: refused now, not by close() at the end
            raise ConfigError(f"n={n}: more than the 2^50 instructions a trace may have")
        if self._in_roi:
            self._pending_gap += n

    def ref(self, addr: int, size: int, is_write: bool, gap: int = 0, dep: bool = False) -> None:
        """Record one reference of ``size`` bytes at ``addr``, after ``gap`` other instructions.

        ``dep``: the reference's address depends on an earlier load (a pointer chase), so
        an out-of-order core cannot issue it before the loads in flight complete
        (docs/machine-model.md §6.1).

        Raises
        ------
        TraceFormatError
            The reference breaks the rule of :func:`simsched.trace.format.check_refs`.
        TraceBuildError
            The address, size or gap is not an integer.
        ConfigError
            ``is_write`` or ``dep`` is not True or False (a Python or numpy bool): ``"no"``
            was taken by its truth and recorded a write.
        """
        if is_write is not True and is_write is not False:
            is_write = check_flag(is_write, "is_write")
        if dep is not False and dep is not True:
            dep = check_flag(dep, "dep")
        if not self._in_roi and self._closed_or_outside_roi():
            return
        if type(addr) is not int:  # a float was truncated, a string failed in a comparison
            addr = self._integer("reference address", addr)
        if type(size) is not int:
            size = self._integer("reference size", size)
        fmt.check_ref(addr, size, self._where)
        if type(gap) is not int:
            gap = self._integer("instruction gap", gap)
        if gap < 0:
            raise TraceBuildError(f"{self.path}: negative instruction gap {gap}")
        g = gap + self._pending_gap
        self._pending_gap = 0
        if g >= 1 << 32:
            raise TraceBuildError(
                f"{self.path}: instruction gap {g} (instr() counts since the last reference "
                "included) does not fit 32 bits"
            )
        # Into the writer's buffer in place: a call per reference would cost more than the
        # rest of this function's bookkeeping.
        w = self._w
        k = w.fill
        if k == w.cap:
            w.flush()
            k = 0  # flush() empties the buffer
        w.addr[k] = addr
        w.sizew[k] = size | (0x80 if is_write else 0)
        w.gap[k] = g
        w.dep[k] = dep
        if dep:  # a test is cheaper than a call of bool() on every reference
            w.any_dep = True
        w.fill = k + 1
        self._cur_instr += g + 1

    def refs(
        self,
        addrs: ArrayLike,
        sizes: ArrayLike,
        writes: ArrayLike,
        gaps: ArrayLike = 0,
        deps: ArrayLike = False,
    ) -> None:
        """Record references in bulk; each argument is an array or a scalar (broadcast).

        ``deps`` marks references whose address depends on an earlier load (see
        :meth:`ref`); references are independent by default.

        Scalar sizes, write flags and gaps are written as scalars, so a call costs little
        more than copying the addresses.

        Raises
        ------
        TraceFormatError
            A reference breaks the rule of :func:`simsched.trace.format.check_refs`; the
            message names the chunk and index it would have had.
        TraceBuildError
            Addresses or sizes that are not integers, a negative gap, or a gap that does
            not fit 32 bits.
        ConfigError
            Addresses that are not one value or a 1-D array, another argument that is
            neither one value nor one value per address, or ``writes`` or ``deps`` that
            are not booleans (True, False or an array of them: ``"no"`` was taken by its
            truth, and 2 as a write).
        """
        if not self._in_roi and self._closed_or_outside_roi():
            return
        a = np.asarray(addrs)
        if a.ndim == 0:
            a = a.reshape(1)
        if a.ndim != 1:
            # the reference rule's kernel failed on it with a numba typing error
            raise ConfigError(
                f"addrs: an array of shape {a.shape}; expected one address or a 1-D array of them"
            )
        n = a.shape[0]
        if n == 0:
            return
        sz = per_reference("sizes", np.asarray(sizes), n)
        if a.dtype.kind not in "iu":
            self._integer_array("reference address", "reference addresses", a)
        if sz.dtype.kind not in "iu":
            self._integer_array("reference size", "reference sizes", sz)
        wr = per_reference("writes", flags("writes", writes), n)
        fmt.check_refs(a, sz, self._where)
        if a.dtype != np.uint64:
            a = a.astype(np.uint64)  # every address is below 2**48 now
        if sz.ndim == 0 and wr.ndim == 0:
            sw = np.asarray(int(sz) | (0x80 if bool(wr) else 0), np.uint8)  # 0-d: broadcast
        else:
            sw = np.broadcast_to(sz.astype(np.uint8) | (wr.astype(np.uint8) << 7), (n,))
        g = per_reference("gaps", np.asarray(gaps), n)
        if g.dtype.kind not in "iu":
            g = self._integer_gaps(g)
        if g.ndim == 0:
            gmin = gmax = int(g)
            gsum = gmin * n
        else:
            g = np.broadcast_to(g, (n,))
            gmin, gmax, gsum = int(g.min()), int(g.max()), int(g.sum())
        if gmin < 0:
            raise TraceBuildError(f"{self.path}: negative instruction gap")
        if self._pending_gap:
            g = np.array(np.broadcast_to(g, (n,)), dtype=np.int64)
            g[0] += self._pending_gap
            gmax = max(gmax, int(g[0]))
            gsum += self._pending_gap
            self._pending_gap = 0
        if gmax >= 1 << 32:
            raise TraceBuildError(f"{self.path}: instruction gap does not fit 32 bits")
        self._cur_instr += n + gsum
        d = per_reference("deps", flags("deps", deps), n)
        self._w.append(a, sw, g, d if d.ndim == 0 or d.any() else np.asarray(False))

    def refs_checked(self, addrs: np.ndarray, sizew: np.ndarray, gaps: np.ndarray) -> None:
        """Record references that already passed the reference rule, in chunk encoding.

        The importer's kernel (:mod:`simsched.trace._raw_kernels`) applies the rule of
        :func:`simsched.trace.format.check_refs` and the gap limit while it expands the raw
        records, so this skips both checks.

        Parameters
        ----------
        addrs
            ``uint64`` addresses.
        sizew
            ``uint8``: size in the low 7 bits, write flag in bit 7.
        gaps
            ``uint32`` instruction gaps (may be modified: the pending gap of :meth:`instr`
            is added to the first).
        """
        if not self._in_roi:
            return
        n = addrs.shape[0]
        if n == 0:
            return
        if self._pending_gap:
            g0 = int(gaps[0]) + self._pending_gap
            if g0 >= 1 << 32:
                raise TraceBuildError(f"{self.path}: instruction gap does not fit 32 bits")
            gaps[0] = g0
            self._pending_gap = 0
        self._cur_instr += n + int(gaps.sum(dtype=np.int64))
        self._w.append(addrs, sizew, gaps)

    def _integer_array(self, one: str, many: str, x: np.ndarray) -> None:
        """Refuse an array that does not hold integers (numpy would truncate floats and
        parse strings when converting it); Python integers in an object array pass."""
        if x.dtype.kind != "O":
            raise TraceBuildError(f"{self.path}: {many} of type {x.dtype} are not integers")
        for v in x.flat:
            self._integer(one, v)

    def _integer_gaps(self, g: np.ndarray) -> np.ndarray:
        """Gaps given as floats (whole and finite) or Python integers, as int64 or objects."""
        if g.dtype.kind == "f":
            bad = ~np.isfinite(g) | (g != np.floor(g))
            if np.any(bad):
                v = float(g.flat[int(np.flatnonzero(np.atleast_1d(bad))[0])])
                raise TraceBuildError(f"{self.path}: instruction gap {v!r} is not an integer")
            # clipped so that out-of-range values fail the 32-bit test below, not the cast
            return np.clip(g, -1, 1 << 32).astype(np.int64)
        if g.dtype.kind == "b":
            raise TraceBuildError(f"{self.path}: instruction gaps are booleans, not integers")
        if g.dtype.kind == "O":
            for v in g.flat:
                self._integer("instruction gap", v)
            return g
        raise TraceBuildError(f"{self.path}: instruction gaps of type {g.dtype} are not integers")

    # -- closing -----------------------------------------------------------------------
    def close(
        self, *, strand_ranges: tuple[np.ndarray, np.ndarray] | None = None
    ) -> fmt.TraceHeader:
        """End main (implicit sync), write the tables, index and header, and rename into place.

        Parameters
        ----------
        strand_ranges
            Every strand's lowest and highest referenced address.  When given and no
            :meth:`iteration` was marked, the iterations are found from the DAG
            (:func:`simsched.trace.iterations.find_iterations`) and marked as
            :meth:`iteration` marks before each one's first frame would have.

        Returns
        -------
        TraceHeader
            The header of the written trace.
        """
        if self._closed:
            raise TraceBuildError(f"{self.path}: close() called twice")
        try:
            if len(self._stack) != 1:
                raise TraceBuildError(
                    f"{self.path}: {len(self._stack) - 1} spawned frame(s) never returned"
                )
            if self._calls:
                # an iteration mark ran them in main's frame: no frame is open, but the
                # calls never returned
                raise TraceBuildError(
                    f"{self.path}: {len(self._calls)} Cilk call(s) never returned"
                )
            root = self._stack[0]
            self._sync(root)
            self._end_strand(root.strand)
            self._f_last[root.fid] = root.strand
            self._patch_branching(root)
            if strand_ranges is not None and not self._marked:
                self._find_iterations(*strand_ranges)
            self._w.flush()
            self._w.drain(keep=0)
            self._closed = True
            self._in_roi = False  # later references reach _check_open (see ref)
            return self._finish()
        except BaseException:
            self.abort()
            raise

    def _find_iterations(self, lo: np.ndarray, hi: np.ndarray) -> None:
        from simsched.trace.iterations import find_iterations

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

    def relabel_iterations(self, starts: list[int]) -> None:
        """Mark iterations after the fact: iteration ``t`` starts at main's child ``starts[t]``.

        The frames from ``starts[t]`` up to the next start get iteration ``t``, and main's
        children and their position keys are renumbered from 0 in every iteration, as if
        :meth:`iteration` had been called before each start was spawned.  Called by
        :meth:`close` once main has synced.
        """
        from simsched.trace.iterations import relabel

        if self._repeat is not None or self._rep_open is not None:
            raise TraceBuildError(f"{self.path}: iterations of a repeated part are marked")
        relabel(
            self._f_parent, self._f_spawn_index, self._f_branching, self._f_iter, starts
        )  # fmt: skip
        self.found_iterations = len(starts)
        self._meta["params"] = {**self._meta["params"], "iterations_found": len(starts)}

    def _finish(self) -> fmt.TraceHeader:
        """Build the tables and the header's counts, check them as a reader would, and
        have the writer put them, the meta section and the header in the file."""
        n_strands = len(self._s_frame)
        n_refs = self._w.n_refs  # every chunk is written: the buffer is empty
        self._s_ref_start.append(n_refs)
        if self._repeat is not None:
            last, instr1, r1 = self._rep_end
            if self._s_instr[last] != instr1 or self._s_ref_start[last + 1] != r1:
                raise TraceBuildError(
                    f"{self.path}: main recorded references or instructions after "
                    "repeat_end() in the repeated part's last strand (they would repeat)"
                )
            self._meta["repeat"] = self._repeat
        # sort edges by source (then destination) so readers can build CSR directly
        src = np.asarray(self._e_src, np.int64)
        dst = np.asarray(self._e_dst, np.int64)
        kind = np.asarray(self._e_kind, np.uint8)
        order = np.lexsort((dst, src))
        instr = np.asarray(self._s_instr, np.int64)
        tables: dict[str, np.ndarray] = {
            "strand_frame": np.asarray(self._s_frame, np.int64),
            "strand_ref_start": np.asarray(self._s_ref_start, np.int64),
            "strand_instr": instr,
            "strand_tail": np.asarray(self._s_tail, np.int64),
            "frame_parent": np.asarray(self._f_parent, np.int64),
            "frame_spawn_index": np.asarray(self._f_spawn_index, np.int64),
            "frame_branching": np.asarray(self._f_branching, np.int64),
            "frame_level": np.asarray(self._f_level, np.int64),
            "frame_iteration": np.asarray(self._f_iter, np.int64),
            "frame_first_strand": np.asarray(self._f_first, np.int64),
            "frame_last_strand": np.asarray(self._f_last, np.int64),
            "frame_key_hash": fmt.key_hashes(
                np.asarray(self._f_parent, np.int64), np.asarray(self._f_spawn_index, np.int64)
            ),
            "edge_src": src[order],
            "edge_dst": dst[order],
            "edge_kind": kind[order],
        }
        counts = (
            n_strands,
            len(self._f_parent),
            len(self._e_src),
            n_refs,
            self._w.n_chunks,
            structure.instruction_total(str(self.path), instr),
        )
        # The whole program's counts (a repeated part expanded, and checked as a reader
        # would before the file is in place).
        h = dict(zip(_COUNT_KEYS, counts, strict=True))
        spec, hw, _ = structure.whole_program(str(self.path), h, dict(self._meta), tables)
        digest = self._w.finish(self._meta, tables, counts)
        return fmt.TraceHeader(
            version=fmt.VERSION,
            backend=self._meta["backend"],
            program=self._meta["program"],
            args=tuple(self._meta["args"]),
            gaps_exact=self._meta["gaps_exact"],
            line_size_hint=self._meta["line_size_hint"],
            **{k: hw[k] for k in _COUNT_KEYS},
            digest=digest.hex(),
            params=self._meta["params"],
            roi=self._meta["roi"],
            stack=tuple(self._meta["stack"]) if "stack" in self._meta else None,  # type: ignore[arg-type]
            repeat=None if spec is None else spec.describe(h),
        )

    @property
    def stack(self) -> tuple[int, int] | None:
        """The stack region named so far (:meth:`set_stack`), or None."""
        st = self._meta.get("stack")
        return None if st is None else (st[0], st[1])

    def set_stack(self, lo: int, hi: int) -> None:
        """Name the captured thread's stack region: bytes ``lo`` to ``hi - 1``.

        References inside it are the thread's stack frames; a multi-core replay gives
        every core its own copy of the region at the same offsets (docs/capture.md,
        "Per-worker stacks").

        Raises
        ------
        ValueError
            Unless ``0 <= lo < hi <= 2**ADDRESS_BITS``.
        """
        lo, hi = int(lo), int(hi)
        if not 0 <= lo < hi <= fmt.ADDRESS_LIMIT:
            raise ValueError(
                f"stack region {lo:#x}-{hi:#x} is not 0 <= lo < hi <= 2^{fmt.ADDRESS_BITS}"
            )
        self._meta["stack"] = [lo, hi]

    def abort(self) -> None:
        """Discard the partial output (called on errors)."""
        self._closed = True
        self._in_roi = False
        self._w.abort()

    def __enter__(self) -> TraceBuilder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        elif not self._closed:
            self.abort()
