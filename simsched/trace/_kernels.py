"""Numba kernels of the trace chunk codec (private; see ``simsched.trace.format``).

A chunk's payload is three columns laid out one after the other:

* addresses as zig-zag encoded deltas from the previous address (the first one from 0),
  stored in ``wa`` bytes per value (4 or 8) and byte-shuffled: all first bytes, then all
  second bytes, ...  Deltas of real programs are small, so the high byte planes are runs
  of zeros that zstd removes almost for free;
* one byte per reference: size in the low 7 bits, write flag in bit 7;
* instruction gaps in ``wg`` bytes per value (1, 2 or 4), byte-shuffled the same way.

Encoding and decoding are single fused passes, which is what lets a reader stream more than
100 M references per second on one core.

:func:`_ref_fault` is the one definition of a valid reference (the rule every writer and
reader of traces applies, through ``simsched.trace.format.check_refs``); checking a decoded
chunk with it costs about a twentieth of decoding it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: references must lie below 2**ADDRESS_BITS (the memory model's virtual address space)
ADDRESS_BITS = 48
_LIMIT = np.uint64(1 << ADDRESS_BITS)

#: what is wrong with a reference (``_ref_fault``'s result)
REF_OK, REF_BAD_SIZE, REF_BAD_ADDRESS, REF_WRAPS = 0, 1, 2, 3


@njit(cache=True, nogil=True, inline="always")
def _ref_fault(addr, size, max_size):
    """Why the reference of ``size`` bytes at ``addr`` is invalid, or REF_OK.

    Valid: 1 <= size <= max_size and every byte below 2**ADDRESS_BITS (``addr + size``
    cannot overflow once both earlier tests passed, since max_size < 2**ADDRESS_BITS).
    """
    a = np.uint64(addr)
    s = np.uint64(size)
    if s == 0 or s > np.uint64(max_size):
        return REF_BAD_SIZE
    if a >= _LIMIT:
        return REF_BAD_ADDRESS
    if a + s > _LIMIT:
        return REF_WRAPS
    return REF_OK


@njit(cache=True, nogil=True)
def _first_bad_ref(addr, size, max_size):
    """(index, fault) of the first invalid reference, or (-1, REF_OK)."""
    for i in range(addr.shape[0]):
        f = _ref_fault(addr[i], size[i], max_size)
        if f != REF_OK:
            return i, f
    return -1, REF_OK


@njit(cache=True, nogil=True)
def _max_zigzag(addr, prev):
    m = np.uint64(0)
    p = prev
    for i in range(addr.shape[0]):
        a = addr[i]
        d = np.int64(a - p)
        z = np.uint64((d << 1) ^ (d >> 63))
        if z > m:
            m = z
        p = a
    return m


@njit(cache=True, nogil=True)
def _encode(addr, sizew, gap, wa, wg, out):
    """Fill ``out`` (uint8, n*(wa+1+wg)) with the shuffled columns of one chunk."""
    n = addr.shape[0]
    p = np.uint64(0)
    for i in range(n):
        a = addr[i]
        d = np.int64(a - p)
        z = np.uint64((d << 1) ^ (d >> 63))
        for k in range(wa):
            out[k * n + i] = np.uint8((z >> np.uint64(8 * k)) & np.uint64(0xFF))
        p = a
    base = wa * n
    for i in range(n):
        out[base + i] = sizew[i]
    base += n
    for i in range(n):
        g = np.uint32(gap[i])
        for k in range(wg):
            out[base + k * n + i] = np.uint8((g >> np.uint32(8 * k)) & np.uint32(0xFF))


@njit(cache=True, nogil=True)
def _decode(buf, n, wa, wg, addr, size, write, gap):
    """Inverse of :func:`_encode` into preallocated output arrays.

    The common widths are spelled out with one load per byte plane: a loop over a run-time
    width does not vectorise and runs at half the speed.
    """
    p = np.uint64(0)
    if wa == 4:
        b0 = buf[0:n]
        b1 = buf[n : 2 * n]
        b2 = buf[2 * n : 3 * n]
        b3 = buf[3 * n : 4 * n]
        for i in range(n):
            z = (
                np.uint64(b0[i])
                | (np.uint64(b1[i]) << np.uint64(8))
                | (np.uint64(b2[i]) << np.uint64(16))
                | (np.uint64(b3[i]) << np.uint64(24))
            )
            p = p + np.uint64(np.int64(z >> np.uint64(1)) ^ -np.int64(z & np.uint64(1)))
            addr[i] = p
    else:
        # Plane by plane into ``addr``, then the prefix sum: a byte loop inside the
        # reference loop neither vectorises nor streams (2.5x slower on a chunk of 2^20).
        for i in range(n):
            addr[i] = np.uint64(buf[i])
        for k in range(1, 8):
            plane = buf[k * n : (k + 1) * n]
            shift = np.uint64(8 * k)
            for i in range(n):
                addr[i] |= np.uint64(plane[i]) << shift
        for i in range(n):
            z = addr[i]
            p = p + np.uint64(np.int64(z >> np.uint64(1)) ^ -np.int64(z & np.uint64(1)))
            addr[i] = p
    base = wa * n
    for i in range(n):
        b = buf[base + i]
        size[i] = b & np.uint8(0x7F)
        write[i] = (b & np.uint8(0x80)) != 0
    base += n
    if wg == 1:
        for i in range(n):
            gap[i] = buf[base + i]
    elif wg == 2:
        for i in range(n):
            gap[i] = np.uint32(buf[base + i]) | (np.uint32(buf[base + n + i]) << np.uint32(8))
    else:
        for i in range(n):
            gap[i] = (
                np.uint32(buf[base + i])
                | (np.uint32(buf[base + n + i]) << np.uint32(8))
                | (np.uint32(buf[base + 2 * n + i]) << np.uint32(16))
                | (np.uint32(buf[base + 3 * n + i]) << np.uint32(24))
            )


@njit(cache=True, nogil=True)
def _span(n, instr, src, dst):
    """Longest path (in instructions) through a DAG whose edges all go forward.

    ``src`` must be sorted; strands are in serial order, which is topological.
    """
    finish = np.zeros(n, dtype=np.int64)
    start = np.zeros(n, dtype=np.int64)
    e = 0
    m = src.shape[0]
    best = np.int64(0)
    for s in range(n):
        f = start[s] + instr[s]
        finish[s] = f
        if f > best:
            best = f
        while e < m and src[e] == s:
            d = dst[e]
            if f > start[d]:
                start[d] = f
            e += 1
    return best
