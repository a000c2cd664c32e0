"""Numba kernels of the workload generators (private; called from the generator modules).

The kernels run the modelled program's inner loops on the real data and write one entry per
memory reference into preallocated arrays (address, instruction gap, write flag), so a
generator emits millions of references per call to :meth:`TraceBuilder.refs` without a
Python loop per reference.  They follow the oracles in ``tests/oracles/workloads.py``
statement by statement, and the tests compare the two reference by reference.

Conventions: ``C`` is an int64 array of the instruction-model constants, indexed by the
``K_*`` names below (the generator fills it from its module constants, so the model is
defined in one place); ``st`` is the explicit emission state ``[next free slot, pending
instructions]``: instructions wait in ``st[1]`` and are added to the gap of the next
reference, exactly as :meth:`TraceBuilder.instr` does.

The last kernels count what those write without writing it (mergesort's
``references(params)``): a merge's count depends on its runs only through their largest keys
and how many keys lie beyond them, so they scan or binary-search runs instead of merging.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# indices into the constant array C (mergesort)
K_GAP_MERGE_X = 0
K_GAP_MERGE_Y = 1
K_GAP_MERGE_W = 2
K_GAP_COPY_R = 3
K_GAP_COPY_W = 4
K_CALL_MERGE = 5
K_CALL_MSORT = 6
K_GAP_SPLIT = 7
K_GAP_PROBE = 8
N_CONSTANTS = 9


@njit(cache=True, inline="always")
def _put(addr, gap, wr, st, a, g, w):
    p = st[0]
    addr[p] = a
    gap[p] = g + st[1]
    wr[p] = w
    st[1] = 0
    st[0] = p + 1


@njit(cache=True)
def _merge(src, dst, i, ie, j, je, k, sbase, dbase, es, C, addr, gap, wr, st):
    """merge(): runs src[i:ie] and src[j:je] into dst[k:], then copy the rest."""
    st[1] += C[K_CALL_MERGE]
    gx, gy, gw = C[K_GAP_MERGE_X], C[K_GAP_MERGE_Y], C[K_GAP_MERGE_W]
    while i < ie and j < je:
        _put(addr, gap, wr, st, sbase + i * es, gx, False)
        _put(addr, gap, wr, st, sbase + j * es, gy, False)
        _put(addr, gap, wr, st, dbase + k * es, gw, True)
        if src[i] <= src[j]:
            dst[k] = src[i]
            i += 1
        else:
            dst[k] = src[j]
            j += 1
        k += 1
    cr, cw = C[K_GAP_COPY_R], C[K_GAP_COPY_W]
    while i < ie:
        _put(addr, gap, wr, st, sbase + i * es, cr, False)
        _put(addr, gap, wr, st, dbase + k * es, cw, True)
        dst[k] = src[i]
        i += 1
        k += 1
    while j < je:
        _put(addr, gap, wr, st, sbase + j * es, cr, False)
        _put(addr, gap, wr, st, dbase + k * es, cw, True)
        dst[k] = src[j]
        j += 1
        k += 1


@njit(cache=True)
def sort_leaves(A, T, starts, sizes, depths, base_a, base_t, es, C, addr, gap, wr, off, tail):
    """Serial msort() of each leaf; leaf ``L``'s references go to ``off[L]:off[L+1]``.

    A node at an even depth leaves its keys in ``A``, at an odd depth in ``T``; a node of
    one key at an odd depth copies it from ``A`` to ``T``.  ``tail[L]`` receives the
    instructions left pending at the end of leaf ``L`` (call overheads after its last
    reference).
    """
    st = np.zeros(2, np.int64)
    cap = 3 * 66
    s_lo = np.empty(cap, np.int64)
    s_n = np.empty(cap, np.int64)
    s_d = np.empty(cap, np.int64)
    s_state = np.empty(cap, np.int64)
    call = C[K_CALL_MSORT]
    for leaf in range(starts.shape[0]):
        off[leaf] = st[0]
        st[1] = 0
        top = 0
        s_lo[0], s_n[0], s_d[0], s_state[0] = starts[leaf], sizes[leaf], depths[leaf], 0
        top = 1
        while top > 0:
            top -= 1
            lo, n, d, state = s_lo[top], s_n[top], s_d[top], s_state[top]
            h = n // 2
            if state == 0:
                st[1] += call
                if n == 1:
                    if d & 1:
                        _put(addr, gap, wr, st, base_a + lo * es, C[K_GAP_COPY_R], False)
                        _put(addr, gap, wr, st, base_t + lo * es, C[K_GAP_COPY_W], True)
                        T[lo] = A[lo]
                    continue
                # the merge after both halves, then the right half, then the left (LIFO)
                s_lo[top], s_n[top], s_d[top], s_state[top] = lo, n, d, 1
                s_lo[top + 1], s_n[top + 1], s_d[top + 1], s_state[top + 1] = (
                    lo + h,
                    n - h,
                    d + 1,
                    0,
                )
                s_lo[top + 2], s_n[top + 2], s_d[top + 2], s_state[top + 2] = lo, h, d + 1, 0
                top += 3
            elif d & 1:
                _merge(
                    A, T, lo, lo + h, lo + h, lo + n, lo, base_a, base_t, es, C, addr, gap, wr, st
                )
            else:
                _merge(
                    T, A, lo, lo + h, lo + h, lo + n, lo, base_t, base_a, es, C, addr, gap, wr, st
                )
        tail[leaf] = st[1]
    off[starts.shape[0]] = st[0]


@njit(cache=True)
def merge_chunks(src, dst, ls, le, rs, re, os, sbase, dbase, es, C, addr, gap, wr, off):
    """One merge() per chunk ``c``; its references go to ``off[c]:off[c+1]``."""
    st = np.zeros(2, np.int64)
    for c in range(ls.shape[0]):
        off[c] = st[0]
        st[1] = 0
        _merge(src, dst, ls[c], le[c], rs[c], re[c], os[c], sbase, dbase, es, C, addr, gap, wr, st)
    off[ls.shape[0]] = st[0]


@njit(cache=True)
def split_search(S, xlo, ylo, m, p, sbase, es, C, addr, gap, wr, q):
    """For each split point: read ``S[xlo + p[c]]``, lower_bound it in ``S[ylo:ylo+m]``.

    Returns the number of references written; ``q[c]`` receives each search's result.
    """
    st = np.zeros(2, np.int64)
    for c in range(p.shape[0]):
        x = S[xlo + p[c]]
        _put(addr, gap, wr, st, sbase + (xlo + p[c]) * es, C[K_GAP_SPLIT], False)
        a = 0
        z = m
        while a < z:
            mid = (a + z) >> 1
            _put(addr, gap, wr, st, sbase + (ylo + mid) * es, C[K_GAP_PROBE], False)
            if S[ylo + mid] < x:
                a = mid + 1
            else:
                z = mid
        q[c] = a
    return st[0]


@njit(cache=True)
def _tail(keys, xs, xe, ys, ye):
    """Keys that merge() copies after its main loop when merging the runs of the keys of
    ``keys[xs:xe]`` and ``keys[ys:ye]`` once sorted (in any order here: only their largest
    key and a count matter).  The main loop takes X's key on a tie, so X runs out first
    when its largest key is at most Y's, leaving Y's keys not below it; else Y runs out,
    leaving X's keys above Y's largest.  An empty run leaves the other whole."""
    if xs == xe or ys == ye:
        return (xe - xs) + (ye - ys)
    xmax = keys[xs]
    for i in range(xs + 1, xe):
        xmax = max(xmax, keys[i])
    ymax = keys[ys]
    for j in range(ys + 1, ye):
        ymax = max(ymax, keys[j])
    left = 0
    if xmax <= ymax:
        for j in range(ys, ye):
            left += keys[j] >= xmax
    else:
        for i in range(xs, xe):
            left += keys[i] > ymax
    return left


@njit(cache=True)
def _msort_refs(keys, lo, n, d):
    """References of msort() of the ``n`` keys from ``lo`` at depth ``d`` (sort_leaves)."""
    if n == 1:
        return 2 if d & 1 else 0  # a single key at an odd depth is copied into T
    h = n // 2
    # a merge of n keys: 3 references a step of its main loop, 2 a key of its copy loops
    own = 3 * n - _tail(keys, lo, lo + h, lo + h, lo + n)
    return own + _msort_refs(keys, lo, h, d + 1) + _msort_refs(keys, lo + h, n - h, d + 1)


@njit(cache=True)
def leaf_refs_total(keys, starts, sizes, depths):
    """References sort_leaves() writes for these leaves of the input ``keys``, counted
    without sorting or writing them (mergesort's reference count)."""
    total = 0
    for leaf in range(starts.shape[0]):
        total += _msort_refs(keys, starts[leaf], sizes[leaf], depths[leaf])
    return total


@njit(cache=True)
def _run_tail(x, xs, xe, y, ys, ye):
    """As :func:`_tail`, for the sorted runs ``x[xs:xe]`` and ``y[ys:ye]``: found by
    binary search instead of counted."""
    if xs == xe or ys == ye:
        return (xe - xs) + (ye - ys)
    xmax, ymax = x[xe - 1], y[ye - 1]
    if xmax <= ymax:
        return ye - max(np.searchsorted(y, xmax, side="left"), ys)
    return xe - max(np.searchsorted(x, ymax, side="right"), xs)


@njit(cache=True)
def _probes(m, q):
    """Probes of split_search()'s loop over ``m`` keys for a key whose lower bound is
    ``q``: it goes right exactly when ``mid < q``."""
    a, z, count = 0, m, 0
    while a < z:
        mid = (a + z) >> 1
        count += 1
        if mid < q:
            a = mid + 1
        else:
            z = mid
    return count


@njit(cache=True)
def pmerge_refs(x, y, merge_grain):
    """References pmerge() writes merging the sorted runs ``x`` and ``y`` (its split
    searches, then one merge() per chunk), counted without merging them."""
    h, m = x.shape[0], y.shape[0]
    k = min((h + m + merge_grain - 1) // merge_grain, h)
    total = 3 * (h + m)  # 3 a step of a merge's main loop, less 1 a key it copies
    p0, q0 = 0, 0
    for c in range(1, k + 1):
        p1, q1 = h, m
        if c < k:
            p1 = c * h // k
            q1 = np.searchsorted(y, x[p1], side="left")
            total += 1 + _probes(m, q1)
        total -= _run_tail(x, p0, p1, y, q0, q1)
        p0, q0 = p1, q1
    return total


@njit(cache=True)
def cilkmerge_refs(x, xs, xe, y, ys, ye, merge_grain):
    """References cilkmerge() writes merging the sorted runs ``x[xs:xe]`` and
    ``y[ys:ye]``, counted without merging them."""
    if xe - xs < ye - ys:
        return cilkmerge_refs(y, ys, ye, x, xs, xe, merge_grain)
    nx, ny = xe - xs, ye - ys
    if nx + ny <= merge_grain or nx < 2:
        return 3 * (nx + ny) - _run_tail(x, xs, xe, y, ys, ye)
    mid = xs + nx // 2
    q = ys + np.searchsorted(y[ys:ye], x[mid], side="left")
    own = 1 + _probes(ny, q - ys)
    left = cilkmerge_refs(x, xs, mid, y, ys, q, merge_grain)
    return own + left + cilkmerge_refs(x, mid, xe, y, q, ye, merge_grain)
