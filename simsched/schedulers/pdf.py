"""PDF: parallel depth-first scheduling, [PDF07] §3.

One ready set for the job, ordered by serial (1DF) number, which is the strand number of
a simsched trace (strands are numbered in serial order, docs/architecture.md §4.1).  A core that
finishes a strand puts every strand this released into the ready set — at a spawn both
the child and the continuation, after a join or sync the frame's continuation — and then
takes the earliest strand of the set, which is the one the sequential program would have
run first (PDF paper §3: "it is assigned the ready-to-execute task that the sequential
program would have executed the earliest").  At a spawn that is the child (its first
strand precedes the continuation in serial order), unless an earlier strand is waiting.
An idle core takes the earliest strand; with the set empty it sleeps until strands are
added.

The set is a binary heap (``heapq``): push and pop-min in O(log n), which is all PDF
needs.  Costs: every strand entering the set and every take is one ``queue_op``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import ClassVar

from simsched.schedulers.base import WAIT, Decision, Scheduler, run


class ParallelDepthFirst(Scheduler):
    """Parallel depth-first scheduling with one global ready set (``pdf``)."""

    name: ClassVar[str] = "pdf"
    aliases: ClassVar[tuple[str, ...]] = ("parallel-depth-first", "1df")
    randomized: ClassVar[bool] = False

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.ready: list[int] = []
        self._q = ctx.costs.queue_op
        self.counters = {"queue_ops": 0}

    def on_start(self, strand: int, now: int) -> None:
        """The first strand enters the ready set."""
        heapq.heappush(self.ready, strand)
        self.ctx.wake(1)

    def on_finish(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> Decision:
        """Add the released strands to the ready set, then take the earliest."""
        nr = len(ready)
        if nr == 0:
            return self.on_idle(core, now)
        rs = self.ready
        for s in ready:
            heapq.heappush(rs, s)
        self.counters["queue_ops"] += nr + 1
        s = heapq.heappop(rs)
        if rs:
            self.ctx.wake(len(rs))
        return run(s, self._q * (nr + 1))

    def on_depart(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> None:
        """The released strands enter the ready set for the job's other cores."""
        for s in ready:
            heapq.heappush(self.ready, s)
        self.counters["queue_ops"] += len(ready)
        if ready:
            self.ctx.wake(len(self.ready))

    def on_idle(self, core: int, now: int) -> Decision:
        """Take the earliest ready strand, or sleep."""
        if self.ready:
            self.counters["queue_ops"] += 1
            return run(heapq.heappop(self.ready), self._q)
        return WAIT
