"""Finding the iterations of an iterative program from its DAG, without markers.

An iterative program (a stencil's time loop, an iterative solver) is a serial loop in
``main`` that issues the same parallel phase again and again.  Written with simsched's
markers, ``SS_ITER(i)`` says where each iteration starts; written the way Cilk programmers
write it (a plain ``for`` loop calling or spawning the step), nothing does.  This module
finds them from the frame tree and the references:

* a **phase** is a group of main's children that run together: the children one sync
  waits for, with the Cilk functions main calls while they are outstanding (a
  ``cilk_for`` in main calls its body in main's own frame for its last leaf), or one
  Cilk function main calls while none is (main waits for it at once);
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

:func:`with_iterations` applies a mode (``auto``, ``markers``, ``none``; the
``--iterations`` option of ``run`` and ``compare``) to an open trace in memory: the frame
table is relabelled by :func:`relabel` -- the same function the builder uses when it marks
found iterations -- so a replay sees exactly the tables an import with that mode writes.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import MutableSequence, Sequence
from typing import Any

import numpy as np

from simsched.errors import ConfigError, shown, spelled
from simsched.trace import format as fmt
from simsched.trace.reader import Trace

#: the values of ``--iterations`` (capture, import, run, compare)
ITERATION_MODES = ("auto", "markers", "none")

MAX_PERIOD = 8
"""The longest block of phases (one iteration) looked for."""

OVERLAP = 0.9
"""How much two phases' address ranges must overlap (share of their union) to match."""


def _phases(
    parent: np.ndarray, first: np.ndarray, last: np.ndarray, edge_src: np.ndarray,
    edge_dst: np.ndarray, edge_kind: np.ndarray, root: int = 0,
) -> list[list[int]]:  # fmt: skip
    """Main's children (or frame ``root``'s) grouped into phases (in spawn order).

    A child starts a new phase unless main spawned or called it while a child of the
    current phase was outstanding, i.e. from a strand of main before the one that
    phase's children join.  So the children one sync waits for are one phase, and so
    are the Cilk functions main calls while they run: the part of a ``cilk_for`` that
    runs in main's own frame (its last leaf) calls its body there, and each such call
    would otherwise be a phase of its own -- a loop of 8 calls looked like 8 repeated
    steps.  A Cilk function called while nothing is outstanding is a phase of its own
    (it joins main's very next strand).
    """
    kids = np.flatnonzero(parent == root)
    if kids.shape[0] == 0:
        return []
    join = edge_kind == fmt.EDGE_JOIN
    spawn = edge_kind == fmt.EDGE_SPAWN
    # a frame is joined exactly once, by the edge from its last strand, and begun by
    # exactly one spawn edge into its first strand
    size = int(max(last.max(), first.max())) + 2
    by_last = np.full(size, -1, np.int64)
    by_last[edge_src[join]] = edge_dst[join]
    by_first = np.full(size, -1, np.int64)
    by_first[edge_dst[spawn]] = edge_src[spawn]
    into = by_last[last[kids]].tolist()
    start = by_first[first[kids]].tolist()
    groups: list[list[int]] = []
    end = -1  # the latest strand of main the current phase's children join
    for f, s, j in zip(kids.tolist(), start, into, strict=True):
        if groups and s < end:
            groups[-1].append(f)
            end = max(end, j)
        else:
            groups.append([f])
            end = j
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
    root: int = 0,
) -> list[int]:
    """Return the frames of main's children that start each iteration (empty: none found).

    With ``root``, the same search among the children of frame ``root`` instead of
    main's: the phases of a time loop written in a Cilk function main calls
    (:func:`called_function`).

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
    root
        The frame whose children are searched (0: main).

    Returns
    -------
    list[int]
        Frame ids, increasing; iteration ``t`` is the frames from the ``t``-th of them up to
        the next one (the last iteration runs to the end of the trace, or of ``root``'s
        subtree).
    """
    par = np.asarray(parent, np.int64)
    lvl = np.asarray(level, np.int64)
    fst = np.asarray(first, np.int64)
    lst = np.asarray(last, np.int64)
    rs = np.asarray(ref_start, np.int64)
    groups = _phases(
        par, fst, lst, np.asarray(edge_src), np.asarray(edge_dst), np.asarray(edge_kind), root
    )
    if len(groups) < 2:
        return []
    # frames are numbered depth first: root's subtree runs up to the next frame no deeper
    nf = par.shape[0]
    after = np.flatnonzero(lvl[root + 1 :] <= lvl[root])
    end = root + 1 + int(after[0]) if after.shape[0] else nf
    starts = [g[0] for g in groups] + [end]
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


def relabel(
    parent: Sequence[int],
    spawn_index: MutableSequence[int],
    branching: MutableSequence[int],
    iteration: MutableSequence[int],
    starts: Sequence[int],
) -> None:
    """Renumber main's children as if ``SS_ITER`` marks stood before each of ``starts``.

    Iteration ``t`` is the frames from main's child ``starts[t]`` up to the next start
    (frames are numbered depth first, so a child's subtree is contiguous); the children
    before the first start, or all of them when ``starts`` is empty, carry no iteration.
    In each group main's children are numbered from 0 (their spawn index, so the first
    element of their whole subtree's position keys) and their branching is the group's size -- what the
    builder writes for marks made while the program ran, whatever marks the tables held
    before (so an empty ``starts`` removes them).  The arguments are modified in place.
    """
    nf = len(parent)
    kids = [f for f in range(1, nf) if parent[f] == 0]
    group = np.searchsorted(np.asarray(starts, np.int64), np.asarray(kids, np.int64), "right") - 1
    sizes = np.bincount(group + 1, minlength=len(starts) + 1)
    ends = [*kids[1:], nf]
    pos = -1
    for k, (f, end) in enumerate(zip(kids, ends, strict=True)):
        t = int(group[k])
        pos = 0 if k == 0 or t != int(group[k - 1]) else pos + 1
        spawn_index[f] = pos
        branching[f] = int(sizes[t + 1])
        for g in range(f, end):
            iteration[g] = t


def called_function(
    parent: Sequence[int] | np.ndarray,
    first: Sequence[int] | np.ndarray,
    last: Sequence[int] | np.ndarray,
    edge_src: Sequence[int] | np.ndarray,
    edge_dst: Sequence[int] | np.ndarray,
    edge_kind: Sequence[int] | np.ndarray,
) -> int:
    """The frame of the Cilk function main calls that may hold a time loop, else -1.

    That is a phase of main that is one called frame (main waits for it at once) with
    children of its own -- ``solve()`` -- and, when main has several such phases (a
    parallel ``init`` then ``solve()`` is one such phase beside a ``cilk_for``), the one
    whose subtree has the most frames.

    Parameters
    ----------
    parent, first, last
        The frame table's parent, first and last strand, main being frame 0.
    edge_src, edge_dst, edge_kind
        The edges (any order).
    """
    par = np.asarray(parent, np.int64)
    lst = np.asarray(last, np.int64)
    src, dst, kind = np.asarray(edge_src), np.asarray(edge_dst), np.asarray(edge_kind)
    groups = _phases(par, np.asarray(first, np.int64), lst, src, dst, kind)
    return _called_function(par, lst, src, dst, kind, groups)


def _called_function(
    par: np.ndarray, lst: np.ndarray, src: np.ndarray, dst: np.ndarray, kind: np.ndarray,
    groups: list[list[int]],
) -> int:  # fmt: skip
    """:func:`called_function` given main's phases (:func:`_phases`).

    Linear in the frames and edges: main may have thousands of phases, so the children
    and the joins are counted once rather than searched for per phase.
    """
    if not groups:
        return -1
    kids = [g[0] for g in groups] + [par.shape[0]]  # frames are numbered depth first
    children = np.bincount(par[1:], minlength=par.shape[0]) if par.shape[0] > 1 else par[:0]
    join = kind == fmt.EDGE_JOIN
    # a frame is joined exactly once, by the edge from its last strand
    by_last = np.full(int(max(lst.max(), src.max(initial=0))) + 2, -1, np.int64)
    by_last[src[join]] = dst[join]
    best, most = -1, 0
    for k, g in enumerate(groups):
        f = g[0]
        if len(g) != 1 or not children[f]:
            continue
        # a called frame's return is joined at once, by main's very next strand
        if int(by_last[lst[f]]) != int(lst[f]) + 1:
            continue
        if kids[k + 1] - f > most:
            best, most = f, kids[k + 1] - f
    return best


def no_iterations_reason(t: Trace, refused: str | None = None) -> str:
    """Say why no iterations are found in ``t`` from its DAG (:func:`find_iterations`).

    Parameters
    ----------
    t
        An open trace.
    refused
        Why the import could not mark the iterations it found inside a Cilk function main
        calls (the builder's refusal), if it could not.

    Returns
    -------
    str
        One clause: how many phases main has and, when one of them is a Cilk function
        main calls (:func:`called_function`), whether that function's children repeat.
        A time loop inside such a function is marked only when the raw stream is imported
        (the marks change the frame table), so when its steps repeat in an imported trace the clause says to
        re-import the raw stream or recapture with ``--iterations auto``, or to mark them;
        with ``refused``, it gives the refusal.  That case reads every reference once.
    """
    fr, e = t.frames, t.edges
    par = np.asarray(fr.parent, np.int64)
    fst = np.asarray(fr.first_strand, np.int64)
    lst = np.asarray(fr.last_strand, np.int64)
    src, dst, kind = np.asarray(e.src), np.asarray(e.dst), np.asarray(e.kind)
    groups = _phases(par, fst, lst, src, dst, kind)
    if not groups:
        return "main spawns and calls nothing"
    f = _called_function(par, lst, src, dst, kind, groups)
    if f < 0 and len(groups) > 1:
        return (
            f"main's {len(groups)} phases hold no block of up to {MAX_PERIOD} phases "
            "repeated at least twice with a parallel phase in it"
        )
    if f < 0:
        kids = groups[0]
        return f"main has one phase ({len(kids)} child frame(s) joined together): nothing repeats"
    inner = int(np.count_nonzero(par == f))
    what = (
        f"main has one phase, one Cilk function it calls (with {inner} children of its own)"
        if len(groups) == 1
        else f"main's {len(groups)} phases hold no repeated block, and the Cilk function it "
        f"calls in one of them has {inner} children of its own"
    )
    if refused is not None:
        return (
            f"{what}, whose steps repeat, but marking them there was refused: {refused}; "
            "mark its steps with SS_ITER there, or write the time loop in main"
        )
    lo, hi = strand_ranges(t)
    steps = find_iterations(
        par, fr.level, fst, lst, src, dst, kind, t.strands.ref_start, lo, hi, root=f
    )
    if not steps:
        return (
            f"{what}, whose phases hold no block of up to {MAX_PERIOD} phases repeated at "
            "least twice with a parallel phase in it either"
        )
    return (
        f"{what}, whose {len(steps)} repeated steps are iterations only when the raw stream "
        "is imported (their marks change the frame table): re-import it with `simsched "
        "trace import --iterations auto`, or recapture with `simsched capture --iterations "
        "auto`, or mark its steps with SS_ITER there (or write the time loop in main)"
    )


def strand_ranges(t: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Every strand's lowest and highest referenced byte (``lo > hi``: no references)."""
    ns = t.header.n_strands
    lo = np.full(ns, np.iinfo(np.int64).max, np.int64)
    hi = np.full(ns, -1, np.int64)
    rs = np.asarray(t.strands.ref_start, np.int64)
    for c in t.iter_chunks():
        n = len(c)
        if n == 0:
            continue
        s0 = int(np.searchsorted(rs, c.start, "right")) - 1
        s1 = int(np.searchsorted(rs, c.start + n - 1, "right")) - 1
        cuts = np.clip(rs[s0 : s1 + 1] - c.start, 0, None)
        a = c.addr.astype(np.int64)
        e = a + c.size.astype(np.int64) - 1
        # a strand without references has an empty segment: reduceat gives it a stray value
        empty = rs[s0 + 1 : s1 + 2] - np.maximum(rs[s0 : s1 + 1], c.start) <= 0
        seg_lo = np.where(empty, lo[s0 : s1 + 1], np.minimum.reduceat(a, cuts))
        seg_hi = np.where(empty, hi[s0 : s1 + 1], np.maximum.reduceat(e, cuts))
        lo[s0 : s1 + 1] = np.minimum(lo[s0 : s1 + 1], seg_lo)
        hi[s0 : s1 + 1] = np.maximum(hi[s0 : s1 + 1], seg_hi)
    return lo, hi


def check_iterations_mode(mode: Any) -> str:
    """``mode`` if it is one of :data:`ITERATION_MODES`, else a one-line
    :class:`ConfigError` naming ``iterations`` as its caller gave it (the keyword from
    Python, ``--iterations`` on the command line: :func:`simsched.errors.spelled`).

    Parameters
    ----------
    mode
        The value given for ``iterations``.

    Returns
    -------
    str
        ``mode``.
    """
    if not isinstance(mode, str) or mode not in ITERATION_MODES:
        # not a text: "in" compared a table or an array element by element
        modes = ", ".join(ITERATION_MODES)
        raise ConfigError(
            spelled(
                f"iterations={shown(mode)}: choose one of {modes}",
                f"unknown --iterations {shown(mode)}; choose one of {modes}",
            )
        )
    return mode


def with_iterations(t: Trace, mode: str | None) -> Trace:
    """``t`` with its iterations as ``mode`` says (a view sharing ``t``'s file, or ``t``).

    Parameters
    ----------
    t
        An open trace.
    mode
        ``None``: as the trace has them.  ``"none"``: no iterations.  ``"markers"``: only
        marked ones (iterations the importer found without markers are removed).
        ``"auto"``: the trace's iterations, or if it has none the ones found from its DAG
        (:func:`find_iterations`; this reads every reference once).

    Returns
    -------
    Trace
        ``t`` itself when nothing changes, else a shallow copy with a relabelled frame
        table (closing either closes the file).
    """
    if not isinstance(t, Trace):
        # a path failed at its first attribute ('str' object has no attribute 'frames')
        raise ConfigError(f"t={shown(t)}: expected an open Trace (simsched.trace.open_trace)")
    if mode is None:
        return t
    check_iterations_mode(mode)
    fr = t.frames
    has = bool((np.asarray(fr.iteration) >= 0).any())
    found = "iterations_found" in t.header.params
    starts: list[int] = []
    if mode == "auto":
        if has:
            return t
        lo, hi = strand_ranges(t)
        starts = find_iterations(
            fr.parent, fr.level, fr.first_strand, fr.last_strand,
            t.edges.src, t.edges.dst, t.edges.kind, t.strands.ref_start, lo, hi,
        )  # fmt: skip
        if not starts:
            return t
    elif not has or (mode == "markers" and not found):
        return t
    params = {k: v for k, v in t.header.params.items() if k != "iterations_found"}
    if starts:
        params["iterations_found"] = len(starts)
    return _relabelled(t, starts, params)


def _relabelled(t: Trace, starts: list[int], params: dict) -> Trace:
    fr = t.frames
    spawn_index = np.asarray(fr.spawn_index, np.int64).tolist()
    branching = np.asarray(fr.branching, np.int64).tolist()
    iteration = np.asarray(fr.iteration, np.int64).tolist()
    relabel(np.asarray(fr.parent).tolist(), spawn_index, branching, iteration, starts)
    new = copy.copy(t)
    new.header = dataclasses.replace(t.header, params=params)
    new.frames = dataclasses.replace(
        fr,
        spawn_index=np.asarray(spawn_index, np.int64),
        branching=np.asarray(branching, np.int64),
        iteration=np.asarray(iteration, np.int64),
        key_hash=fmt.key_hashes(fr.parent, np.asarray(spawn_index, np.int64)),
    )
    return new
