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

from simsched.trace._kernels import REF_OK, _ref_fault

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


# -- expanding REF, RANGE and GAP records into references ------------------------------------

_REC_RANGE = 2
_REC_GAP = 3
_REGION_MAX = (1 << 32) - 1  # a RANGE's length field, the largest region a record names
_GAP_LIMIT = np.int64(1) << np.int64(32)

EXPAND_OK = 0
EXPAND_BAD_REF = 1  # a REF or RANGE breaks the reference rule (index: the record)
EXPAND_BIG_GAP = 2  # a gap that does not fit 32 bits (index: the record)


@nb.njit
def _fail(status, i):  # pragma: no cover - compiled
    """The result of a failed expansion: why, which record, and empty arrays."""
    e = np.empty(0, np.uint64)
    return (
        status, np.int64(i), e, np.empty(0, np.uint8), np.empty(0, np.uint32),
        np.int64(0), np.int64(0), np.int64(-1),
    )  # fmt: skip


@nb.njit(inline="always")
def _pieces(start, length, piece):
    """Pieces of at most ``piece`` bytes that ``[start, start + length)`` splits into."""
    return (start + length - np.uint64(1)) // piece - start // piece + np.uint64(1)


@nb.njit(cache=True, nogil=True)
def expand_records(words, max_ref, piece):  # pragma: no cover - compiled
    """Expand a run of REF, RANGE and GAP records into references, in one pass each way.

    A REF of 1..``max_ref`` bytes is one reference with its own gap; a larger one, and a
    non-empty RANGE, are split into pieces of at most ``piece`` bytes that do not cross a
    ``piece``-aligned boundary; a GAP adds its instructions to the gap of the next
    reference.  Returns ``(status, index, addr, sizew, gap, trailing, lo, hi)``: the
    references (``sizew`` = size | write << 7), the instructions of GAP records after the
    last reference, and the lowest and highest address referenced; on a bad record the
    status says why and ``index`` names it.

    ``words`` is the records as pairs of little-endian 64-bit words (a record of
    ``RAW_DTYPE`` is the address, then ``b | c << 32 | kind << 48 | flags << 56``): one
    contiguous read per record instead of five strided field reads.
    """
    n = words.shape[0]
    piece_u = np.uint64(piece)
    count = np.int64(0)
    for i in range(n):
        a = words[i, 0]
        w = words[i, 1]
        k = (w >> np.uint64(48)) & np.uint64(0xFF)
        if k == _REC_REF:
            size = (w >> np.uint64(32)) & np.uint64(0xFFFF)
            if _ref_fault(a, size, _REGION_MAX) != REF_OK:
                return _fail(EXPAND_BAD_REF, i)
            count += 1 if size <= max_ref else np.int64(_pieces(a, size, piece_u))
        elif k == _REC_RANGE:
            length = w & np.uint64(0xFFFFFFFF)
            if length > 0:
                if _ref_fault(a, length, _REGION_MAX) != REF_OK:
                    return _fail(EXPAND_BAD_REF, i)
                count += np.int64(_pieces(a, length, piece_u))
    addr = np.empty(count, np.uint64)
    sizew = np.empty(count, np.uint8)
    gap = np.zeros(count, np.uint32)
    lo = np.int64(np.iinfo(np.int64).max)
    hi = np.int64(-1)
    pending = np.int64(0)
    j = 0
    for i in range(n):
        start = words[i, 0]
        word = words[i, 1]
        k = (word >> np.uint64(48)) & np.uint64(0xFF)
        low = np.int64(word & np.uint64(0xFFFFFFFF))
        if k == _REC_GAP:
            pending += low
            continue
        w = np.uint8(0x80) if (word >> np.uint64(56)) & np.uint64(1) else np.uint8(0)
        if k == _REC_REF:
            length = (word >> np.uint64(32)) & np.uint64(0xFFFF)
            g = pending + low
        elif k == _REC_RANGE:
            length = np.uint64(low)
            if length == 0:
                continue
            g = pending
        else:
            continue
        if g >= _GAP_LIMIT:
            return _fail(EXPAND_BIG_GAP, i)
        pending = np.int64(0)
        if np.int64(start) < lo:
            lo = np.int64(start)
        end = start + length - np.uint64(1)
        if np.int64(end) > hi:
            hi = np.int64(end)
        if k == _REC_REF and length <= max_ref:
            addr[j] = start
            sizew[j] = np.uint8(length) | w
            gap[j] = np.uint32(g)
            j += 1
            continue
        gap[j] = np.uint32(g)  # the gap goes to the first piece
        p = start
        stop = start + length
        while p < stop:
            q = (p // piece_u + np.uint64(1)) * piece_u
            if q > stop:
                q = stop
            addr[j] = p
            sizew[j] = np.uint8(q - p) | w
            j += 1
            p = q
    return EXPAND_OK, np.int64(-1), addr, sizew, gap, pending, lo, hi
