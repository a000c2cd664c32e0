"""WS: randomized work stealing (Cilk), PDF paper §3 (003_e9659a8050adec3d.txt).

Every worker owns a deque.  The owner pushes and pops at the top (LIFO); a thief takes
from the bottom of a victim chosen uniformly at random among the job's other cores (the
seeded generator of the run).  At a spawn the policy runs one of the two released strands
and pushes the other: child-first (work-first, Cilk's default) runs the child and pushes
the continuation; ``spawn_policy=parent-first`` (help-first) runs the continuation and
pushes the child.  A strand released by a join or a sync (the frame's continuation) is
run by the worker that released it, as in Cilk.

Costs (``machine.costs``): a push or a pop on the own deque costs ``deque_op`` cycles; a
steal attempt, successful or not, costs ``steal_attempt`` cycles.  A thief that finds
every deque of the job empty sleeps until work is pushed (rather than being simulated
attempt by attempt); the attempts it would have made meanwhile, one per
``steal_attempt`` cycles, are added to ``steal_attempts`` so that the counter means what
it means on a real machine.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

from simsched.errors import ConfigError
from simsched.schedulers.base import EDGE_SPAWN, WAIT, Decision, Scheduler, retry, run


class WorkStealing(Scheduler):
    """Randomized work stealing with per-worker deques (``ws``)."""

    name: ClassVar[str] = "ws"
    aliases: ClassVar[tuple[str, ...]] = ("work-stealing", "cilk")
    randomized: ClassVar[bool] = True
    param_defaults: ClassVar[dict[str, Any]] = {"spawn_policy": "child-first"}

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        """``spawn_policy`` must be child-first or parent-first."""
        if params["spawn_policy"] not in ("child-first", "parent-first"):
            raise ConfigError(
                f"scheduler 'ws': spawn_policy={params['spawn_policy']!r} is not "
                "child-first or parent-first"
            )

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        n = ctx.n_cores_total
        self.deques: list[deque[int]] = [deque() for _ in range(n)]
        self.n_items = 0
        self.child_first = self.params["spawn_policy"] == "child-first"
        self.sleep_since = [-1] * n
        self.counters = {"steal_attempts": 0, "steals": 0, "deque_pushes": 0}
        self._others = {c: [v for v in ctx.cores if v != c] for c in ctx.cores}
        self._dq = ctx.costs.deque_op
        self._sa = ctx.costs.steal_attempt

    def on_start(self, strand: int, now: int) -> None:
        """The first strand goes to the deque of the job's first core."""
        self.deques[self.ctx.cores[0]].append(strand)
        self.n_items += 1
        self.ctx.wake(None)

    def on_finish(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> Decision:
        """Run a released strand (per spawn policy) and push the others, or look for work."""
        nr = len(ready)
        if nr == 0:
            return self.on_idle(core, now)
        if nr == 1:
            return run(ready[0], 0)
        # A spawn released the child (EDGE_SPAWN) and the continuation.
        pick = 0
        for i in range(nr):
            if (kinds[i] == EDGE_SPAWN) == self.child_first:
                pick = i
                break
        dq = self.deques[core]
        for i in range(nr):
            if i != pick:
                dq.append(ready[i])
        pushed = nr - 1
        self.n_items += pushed
        self.counters["deque_pushes"] += pushed
        self.ctx.wake(None)
        return run(ready[pick], self._dq * pushed)

    def on_idle(self, core: int, now: int) -> Decision:
        """Pop the own deque, else make one steal attempt on a random victim."""
        since = self.sleep_since[core]
        if since >= 0:
            # Attempts a spinning thief would have made while every deque was empty.
            if self._sa > 0:
                self.counters["steal_attempts"] += (now - since) // self._sa
            self.sleep_since[core] = -1
        dq = self.deques[core]
        if dq:
            self.n_items -= 1
            return run(dq.pop(), self._dq)
        if self.n_items == 0:
            self.sleep_since[core] = now
            return WAIT
        others = self._others[core]
        victim = others[int(self.rng.integers(len(others)))]
        self.counters["steal_attempts"] += 1
        vdq = self.deques[victim]
        if vdq:
            self.n_items -= 1
            self.counters["steals"] += 1
            return run(vdq.popleft(), self._sa)
        return retry(self._sa)
