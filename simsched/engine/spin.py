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

* entries are taken in order ``(time, kind, sequence)`` from the engine's heap and timer
  lanes (:mod:`simsched.engine.events`), and each new timer gets the sequence number the
  main loop would give it, so ties resolve as before;
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
from typing import Any

from simsched.params import env_flag
from simsched.schedulers.base import Victims

#: Victims drawn one by one at the start of a batch (a block draw and giving its rest
#: back cost more than a few single draws).
SCALAR = 4

#: Victims drawn per block after that.
BLOCK = 64

#: Environment variable that turns batching off (``0``, ``false``, ``no`` or ``off``), for
#: comparisons.
ENV_SWITCH = "SIMSCHED_STEAL_BATCH"


def batching_enabled() -> bool:
    """Whether failed steal attempts are batched (``SIMSCHED_STEAL_BATCH`` unset or on;
    :func:`simsched.params.env_flag`: ``off`` left it on, as anything but ``0`` did)."""
    return env_flag(ENV_SWITCH, True)


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
    events = rp._events
    heap = events.heap
    lanes = events.lanes
    by_delay = events.by_delay
    push_timer = events.push_timer
    gen = rp.gen
    owner = rp.owner
    jobs = rp.jobs
    avail = rp.avail
    timer_live = rp.timer_live
    advance = rp.driver.advance
    pop = heapq.heappop
    # The replay's clock, sequence number and quiet limit, kept here and written back
    # before the policy is called and at the end (only this loop changes them meanwhile).
    now = rp.now
    seq = rp._seq
    quiet = rp._quiet
    job = None
    spin_plan: Any = None
    rng: Any = None
    state0: Any = None
    n = -1
    block: list[int] = []
    used = 0
    scalar = 0  # victims drawn one by one before the first block
    handled = 0
    done = -1
    synced = False
    while True:
        # the least entry: the heap's top or a lane's head (engine.events)
        e = heap[0] if heap else None
        src = None
        for q in lanes:
            if q and (e is None or q[0] < e):
                e = q[0]
                src = q
        if e is None:
            break
        t, kind, _, a, g = e
        if t >= t_env or kind != ev_timer:
            break
        plan = None
        if g == gen[a]:
            j = jobs[owner[a]]
            if j is not job:
                if job is not None:
                    break
                job = j
                spin_plan = j.sched.spin_plan
            plan = spin_plan(a)
            if plan is None:
                break
            victims = plan.victims
            if type(victims) is not Victims:
                # a policy's plain sequence of victims: a pool that skips no one
                victims = Victims(victims, len(victims))
                plan = plan._replace(victims=victims)
            sleep = plan.sleep
            if sleep < 0:
                if rng is None:
                    rng = plan.rng
                    n = victims.n
                elif plan.rng is not rng or victims.n != n:
                    break
        # The window loop up to this entry, as the main loop runs it.
        if t != quiet:
            c = advance(t)
            if c >= 0:
                quiet = -1
                done = c
                break
            quiet = t
        if src is None:
            pop(heap)
        else:
            src.popleft()
        handled += 1
        now = t
        if plan is None:
            continue  # a stale timer
        asleep = plan.asleep
        since = asleep[a]
        if since >= 0:
            # a woken thief: the attempts it would have made asleep (WorkerDeques.wake)
            per = plan.periods[a]
            if per > 0:
                plan.counters[plan.key] += (t - since) // per
            asleep[a] = -1
        if sleep >= 0:
            # every deque is empty: the thief goes to sleep (WorkerDeques.sleep, WAIT)
            asleep[a] = t
            plan.periods[a] = sleep
            j.sleeping.add(a)
            timer_live[a] = False
            continue
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
        k = i + (i >= victims.skip)  # the victim's place in the pool (Victims.position)
        if plan.deques[victims.pool[k]]:
            # this attempt succeeds: the policy makes it; the pools change, so stop here
            timer_live[a] = False
            rp.now, rp._seq, rp._quiet = now, seq, quiet
            synced = True
            rp._apply(j, a, t, plan.attempt(a, i))
            break
        plan.counters[plan.key] += 1
        # retry(price): the attempt keeps the core at least a cycle, as on_idle's would
        price = plan.prices[k]
        tn = t + (price if price > 0 else 1)
        if tn < avail[a]:
            tn = avail[a]
        e = (tn, ev_timer, seq, a, g)
        seq += 1
        q = by_delay.get(tn - t)
        if q and q[-1] < e:  # EventQueue.push_timer, inlined for a lane that keeps sorted
            q.append(e)
        else:
            push_timer(e, tn - t)
    if not synced:
        rp.now, rp._seq, rp._quiet = now, seq, quiet
    if state0 is not None and used < len(block):
        # Give back the victims drawn and not used: reset the generator to before the
        # first block and draw again the block victims that were used.
        rng.bit_generator.state = state0
        if used > scalar:
            rng.integers(n, size=used - scalar)
    rp.batched += handled
    return done, handled
