"""The replay engine: per-core clocks, strand readiness, scheduler decisions, streaming refs.

Design (DESIGN.md §5; docs/engine.md has the measured accuracy of the window scheme):

* **Time.**  Every core has a clock.  A non-memory instruction costs 1 cycle, a
  reference the latency the memory model returns (which includes controller queueing),
  so a strand's duration is the sum of its gaps, latencies and tail instructions.
  Scheduling operations cost what ``machine.costs`` says, charged by the scheduler's
  decisions.
* **Interleaving.**  References are issued by the Numba loop ``engine_run``
  (:mod:`simsched.engine._kernels`), appended to the generated memory module so that it
  calls ``access`` directly.  The core whose next reference issues earliest runs until
  its issue time passes the next event by more than ``window`` cycles; ``window=0`` is a
  strict smallest-issue-time-first replay.
* **Decisions in time order.**  Strand completions and scheduler timers are events; the
  kernel returns to Python when an event is the earliest thing left, so the scheduler sees
  every completion, idle core and steal attempt in global time order whatever the window
  (the window only reorders references of running strands).
* **Readiness and sync.**  A strand's remaining-predecessor count drops when a
  predecessor finishes; the completion that drops it to zero *releases* it and hands it
  to the scheduler together with the edge kind.  Hence "the worker that finishes the last
  child continues the frame": the post-sync strand is released by the last of its
  predecessors to finish, on that worker.
* **Streaming references.**  Each core has a buffer of ``buffer_refs`` references that
  Python fills with the next segment of its strand (never crossing a trace chunk), from a
  small LRU pool of decoded chunks (about one per core), so memory stays bounded whatever
  the trace length.
* **Determinism.**  The only randomness is the scheduler's ``numpy`` Generator seeded from
  the run's seed; ties between events are broken by (time, kind, core).

Several jobs on changing core sets (SAWS) are foreseen by the scheduler protocol
(:meth:`~simsched.schedulers.base.Scheduler.on_cores_changed`, quanta); this engine runs
one job on all cores of the machine.
"""

from __future__ import annotations

import heapq
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simsched.engine._kernels import (
    CODE_MUL,
    F_CLOCK,
    F_LAST,
    F_LEN,
    F_PMISS,
    F_POS,
    F_REFS,
    F_STATE,
    F_TAIL,
    NF,
    R_DONE,
    R_GROW,
    R_REFILL,
    S_IDLE,
    S_RUN,
)
from simsched.memory._kernels import PLACE_FIRST_TOUCH
from simsched.schedulers.base import RETRY, RUN, SchedContext, Scheduler

#: Default interleaving window in cycles (see docs/engine.md for its measured error).
DEFAULT_WINDOW = 100
#: References per core buffer.
DEFAULT_BUFFER_REFS = 1 << 14

_INF = np.int64(1) << np.int64(62)


@dataclass
class EngineResult:
    """What one replay produced (before it is turned into a result record).

    Attributes
    ----------
    makespan
        Cycle at which the last strand finished.
    strand_core, strand_start, strand_end
        Per strand: the core that ran it and its start and end cycles (start is after the
        scheduling cost of the decision that picked it).
    busy_cycles, sched_cycles, idle_cycles
        Per core: cycles running strands, cycles of scheduling operations that led to
        running a strand, and the rest of ``[0, makespan)`` (looking for work, failed
        steal attempts, sleeping).
    refs_per_core, private_misses
        Per core: references issued and references that missed every per-core cache level.
    counters
        The scheduler's counters (``steal_attempts``, ``steals``, ...).
    engine
        Engine statistics: events, kernel calls, wall time split, median bookkeeping cost
        per strand in nanoseconds (``median_strand_ns``).
    """

    makespan: int
    strand_core: np.ndarray
    strand_start: np.ndarray
    strand_end: np.ndarray
    busy_cycles: np.ndarray
    sched_cycles: np.ndarray
    idle_cycles: np.ndarray
    refs_per_core: np.ndarray
    private_misses: np.ndarray
    counters: dict[str, int]
    engine: dict[str, Any] = field(default_factory=dict)


class _ChunkPool:
    """LRU pool of decoded trace chunks (``capacity`` chunks stay resident)."""

    def __init__(self, trace: Any, capacity: int) -> None:
        self.trace = trace
        self.capacity = max(2, capacity)
        self.pool: OrderedDict[int, Any] = OrderedDict()
        self.loads = 0

    def get(self, k: int) -> Any:
        c = self.pool.get(k)
        if c is not None:
            self.pool.move_to_end(k)
            return c
        c = self.trace.chunk(k)
        self.loads += 1
        self.pool[k] = c
        if len(self.pool) > self.capacity:
            self.pool.popitem(last=False)
        return c


def private_threshold(machine: Any) -> int:
    """Largest hit latency of the per-core levels: a longer reference missed them all."""
    lat = [c.hit_latency for c in machine.caches if c.scope == "core"]
    return int(max(lat)) if lat else -1


class Engine:
    """Replay one trace on one machine under one scheduler.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace`.
    machine
        The resolved :class:`simsched.machine.Machine`.
    scheduler
        A :class:`~simsched.schedulers.base.Scheduler` subclass.
    params
        Scheduler parameters.
    seed
        Seed of the scheduler's random generator.
    memory
        A memory system whose generated module contains ``engine_run`` (built with
        ``extra_source=WINDOW_SOURCE``); its ``state`` is mutated by the replay.
    window
        Interleaving window in cycles (0 = strict global order of references).
    buffer_refs
        Capacity of each core's reference buffer.
    progress
        Optional callback ``progress(refs_done, refs_total)`` called now and then.
    """

    def __init__(
        self,
        trace: Any,
        machine: Any,
        scheduler: type[Scheduler],
        params: dict[str, Any] | None,
        seed: int,
        memory: Any,
        *,
        window: int = DEFAULT_WINDOW,
        buffer_refs: int = DEFAULT_BUFFER_REFS,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        if window < 0:
            raise ValueError("window must be >= 0")
        self.trace = trace
        self.machine = machine
        self.memory = memory
        self.window = int(window)
        self.B = int(buffer_refs)
        self.progress = progress
        P = machine.cores
        self.P = P
        self._now = 0
        self._seq = 0
        self._timers: list[tuple[int, int, int]] = []
        self._sleeping: set[int] = set(range(P))
        self.ctx = SchedContext(machine, range(P), trace, self._wake)
        self.rng = np.random.default_rng(seed)
        self.sched = scheduler(self.ctx, params or {}, self.rng)

    # -- engine services for schedulers --------------------------------------------------
    def _wake(self, n: int | None) -> None:
        sl = self._sleeping
        if not sl:
            return
        cores = sorted(sl)
        if n is not None:
            cores = cores[: max(int(n), 0)]
        for c in cores:
            sl.discard(c)
            heapq.heappush(self._timers, (self._now, self._seq, c))
            self._seq += 1

    # -- the replay ----------------------------------------------------------------------
    def run(self) -> EngineResult:
        """Replay the whole trace; returns the :class:`EngineResult`."""
        t_wall = time.perf_counter()
        tr = self.trace
        P, B = self.P, self.B
        n = int(tr.header.n_strands)
        n_refs_total = int(tr.header.n_refs)
        st_tab = tr.strands
        ref_start = np.asarray(st_tab.ref_start, dtype=np.int64)
        rs_list = ref_start.tolist()
        tail_list = np.asarray(st_tab.tail, dtype=np.int64).tolist()
        instr_list = np.asarray(st_tab.instr, dtype=np.int64).tolist()
        src = np.asarray(tr.edges.src, dtype=np.int64)
        succ_off = np.searchsorted(src, np.arange(n + 1, dtype=np.int64), side="left").tolist()
        succ_dst = np.asarray(tr.edges.dst, dtype=np.int64).tolist()
        succ_kind = np.asarray(tr.edges.kind, dtype=np.int64).tolist()
        pred_rem = np.asarray(tr.pred_count, dtype=np.int64).tolist()

        strand_core = np.full(n, -1, dtype=np.int64)
        strand_start = np.full(n, -1, dtype=np.int64)
        strand_end = np.full(n, -1, dtype=np.int64)
        busy = np.zeros(P, dtype=np.int64)
        schedc = np.zeros(P, dtype=np.int64)
        pmiss_core = np.zeros(P, dtype=np.int64)
        cost_ns = np.zeros(n, dtype=np.int64)

        cs = np.zeros((NF, P), dtype=np.int64)
        baddr = np.zeros((P, B), dtype=np.int64)
        bsize = np.zeros((P, B), dtype=np.uint8)
        bwrite = np.zeros((P, B), dtype=np.bool_)
        bgap = np.zeros((P, B), dtype=np.uint32)
        lat = np.zeros(B, dtype=np.int64)
        cur = [-1] * P
        gcur = [0] * P
        gend = [0] * P
        cchunk: list[Any] = [None] * P
        pool = _ChunkPool(tr, P + 2)
        n_chunks = int(tr.index.shape[0]) if n_refs_total else 0

        kernel = self.memory.module.engine_run
        memory = self.memory
        # Only a first-touch page table grows (the memory model's geometry says which).
        geometry = getattr(memory, "geometry", None)
        first_touch = geometry is not None and geometry.placement == PLACE_FIRST_TOUCH

        def page_limit() -> np.int64:
            # Room for one more window's pages (each reference touches at most 2 pages).
            if not first_touch:
                return _INF
            memory.reserve(4 * P * B)
            return np.int64(memory.state[memory.geometry.st_pt].shape[0] // 2 - 2 * P * B - 2)

        plimit = page_limit()
        mstate = memory.state
        window = np.int64(self.window)
        pthresh = np.int64(private_threshold(self.machine))
        sched = self.sched
        wants_profile = bool(sched.wants_profile)
        quantum = int(getattr(sched, "quantum", 0) or 0)
        timers = self._timers
        progress = self.progress

        def fill(c: int) -> None:
            g = gcur[c]
            e = gend[c]
            if g >= e:
                cs[F_LEN, c] = 0
                cs[F_POS, c] = 0
                cs[F_LAST, c] = 1
                return
            ch = cchunk[c]
            if ch is None or not (ch.start <= g < ch.start + len(ch)):
                ch = pool.get(tr.chunk_of_ref(g))
                cchunk[c] = ch
            lo = g - ch.start
            hi = min(e - ch.start, len(ch), lo + B)
            m = hi - lo
            baddr[c, :m] = ch.addr[lo:hi].view(np.int64)
            bsize[c, :m] = ch.size[lo:hi]
            bwrite[c, :m] = ch.write[lo:hi]
            bgap[c, :m] = ch.gap[lo:hi]
            gcur[c] = g + m
            cs[F_LEN, c] = m
            cs[F_POS, c] = 0
            cs[F_LAST, c] = 1 if g + m >= e else 0

        def apply(c: int, now: int, dec: tuple[int, int, int]) -> None:
            kind, s, cost = dec
            if kind == RUN:
                if s < 0 or s >= n or strand_core[s] != -1 or pred_rem[s] != 0:
                    raise RuntimeError(
                        f"scheduler {sched.name!r} chose strand {s} on core {c} at {now}, "
                        "which is not ready or already ran"
                    )
                start = now + cost
                schedc[c] += cost
                cur[c] = s
                strand_core[s] = c
                strand_start[s] = start
                cs[F_CLOCK, c] = start
                cs[F_PMISS, c] = 0
                cs[F_TAIL, c] = tail_list[s]
                gcur[c] = rs_list[s]
                gend[c] = rs_list[s + 1]
                fill(c)
                cs[F_STATE, c] = S_RUN
            elif kind == RETRY:
                heapq.heappush(timers, (now + cost, self._seq, c))
                self._seq += 1
            else:
                self._sleeping.add(c)

        # Start: every core sleeps; the scheduler places the first strand and wakes cores.
        self._now = 0
        if quantum > 0:
            heapq.heappush(timers, (quantum, -1, -1))
        if n:
            sched.on_start(0, 0)
        finished = 0
        refs_done = 0
        events = kernel_calls = 0
        t_kernel = 0.0
        next_progress = 0
        perf = time.perf_counter_ns
        while finished < n:
            limit = timers[0][0] if timers else _INF
            k0 = perf()
            code = kernel(
                mstate,
                cs,
                baddr,
                bsize,
                bwrite,
                bgap,
                lat,
                np.int64(limit),
                window,
                pthresh,
                plimit,
            )
            k1 = perf()
            t_kernel += k1 - k0
            kernel_calls += 1
            kind, c = divmod(int(code), CODE_MUL)
            if kind == R_GROW:
                plimit = page_limit()
                mstate = memory.state
                continue
            if kind == R_REFILL:
                fill(c)
                cs[F_STATE, c] = S_RUN
                continue
            events += 1
            if kind == R_DONE:
                now = int(cs[F_CLOCK, c])
                s = cur[c]
                cur[c] = -1
                cchunk[c] = None  # only the pool keeps decoded chunks alive
                cs[F_STATE, c] = S_IDLE
                strand_end[s] = now
                busy[c] += now - strand_start[s]
                pm = int(cs[F_PMISS, c])
                pmiss_core[c] += pm
                finished += 1
                refs_done += rs_list[s + 1] - rs_list[s]
                ready = []
                kinds = []
                for i in range(succ_off[s], succ_off[s + 1]):
                    d = succ_dst[i]
                    r = pred_rem[d] - 1
                    pred_rem[d] = r
                    if r == 0:
                        ready.append(d)
                        kinds.append(succ_kind[i])
                self._now = now
                if wants_profile:
                    sched.on_profile(s, c, int(strand_start[s]), now, instr_list[s], pm)
                if finished < n:
                    apply(c, now, sched.on_finish(c, s, now, ready, kinds))
                cost_ns[s] = perf() - k1
                if progress is not None and refs_done >= next_progress:
                    progress(refs_done, n_refs_total)
                    next_progress = refs_done + max(n_refs_total // 200, 1)
                continue
            # A timer is the earliest event.
            if not timers:
                raise RuntimeError(
                    f"deadlock: {n - finished} strands left, no core running and no timer "
                    f"(scheduler {sched.name!r})"
                )
            t, _, c = heapq.heappop(timers)
            self._now = t
            if c < 0:
                sched.on_quantum(t)
                heapq.heappush(timers, (t + quantum, -1, -1))
                continue
            apply(c, t, sched.on_idle(c, t))
        if progress is not None:
            progress(refs_done, n_refs_total)

        makespan = int(strand_end.max()) if n else 0
        idle = makespan - busy - schedc
        wall = time.perf_counter() - t_wall
        engine = {
            "window": self.window,
            "events": events,
            "kernel_calls": kernel_calls,
            "kernel_s": t_kernel / 1e9,
            "wall_s": wall,
            "median_strand_ns": float(np.median(cost_ns)) if n else 0.0,
            "chunk_loads": pool.loads,
            "n_chunks": n_chunks,
        }
        return EngineResult(
            makespan=makespan,
            strand_core=strand_core,
            strand_start=strand_start,
            strand_end=strand_end,
            busy_cycles=busy,
            sched_cycles=schedc,
            idle_cycles=idle,
            refs_per_core=cs[F_REFS].copy(),
            private_misses=pmiss_core,
            counters=dict(sched.counters),
            engine=engine,
        )
