"""Finding the iterations of an iterative program from its DAG, without markers.

An iterative program (a stencil's time loop, an iterative solver) is a serial loop in
``main`` that issues the same parallel phase again and again.  Written with simsched's
markers, ``SS_ITER(i)`` says where each iteration starts; written the way Cilk programmers
write it (a plain ``for`` loop calling or spawning the step), nothing does.  This module
finds them from the frame tree and the references:

* a **phase** is a group of main's children that main joins together: the children one
  sync waits for, or one called Cilk function (which main waits for at once);
* its **signature** is its shape and its data: the number of children, frames, strands
  and references in the phase, its deepest level, and the lowest and highest address it
  references; two phases match when the counts are equal and the address ranges overlap
  by at least :data:`OVERLAP` of their union;
* the iterations are the longest run of consecutive repetitions of a block of ``p``
  phases (``p`` ≤ :data:`MAX_PERIOD`; at least two repetitions, and the block holds at
  least one parallel phase, i.e. more than one frame).  Each repetition is an iteration,
  starting at its first phase.

A ping-pong stencil that swaps its two grids every step reads all of one and writes the
interior of the other, so the address ranges of consecutive steps differ by a boundary
row at either end and overlap almost entirely: the steps match.  A step whose work depends on the data (an adaptive refinement, a convergence test
inside the step) changes its reference count and is not taken for a repetition; mark such
programs with ``SS_ITER``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simsched.trace import format as fmt

MAX_PERIOD = 8
"""The longest block of phases (one iteration) looked for."""

OVERLAP = 0.9
"""How much two phases' address ranges must overlap (share of their union) to match."""


def _phases(
    parent: np.ndarray, last: np.ndarray, edge_src: np.ndarray, edge_dst: np.ndarray,
    edge_kind: np.ndarray,
) -> list[list[int]]:  # fmt: skip
    """Main's children grouped by the strand of main they join (in spawn order)."""
    kids = np.flatnonzero(parent == 0)
    if kids.shape[0] == 0:
        return []
    join = edge_kind == fmt.EDGE_JOIN
    into = np.full(parent.shape[0], -1, np.int64)
    # a frame is joined exactly once, by the edge from its last strand
    src, dst = edge_src[join], edge_dst[join]
    by_last = np.full(int(last.max()) + 2, -1, np.int64)
    by_last[src] = dst
    into[kids] = by_last[last[kids]]
    groups: list[list[int]] = []
    for f in kids.tolist():
        if groups and into[groups[-1][-1]] == into[f]:
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups


def _alike(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Same shape and work, and address ranges that overlap by at least :data:`OVERLAP`."""
    if a[:-2] != b[:-2]:
        return False
    inter = min(a[-1], b[-1]) - max(a[-2], b[-2]) + 1
    union = max(a[-1], b[-1]) - min(a[-2], b[-2]) + 1
    return inter >= OVERLAP * union


def find_iterations(
    parent: Sequence[int] | np.ndarray,
    level: Sequence[int] | np.ndarray,
    first: Sequence[int] | np.ndarray,
    last: Sequence[int] | np.ndarray,
    edge_src: Sequence[int] | np.ndarray,
    edge_dst: Sequence[int] | np.ndarray,
    edge_kind: Sequence[int] | np.ndarray,
    ref_start: Sequence[int] | np.ndarray,
    strand_lo: np.ndarray,
    strand_hi: np.ndarray,
) -> list[int]:
    """Return the frames of main's children that start each iteration (empty: none found).

    Parameters
    ----------
    parent, level, first, last
        The frame table (parent, level, first and last strand), main being frame 0.
    edge_src, edge_dst, edge_kind
        The edges (any order).
    ref_start
        Every strand's first reference, and one past the last at the end.
    strand_lo, strand_hi
        Every strand's lowest and highest referenced address (``lo > hi`` for a strand
        without references).

    Returns
    -------
    list[int]
        Frame ids, increasing; iteration ``t`` is the frames from the ``t``-th of them up to
        the next one (the last iteration runs to the end of the trace).
    """
    par = np.asarray(parent, np.int64)
    lvl = np.asarray(level, np.int64)
    fst = np.asarray(first, np.int64)
    lst = np.asarray(last, np.int64)
    rs = np.asarray(ref_start, np.int64)
    groups = _phases(par, lst, np.asarray(edge_src), np.asarray(edge_dst), np.asarray(edge_kind))
    if len(groups) < 2:
        return []
    nf = par.shape[0]
    starts = [g[0] for g in groups] + [nf]
    sigs: list[tuple[int, ...]] = []
    parallel: list[bool] = []
    for k, g in enumerate(groups):
        f0, f1 = starts[k], starts[k + 1]  # the phase's frames: its children's subtrees
        s0, s1 = int(fst[g[0]]), int(lst[g[-1]]) + 1
        lo = strand_lo[s0:s1]
        hi = strand_hi[s0:s1]
        used = lo <= hi
        span = (int(lo[used].min()), int(hi[used].max())) if used.any() else (0, 0)
        sigs.append((len(g), f1 - f0, s1 - s0, int(rs[s1] - rs[s0]), int(lvl[f0:f1].max()), *span))
        parallel.append(f1 - f0 > 1)
    best = (0, 0, 0, 0)  # (coverage, -period, -start, repetitions)
    n = len(sigs)
    for p in range(1, min(MAX_PERIOD, n // 2) + 1):
        eq = [_alike(sigs[i], sigs[i + p]) for i in range(n - p)]
        i = 0
        while i < len(eq):
            if not eq[i]:
                i += 1
                continue
            j = i
            while j < len(eq) and eq[j]:
                j += 1
            # phases i .. j + p - 1 repeat with period p
            reps = (j - i + p) // p
            if reps >= 2 and any(parallel[i : i + p]):
                cand = (reps * p, -p, -i, reps)
                if cand > best:
                    best = cand
            i = j
    if best[0] == 0:
        return []
    p, s, reps = -best[1], -best[2], best[3]
    return [groups[s + t * p][0] for t in range(reps)]
