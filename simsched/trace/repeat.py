"""Repeated parts: one copy of identical iterations stored once, replayed ``count`` times.

An iterative program whose iterations are identical (the stencils: same tasks, same
addresses every time step, or every second one when two grids alternate) is stored as the
trace of the program with the repeated part written once, plus the meta field ``repeat``
(header flag :data:`~simsched.trace.format.FLAG_REPEAT`)::

    "repeat": {"strands": [s0, s1], "count": c, "iteration_stride": p, "chunk_refs": n}

Strands ``s0 .. s1-1`` are the stored copy (the *body*); the program runs it ``c`` times in
a row, copy ``k`` with every iteration number raised by ``k p``.  The body's frames are the
frames that start in it, its edges the edges that end in it, its references those of its
strands.  The reader expands the tables (:func:`expand`) into the whole program's, exactly
the tables the program written without repetition has, and maps the whole program's
references onto the stored ones (:func:`pieces`), in chunks of ``chunk_refs`` references as
the program written without repetition would be chunked: a replay cannot tell the two apart.

The rule that makes a plain copy right (:class:`~simsched.trace.TraceBuilder` keeps it,
:meth:`~simsched.trace.TraceBuilder.repeat_begin`): the body begins and ends in main with
main's children synced, begins with an iteration mark before main's first spawn, and main
records nothing between the start of the body and that spawn, nor after its end in the
same strand.  Then copy ``k``'s strands, frames and references are the body's shifted by
``k`` times the body's lengths, and an edge from the strand before the body (``s0 - 1``)
comes, in copy ``k``, from copy ``k - 1``'s last strand (main's strand that continues).
Opening a trace checks the expanded tables like any others (:mod:`simsched.trace.structure`),
so a body that breaks the rule is refused there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.errors import TraceFormatError
from simsched.trace import format as fmt

#: the meta field's keys
FIELDS = ("strands", "count", "iteration_stride", "chunk_refs")
#: most table rows (strands + frames + edges) a repeated trace may expand to, most
#: chunks, and most references per chunk: the expanded tables (opening 2^24 rows peaks
#: near 1.3 GB), the program's chunk index and a decoded chunk are held in memory; the
#: published heat of 200 iterations (docs/trace-format.md) expands to 2.9 M rows
MAX_ROWS = 1 << 24
MAX_CHUNKS = 1 << 22
MAX_CHUNK_REFS = 1 << 24


@dataclass(frozen=True)
class Repeat:
    """A repeated part, with the extents derived from the stored tables."""

    s0: int  # first body strand
    s1: int  # one past the last body strand
    f0: int  # first body frame
    f1: int  # one past the last body frame
    r0: int  # first body reference
    r1: int  # one past the last body reference
    count: int
    stride: int
    chunk_refs: int

    @property
    def strands(self) -> int:
        """Strands of one copy."""
        return self.s1 - self.s0

    @property
    def frames(self) -> int:
        """Frames of one copy."""
        return self.f1 - self.f0

    @property
    def refs(self) -> int:
        """References of one copy."""
        return self.r1 - self.r0

    def as_meta(self) -> dict[str, Any]:
        """The meta field."""
        return {
            "strands": [self.s0, self.s1],
            "count": self.count,
            "iteration_stride": self.stride,
            "chunk_refs": self.chunk_refs,
        }

    def describe(self, h: dict[str, Any]) -> dict[str, Any]:
        """The meta field and what the file stores (``stored_strands``, ``stored_refs``, ...),
        given the stored counts ``h`` (``n_strands``, ...): the header's ``repeat``."""
        stored = {f"stored_{k}": int(h[f"n_{k}"]) for k in ("strands", "frames", "edges", "refs")}
        return {**self.as_meta(), **stored, "stored_chunks": int(h["n_chunks"])}

    def n_refs(self, stored: int) -> int:
        """References of the whole program, given the stored ones."""
        return stored + (self.count - 1) * self.refs


def _int(name: str, rep: dict, key: str, lo: int, hi: int) -> int:
    v = rep[key]
    if type(v) is not int or not lo <= v <= hi:
        raise TraceFormatError(
            f"{name}: meta field 'repeat': {key} is {v!r}, not an integer in {lo}..{hi}"
        )
    return v


def parse(name: str, rep: Any, tabs: dict[str, np.ndarray]) -> Repeat:
    """Check the meta field ``repeat`` against the stored tables and derive the extents.

    Parameters
    ----------
    name
        The file, for messages.
    rep
        The meta field.
    tabs
        The stored tables (already checked as a trace of one copy).

    Raises
    ------
    TraceFormatError
        A missing or unknown key, a value out of range, a body that does not start with
        a child of main or does not end in main, iteration numbers that would pass
        2^63 - 1, or tables that would expand past :data:`MAX_ROWS` rows or
        :data:`MAX_CHUNKS` chunks.
    """
    if not isinstance(rep, dict) or sorted(rep) != sorted(FIELDS):
        got = sorted(rep) if isinstance(rep, dict) else type(rep).__name__
        raise TraceFormatError(
            f"{name}: meta field 'repeat' must have exactly the keys {', '.join(FIELDS)} "
            f"(got {got})"
        )
    ns = int(tabs["strand_frame"].shape[0])
    st = rep["strands"]
    if (
        not isinstance(st, list)
        or len(st) != 2
        or any(type(v) is not int for v in st)
        or not 1 <= st[0] < st[1] <= ns
    ):
        raise TraceFormatError(
            f"{name}: meta field 'repeat': strands {st!r} is not [s0, s1] with "
            f"1 <= s0 < s1 <= {ns} (the strands of the repeated part)"
        )
    s0, s1 = st
    count = _int(name, rep, "count", 1, fmt.MAX_ITERATION)
    stride = _int(name, rep, "iteration_stride", 1, fmt.MAX_ITERATION)
    chunk = _int(name, rep, "chunk_refs", 1, MAX_CHUNK_REFS)
    sf, parent = tabs["strand_frame"], tabs["frame_parent"]
    first = tabs["frame_first_strand"]
    f0 = int(np.searchsorted(first, s0))
    f1 = int(np.searchsorted(first, s1))
    if f0 >= f1 or first[f0] != s0 or parent[f0] != 0 or sf[s1 - 1] != 0:
        raise TraceFormatError(
            f"{name}: meta field 'repeat': strands {s0}..{s1 - 1} are not a repeated part "
            "(one starts with the first strand of a child of main and ends in main)"
        )
    # Ids inside a copy move with it; what a copy names outside itself must be main (a
    # strand or parent frame) or main's strand right before the body (an edge's source).
    body_sf, body_parent = sf[s0:s1], parent[f0:f1]
    dst = tabs["edge_dst"]
    body_src = tabs["edge_src"][(dst >= s0) & (dst < s1)]
    if np.any((body_sf < f0) & (body_sf != 0)) or np.any((body_parent < f0) & (body_parent != 0)):
        raise TraceFormatError(
            f"{name}: meta field 'repeat': strands {s0}..{s1 - 1} belong to frames other "
            "than main's and their own (a repeated part is a whole subtree of main)"
        )
    if np.any(body_src < s0 - 1):
        raise TraceFormatError(
            f"{name}: meta field 'repeat': an edge into strands {s0}..{s1 - 1} comes from "
            f"before strand {s0 - 1} (a repeated part starts with main's children synced)"
        )
    it = tabs["frame_iteration"][f0:f1]
    last = int(it.max()) + (count - 1) * stride
    if last > fmt.MAX_ITERATION:
        raise TraceFormatError(
            f"{name}: meta field 'repeat': {count} copies with an iteration stride of "
            f"{stride} number iterations past 2^63 - 1"
        )
    rs = tabs["strand_ref_start"]
    spec = Repeat(s0, s1, f0, f1, int(rs[s0]), int(rs[s1]), count, stride, chunk)
    edges = int(np.count_nonzero((tabs["edge_dst"] >= s0) & (tabs["edge_dst"] < s1)))
    rows = (
        ns
        + parent.shape[0]
        + tabs["edge_dst"].shape[0]
        + (count - 1) * (spec.strands + spec.frames + edges)
    )
    chunks = -(-spec.n_refs(int(rs[-1])) // chunk)
    if rows > MAX_ROWS or chunks > MAX_CHUNKS:
        raise TraceFormatError(
            f"{name}: meta field 'repeat': {count} copies expand to {rows} table rows and "
            f"{chunks} chunks (this reader holds at most {MAX_ROWS} rows and {MAX_CHUNKS} "
            "chunks)"
        )
    return spec


def check_chunks(name: str, spec: Repeat, index: np.ndarray) -> None:
    """The stored chunks are the builder's: ``chunk_refs`` references each, but the last.

    The program is served in chunks of ``chunk_refs`` references; a file whose stored
    chunks are larger would have its few stored references served in many more program
    chunks than it stores (``chunk_refs`` 1 under chunks of thousands: every copy's
    reference a chunk of its own, assembled one by one).

    Raises
    ------
    TraceFormatError
        A stored chunk but the last does not hold exactly ``chunk_refs`` references, or
        the last holds more.
    """
    n = index["n"].astype(np.int64)
    bad = np.flatnonzero(n != spec.chunk_refs)
    if bad.shape[0] and (bad[0] < n.shape[0] - 1 or n[-1] > spec.chunk_refs):
        k = int(bad[0])
        raise TraceFormatError(
            f"{name}: meta field 'repeat': chunk_refs is {spec.chunk_refs}, but stored chunk "
            f"{k} holds {int(n[k])} references (every chunk but the last holds chunk_refs)"
        )


def _copies(x: np.ndarray, count: int, step: int) -> np.ndarray:
    """``x``, ``x + step``, ..., ``x + (count - 1) step``, concatenated."""
    return (x[None, :] + step * np.arange(count, dtype=np.int64)[:, None]).ravel()


def _mapper(lo: int, shift: int):
    """Ids of the part after the body: unchanged below ``lo``, else moved by ``shift``."""
    return lambda x: np.where(x >= lo, x + shift, x)


def expand(spec: Repeat, tabs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The whole program's tables from the stored ones (see the module docstring).

    The result has the names and types of :data:`~simsched.trace.format.TABLES`; edges are
    sorted by source, then destination, as the builder writes them.
    """
    c, L, F, B = spec.count, spec.strands, spec.frames, spec.refs
    s0, s1, f0, f1 = spec.s0, spec.s1, spec.f0, spec.f1
    smap = _mapper(s0, (c - 1) * L)
    fmap = _mapper(f0, (c - 1) * F)
    out: dict[str, np.ndarray] = {}

    def strands(name: str, body: np.ndarray, after: np.ndarray | None = None) -> np.ndarray:
        a = tabs[name]
        return np.concatenate([a[:s0], body, a[s1:] if after is None else after])

    sf = tabs["strand_frame"]
    body_sf = sf[s0:s1]
    in_body = body_sf >= f0
    out["strand_frame"] = strands(
        "strand_frame",
        np.where(np.tile(in_body, c), _copies(body_sf, c, F), np.tile(body_sf, c)),
        fmap(sf[s1:]),
    )
    rs = tabs["strand_ref_start"]
    out["strand_ref_start"] = np.concatenate(
        [rs[:s0], _copies(rs[s0:s1], c, B), rs[s1:] + (c - 1) * B]
    )
    for name in ("strand_instr", "strand_tail"):
        out[name] = strands(name, np.tile(tabs[name][s0:s1], c))

    def frames(name: str, body: np.ndarray, after: np.ndarray) -> np.ndarray:
        a = tabs[name]
        return np.concatenate([a[:f0], body, after])

    parent = tabs["frame_parent"]
    bp = parent[f0:f1]
    out["frame_parent"] = frames(
        "frame_parent",
        np.where(np.tile(bp >= f0, c), _copies(bp, c, F), np.tile(bp, c)),
        fmap(parent[f1:]),
    )
    for name in ("frame_spawn_index", "frame_branching", "frame_level", "frame_key_hash"):
        a = tabs[name]
        out[name] = frames(name, np.tile(a[f0:f1], c), a[f1:])
    it = tabs["frame_iteration"]
    bi = it[f0:f1]
    out["frame_iteration"] = frames(
        "frame_iteration",
        np.where(np.tile(bi >= 0, c), _copies(bi, c, spec.stride), np.tile(bi, c)),
        it[f1:],
    )
    for name in ("frame_first_strand", "frame_last_strand"):
        a = tabs[name]
        # main's last strand comes after the body
        out[name] = np.concatenate([smap(a[:f0]), _copies(a[f0:f1], c, L), smap(a[f1:])])
    src, dst, kind = tabs["edge_src"], tabs["edge_dst"], tabs["edge_kind"]
    body = (dst >= s0) & (dst < s1)
    pro = dst < s0
    after = dst >= s1
    e_src = np.concatenate([src[pro], _copies(src[body], c, L), smap(src[after])])
    e_dst = np.concatenate([dst[pro], _copies(dst[body], c, L), smap(dst[after])])
    e_kind = np.concatenate([kind[pro], np.tile(kind[body], c), kind[after]])
    order = np.lexsort((e_dst, e_src))
    out["edge_src"] = e_src[order]
    out["edge_dst"] = e_dst[order]
    out["edge_kind"] = e_kind[order]
    return out


def pieces(spec: Repeat, start: int, stop: int) -> list[tuple[int, int]]:
    """The stored references that make the program's references ``[start, stop)``.

    Returns
    -------
    list of (stored start, length)
        Consecutive stored ranges, in order; their lengths add up to ``stop - start``.
    """
    r0, B, c = spec.r0, spec.refs, spec.count
    end_body = r0 + c * B
    out: list[tuple[int, int]] = []
    x = start
    while x < stop:
        if x < r0:
            y = min(stop, r0)
            out.append((x, y - x))
        elif x < end_body:
            k, off = divmod(x - r0, B)
            y = min(stop, r0 + (k + 1) * B)
            out.append((r0 + off, y - x))
        else:
            y = stop
            out.append((x - (c - 1) * B, y - x))
        x = y
    return out
