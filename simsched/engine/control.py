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
        The jobs (:class:`~simsched.engine.job.JobSpec`), each with an ``arrival`` cycle.
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
        self._next_group = 0  # index in _groups of the next arrivals
        self.env.process(self._arrivals())
        self.periodic = 0
        if quantum > 0:
            self.periodic = 1
            self.env.process(self._quanta(int(quantum)))

    def release(self) -> None:
        """Drop the environment and the link to the replay (the run is over): both are
        in reference cycles that would otherwise wait for the cyclic collector."""
        # SimPy binds its event classes to the environment instance (a self-cycle) and
        # keeps the suspended processes, whose frames hold this object.
        self.env.__dict__.clear()
        del self.replay

    def _arrivals(self) -> Generator[simpy.Event, Any, None]:
        for t, jids in self._groups:
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            self.arrivals_left -= len(jids)
            self._next_group += 1
            self.replay.arrive(int(self.env.now), jids)

    def _quanta(self, q: int) -> Generator[simpy.Event, Any, None]:
        while True:
            yield self.env.timeout(q)
            # Arrivals come first at one cycle (docs/engine.md §3).  SimPy orders events of
            # one time by when they were scheduled, and an arrival scheduled after this
            # quantum (its predecessor arrived since the last one) would come second: the
            # quantum waits a step of the same cycle, behind the arrival already queued.
            g = self._next_group
            if g < len(self._groups) and self._groups[g][0] == self.env.now:
                yield self.env.timeout(0)
            self.replay.quantum_boundary(int(self.env.now))
