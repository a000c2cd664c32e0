"""datapar: the data-parallel program of [SAWS12] Fig. 3 -- N equal children at once.

The modelled program is ``traces/programs/datapar.c`` (serial elision)::

    main:     A = malloc(n*elems*8); A[x] = initial value       # optional (init=true)
              for i < n: spawn work(i)
              sync
    work(i):  a = A + i*elems
              for r < reps: for j < elems: a[j] = a[j]*0.5 + 1.0

Main spawns all ``n`` children before its one sync, so the DAG is a root with ``n``
leaves of equal work and the parallelism stays ``n`` for almost the whole run: the program
[SAWS12] §3 uses to show A-Steal's desire oscillating and SAWS's settling at ``n`` (Fig. 4).
Each child owns its slice of ``A``; a sweep loads and stores each of its elements.

Gaps: the loop (3) before the load, the multiply and add (2) before the store, a sweep
prologue (2) per sweep, a call overhead per child and the spawn loop's test in main.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.workloads._common import Heap, Param, first_touch, gen_memory

NAME = "datapar"
SUMMARY = "a parent spawning n equal children at once ([SAWS12] Fig. 3)"
#: its trace marks iterations (a sweep's sample_iterations needs them)
MARKS_ITERATIONS = False

PARAMS = (
    Param("n", int, 10, "children (the parallelism N of [SAWS12] Fig. 4)", minimum=1),
    Param("elems", int, 65536, "doubles each child owns", minimum=1),
    Param("reps", int, 4, "sweeps each child makes over its elements", minimum=1),
    Param("init", bool, True, "emit main's loop that writes A (first touch)"),
)

ELEM = 8
#: per element: loop before the load; multiply and add before the store
GAP_ELEM = (3, 2)
#: per sweep: reset the element pointer, sweep loop test
GAP_SWEEP = 2
#: work() call: slice pointer, prologue, epilogue
CALL_WORK = 6
#: main's spawn loop: increment, compare, branch, argument
GAP_SPAWN = 4
#: init loop per element
GAP_INIT = 3


def layout(params: dict[str, Any]) -> Heap:
    """The array ``A`` of ``n * elems`` doubles."""
    heap = Heap()
    heap.malloc("A", params["n"] * params["elems"] * ELEM)
    return heap


def finish_params(params: dict[str, Any]) -> dict[str, Any]:
    """No derived parameters."""
    return dict(params)


def memory(params: dict[str, Any]) -> float:
    """Bytes generating needs (the up-front check): a child's references are emitted at
    once (a read and a write per element and sweep, and the first touch)."""
    n, elems, reps = params["n"], params["elems"], params["reps"]
    return gen_memory(n + 1, batch_refs=elems * (2 * reps + 1))


def references(params: dict[str, Any]) -> int:
    """References of the trace, exactly: ``n elems (2 reps + init)``.

    Main's first touch stores each of the ``n elems`` doubles once (``init``), and each
    child's sweeps load and store each of its ``elems`` doubles ``reps`` times
    (:func:`child_refs`); main itself references nothing else.
    """
    n, elems, reps = params["n"], params["elems"], params["reps"]
    return n * elems * (2 * reps + int(params["init"]))


def child_refs(base: int, elems: int, reps: int):
    """References of one child: (addresses, writes, gaps)."""
    one = base + np.arange(elems, dtype=np.int64) * ELEM
    addr = np.repeat(np.tile(one, reps), 2)
    w = np.tile(np.array([False, True]), elems * reps)
    g = np.tile(np.array(GAP_ELEM, np.uint32), elems * reps)
    g[:: 2 * elems] += GAP_SWEEP
    return addr.astype(np.uint64), w, g


def emit(b, params: dict[str, Any], heap: Heap) -> dict[str, Any]:
    """Write the datapar program into builder ``b``.

    Returns
    -------
    dict
        ``children``: the number of children spawned.
    """
    n, elems, reps = params["n"], params["elems"], params["reps"]
    a = heap.regions["A"].base
    if params["init"]:
        first_touch(b, [a], n * elems, ELEM, (GAP_INIT,))
    for i in range(n):
        b.instr(GAP_SPAWN)
        b.spawn()
        b.instr(CALL_WORK)
        addr, w, g = child_refs(a + i * elems * ELEM, elems, reps)
        b.refs(addr, ELEM, w, g)
        b.ret()
    b.sync()
    return {"children": n}
