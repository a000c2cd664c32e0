"""WS: randomized work stealing (Cilk), [PDF07] §3.

Every worker owns a deque.  The owner pushes and pops at the top (LIFO); a thief takes
from the bottom of a victim chosen uniformly at random among the job's other cores (the
seeded generator of the run).  At a spawn the policy runs one of the two released strands
and pushes the other: child-first (work-first, Cilk's default) runs the child and pushes
the continuation; ``spawn_policy=parent-first`` (help-first) runs the continuation and
pushes the child.  A strand released by a join or a sync (the frame's continuation) is
run by the worker that released it, as in Cilk.

Costs (``machine.costs``): a push or a pop on the own deque costs ``deque_op`` cycles; a
steal attempt, successful or not, is priced by distance like every policy's
(``ctx.steal_cost``): ``steal_attempt`` on a deque of the thief's socket,
``remote_pool_op`` (plus ``remote_hop`` per further link) on another socket's.  A thief
that finds every deque of the job empty sleeps until work is pushed (rather than being
simulated attempt by attempt); the attempts it would have made meanwhile — one per mean
attempt price over its victims — are added to ``steal_attempts``
(:mod:`simsched.schedulers.deques`) so that the counter means what it means on a real
machine.  A core that leaves the job leaves its deque behind for the
job's thieves.

**Falling back to WS.**  Two policies schedule a program as plain work stealing when
their paper says so — CAB with ``BL = 0`` ([CAB11] Algorithm II step 2, §V-D) and
LAWS/CATS on a CPU-bound program ([LAWS15] §6.5).  Both do it through
:func:`ws_fallback`, one WS instance that shares the policy's counters and, when given,
its deques.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from typing import Any, ClassVar

from simsched.errors import contract_error
from simsched.schedulers.base import (
    EDGE_SPAWN,
    WAIT,
    Decision,
    Param,
    ParamSchema,
    Scheduler,
    SpinPlan,
    Victims,
    mean_of_total,
    retry,
    run,
)
from simsched.schedulers.deques import WorkerDeques


class WorkStealing(Scheduler):
    """Randomized work stealing with per-worker deques (``ws``)."""

    name: ClassVar[str] = "ws"
    aliases: ClassVar[tuple[str, ...]] = ("work-stealing", "cilk")
    randomized: ClassVar[bool] = True
    params_schema: ClassVar[ParamSchema] = ParamSchema(
        spawn_policy=Param(
            "child-first",
            "at a spawn, run the child and push the continuation (child-first, Cilk's "
            "work-first) or the reverse (parent-first, help-first)",
            choices=("child-first", "parent-first"),
        ),
    )

    def __init__(
        self,
        ctx: Any,
        params: dict[str, Any],
        rng: Any,
        *,
        counters: dict[str, int] | None = None,
        deques: WorkerDeques | None = None,
    ) -> None:
        super().__init__(ctx, params, rng)
        # A policy falling back to WS hands in its counters and deques (ws_fallback).
        self.counters = counters if counters is not None else {}
        for k in ("steal_attempts", "steals", "deque_pushes"):
            self.counters.setdefault(k, 0)
        self.dq = (
            deques
            if deques is not None
            else WorkerDeques(ctx.n_cores_total, ctx.costs.steal_attempt, self.counters)
        )
        self.child_first = self.params["spawn_policy"] == "child-first"
        self._others: dict[int, Victims] = {}
        # The victim pool the job's cores share (Victims), its cores' positions, the
        # number of its cores on each socket, and the prices of an attempt on each of its
        # cores by the thief's socket: all made again when the job's cores or the
        # departed deques change (forget_victims).
        self._pool: list[int] | None = None
        self._where: dict[int, int] = {}
        self._pool_sockets: dict[int, int] = {}
        self._pool_prices: dict[int, list[int]] = {}
        self._periods: dict[int, int] = {}
        self._plans: dict[int, SpinPlan] = {}
        self._sleep_plans: dict[int, SpinPlan] = {}
        # Only WS's own on_idle is described by spin_plan (a subclass may change it).
        self._plannable = type(self).on_idle is WorkStealing.on_idle
        # Cores that left the job with strands on their deques: thieves still find them.
        self.orphans: set[int] = set()
        self._dq = ctx.costs.deque_op
        self._sa = ctx.costs.steal_attempt
        self._sc = ctx.steal_cost
        self._sock: list[int] = ctx.socket_of.tolist()

    def victim_pool(self) -> list[int]:
        """The victims the job's cores draw from, each skipping itself: the job's cores,
        then the deques that departed cores left behind.  An override must begin with
        ``ctx.cores`` in its order (a core skips its own position among them); a pool that
        does not is refused when it is first used."""
        return list(self.ctx.cores) + sorted(self.orphans)

    def _shared_pool(self) -> list[int]:
        pool = self._pool
        if pool is None:
            pool = self.victim_pool()
            cores = self.ctx.cores
            if list(pool[: len(cores)]) != list(cores):
                # each core skips its own position among ctx.cores: a pool in another
                # order made cores steal from themselves and skip another core
                raise contract_error(
                    self,
                    f"scheduler {self.name!r}: victim_pool() gave {reprlib.repr(pool)}, "
                    f"which does not begin with the job's cores in order "
                    f"({reprlib.repr(list(cores))})",
                )
            self._pool = pool
            self._where = {c: i for i, c in enumerate(self.ctx.cores)}
            counts: dict[int, int] = {}
            for v in pool:
                counts[self._sock[v]] = counts.get(self._sock[v], 0) + 1
            self._pool_sockets = counts
        return pool

    def others(self, core: int) -> Victims:
        """The victims ``core`` may choose (:meth:`victim_pool` without ``core``'s own
        place among the job's cores), cached until the pool changes."""
        o = self._others.get(core)
        if o is None:
            pool = self._shared_pool()
            o = self._others[core] = Victims(pool, self._where.get(core, len(pool)))
        return o

    def forget_victims(self) -> None:
        """Drop the cached victims (the job's cores or the departed deques changed)."""
        self._others.clear()
        self._pool = None
        self._pool_prices.clear()
        self._periods.clear()
        self._plans.clear()
        self._sleep_plans.clear()

    def spin_period(self, core: int) -> int:
        """Mean cycles between the attempts of ``core`` spinning over its victims
        (``ctx.mean_steal_cycles`` over :meth:`others`, from the pool's cores per socket)."""
        p = self._periods.get(core)
        if p is None:
            o = self.others(core)
            row = self._sc[self._sock[core]]
            total = sum(n * row[s] for s, n in self._pool_sockets.items())
            if o.skip < len(o.pool):
                total -= row[self._sock[o.pool[o.skip]]]
            p = self._periods[core] = mean_of_total(total, len(o), self._sa)
        return p

    def pool_prices(self, thief: int) -> list[int]:
        """Cycles of an attempt by ``thief`` on each core of the victim pool, by position
        (one list per socket of thieves)."""
        s = self._sock[thief]
        prices = self._pool_prices.get(s)
        if prices is None:
            row, sock = self._sc[s], self._sock
            prices = self._pool_prices[s] = [row[sock[v]] for v in self._shared_pool()]
        return prices

    def steal_price(self, thief: int, victim: int) -> int:
        """Cycles of one attempt by ``thief`` on ``victim``'s deque (``ctx.steal_cost``)."""
        sock = self._sock
        return self._sc[sock[thief]][sock[victim]]

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
        self.forget_victims()
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
            dq.sleep(core, now, self.spin_period(core))
            return WAIT
        return self.attempt(core, int(self.rng.integers(len(others))))

    def attempt(self, core: int, i: int) -> Decision:
        """``core``'s steal attempt on its ``i``-th victim (:meth:`others`), drawn."""
        dq = self.dq
        victim = self.others(core)[i]
        s = dq.attempt(victim)
        if victim in self.orphans and not dq.deques[victim]:
            self.orphans.discard(victim)
            self.forget_victims()
        cost = self._sc[self._sock[core]][self._sock[victim]]
        if s >= 0:
            return run(s, cost)
        return retry(cost)

    def spin_plan(self, core: int) -> SpinPlan | None:
        """``core``'s next :meth:`on_idle` for the engine to batch (:class:`SpinPlan`): as
        long as the own deque is empty and no departed core's deque is a victim (an
        attempt on one may drop it from the victim lists), it is the sleep accounting of
        a woken thief, then one random draw over :meth:`others` and one attempt priced by
        distance — or, when every deque is empty, going to sleep."""
        dq = self.dq
        if dq.deques[core] or self.orphans or not self._plannable:
            return None
        # The engine asks at every idle call it replays: the plans are kept, by whether
        # any deque holds a strand, until the victims change (forget_victims).
        plans = self._sleep_plans if dq.n_items == 0 else self._plans
        p = plans.get(core)
        if p is None:
            o = self.others(core)
            sleeps = dq.n_items == 0 or not o  # as in on_idle
            p = plans[core] = SpinPlan(
                o,
                [] if sleeps else self.pool_prices(core),
                dq.deques,
                dq.counters,
                dq.attempts_key,
                dq.sleep_since,
                dq.sleep_period,
                self.spin_period(core) if sleeps else -1,
                self.rng,
                self.attempt,
            )
        return p


#: The callbacks :func:`ws_fallback` hands over to WS when asked to forward them.
FORWARDED = ("on_start", "on_finish", "on_idle", "on_depart", "on_cores_changed", "spin_plan")


def ws_fallback(
    owner: Scheduler, *, deques: WorkerDeques | None = None, forward: bool = False
) -> WorkStealing:
    """Plain work stealing for ``owner``'s job, from now on (child-first, WS's defaults).

    Parameters
    ----------
    owner
        The policy falling back; WS uses its context and random generator.
    deques
        ``owner``'s own per-worker deques, when it has some (strands already queued stay
        where WS's thieves find them); WS then counts into ``owner.counters``.  Without
        them ``owner`` takes WS's counters.
    forward
        Replace ``owner``'s :data:`FORWARDED` callbacks by WS's on the instance, so the
        engine calls WS directly (a policy that falls back before its first strand);
        otherwise ``owner`` calls the returned WS itself.

    Returns
    -------
    WorkStealing
    """
    if deques is not None:
        ws = WorkStealing(owner.ctx, {}, owner.rng, counters=owner.counters, deques=deques)
    else:
        ws = WorkStealing(owner.ctx, {}, owner.rng)
        owner.counters = ws.counters
    if forward:
        for name in FORWARDED:
            setattr(owner, name, getattr(ws, name))
    return ws
