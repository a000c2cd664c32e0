"""The engine's own events: a heap, and sorted lanes for the core timers.

Entries are tuples ``(time, kind, sequence, a, b)`` (:mod:`simsched.engine.replay`:
``EV_QUANTUM`` and ``EV_TIMER``), taken smallest first; the sequence number makes every
entry distinct, so the order in which they are taken is fixed by the entries alone, not
by how they are stored.

Under work stealing on many cores most entries are core timers: thieves woken by a push
(a timer at the current cycle) and failed steal attempts (a timer one attempt's price
later), hundreds of thousands per replay on 256 cores, each pushed on and popped off the
heap in Python.  Timers are set at the engine's current cycle plus a delay, the cycle
never goes back, and the sequence numbers grow: the timers of one delay arrive sorted.
Each delay gets its own lane, a FIFO, so such a timer costs an append and a pop from the
left instead of a heap's sifting; the entry first taken is the least of the heap's top
and the lanes' heads.  An entry that would not keep its lane sorted (a core that just
moved is not there before a later cycle, or a cycle set out of turn) goes to the heap,
and so do delays beyond the first :data:`MAX_LANES`: the entries, and the order they are
taken in, are the same as with one heap.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

#: Distinct delays given a lane (steal prices by distance, and waking at once); timers of
#: other delays go to the heap.
MAX_LANES = 8

Entry = tuple[int, int, int, int, int]


class EventQueue:
    """The engine's heap and timer lanes (see the module).

    Attributes
    ----------
    heap
        A heap of entries (``heapq``).
    lanes
        The lanes, each a deque of entries in increasing order.
    by_delay
        The lane of each delay.
    """

    __slots__ = ("heap", "lanes", "by_delay")

    def __init__(self) -> None:
        self.heap: list[Entry] = []
        self.lanes: list[deque[Entry]] = []
        self.by_delay: dict[int, deque[Entry]] = {}

    def __bool__(self) -> bool:
        return bool(self.heap) or any(self.lanes)

    def __len__(self) -> int:
        return len(self.heap) + sum(len(q) for q in self.lanes)

    def push(self, entry: Entry) -> None:
        """Add ``entry`` to the heap."""
        heapq.heappush(self.heap, entry)

    def push_timer(self, entry: Entry, delay: int) -> None:
        """Add ``entry``, a timer set ``delay`` cycles ahead of the current cycle, to its
        lane when it keeps the lane sorted, else to the heap."""
        lane = self.by_delay.get(delay)
        if lane is None:
            if len(self.lanes) >= MAX_LANES:
                heapq.heappush(self.heap, entry)
                return
            lane = self.by_delay[delay] = deque()
            self.lanes.append(lane)
        if not lane or lane[-1] < entry:
            lane.append(entry)
        else:
            heapq.heappush(self.heap, entry)

    def top(self) -> tuple[Entry | None, Any]:
        """The least entry (None: no entry) and where it is: the lane, or None for the
        heap (:meth:`pop`)."""
        heap = self.heap
        best = heap[0] if heap else None
        src = None
        for q in self.lanes:
            if q and (best is None or q[0] < best):
                best = q[0]
                src = q
        return best, src

    def pop(self, src: Any) -> Entry:
        """Remove and return the least entry, found in ``src`` by :meth:`top`."""
        if src is None:
            return heapq.heappop(self.heap)
        return src.popleft()
