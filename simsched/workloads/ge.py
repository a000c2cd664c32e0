"""ge: Gaussian elimination, one iteration per pivot step ([CAB11] §V, [LAWS15] §6.1, §6.6).

The modelled program is ``traces/programs/ge.c`` (serial elision)::

    main:   A = malloc(n*n*8); A[i][j] = initial value          # optional (init=true)
            for k < steps:                                      # b.iteration(k)
                spawn pfor(0, n - 1 - k); sync                  # the rows below the pivot
    pfor(lo, hi):  as the stencils' (regular halving, or ss_pfor_ir when irregular)
    leaf(lo, hi):  for i in [k+1+lo, k+1+hi):
                       f = A[i][k] / A[k][k]
                       for j in [k, n): A[i][j] -= f * A[k][j]

Every pivot step is an iteration, and the DAG of an iteration shrinks with it: step ``k``
splits ``n - 1 - k`` rows, so the position keys of step ``k + 1`` are a subset of step
``k``'s and the rows a key covers move down by one.  This is the case [LAWS15] §6.6
discusses: LAWS's allocator still places each task by its data range in the current
iteration, but a packing learnt in one iteration does not carry to the next.

References of a row: ``A[i][k]`` and ``A[k][k]`` (the factor), then per column the pivot
row's ``A[k][j]``, ``A[i][j]`` and the store to ``A[i][j]``, as ``gcc -O2`` orders them.
Gaps: the row prologue before the factor's loads, the division before the first column,
the column loop (3) before ``A[k][j]``, the multiply before ``A[i][j]``, the subtraction
before the store; a ``pfor`` call overhead per task (the stencils' constants).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.errors import ConfigError
from simsched.workloads import stencil
from simsched.workloads._common import Heap, Param, first_touch, gen_memory, pfor_frames

NAME = "ge"
SUMMARY = "Gaussian elimination, rows below the pivot in parallel, one iteration per pivot"
#: its trace marks iterations (a sweep's sample_iterations needs them)
MARKS_ITERATIONS = True

PARAMS = (
    Param("n", int, 256, "the matrix is n x n doubles", minimum=2),
    Param("cutoff", int, 16, "a task with at most this many rows eliminates them", minimum=1),
    Param(
        "steps",
        int,
        None,
        "pivot steps (iterations) traced; default and at most n - 1",
        minimum=1,
    ),
    Param(
        "irregular",
        bool,
        False,
        "split into 2-4 children by position as ss_pfor_ir does (GE-ir of [LAWS15])",
    ),
    stencil.UNEVEN,
    Param("init", bool, True, "emit main's loop that writes A (first touch)"),
)

ELEM = 8
#: a row: row pointer and loop test before the factor's two loads
GAP_ROW = 4
#: the division f = A[i][k] / A[k][k], before the first column
GAP_DIV = 1
#: per column: loop (inc, cmp, branch) before A[k][j], multiply before A[i][j], subtract
GAP_COL = (3, 1, 1)
#: init loop per element
GAP_INIT = 3


def layout(params: dict[str, Any]) -> Heap:
    """The matrix ``A`` (``n * n`` doubles)."""
    heap = Heap()
    heap.malloc("A", params["n"] ** 2 * ELEM)
    return heap


def memory(params: dict[str, Any]) -> float:
    """Bytes generating needs (the up-front check): one parallel loop over the rows below
    the pivot per step, a leaf's references (3 per element of its rows) at once."""
    n, cutoff, steps = params["n"], params["cutoff"], params.get("steps") or params["n"] - 1
    frames = 1 + steps * (pfor_frames(n - 1, cutoff) + 1)
    return gen_memory(frames, batch_refs=3 * min(cutoff, n) * n)


def references(params: dict[str, Any]) -> int:
    """References of the trace, exactly: ``init n^2 + sum over k < steps of
    (n - 1 - k) (3 (n - k) + 2)``.

    Main's first touch stores each element once (``init``); pivot step ``k`` eliminates the
    ``n - 1 - k`` rows below the pivot, each with the factor's two loads and three
    references per column ``k .. n - 1`` (:func:`leaf_refs`), however the rows are split.
    With ``m = n - k`` the term is ``3 m^2 - m - 2``, summed here in closed form.
    """
    n, steps = params["n"], params["steps"]

    def upto(m: int) -> int:  # sum over j = 1 .. m of 3 j^2 - j - 2
        return m * (m + 1) * (2 * m + 1) // 2 - m * (m + 1) // 2 - 2 * m

    return int(params["init"]) * n * n + upto(n) - upto(n - steps)


def finish_params(params: dict[str, Any]) -> dict[str, Any]:
    """``steps`` defaults to ``n - 1`` and may not exceed it; ``uneven`` needs
    ``irregular``.

    ge.c caps a larger STEPS at ``n - 1``; the generator refuses it instead, so that a
    grid over ``steps`` cannot give two labels one trace without a word.
    """
    stencil.check_uneven("ge", params)
    p = dict(params)
    most = p["n"] - 1
    if p["steps"] and p["steps"] > most:
        raise ConfigError(
            f"workload ge: parameter steps: {p['steps']} is more than n - 1 = {most}, the "
            f"pivot steps of n={p['n']}"
        )
    p["steps"] = p["steps"] or most
    return p


def leaf_refs(n: int, k: int, i0: int, i1: int, a: int):
    """References of a leaf eliminating rows ``[i0, i1)`` at pivot ``k``."""
    rows = np.arange(i0, i1, dtype=np.int64)
    cols = np.arange(k, n, dtype=np.int64)
    m = len(cols)
    addr = np.empty((len(rows), 2 + 3 * m), np.int64)
    addr[:, 0] = a + (rows * n + k) * ELEM
    addr[:, 1] = a + (k * n + k) * ELEM
    addr[:, 2::3] = a + (k * n + cols[None, :]) * ELEM
    addr[:, 3::3] = a + (rows[:, None] * n + cols[None, :]) * ELEM
    addr[:, 4::3] = addr[:, 3::3]
    g = np.empty(addr.shape, np.uint32)
    g[:, 0] = GAP_ROW
    g[:, 1] = 0
    g[:, 2::3], g[:, 3::3], g[:, 4::3] = GAP_COL
    g[:, 2] += GAP_DIV
    w = np.zeros(addr.shape, np.bool_)
    w[:, 4::3] = True
    return addr.ravel().astype(np.uint64), w.ravel(), g.ravel()


def emit(b, params: dict[str, Any], heap: Heap) -> dict[str, Any]:
    """Write the ge program into builder ``b``.

    Returns
    -------
    dict
        ``leaves``: per step, the row ranges of its leaf tasks in serial order.
    """
    n, cutoff, irregular = params["n"], params["cutoff"], params["irregular"]
    uneven = params["uneven"]
    a = heap.regions["A"].base
    if params["init"]:
        first_touch(b, [a], n * n, ELEM, (GAP_INIT,))
    leaves: list[list[tuple[int, int]]] = []

    def pfor(k: int, lo: int, hi: int) -> None:
        b.instr(stencil.CALL_HEAT)
        if hi - lo <= cutoff:
            leaves[-1].append((k + 1 + lo, k + 1 + hi))
            addr, w, g = leaf_refs(n, k, k + 1 + lo, k + 1 + hi, a)
            b.refs(addr, ELEM, w, g)
            return
        if irregular:
            b.instr(stencil.CALL_IR)
        for c0, c1 in stencil.split(lo, hi, cutoff, irregular, uneven):
            b.spawn()
            pfor(k, c0, c1)
            b.ret()
        b.sync()

    for k in range(params["steps"]):
        b.iteration(k)
        leaves.append([])
        b.spawn()
        pfor(k, 0, n - 1 - k)
        b.ret()
        b.sync()
    return {"leaves": leaves}
