"""Whole-trace checks and summaries: structural validation, work, span, footprint, DAG shape.

:func:`validate` is what ``simsched trace validate`` runs: on top of what opening a trace
checks (the layout and the whole DAG structure, :mod:`simsched.trace.structure`), it
re-reads every byte (content digest), decodes every chunk (each reference passes the
reference rule of :func:`simsched.trace.format.check_refs`), checks every strand's
instruction count against its references, gaps and tail, and recomputes the position-key
hashes.  :func:`summary` is
``simsched trace info``.

The footprint (:class:`_LineSet`) flags the lines a trace touches in dense blocks of
``2**20`` lines instead of sorting them: sorting every chunk and merging it into the sorted
set of lines seen so far took minutes on a published-size 3-D stencil, whose stored part
alone is 1.7 G references, while one flag store per reference is a NumPy scatter.

:func:`dag_shape` describes the task tree from the frame table alone (no reference is
read): levels, iterations and the branching degree -- the number of children a frame
spawns between iteration marks, the *b* the trace stores on every child (LAWS Eq. 1) and
the *B* of CAB Eq. 4.  A frame's children form one *spawning group* per iteration (main's
children in iteration i, or all children of any other frame); the group's first child is
the one whose spawn index is 0, so every statistic is a NumPy reduction over those
children, cheap even for millions of frames.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from simsched.errors import TraceFormatError, shown
from simsched.params import check_callable, check_line_size
from simsched.trace import _kernels, structure
from simsched.trace.format import key_hashes
from simsched.trace.reader import Trace, opened_trace


def span(t: Trace) -> int:
    """Critical-path length in instructions (the DAG's span, T∞)."""
    return int(_kernels._span(t.header.n_strands, t.strands.instr, t.edges.src, t.edges.dst))


def _add_strand_gaps(out: np.ndarray, rs: np.ndarray, start: int, gap: np.ndarray) -> None:
    """Add the gaps of references ``start, start+1, ...`` to their strands' totals in ``out``."""
    end = start + gap.shape[0]
    lo = int(np.searchsorted(rs, start, side="right")) - 1
    hi = int(np.searchsorted(rs, end, side="left"))
    cg = np.concatenate([[0], np.cumsum(gap, dtype=np.int64)])
    cut = np.clip(rs[lo : hi + 1], start, end) - start
    out[lo:hi] += cg[cut[1:]] - cg[cut[:-1]]


def _strand_gaps(t: Trace, gaps: np.ndarray) -> int:
    """Add every strand's gaps into ``gaps``; return the references decoded (each chunk
    passes the reference rule as it is decoded).

    A repeated part's first copy is read and its strands' sums given to the other copies,
    whose references are the same stored ones: every stored reference is still decoded.
    """
    rs = t.strands.ref_start
    rep = t.repeat
    if rep is None:
        total = 0
        for c in t.iter_chunks():
            total += len(c)
            _add_strand_gaps(gaps, rs, c.start, c.gap)
        return total
    after = rep.r0 + rep.count * rep.refs  # the first reference after the last copy
    total = (rep.count - 1) * rep.refs
    step = int(t.index["n"].max()) if len(t.index) else 1
    for lo, hi in ((0, rep.r1), (after, t.header.n_refs)):
        for a in range(lo, hi, step):
            c = t.refs(a, min(hi, a + step))
            total += len(c)
            _add_strand_gaps(gaps, rs, c.start, c.gap)
    body = gaps[rep.s0 : rep.s1]
    gaps[rep.s1 : rep.s0 + rep.count * rep.strands] = np.tile(body, rep.count - 1)
    return total


def validate(trace: Trace | str | os.PathLike) -> dict[str, Any]:
    """Fully validate a trace: digest, every chunk, DAG structure, counts.

    Returns
    -------
    dict
        ``{"ok": True, "refs": ..., "chunks": ..., "strands": ..., "digest": ...}``.

    Raises
    ------
    TraceFormatError
        On the first problem found, naming the file and where.
    """
    with opened_trace(trace) as t:  # opening checks the structure (simsched.trace.structure)
        digest = t.read_all_bytes_digest()
        if digest != t.header.digest:
            raise TraceFormatError(
                f"{t.path}: content digest mismatch (file changed after it was written)"
            )
        rs = t.strands.ref_start
        gaps = np.zeros(len(t.strands), np.int64)
        total = _strand_gaps(t, gaps)
        if total != t.header.n_refs:
            raise TraceFormatError(
                f"{t.path}: decoded {total} references, header says {t.header.n_refs}"
            )
        instr = np.diff(rs) + gaps + t.strands.tail
        bad = np.flatnonzero(instr != t.strands.instr)
        if bad.shape[0]:
            s = int(bad[0])
            raise TraceFormatError(
                f"{t.path}: strand {s}: references, gaps and tail give {int(instr[s])} "
                f"instructions, its table says {int(t.strands.instr[s])}"
            )
        fr = t.frames
        bad = np.flatnonzero(key_hashes(fr.parent, fr.spawn_index) != fr.key_hash)
        if bad.shape[0]:
            raise TraceFormatError(f"{t.path}: frame {int(bad[0])}: position key hash mismatch")
        return {
            "ok": True,
            "file": str(t.path),
            "strands": t.header.n_strands,
            "frames": t.header.n_frames,
            "edges": t.header.n_edges,
            "refs": total,
            "chunks": t.header.n_chunks,
            "digest": t.header.digest,
        }


class _LineSet:
    """The distinct line numbers of a stream of arrays, counted in one pass.

    A line is flagged in the dense block of ``2**BLOCK_SHIFT`` lines that holds it (one
    byte a line: 1 MiB a block, 64 MiB of addresses at 64-byte lines), so an array whose
    lines share a block costs one scatter, and one spread over several blocks one sort.
    A trace scattered over more than ``MAX_BLOCKS`` blocks keeps the lines of the blocks
    beyond them as sorted arrays, merged when they outgrow what was merged before (so
    each line is sorted a logarithmic number of times, not once per array).
    """

    BLOCK_SHIFT = 20
    MAX_BLOCKS = 256

    def __init__(self) -> None:
        self.blocks: dict[int, np.ndarray] = {}
        self.merged = np.zeros(0, np.uint64)
        self.pending: list[np.ndarray] = []
        self.n_pending = 0

    def add(self, lines: np.ndarray) -> None:
        """Count the line numbers ``lines`` (uint64, any order, repeats allowed)."""
        if not len(lines):
            return
        keys = lines >> np.uint64(self.BLOCK_SHIFT)
        first = int(keys[0])
        if (keys == first).all():
            self._flag(first, lines, unique=False)
            return
        u = np.unique(lines)
        cuts = np.flatnonzero(np.diff(u >> np.uint64(self.BLOCK_SHIFT))) + 1
        for part in np.split(u, cuts):
            self._flag(int(part[0] >> np.uint64(self.BLOCK_SHIFT)), part, unique=True)

    def _flag(self, key: int, lines: np.ndarray, unique: bool) -> None:
        flags = self.blocks.get(key)
        if flags is None:
            if len(self.blocks) >= self.MAX_BLOCKS:
                # a part of add's sorted lines is sorted and unique already
                self._keep(lines if unique else np.unique(lines))
                return
            flags = self.blocks[key] = np.zeros(1 << self.BLOCK_SHIFT, np.bool_)
        flags[lines & np.uint64((1 << self.BLOCK_SHIFT) - 1)] = True

    def _keep(self, sorted_unique: np.ndarray) -> None:
        self.pending.append(sorted_unique)
        self.n_pending += len(sorted_unique)
        if self.n_pending > max(len(self.merged), 1 << 20):
            self.merged = np.unique(np.concatenate([self.merged, *self.pending]))
            self.pending, self.n_pending = [], 0

    def count(self) -> int:
        """How many distinct lines were added."""
        flagged = sum(int(np.count_nonzero(f)) for f in self.blocks.values())
        # A block is made only while there are fewer than MAX_BLOCKS, and then every later
        # line of it is flagged, so no kept line is also flagged.
        return flagged + len(np.unique(np.concatenate([self.merged, *self.pending])))


def _scan(
    t: Trace, line: int, progress: Callable[[int, int | None], None] | None = None
) -> tuple[int, int]:
    """One pass over the references: (distinct lines of ``line`` bytes, writes).

    A straddling reference counts both lines.  ``progress(references_done, references)``
    is called after each chunk.  A repeated part is read once: its copies touch the same
    lines, and its writes count once per copy.
    """
    shift = np.uint64(int(line).bit_length() - 1)
    seen = _LineSet()
    writes = 0
    done = 0
    rep = t.repeat
    stored = t.header.repeat
    total = t.header.n_refs if stored is None else stored["stored_refs"]
    for c in t.iter_chunks() if rep is None else t.stored_chunks():
        if rep is not None:
            lo_b, hi_b = (min(max(x - c.start, 0), len(c)) for x in (rep.r0, rep.r1))
            writes += (rep.count - 1) * int(np.count_nonzero(c.write[lo_b:hi_b]))
        lo = c.addr >> shift
        hi = (c.addr + c.size.astype(np.uint64) - np.uint64(1)) >> shift
        seen.add(lo)
        seen.add(hi[hi != lo])
        writes += int(np.count_nonzero(c.write))
        done += len(c.addr)
        if progress is not None:
            progress(done, int(total))
    return seen.count(), writes


def _stats(x: np.ndarray) -> dict[str, Any]:
    if not len(x):
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": int(x.min()), "mean": float(x.mean()), "max": int(x.max())}


def dag_shape(t: Trace) -> dict[str, Any]:
    """The task tree's shape: levels, branching degrees, iterations (frame table only).

    Parameters
    ----------
    t
        An open trace.

    Returns
    -------
    dict
        ``levels`` (number of frame levels, main's level 0 included); ``leaf_frames``
        (frames that spawn nothing); ``branching``: ``min``, ``mean``, ``max`` and
        ``histogram`` (``[[degree, groups], ...]``, ascending degree) of the degree of every
        spawning group (a frame's children between iteration marks, see the module
        docstring); ``branching_by_level``: for each level that spawns, ``level``,
        ``groups``, ``min``, ``mean``, ``max`` of the degrees of the groups whose parent is
        at that level; ``iterations`` (distinct iteration marks seen by frames) and
        ``frames_per_iteration`` (``min``, ``mean``, ``max`` over those iterations; an
        iterative program whose DAG changes per step, like GE, shows it here).
    """
    fr = t.frames
    nf = len(fr)
    first = np.flatnonzero(fr.spawn_index[1:] == 0) + 1  # first child of each group
    deg = np.asarray(fr.branching[first], np.int64)
    plevel = np.asarray(fr.level[fr.parent[first]], np.int64)
    values, counts = np.unique(deg, return_counts=True)
    by_level = []
    if len(deg):
        n = np.bincount(plevel)
        total = np.bincount(plevel, weights=deg)
        lo = np.full(len(n), np.iinfo(np.int64).max)
        hi = np.zeros(len(n), np.int64)
        np.minimum.at(lo, plevel, deg)
        np.maximum.at(hi, plevel, deg)
        for lvl in np.flatnonzero(n):
            by_level.append(
                {
                    "level": int(lvl),
                    "groups": int(n[lvl]),
                    "min": int(lo[lvl]),
                    "mean": float(total[lvl] / n[lvl]),
                    "max": int(hi[lvl]),
                }
            )
    it = np.asarray(fr.iteration)
    marked = it[it >= 0]
    per_iter = np.unique(marked, return_counts=True)[1]
    has_child = structure.has_children(fr.parent)
    return {
        "levels": int(fr.level.max()) + 1 if nf else 0,
        "leaf_frames": int(nf - np.count_nonzero(has_child)),
        "branching": {
            **_stats(deg),
            "histogram": [[int(v), int(c)] for v, c in zip(values, counts, strict=True)],
        },
        "branching_by_level": by_level,
        "iterations": int(len(per_iter)),
        "frames_per_iteration": _stats(per_iter),
    }


def summary(
    trace: Trace | str | os.PathLike,
    *,
    line: int | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> dict[str, Any]:
    """What ``simsched trace info`` prints: counts, footprint, work, span, parallelism, shape.

    The keys of :func:`dag_shape` are included; ``footprint_bytes`` is the footprint in
    distinct lines times the line size.  The footprint reads every reference (the long
    part); ``progress(references_done, references)`` reports it.
    """
    if line is not None:
        line = check_line_size(line, f"line={shown(line)}")
    check_callable(progress, "progress")
    with opened_trace(trace) as t:
        h = t.header
        ln = line or h.line_size_hint
        work = int(h.n_instructions)
        sp = span(t)
        lines, writes = _scan(t, ln, progress)
        shape = dag_shape(t)
        return {
            "file": str(t.path),
            "program": h.program,
            "args": list(h.args),
            "backend": h.backend,
            "gaps_exact": h.gaps_exact,
            **({"stack": [f"{h.stack[0]:#x}", f"{h.stack[1]:#x}"]} if h.stack else {}),
            "params": h.params,
            "strands": h.n_strands,
            "frames": h.n_frames,
            "edges": h.n_edges,
            "refs": h.n_refs,
            "writes": writes,
            "instructions": h.n_instructions,
            "footprint_lines": lines,
            "line_size": ln,
            "footprint_bytes": lines * ln,
            "max_level": int(t.frames.level.max()) if len(t.frames) else 0,
            **shape,
            "work": work,
            "span": sp,
            "parallelism": work / sp if sp else 0.0,
            "chunks": h.n_chunks,
            # what the file stores of a repeated part, and how often it runs
            **({"repeat": h.repeat} if h.repeat else {}),
            "file_bytes": t.path.stat().st_size,
            "bytes_per_ref": t.path.stat().st_size / h.n_refs if h.n_refs else 0.0,
            "digest": h.digest,
        }
