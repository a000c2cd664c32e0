"""The control plane: job arrivals and the processor controller's quantum, as SimPy processes.

The control plane's events are few (one per arrival, one per quantum) and naturally
written as processes ("wait until the next arrival, admit it, reallocate"), which is what
SimPy is for; the per-reference work stays in Numba and the per-strand work in the
engine's own heap.  The SimPy environment's clock *is* the engine's cycle clock: the
engine never lets it run on its own, it asks :meth:`simpy.Environment.peek` for the time
of the next control event, runs the cores up to it, and then calls
:meth:`simpy.Environment.step`, so control events interleave with strand completions in
global time order (at equal times, control events first).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from itertools import groupby
from typing import Any, Protocol

import simpy


class Driven(Protocol):
    """What the control plane calls on the replay (and nothing else of it)."""

    def arrive(self, now: int, jids: Sequence[int]) -> None:
        """Jobs ``jids`` arrive at ``now``."""
        ...

    def quantum_boundary(self, now: int) -> None:
        """The controller's quantum ended at ``now``."""
        ...


class ControlPlane:
    """Arrivals and controller quanta of one replay.

    Parameters
    ----------
    replay
        The :class:`~simsched.engine.replay.Replay` (``arrive`` and ``quantum_boundary``
        are called on it; the control plane writes none of its state).
    specs
        The jobs (:class:`~simsched.engine.replay.JobSpec`), each with an ``arrival`` cycle.
    quantum
        The controller's quantum in cycles (0: no quantum process).
    """

    def __init__(self, replay: Driven, specs: Sequence[Any], quantum: int) -> None:
        self.replay = replay
        self.env = simpy.Environment(initial_time=0)
        order = sorted(range(len(specs)), key=lambda j: (int(specs[j].arrival), j))
        self._groups = [
            (t, list(js)) for t, js in groupby(order, key=lambda j: int(specs[j].arrival))
        ]
        self.arrivals_left = len(specs)
        self.env.process(self._arrivals())
        self.periodic = 0
        if quantum > 0:
            self.periodic = 1
            self.env.process(self._quanta(int(quantum)))

    def _arrivals(self) -> Generator[simpy.Event, Any, None]:
        for t, jids in self._groups:
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            self.arrivals_left -= len(jids)
            self.replay.arrive(int(self.env.now), jids)

    def _quanta(self, q: int) -> Generator[simpy.Event, Any, None]:
        while True:
            yield self.env.timeout(q)
            self.replay.quantum_boundary(int(self.env.now))
