"""Importing the raw capture stream (``capture/simsched_raw.h``) into a trace.

The stream's records and their reading, version 1 (16-byte records) and version 2 (column
blocks) alike, are :mod:`simsched.trace.raw_stream`'s (its names are importable from here
too); this module turns the records into a trace.

The importer streams the raw file (plain, or one zstd stream) block by block: runs of
reference records go to :meth:`TraceBuilder.refs` as whole arrays, markers drive the
builder's DAG calls, block operations (RANGE records) are split into references of at
most ``SS_RANGE_PIECE`` bytes.

If the stream contains any ROI_BEGIN marker, only references between ROI markers are kept;
otherwise the whole run is the region of interest.  Finding that out costs one quick pass
over the record kinds before the import.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from simsched.errors import (
    IterationMarkError,
    OutputError,
    SimschedError,
    TraceBuildError,
    TraceFormatError,
)
from simsched.files import (
    atomic_output,
    check_not_input,
    check_output_file,
    check_path,
    regular_file_kind,
    told_as,
)
from simsched.params import check_callable
from simsched.trace import _raw_kernels as _rk
from simsched.trace import format as fmt
from simsched.trace.builder import TraceBuilder
from simsched.trace.builder_checks import check_meta
from simsched.trace.iterations import check_iterations_mode
from simsched.trace.raw_stream import (
    BACKENDS,
    BLOCK_DTYPE,
    BLOCK_ESCAPE,
    BLOCK_MAGIC,
    BLOCK_MAX_RECS,
    BLOCK_SLOTS,
    BLOCK_WIDE_GAP,
    FLAG_GAPS_EXACT,
    FLAG_WRITE,
    M_CALL,
    M_CALL_END,
    M_END,
    M_ITER,
    M_ROI_BEGIN,
    M_ROI_END,
    M_SPAWN,
    M_SPAWN_END,
    M_STACK,
    M_SYNC,
    M_THREAD,
    RANGE_PIECE,
    RAW_DTYPE,
    RAW_MAGIC,
    RAW_VERSION,
    RAW_VERSION_BLOCKS,
    RAW_VERSIONS,
    REC_GAP,
    REC_HEADER,
    REC_MARKER,
    REC_RANGE,
    REC_REF,
    _iter_v2_bodies,
    _open_stream,
    _read,
    _stream_version,
    iter_raw_blocks,
)

# The stream's definition and reading are raw_stream's; callers name them from here too.
__all__ = [
    "BACKENDS", "BLOCK_DTYPE", "BLOCK_ESCAPE", "BLOCK_MAGIC", "BLOCK_MAX_RECS", "BLOCK_SLOTS",
    "BLOCK_WIDE_GAP", "FLAG_GAPS_EXACT", "FLAG_WRITE", "M_CALL", "M_CALL_END", "M_END",
    "M_ITER", "M_ROI_BEGIN", "M_ROI_END", "M_SPAWN", "M_SPAWN_END", "M_STACK", "M_SYNC",
    "M_THREAD", "NONLOCAL_EXIT", "RANGE_PIECE", "RAW_DTYPE", "RAW_MAGIC", "RAW_VERSION",
    "RAW_VERSIONS", "RAW_VERSION_BLOCKS", "REC_GAP", "REC_HEADER", "REC_MARKER", "REC_RANGE",
    "REC_REF", "import_raw", "iter_raw_blocks",
]  # fmt: skip


def _has_roi(path: Path, name: str) -> bool:
    with _open_stream(path) as f:
        head = _read(f, 16, name, 0)
        if _stream_version(head, name) == RAW_VERSION_BLOCKS:
            # Markers are always escaped records: look at those only, decode nothing.
            for _, h, shifts, body in _iter_v2_bodies(f, name):
                n, n_esc = int(h["n"]), int(h["n_esc"])
                esc = np.frombuffer(body, RAW_DTYPE, count=n_esc, offset=n * (3 + shifts.shape[0]))
                if np.any((esc["kind"] == REC_MARKER) & (esc["c"] == M_ROI_BEGIN)):
                    return True
            return False
    for _, recs in iter_raw_blocks(path, source=name):
        if np.any((recs["kind"] == REC_MARKER) & (recs["c"] == M_ROI_BEGIN)):
            return True
    return False


def _check_region(recs: np.ndarray, start: int, first: int, name: str) -> None:
    """Apply the reference rule to the REF and non-empty RANGE records of a block.

    Both are regions the importer turns into references (splitting those larger than
    :data:`simsched.trace.format.MAX_REF_SIZE`), so their size may be up to the width of
    their length field; a region that passes gives only valid references.
    """
    recs = recs[start:]
    kind = recs["kind"]
    is_range = kind == REC_RANGE
    length = np.where(is_range, recs["b"], recs["c"]).astype(np.int64)
    pos = np.flatnonzero((kind == REC_REF) | (is_range & (length > 0)))
    fmt.check_refs(
        recs["a"][pos],
        length[pos],
        lambda i: f"{name}: record {first + start + int(pos[i])}",
        max_size=(1 << 32) - 1,
    )


_NO_REF = np.iinfo(np.int64).max  # the lowest address of a strand without references


class _StrandRanges:
    """The lowest and highest address each strand references (for finding iterations)."""

    def __init__(self) -> None:
        self.lo = np.full(1024, _NO_REF, np.int64)
        self.hi = np.full(1024, -1, np.int64)

    def add(self, b: TraceBuilder, lo: int, hi: int) -> None:
        s = b.n_strands - 1  # serial execution: the current strand is the newest one
        if s >= self.lo.shape[0]:
            n = max(2 * self.lo.shape[0], s + 1)
            self.lo = np.concatenate([self.lo, np.full(n - self.lo.shape[0], _NO_REF)])
            self.hi = np.concatenate([self.hi, np.full(n - self.hi.shape[0], -1)])
        if lo < self.lo[s]:
            self.lo[s] = lo
        if hi > self.hi[s]:
            self.hi[s] = hi


class _RoiOrder:
    """How the stream's ROI markers nest, for one warning line.

    The markers are a switch (docs/capture.md): a BEGIN while the region is open and an END
    while it is closed change nothing.  That is what the trace records; a program whose
    markers are out of order most likely meant something else, so the first of each case
    is named.  (A region left open runs to the program's end, a usual way to leave out
    only the initialisation: no warning.)
    """

    def __init__(self) -> None:
        self.open_at = -1  # record of the BEGIN that opened the region, -1: closed
        self.reopened = -1  # first BEGIN inside an open region
        self.stray_end = -1  # first END with no region open

    def begin(self, pos: int) -> None:
        if self.open_at >= 0:
            if self.reopened < 0:
                self.reopened = pos
        else:
            self.open_at = pos

    def end(self, pos: int) -> None:
        if self.open_at < 0 and self.stray_end < 0:
            self.stray_end = pos
        self.open_at = -1

    def message(self, name: str) -> str | None:
        what = []
        if self.reopened >= 0:
            what.append(f"SS_ROI_BEGIN at record {self.reopened} with the region already open")
        if self.stray_end >= 0:
            what.append(f"SS_ROI_END at record {self.stray_end} with no region open")
        if not what:
            return None
        return (
            f"{name}: ROI markers out of order: {'; '.join(what)}; the markers are a switch, "
            "so the extra ones changed nothing (docs/capture.md)"
        )


class _StackGuard:
    """Finds references of a spawned Cilk function's body to its ancestors' stack objects.

    A SPAWN marker may carry the stack depth at the spawn (the valgrind tool writes it):
    the spawned function's frame lies below that stack pointer, so a reference at least
    :attr:`SLACK` bytes above it, made in the function's body (between its own CALL and
    CALL_END markers, so not the argument loads or the store of its value, which the
    spawning code makes), reaches a stack object of an enclosing frame through a pointer.
    The replay gives each core its own stack (:mod:`simsched.memory.stacks`), so such
    sharing is not modelled: the importer reports it.
    """

    #: bytes above the spawn's stack pointer still taken as the spawned frame's own (the
    #: marker function's frame, the return address and saved registers of the call)
    SLACK = 256

    def __init__(self) -> None:
        self.spawns: list[list[int]] = []  # per open spawn: [lowest ancestor byte or -1, calls]
        self.count = 0
        self.first: tuple[int, int, int] | None = None  # (record, address, bytes below top)

    def spawn(self, b: TraceBuilder, depth: int) -> None:
        st = b.stack
        self.spawns.append([st[1] - depth + self.SLACK if st and depth else -1, 0])

    def spawn_end(self) -> None:
        if self.spawns:
            self.spawns.pop()

    def call(self, delta: int) -> None:
        if self.spawns:
            self.spawns[-1][1] = max(self.spawns[-1][1] + delta, 0)

    def check(self, b: TraceBuilder, addr: np.ndarray, record: int) -> None:
        if not self.spawns or self.spawns[-1][0] < 0 or self.spawns[-1][1] == 0 or not b.recording:
            return
        st = b.stack
        assert st is not None, "a depth is only kept with a stack region"
        hit = (addr >= np.uint64(self.spawns[-1][0])) & (addr < np.uint64(st[1]))
        n = int(np.count_nonzero(hit))
        if n:
            if self.first is None:
                a = int(addr[int(np.argmax(hit))])
                self.first = (record, a, st[1] - a)
            self.count += n

    def message(self, name: str) -> str | None:
        if self.first is None:
            return None
        rec, a, below = self.first
        return (
            f"{name}: {self.count} reference(s) in the body of a spawned Cilk function reach "
            f"a stack object of an enclosing frame through a pointer (the first near record "
            f"{rec}: address {a:#x}, {below} bytes below the stack top); the replay gives "
            "each core its own stack, so this sharing between workers is not modelled "
            "(docs/capture.md, per-worker stacks)"
        )


def _expand(
    b: TraceBuilder,
    seg: np.ndarray,
    first: int,
    name: str,
    ranges: _StrandRanges | None,
    guard: _StackGuard | None = None,
) -> None:
    """Record a run of REF, RANGE and GAP records (record ``first`` onwards) in one go."""
    words = np.ascontiguousarray(seg).view("<u8").reshape(-1, 2)
    st, idx, addr, sizew, gap, trailing, lo, hi = _rk.expand_records(
        words, fmt.MAX_REF_SIZE, RANGE_PIECE
    )
    if st == _rk.EXPAND_BAD_REF:
        _check_region(seg, int(idx), first, name)  # raises, naming the record and the rule
    if st != _rk.EXPAND_OK:
        raise TraceFormatError(
            f"{name}: record {first + int(idx)}: instruction gap does not fit 32 bits"
        )
    if guard is not None:
        guard.check(b, addr, first)
    b.refs_checked(addr, sizew, gap)
    if trailing:
        b.instr(int(trailing))
    if ranges is not None and hi >= 0 and b.recording:
        ranges.add(b, int(lo), int(hi))


#: what an unbalanced frame in a marker stream most likely means, for its error message
NONLOCAL_EXIT = (
    ": a non-local exit left a Cilk frame without running its end (longjmp out of a "
    "spawned call or a Cilk function, or exit() inside one); simsched cannot capture "
    "such a DAG (docs/capture.md, capturing Cilk programs)"
)


def _builder_problem(b: TraceBuilder, exc: Exception) -> str:
    """``exc``'s message without the builder's path: that is the hidden temporary file of
    the output, which means nothing to the user (the raw stream is named instead)."""
    return str(exc).removeprefix(f"{b.path}: ")


def _frame_end(b: TraceBuilder, end: Callable[[], None], name: str, pos: int) -> None:
    """Close a frame at a SPAWN_END or CALL_END marker; a mismatch names the likely cause.

    A frame whose end markers were skipped (a ``longjmp`` over them) surfaces as the
    next end marker closing the wrong kind of frame.
    """
    try:
        end()
    except TraceBuildError as exc:
        raise TraceFormatError(
            f"{name}: record {pos}: {_builder_problem(b, exc)}{NONLOCAL_EXIT}"
        ) from None


def _stack(b: TraceBuilder, r: np.void, name: str, pos: int) -> None:
    """Record the stack region a STACK marker names (one per stream, or repeated alike)."""
    lo, size = int(r["a"]), int(r["b"])
    if size == 0 or lo + size > fmt.ADDRESS_LIMIT:
        raise TraceFormatError(
            f"{name}: record {pos}: the stack region {lo:#x} + {size} bytes is empty or "
            f"not below 2^{fmt.ADDRESS_BITS}"
        )
    old = b.stack
    if old is not None and old != (lo, lo + size):
        raise TraceFormatError(
            f"{name}: record {pos}: a second, different stack region {lo:#x}-{lo + size:#x} "
            f"(the first was {old[0]:#x}-{old[1]:#x}; one thread is captured)"
        )
    b.set_stack(lo, lo + size)


def import_raw(
    raw_path: str | os.PathLike,
    out_path: str | os.PathLike,
    *,
    program: str = "",
    args: list[str] | tuple[str, ...] = (),
    progress: Callable[[int, int], None] | None = None,
    line_size_hint: int = 64,
    iterations: str = "auto",
    warn: Callable[[str], None] | None = None,
    source: str | None = None,
    iterations_refused: Callable[[str], None] | None = None,
) -> fmt.TraceHeader:
    """Convert a raw capture stream into a trace, streaming.

    Parameters
    ----------
    raw_path
        The raw stream (version 1 or 2), plain or zstd-compressed.
    out_path
        The trace to write (atomically).
    program, args
        Provenance for the trace header.
    progress
        Called as ``progress(records_done, bytes_read_so_far)`` after each block.
    line_size_hint
        Stored in the header.
    iterations
        ``"markers"``: iterations are where ``SS_ITER`` says; ``"none"``: ``SS_ITER``
        markers are ignored (no iterations); ``"auto"`` (default): the markers if the
        stream has any, otherwise the iterations found from the DAG
        (:mod:`simsched.trace.iterations`): among main's children, or, when none repeat
        there, among the children of a Cilk function main calls as a phase of its own (a
        time loop written in ``solve()``;
        :func:`~simsched.trace.iterations.called_function`).  The last are marked by
        reading the stream a second time with an ``SS_ITER(t)`` mark before the spawn or
        call that starts step ``t``: the trace is the one of the program with those marks
        written at the top of its loop body (but for work the first step does before its
        first spawn or call, which stays in the function's frame as work before the loop
        does), the header saying they were found (``iterations_found``).
    warn
        Called with one line for what the trace cannot model (a spawned Cilk function
        using a stack object of an enclosing frame through a pointer), and for ROI markers
        out of order (a BEGIN inside a region, an END outside one).
    source
        What to name in error messages about the records (default ``raw_path``; a capture
        names its program, whose raw stream is a temporary file).  Never the output path:
        that is often the temporary file of an atomic write.
    iterations_refused
        Called with the reason when ``auto`` found the steps of a time loop inside a Cilk
        function main calls but the builder refused the marks before them
        (:meth:`TraceBuilder.iteration`); the trace then has no iterations, as the first
        pass wrote it.

    Returns
    -------
    TraceHeader

    Raises
    ------
    ConfigError
        An argument of the wrong type, or ``out_path`` that is the raw stream (writing
        there would replace it).
    OutputError
        ``out_path`` cannot be written (a folder, ...), told before a record is read.
    TraceFormatError
        The stream is malformed: bad header, unknown record, unbalanced markers, missing
        END marker, truncation.
    """
    check_callable(progress, "progress")
    check_callable(warn, "warn")
    raw_path = check_path(raw_path, "raw_path")
    out_path = check_path(out_path, "out_path")
    check_meta(program, args, line_size_hint)  # the caller's, not the stream's, faults
    check_not_input(out_path, "--out", {"the raw stream": raw_path}, keyword="out_path")
    # a folder given as the output was found at the first record, and told as its fault
    check_output_file(out_path)
    name = source or str(raw_path)
    check_iterations_mode(iterations)
    check_callable(iterations_refused, "iterations_refused")
    if not raw_path.exists():
        raise TraceFormatError(f"{raw_path}: no such raw stream")
    what = regular_file_kind(raw_path)
    if what is not None:
        # a named pipe blocked the import until something wrote to it
        raise TraceFormatError(f"{raw_path}: is {what}, not a raw stream")
    roi = _has_roi(raw_path, name)
    meta = {
        "program": program,
        "args": list(args),
        "line_size_hint": line_size_hint,
        "roi": roi,
    }
    guard = _StackGuard()
    roi_order = _RoiOrder()
    if iterations != "auto":
        h, _ = _import_pass(raw_path, out_path, name, meta, iterations, progress, guard, roi_order)
        _warn(warn, guard, roi_order, name)
        return h
    # Auto: the first pass's trace is staged, since a time loop found inside a Cilk
    # function main calls is marked by importing the stream again (the marks change the
    # frame table), and that trace replaces it.
    with atomic_output(out_path) as stage, told_as(out_path, stage):
        h = _import_auto(
            raw_path, stage, name, meta, progress, guard, roi_order, iterations_refused
        )
        _warn(warn, guard, roi_order, name)
    return h


def _warn(
    warn: Callable[[str], None] | None, guard: _StackGuard, roi_order: _RoiOrder, name: str
) -> None:
    for msg in (guard.message(name), roi_order.message(name)):
        if msg is not None and warn is not None:
            warn(msg)


class _Refused(Exception):
    """The builder refused an iteration mark the importer made itself (its reason)."""


def _import_auto(
    raw_path: Path,
    out: Path,
    name: str,
    meta: dict,
    progress: Callable[[int, int], None] | None,
    guard: _StackGuard,
    roi_order: _RoiOrder,
    refused: Callable[[str], None] | None,
) -> fmt.TraceHeader:
    """Import in ``auto`` mode: the stream's marks, or the iterations found among main's
    children, or those found among the children of the Cilk function main calls
    (:func:`~simsched.trace.iterations.called_function`).

    The last are marked where an ``SS_ITER(t)`` at the top of each step of the loop
    would have marked them: the stream is read a second time, and iteration ``t`` is marked right before the
    builder call (``spawn`` or ``call``; every one counts, a call merged into its spawn
    too) that made the frame starting it in the first pass.  If the builder refuses such a
    mark, the first pass's trace stays (``refused`` gets the reason)."""
    created: list[int] = []  # per frame, the index of the spawn or call that made it
    seen = [0, 0]  # the first pass's records and bytes, where the second one's count on

    def first(done: int, read: int) -> None:
        seen[:] = [done, read]
        if progress is not None:
            progress(done, read)

    h, b = _import_pass(raw_path, out, name, meta, "auto", first, guard, roi_order, created=created)
    if not b.inner_iterations:
        return h
    marks = [created[f] for f in b.inner_iterations]
    again = None
    if progress is not None:
        # one import that goes on: a bar that went back to 0 would look like a new one
        def again(done: int, read: int) -> None:
            progress(seen[0] + done, seen[1] + read)

    try:
        h2, _ = _import_pass(
            raw_path, out, name, meta, "auto", again, _StackGuard(), _RoiOrder(), marks=marks
        )
    except (_Refused, OutputError) as exc:
        # the first pass's trace is whole (the second one writes a file of its own): a
        # full disk now costs the iterations, not the trace
        if refused is not None:
            # (an output error names the staged file, which the user never named)
            why = (
                str(exc)
                if isinstance(exc, _Refused)
                else f"writing the trace with them failed ({str(exc).split(': ', 1)[-1]})"
            )
            refused(why)
        return h
    return h2


def _import_pass(
    raw_path: Path,
    out_path: Path,
    name: str,
    meta: dict,
    iterations: str,
    progress: Callable[[int, int], None] | None,
    guard: _StackGuard,
    roi_order: _RoiOrder,
    *,
    created: list[int] | None = None,
    marks: list[int] | None = None,
) -> tuple[fmt.TraceHeader, TraceBuilder]:
    """Stream the raw file once through a builder writing ``out_path``; return the written
    trace's header and the (closed) builder.

    ``created``, when given, gets for every frame the index of the builder call (``spawn``
    or ``call``, counting every one) that made it, -1 for main.  ``marks``: make iteration
    mark ``t`` right before builder call ``marks[t]`` (the stream having none); one the
    builder refuses raises :class:`_Refused`, the output discarded.
    """
    ranges = _StrandRanges() if iterations == "auto" and marks is None else None
    b: TraceBuilder | None = None
    ended = False
    pos = 0
    made = 0  # spawn and call builder calls so far
    marked = 0  # the importer's own iteration marks so far
    due = marks[0] if marks else -1  # the builder call before which the next mark goes

    def creating() -> None:
        # before a spawn or a call: the importer's own mark, then count it
        nonlocal made, marked, due
        assert b is not None
        if made == due:
            assert marks is not None
            try:
                b.iteration(marked)
            except IterationMarkError as exc:
                b.abort()
                raise _Refused(_builder_problem(b, exc)) from None
            marked += 1
            due = marks[marked] if marked < len(marks) else -1
        made += 1

    def record() -> None:
        # after a spawn or a call: the frame it made, if it made one
        if created is not None:
            assert b is not None
            created.extend([made - 1] * (b.n_frames - len(created)))

    try:
        for first, recs in iter_raw_blocks(raw_path, source=name):
            start = 0
            if b is None:
                h = recs[0]  # checked by iter_raw_blocks
                b = TraceBuilder(
                    out_path,
                    program=meta["program"],
                    args=meta["args"],
                    backend=BACKENDS.get(int(h["c"]), "unknown"),
                    gaps_exact=bool(int(h["flags"]) & FLAG_GAPS_EXACT),
                    line_size_hint=meta["line_size_hint"],
                    roi=meta["roi"],
                )
                if created is not None:
                    created.append(-1)  # main
                start = 1
            if ended:
                raise TraceFormatError(f"{name}: records after the END marker at record {first}")
            kind = recs["kind"]
            # Markers (and records that are errors) are handled one by one; the runs of
            # REF, RANGE and GAP records between them are expanded by one kernel call.
            special = np.flatnonzero((kind == REC_HEADER) | (kind >= REC_MARKER))
            special = special[special >= start]
            prev = start
            for i in map(int, special):
                if i > prev:
                    pos = first + prev
                    _expand(b, recs[prev:i], pos, name, ranges, guard)
                pos = first + i
                r = recs[i]
                k = int(r["kind"])
                if k == REC_MARKER:
                    m = int(r["c"])
                    if m == M_SPAWN:
                        # the marker's argument: the spawned function (simsched_cilk.h)
                        creating()
                        b.spawn(callee=int(r["a"]))
                        record()
                        guard.spawn(b, int(r["b"]))
                    elif m == M_SPAWN_END:
                        _frame_end(b, b.ret, name, pos)
                        guard.spawn_end()
                    elif m == M_SYNC:
                        b.sync()
                    elif m == M_CALL:
                        creating()
                        b.call(fn=int(r["a"]))
                        record()
                        guard.call(1)
                    elif m == M_CALL_END:
                        _frame_end(b, b.call_ret, name, pos)
                        guard.call(-1)
                    elif m == M_STACK:
                        _stack(b, r, name, pos)
                    elif m == M_ITER:
                        if iterations != "none":
                            b.iteration(int(r["a"]))
                    elif m == M_ROI_BEGIN:
                        roi_order.begin(pos)
                        b.roi_begin()
                    elif m == M_ROI_END:
                        if not meta["roi"]:
                            # No BEGIN anywhere: the whole run is the region, so this END
                            # cannot be a switch that changes nothing, and the builder's
                            # own complaint speaks of its API, not of the program.
                            raise TraceFormatError(
                                f"{name}: record {pos}: SS_ROI_END without any SS_ROI_BEGIN "
                                "in the run; with no SS_ROI_BEGIN the whole run is the region "
                                "of interest: add the SS_ROI_BEGIN that opens the region, or "
                                "remove the SS_ROI_END (docs/capture.md)"
                            )
                        roi_order.end(pos)
                        b.roi_end()
                    elif m == M_THREAD:
                        raise TraceFormatError(
                            f"{name}: record {pos}: the program started a thread "
                            "(pthread_create); a capture records a serial run, and another "
                            "thread's references would be mixed into the strands of the one "
                            "that runs the DAG (docs/capture.md)"
                        )
                    elif m == M_END:
                        ended = True
                        if i != recs.shape[0] - 1:
                            raise TraceFormatError(
                                f"{name}: records after the END marker at record {pos}"
                            )
                    else:
                        raise TraceFormatError(f"{name}: record {pos}: unknown marker {m}")
                elif k == REC_HEADER:
                    raise TraceFormatError(f"{name}: record {pos}: a second header record")
                else:
                    raise TraceFormatError(f"{name}: record {pos}: unknown record kind {k}")
                prev = i + 1
            if prev < recs.shape[0]:
                pos = first + prev
                _expand(b, recs[prev:], pos, name, ranges, guard)
            if progress is not None:
                progress(first + recs.shape[0], 0)
        if b is None:
            raise TraceFormatError(f"{name}: empty raw stream")
        if not ended:
            raise TraceFormatError(
                f"{name}: the stream ends without an END marker (the program crashed, or the "
                "capture was cut short)"
            )
        if b.depth != 1 or b.open_calls:
            what = (
                f"{b.open_calls} Cilk call(s) without a matching CALL_END"
                if b.open_calls
                else f"{b.depth - 1} spawn(s) without a matching SPAWN_END"
            )
            raise TraceFormatError(f"{name}: {what} at the end of the run{NONLOCAL_EXIT}")
        if marks:
            b.iterations_were_found(len(marks))
        if ranges is None:
            return b.close(), b
        return b.close(strand_ranges=(ranges.lo, ranges.hi)), b
    except SimschedError as exc:
        if b is not None and not b._closed:
            b.abort()
        if isinstance(exc, TraceFormatError | OutputError):
            raise  # an output that cannot be written is no fault of the stream's records
        problem = _builder_problem(b, exc) if b is not None else str(exc)
        raise TraceFormatError(f"{name}: near record {pos}: {problem}") from None
    except BaseException:
        if b is not None and not b._closed:
            b.abort()
        raise
