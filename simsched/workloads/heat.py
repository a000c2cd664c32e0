"""heat: iterative five-point stencil over a 2-D grid of doubles (CAB 000_1684400d07054b10.txt §II, Fig. 1).

The modelled program (serial elision)::

    main:   A = malloc(nx*ny*8); B = malloc(nx*ny*8)
            for i < nx, j < ny: A[i][j] = B[i][j] = initial value      # optional (init=true)
            for it < iters:                      # iteration mark: b.iteration(it)
                spawn heat(1, nx - 1); sync      # interior rows; old = A or B, new = the other
                swap(A, B)
    heat(r0, r1):                                # rows [r0, r1)
            if r1 - r0 <= cutoff:
                for r in [r0, r1): for c in [1, ny-1):
                    new[r][c] = old[r][c] + K*(old[r-1][c] + old[r+1][c]
                                               + old[r][c-1] + old[r][c+1] - 4*old[r][c])
            else: m = (r0 + r1)/2; spawn heat(r0, m); spawn heat(m, r1); sync

Rows 0 and ``nx - 1`` and columns 0 and ``ny - 1`` are the boundary, read but never written,
as in CAB's 10 x 10 example (an 8 x 8 interior).  Main (level 0) spawns the root ``heat``
task (level 1), which halves its rows until a task holds at most ``cutoff`` rows; with
``nx = ny = 10`` and ``cutoff = 2`` this is exactly CAB's Fig. 1: T1 at level 1, T2-T3 at
level 2, the leaves T4-T7 at level 3, and only the leaves touch data.

References per interior point, in the order ``gcc -O2`` loads them: the centre, the north,
south, west and east neighbours in ``old`` (five loads: without ``-O3``'s predictive
commoning nothing is kept across iterations), then the store to ``new``.  Gaps: the column
loop (increment, compare, branch) before the centre, one floating-point add per neighbour,
the multiply-add chain before the store, and a row prologue per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.workloads._common import Heap, Param

NAME = "heat"
SUMMARY = "iterative 5-point stencil on a 2-D grid of doubles, rows split in two (CAB §II)"

PARAMS = (
    Param("nx", int, 1024, "rows of the grid, boundary rows included", minimum=3),
    Param("ny", int, 1024, "columns of the grid, boundary columns included", minimum=3),
    Param("iters", int, 4, "time steps (each one is an iteration of the trace)", minimum=1),
    Param(
        "cutoff",
        int,
        128,
        "a task with at most this many rows computes them; larger ones split in two"
        " (CAB §V uses 128, 64 and 32)",
        minimum=1,
    ),
    Param("init", bool, True, "emit main's loop that writes both grids (first touch)"),
)

ELEM = 8
#: (row offset, column offset) of the five loads, in program order
STENCIL = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
#: gaps before each load: column loop (inc, cmp, branch); then one add per neighbour
GAP_LOADS = (3, 0, 1, 1, 1)
#: before the store: 4*centre, subtract, multiply by K, add the centre
GAP_STORE = 4
#: per row: row pointers of old/new and the row loop test
GAP_ROW = 4
#: heat() call: row-count test, halving, epilogue
CALL_HEAT = 8
#: init loop per element (two stores per element: A then B)
GAP_INIT = (3, 0)


def layout(params: dict[str, Any]) -> Heap:
    """The two grids ``A`` and ``B`` (``nx * ny`` doubles each)."""
    heap = Heap()
    nbytes = params["nx"] * params["ny"] * ELEM
    heap.malloc("A", nbytes)
    heap.malloc("B", nbytes)
    return heap


def finish_params(params: dict[str, Any]) -> dict[str, Any]:
    """No derived parameters."""
    return dict(params)


def leaf_refs(r0: int, r1: int, ny: int, old: int, new: int):
    """References of a leaf computing rows ``[r0, r1)``: (addresses, writes, gaps)."""
    rows = np.arange(r0, r1, dtype=np.int64)
    cols = np.arange(1, ny - 1, dtype=np.int64)
    idx = (rows[:, None] * ny + cols[None, :]).ravel()
    a = np.empty((len(idx), 6), np.int64)
    for k, (dr, dc) in enumerate(STENCIL):
        a[:, k] = old + (idx + dr * ny + dc) * ELEM
    a[:, 5] = new + idx * ELEM
    g = np.empty((len(idx), 6), np.uint32)
    g[:, :5] = GAP_LOADS
    g[:, 5] = GAP_STORE
    g[:: ny - 2, 0] += GAP_ROW  # first point of each row
    w = np.zeros((len(idx), 6), np.bool_)
    w[:, 5] = True
    return a.ravel().astype(np.uint64), w.ravel(), g.ravel()


def emit(b, params: dict[str, Any], heap: Heap) -> dict[str, Any]:
    """Write the heat program into builder ``b``.

    Parameters
    ----------
    b
        A :class:`~simsched.trace.TraceBuilder` (or anything with its methods).
    params
        Resolved parameters.
    heap
        The layout from :func:`layout`.

    Returns
    -------
    dict
        ``leaves``: the row ranges of the leaf tasks of one iteration, in serial order.
    """
    nx, ny, cutoff = params["nx"], params["ny"], params["cutoff"]
    A, B = heap.regions["A"].base, heap.regions["B"].base
    if params["init"]:
        step = max(1, (1 << 19) // ny)
        for r0 in range(0, nx, step):
            idx = np.arange(r0 * ny, min(nx, r0 + step) * ny, dtype=np.int64)
            a = np.empty((len(idx), 2), np.int64)
            a[:, 0] = A + idx * ELEM
            a[:, 1] = B + idx * ELEM
            g = np.empty((len(idx), 2), np.uint32)
            g[:] = GAP_INIT
            b.refs(a.ravel().astype(np.uint64), ELEM, True, g.ravel())
    leaves: list[tuple[int, int]] = []

    def heat(r0: int, r1: int, old: int, new: int, first: bool) -> None:
        b.instr(CALL_HEAT)
        if r1 - r0 <= cutoff:
            if first:
                leaves.append((r0, r1))
            a, w, g = leaf_refs(r0, r1, ny, old, new)
            b.refs(a, ELEM, w, g)
            return
        m = (r0 + r1) // 2
        b.spawn()
        heat(r0, m, old, new, first)
        b.ret()
        b.spawn()
        heat(m, r1, old, new, first)
        b.ret()
        b.sync()

    for it in range(params["iters"]):
        b.iteration(it)
        old, new = (A, B) if it % 2 == 0 else (B, A)
        b.spawn()
        heat(1, nx - 1, old, new, it == 0)
        b.ret()
        b.sync()
    return {"leaves": leaves}
