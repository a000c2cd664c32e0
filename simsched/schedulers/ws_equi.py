"""WS-EQUI: adaptive work stealing with mugging and worker states, no feedback ([SAWS12] §5).

Design
------
[SAWS12] runs three job schedulers on one adaptive runtime (ACilk, §4.1, §4.3): the
work-stealing worker loop is the same, only the desire each job reports differs.  This
module is that runtime; :class:`AdaptiveWorkStealing` is WS-EQUI itself (WS whose
processors a controller changes, reporting no desire: it runs under ``equi``) and the
base of SAWS (:mod:`simsched.schedulers.saws`) and A-Steal
(:mod:`simsched.schedulers.asteal`), which only add :meth:`next_desire`.

**Worker loop** ([SAWS12] §2.1, §2.3, §4.3, Fig. 6).  Deques as in WS
(:class:`~simsched.schedulers.deques.WorkerDeques`, child-first by default).  A worker
whose own deque is empty first *mugs*: it claims a muggable deque — one a departed core
left behind with strands on it — as its own (the lowest-numbered such deque) and runs its
owner-end strand; only when no deque is muggable does it steal from a random other
processor of its job.  Muggable deques are not stolen from (their strands wait for a
mugger), as in ACilk.  A mug is priced as a steal attempt on the deque it claims
(claiming a deque no processor holds is one deque access, like a steal), and both by
distance (``ctx.steal_cost``: ``steal_attempt`` in the socket, ``remote_pool_op`` plus
``remote_hop`` per further link across sockets), as for every policy.

**Worker states.**  Each processor of the job is *working* (running a strand, or popping
its own deque), *mugging* (the cycles of a mug) or *stealing* (every steal attempt, the
successful one included, and the time a thief sleeps with nothing to steal); the
paper's *sleeping* workers are the machine's cores the job does not hold, counted as
``P - a(t)`` core-cycles.  Working and mugging are useful, stealing is waste ([SAWS12]
§3.1, ``X_j(t)``).  The cycles of each state are integrated exactly, per quantum, from
the callback times (a strand's start cost is booked to the state that produced it, then
the core is working): these are the exact ``int sum_j X_j dt``; ``int sum_j Q_j dt``
integrates the job's queued strands (muggable deques included) the same way.

**Samples** ([SAWS12] §4.2).  Every steal attempt records the victim's deque length and
whether the victim was itself stealing (purely unsuccessful).  A thief that finds
nothing to steal anywhere sleeps instead of being simulated attempt by attempt
(:mod:`simsched.schedulers.deques`); the attempts it would have made are added when it
wakes or when a quantum ends, every one against an empty deque (while it sleeps the job
has no queued strand), and the purely unsuccessful share of them is the expected one,
``int (S(t) - 1) / (a(t) - 1) dt`` over its sleep (``S`` stealing processors among ``a``;
1 when it is alone), rounded to whole attempts — the only statistic here that is an
expectation rather than a count.

**Quanta.**  :meth:`on_quantum` closes the quantum ``[t_q, now]`` (``t_q`` is the job's
start for its first one) into a :class:`~simsched.schedulers.desire.QuantumIntegrals`
(exact; ``a(q)`` is the time-averaged allotment, rounded up) and a
:class:`~simsched.schedulers.desire.QuantumSamples` (sampled; ``a(q)`` is the allotment
at the quantum's end, ``e`` its processors plus its muggable deques, the most attempts
possible ``int a(t) dt / c_steal``) and asks :meth:`next_desire`; WS-EQUI answers None.
The real desire of every quantum is kept in the record (``quantum_desires``).

The worker-state totals (``worker_cycles`` in the record) run to the job's last
scheduling event: the engine does not call the scheduler when the job's last strand
ends, so that strand's cycles after its start are not in them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from simsched.schedulers.base import WAIT, Decision, retry, run
from simsched.schedulers.desire import (
    QuantumIntegrals,
    QuantumSamples,
    StepIntegral,
    desire_request,
)
from simsched.schedulers.ws import WorkStealing

#: Worker states ([SAWS12] Fig. 6); NONE: the core is not the job's.
WORK, MUG, STEAL, NONE = 0, 1, 2, -1
STATE_NAMES = ("working", "mugging", "stealing")


class AdaptiveWorkStealing(WorkStealing):
    """Work stealing with mugging under a processor controller, no desire (``ws-equi``)."""

    name: ClassVar[str] = "ws-equi"
    aliases: ClassVar[tuple[str, ...]] = ("wsequi",)

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.counters.update({"mugs": 0, "purely_unsuccessful_steals": 0, "quanta": 0})
        n = ctx.n_cores_total
        self.P = n
        self.state = [NONE] * n
        self.since = [0] * n
        self.switch = [-1] * n  # cycle at which a mug or steal cost ends (then working)
        self.q_acc = [0, 0, 0]  # cycles per state in the current quantum
        self.total = [0, 0, 0, 0]  # working, mugging, stealing, sleeping (P - a)
        self.n_steal = 0
        self.n_in = 0
        # Cumulative integral of the purely-unsuccessful rate seen by a sleeping thief.
        self._F = 0.0
        self._Ft = 0
        self._Fr = 1.0
        self.sleep_F = [0.0] * n
        self.q_att = self.q_pure = self.q_len = 0
        self.q_start = 0
        self._t = 0
        self._qint = StepIntegral(0, 0)
        self._cint = StepIntegral(0, 0)
        self._request: int | None = self.initial_desire
        self.last_held = 0  # core-cycles the job held in the quantum just closed
        self.desires: list[float] = []
        self.utils: list[float] = []

    # -- state bookkeeping ------------------------------------------------------------------
    def _advance(self, c: int, t: int) -> None:
        st = self.state[c]
        if st == NONE:
            return
        since = self.since[c]
        sw = self.switch[c]
        if 0 <= sw <= t:
            self.q_acc[st] += sw - since
            since = sw
            self.state[c] = st = WORK
            self.switch[c] = -1
        if t > since:
            self.q_acc[st] += t - since
            since = t
        self.since[c] = since

    def _stealing(self, c: int) -> bool:
        return self.state[c] == STEAL and self.switch[c] < 0

    def _set(self, c: int, t: int, st: int, switch_at: int = -1) -> None:
        self._advance(c, t)
        was = self._stealing(c)
        was_in = self.state[c] != NONE
        self.state[c] = st
        self.since[c] = t
        self.switch[c] = switch_at
        now = self._stealing(c)
        is_in = st != NONE
        if was != now or was_in != is_in:
            self.n_steal += int(now) - int(was)
            self.n_in += int(is_in) - int(was_in)
            self._rate(t)

    def _F_at(self, t: int) -> float:
        return self._F + self._Fr * (t - self._Ft)

    def _rate(self, t: int) -> None:
        self._F = self._F_at(t)
        self._Ft = t
        a, s = self.n_in, self.n_steal
        self._Fr = max(s - 1, 0) / (a - 1) if a > 1 else 1.0

    def _sleepers_attempts(self, c: int, now: int, since: int, n: int) -> None:
        """``n`` attempts a thief asleep since ``since`` would have made (see module doc)."""
        self.q_att += n
        if now > since:
            frac = (self._F_at(now) - self.sleep_F[c]) / (now - since)
            p = min(n, int(n * frac + 0.5))
            self.q_pure += p
            self.counters["purely_unsuccessful_steals"] += p

    def _wake_thief(self, c: int, now: int) -> None:
        since = self.dq.sleep_since[c]
        n = self.dq.wake(c, now)
        if since >= 0 and n:
            self._sleepers_attempts(c, now, since, n)

    # -- protocol ---------------------------------------------------------------------------
    def victim_pool(self) -> list[int]:
        """Victims: the job's other processors (muggable deques are mugged, not stolen)."""
        return list(self.ctx.cores)

    def on_start(self, strand: int, now: int) -> None:
        """Every processor starts as a thief; the root goes to the first one's deque."""
        self.q_start = self._t = self._Ft = now
        self._qint = StepIntegral(now, 0)
        self._cint = StepIntegral(now, len(self.ctx.cores))
        for c in self.ctx.cores:
            self._set(c, now, STEAL)
        super().on_start(strand, now)
        self._qint.set(now, self.dq.n_items)

    def on_finish(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> Decision:
        """Continue with a released strand (as WS), or look for work."""
        self._t = now
        dec = super().on_finish(core, strand, now, ready, kinds)
        if len(ready) > 1:
            self._qint.set(now, self.dq.n_items)
        return dec

    def on_idle(self, core: int, now: int) -> Decision:
        """Pop the own deque, else mug a muggable deque, else one steal attempt."""
        self._t = now
        dq = self.dq
        self._wake_thief(core, now)
        s = dq.pop(core)
        if s >= 0:
            self._set(core, now, WORK)
            self._qint.set(now, dq.n_items)
            return run(s, self._dq)
        if self.orphans:
            v = min(self.orphans)
            self.orphans.discard(v)
            dq.mug(core, v)
            s = dq.pop(core)
            self.counters["mugs"] += 1
            cost = self.steal_price(core, v)
            self._set(core, now, MUG, now + cost)
            self._qint.set(now, dq.n_items)
            return run(s, cost)
        self._set(core, now, STEAL)
        others = self.others(core)
        if dq.n_items == 0 or not others:
            dq.sleep(core, now, self.spin_period(core))
            self.sleep_F[core] = self._F_at(now)
            return WAIT
        victim = others[int(self.rng.integers(len(others)))]
        self.q_att += 1
        self.q_len += len(dq.deques[victim])
        if self._stealing(victim):
            self.q_pure += 1
            self.counters["purely_unsuccessful_steals"] += 1
        s = dq.attempt(victim)
        cost = self.steal_price(core, victim)
        if s >= 0:
            self._set(core, now, STEAL, now + cost)
            self._qint.set(now, dq.n_items)
            return run(s, cost)
        return retry(cost)

    def on_depart(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> None:
        """The released strands stay on the departing core's deque, which becomes muggable."""
        self._t = now
        super().on_depart(core, strand, now, ready, kinds)
        self._qint.set(now, self.dq.n_items)

    def on_cores_changed(self, added: Sequence[int], removed: Sequence[int], now: int) -> None:
        """Departed cores' non-empty deques become muggable; joining cores start as thieves."""
        self._t = now
        self.forget_victims()
        for c in removed:
            self._wake_thief(c, now)
            self._set(c, now, NONE)
            if self.dq.deques[c]:
                self.orphans.add(c)
        for c in added:
            self.orphans.discard(c)  # a returning core's old deque is its own again
            self._set(c, now, STEAL)
        self._cint.set(now, len(self.ctx.cores))

    # -- quanta -----------------------------------------------------------------------------
    def _flush(self, now: int) -> int:
        """Close the state integrals at ``now``; returns the core-cycles held since the
        last flush (also adds the sleeping workers' ``P - a`` cycles)."""
        for c in self.ctx.cores:
            self._advance(c, now)
        held = int(self._cint.take(now))
        for i in range(3):
            self.total[i] += self.q_acc[i]
        self.total[3] += self.P * (now - self.q_start) - held
        return held

    def on_quantum(self, now: int) -> int | None:
        """Close the quantum, observe it exactly and by samples, return the next desire."""
        self._t = now
        L = now - self.q_start
        # Sleeping thieves' attempts belong to the quantum they were (not) made in.
        for c in self.ctx.cores:
            since = self.dq.sleep_since[c]
            if since >= 0:
                self._wake_thief(c, now)
                self.dq.sleep(c, now, self.dq.sleep_period[c])
                self.sleep_F[c] = self._F_at(now)
        held = self.last_held = self._flush(now)
        busy = self.q_acc[WORK] + self.q_acc[MUG]
        queued = self._qint.take(now)
        a_end = len(self.ctx.cores)
        # the most attempts possible: every one at the cheapest (same-socket) price
        sa = max(self._sa, 1)
        if L > 0:
            exact = QuantumIntegrals(
                length=L,
                allotment=math.ceil(held / L),
                busy_integral=busy,
                deque_integral=queued,
            )
            sampled = QuantumSamples(
                allotment=a_end,
                steal_attempts=self.q_att,
                purely_unsuccessful=self.q_pure,
                victim_length_sum=self.q_len,
                deques_at_end=a_end + len(self.orphans),
                length_at_end=self.dq.n_items,
                max_attempts=held // sa,
            )
            d = self.next_desire(exact, sampled, a_end)
            if d is not None:
                self.desires.append(round(float(d), 6))
                self.utils.append(round(busy / held, 6) if held else 0.0)
                self._request = desire_request(d)
        self.q_acc = [0, 0, 0]
        self.q_att = self.q_pure = self.q_len = 0
        self.q_start = now
        self.counters["quanta"] += 1
        return self._request

    def next_desire(
        self, exact: QuantumIntegrals, sampled: QuantumSamples, allotment: int
    ) -> float | None:
        """The real desire for the next quantum (None: none, WS-EQUI)."""
        return None

    def record_fields(self) -> dict[str, Any]:
        """Worker-state cycles ([SAWS12] Fig. 6) and, with feedback, the desire per quantum."""
        self._flush(self._t)
        self.q_acc = [0, 0, 0]
        self.q_start = self._t
        out: dict[str, Any] = {
            "worker_cycles": dict(zip((*STATE_NAMES, "sleeping"), self.total, strict=True))
        }
        if self.desires:
            out["quantum_desires"] = list(self.desires)
            out["quantum_utilization"] = list(self.utils)
        return out
