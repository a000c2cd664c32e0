"""Parallel mergesort with parallel merge, on real data ([PDF07] §4.2).

The modelled C program (serial elision, as captured)::

    main:    A = malloc(n*es); tmp = malloc(n*es)
             for i < n: A[i] = random()                         # optional (init=true)
             spawn psort(0, n, depth=0); sync
    psort(lo, n, d):                     # sorts A[lo:lo+n]; result in A if d is even, else tmp
             if n <= grain: msort(lo, n, d); return             # the leaf task sorts serially
             h = n/2
             spawn psort(lo, h, d+1); spawn psort(lo+h, n-h, d+1); sync
             pmerge(src[lo:lo+h], src[lo+h:lo+n] -> dst[lo:lo+n])   # src/dst by d's parity
    pmerge (recursive_merge=false):
             k = min(ceil(n / merge_grain), h)
             for c in 1..k-1: p_c = c*h/k; q_c = lower_bound(Y, X[p_c])   # binary search
             for c < k: spawn merge(X[p_{c-1}:p_c], Y[q_{c-1}:q_c] -> dst[p_{c-1}+q_{c-1}:])
             sync                                                 # (k == 1: one serial merge)
    cilkmerge(X, Y -> out) (recursive_merge=true; a Cilk function with its own frame)
             if |X| < |Y|: swap X, Y
             if |X| + |Y| <= merge_grain or |X| < 2: merge(X, Y -> out); return
             m = |X|/2; q = lower_bound(Y, X[m])                  # binary search
             spawn cilkmerge(X[:m], Y[:q] -> out); spawn cilkmerge(X[m:], Y[q:] -> out[m+q:])
             sync
    msort(lo, n, d): serial top-down mergesort with the same halving and ping-pong:
             if n == 1: copy the key into dst if dst is tmp; return
             msort(lo, h, d+1); msort(lo+h, n-h, d+1); merge(src halves -> dst)
    merge:   while i < ie and j < je: out[k++] = X[i] <= Y[j] ? X[i++] : Y[j++]
             then copy the rest of X, then of Y

This is libpmsort's structure with the parallel merge of §4.2: k splitting points taken from
one sorted half, each located in the other half by binary search, giving k chunk pairs merged
in parallel.  The array and the buffer alternate level by level (ping-pong), so sorting n keys
touches 2n keys of memory, as §3 of the paper assumes.

Reference model (what ``gcc -O2`` emits for these loops; constants below):

* merge step while both runs are live: read ``X[i]``, read ``Y[j]`` (reloaded every step,
  because the compiler cannot prove ``out`` does not alias them), write ``out[k]``;
* tail copy: read the source key, write ``out[k]``;
* binary search: read the split key ``X[p_c]``, then one read of ``Y[mid]`` per probe;
* init: one write per key.

Instruction gaps are the non-memory instructions of those loops (compare, branch, index
increments, address arithmetic) and the call overheads, all estimated.  A call's overhead
is charged to the next reference the program makes after the call begins (or to the
strand's tail when no reference follows), exactly as :meth:`TraceBuilder.instr` does.

Fast path: the loops run in Numba kernels (:mod:`simsched.workloads._kernels`) on the real
keys, writing the references of a whole batch of serial leaf tasks, or of a group of merge
chunks, into arrays handed to :meth:`TraceBuilder.refs` one strand at a time; the slow
per-reference oracle is ``tests/oracles/workloads.py``, and the tests compare the two
reference by reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.workloads import _kernels as _k
from simsched.workloads._common import Heap, Param, gen_memory, pfor_frames, rng, seed_param

NAME = "mergesort"
SUMMARY = "parallel mergesort with parallel merge on random keys (PDF paper §4.2)"
#: its trace marks iterations (a sweep's sample_iterations needs them)
MARKS_ITERATIONS = False
#: Generator memory per byte of the program's heap (keys, their sorted copy, the ping-pong
#: buffer and the leaf tables: measured 3.3 at n = 2^24), for the up-front check.
GEN_MEMORY_PER_HEAP_BYTE = 3.5

PARAMS = (
    Param("n", int, 1 << 20, "number of keys to sort", minimum=1, maximum=1 << 31),
    Param(
        "grain",
        int,
        2048,
        "sub-arrays of at most this many keys are sorted serially, as one task",
        minimum=1,
    ),
    Param(
        "merge_grain",
        int,
        None,
        "keys of output per parallel-merge task: a merge of m keys is split into"
        " min(ceil(m / merge_grain), m/2) tasks (default: grain; the paper's choice of 64"
        " merge tasks per level is merge_grain = n/64)",
        minimum=1,
    ),
    Param("elem_size", int, 4, "bytes per key (4: uint32, 8: uint64)", choices=(4, 8)),
    Param(
        "recursive_merge",
        bool,
        False,
        "parallel merge as cilksort's cilkmerge (halve the longer run, binary-search the"
        " other, recurse on both parts down to merge_grain keys) instead of the flat k-way"
        " split of [PDF07] §4.2",
    ),
    seed_param(),
    Param("init", bool, True, "emit main's loop that writes the random input into A"),
)

# -- instruction model (non-memory instructions; estimated from the loops above) --------------
#: before reading X[i] in a merge step: i++ or j++ and k++ of the previous step, two loop
#: tests (cmp + branch each)
GAP_MERGE_X = 6
#: before reading Y[j]: address already computed alongside X[i]
GAP_MERGE_Y = 0
#: before writing out[k]: the key comparison and its branch
GAP_MERGE_W = 2
#: before each read of a tail copy: loop test (cmp, branch) and the index increment
GAP_COPY_R = 3
#: before each write of a tail copy: the second index increment
GAP_COPY_W = 1
#: merge(): prologue, run bounds, epilogue
CALL_MERGE = 8
#: msort(): call, size test, halving, ping-pong flag, epilogue
CALL_MSORT = 10
#: psort() task body: size test against the grain, halving, epilogue
CALL_PSORT = 12
#: per split point: p_c = c*h/k (multiply, divide), search bounds
GAP_SPLIT = 6
#: per binary-search probe: lo < hi test, branch, mid = (lo + hi) / 2, then compare + branch
GAP_PROBE = 6
#: per key of the input loop: an inline xorshift generator, index increment, loop test
GAP_INIT = 8

#: keys of serial leaf tasks sorted per kernel call (bounds the memory of the fast path)
_LEAF_BATCH = 1 << 16
#: output keys of parallel-merge chunks per kernel call
_MERGE_BATCH = 1 << 18
#: keys written per init call
_INIT_BATCH = 1 << 20


def layout(params: dict[str, Any]) -> Heap:
    """The program's arrays: ``A`` (the keys) and ``tmp`` (the ping-pong buffer).

    Parameters
    ----------
    params
        Resolved parameters.

    Returns
    -------
    Heap
        The allocations.
    """
    heap = Heap()
    nbytes = params["n"] * params["elem_size"]
    heap.malloc("A", nbytes)
    heap.malloc("tmp", nbytes)
    return heap


def memory(params: dict[str, Any]) -> float:
    """Bytes generating needs (the up-front check): the keys and buffers
    (:data:`GEN_MEMORY_PER_HEAP_BYTE`), the sort tree and the merge tasks of every level."""
    n, grain = params["n"], params["grain"]
    mg = params.get("merge_grain") or grain
    sort = pfor_frames(n, grain)
    levels = max(1, (-(-n // grain)).bit_length())
    merges = levels * -(-n // mg) + sort  # per level about n / merge_grain, and one per node
    heap = sum(r.nbytes for r in layout(params).regions.values())
    return gen_memory(sort + merges, data=GEN_MEMORY_PER_HEAP_BYTE * heap)


def finish_params(params: dict[str, Any]) -> dict[str, Any]:
    """Fill in derived parameters (``merge_grain`` defaults to ``grain``)."""
    out = dict(params)
    if out["merge_grain"] is None:
        out["merge_grain"] = out["grain"]
    return out


def input_keys(n: int, elem_size: int, seed: int) -> np.ndarray:
    """The random keys main writes into ``A`` (uint32 or uint64 by ``elem_size``)."""
    dtype = np.uint32 if elem_size == 4 else np.uint64
    return rng(seed, 0).integers(0, np.iinfo(dtype).max, size=n, dtype=dtype, endpoint=True)


def _leaves(n: int, grain: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start, size and depth of psort()'s leaf tasks, in serial order."""
    s, k, d = np.zeros(1, np.int64), np.full(1, n, np.int64), np.zeros(1, np.int64)
    out_s, out_k, out_d = [], [], []
    while len(s):
        leaf = k <= grain
        out_s.append(s[leaf])
        out_k.append(k[leaf])
        out_d.append(d[leaf])
        s, k, d = s[~leaf], k[~leaf], d[~leaf]
        h = k // 2
        s, k, d = np.concatenate([s, s + h]), np.concatenate([h, k - h]), np.concatenate([d, d]) + 1
    s, k, d = np.concatenate(out_s), np.concatenate(out_k), np.concatenate(out_d)
    o = np.argsort(s, kind="stable")
    return s[o], k[o], d[o]


def references(params: dict[str, Any]) -> int:
    """References of the trace, exactly, counted from the seeded keys without writing them.

    ``init n`` stores, then every merge's: a merge of runs ``X`` and ``Y`` makes 3
    references a step of its main loop and 2 a key of its copy loops, ``3 (|X| + |Y|) -
    tail``, where ``tail`` (the keys copied) is data: ``#{y >= max X}`` when ``max X <=
    max Y`` (a tie takes X's key), else ``#{x > max Y}``, and the whole of the other run
    when one is empty.  A single key at an odd depth of a leaf is copied (2).  A binary
    search makes 1 reference and a probe per halving of its range, whose path depends on
    where the key falls.  Leaves are counted by a kernel over the input keys
    (:func:`~simsched.workloads._kernels.leaf_refs_total`); above the grain the sort tree
    is walked with the halves sorted (:func:`_merges_above_grain`).  It costs under a tenth
    of writing the trace (1.1 s against 13 s at n = 2^23).
    """
    n, grain = params["n"], params["grain"]
    keys = input_keys(n, params["elem_size"], params["seed"])
    s, k, d = _leaves(n, grain)
    total = int(params["init"]) * n + int(_k.leaf_refs_total(keys, s, k, d))
    if n > grain:
        # A merge has at most n keys, so any merge_grain of n or more splits none; the
        # kernels take a 64-bit integer, which a larger one (1e30 is valid) overflowed.
        total += _merges_above_grain(
            keys, grain, min(params["merge_grain"], n), bool(params.get("recursive_merge", False))
        )
    return total


def _merges_above_grain(keys: np.ndarray, grain: int, merge_grain: int, recursive: bool) -> int:
    """References of psort()'s parallel merges (pmerge() or cilkmerge()), the runs sorted
    with NumPy instead of merged reference by reference."""
    total = 0

    def psort(lo: int, n: int) -> np.ndarray:  # the keys of A[lo:lo+n], sorted
        nonlocal total
        if n <= grain:
            return np.sort(keys[lo : lo + n])
        h = n // 2
        x, y = psort(lo, h), psort(lo + h, n - h)
        if recursive:
            total += int(_k.cilkmerge_refs(x, 0, h, y, 0, n - h, merge_grain))
        else:
            total += int(_k.pmerge_refs(x, y, merge_grain))
        return np.sort(np.concatenate((x, y)))  # the merged run (only its keys matter)

    psort(0, len(keys))
    return total


def _max_leaf_refs(n: np.ndarray) -> np.ndarray:
    """Upper bound of the references of a serial msort() of ``n`` keys."""
    levels = np.ceil(np.log2(np.maximum(n, 1))).astype(np.int64) + 1
    return 3 * n * levels + 2 * n


def _constants() -> np.ndarray:
    C = np.zeros(_k.N_CONSTANTS, np.int64)
    C[_k.K_GAP_MERGE_X] = GAP_MERGE_X
    C[_k.K_GAP_MERGE_Y] = GAP_MERGE_Y
    C[_k.K_GAP_MERGE_W] = GAP_MERGE_W
    C[_k.K_GAP_COPY_R] = GAP_COPY_R
    C[_k.K_GAP_COPY_W] = GAP_COPY_W
    C[_k.K_CALL_MERGE] = CALL_MERGE
    C[_k.K_CALL_MSORT] = CALL_MSORT
    C[_k.K_GAP_SPLIT] = GAP_SPLIT
    C[_k.K_GAP_PROBE] = GAP_PROBE
    return C


class _Generator:
    """State of one mergesort run: the builder, the two arrays and the leaf-batch cache."""

    def __init__(self, b, p: dict[str, Any], heap: Heap):
        self.b = b
        self.n = p["n"]
        self.grain = p["grain"]
        self.merge_grain = p["merge_grain"]
        self.es = p["elem_size"]
        self.init = p["init"]
        self.recursive = bool(p.get("recursive_merge", False))
        self.keys = input_keys(self.n, self.es, p["seed"])
        self.mem = (self.keys.copy(), np.zeros_like(self.keys))  # A, tmp
        self.base = (heap.regions["A"].base, heap.regions["tmp"].base)
        self.C = _constants()
        self.leaf_s, self.leaf_n, self.leaf_d = _leaves(self.n, self.grain)
        self.next_leaf = 0
        self.batch: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}

    # -- main ---------------------------------------------------------------------------
    def run(self) -> None:
        b = self.b
        if self.init:
            a0 = self.base[0]
            for lo in range(0, self.n, _INIT_BATCH):
                hi = min(self.n, lo + _INIT_BATCH)
                idx = np.arange(lo, hi, dtype=np.uint64)
                b.refs(idx * np.uint64(self.es) + np.uint64(a0), self.es, True, GAP_INIT)
        b.spawn()
        self.psort(0, self.n, 0)
        b.ret()
        b.sync()

    def psort(self, lo: int, n: int, d: int) -> None:
        b = self.b
        b.instr(CALL_PSORT)
        if n <= self.grain:
            addr, gap, write, tail = self.leaf_refs(lo)
            b.refs(addr, self.es, write, gap)
            b.instr(tail)
            return
        h = n // 2
        b.spawn()
        self.psort(lo, h, d + 1)
        b.ret()
        b.spawn()
        self.psort(lo + h, n - h, d + 1)
        b.ret()
        b.sync()
        if self.recursive:
            b.call()
            self.cilkmerge(d, lo, lo + h, lo + h, lo + n, lo)
            b.call_ret()
        else:
            self.pmerge(lo, h, n - h, d)

    # -- serial leaves ------------------------------------------------------------------
    def leaf_refs(self, lo: int):
        i = self.next_leaf
        if int(self.leaf_s[i]) != lo:  # pragma: no cover - the walk visits leaves in order
            raise AssertionError("leaf order")
        self.next_leaf += 1
        if i not in self.batch:
            self.batch = self.leaf_batch(i)
        return self.batch.pop(i)

    def leaf_batch(self, first: int) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
        """Sort leaves ``first..`` (about ``_LEAF_BATCH`` keys) and keep their references."""
        cum = np.cumsum(self.leaf_n[first:])
        last = min(first + int(np.searchsorted(cum, _LEAF_BATCH)) + 1, len(self.leaf_s))
        s, n, d = self.leaf_s[first:last], self.leaf_n[first:last], self.leaf_d[first:last]
        cap = int(_max_leaf_refs(n).sum())
        addr = np.empty(cap, np.uint64)
        gap = np.empty(cap, np.uint32)
        write = np.empty(cap, np.bool_)
        off = np.empty(len(s) + 1, np.int64)
        tail = np.empty(len(s), np.int64)
        A, T = self.mem
        _k.sort_leaves(
            A, T, s, n, d, self.base[0], self.base[1], self.es, self.C, addr, gap, write, off, tail
        )
        return {
            first + k: (
                addr[off[k] : off[k + 1]],
                gap[off[k] : off[k + 1]],
                write[off[k] : off[k + 1]],
                int(tail[k]),
            )
            for k in range(len(s))
        }

    # -- parallel merge -----------------------------------------------------------------
    def _search(self, d: int, xlo: int, ylo: int, m: int, p: np.ndarray) -> np.ndarray:
        """Emit the binary searches of ``S[xlo + p[c]]`` in ``S[ylo:ylo+m]``; their results."""
        src, sbase = self.mem[(d + 1) & 1], self.base[(d + 1) & 1]
        q = np.empty(p.size, np.int64)
        cap = p.size * (2 + int(m).bit_length())
        addr = np.empty(cap, np.uint64)
        gap = np.empty(cap, np.uint32)
        write = np.empty(cap, np.bool_)
        used = _k.split_search(src, xlo, ylo, m, p, sbase, self.es, self.C, addr, gap, write, q)
        self.b.refs(addr[:used], self.es, write[:used], gap[:used])
        return q

    def cilkmerge(self, d: int, xs: int, xe: int, ys: int, ye: int, os_: int) -> None:
        """cilksort's recursive merge of ``X = src[xs:xe]`` and ``Y = src[ys:ye]``."""
        b = self.b
        if xe - xs < ye - ys:
            xs, xe, ys, ye = ys, ye, xs, xe
        nx, ny = xe - xs, ye - ys
        if nx + ny <= self.merge_grain or nx < 2:
            one = [np.array([v], np.int64) for v in (xs, xe, ys, ye, os_)]
            self._merge_group(d, one[0], one[1], one[2], one[3], one[4])
            return
        mid = nx // 2
        q = int(self._search(d, xs, ys, ny, np.array([mid], np.int64))[0])
        b.spawn()
        self.cilkmerge(d, xs, xs + mid, ys, ys + q, os_)
        b.ret()
        b.spawn()
        self.cilkmerge(d, xs + mid, xe, ys + q, ye, os_ + mid + q)
        b.ret()
        b.sync()

    def pmerge(self, lo: int, h: int, m: int, d: int) -> None:
        b = self.b
        n = h + m
        k = min(-(-n // self.merge_grain), h)
        if k > 1:
            p = (np.arange(1, k, dtype=np.int64) * h) // k
            q = self._search(d, lo, lo + h, m, p)
            pl = np.concatenate([[0], p, [h]]).astype(np.int64)
            ql = np.concatenate([[0], q, [m]]).astype(np.int64)
        else:
            pl = np.array([0, h], np.int64)
            ql = np.array([0, m], np.int64)
        ls, le = lo + pl[:-1], lo + pl[1:]
        rs, re_ = lo + h + ql[:-1], lo + h + ql[1:]
        os_ = lo + pl[:-1] + ql[:-1]
        self._merge_group(d, ls, le, rs, re_, os_, spawn=k > 1)
        b.sync()

    def _merge_group(self, d, ls, le, rs, re_, os_, spawn: bool = False) -> None:
        """Emit the serial merges of chunk pairs ``(ls:le, rs:re_) -> os_``, each spawned
        (``spawn``) or in the current strand."""
        b = self.b
        dst, src = self.mem[d & 1], self.mem[(d + 1) & 1]
        dbase, sbase = self.base[d & 1], self.base[(d + 1) & 1]
        k = len(ls)
        size = (le - ls) + (re_ - rs)
        c = 0
        while c < k:
            # a group of chunks holding about _MERGE_BATCH keys
            e = min(k, c + max(1, int(np.searchsorted(np.cumsum(size[c:]), _MERGE_BATCH))))
            cap = 3 * int(size[c:e].sum())
            addr = np.empty(cap, np.uint64)
            gap = np.empty(cap, np.uint32)
            write = np.empty(cap, np.bool_)
            off = np.empty(e - c + 1, np.int64)
            _k.merge_chunks(
                src,
                dst,
                ls[c:e],
                le[c:e],
                rs[c:e],
                re_[c:e],
                os_[c:e],
                sbase,
                dbase,
                self.es,
                self.C,
                addr,
                gap,
                write,
                off,
            )
            for t in range(e - c):
                a, z = int(off[t]), int(off[t + 1])
                if spawn:
                    b.spawn()
                b.refs(addr[a:z], self.es, write[a:z], gap[a:z])
                if spawn:
                    b.ret()
            c = e


def emit(b, params: dict[str, Any], heap: Heap) -> dict[str, Any]:
    """Write the mergesort program into builder ``b``.

    Parameters
    ----------
    b
        A :class:`~simsched.trace.TraceBuilder` (or anything with its methods).
    params
        Resolved parameters (see :data:`PARAMS`; ``merge_grain`` filled in).
    heap
        The layout from :func:`layout`.

    Returns
    -------
    dict
        ``input``: the keys main wrote; ``output``: the keys left in ``A`` at the end
        (sorted), as the model computed them.
    """
    g = _Generator(b, params, heap)
    g.run()
    if g.next_leaf != len(g.leaf_s):  # pragma: no cover - internal consistency
        raise AssertionError("not every leaf was emitted")
    return {"input": g.keys, "output": g.mem[0]}
