"""The scheduler protocol as the engine drives it: targeted wakes, profiles, quanta,
changing core sets, deadlock detection."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.engine import JobSpec, Replay
from simsched.engine.check import check_invariants
from simsched.engine.controllers import get_controller
from simsched.errors import DeadlockError
from simsched.machine import load_machine
from simsched.schedulers import get_scheduler
from simsched.schedulers.base import WAIT, SchedContext, Scheduler, run
from simsched.schedulers.ws import WorkStealing
from simsched.trace import open_trace
from tests.engine.conftest import make_trace
from tests.engine.machines import TWO_BY_TWO


class OneQueue(Scheduler):
    """A FIFO pool; on_start wakes only the chosen core; everything is recorded."""

    name = "test-one-queue"
    wants_profile = True
    quantum = 500

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.pool = []
        self.profiles = []
        self.quanta = []
        self.changes = []

    def on_start(self, strand, now):
        self.pool.append(strand)
        self.ctx.wake(cores=[self.ctx.cores[-1]])

    def on_finish(self, core, strand, now, ready, kinds):
        self.pool.extend(ready)
        if len(self.pool) > 1:
            self.ctx.wake(len(self.pool) - 1)
        return self.on_idle(core, now)

    def on_idle(self, core, now):
        return run(self.pool.pop(0), 1) if self.pool else WAIT

    def on_profile(self, strand, core, start, end, instructions, private_misses):
        self.profiles.append((strand, core, start, end, instructions, private_misses))

    def on_quantum(self, now):
        self.quanta.append(now)
        return len(self.pool)


def _replay(tmp_path, cls, machine=TWO_BY_TWO, seed=0, **kw):
    m = load_machine(machine)
    t = open_trace(make_trace(tmp_path / "t.sst", seed=seed, depth=4, max_refs=40))
    r = Replay(m, [JobSpec(t, cls, cls.resolve_params({}))], **kw)
    return r, r.run(), t


def test_wake_cores_profile_and_quanta(tmp_path):
    r, res, t = _replay(tmp_path, OneQueue)
    sched = r.jobs[0].sched
    job = res.jobs[0]
    # wake(cores=[last]) woke only the last core: it ran the first strand.
    assert job.strand_core[0] == r.P - 1
    # One profile per strand, with the strand's own figures.
    assert sorted(p[0] for p in sched.profiles) == list(range(t.header.n_strands))
    instr = np.asarray(t.strands.instr)
    for s, c, start, end, ins, _pm in sched.profiles:
        assert (c, start, end, ins) == (
            job.strand_core[s],
            job.strand_start[s],
            job.strand_end[s],
            instr[s],
        )
    assert sum(p[5] for p in sched.profiles) == int(res.private_misses.sum())
    # Quanta every 500 cycles of the job's life, in order.
    q = sched.quanta
    assert q == list(range(500, 500 * (len(q) + 1), 500))
    assert q[-1] <= res.makespan < q[-1] + 500


class Stuck(OneQueue):
    """Never wakes anyone: only its quanta are left, so the engine must report a deadlock."""

    name = "test-stuck"

    def on_start(self, strand, now):
        self.pool.append(strand)


def test_deadlock_detected_with_only_periodic_events(tmp_path):
    with pytest.raises(
        DeadlockError,
        match=r"deadlock at cycle \d+: only periodic events remain; jobs not finished: "
        r"job0 \(\d+ strands left, scheduler 'test-stuck', cores 0-3\); free cores: none$",
    ):
        _replay(tmp_path, Stuck)


def test_deadlock_detected_without_events(tmp_path):
    class NoQuantum(Stuck):
        quantum = 0

    with pytest.raises(DeadlockError, match=r"deadlock at cycle \d+: no core running"):
        _replay(tmp_path, NoQuantum)


class RecordingWS(WorkStealing):
    name = "test-recording-ws"

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.seen = []

    def on_cores_changed(self, added, removed, now):
        self.seen.append((tuple(added), tuple(removed), self.ctx.cores, now))
        super().on_cores_changed(added, removed, now)


def test_cores_change_between_jobs_under_equi(tmp_path):
    m = load_machine("itrs-scaling-4")
    paths = [make_trace(tmp_path / f"t{i}.sst", seed=i, depth=5, max_refs=60) for i in (3, 4)]
    traces = [open_trace(p) for p in paths]
    specs = [
        JobSpec(traces[0], RecordingWS, RecordingWS.resolve_params({}), 0, "a"),
        JobSpec(traces[1], RecordingWS, RecordingWS.resolve_params({}), 2000, "b"),
    ]
    r = Replay(m, specs, controller=get_controller("equi")(m, 2), seed=5)
    res = r.run()
    a, b = (j.sched for j in r.jobs)
    # Job a gave two cores to b when b arrived; ctx.cores was updated before the call.
    removed = [x for x in a.seen if x[1]]
    assert removed and all(set(rm).isdisjoint(cores) for _, rm, cores, _ in removed)
    assert sum(len(x[1]) for x in removed) == 2
    assert res.reallocations >= 2
    for o, t in zip(res.jobs, traces, strict=True):
        check_invariants(t, o)
    # A core serves one job at a time.
    spans = []
    for o in res.jobs:
        for s in range(len(o.strand_core)):
            spans.append((int(o.strand_core[s]), int(o.strand_start[s]), int(o.strand_end[s])))
    spans.sort()
    for (c1, _s1, e1), (c2, s2, _e2) in zip(spans, spans[1:], strict=False):
        assert c1 != c2 or s2 >= e1
    # Allotments never exceed the machine.
    assert all(sum(alloc) <= m.cores for _, alloc, *_ in res.series)
    assert res.jobs[1].start >= 2000 and res.jobs[1].arrival == 2000


def test_all_controller_runs_jobs_one_after_another(tmp_path):
    m = load_machine("itrs-scaling-2")
    t = open_trace(make_trace(tmp_path / "t.sst", seed=2, depth=4))
    ws = get_scheduler("ws")
    specs = [JobSpec(t, ws, ws.resolve_params({}), 0, f"j{i}") for i in range(2)]
    res = Replay(m, specs, seed=1).run()
    j0, j1 = res.jobs
    assert j1.start == j0.finish and j1.strand_start.min() >= j0.finish


def test_ws_thieves_find_deques_departed_cores_left(tmp_path):
    """A core that leaves a WS job leaves its deque; the job's thieves still steal from it
    (otherwise its strands would wait for the core to come back)."""
    m = load_machine("itrs-scaling-2")
    t = open_trace(make_trace(tmp_path / "t.sst", seed=1, depth=2))
    ctx = SchedContext(m, (0, 1), t, lambda n, cores: None)
    ws = WorkStealing(ctx, {}, np.random.default_rng(0))
    ws.on_depart(1, 0, 10, [5, 6], [1, 0])
    ctx.set_cores((0,))
    ws.on_cores_changed((), (1,), 10)
    got = [ws.on_idle(0, 20 + i) for i in range(2)]
    assert [g[1] for g in got] == [5, 6] and ws.orphans == set()


def test_scheduler_quantum_below_the_floor_is_refused(tmp_path):
    """A job scheduler's own quantum has the controllers' floor (min_quantum)."""
    from simsched.engine.controllers import MIN_QUANTUM
    from simsched.errors import ConfigError

    class Hasty(Stuck):
        name = "test-hasty"
        quantum = MIN_QUANTUM - 1

    with pytest.raises(ConfigError, match="scheduler 'test-hasty': quantum 99 cycles is below"):
        _replay(tmp_path, Hasty)
