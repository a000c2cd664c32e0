"""Iterative stencils: heat, SOR, 9P (2-D) and 6P, 25P (3-D), regular or ``-ir`` ([CAB11] §II, [LAWS15] §6.1).

The modelled programs are ``traces/programs/stencil2d.c`` and ``stencil3d.c`` (serial
elision)::

    main:   A = malloc(cells*8); B = malloc(cells*8)              # SOR: A only (in place)
            every cell of A and B = initial value                 # optional (init=true)
            for it < iters:                                       # b.iteration(it)
                for each sweep (SOR: red, then black; others: one):
                    spawn pfor(0, interior); sync
                swap(A, B)                                        # not SOR
    pfor(lo, hi):                                                 # interior rows [lo, hi)
            if hi - lo <= cutoff: update rows lo..hi-1 (old -> new)
            regular: m = lo + (hi - lo)/2; spawn pfor(lo, m); spawn pfor(m, hi); sync
            irregular (ss_pfor_ir): k = 2 + (lo / cutoff) % 3 children (at most hi - lo),
                child j gets rows [lo + n j / k, lo + n (j + 1) / k) (n = hi - lo);
                spawn each; sync
            irregular, uneven=true (no C program): child j gets n (j + 1)/(k(k + 1)/2) rows

An irregular node's branching degree depends on where it is, the regular one's does not:
that is what makes a DAG irregular in [LAWS15] §6.1.  It still divides its rows evenly among
its children, the assumption LAWS' allocator rests on ([LAWS15] §3.2, Eq. 1).  ``uneven``
breaks that assumption on purpose (children's shares grow as 1, 2, ..., k), a stress case
for Eq. 1 that the paper does not run.

The grid is ``nx x ny`` (2-D) or ``nx x ny x nz`` (3-D) doubles *including* a boundary of
``radius`` cells on every side (1 for heat, SOR, 9P and 6P; 4 for 25P), read but never
written; a "row" is a row of the 2-D grid or a plane of the 3-D one, and the parallel loop
splits the ``nx - 2 radius`` interior rows.  Main (level 0) spawns each sweep's root task
(level 1) and the root splits down to the cut-off, so with heat, ``nx = ny = 10`` and
``cutoff = 2`` every iteration is [CAB11] Fig. 1: T1 at level 1, T2-T3 at level 2, the
leaves T4-T7 at level 3, and only the leaves touch data.  The frames, levels, branching
degrees and iteration marks are those of the captured C programs (tests compare them with
``traces/samples``).

One :class:`Kind` table per program says which loads a point makes, in the order ``gcc
-O2`` issues them (the centre and the neighbours of the old grid; without ``-O3``'s
predictive commoning nothing is kept across points), the instruction gaps before each,
and the store.  A 2-D kind is a 3-D grid with ``nz = 1``: element offsets of the
neighbours are ``(di ny + dj) nz + dk``, so one vectorised routine serves all five kinds.
SOR updates in place and, as red-black SOR does, only every other point of a row per
sweep (the column parity alternates with the row and the sweep).

Gaps (estimates of ``-O2`` code, one cycle per non-memory instruction): the innermost loop
(increment, compare, branch) before the first load of a point, one floating-point add per
further load, the multiply-add chain before the store, a line prologue (row pointers and
the loop test) per innermost line, and a call overhead per ``pfor`` call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.errors import ConfigError
from simsched.workloads._common import (
    GEN_MEMORY_PER_EXPANDED_ROW,
    Heap,
    Param,
    concat_ranges,
    first_touch,
    gen_memory,
    pfor_frames,
)

NAME = "stencil"
SUMMARY = "iterative stencils heat, sor, 9p (2-D), 6p, 25p (3-D); regular or irregular branching"
#: its trace marks iterations (a sweep's sample_iterations needs them)
MARKS_ITERATIONS = True

ELEM = 8
#: per innermost line: row pointers of old/new and the loop test
GAP_ROW = 4
#: pfor() call: row-count test, split computation, epilogue
CALL_HEAT = 8
#: ss_pfor_ir's extra work per split node: the k and share computations
CALL_IR = 6
#: init loop per element (two stores per element: A then B)
GAP_INIT = (3, 0)


@dataclass(frozen=True)
class Kind:
    """One stencil program.

    Attributes
    ----------
    name
        Registry name (the C program's name without ``-ir``).
    dims
        2 or 3.
    radius
        Boundary width (cells read beyond the interior on every side).
    loads
        ``(di, dj, dk)`` offsets of the loads of one point, in program order.
    gap_loads
        Non-memory instructions before each load.
    gap_store
        Non-memory instructions before the store.
    sweeps
        1 (Jacobi into the other grid) or 2 (red-black, in place).
    summary
        One line.
    """

    name: str
    dims: int
    radius: int
    loads: tuple[tuple[int, int, int], ...]
    gap_loads: tuple[int, ...]
    gap_store: int
    sweeps: int
    summary: str


def _faces(radius: int) -> tuple[tuple[int, int, int], ...]:
    out = [(0, 0, 0)]
    for r in range(1, radius + 1):
        out += [(-r, 0, 0), (r, 0, 0), (0, -r, 0), (0, r, 0), (0, 0, -r), (0, 0, r)]
    return tuple(out)


KINDS: dict[str, Kind] = {
    "heat": Kind(
        "heat",
        2,
        1,
        ((0, 0, 0), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0)),
        (3, 0, 1, 1, 1),
        4,  # 4*centre, subtract, multiply by K, add the centre
        1,
        "iterative 5-point heat stencil on a 2-D grid, rows split in two ([CAB11] §II)",
    ),
    "sor": Kind(
        "sor",
        2,
        1,
        ((-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, 0)),
        (3, 0, 1, 1, 1),  # j += 2 loop; adds; the 0.25 multiply before the centre
        3,  # subtract, multiply by 1.5, add
        2,
        "red-black successive over-relaxation on a 2-D grid, in place ([CAB11] §V)",
    ),
    "9p": Kind(
        "9p",
        2,
        1,
        tuple((di, dj, 0) for di in (-1, 0, 1) for dj in (-1, 0, 1)),
        (3, 0, 1, 1, 1, 1, 1, 1, 1),
        2,  # add, divide by 9
        1,
        "iterative 9-point stencil on a 2-D grid ([LAWS15] §6.1)",
    ),
    "6p": Kind(
        "6p",
        3,
        1,
        _faces(1),
        (3,) + (1,) * 6,
        1,  # multiply by c0
        1,
        "iterative 3-D stencil, centre and 6 face neighbours ([LAWS15] §6.1)",
    ),
    "25p": Kind(
        "25p",
        3,
        4,
        _faces(4),
        (3,) + (1,) * 24,
        1,
        1,
        "iterative 3-D 25-point stencil, 4 neighbours each way per axis ([LAWS15] §6.1)",
    ),
}

#: every variant this module registers (``simsched trace gen heat``, ``... 25p``)
VARIANTS = tuple(KINDS)


#: Shared with GE: unequal children of an irregular node (docstring above).
UNEVEN = Param(
    "uneven",
    bool,
    False,
    "with irregular: children get shares 1, 2, ..., k instead of even ones, breaking the"
    " even-split assumption of [LAWS15] §3.2 / Eq. 1 (a stress case, no C program)",
)


def params_for(variant: str) -> tuple[Param, ...]:
    """The parameter table of one stencil program."""
    k = KINDS[variant]
    edge = 2 * k.radius + 1
    big = k.dims == 2
    out = [
        Param(
            "nx",
            int,
            1024 if big else 512,
            f"rows{'' if big else ' (planes)'} of the grid, boundary included; the parallel"
            " loop splits them",
            minimum=edge,
        ),
        Param(
            "ny",
            int,
            1024 if big else 64 + 2 * k.radius,
            "columns, boundary included"
            + (" (red-black: every row needs a point of each colour)" if k.sweeps == 2 else ""),
            minimum=edge + (k.sweeps == 2),
        ),
    ]
    if not big:
        out.append(Param("nz", int, 64 + 2 * k.radius, "depth, boundary included", minimum=edge))
    out += [
        Param("iters", int, 4, "time steps (each one is an iteration of the trace)", minimum=1),
        Param(
            "cutoff",
            int,
            128 if big else 16,
            f"a task with at most this many {'rows' if big else 'planes'} computes them;"
            " larger ones split ([CAB11] §V uses 128, 64 and 32 rows)",
            minimum=1,
        ),
        Param(
            "irregular",
            bool,
            False,
            "split into 2-4 children by position as ss_pfor_ir does (the -ir programs of"
            " [LAWS15] §6.1)",
        ),
        UNEVEN,
        Param("init", bool, True, "emit main's loop that writes the grids (first touch)"),
        Param(
            "repeat",
            bool,
            True,
            "store identical time steps once with a repeat count (a period of one step in"
            ' place, two when the grids alternate; docs/trace-format.md, "Repeated parts"):'
            " the same program in a file that does not grow with iters",
        ),
    ]
    return tuple(out)


PARAMS = params_for("heat")


def _shape(p: dict[str, Any]) -> tuple[int, int, int]:
    return p["nx"], p["ny"], p.get("nz", 1)


def memory(params: dict[str, Any]) -> float:
    """Bytes generating needs (the up-front check): one parallel loop over the interior
    per sweep of every stored time step (:func:`_stored_steps`: a repeated part once), a
    leaf's references (a load per point of the stencil and a store, per grid point of its
    rows) at once, and for a repeat trace the whole program's tables, which the builder
    expands to check them as a reader would (:func:`program_rows`)."""
    k = KINDS[params["kind"]]
    nx, ny, nz = _shape(params)
    steps = _stored_steps(params)
    frames = 1 + steps * k.sweeps * (_loop_frames(params) + 1)
    leaf = min(params["cutoff"], nx - 2 * k.radius) * ny * nz * (len(k.loads) + 1)
    expanded = program_rows_at_most(params) if steps < params["iters"] else 0
    return gen_memory(frames, batch_refs=leaf) + GEN_MEMORY_PER_EXPANDED_ROW * expanded


def _loop_frames(params: dict[str, Any]) -> int:
    """At least the frames of one parallel loop over the interior (an upper estimate)."""
    k = KINDS[params["kind"]]
    frames = pfor_frames(_shape(params)[0] - 2 * k.radius, params["cutoff"])
    if params.get("irregular") and params.get("uneven"):
        frames *= 3  # shares 1..4 of 10: leaves down to a tenth of the cut-off
    return frames


def program_rows_at_most(params: dict[str, Any]) -> int:
    """An upper bound of :func:`program_rows`, at once: the count itself for a regular
    loop (its subtrees are counted once per length); for an irregular one, whose exact
    count walks every inner node (seconds at millions of rows), 8 rows a frame of the loop
    (an inner node with ``k >= 1`` children makes ``6k + 2 <= 8k``).  The up-front check
    counts exactly only when this bound passes the reader's limit; the memory estimate
    takes the bound."""
    if not params["irregular"]:
        return program_rows(params)
    k = KINDS[params["kind"]]
    return 2 + params["iters"] * k.sweeps * (8 + 8 * _loop_frames(params))


def _step_refs(params: dict[str, Any]) -> tuple[int, int, int]:
    """(references of main's first touch, references of one time step, grids)."""
    k = KINDS[params["kind"]]
    nx, ny, nz = _shape(params)
    R = k.radius
    points = (nx - 2 * R) * (ny - 2 * R) * ((nz - 2 * R) if k.dims == 3 else 1)
    grids = 2 if k.sweeps == 1 else 1
    return int(params["init"]) * nx * ny * nz * grids, points * (len(k.loads) + 1), grids


def references(params: dict[str, Any]) -> int:
    """References the trace file holds, exactly: ``init + stored_steps * step``.

    ``init = nx ny nz * grids`` stores of main's first touch (``init=true``; 2 grids, SOR 1).
    A time step updates every interior point once, with a load per point of the stencil and
    a store (:func:`leaf_refs`): ``step = (nx - 2r)(ny - 2r)[(nz - 2r)] * (loads + 1)``
    (a leaf's rows are interior rows, however they are split; SOR's red and black sweeps
    take ``(ny - 1) // 2`` and ``(ny - 2) // 2`` points of a row, which by the row's
    parity, ``ny - 2`` together).  With ``repeat``
    and at least two periods (``period = grids`` steps) the file stores one period and the
    ``iters mod period`` steps after the copies; otherwise all ``iters`` steps
    (:func:`program_references` counts the whole program).
    """
    init, step, _ = _step_refs(params)
    return init + _stored_steps(params) * step


def _stored_steps(params: dict[str, Any]) -> int:
    """Time steps the file stores: with ``repeat`` and at least two periods (``period``
    = the grids, as :func:`emit` repeats), one period and the ``iters mod period`` steps
    after the copies; otherwise all ``iters``."""
    period = _step_refs(params)[2]
    iters = params["iters"]
    copies = iters // period if params["repeat"] else 0
    return period + iters - copies * period if copies >= 2 else iters


def program_references(params: dict[str, Any]) -> int:
    """References of the whole program, a repeated part expanded: ``init + iters * step``
    (:func:`references`); the trace header's ``n_refs``, which the reader's limits apply to."""
    init, step, _ = _step_refs(params)
    return init + params["iters"] * step


def program_rows(params: dict[str, Any]) -> int:
    """Table rows of the whole program, a repeated part expanded: its strands, frames and
    edges together, which a reader holds at most :data:`simsched.trace.repeat.MAX_ROWS`
    of when it expands a repeated part.

    Main's frame and first strand, then per sweep of every time step main's spawn,
    return and sync (a frame, three strands, four edges) and, for every inner node of
    the loop with ``k`` children, ``k`` frames, ``2k + 1`` strands (each child's first,
    a continuation after each, the one after the sync) and ``3k + 1`` edges (a spawn,
    a continuation and a join a child, and the sync's continuation): the builder's
    rules (:class:`~simsched.trace.TraceBuilder`).
    """
    k = KINDS[params["kind"]]
    interior = _shape(params)[0] - 2 * k.radius
    return 2 + params["iters"] * k.sweeps * (8 + _loop_rows(params, interior))


def _loop_rows(params: dict[str, Any], interior: int) -> int:
    """Table rows of the inner nodes of one parallel loop over ``interior`` rows
    (:func:`program_rows`); a regular loop's subtrees depend on their length alone."""
    cutoff, irregular, uneven = params["cutoff"], params["irregular"], params["uneven"]
    if not irregular:
        sizes: dict[int, int] = {}

        def rows(n: int) -> int:
            if n <= cutoff:
                return 0
            if n not in sizes:
                sizes[n] = 14 + rows(n // 2) + rows(n - n // 2)
            return sizes[n]

        return rows(interior)
    total, todo = 0, [(0, interior)]
    while todo:
        lo, hi = todo.pop()
        if hi - lo > cutoff:
            kids = split(lo, hi, cutoff, True, uneven)
            total += 6 * len(kids) + 2
            todo.extend(kids)
    return total


def layout(params: dict[str, Any]) -> Heap:
    """The grids: ``A`` and ``B`` (``A`` alone for SOR), every cell a double."""
    heap = Heap()
    nx, ny, nz = _shape(params)
    nbytes = nx * ny * nz * ELEM
    heap.malloc("A", nbytes)
    if KINDS[params["kind"]].sweeps == 1:
        heap.malloc("B", nbytes)
    return heap


def finish_params(params: dict[str, Any]) -> dict[str, Any]:
    """No derived parameters; ``uneven`` needs ``irregular``."""
    check_uneven(params.get("kind", "heat"), params)
    return dict(params)


def check_uneven(workload: str, params: dict[str, Any]) -> None:
    """Refuse ``uneven`` without ``irregular`` (shared with GE)."""
    if params.get("uneven") and not params.get("irregular"):
        # a regular node halves its range whatever uneven says: the trace was the even
        # program while its header said uneven=True
        raise ConfigError(
            f"workload {workload}: parameter uneven: applies only with irregular=true (a "
            "regular node splits its range in halves)"
        )


def split_ir(lo: int, hi: int, grain: int, uneven: bool = False) -> list[tuple[int, int]]:
    """The children of ``ss_pfor_ir(lo, hi, grain)`` above the cut-off (``ssprog.h``).

    ``k = 2 + (lo / grain) % 3`` children (at most ``hi - lo``), with even shares, or with
    shares proportional to ``1, 2, ..., k`` when ``uneven``.
    """
    n = hi - lo
    k = min(2 + (lo // grain) % 3, n)
    if not uneven:
        return [(lo + n * j // k, lo + n * (j + 1) // k) for j in range(k)]
    weights = k * (k + 1) // 2
    out = []
    start = lo
    for j in range(k):
        end = hi if j == k - 1 else start + n * (j + 1) // weights
        end = min(max(end, start + 1), hi)
        if end > start:
            out.append((start, end))
        start = end
    return out


def split(
    lo: int, hi: int, grain: int, irregular: bool, uneven: bool = False
) -> list[tuple[int, int]]:
    """Children of a ``pfor`` node over ``[lo, hi)`` above the cut-off."""
    if irregular:
        return split_ir(lo, hi, grain, uneven)
    m = lo + (hi - lo) // 2
    return [(lo, m), (m, hi)]


def leaf_refs(
    kind: Kind, r0: int, r1: int, shape: tuple[int, int, int], old: int, new: int, colour: int = 0
):
    """References of a leaf updating grid rows ``[r0, r1)``: (addresses, writes, gaps)."""
    nx, ny, nz = shape
    R = kind.radius
    rows = np.arange(r0, r1, dtype=np.int64)
    if kind.dims == 3:
        js = np.arange(R, ny - R, dtype=np.int64)
        ks = np.arange(R, nz - R, dtype=np.int64)
        lines = (rows[:, None] * ny + js[None, :]).ravel()
        idx = (lines[:, None] * nz + ks[None, :]).ravel()
        per_line = len(ks)
        first = np.zeros(len(idx), np.bool_)
        first[::per_line] = True
    elif kind.sweeps == 2:
        # red-black: row r starts at column 1 + ((r + colour) & 1), every other column
        start = 1 + ((rows + colour) & 1)
        count = (ny - start) // 2
        t = concat_ranges(np.zeros(len(rows), np.int64), count)
        idx = np.repeat(rows * ny + start, count) + 2 * t
        first = t == 0
    else:
        cols = np.arange(1, ny - 1, dtype=np.int64)
        idx = (rows[:, None] * ny + cols[None, :]).ravel()
        first = np.zeros(len(idx), np.bool_)
        first[:: ny - 2] = True
    nl = len(kind.loads)
    a = np.empty((len(idx), nl + 1), np.int64)
    for c, (di, dj, dk) in enumerate(kind.loads):
        a[:, c] = old + (idx + (di * ny + dj) * nz + dk) * ELEM
    a[:, nl] = new + idx * ELEM
    g = np.empty((len(idx), nl + 1), np.uint32)
    g[:, :nl] = kind.gap_loads
    g[:, nl] = kind.gap_store
    g[first, 0] += GAP_ROW
    w = np.zeros((len(idx), nl + 1), np.bool_)
    w[:, nl] = True
    return a.ravel().astype(np.uint64), w.ravel(), g.ravel()


def emit(b, params: dict[str, Any], heap: Heap) -> dict[str, Any]:
    """Write the stencil program ``params["kind"]`` into builder ``b``.

    Parameters
    ----------
    b
        A :class:`~simsched.trace.TraceBuilder` (or anything with its methods).
    params
        Resolved parameters (``kind`` among them).
    heap
        The layout from :func:`layout`.

    Returns
    -------
    dict
        ``leaves``: the grid-row ranges of the leaf tasks of one sweep, in serial order.
    """
    kind = KINDS[params["kind"]]
    shape = _shape(params)
    cutoff, irregular, R = params["cutoff"], params["irregular"], kind.radius
    uneven = params["uneven"]
    grids = [heap.regions[n].base for n in ("A", "B") if n in heap.regions]
    if params["init"]:
        first_touch(b, grids, shape[0] * shape[1] * shape[2], ELEM, GAP_INIT)
    leaves: list[tuple[int, int]] = []

    def pfor(lo: int, hi: int, old: int, new: int, colour: int, first: bool) -> None:
        # lo, hi count interior rows from 0 as the C loop does; grid row = interior row + R
        b.instr(CALL_HEAT)
        if hi - lo <= cutoff:
            if first:
                leaves.append((lo + R, hi + R))
            a, w, g = leaf_refs(kind, lo + R, hi + R, shape, old, new, colour)
            b.refs(a, ELEM, w, g)
            return
        if irregular:
            b.instr(CALL_IR)
        for c0, c1 in split(lo, hi, cutoff, irregular, uneven):
            b.spawn()
            pfor(c0, c1, old, new, colour, first)
            b.ret()
        b.sync()

    interior = shape[0] - 2 * R

    def step(it: int) -> None:
        b.iteration(it)
        if kind.sweeps == 2:
            old = new = grids[0]
        else:
            old, new = (grids[0], grids[1]) if it % 2 == 0 else (grids[1], grids[0])
        for colour in range(kind.sweeps):
            b.spawn()
            pfor(0, interior, old, new, colour, it == 0 and colour == 0)
            b.ret()
            b.sync()

    # Time steps repeat with the grids: every step in place (SOR), every second one when
    # two grids alternate.
    period = len(grids)
    copies = params["iters"] // period if params["repeat"] else 0
    done = 0
    if copies >= 2:
        b.repeat_begin()
        for it in range(period):
            step(it)
        b.repeat_end(copies, period)
        done = copies * period
    for it in range(done, params["iters"]):
        step(it)
    return {"leaves": leaves}
