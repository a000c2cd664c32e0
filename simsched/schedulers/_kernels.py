"""Numba kernels of the scheduling policies.

:func:`_eq1_ranges` computes LAWS Eq. 1's data range of every frame ([LAWS15] §3.2): a
frame's range is its parent's, cut into the parent's ``b`` equal parts.  It is a
recurrence along the frame tree, which NumPy can only follow one tree level at a time,
and a Python loop over the frames of a published-size trace (409,401 frames for a
200-step heat) took about 2 s of every LAWS, LAWS-NC and CATS replay.  The loop here is
the same arithmetic in the same order, so the ranges are the same to the bit
(tests/schedulers/test_policies.py compares them with the plain loop).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _eq1_ranges(parent, iteration, spawn_index, branching, out):  # type: ignore[no-untyped-def]
    """Fill ``out`` (float64, ``(n, 2)``) with each frame's ``[lo, hi)``; parents precede
    their children in frame order.  A frame with no parent, or whose parent is in another
    iteration, processes the whole dataset ``[0, 1)``."""
    for f in range(parent.shape[0]):
        p = np.int64(parent[f])
        if p < 0 or iteration[p] != iteration[f]:
            out[f, 0] = 0.0
            out[f, 1] = 1.0
            continue
        b = max(np.int64(branching[f]), np.int64(1))
        lo = out[p, 0]
        hi = out[p, 1]
        w = (hi - lo) / np.float64(b)
        i = np.int64(spawn_index[f])
        out[f, 0] = lo + np.float64(i) * w
        out[f, 1] = lo + np.float64(i + 1) * w
