"""Decoding ahead: which trace chunks the background decoder works on next.

The core driver (:class:`simsched.engine.cores.ChunkSlots`) decodes trace chunks into
shared rows in background threads while the cores run.  What it decodes, and in which
order, decides whether a core that starts a strand finds its references ready or waits:

* a **ready** strand can be taken by any idle core at any moment (a thief steals the
  oldest strand of a deque), so the chunk of its first reference is wanted first, oldest
  release first;
* a core that reads near the end of chunk *k* of a trace will need chunk *k + 1* when it
  reads on, and so will a core that runs the strands laid out after it: that chunk is
  wanted next (a guess: it waits while a few chunks decoded ahead are unread, so that
  guesses do not push out of the rows chunks that cores come back to);
* at the start of a run every idle core takes one of the first strands to become ready
  at once (a fork-join program's first spawns, stolen one after another), so the chunks
  of those strands are predicted from the DAG (:func:`first_chunks`) and wanted before
  the run begins, behind the strands actually released.

:class:`DecodeQueue` orders these wishes; it holds one entry per chunk, so its size is
bounded by the traces' chunks, and the rows that decoded chunks go to stay those of the
buffer plan.  When and where a chunk is decoded never changes what a core reads.
"""

from __future__ import annotations

import heapq
from typing import Any, Generic, TypeVar

import numpy as np

from simsched.trace.format import EDGE_SPAWN

#: Urgency of the chunk holding a ready strand's first reference: any idle core may take
#: it now.
READY = 0
#: Urgency of the chunks of the strands predicted to become ready first in a run
#: (:func:`first_chunks`): guesses, behind what released strands need.
START = 1
#: Urgency of the chunk after the one a core reads near its end.
NEXT = 2

T = TypeVar("T")


class DecodeQueue(Generic[T]):
    """Chunks wanted ahead, most urgent first and, at equal urgency, oldest wish first.

    Each key is held once, at the most urgent level it was wanted at; a payload (for the
    engine: the trace to decode from) travels with it.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Any]] = []
        self._best: dict[Any, tuple[int, int, T]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._best)

    def __contains__(self, key: object) -> bool:
        return key in self._best

    def want(self, key: Any, urgency: int, payload: T) -> None:
        """Want ``key`` at ``urgency`` (lower is sooner) unless it is already wanted at
        that urgency or a more pressing one."""
        got = self._best.get(key)
        if got is not None and got[0] <= urgency:
            return
        entry = (urgency, self._seq, payload)
        self._seq += 1
        self._best[key] = entry
        heapq.heappush(self._heap, (urgency, entry[1], key))

    def discard(self, key: Any) -> None:
        """Forget ``key`` (it was decoded some other way)."""
        self._best.pop(key, None)

    def urgency(self) -> int | None:
        """The urgency of the most urgent key (None when nothing is wanted)."""
        heap = self._heap
        best = self._best
        while heap:
            u, seq, key = heap[0]
            got = best.get(key)
            if got is not None and got[1] == seq:
                return u
            heapq.heappop(heap)  # superseded or discarded
        return None

    def pop(self) -> tuple[Any, T] | None:
        """The most urgent key and its payload, removed; None when nothing is wanted."""
        if self.urgency() is None:
            return None
        _, _, key = heapq.heappop(self._heap)
        return key, self._best.pop(key)[2]


def first_chunks(trace: Any, limit: int, max_strands: int = 1 << 14) -> list[int]:
    """Chunks holding the first references of the strands that become ready first.

    Strands are taken level by level from the DAG's roots (a strand's level is one more
    than its last predecessor's: the order in which they become ready when every strand
    takes the same time and cores are plenty, and the order in which thieves take the
    first spawns' continuations), in strand order within a level.  A strand's chunk is
    that of the first reference at or after its start: references are laid out in strand
    order, so a strand without references that spawns (a continuation that spawns the
    next half) points where the core that runs it reads next, its child's references.

    Parameters
    ----------
    trace
        An open :class:`~simsched.trace.Trace`.
    limit
        Largest number of chunks returned.
    max_strands
        Strands visited at most (bounds the cost on long serial DAGs).

    Returns
    -------
    list[int]
        Distinct chunk indices, in the order their strands become ready.
    """
    if limit <= 0 or not int(trace.header.n_refs):
        return []
    rs = np.asarray(trace.strands.ref_start, dtype=np.int64)
    n = rs.size - 1
    nrefs = int(trace.header.n_refs)
    src = np.asarray(trace.edges.src, dtype=np.int64)
    dst = np.asarray(trace.edges.dst, dtype=np.int64)
    off = np.searchsorted(src, np.arange(n + 1, dtype=np.int64))
    pred = np.asarray(trace.pred_count, dtype=np.int64).copy()
    first = np.asarray(trace.index["first"], dtype=np.int64)
    # Strands whose core reads references: their own, or (a strand without references
    # that spawns) its child's, laid out right after it.  One without either ends in a
    # sync, and its core reads nothing next.
    reads = (rs[1:] > rs[:-1]) & (rs[:-1] < nrefs)
    spawns = src[np.asarray(trace.edges.kind) == EDGE_SPAWN]
    reads[spawns[rs[spawns] < nrefs]] = True
    level = np.flatnonzero(pred == 0)
    out: list[int] = []
    seen: set[int] = set()
    visited = 0
    while level.size and len(out) < limit and visited < max_strands:
        level = level[: max_strands - visited]
        visited += level.size
        at = rs[level[reads[level]]]
        for k in (np.searchsorted(first, at, side="right") - 1).tolist():
            if k not in seen:
                seen.add(k)
                out.append(k)
                if len(out) >= limit:
                    return out
        lo, hi = off[level], off[level + 1]
        cnt = hi - lo
        if not cnt.sum():
            break
        # the successors' edge positions: lo..hi of every strand of the level
        idx = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
        d = dst[idx]
        np.subtract.at(pred, d, 1)
        level = np.unique(d[pred[d] == 0])
    return out
