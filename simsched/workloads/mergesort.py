"""Parallel mergesort with parallel merge, on real data (PDF paper 003_e9659a8050adec3d.txt §4.2).

The modelled C program (serial elision, as captured)::

    main:    A = malloc(n*es); tmp = malloc(n*es)
             for i < n: A[i] = random()                         # optional (init=true)
             spawn psort(0, n, depth=0); sync
    psort(lo, n, d):                     # sorts A[lo:lo+n]; result in A if d is even, else tmp
             if n <= grain: msort(lo, n, d); return             # the leaf task sorts serially
             h = n/2
             spawn psort(lo, h, d+1); spawn psort(lo+h, n-h, d+1); sync
             pmerge(src[lo:lo+h], src[lo+h:lo+n] -> dst[lo:lo+n])   # src/dst by d's parity
    pmerge:  k = min(ceil(n / merge_grain), h)
             for c in 1..k-1: p_c = c*h/k; q_c = lower_bound(Y, X[p_c])   # binary search
             for c < k: spawn merge(X[p_{c-1}:p_c], Y[q_{c-1}:q_c] -> dst[p_{c-1}+q_{c-1}:])
             sync                                                 # (k == 1: one serial merge)
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

Fast path: the keys are replaced by their stable ranks (a permutation), which makes every
comparison strict and lets one ``searchsorted`` merge many sorted-run pairs at once: a
left element's output slot is its index plus the number of right keys below it, across all
runs at once when the run id is put in the key's high 32 bits.  Serial leaf tasks are
processed in batches, depth by depth, and their references gathered into post-order (a
node's merge after its children's); the slow per-reference oracle is
``tests/oracles/workloads.py``, and the tests compare the two reference by reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.workloads._common import (
    Heap,
    Param,
    concat_ranges,
    exclusive_cumsum,
    rng,
    seed_param,
)

NAME = "mergesort"
SUMMARY = "parallel mergesort with parallel merge on random keys (PDF paper §4.2)"

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

#: serial elements processed per vectorised leaf batch (bounds the memory of the fast path)
_LEAF_BATCH = 1 << 16
#: output keys per vectorised group of parallel-merge chunks
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


@dataclass
class _Units:
    """References of a set of merge units (one output run each), in unit order."""

    src: np.ndarray  # source position of every output position, in unit order
    out: np.ndarray  # output position, in unit order
    addr: np.ndarray
    gap: np.ndarray
    write: np.ndarray
    nrefs: np.ndarray  # per unit
    ref_off: np.ndarray  # per unit + 1: start of each unit's references


def _merge_units(
    V: np.ndarray,
    ls: np.ndarray,
    le: np.ndarray,
    rs: np.ndarray,
    re_: np.ndarray,
    os_: np.ndarray,
    call_gap: np.ndarray,
    src_base: int,
    dst_base: int,
    es: int,
) -> _Units:
    """Merge sorted runs ``V[ls:le]`` and ``V[rs:re]`` into output ``[os, ...)`` per unit.

    ``V`` holds distinct ranks (< 2**32); every left run lies below its right run.  A unit
    with an empty right run is a plain copy.  Units are given in increasing output order.
    """
    U = len(ls)
    uidx = np.arange(U, dtype=np.int64)
    L = le - ls
    R = re_ - rs
    M = L + R
    l_off = exclusive_cumsum(L)
    r_off = exclusive_cumsum(R)
    o_off = l_off + r_off
    tot = int(o_off[-1])
    lidx = concat_ranges(ls, L)
    ridx = concat_ranges(rs, R)
    luid = np.repeat(uidx, L).astype(np.uint64)
    ruid = np.repeat(uidx, R).astype(np.uint64)
    lkey = (luid << np.uint64(32)) | V[lidx].astype(np.uint64)
    rkey = (ruid << np.uint64(32)) | V[ridx].astype(np.uint64)
    # One global merge: a left key's slot is its index plus the right keys below it (keys of
    # earlier units are all smaller, so the unit offsets come out by themselves).
    out_l = np.arange(len(lidx), dtype=np.int64) + np.searchsorted(rkey, lkey)
    out_r = np.arange(len(ridx), dtype=np.int64) + np.searchsorted(lkey, rkey)
    src = np.empty(tot, np.int64)
    src[out_l] = lidx
    src[out_r] = ridx
    is_left = np.zeros(tot, np.bool_)
    is_left[out_l] = True
    uid = np.repeat(uidx, M)
    k = np.arange(tot, dtype=np.int64)
    cl = np.cumsum(is_left) - is_left  # left keys output before step k (all units)
    cr = k - cl
    live = (cl < l_off[1:][uid]) & (cr < r_off[1:][uid])
    i = (ls - l_off[:-1])[uid] + cl
    j = (rs - r_off[:-1])[uid] + cr
    out = (os_ - o_off[:-1])[uid] + k
    es64 = np.int64(es)
    a = np.empty((tot, 3), np.uint64)
    a[:, 0] = np.where(live, i, src) * es64 + np.int64(src_base)
    a[:, 1] = j * es64 + np.int64(src_base)
    a[:, 2] = out * es64 + np.int64(dst_base)
    g = np.empty((tot, 3), np.uint32)
    g[:, 0] = np.where(live, GAP_MERGE_X, GAP_COPY_R)
    g[:, 1] = GAP_MERGE_Y
    g[:, 2] = np.where(live, GAP_MERGE_W, GAP_COPY_W)
    nonempty = M > 0
    g[o_off[:-1][nonempty], 0] += call_gap[nonempty].astype(np.uint32)
    w = np.zeros((tot, 3), np.bool_)
    w[:, 2] = True
    mask = np.ones((tot, 3), np.bool_)
    mask[:, 1] = live
    lc = exclusive_cumsum(live)
    nrefs = 2 * M + (lc[o_off[1:]] - lc[o_off[:-1]])
    return _Units(src, out, a[mask], g[mask], w[mask], nrefs, exclusive_cumsum(nrefs))


def _split(starts: np.ndarray, sizes: np.ndarray, depths: np.ndarray, stop: int):
    """Halve nodes of size > ``stop`` recursively; return (internal, leaves) node arrays."""
    internal = ([], [], [])
    leaves = ([], [], [])
    s, n, d = starts, sizes, depths
    while len(s):
        m = n > stop
        for acc, arr in zip(leaves, (s, n, d), strict=True):
            acc.append(arr[~m])
        s, n, d = s[m], n[m], d[m]
        for acc, arr in zip(internal, (s, n, d), strict=True):
            acc.append(arr)
        h = n // 2
        s, n, d = np.concatenate([s, s + h]), np.concatenate([h, n - h]), np.concatenate([d, d]) + 1

    def cat(acc):
        return tuple(np.concatenate(x) if x else np.zeros(0, np.int64) for x in acc)

    return cat(internal), cat(leaves)


class _Generator:
    """State of one mergesort run: the builder, the ranks and the leaf-batch cache."""

    def __init__(self, b, p: dict[str, Any], heap: Heap):
        self.b = b
        self.n = p["n"]
        self.grain = p["grain"]
        self.merge_grain = p["merge_grain"]
        self.es = p["elem_size"]
        self.init = p["init"]
        self.keys = input_keys(self.n, self.es, p["seed"])
        order = np.argsort(self.keys, kind="stable")
        self.sorted_keys = self.keys[order]
        # stable ranks: distinct, and ordered exactly as the program's comparisons order keys
        self.V = np.empty(self.n, np.uint32)
        self.V[order] = np.arange(self.n, dtype=np.uint32)
        self.base = (heap.regions["A"].base, heap.regions["tmp"].base)
        # parallel leaves in serial order, cut into batches
        (_, _, _), (s, n, d) = _split(
            np.zeros(1, np.int64), np.full(1, self.n, np.int64), np.zeros(1, np.int64), self.grain
        )
        o = np.argsort(s, kind="stable")
        self.leaf_s, self.leaf_n, self.leaf_d = s[o], n[o], d[o]
        self.next_leaf = 0
        self.batch: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}

    def dst_src(self, depth: int) -> tuple[int, int]:
        """Base addresses (destination, source) of a node at ``depth`` (ping-pong)."""
        return self.base[depth & 1], self.base[(depth + 1) & 1]

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
        """Sort leaves ``first..`` (about ``_LEAF_BATCH`` keys) and lay out their references."""
        cum = np.cumsum(self.leaf_n[first:])
        last = first + int(np.searchsorted(cum, _LEAF_BATCH)) + 1
        last = min(last, len(self.leaf_s))
        rs, rn, rd = self.leaf_s[first:last], self.leaf_n[first:last], self.leaf_d[first:last]
        bs = int(rs[0])
        be = int(rs[-1] + rn[-1])
        (ins, inn, ind), (lfs, lfn, lfd) = _split(rs, rn, rd, 1)
        # every node of the serial recursion, and the units that make references
        ns = np.concatenate([ins, lfs])
        nn = np.concatenate([inn, lfn])
        nd = np.concatenate([ind, lfd])
        blocks_a, blocks_g, blocks_w = [], [], []
        u_end, u_depth, u_blk, u_n = [], [], [], []
        offset = 0
        for depth in range(int(nd.max()), int(nd.min()) - 1, -1):
            sel = (nd == depth) & ((nn >= 2) | (depth & 1 == 1))
            if not sel.any():
                continue
            s, n = ns[sel], nn[sel]
            o = np.argsort(s)
            s, n = s[o], n[o]
            h = n // 2
            call = np.where(n >= 2, CALL_MERGE, 0)
            dst, src = self.dst_src(depth)
            u = _merge_units(self.V, s, s + h, s + h, s + n, s, call, src, dst, self.es)
            self.V[u.out] = self.V[u.src]
            blocks_a.append(u.addr)
            blocks_g.append(u.gap)
            blocks_w.append(u.write)
            u_end.append(s + n)
            u_depth.append(np.full(len(s), depth, np.int64))
            u_blk.append(u.ref_off[:-1] + offset)
            u_n.append(u.nrefs)
            offset += int(u.ref_off[-1])
        width = be - bs
        if blocks_a:
            end = np.concatenate(u_end)
            dep = np.concatenate(u_depth)
            blk = np.concatenate(u_blk)
            nr = np.concatenate(u_n)
            perm = np.lexsort((-dep, end))  # post-order: by end, deeper first
            gather = concat_ranges(blk[perm], nr[perm])
            addr = np.concatenate(blocks_a)[gather]
            gap = np.concatenate(blocks_g)[gather]
            write = np.concatenate(blocks_w)[gather]
            # references made before position x: units ending at or before x
            P = exclusive_cumsum(np.bincount(end - 1 - bs, weights=nr, minlength=width))
        else:
            addr = np.zeros(0, np.uint64)
            gap = np.zeros(0, np.uint32)
            write = np.zeros(0, np.bool_)
            end = np.zeros(0, np.int64)
            P = np.zeros(width + 1, np.int64)
        P = P.astype(np.int64)
        # msort() call overheads: charged to the first reference of the node's subtree, or
        # to the leaf's tail when nothing follows inside the leaf
        leaf_lo = (rs - bs).astype(np.int64)
        leaf_hi = (rs + rn - bs).astype(np.int64)
        at = P[ns - bs]
        leaf = np.searchsorted(leaf_lo, ns - bs, side="right") - 1
        tail = at == P[leaf_hi][leaf]
        if (~tail).any():
            extra = np.bincount(at[~tail], minlength=len(addr) + 1)[: len(addr)]
            gap = gap + (extra * CALL_MSORT).astype(np.uint32)
        tails = np.bincount(leaf[tail], minlength=len(rs)) * CALL_MSORT
        out = {}
        for k in range(len(rs)):
            a, z = int(P[leaf_lo[k]]), int(P[leaf_hi[k]])
            out[first + k] = (addr[a:z], gap[a:z], write[a:z], int(tails[k]))
        return out

    # -- parallel merge -----------------------------------------------------------------
    def pmerge(self, lo: int, h: int, m: int, d: int) -> None:
        b = self.b
        n = h + m
        dst, src = self.dst_src(d)
        k = min(-(-n // self.merge_grain), h)
        one = np.ones(1, np.int64)
        if k == 1:
            u = _merge_units(
                self.V,
                lo * one,
                (lo + h) * one,
                (lo + h) * one,
                (lo + n) * one,
                lo * one,
                CALL_MERGE * one,
                src,
                dst,
                self.es,
            )
            b.refs(u.addr, self.es, u.write, u.gap)
            self.V[u.out] = self.V[u.src]
            return
        p = (np.arange(1, k, dtype=np.int64) * h) // k
        q = self.split_search(lo, h, m, p, src)
        pl = np.concatenate([[0], p, [h]]).astype(np.int64)
        ql = np.concatenate([[0], q, [m]]).astype(np.int64)
        ls, le = lo + pl[:-1], lo + pl[1:]
        rs, re_ = lo + h + ql[:-1], lo + h + ql[1:]
        os_ = lo + pl[:-1] + ql[:-1]
        call = np.full(k, CALL_MERGE, np.int64)
        new_vals = np.empty(n, np.uint32)
        osz = np.diff(np.concatenate([os_, [lo + n]]))
        c = 0
        while c < k:
            # a group of chunks holding about _MERGE_BATCH keys
            e = c + max(1, int(np.searchsorted(np.cumsum(osz[c:]), _MERGE_BATCH)))
            e = min(e, k)
            u = _merge_units(
                self.V,
                ls[c:e],
                le[c:e],
                rs[c:e],
                re_[c:e],
                os_[c:e],
                call[c:e],
                src,
                dst,
                self.es,
            )
            new_vals[u.out - lo] = self.V[u.src]
            for t in range(e - c):
                a, z = int(u.ref_off[t]), int(u.ref_off[t + 1])
                b.spawn()
                b.refs(u.addr[a:z], self.es, u.write[a:z], u.gap[a:z])
                b.ret()
            c = e
        b.sync()
        self.V[lo : lo + n] = new_vals

    def split_search(self, lo: int, h: int, m: int, p: np.ndarray, src: int) -> np.ndarray:
        """Binary searches of ``X[p_c]`` in ``Y``: emit their references, return the ``q_c``."""
        X = self.V[lo : lo + h]
        Y = self.V[lo + h : lo + h + m]
        x = X[p]
        a = np.zeros(len(p), np.int64)
        z = np.full(len(p), m, np.int64)
        probes = []
        while True:
            act = a < z
            if not act.any():
                break
            mid = (a + z) >> 1
            probes.append(np.where(act, mid, -1))
            less = Y[np.minimum(mid, m - 1)] < x
            a = np.where(act & less, mid + 1, a)
            z = np.where(act & ~less, mid, z)
        P = np.stack(probes, axis=1) if probes else np.zeros((len(p), 0), np.int64)
        es = np.int64(self.es)
        addr = np.empty((len(p), 1 + P.shape[1]), np.int64)
        addr[:, 0] = src + (lo + p) * es
        addr[:, 1:] = src + (lo + h + P) * es
        gap = np.full(addr.shape, GAP_PROBE, np.uint32)
        gap[:, 0] = GAP_SPLIT
        mask = np.ones(addr.shape, np.bool_)
        mask[:, 1:] = P >= 0
        self.b.refs(addr[mask].astype(np.uint64), self.es, False, gap[mask])
        return a


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
    return {"input": g.keys, "output": g.sorted_keys[g.V]}
