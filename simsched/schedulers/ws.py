"""WS: randomized work stealing (Cilk), [PDF07] §3.

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
attempt by attempt); the attempts it would have made meanwhile are added to
``steal_attempts`` (:mod:`simsched.schedulers.deques`) so that the counter means what it
means on a real machine.  A core that leaves the job leaves its deque behind for the
job's thieves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from simsched.errors import ConfigError
from simsched.schedulers.base import EDGE_SPAWN, WAIT, Decision, Scheduler, retry, run
from simsched.schedulers.deques import WorkerDeques


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
        self.counters = {"steal_attempts": 0, "steals": 0, "deque_pushes": 0}
        self.dq = WorkerDeques(ctx.n_cores_total, ctx.costs.steal_attempt, self.counters)
        self.child_first = self.params["spawn_policy"] == "child-first"
        self._others: dict[int, list[int]] = {}
        # Cores that left the job with strands on their deques: thieves still find them.
        self.orphans: set[int] = set()
        self._dq = ctx.costs.deque_op
        self._sa = ctx.costs.steal_attempt

    def others(self, core: int) -> list[int]:
        """The victims ``core`` may choose: the job's other cores, then the deques that
        departed cores left behind (cached until either changes)."""
        o = self._others.get(core)
        if o is None:
            o = [v for v in self.ctx.cores if v != core] + sorted(self.orphans)
            self._others[core] = o
        return o

    def on_start(self, strand: int, now: int) -> None:
        """The first strand goes to the deque of the job's first core."""
        self.dq.push(self.ctx.cores[0], strand)
        self.ctx.wake(None)

    def _pick(self, kinds: Sequence[int]) -> int:
        # At a spawn the child (EDGE_SPAWN) and the continuation are released together.
        for i, k in enumerate(kinds):
            if (k == EDGE_SPAWN) == self.child_first:
                return i
        return 0

    def on_finish(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> Decision:
        """Run a released strand (per spawn policy) and push the others, or look for work."""
        nr = len(ready)
        if nr == 0:
            return self.on_idle(core, now)
        if nr == 1:
            return run(ready[0], 0)
        pick = self._pick(kinds)
        pushed = self.dq.push_all(core, (ready[i] for i in range(nr) if i != pick))
        self.counters["deque_pushes"] += pushed
        self.ctx.wake(None)
        return run(ready[pick], self._dq * pushed)

    def on_depart(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> None:
        """The released strands stay on the departing core's deque (thieves find them)."""
        if ready:
            self.counters["deque_pushes"] += self.dq.push_all(core, ready)
            self.ctx.wake(None)

    def on_cores_changed(self, added: Sequence[int], removed: Sequence[int], now: int) -> None:
        """Victim lists follow the job's cores and the deques departed cores left."""
        self._others.clear()
        for c in removed:
            self.dq.wake(c, now)
            if self.dq.deques[c]:
                self.orphans.add(c)
        self.orphans.difference_update(added)

    def on_idle(self, core: int, now: int) -> Decision:
        """Pop the own deque, else make one steal attempt on a random victim."""
        dq = self.dq
        dq.wake(core, now)
        s = dq.pop(core)
        if s >= 0:
            return run(s, self._dq)
        others = self.others(core)
        if dq.n_items == 0 or not others:
            dq.sleep(core, now)
            return WAIT
        victim = others[int(self.rng.integers(len(others)))]
        s = dq.attempt(victim)
        if victim in self.orphans and not dq.deques[victim]:
            self.orphans.discard(victim)
            self._others.clear()
        if s >= 0:
            return run(s, self._sa)
        return retry(self._sa)
