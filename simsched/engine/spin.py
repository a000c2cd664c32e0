"""Failed steal attempts in batches: the engine replays a thief's spinning itself.

Under randomized work stealing on many cores most of the engine's events are failed
steal attempts: at every attempt the window loop returns, the scheduler's ``on_idle``
draws a victim, finds its deque empty and asks to be called again a steal price later.
The pools change only at the engine's other events (a strand finishes, a successful
steal, an arrival or a quantum), so until the next of those every failing attempt is
fixed by the scheduler's :class:`~simsched.schedulers.base.SpinPlan` (victims, prices,
deques) and the generator's stream.  :func:`spin` therefore

1. *speculates*: pops the core timers at the top of the engine's heap in heap order —
   the order ``(time, kind, sequence)`` the loop would pop them in, with the sequence
   numbers the loop would give the new timers — and for each one whose attempt fails
   draws the victim, counts the attempt and pushes the next timer, exactly as
   ``on_idle`` and the loop would; it stops before the first event that is anything else
   (an attempt that would succeed, a core without a plan, another job's core, a quantum,
   a control-plane event, which comes first at equal times);
2. *runs the window loop* through the times of the speculated attempts one by one, as
   the loop would have (each attempt's time is the limit of one window-loop call: the
   window loop's interleaving depends on where it is stopped, so these stops are kept);
3. *rolls back* the attempts at and after a core's finishing time when the window loop
   returns one: the heap, the sequence counter, the attempt counter and the generator
   (restored and redrawn by the number of attempts kept) are as if only the attempts
   before it had been made.

Victims are drawn in blocks (``rng.integers(n, size=k)`` yields the same numbers as ``k``
calls of ``rng.integers(n)`` and leaves the generator in the same state; checked by
tests/engine/test_spin.py), and the generator is reset and advanced by exactly the
attempts kept, so the run consumes the stream as the per-attempt loop does.  Results,
counters and random streams are identical to the per-attempt path (which
``SIMSCHED_STEAL_BATCH=0`` selects); what is saved is the scheduler call, the decision
and the loop's bookkeeping per failed attempt.
"""

from __future__ import annotations

import heapq
import os
from typing import Any

#: Victims drawn per block while speculating.
BLOCK = 64

#: Environment variable that turns batching off (``0``), for comparisons.
ENV_SWITCH = "SIMSCHED_STEAL_BATCH"


def batching_enabled() -> bool:
    """Whether failed steal attempts are batched (``SIMSCHED_STEAL_BATCH`` is not ``0``)."""
    return os.environ.get(ENV_SWITCH, "1") != "0"


def spin(rp: Any, t_env: int, ev_timer: int) -> tuple[int, int]:
    """Replay the failing steal attempts at the top of ``rp``'s heap (see the module).

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
        The core whose strand finished while the window loop ran through the attempts
        (-1: none), and the number of heap entries handled here (0: nothing was batched,
        the caller takes the next event as usual).
    """
    heap = rp._heap
    if not heap:
        return -1, 0
    gen = rp.gen
    owner = rp.owner
    avail = rp.avail
    h0: list[tuple[int, int, int, int, int]] | None = None  # the heap before the first pop
    seq0 = rp._seq
    # Per handled entry: its time, the popped entry's sequence number, the pushed entry
    # (None for a stale timer) and whether an attempt was counted.
    times: list[int] = []
    popped: list[int] = []
    pushed: list[tuple[int, int, int, int, int] | None] = []
    job = None
    rng = None
    state0: Any = None
    n = -1
    block: list[int] = []
    used = 0
    counters: dict[str, int] = {}
    key = ""
    pop = heapq.heappop
    push = heapq.heappush
    while heap:
        e = heap[0]
        t, kind, _, a, g = e
        if t >= t_env or kind != ev_timer:
            break
        if h0 is None:
            h0 = list(heap)
        if g != gen[a]:
            pop(heap)
            times.append(t)
            popped.append(e[2])
            pushed.append(None)
            continue
        j = rp.jobs[owner[a]]
        if job is None:
            job = j
        elif j is not job:
            break
        plan = j.sched.spin_plan(a)
        if plan is None:
            break
        victims = plan.victims
        if rng is None:
            rng = plan.rng
            n = len(victims)
            counters = plan.counters
            key = plan.key
            state0 = rng.bit_generator.state
        elif plan.rng is not rng or len(victims) != n or plan.counters is not counters:
            break
        if used == len(block):
            block.extend(rng.integers(n, size=BLOCK).tolist())
        i = block[used]
        if plan.deques[victims[i]]:
            break  # this attempt succeeds: on_idle makes it
        used += 1
        pop(heap)
        tn = t + plan.prices[i]
        if tn < avail[a]:
            tn = avail[a]
        ne = (tn, ev_timer, rp._seq, a, g)
        rp._seq += 1
        push(heap, ne)
        counters[key] += 1
        times.append(t)
        popped.append(e[2])
        pushed.append(ne)
    m = len(times)
    if m == 0:
        if rng is not None:
            rng.bit_generator.state = state0
        return -1, 0
    # The window loop through the attempts' times, as the per-attempt loop calls it.
    driver = rp.driver
    kept = m
    done = -1
    for k in range(m):
        t = times[k]
        if t == rp._quiet:
            continue
        c = driver.advance(t)
        if c >= 0:
            rp._quiet = -1
            kept = k
            done = c
            break
        rp._quiet = t
    if kept < m:
        assert h0 is not None
        # A strand finished before the attempt ``kept``: undo that one and the later ones.
        gone = set(popped[:kept])
        new = [x for x in pushed[:kept] if x is not None]
        heap[:] = [x for x in h0 if x[2] not in gone] + [x for x in new if x[2] not in gone]
        heapq.heapify(heap)
        rp._seq = seq0 + len(new)
        counters[key] -= sum(1 for x in pushed[kept:] if x is not None)
        used = len(new)
        rp.spin_rollbacks += 1
    if rng is not None:
        # Reset the generator and draw exactly the kept attempts' victims.
        rng.bit_generator.state = state0
        if used:
            rng.integers(n, size=used)
    if kept:
        rp.now = times[kept - 1]
    rp.batched += kept
    return done, kept
