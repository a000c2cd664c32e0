"""Replaying a trace as the sequence of builder calls that produced it.

Strands are numbered in the order they start, and each strand after the first starts for
exactly one reason: a spawn (it is a new frame's first strand), a return (it is the
continuation in the parent frame) or a sync (a post-sync strand in the same frame).  So the
tables determine the marker sequence, and ``copy`` into a new :class:`TraceBuilder`
reproduces the trace bit for bit: the round-trip test of the format, and the base of
transformations such as regraining (``simsched.profile.regrain``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from simsched.trace.builder import TraceBuilder
from simsched.trace.format import RefChunk
from simsched.trace.reader import Trace

#: one builder call: its name, then its argument if it takes one
Event = (
    tuple[Literal["spawn"]]
    | tuple[Literal["ret"]]
    | tuple[Literal["sync"]]
    | tuple[Literal["iteration"], int]
    | tuple[Literal["strand"], int]
    | tuple[Literal["refs"], RefChunk]
    | tuple[Literal["instr"], int]
    | tuple[Literal["repeat_begin"]]
    | tuple[Literal["repeat_end"], int, int]
)


class _RefStream:
    """Consecutive reference ranges pulled from the chunk stream without random access."""

    def __init__(self, t: Trace):
        self._t = t
        self._it = t.iter_chunks()
        self._cur: RefChunk | None = None
        self._pos = 0

    def seek(self, g: int) -> None:
        """Continue from reference ``g`` (later than every reference taken so far)."""
        k = self._t.chunk_of_ref(g) if g < self._t.header.n_refs else len(self._t.index)
        self._it.close()  # its decoding threads stop
        self._it = self._t.iter_chunks(first=k)
        self._cur = next(self._it, None)
        self._pos = g - self._cur.start if self._cur is not None else 0

    def take(self, n: int) -> list[RefChunk]:
        parts = []
        while n > 0:
            if self._cur is None or self._pos == len(self._cur):
                self._cur = next(self._it)
                self._pos = 0
            k = min(n, len(self._cur) - self._pos)
            parts.append(self._cur.slice(self._pos, self._pos + k))
            self._pos += k
            n -= k
        return parts


def events(t: Trace, *, repeat: bool = False) -> Iterator[Event]:
    """Yield the builder calls that reproduce ``t``, in order.

    Items are ``("spawn",)``, ``("ret",)``, ``("sync",)``, ``("iteration", i)``,
    ``("strand", s)`` (strand ``s`` starts), ``("refs", RefChunk)`` and ``("instr", n)``.
    The whole program by default; with ``repeat``, a repeated part once, between
    ``("repeat_begin",)`` and ``("repeat_end", count, stride)`` (its other copies are
    skipped: strand numbers jump past them).
    """
    rep = t.header.repeat if repeat else None
    begin = end = resume = -1
    if rep is not None:
        begin, end = rep["strands"]
        resume = begin + rep["count"] * (end - begin)  # first strand after the last copy
    frame = t.strands.frame
    parent = t.frames.parent
    first = t.frames.first_strand
    fiter = t.frames.iteration
    ref_start = t.strands.ref_start
    tail = t.strands.tail
    stream = _RefStream(t)
    iteration = -1
    s = 0
    while s < t.header.n_strands:
        f = int(frame[s])
        if s == begin:
            yield ("repeat_begin",)
        if s:
            pf = int(frame[s - 1])
            if f == pf:
                yield ("sync",)
            elif first[f] == s:
                if fiter[f] != iteration:
                    iteration = int(fiter[f])
                    yield ("iteration", iteration)
                yield ("spawn",)
            elif f == parent[pf]:
                yield ("ret",)
            else:  # pragma: no cover - excluded by validation
                raise AssertionError(f"strand {s} does not follow strand {s - 1}")
        yield ("strand", s)
        n = int(ref_start[s + 1] - ref_start[s])
        if n:
            for part in stream.take(n):
                yield ("refs", part)
        if tail[s]:
            yield ("instr", int(tail[s]))
        s += 1
        if s == end and rep is not None:
            yield ("repeat_end", rep["count"], rep["iteration_stride"])
            s = resume
            stream.seek(int(ref_start[s]))


def copy(t: Trace, b: TraceBuilder) -> None:
    """Replay every event of ``t`` into builder ``b`` (which the caller then closes).

    A repeated part is copied as one (:func:`events` with ``repeat``).  A builder made with
    ``roi=True`` is put inside its region of interest first: every reference of ``t`` was
    kept when ``t`` was made, so all of them belong in the copy.
    """
    if not b.recording:
        # a builder made with roi=True starts outside its region and would drop them all
        b.roi_begin()
    for ev in events(t, repeat=True):
        if ev[0] == "refs":
            c = ev[1]
            b.refs(c.addr, c.size, c.write, c.gap, c.dep)
        elif ev[0] == "instr":
            b.instr(ev[1])
        elif ev[0] == "spawn":
            b.spawn()
        elif ev[0] == "ret":
            b.ret()
        elif ev[0] == "sync":
            b.sync()
        elif ev[0] == "iteration":
            b.iteration(ev[1])
        elif ev[0] == "repeat_begin":
            b.repeat_begin()
        elif ev[0] == "repeat_end":
            b.repeat_end(ev[1], ev[2])
