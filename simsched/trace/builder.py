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
well-formedness, there file offsets, the digest and the order of the sections.

Two parts of the builder are mixins in private modules, each reading alone over the state
that :class:`TraceBuilder` makes and owns: the iterations (marks, the repeated part, found
iterations; :mod:`simsched.trace._builder_iterations`) and the references of the current
strand with the region of interest, the hot path (:mod:`simsched.trace._builder_refs`).
Here stay the frames, strands and edges, the calls that make them, and closing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np

from simsched.errors import ConfigError, TraceBuildError
from simsched.files import check_path
from simsched.identity import version
from simsched.params import check_callable, check_flag, check_int
from simsched.trace import format as fmt
from simsched.trace import structure
from simsched.trace._builder_iterations import _INLINED, _Frame, _IterationMarks
from simsched.trace._builder_refs import _References
from simsched.trace.builder_checks import check_meta, json_params, writer_name
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


#: the header's counts, in its order
_COUNT_KEYS = ("n_strands", "n_frames", "n_edges", "n_refs", "n_chunks", "n_instructions")


class TraceBuilder(_IterationMarks, _References):
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
        # found by close() inside the one Cilk function main calls, when none were among
        # main's children: the frames that start them (_find_iterations)
        self.inner_iterations = []
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
    def n_frames(self) -> int:
        """Frames made so far."""
        return len(self._f_parent)

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
            :meth:`iteration` marks before each one's first frame would have; when
            none are among main's children and main calls a Cilk function as a phase of
            its own (:func:`~simsched.trace.iterations.called_function`), the children of that function that start repeated steps are left
            in :attr:`inner_iterations` (for the raw importer, which marks them by
            importing the stream again).

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
