"""The replay engine: a short event loop over jobs, cores and the control plane.

Design (docs/engine.md; docs/architecture.md §3):

* **Mechanism only.**  The engine owns time, cores, strand states and jobs; every
  decision is a scheduler's (which strand a core runs) or a processor controller's
  (which cores a job holds).  Three parts: the :class:`~simsched.engine.cores.CoreDriver`
  (buffers, per-core state, calls into the memory model's window loop — the only code
  that knows the memory model), :class:`~simsched.engine.job.Job` (one trace's tables,
  readiness, strand records, scheduler) and this loop.  The loop's class
  :class:`Replay` keeps here what runs at every event (timers, decisions, a finishing
  strand, the loop itself); what runs at the control plane's events (arrivals,
  allotments, moves: :mod:`simsched.engine._moves`), what it reports (result, deadlock,
  blame: :mod:`simsched.engine._report`) and the checks of the policies' answers
  (:mod:`simsched.engine.decisions`) live apart.
* **Events.**  A core finishing its strand comes from the window loop.  The engine's own
  events sit in one heap ordered by (time, kind, sequence): a job scheduler's quantum
  (``EV_QUANTUM``) before a core's timer (``EV_TIMER``: a core that asked to be called
  back, was woken, or joined a job).  Arrivals and the controller's quantum run as SimPy
  processes (:mod:`simsched.engine.control`) on an environment whose clock is the
  engine's cycle clock; at equal times they come before the heap's events, and finishing
  cores come before everything.  The window loop runs until the earliest of these, so
  schedulers and controllers see every event in global time order.
* **Cores between jobs.**  A core changes jobs only between strands: when the controller
  takes a core that is running a strand, the core finishes it, its job's scheduler is
  told (:meth:`~simsched.schedulers.base.Scheduler.on_depart`) and the core joins its new
  job (:meth:`~simsched.schedulers.base.Scheduler.on_cores_changed`, then ``on_idle``).
  A core that joins a job other than the last one it held (a *move*: the old job's
  worker is put to sleep, the new one's woken) is unavailable for
  ``machine.costs.core_move`` cycles: its first call into the new job's scheduler, by a
  timer or a wake, comes no earlier (docs/jobs.md, "Moves").
* **Determinism.**  The only randomness is the job schedulers' generators: job 0's is
  seeded with the run's seed (so a single job replays exactly as :class:`Engine` does),
  job ``j > 0``'s with ``(seed, j)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from simsched.engine._moves import CoreMoves
from simsched.engine._report import ReplayReport
from simsched.engine.control import ControlPlane
from simsched.engine.controllers import (
    Controller,
    check_departures,
    check_quantum,
    get_controller,
)
from simsched.engine.cores import (
    BufferPlan,
    CoreDriver,
    buffer_plan,
    check_buffers,
    whole_budget,
)
from simsched.engine.decisions import bad_decision, decision_int
from simsched.engine.events import EventQueue
from simsched.engine.facts import TraceFacts
from simsched.engine.job import MAX_JOBS, Job, JobSpec
from simsched.engine.outcome import EngineResult, ReplayResult, single_result
from simsched.engine.spin import batching_enabled, spin
from simsched.errors import ConfigError, SimschedError
from simsched.memory.window import INF
from simsched.params import MAX_ARRIVAL, check_int, check_seed
from simsched.schedulers.base import RETRY, RUN, SLEEP, Scheduler

#: Default interleaving window in cycles (see docs/engine.md for its measured error).
DEFAULT_WINDOW = 100
#: Largest interleaving window accepted (the engine's clock is 64-bit; a window beyond
#: 2^40 cycles means "never interleave", which is 0's opposite).  The engine checks it
#: itself: a Replay given 2^62 from Python wrapped its int64 window ends and never
#: finished, and 2^63 raised OverflowError.  Seeds: MAX_SEED.
MAX_WINDOW = 2**40
#: Most controller quanta a run may tick through before its last job arrives.  The
#: controller's quantum process wakes at every boundary, busy or idle, and each wake costs
#: the control plane some 25 us and appends an allotment entry: 2^20 quanta are about half
#: a minute of waiting, while an arrival of 2^60 cycles (the job-set schema allows it) at
#: a quantum of 2000 cycles was 5.8e14 idle wakes, a run that never ended.
MAX_WAIT_QUANTA = 2**20

#: Turns of the event loop between two calls of the progress callback that no finished
#: strand prompted: a run whose cores only retry (a plug-in answering ``retry(1)``
#: forever) finishes no strand, and its progress display said nothing for ever.  A turn
#: takes microseconds, so this is a call every few milliseconds, and the display decides
#: by the wall clock whether to show it.
HEARTBEAT_TURNS = 4096

# Kinds of the engine's own events (the order of the kinds at equal times).
EV_QUANTUM = 0
EV_TIMER = 1

#: ``stop_when(job, strand, now, scheduler)`` of :class:`Replay`.
StopWhen = Callable[[int, int, int, Scheduler], bool]


# The loop and what runs at every strand are here; what runs at the control plane's
# events (CoreMoves) and what the replay reports (ReplayReport) are mixins, whose
# methods the loop calls as its own: no call layer is added on the fast path.
class Replay(CoreMoves, ReplayReport):
    """Replay a set of jobs on one machine under a processor controller.

    Parameters
    ----------
    machine
        The resolved machine.
    jobs
        The jobs, in job-set order (arrival cycles in each :class:`JobSpec`).
    controller
        A :class:`~simsched.engine.controllers.Controller` (default: ``all``).
    seed
        Seed of the job schedulers' generators.
    window
        Interleaving window in cycles (0 = strict).
    memory
        A :class:`~simsched.memory.MemorySystem` to use (default: the engine builds one).
    progress
        Optional callback ``progress(refs_done, refs_total)``.
    stop_when
        Optional callback ``stop_when(job, strand, now, scheduler)``, called after every
        strand's completion has been handled: when it returns True the replay stops there,
        with the strands not finished unrecorded (steady-state sampling,
        :class:`simsched.engine.sampling.IterationSampler`).
    decode_ahead
        Decode trace chunks ahead in background threads (default); False: each chunk when
        a core needs it.  Only the wall time differs.
    """

    def __init__(
        self,
        machine: Any,
        jobs: Sequence[JobSpec],
        *,
        controller: Controller | None = None,
        seed: int = 0,
        window: int = DEFAULT_WINDOW,
        memory: Any = None,
        progress: Callable[[int, int], None] | None = None,
        stop_when: StopWhen | None = None,
        decode_ahead: bool = True,
    ) -> None:
        window = check_int("window", window, 0, MAX_WINDOW)
        if not jobs:
            raise ConfigError("a replay needs at least one job")
        if len(jobs) > MAX_JOBS:
            raise ConfigError(f"{len(jobs)} jobs: at most {MAX_JOBS} per run")
        for i, s in enumerate(jobs):
            check_quantum(getattr(s.scheduler, "quantum", 0), f"scheduler {s.scheduler.name!r}")
            # The job-set schema bounds arrivals; a JobSpec or JobSet made in Python did
            # not pass it: a negative arrival started at cycle 0, 2^62 (the engine's
            # "never") reported a deadlock, and beyond it the run raised IndexError.
            check_int(f"job {s.name or i!r}: arrival", s.arrival, 0, MAX_ARRIVAL)
        self.machine = machine
        self.specs = list(jobs)
        self.P = P = machine.cores
        self.window = int(window)
        # a JobSet's seed given to run_jobs from Python skipped the schema: -1 failed in
        # numpy with a traceback, 2^64 and 1.5 ran and were recorded as the run's seed
        self.seed = check_seed(seed)
        self.controller = controller or get_controller("all")(machine, len(jobs))
        # a scheduler without on_depart under a controller that moves cores failed in the
        # middle of the run, at a cycle that depended on the arrivals
        check_departures(self.controller, (s.scheduler for s in self.specs))
        check_arrivals(self.specs, self.controller.quantum)
        plan, width = plan_buffers(machine, jobs)
        self.driver = CoreDriver(
            machine,
            window=window,
            chunk_width=width,
            memory=memory,
            plan=plan,
            decode_ahead=decode_ahead,
            first=[(j, s.trace) for j, s in enumerate(jobs) if s.arrival == 0],
        )
        self.memory = self.driver.memory
        self.progress = progress
        self.stop_when = stop_when
        #: whether ``stop_when`` stopped the replay before every job finished
        self.stopped = False
        self.socket_of = [machine.socket_of(c) for c in range(P)]
        # the sockets assign_cores keeps jobs on: none (all one) under placement=any
        by_socket = getattr(self.controller, "placement", "sockets") == "sockets"
        self.alloc_socket_of = self.socket_of if by_socket else [0] * P
        self.jobs: list[Job | None] = [None] * len(jobs)
        self.active: list[Job] = []
        self.left = len(jobs)
        self.now = 0
        self._seq = 0
        # The engine's own events: quanta in a heap, core timers mostly in lanes
        # (engine.events).
        self._events = EventQueue()
        # Per core: owning job (-1: free), job it moves to after its strand (None: stays),
        # running job and strand, timer generation (a stale timer is dropped).
        self.owner = [-1] * P
        self.pending: list[int | None] = [None] * P
        self.run_job: list[Job | None] = [None] * P
        self.cur = [-1] * P
        self.gen = [0] * P
        self.timer_live = [False] * P
        self.n_running = 0
        # Per core: cycles running strands, cycles of decisions, private misses (lists
        # while the replay runs, a NumPy item costs 3x more per strand; arrays at the end).
        self.busy = [0] * P
        self.schedc = [0] * P
        self.pmiss = [0] * P
        # Per core, its memory counters when its last strand ended (= when the next one
        # starts: an idle core serves no references).
        self.read_mem = self.memory.core_counter_reader()
        self.mem0 = [self.read_mem(c) for c in range(P)]
        self.series: list[tuple[int, list[int], list[int], list[int]]] = []
        self.reallocations = 0
        self.served: list[set[int]] = [set() for _ in range(P)]
        # Per core: the last job it held (-1: none yet) and the cycle before which it
        # cannot act after a move (docs/jobs.md, "Moves").
        self.move_cost = int(machine.costs.core_move)
        self.last_job = [-1] * P
        self.avail = [0] * P
        self.core_moves = 0
        # Per core after a move: (job, refs, misses) when it joined.
        self.warm: list[tuple[Job, int, int] | None] = [None] * P
        self.joins = 0
        self.events = 0
        # Idle thieves' calls (and stale timers) handled in batches by engine.spin.
        self.batched = 0
        self.spin_steals = batching_enabled()
        self._cpu0 = 0.0
        self._stall = 0
        self._quiet = -1
        self.refs_total = sum(int(s.trace.header.n_refs) for s in jobs)
        # Whole-program measurements the schedulers want, made now rather than when a job
        # arrives (docs/architecture.md §4.3), so none is counted as control time.
        self.facts = [TraceFacts(s.trace, machine) for s in self.specs]
        for f, s in zip(self.facts, self.specs, strict=True):
            f.prepare(
                s.scheduler.wanted_facts(s.scheduler.resolve_params(s.params), s.trace, machine)
            )
        self.control = ControlPlane(self, self.specs, self.controller.quantum)

    def _job(self, jid: int) -> Job:
        """Job ``jid``, which has arrived."""
        job = self.jobs[jid]
        assert job is not None, f"job {jid} has not arrived"
        return job

    # -- the engine's own events: wakes (a service for schedulers), timers, quanta ------
    def _wake(self, job: Job, n: int | None, cores: Sequence[int] | None) -> None:
        sl = job.sleeping
        if not sl:
            return
        cand = sorted(sl) if cores is None else sorted(c for c in cores if c in sl)
        if n is not None:
            cand = cand[: max(int(n), 0)]
        # _timer for each woken core, inlined: a push wakes every sleeper, hundreds of
        # cores at a time under WS on many cores
        now, avail, gen, live, seq = self.now, self.avail, self.gen, self.timer_live, self._seq
        push = self._events.push_timer
        for c in cand:
            sl.discard(c)
            t = avail[c] if avail[c] > now else now  # a core that just moved is not there yet
            push((t, EV_TIMER, seq, c, gen[c]), t - now)
            seq += 1
            live[c] = True
        self._seq = seq

    def _timer(self, t: int, c: int) -> None:
        t = max(t, self.avail[c])  # a core that just moved is not there yet
        self._events.push_timer((t, EV_TIMER, self._seq, c, self.gen[c]), t - self.now)
        self._seq += 1
        self.timer_live[c] = True

    def _push_quantum(self, t: int, jid: int) -> None:
        self._events.push((t, EV_QUANTUM, self._seq, jid, 0))
        self._seq += 1

    # -- decisions ----------------------------------------------------------------------
    def _apply(self, job: Job, c: int, now: int, dec: tuple[int, int, int]) -> None:
        try:
            kind, s, cost = dec
        except (TypeError, ValueError):
            raise bad_decision(job, c, now, dec, "it is not a decision") from None
        # A plug-in's nonsense must fail here, naming it: a negative cost started strands
        # before their predecessors ended, a zero retry spun forever at one cycle, and an
        # unknown kind ended in a deadlock that did not say why.
        if type(cost) is not int:
            cost = decision_int(job, c, now, dec, "cost")
        if cost < 0:
            raise bad_decision(job, c, now, dec, "its cost is negative")
        if kind == RUN:
            if type(s) is not int:
                s = decision_int(job, c, now, dec, "strand")
            job.check_runnable(s, c, now)
            start = now + cost
            self.schedc[c] += cost
            job.schedc += cost
            self.cur[c] = s
            self.run_job[c] = job
            job.strand_core[s] = c
            job.strand_start[s] = start
            self.driver.start(c, job, s, start)
            self._quiet = -1
            self.n_running += 1
            self._stall = 0
        elif kind == RETRY:
            if cost < 1:
                raise bad_decision(job, c, now, dec, "a retry must last at least 1 cycle")
            self._timer(now + cost, c)
        elif kind == SLEEP:
            job.sleeping.add(c)
        else:
            raise bad_decision(job, c, now, dec, f"its kind {kind!r} is none of RUN, RETRY, SLEEP")

    def _core_done(self, c: int, perf: Callable[[], int]) -> None:
        t0 = perf()
        job = self.run_job[c]
        assert job is not None, f"core {c} finished no strand"
        now, pm = self.driver.finish(c)
        s = self.cur[c]
        self.cur[c] = -1
        self.run_job[c] = None
        self.n_running -= 1
        job.strand_end[s] = now
        d = now - job.strand_start[s]
        self.busy[c] += d
        job.busy += d
        self.pmiss[c] += pm
        job.pmiss += pm
        # The strand's memory counters: the core served only this strand's references
        # since its previous strand ended (one read per strand).
        now_mem = self.read_mem(c)
        llc0, loc0, rem0 = self.mem0[c]
        self.mem0[c] = now_mem
        job.strand_mem[s] = (pm, now_mem[0] - llc0, now_mem[1] - loc0, now_mem[2] - rem0)
        ready, kinds = job.release(s)
        if ready:
            self.driver.prefetch(job, ready)
        self.now = now
        self.events += 1
        if self.warm[c] is not None:
            self._warm_check(c)
        if job.sched.wants_profile:
            job.sched.on_profile(s, c, job.strand_start[s], now, job.instr[s], pm)
        if job.done:
            self._job_done(job, now)
        elif (dest := self.pending[c]) is not None:
            self.pending[c] = None
            self._leave(c, job, now)
            job.ctx.set_cores(job.cores)
            job.sched.on_depart(c, s, now, ready, kinds)
            job.sched.on_cores_changed((), (c,), now)
            dj = self.jobs[dest] if dest >= 0 else None
            if dj is not None and not dj.done:
                self._join(c, dj, now)
                if dj.start_cycle < 0:
                    self._start_job(dj, now)
                else:
                    dj.ctx.set_cores(dj.cores)
                    dj.sched.on_cores_changed((c,), (), now)
                    self._timer(now, c)
            self._record(now)
        else:
            self._apply(job, c, now, job.sched.on_finish(c, s, now, ready, kinds))
        if self.stop_when is not None and self.stop_when(job.jid, s, now, job.sched):
            self.stopped = True
        job.cost_ns[s] = perf() - t0

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> ReplayResult:
        """Replay every job to its end; returns the :class:`ReplayResult`."""
        try:
            return self._run()
        except SimschedError:
            raise
        except Exception as exc:
            # A plug-in's own error ended with a traceback into simsched and named no
            # policy: the note says whose code raised it.
            self._blame(exc)
            raise

    def _run(self) -> ReplayResult:
        t_wall = time.perf_counter()
        self._cpu0 = time.thread_time()
        perf = time.perf_counter_ns
        events = self._events
        env = self.control.env
        driver = self.driver
        self.control_ns = 0
        next_progress = 0
        progress = self.progress
        periodic = self.control.periodic + sum(
            1 for s in self.specs if s.scheduler.quantum > 0 and self.controller.quantum == 0
        )
        # Only SimPy processes schedule control events, and only inside env.step(), so
        # the next control time changes only after a step.
        t_env = self._peek()
        ctl_ns = 0
        spinning = self.spin_steals
        turns = 0
        beat = HEARTBEAT_TURNS if progress is not None else INF
        while self.left and not self.stopped:
            turns += 1
            if turns >= beat and progress is not None:  # beat is INF without progress
                beat = turns + HEARTBEAT_TURNS
                progress(sum(j.refs_done for j in self.jobs if j is not None), self.refs_total)
            top, src = events.top()
            t_heap = top[0] if top is not None else INF
            limit = t_heap if t_heap < t_env else t_env
            c = -1
            if spinning and t_heap < t_env and top is not None and top[1] == EV_TIMER:
                # Failing steal attempts at the top of the heap, in a batch (engine.spin);
                # a core may finish meanwhile (c >= 0).
                c, k = spin(self, t_env, EV_TIMER)
                if c < 0 and k:
                    continue
            # Skipped when the window loop already returned at this limit and no strand
            # started since: every core's next event is later (or a reference at this
            # very cycle, which comes after the engine's own events), so it would return
            # at once again.
            if c < 0 and limit != self._quiet:
                c = driver.advance(limit)
                self._quiet = limit if c < 0 else -1
            if c >= 0:
                self._core_done(c, perf)
                if progress is not None:
                    done = sum(j.refs_done for j in self.jobs if j is not None)
                    if done >= next_progress:
                        progress(done, self.refs_total)
                        next_progress = done + max(self.refs_total // 200, 1)
                continue
            if limit >= INF:
                self._deadlock("no core running and no event pending")
            if t_env <= t_heap:
                self.now = t_env
                self.events += 1
                k0 = perf()
                env.step()
                t_now = t_env
                t_env = self._peek()
                ctl_ns += perf() - k0
                self._check_stall(periodic, t_now)
                continue
            t, kind, _, a, g = events.pop(src)
            self.now = t
            self.events += 1
            if kind == EV_TIMER:
                if g != self.gen[a]:
                    continue
                self.timer_live[a] = False
                job = self._job(self.owner[a])
                self._apply(job, a, t, job.sched.on_idle(a, t))
            else:
                job = self._job(a)
                if job.done:
                    continue
                job.desire = job.ask_desire(t)
                self._push_quantum(t + job.sched.quantum, a)
                self._check_stall(periodic, t)
        if progress is not None:
            # a sampled replay stops early: its last report is what it replayed, not 100 %
            done = self.refs_total
            if self.stopped:
                done = sum(j.refs_done for j in self.jobs if j is not None)
            progress(done, self.refs_total)
        self.driver.slots.close()
        self.control_ns = ctl_ns
        try:
            return self._result(time.perf_counter() - t_wall)
        finally:
            self._release()

    def _peek(self) -> int:
        t = self.control.env.peek()
        return INF if t == float("inf") else int(t)


def plan_buffers(machine: Any, jobs: Sequence[JobSpec]) -> tuple[BufferPlan, int]:
    """The chunk buffers a replay of ``jobs`` on ``machine`` will use, and the longest
    chunk; refuses (:class:`ConfigError`, one line) buffers that cannot fit, so that a
    caller can check before it builds anything (the memory model compiles per geometry).
    """
    width = max((int(np.max(s.trace.index["n"])) for s in jobs if s.trace.header.n_refs), default=1)
    chunks = sum(len(s.trace.index["n"]) for s in jobs)
    plan = buffer_plan(machine.cores, width, chunks=chunks, whole=whole_budget())
    check_buffers(plan, machine.cores, width, machine.name)
    return plan, width


def check_arrivals(specs: Sequence[JobSpec], quantum: int) -> None:
    """Refuse a last arrival more than :data:`MAX_WAIT_QUANTA` quanta after the start
    (:class:`ConfigError`, one line naming the job)."""
    if quantum <= 0:
        return  # no quantum process: the engine jumps from event to event
    last = max(range(len(specs)), key=lambda j: int(specs[j].arrival))
    t = int(specs[last].arrival)
    if t // quantum > MAX_WAIT_QUANTA:
        least = -(-t // MAX_WAIT_QUANTA)
        raise ConfigError(
            f"job {specs[last].name or last!r} arrives at cycle {t}, {t // quantum} quanta of "
            f"{quantum} cycles after the start: the controller wakes at every quantum, idle "
            f"or not, and a run may tick through at most 2^20 of them before its last "
            f"arrival (give a quantum of at least {least} cycles, or an earlier arrival)"
        )


class Engine:
    """Replay one trace on one machine under one scheduler (one job under ``all``).

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
        A :class:`~simsched.memory.MemorySystem` of ``machine`` (default: a new one);
        its state is mutated by the replay.
    window
        Interleaving window in cycles (0 = strict global order of references).
    progress
        Optional callback ``progress(refs_done, refs_total)``.
    stop_when
        As for :class:`Replay`.
    decode_ahead
        Decode trace chunks ahead in background threads (default); False: each chunk when
        a core needs it.  Only the wall time differs.
    """

    def __init__(
        self,
        trace: Any,
        machine: Any,
        scheduler: type[Scheduler],
        params: dict[str, Any] | None,
        seed: int,
        memory: Any = None,
        *,
        window: int = DEFAULT_WINDOW,
        progress: Callable[[int, int], None] | None = None,
        stop_when: StopWhen | None = None,
        decode_ahead: bool = True,
    ) -> None:
        self.trace = trace
        self.machine = machine
        # The scheduler resolves and checks its parameters when the job is created.
        spec = JobSpec(trace, scheduler, dict(params or {}), 0, "job0")
        self.replay = Replay(
            machine,
            [spec],
            seed=seed,
            window=window,
            memory=memory,
            progress=progress,
            stop_when=stop_when,
            decode_ahead=decode_ahead,
        )
        self.memory = self.replay.memory

    @property
    def progress(self) -> Callable[[int, int], None] | None:
        """Progress callback ``progress(refs_done, refs_total)``."""
        return self.replay.progress

    @progress.setter
    def progress(self, f: Callable[[int, int], None] | None) -> None:
        self.replay.progress = f

    def position(self) -> str:
        """:meth:`Replay.position` of the replay."""
        return self.replay.position()

    def run(self) -> EngineResult:
        """Replay the whole trace; returns the :class:`EngineResult`."""
        r = self.replay.run()
        return single_result(r, 0)
