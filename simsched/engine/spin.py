"""Failed steal attempts in batches: the engine replays a thief's spinning itself.

Under randomized work stealing on many cores most of the engine's events are idle
thieves: at every attempt the window loop returns, the main loop pops the core's timer,
the scheduler's ``on_idle`` draws a victim, finds its deque empty and answers
``retry(cost)``, and the loop pushes a timer; a thief woken by a push that finds every
deque empty again goes back to sleep the same way.  The pools change only at the
engine's other events (a strand finishes, a successful steal, an arrival, a quantum),
so until the next of those what such an ``on_idle`` does is fixed by the scheduler's
:class:`~simsched.schedulers.base.SpinPlan` (victims, prices, deques, sleep accounting)
and its generator's stream.  :func:`spin` replays these calls itself, in a tight loop
over the engine's heap:

* entries are taken in heap order ``(time, kind, sequence)``, and each new timer gets
  the sequence number the main loop would give it, so ties resolve as before;
* before each entry the window loop is run up to the entry's time exactly as the main
  loop runs it (the same limits: where the window loop stops shapes its interleaving),
  and a core finishing first ends the batch;
* an attempt whose victim's deque is not empty is made by the policy
  (``SpinPlan.attempt``: what ``on_idle`` does after its draw) and the core starts the
  stolen strand; the pools changed, so the batch ends;
* the batch also ends before a control-plane event (first at equal times), a quantum,
  another job's core, or a core whose scheduler gives no plan.

Nothing is speculated, so nothing is undone, except surplus victims: a batch draws its
first few victims one by one and then in blocks (``rng.integers(n, size=k)`` yields the
numbers of ``k`` calls of ``rng.integers(n)`` and leaves the generator in the same
state; tests/engine/test_spin.py checks it); when a block is not used up the generator
is reset to its state before the first block and advanced by exactly the block victims
used, so the stream is consumed as the per-attempt loop consumes it.  Results, counters
and random streams are identical to the per-attempt path (which
``SIMSCHED_STEAL_BATCH=0`` selects); what is saved per idle call is the main loop's
iteration, the scheduler call and the decision's bookkeeping, not the window-loop stop.
"""

from __future__ import annotations

import heapq
import os
from typing import Any

from simsched.schedulers.base import Victims

#: Victims drawn one by one at the start of a batch (a block draw and giving its rest
#: back cost more than a few single draws).
SCALAR = 4

#: Victims drawn per block after that.
BLOCK = 64

#: Environment variable that turns batching off (``0``), for comparisons.
ENV_SWITCH = "SIMSCHED_STEAL_BATCH"


def batching_enabled() -> bool:
    """Whether failed steal attempts are batched (``SIMSCHED_STEAL_BATCH`` is not ``0``)."""
    return os.environ.get(ENV_SWITCH, "1") != "0"


def spin(rp: Any, t_env: int, ev_timer: int) -> tuple[int, int]:
    """Replay the idle thieves' calls at the top of ``rp``'s heap (see the module).

    Parameters
    ----------
    rp
        The :class:`~simsched.engine.replay.Replay` (its heap, timers, cores, jobs and
        window loop).
    t_env
        Time of the next control-plane event (it comes first at equal times).
    ev_timer
        The heap's kind of a core timer.

    Returns
    -------
    tuple[int, int]
        The core whose strand finished when the window loop was run up to the next
        entry (-1: none), and the number of heap entries handled (0 and -1: nothing was
        done, the caller takes the next event as usual).
    """
    heap = rp._heap
    gen = rp.gen
    owner = rp.owner
    avail = rp.avail
    timer_live = rp.timer_live
    driver = rp.driver
    pop = heapq.heappop
    push = heapq.heappush
    job = None
    rng = None
    state0: Any = None
    n = -1
    block: list[int] = []
    used = 0
    scalar = 0  # victims drawn one by one before the first block
    handled = 0
    done = -1
    while heap:
        e = heap[0]
        t, kind, _, a, g = e
        if t >= t_env or kind != ev_timer:
            break
        plan = None
        if g == gen[a]:
            j = rp.jobs[owner[a]]
            if job is None:
                job = j
            elif j is not job:
                break
            plan = j.sched.spin_plan(a)
            if plan is None:
                break
            if type(plan.victims) is not Victims:
                # a policy's plain sequence of victims: a pool that skips no one
                plan = plan._replace(victims=Victims(plan.victims, len(plan.victims)))
            if plan.sleep < 0:
                if rng is None:
                    rng = plan.rng
                    n = len(plan.victims)
                elif plan.rng is not rng or len(plan.victims) != n:
                    break
        # The window loop up to this entry, as the main loop runs it.
        if t != rp._quiet:
            c = driver.advance(t)
            if c >= 0:
                rp._quiet = -1
                done = c
                break
            rp._quiet = t
        pop(heap)
        handled += 1
        rp.now = t
        if plan is None:
            continue  # a stale timer
        counters = plan.counters
        since = plan.asleep[a]
        if since >= 0:
            # a woken thief: the attempts it would have made asleep (WorkerDeques.wake)
            per = plan.periods[a]
            if per > 0:
                counters[plan.key] += (t - since) // per
            plan.asleep[a] = -1
        if plan.sleep >= 0:
            # every deque is empty: the thief goes to sleep (WorkerDeques.sleep, WAIT)
            plan.asleep[a] = t
            plan.periods[a] = plan.sleep
            j.sleeping.add(a)
            timer_live[a] = False
            continue
        assert rng is not None
        if used == len(block):
            # Short batches draw one by one; long ones in blocks, the unused rest of the
            # last block given back at the end.
            if scalar < SCALAR:
                block.append(int(rng.integers(n)))
                scalar += 1
            else:
                if state0 is None:
                    state0 = rng.bit_generator.state
                block.extend(rng.integers(n, size=BLOCK).tolist())
        i = block[used]
        used += 1
        victims = plan.victims
        k = i + (i >= victims.skip)  # the victim's place in the pool (Victims.position)
        if plan.deques[victims.pool[k]]:
            # this attempt succeeds: the policy makes it; the pools change, so stop here
            timer_live[a] = False
            rp._apply(j, a, t, plan.attempt(a, i))
            break
        counters[plan.key] += 1
        # retry(price): the attempt keeps the core at least a cycle, as on_idle's would
        price = plan.prices[k]
        tn = t + (price if price > 0 else 1)
        if tn < avail[a]:
            tn = avail[a]
        push(heap, (tn, ev_timer, rp._seq, a, g))
        rp._seq += 1
    if state0 is not None and used < len(block):
        # Give back the victims drawn and not used: reset the generator to before the
        # first block and draw again the block victims that were used.
        assert rng is not None
        rng.bit_generator.state = state0
        if used > scalar:
            rng.integers(n, size=used - scalar)
    rp.batched += handled
    return done, handled
