"""A slow, obviously correct replay engine: the oracle of ``simsched.engine``.

Pure Python, one reference at a time, strictly in global order: at every step the
earliest thing left happens, where "things" are

* a running core issuing its next reference (at its clock plus the reference's gap),
* a core that has finished its strand (at its finishing time),
* a scheduler timer (a core that asked to be called back, at that time).

Ties: finished cores first, then timers (in the order they were set), then references;
among cores the lower number first.  This is the order the fast engine follows with
``window=0``.  It uses the memory oracle (``tests/oracles/memory_oracle.py``) and the
same scheduler classes through the same protocol (``on_profile`` with each strand's
private-cache misses, before ``on_finish``, as the engine calls it), and keeps a log of
decisions.

When references issue and strands end, on blocking or out-of-order cores, is
``CoreTiming``'s business (the job-set oracle uses it too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.engine.facts import TraceFacts
from simsched.memory.stacks import stack_layout
from simsched.schedulers.base import RETRY, RUN, SchedContext
from tests.oracles.memory_oracle import ooo_wait


def prefetch_fills(memory, core: int) -> int:
    """Lines ``core``'s prefetcher has brought from beyond the private levels so far."""
    pf = getattr(memory, "pf_count", None)
    return pf[core]["beyond"] if pf is not None else 0


class CoreTiming:
    """When each core's references issue and its strands end (docs/machine-model.md §6).

    A blocking core issues a reference its gap after the previous one completed, and
    ends a strand its tail after the last one.  An out-of-order core (§6.1) also keeps its
    misses in flight, (completion, instruction number) oldest first, and counts its
    instructions: a reference issues after the waits of step 2 (``ooo_wait``), which is
    when the memory model serves it and so the time the oracles order it by; a
    first-level miss stays in flight while the core goes on after the first level's hit
    latency; a strand ends when its last reference has issued, its tail has run and its
    last miss has completed, whichever is latest, so no miss outlives its strand."""

    def __init__(self, machine):
        self.ooo = machine.out_of_order
        self.h0 = machine.caches[0].hit_latency
        self.flight: list[list[tuple[int, int]]] = [[] for _ in range(machine.cores)]
        self.ins = [0] * machine.cores

    def issue(self, c: int, clock: int, gap: int, dep: bool) -> tuple[int, int]:
        """When core ``c``'s next reference issues, its gap after ``clock`` (the previous
        one's completion, or the strand's start), and how many misses it waits for."""
        if self.ooo is None:
            return clock + gap, 0
        ins = self.ins[c] + gap + 1
        return ooo_wait(self.flight[c], clock + gap, ins, dep, self.ooo.rob, self.ooo.mshrs)

    def served(self, c: int, gap: int, waited: int, t: int, lat: int) -> int:
        """Core ``c``'s reference issued at ``t`` after ``waited`` misses and took ``lat``
        cycles; returns when the core goes on (the next reference's gap counts from it)."""
        if self.ooo is None:
            return t + lat
        del self.flight[c][:waited]  # the misses it waited for have completed
        self.ins[c] += gap + 1
        if lat <= self.h0:
            return t + lat
        # a first-level miss stays in flight; the core goes on as after a hit
        self.flight[c].append((t + lat, self.ins[c]))
        return t + self.h0

    def end(self, c: int, clock: int) -> int:
        """When core ``c``'s strand ends, its tail run until ``clock``."""
        done = max([clock] + [d for d, _ in self.flight[c]])
        self.flight[c].clear()
        return done


class OracleEngine:
    """Replay ``trace`` on ``machine`` under ``scheduler_cls`` with ``memory``."""

    def __init__(self, trace, machine, scheduler_cls, params, seed, memory):
        self.trace = trace
        self.machine = machine
        self.memory = memory
        self.P = machine.cores
        self.now = 0
        self.timers: list[tuple[int, int, int]] = []  # (time, seq, core)
        self.seq = 0
        self.sleeping = set(range(self.P))
        self.ctx = SchedContext(
            machine, range(self.P), trace, self.wake, facts=TraceFacts(trace, machine)
        )
        self.sched = scheduler_cls(self.ctx, params or {}, np.random.default_rng(seed))
        lat = [c.hit_latency for c in machine.caches if c.scope == "core"]
        self.pthresh = max(lat) if lat else -1

    def wake(self, n, only=None):
        cores = sorted(self.sleeping if only is None else self.sleeping & set(only))
        if n is not None:
            cores = cores[:n]
        for c in cores:
            self.sleeping.remove(c)
            self.timers.append((self.now, self.seq, c))
            self.seq += 1

    def run(self) -> dict[str, Any]:
        tr = self.trace
        n = tr.header.n_strands
        refs = []
        for s in range(n):
            ch = tr.strand_refs(s)
            refs.append(
                list(
                    zip(
                        ch.addr.tolist(),
                        ch.size.tolist(),
                        ch.write.tolist(),
                        ch.gap.tolist(),
                        ch.dep.tolist(),
                        strict=True,
                    )
                )
            )
        tail = [int(x) for x in tr.strands.tail]
        stacks = stack_layout(tr.header.stack, self.P)
        preds_left = [0] * n
        succs: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for a, b, k in zip(
            tr.edges.src.tolist(), tr.edges.dst.tolist(), tr.edges.kind.tolist(), strict=True
        ):
            succs[a].append((b, k))
            preds_left[b] += 1
        core_of = [-1] * n
        start = [-1] * n
        end = [-1] * n
        state = ["idle"] * self.P
        clock = [0] * self.P
        strand = [-1] * self.P
        pos = [0] * self.P
        pmiss = [0] * self.P
        spmiss = [0] * n  # private-cache misses of every strand (the profile)
        instr = [int(x) for x in tr.strands.instr]
        busy = [0] * self.P
        sched_cycles = [0] * self.P
        log = []
        timing = CoreTiming(self.machine)

        def issue(c):
            """Issue time of core c's next reference and the misses it waits for."""
            gap, dep = refs[strand[c]][pos[c]][3:]
            return timing.issue(c, clock[c], gap, dep)

        def decide(c, now, dec):
            kind, s, cost = dec
            log.append((now, c, kind, s, cost))
            if kind == RUN:
                assert preds_left[s] == 0 and core_of[s] == -1
                core_of[s] = c
                start[s] = now + cost
                sched_cycles[c] += cost
                clock[c] = now + cost
                strand[c] = s
                pos[c] = 0
                state[c] = "run"
            elif kind == RETRY:
                self.timers.append((now + cost, self.seq, c))
                self.seq += 1
            else:
                self.sleeping.add(c)

        self.now = 0
        self.sched.on_start(0, 0)
        finished = 0
        while finished < n:
            # Every candidate event as (time, rank, tiebreak, what, core).
            cands = []
            for c in range(self.P):
                if state[c] == "run" and pos[c] >= len(refs[strand[c]]):
                    clock[c] = timing.end(c, clock[c] + tail[strand[c]])
                    state[c] = "done"
                if state[c] == "run":
                    cands.append((issue(c)[0], 2, c, "ref", c))
                elif state[c] == "done":
                    cands.append((clock[c], 0, c, "done", c))
            for t, seq, c in self.timers:
                cands.append((t, 1, seq, "timer", c))
            assert cands, "deadlock"
            t, _, tb, what, c = min(cands)
            if what == "ref":
                addr, size, write, gap, _ = refs[strand[c]][pos[c]]
                waited = issue(c)[1]
                if stacks is not None and stacks.lo <= addr < stacks.hi:
                    addr += c * stacks.step  # core c's own copy of the stack
                fills = prefetch_fills(self.memory, c)
                lat = self.memory.access(c, addr, size, write, t)
                # a miss of every private level, and each line the prefetcher brought
                # from beyond them (docs/schedulers.md, profiling)
                pm = (lat > self.pthresh) + prefetch_fills(self.memory, c) - fills
                pmiss[c] += pm
                spmiss[strand[c]] += pm
                clock[c] = timing.served(c, gap, waited, t, lat)
                pos[c] += 1
            elif what == "done":
                s = strand[c]
                end[s] = t
                busy[c] += t - start[s]
                state[c] = "idle"
                strand[c] = -1
                finished += 1
                ready, kinds = [], []
                for d, k in succs[s]:
                    preds_left[d] -= 1
                    if preds_left[d] == 0:
                        ready.append(d)
                        kinds.append(k)
                self.now = t
                if self.sched.wants_profile:
                    self.sched.on_profile(s, c, start[s], t, instr[s], spmiss[s])
                if finished < n:
                    decide(c, t, self.sched.on_finish(c, s, t, ready, kinds))
            else:
                self.timers.remove((t, tb, c))
                self.now = t
                decide(c, t, self.sched.on_idle(c, t))
        makespan = max(end) if n else 0
        return {
            "strand_core": np.array(core_of, dtype=np.int64),
            "strand_start": np.array(start, dtype=np.int64),
            "strand_end": np.array(end, dtype=np.int64),
            "makespan": makespan,
            "busy_cycles": np.array(busy, dtype=np.int64),
            "sched_cycles": np.array(sched_cycles, dtype=np.int64),
            "private_misses": np.array(pmiss, dtype=np.int64),
            "counters": dict(self.sched.counters),
            "log": log,
        }
