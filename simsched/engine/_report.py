"""What a replay tells: its result, where it is, a deadlock, the policy to blame.

The part of :class:`~simsched.engine.replay.Replay` that speaks about the replay rather
than runs it: the :class:`~simsched.engine.outcome.ReplayResult` built from the per-core
and per-job counters once the loop ends, the position a progress display reads while it
runs, the deadlock detection and its message naming the jobs left, and the note that
names the scheduler or controller whose own code raised.  None of it is on the path of a
strand; it is a mixin of ``Replay`` so that these methods read the replay's state as
their own, made in ``Replay.__init__`` and declared for the type checker in
:class:`~simsched.engine._state.ReplayState`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import FrameType

import numpy as np

from simsched.engine._state import ReplayState
from simsched.engine.controllers import Controller
from simsched.engine.job import Job
from simsched.engine.outcome import (
    STRAND_MEM_FIELDS,
    JobOutcome,
    ReplayResult,
    warmup_summary,
)
from simsched.errors import DeadlockError, innermost, note_raised_by
from simsched.schedulers.base import Scheduler


class ReplayReport(ReplayState):
    """A replay's result, position and errors (a mixin of ``Replay``)."""

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


def _ranges(cores: Sequence[int]) -> str:
    """Sorted core numbers as ``0-3,8,10-11``."""
    out: list[str] = []
    for c in cores:
        if out and c == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)
