"""The replay engine: a short event loop over jobs, cores and the control plane.

Design (docs/engine.md; docs/architecture.md §3):

* **Mechanism only.**  The engine owns time, cores, strand states and jobs; every
  decision is a scheduler's (which strand a core runs) or a processor controller's
  (which cores a job holds).  Three parts: the :class:`~simsched.engine.cores.CoreDriver`
  (buffers, per-core state, calls into the memory model's window loop — the only code
  that knows the memory model), :class:`~simsched.engine.job.Job` (one trace's tables,
  readiness, strand records, scheduler) and this loop.
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

import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import numpy as np

from simsched.engine.control import ControlPlane
from simsched.engine.controllers import (
    Controller,
    JobView,
    assign_cores,
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
from simsched.engine.events import EventQueue
from simsched.engine.facts import TraceFacts
from simsched.engine.job import MAX_JOBS, Job
from simsched.engine.outcome import (
    STRAND_MEM_FIELDS,
    WARMUP_REFS,
    EngineResult,
    JobOutcome,
    ReplayResult,
    single_result,
    warmup_summary,
)
from simsched.engine.spin import batching_enabled, spin
from simsched.errors import (
    ConfigError,
    DeadlockError,
    SimschedError,
    contract_error,
    innermost,
    note_raised_by,
)
from simsched.memory.window import INF
from simsched.params import MAX_ARRIVAL, check_int, check_seed
from simsched.schedulers.base import RETRY, RUN, SLEEP, Scheduler


def bad_decision(job: Job, c: int, now: int, dec: Any, why: str) -> RuntimeError:
    """The error of a scheduler that answered ``dec`` for core ``c``: the scheduler's fault,
    named with its job, like a strand that is not ready (:meth:`Job.check_runnable`)."""
    return contract_error(
        job.sched,
        f"scheduler {job.sched.name!r} of job {job.name!r} answered {dec!r} for core {c} at "
        f"{now}: {why} (build decisions with run(strand, cost), retry(cost) or WAIT, "
        "simsched.schedulers.base)",
    )


def checked_allotment(
    controller: Any, now: int, targets: Any, jids: Sequence[int], P: int
) -> dict[int, int | tuple[int, ...]]:
    """Controller ``controller``'s answer ``targets`` at ``now``, normalised (ints, tuples of
    cores), or the error naming what is wrong with it.

    An answer the engine cannot take otherwise ended in an ``IndexError``, or in a
    deadlock message blaming the jobs (a count of -1, 2.5 or "4"), or was taken silently
    (two jobs given the same core: the later took it).
    """
    where = f"controller {getattr(controller, 'name', type(controller).__name__)!r} at cycle {now}"
    if not isinstance(targets, Mapping):
        raise contract_error(controller, f"{where} answered {targets!r}, not a dict by job")
    out: dict[int, int | tuple[int, ...]] = {}
    owner: dict[int, int] = {}
    for jid, v in targets.items():
        if isinstance(jid, bool) or not isinstance(jid, int | np.integer) or jid not in jids:
            raise contract_error(
                controller,
                f"{where} gave cores to {jid!r}, which is no active job (active: {list(jids)})",
            )
        what = f"{where} gave job {int(jid)}"
        if isinstance(v, tuple | list):
            cores = tuple(v)
            if any(
                isinstance(c, bool) or not isinstance(c, int | np.integer) or not 0 <= c < P
                for c in cores
            ):
                raise contract_error(
                    controller, f"{what} cores {v!r}: cores are integers 0..{P - 1}"
                )
            for c in cores:
                if int(c) in owner:
                    raise contract_error(
                        controller, f"{what} core {int(c)}, also given to job {owner[int(c)]}"
                    )
                owner[int(c)] = int(jid)
            out[int(jid)] = tuple(int(c) for c in cores)
        elif isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise contract_error(
                controller, f"{what} {v!r}: a count of cores >= 0 or a tuple of cores"
            )
        else:
            # a count above P is as many cores as are free: a controller that passes on
            # the jobs' desires (which may exceed P) is a fair one to write
            out[int(jid)] = int(v)
    return out


def decision_int(job: Job, c: int, now: int, dec: tuple[int, int, int], what: str) -> int:
    """Decision ``dec``'s ``what`` (``strand`` or ``cost``) as an int (numpy integers are
    fine), else the error."""
    try:
        return int(operator.index(dec[1 if what == "strand" else 2]))
    except TypeError:
        raise bad_decision(job, c, now, dec, f"its {what} is not an integer") from None


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


@dataclass
class JobSpec:
    """One job of a job set, as the engine needs it.

    Attributes
    ----------
    trace
        The open trace.
    scheduler
        Scheduler class.
    params
        Scheduler parameters (the scheduler resolves and checks them).
    arrival
        Arrival cycle.
    name
        Label in results.
    """

    trace: Any
    scheduler: type[Scheduler]
    params: dict[str, Any]
    arrival: int = 0
    name: str = ""


class Replay:
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

    # -- services for schedulers ------------------------------------------------------
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

    # -- control plane ------------------------------------------------------------------
    def arrive(self, now: int, jids: Sequence[int]) -> None:
        """Jobs ``jids`` arrive at ``now``: admit them and reallocate (the control plane)."""
        self.now = now
        for j in jids:
            self.admit(j)
        self.reallocate(now, record=True)

    def admit(self, jid: int) -> None:
        """Job ``jid`` arrives now."""
        spec = self.specs[jid]
        rng = np.random.default_rng(self.seed if jid == 0 else [self.seed, jid])
        job = Job(
            jid,
            spec.name or f"job{jid}",
            spec.trace,
            self.machine,
            spec.scheduler,
            spec.params,
            rng,
            self._wake,
            arrival=self.now,
            facts=self.facts[jid],
        )
        self.jobs[jid] = job
        if job.n == 0:
            job.start_cycle = job.finish_cycle = self.now
            self.left -= 1
            return
        self.active.append(job)
        # The class was checked up front; an instance may have set its own quantum.
        check_quantum(job.sched.quantum, f"scheduler {job.sched.name!r}")
        if job.sched.quantum > 0 and self.controller.quantum == 0:
            self._push_quantum(self.now + job.sched.quantum, jid)

    def _push_quantum(self, t: int, jid: int) -> None:
        self._events.push((t, EV_QUANTUM, self._seq, jid, 0))
        self._seq += 1

    def quantum_boundary(self, now: int) -> None:
        """The controller's quantum ended: ask desires, then reallocate."""
        for job in self.active:
            if job.start_cycle >= 0:
                job.desire = job.ask_desire(now)
        self.reallocate(now, record=True)

    def reallocate(self, now: int, record: bool = False) -> None:
        """Ask the controller for allotments and move cores accordingly."""
        self.now = now
        views = self._views()
        targets = checked_allotment(
            self.controller, now, self.controller.allot(now, views), [v.jid for v in views], self.P
        )
        current = {j.jid: frozenset(j.cores) for j in self.active}
        busy = {c for c in range(self.P) if self.run_job[c] is not None}
        want = assign_cores(current, targets, self.alloc_socket_of, busy)
        new_owner = [-1] * self.P
        for jid, cores in want.items():
            for c in cores:
                new_owner[c] = jid
        added: dict[int, list[int]] = {}
        removed: dict[int, list[int]] = {}
        for c in range(self.P):
            dest = new_owner[c]
            src = self.owner[c]
            if self.run_job[c] is not None:
                # A running core moves when its strand ends.
                self.pending[c] = None if dest == src else dest
                continue
            if dest == src:
                continue
            if src >= 0:
                self._leave(c, self._job(src), now)
                removed.setdefault(src, []).append(c)
            if dest >= 0:
                self._join(c, self._job(dest), now)
                added.setdefault(dest, []).append(c)
        for jid in sorted(set(added) | set(removed)):
            job = self._job(jid)
            if job.start_cycle < 0:
                self._start_job(job, now)
                continue
            job.ctx.set_cores(job.cores)
            job.sched.on_cores_changed(added.get(jid, []), removed.get(jid, []), now)
            for c in added.get(jid, []):
                self._timer(now, c)
        if record or added or removed:
            self._record(now)

    def _views(self) -> list[JobView]:
        """The active jobs as the controller sees them (read-only copies).

        A controller that uses desires sees a job that has not reported one yet desiring
        its scheduler's ``initial_desire``; it is kept in the job so that the record's
        allotment series shows the desire the controller used.
        """
        if self.controller.uses_desire:
            for job in self.active:
                first = job.sched.initial_desire
                if job.desire is None and first is not None:
                    job.desire = int(first)
        return [JobView(j.jid, j.arrival, frozenset(j.cores), j.desire) for j in self.active]

    def _record(self, now: int) -> None:
        alloc = [len(j.cores) if j is not None else 0 for j in self.jobs]
        desire = [_recorded_desire(j) for j in self.jobs]
        # Cores a job holds only until the strand they run ends (taken away at a boundary).
        leaving = [0] * len(self.jobs)
        for c in range(self.P):
            if self.pending[c] is not None and self.owner[c] >= 0:
                leaving[self.owner[c]] += 1
        entry = (now, alloc, desire, leaving)
        if self.series and self.series[-1][0] == now:
            self.series[-1] = entry
        else:
            self.series.append(entry)

    def _account(self, job: Job, now: int) -> None:
        job.allot_cycles += len(job.cores) * (now - job.last_change)
        job.last_change = now

    def _leave(self, c: int, job: Job, now: int) -> None:
        if self.warm[c] is not None:
            self._warm_check(c, close=True)  # moved again before the window's end
        self._account(job, now)
        job.cores.discard(c)
        job.sleeping.discard(c)
        self.owner[c] = -1
        self.gen[c] += 1
        self.timer_live[c] = False
        self.reallocations += 1

    def _join(self, c: int, job: Job, now: int) -> None:
        self._account(job, now)
        job.cores.add(c)
        self.owner[c] = job.jid
        self.gen[c] += 1
        self.timer_live[c] = False
        if self.last_job[c] not in (-1, job.jid):
            self.avail[c] = now + self.move_cost
            self.core_moves += 1
            job.core_moves += 1
        self.last_job[c] = job.jid
        moved = bool(self.served[c] - {job.jid})
        self.served[c].add(job.jid)
        if moved:
            self.joins += 1
            self.warm[c] = (job, self.driver.refs_of(c), int(self.pmiss[c]))

    def _start_job(self, job: Job, now: int) -> None:
        job.start_cycle = now
        job.ctx.set_cores(job.cores)
        job.sleeping = set(job.cores)
        job.sched.on_start(0, now)

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

    def _warm_check(self, c: int, close: bool = False) -> None:
        got = self.warm[c]
        assert got is not None
        job, r0, m0 = got
        refs = self.driver.refs_of(c) - r0
        if refs >= WARMUP_REFS or close:
            job.warm_refs += refs
            job.warm_misses += int(self.pmiss[c]) - m0
            self.warm[c] = None

    def _job_done(self, job: Job, now: int) -> None:
        job.finish_cycle = now
        self._account(job, now)
        for c in sorted(job.cores):
            self.owner[c] = -1
            self.gen[c] += 1
            self.timer_live[c] = False
            self.pending[c] = None
        job.cores.clear()
        job.sleeping.clear()
        self.active.remove(job)
        self.left -= 1
        for c in range(self.P):
            if self.pending[c] == job.jid:
                self.pending[c] = -1
        if self.left:
            # recorded even when no core moves: with no other job running (the next yet to
            # arrive) the series kept the finished job holding its cores until the next
            # arrival's entry
            self.reallocate(now, record=True)
        else:
            self._record(now)

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

    def _blame(self, exc: BaseException) -> None:
        """Add a note to ``exc`` naming the scheduler or controller whose code raised it
        (the innermost one on its traceback), with its job and the cycle."""

        def policy(frame: FrameType) -> Scheduler | Controller | None:
            obj = frame.f_locals.get("self")
            return obj if isinstance(obj, Scheduler | Controller) else None

        culprit = innermost(exc, policy)
        if culprit is None:
            return
        cls = type(culprit)
        kind = "scheduler" if isinstance(culprit, Scheduler) else "controller"
        jid = getattr(getattr(culprit, "ctx", None), "job", -1)
        job = self.jobs[jid] if 0 <= jid < len(self.jobs) else None
        more = "" if job is None else f" of job {job.name!r}"
        origin = f"{cls.__module__}.{cls.__qualname__}"
        note_raised_by(exc, kind, cls.name, origin, f"{more} at cycle {self.now}")

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

    def position(self) -> str:
        """Where the replay is, for a progress display: the cycle reached and the strands
        done (``cycle 1,234,567, 310 of 4,096 strands done``); read while it runs, it
        shows a run that finishes no strand still moving (or not)."""
        done = sum(j.finished for j in self.jobs if j is not None)
        total = sum(int(s.trace.header.n_strands) for s in self.specs)
        return f"cycle {self.now:,}, {done:,} of {total:,} strands done"

    def _release(self) -> None:
        """Break the reference cycles among the engine's objects once the result is built,
        so a finished run's memory (model state, chunk buffers) is freed by reference
        counting when the caller drops it, not at the next cyclic collection: the control
        plane and the jobs' wake callbacks point back at the replay, and SimPy's
        environment holds bound methods of itself and the generator frames of its
        processes.  The memory model and the records stay readable."""
        self.control.release()
        for job in self.jobs:
            if job is not None:
                job.detach()

    def _peek(self) -> int:
        t = self.control.env.peek()
        return INF if t == float("inf") else int(t)

    def _check_stall(self, periodic: int, t: int) -> None:
        """Deadlock detection when only periodic events (quanta) remain: if rounds of
        them pass with no core running, no core timer and no arrival pending, nothing
        can ever run again."""
        if self.n_running or any(self.timer_live) or self.control.arrivals_left:
            self._stall = 0
            return
        self._stall += 1
        if self._stall > 2 * max(periodic, 1) + 2:
            self._deadlock("only periodic events remain")

    def _deadlock(self, why: str) -> None:
        def cores(j: Job) -> str:
            return f"cores {_ranges(sorted(j.cores))}" if j.cores else "no core"

        left = [
            f"{j.name} ({j.n - j.finished} strands left, scheduler {j.sched.name!r}, {cores(j)})"
            for j in self.active
        ]
        free = [c for c in range(self.P) if self.owner[c] < 0]
        raise DeadlockError(
            f"deadlock at cycle {self.now}: {why}; jobs not finished: {'; '.join(left)}; "
            f"free cores: {_ranges(free) if free else 'none'}"
        )

    def _result(self, wall: float) -> ReplayResult:
        outs = []
        cost = []
        for jid in range(len(self.jobs)):
            j = self._job(jid)
            core, start, end = j.arrays()
            counters, fields = j.outputs()
            outs.append(
                JobOutcome(
                    jid=j.jid,
                    name=j.name,
                    arrival=j.arrival,
                    start=j.start_cycle,
                    finish=j.finish_cycle,
                    strand_core=core,
                    strand_start=start,
                    strand_end=end,
                    busy_cycles=int(j.busy),
                    sched_cycles=int(j.schedc),
                    allotted_cycles=int(j.allot_cycles),
                    instructions=int(j.trace.header.n_instructions),
                    refs=int(j.n_refs),
                    counters=counters,
                    sched_fields=fields,
                    core_moves=j.core_moves,
                    move_cycles=j.core_moves * self.move_cost,
                    strand_mem=j.mem_arrays(STRAND_MEM_FIELDS),
                )
            )
            cost.append(np.asarray(j.cost_ns, dtype=np.int64))
        refs = self.driver.refs_per_core
        warmup = warmup_summary(self.jobs, self.joins)
        allc = np.concatenate(cost) if cost else np.zeros(0, np.int64)
        engine = {
            "window": self.window,
            "events": self.events,
            # idle thieves' calls replayed in batches, not events (engine.spin)
            "batched_attempts": self.batched,
            "kernel_calls": self.driver.kernel_calls,
            "kernel_s": self.driver.kernel_ns / 1e9,
            "wall_s": wall,
            # CPU time of the thread running the loop (the decoder thread is not in it)
            "cpu_s": time.thread_time() - self._cpu0,
            "median_strand_ns": float(np.median(allc)) if allc.size else 0.0,
            "chunk_loads": self.driver.slots.loads,
            # Chunks decoded ahead in the background, and of them those pushed out of their
            # row before any core read them.
            "chunks_ahead": self.driver.slots.ahead_loads,
            "chunks_unread": self.driver.slots.wasted,
            # Time the engine waited for chunks being decoded (in flight or not yet begun).
            "decode_wait_s": self.driver.slots.wait_ns / 1e9,
            # Time in the control plane (arrivals, controller quanta, reallocations).
            "control_s": self.control_ns / 1e9,
        }
        return ReplayResult(
            # a stopped replay ends at its last event (its jobs have not finished)
            makespan=self.now if self.stopped else max((o.finish for o in outs), default=0),
            jobs=outs,
            busy_cycles=np.asarray(self.busy, dtype=np.int64),
            sched_cycles=np.asarray(self.schedc, dtype=np.int64),
            refs_per_core=refs,
            private_misses=np.asarray(self.pmiss, dtype=np.int64),
            series=self.series,
            reallocations=self.reallocations,
            warmup=warmup,
            core_moves=self.core_moves,
            move_cycles=self.core_moves * self.move_cost,
            engine=engine,
        )


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


def _recorded_desire(job: Job | None) -> int:
    """A job's desire in the allotment series: 0 once finished (it desires nothing),
    -1 before it arrives or while its scheduler reports none."""
    if job is None:
        return -1
    if job.finish_cycle >= 0:
        return 0
    return -1 if job.desire is None else int(job.desire)


def _ranges(cores: Sequence[int]) -> str:
    """Sorted core numbers as ``0-3,8,10-11``."""
    out: list[str] = []
    for c in cores:
        if out and c == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


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
