"""Cores between jobs: arrivals, the controller's allotments, the moves, a job's end.

The part of :class:`~simsched.engine.replay.Replay` that runs at the control plane's
events rather than at every strand (docs/engine.md §3, "Cores between jobs"; docs/jobs.md):
a job's admission, the controller's quantum, a reallocation (the controller's answer
turned into core sets, idle cores leaving and joining at once, running ones marked to
move when their strand ends), a core's join and leave (allotted cycles, move costs, the
warm-up window after a move), a job's start and end, and the allotment series these
write.  It is a mixin of ``Replay``, so the event loop calls its methods as its own (no
extra call layer on the path of a finishing strand); the state it reads and writes is
the replay's, made in ``Replay.__init__`` and declared for the type checker in
:class:`~simsched.engine._state.ReplayState`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simsched.engine._state import ReplayState
from simsched.engine.controllers import JobView, assign_cores, check_quantum
from simsched.engine.decisions import checked_allotment
from simsched.engine.job import Job
from simsched.engine.outcome import WARMUP_REFS


class CoreMoves(ReplayState):
    """Jobs arriving and ending, and cores moving between them (a mixin of ``Replay``)."""

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


def _recorded_desire(job: Job | None) -> int:
    """A job's desire in the allotment series: 0 once finished (it desires nothing),
    -1 before it arrives or while its scheduler reports none."""
    if job is None:
        return -1
    if job.finish_cycle >= 0:
        return 0
    return -1 if job.desire is None else int(job.desire)
