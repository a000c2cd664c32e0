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
