"""Numba kernel that decodes one version-2 block of the raw capture stream.

A version-2 block (``capture/simsched_raw.h``) stores its records as columns: a meta byte
(REF size and write bit, or an escape to a verbatim 16-byte record), a predictor slot, a
narrow gap (or an escape to a wide one) and the byte planes of the zigzag address deltas.
Each REF's address is the previous address of its slot plus the decoded delta, so the
decoding is a sequential recurrence over the block; this kernel runs it in one pass and
writes the records into the fields of a :data:`simsched.trace.raw.RAW_DTYPE` array.  The
slot table (``last``) is explicit state, carried by the caller from block to block.

The kernel does not raise: it returns an error code and the record index so that the
Python caller (``simsched.trace.raw``) can name the stream and the record in its message.
"""

from __future__ import annotations

import numba as nb
import numpy as np

OK = 0
BAD_META = 1  # a meta byte that is neither a REF code nor the escape
FEW_ESCAPES = 2  # more escape bytes than escaped records, or fewer
FEW_WIDE = 3  # more wide-gap bytes than wide gaps, or fewer

_ESCAPE = 0xFF
_WIDE = 0xFF
_MAX_REF_CODE = 9  # (log2(16) << 1) | 1
_REC_REF = 1


@nb.njit(cache=True, nogil=True)
def decode_block(meta, slot, gap, planes, shifts, esc, wide, last, out):  # pragma: no cover
    """Decode one block into ``out``; return ``(code, record index)``.

    ``esc`` and ``out`` are records viewed as ``(count, 2)`` little-endian u64 words: word 0
    is the address ``a``, word 1 packs ``b | c << 32 | kind << 48 | flags << 56``.
    """
    n = meta.shape[0]
    k = planes.shape[0]
    n_esc = esc.shape[0]
    n_wide = wide.shape[0]
    e = 0
    w = 0
    one = np.uint64(1)
    zero = np.uint64(0)
    kind_ref = np.uint64(_REC_REF) << np.uint64(48)
    # First the deltas, plane by plane (a loop the compiler vectorises), then the
    # sequential pass through the predictors.
    zs = np.zeros(n, np.uint64)
    for j in range(k):
        sh = shifts[j]
        row = planes[j]
        for i in range(n):
            zs[i] |= np.uint64(row[i]) << sh
    for i in range(n):
        m = meta[i]
        if m == _ESCAPE:
            if e >= n_esc:
                return FEW_ESCAPES, i
            out[i, 0] = esc[e, 0]
            out[i, 1] = esc[e, 1]
            e += 1
            continue
        if m > _MAX_REF_CODE:
            return BAD_META, i
        z = zs[i]
        d = (z >> one) ^ (zero - (z & one))
        s = slot[i]
        a = last[s] + d
        last[s] = a
        out[i, 0] = a
        g = gap[i]
        if g == _WIDE:
            if w >= n_wide:
                return FEW_WIDE, i
            b = np.uint64(wide[w])
            w += 1
        else:
            b = np.uint64(g)
        mm = np.uint64(m)
        size = one << (mm >> one)
        out[i, 1] = b | (size << np.uint64(32)) | kind_ref | ((mm & one) << np.uint64(56))
    if e != n_esc:
        return FEW_ESCAPES, n
    if w != n_wide:
        return FEW_WIDE, n
    return OK, n
