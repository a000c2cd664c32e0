"""fib: CPU-bound recursion with almost no data (the Cilk-5 ``fib``).

The modelled program (serial elision)::

    main:   spawn fib(n); sync
    fib(n): if n < cutoff: return sfib(n)          # one strand: serial recursion
            x = spawn fib(n - 1)
            y = spawn fib(n - 2)
            sync
            return x + y
    sfib(n): return n < 2 ? n : sfib(n - 1) + sfib(n - 2)

``cutoff`` is at least 2, so every task below it is a serial subtree in one strand, and
``cutoff = 2`` spawns a task for every call with ``n >= 2`` (the fully parallel original).
The number of strands follows the recurrence ``S(m) = 1`` for ``m < cutoff`` and
``S(m) = 4 + S(m-1) + S(m-2)`` otherwise (a task that spawns twice and syncs has four
strands: before the first spawn, between the spawns, before the sync, after it); main adds
three (before its spawn, after it, after its final sync).

The only data are stack references, as ``gcc -O2`` code for x86-64 makes them: a call pushes
the return address, a recursive frame saves ``rbp`` and ``rbx`` and keeps ``x`` in a 32-byte
frame; the leaf case (``n < 2``) touches only its return address.  Frames sit at the
addresses of the serial run's stack (:data:`~simsched.workloads._common.STACK_TOP`, a 64-byte
``main`` frame, then 32 bytes per call level), and the trace names the stack region (the
top :data:`~simsched.workloads._common.STACK_SIZE` bytes below ``STACK_TOP``), so that a
multi-core replay gives every core a stack of its own, as a Cilk runtime gives every
worker (:mod:`simsched.memory.stacks`).  References of serial subtrees come from
patterns built once per ``n`` and shifted by the subtree's stack depth.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from simsched.workloads._common import STACK_SIZE, STACK_TOP, Heap, Param, Region, gen_memory

NAME = "fib"
SUMMARY = "recursive Fibonacci: CPU-bound, only stack references"
#: its trace marks iterations (a sweep's sample_iterations needs them)
MARKS_ITERATIONS = False

PARAMS = (
    Param("n", int, 22, "compute fib(n)", minimum=0, maximum=50),
    Param(
        "cutoff",
        int,
        2,
        "calls with n below this run serially inside one task (2: a task per call)",
        minimum=2,
    ),
)

#: bytes of main's frame above the first fib frame
MAIN_FRAME = 64
#: bytes per recursive frame: return address, saved rbp, saved rbx, x
FRAME = 32
# stack slots (8 bytes each, from the frame's top): 0 return address, 1 rbp, 2 rbx, 3 x
#: a frame entry: (slot, is_write, gap) of its references
ENTRY = ((0, True, 0), (1, True, 0), (2, True, 1))
#: after the entry: compare n with 2 and branch, keep n in rbx, compute n - 1
AFTER_ENTRY = 4
#: after fib(n-1) returns: store x; then compute n - 2
STORE_X = (3, True, 0)
AFTER_STORE_X = 1
#: after the second call (and the sync): reload x, add, restore rbx, rbp, return
EXIT = ((3, False, 0), (2, False, 1), (1, False, 0), (0, False, 0))
#: the n < 2 case: pushed return address, compare + branch + move, return
BASE = ((0, True, 0), (0, False, 3))
#: serial subtrees with at most this many references are emitted one reference at a time
_SCALAR_REFS = 16


def stack_addr(depth: int | np.ndarray, slot: int | np.ndarray):
    """Address of stack ``slot`` of the frame at call depth ``depth`` (main's callee: 1)."""
    return STACK_TOP - MAIN_FRAME - (depth - 1) * FRAME - 8 * (slot + 1)


@cache
def _pattern(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """References of serial ``sfib(m)`` relative to its frame: (depth, slot, write, gap), tail."""
    if m < 2:
        d = np.zeros(len(BASE), np.int64)
        s = np.array([r[0] for r in BASE], np.int64)
        w = np.array([r[1] for r in BASE], np.bool_)
        g = np.array([r[2] for r in BASE], np.int64)
        return d, s, w, g, 0
    parts = []  # (depth, slot, write, gap) arrays and a tail

    def fixed(refs, pending):
        d = np.zeros(len(refs), np.int64)
        s = np.array([r[0] for r in refs], np.int64)
        w = np.array([r[1] for r in refs], np.bool_)
        g = np.array([r[2] for r in refs], np.int64)
        g[0] += pending
        return d, s, w, g

    pending = 0
    parts.append(fixed(ENTRY, pending))
    pending = AFTER_ENTRY
    for child in (m - 1, m - 2):
        d, s, w, g, tail = _pattern(child)
        g = g.copy()
        g[0] += pending
        parts.append((d + 1, s, w, g))
        pending = tail
        if child == m - 1:
            parts.append(fixed((STORE_X,), pending))
            pending = AFTER_STORE_X
    parts.append(fixed(EXIT, pending))
    cat = [np.concatenate([p[i] for p in parts]) for i in range(4)]
    for a in cat:
        a.setflags(write=False)
    return cat[0], cat[1], cat[2], cat[3], 0


def strand_count(n: int, cutoff: int) -> int:
    """Strands of the whole program by the recurrence in the module docstring."""
    s = [0] * (max(n, 1) + 1)
    for m in range(len(s)):
        s[m] = 1 if m < cutoff else 4 + s[m - 1] + s[m - 2]
    return s[n] + 3


def layout(params: dict[str, Any]) -> Heap:
    """fib allocates nothing; its stack is described as the region ``stack``."""
    heap = Heap()
    depth = max(params["n"], 1)  # deepest call chain: fib(n), fib(n-1), ..., fib(1)
    lo = stack_addr(depth, 3)
    heap.regions["stack"] = Region("stack", lo, STACK_TOP - lo)
    return heap


def finish_params(params: dict[str, Any]) -> dict[str, Any]:
    """No derived parameters."""
    return dict(params)


def frames(n: int, cutoff: int) -> int:
    """Frames of the trace: main plus ``F(n)``, ``F(m) = 1`` below the cut-off and
    ``1 + F(m-1) + F(m-2)`` from it on (fib(50) with cut-off 2: 4.0e10 frames)."""
    f = [1] * (n + 1)
    for m in range(cutoff, n + 1):
        f[m] = 1 + f[m - 1] + f[m - 2]
    return 1 + f[n]


def memory(params: dict[str, Any]) -> float:
    """Bytes generating needs (the up-front check): the DAG, and the patterns of serial
    subtrees (at most 6 references per call of the largest, all sizes below it cached:
    about 2.6 times its calls)."""
    n, cutoff = params["n"], params["cutoff"]
    calls = frames(min(n, cutoff - 1), 2) - 1  # calls of the largest serial subtree
    return gen_memory(frames(n, cutoff), batch_refs=16 * calls)


def references(params: dict[str, Any]) -> int:
    """References of the trace, exactly: ``10 F(n + 1) - 8`` (``F(1) = F(2) = 1``).

    A call with ``m >= 2`` makes 8 references of its own (:data:`ENTRY`, :data:`STORE_X`,
    :data:`EXIT`), spawned or serial alike, and one with ``m < 2`` makes 2 (:data:`BASE`),
    so ``R(m) = 8 + R(m-1) + R(m-2)`` with ``R(0) = R(1) = 2``: ``R(m) + 8`` follows
    Fibonacci's recurrence from ``10, 10``.  The cut-off moves references between tasks,
    not their number; main makes none.
    """
    return 10 * _fib(params["n"] + 1) - 8


def emit(b, params: dict[str, Any], heap: Heap) -> dict[str, Any]:
    """Write the fib program into builder ``b``.

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
        ``value``: fib(n); ``strands``: the strand count the recurrence predicts.
    """
    n, cutoff = params["n"], params["cutoff"]

    def refs(depth, table):
        # a handful of references: the scalar call is cheaper than building arrays
        for slot, w, g in table:
            b.ref(stack_addr(depth, slot), 8, w, g)

    def task(m: int, depth: int) -> int:
        if m < cutoff:
            d, s, w, g, tail = _pattern(m)
            if len(d) <= _SCALAR_REFS:
                for k in range(len(d)):
                    b.ref(stack_addr(depth + int(d[k]), int(s[k])), 8, bool(w[k]), int(g[k]))
            else:
                b.refs(stack_addr(depth + d, s).astype(np.uint64), 8, w, g)
            b.instr(tail)
            return _fib(m)
        refs(depth, ENTRY)
        b.instr(AFTER_ENTRY)
        b.spawn()
        x = task(m - 1, depth + 1)
        b.ret()
        refs(depth, (STORE_X,))
        b.instr(AFTER_STORE_X)
        b.spawn()
        y = task(m - 2, depth + 1)
        b.ret()
        b.sync()
        refs(depth, EXIT)
        return x + y

    b.set_stack(STACK_TOP - STACK_SIZE, STACK_TOP)
    b.spawn()
    value = task(n, 1)
    b.ret()
    b.sync()
    return {"value": value, "strands": strand_count(n, cutoff)}


def _fib(m: int) -> int:
    a, c = 0, 1
    for _ in range(m):
        a, c = c, a + c
    return a
