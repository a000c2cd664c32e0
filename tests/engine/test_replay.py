"""The fast engine against the oracle engine, and the replay invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.engine import JobSpec, Replay
from simsched.engine.check import check_invariants
from simsched.engine.replay import HEARTBEAT_TURNS, Engine
from simsched.machine import load_machine
from simsched.memory import MemorySystem
from simsched.schedulers import get_scheduler, scheduler_names
from simsched.schedulers.base import RETRY, RUN, WAIT, Scheduler, retry, run
from simsched.trace import TraceBuilder, open_trace
from tests.engine.conftest import iterated_tasks, make_trace
from tests.engine.machines import CHAIN_4X1, ONE_BY_THREE, TWO_BY_TWO, out_of_order
from tests.oracles.engine_oracle import OracleEngine
from tests.oracles.memory_oracle import MemoryOracle
from tests.schedulers.subtree_socket import SubtreePerSocket

#: Every registered scheduler with its defaults (new schedulers are checked against the
#: oracle automatically), plus parameter variants worth checking on their own.
SCHEDS = [(name, {}) for name in scheduler_names()] + [
    ("ws", {"spawn_policy": "parent-first"}),
]


def _fast(trace, machine, cls, params, seed, window):
    mem = MemorySystem(machine)
    res = Engine(trace, machine, cls, params, seed, mem, window=window).run()
    return res, mem.stats()


def _agree_on_strands(trace, machine, cls):
    """Replay exactly (window 0) and by the oracle: the same core, end and private misses
    of every strand and the same counters; returns both memory statistics."""
    res, stats = _fast(trace, machine, cls, {}, 3, window=0)
    oracle_mem = MemoryOracle(machine)
    ora = OracleEngine(trace, machine, cls, {}, 3, oracle_mem).run()
    np.testing.assert_array_equal(res.strand_core, ora["strand_core"])
    np.testing.assert_array_equal(res.strand_end, ora["strand_end"])
    np.testing.assert_array_equal(res.private_misses, ora["private_misses"])
    assert res.counters == ora["counters"]
    return stats, oracle_mem.stats()


@pytest.mark.parametrize("mspec", [TWO_BY_TWO, ONE_BY_THREE], ids=["2x2", "1x3"])
@pytest.mark.parametrize("tseed", [1, 7])
@pytest.mark.parametrize(
    "sched,params", SCHEDS, ids=[n + "".join(f"-{v}" for v in p.values()) for n, p in SCHEDS]
)
def test_fast_engine_equals_oracle(tmp_path, mspec, tseed, sched, params):
    machine = load_machine(mspec)
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=tseed, depth=4, max_refs=60))
    _equals_oracle(trace, machine, get_scheduler(sched), params)


#: Out-of-order cores: few MSHRs and a short reorder buffer on two sockets (misses wait
#: for each other often), a few more of both on one (every rule of §6.1 binds on both).
OOO_MACHINES = [out_of_order(TWO_BY_TWO, mshrs=2, rob=8), out_of_order(ONE_BY_THREE, 3, 12)]


@pytest.mark.parametrize("mspec", OOO_MACHINES, ids=["2x2", "1x3"])
@pytest.mark.parametrize(
    "sched,params", SCHEDS, ids=[n + "".join(f"-{v}" for v in p.values()) for n, p in SCHEDS]
)
def test_fast_engine_equals_oracle_out_of_order(tmp_path, mspec, sched, params):
    """Out-of-order cores (docs/machine-model.md §6.1): misses in flight overlap within
    the MSHRs and the reorder buffer, dependent references wait for all of them, a strand
    ends when its last miss has completed.  A fifth of the references are dependent, and
    chunks of 7 references make the window loop return to Python often, so that cores
    come back to it stalled at their next reference.  Every scheduler's exact replay
    equals the oracle's (8 of the 10 did not on two sockets while a stalled reference
    could win a tie it should lose, see the next test)."""
    machine = load_machine(mspec)
    path = make_trace(tmp_path / "t.sst", seed=0, depth=4, max_refs=60, chunk_refs=7, dep_share=0.2)
    _equals_oracle(open_trace(path), machine, get_scheduler(sched), params)


def test_a_stalled_reference_at_a_tie_issues_after_the_lower_core(tmp_path):
    """Ties between references go to the lower core (docs/engine.md §4), also when an
    out-of-order core's reference waited for a miss in flight until the very cycle of a
    lower core's reference.  The window loop let the first reference of a call issue at
    its bound even when it had stalled up to it, ahead of the lower core: on this trace
    of 114 references in chunks of 3 (every chunk starts a call) WS took 3402 cycles
    where the documented order takes 3435."""
    machine = load_machine(out_of_order(TWO_BY_TWO, mshrs=2, rob=2))
    path = make_trace(tmp_path / "t.sst", seed=116, depth=2, max_refs=20, chunk_refs=3)
    stats, ostats = _agree_on_strands(open_trace(path), machine, get_scheduler("ws"))
    assert stats["nodes"] == ostats["nodes"]


def _equals_oracle(trace, machine, cls, params):
    """The exact replay (window 0) and the oracle's: the same schedule, cycles, private
    misses, counters, cache and memory statistics."""
    res, stats = _fast(trace, machine, cls, params, 3, window=0)
    check_invariants(trace, res, stats)
    oracle_mem = MemoryOracle(machine)
    ora = OracleEngine(trace, machine, cls, params, 3, oracle_mem).run()
    np.testing.assert_array_equal(res.strand_core, ora["strand_core"])
    np.testing.assert_array_equal(res.strand_start, ora["strand_start"])
    np.testing.assert_array_equal(res.strand_end, ora["strand_end"])
    np.testing.assert_array_equal(res.busy_cycles, ora["busy_cycles"])
    np.testing.assert_array_equal(res.sched_cycles, ora["sched_cycles"])
    np.testing.assert_array_equal(res.private_misses, ora["private_misses"])
    assert res.counters == ora["counters"]
    ostats = oracle_mem.stats()
    for a, b in zip(stats["levels"], ostats["levels"], strict=True):
        for f in ("accesses", "hits", "misses", "writebacks", "invalidations"):
            assert a[f] == b[f], (a["name"], f)
    assert stats["nodes"] == ostats["nodes"]


@pytest.mark.parametrize(("tail", "end"), [(0, 300), (150, 352)])
def test_oracle_ends_an_out_of_order_strand_after_its_last_miss(tmp_path, tail, end):
    """The oracle on the worked example of tests/memory/test_ooo.py: four misses of 100
    cycles, two MSHRs, the last reference dependent, issued at 0, 2, 100 and 200 after
    the strand's start.  The strand ends when its last miss completes (300), or after its
    tail if that is later (the core goes on at 202, plus 150)."""
    spec = {
        "name": "t-ooo-1",
        "cores_per_socket": 1,
        "caches": [
            {"name": "L1", "scope": "core", "size": 1024, "assoc": 2, "line": 64, "hit_latency": 2}
        ],
        "memory": {"latency": 100, "remote_latency": 0, "service_interval": 0},
    }
    machine = load_machine(out_of_order(spec, mshrs=2, rob=10))
    with TraceBuilder(tmp_path / "t.sst", program="four", gaps_exact=True) as b:
        b.refs(np.arange(4, dtype=np.uint64) * 64, 8, False, 0, [False, False, False, True])
        b.instr(tail)
    ora = OracleEngine(
        open_trace(tmp_path / "t.sst"), machine, get_scheduler("ws"), {}, 0, MemoryOracle(machine)
    ).run()
    assert (ora["strand_end"] - ora["strand_start"]).tolist() == [end]


@pytest.mark.parametrize("sched", scheduler_names())
def test_fast_engine_equals_oracle_over_socket_links(tmp_path, sched):
    """Four sockets in a chain (1-3 hops): remote fetches and write-backs queue on the
    links, steals cost by hops; every scheduler's replay equals the oracle's, links too."""
    machine = load_machine(
        {**CHAIN_4X1, "memory": {**CHAIN_4X1["memory"], "placement": "interleave"}}
    )
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=5, depth=4, max_refs=60))
    stats, ostats = _agree_on_strands(trace, machine, get_scheduler(sched))
    assert sum(link["lines"] for link in stats["links"]) > 0
    assert stats["links"] == ostats["links"]


@pytest.mark.parametrize("sched", ["ws", "laws"])
def test_fast_engine_equals_oracle_with_a_prefetcher(tmp_path, sched):
    """Private misses count the lines a prefetcher brings from beyond the private levels
    (docs/schedulers.md, profiling), per core and in each strand's profile; the oracle
    once counted only references slower than a private hit."""
    spec = {**TWO_BY_TWO, "caches": [dict(c) for c in TWO_BY_TWO["caches"]]}
    spec["caches"][0]["prefetch"] = {"streams": 4, "distance": 2, "degree": 2}
    machine = load_machine(spec)
    path = iterated_tasks(tmp_path / "sweeps.sst", 2, lines=48, stride=8192, gap=1, writes=True)
    trace = open_trace(path)
    stats, ostats = _agree_on_strands(trace, machine, get_scheduler(sched))
    assert stats["prefetch"]["beyond"] > 0
    assert stats["levels"] == ostats["levels"]


def test_multisocket_scheduler_keeps_subtrees_on_their_socket(tmp_path):
    machine = load_machine(TWO_BY_TWO)
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=11, depth=4, max_children=4))
    res, stats = _fast(trace, machine, SubtreePerSocket, {}, 0, window=0)
    check_invariants(trace, res, stats)
    ora = OracleEngine(trace, machine, SubtreePerSocket, {}, 0, MemoryOracle(machine)).run()
    np.testing.assert_array_equal(res.strand_core, ora["strand_core"])
    # Every strand ran on the socket of its level-1 subtree.
    from simsched.schedulers.base import SchedContext

    ctx = SchedContext(machine, range(machine.cores), trace, lambda n, cores: None)
    sched = SubtreePerSocket(ctx, {}, np.random.default_rng(0))
    sockets = np.array([machine.socket_of(c) for c in res.strand_core])
    want = np.array([sched.socket_of_strand(s) for s in range(trace.header.n_strands)])
    np.testing.assert_array_equal(sockets, want)
    assert set(want.tolist()) == {0, 1}


@pytest.mark.parametrize("sched", ["ws", "pdf"])
@pytest.mark.parametrize("window", [0, 7, 1000])
def test_invariants_any_window(tmp_path, sched, window):
    machine = load_machine("itrs-scaling-4")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=5, depth=5, max_refs=100))
    res, stats = _fast(trace, machine, get_scheduler(sched), {}, 1, window=window)
    check_invariants(trace, res, stats)
    assert res.makespan == res.strand_end.max()
    _check_cycles(res)


@pytest.mark.parametrize("window", [-1, 1.5, 2**40 + 1, 2**62, 2**63])
def test_the_engine_bounds_its_window(tmp_path, window):
    # run() and run_jobs() bound the window, but the engine given one from Python did not:
    # 2^62 wrapped the int64 window ends and the replay never finished, 2^63 raised
    # OverflowError, 1.5 ran
    from simsched.errors import ConfigError

    machine = load_machine("itrs-scaling-4")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=5, depth=3, max_refs=20))
    with pytest.raises(ConfigError, match="window"):
        _fast(trace, machine, get_scheduler("ws"), {}, 1, window=window)
    res, _ = _fast(trace, machine, get_scheduler("ws"), {}, 1, window=2**40)
    assert res.makespan == res.strand_end.max()


class _Answers(Scheduler):
    """One pool; every on_idle answers ``self.answer(strand)`` for its strand (or WAIT)."""

    name = "test-answers"

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.pool = []

    def on_start(self, strand, now):
        self.pool.append(strand)
        self.ctx.wake(1)

    def on_finish(self, core, strand, now, ready, kinds):
        self.pool.extend(ready)
        return self.on_idle(core, now)

    def on_idle(self, core, now):
        return self.answer(self.pool.pop()) if self.pool else WAIT


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (lambda s: None, "it is not a decision"),
        (lambda s: (RUN, s), "it is not a decision"),
        (lambda s: run(s, -5), "its cost is negative"),
        (lambda s: run(s, 1.5), "its cost is not an integer"),
        (lambda s: (RUN, None, 0), "its strand is not an integer"),
        (lambda s: (RETRY, -1, 0), "a retry must last at least 1 cycle"),
        (lambda s: (7, s, 0), "its kind 7 is none of RUN, RETRY, SLEEP"),
    ],
)
def test_a_nonsense_decision_names_the_scheduler(tmp_path, answer, why):
    # A negative cost started strands before their predecessors ended in a record marked
    # ok, a zero retry spun at one cycle forever, None failed inside the engine with
    # "cannot unpack", and an unknown kind ended in a deadlock that did not say why.
    machine = load_machine("itrs-scaling-4")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=5, depth=3, max_refs=20))
    cls = type("Answers", (_Answers,), {"answer": staticmethod(answer)})
    with pytest.raises(RuntimeError, match=f"scheduler 'test-answers' of job 'job0' .*: {why}"):
        _fast(trace, machine, cls, {}, 1, window=0)


def test_numpy_integers_are_decisions(tmp_path):
    machine = load_machine("itrs-scaling-4")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=5, depth=3, max_refs=20))
    cls = type(
        "Answers", (_Answers,), {"answer": staticmethod(lambda s: run(np.int64(s), np.int32(2)))}
    )
    res, stats = _fast(trace, machine, cls, {}, 1, window=0)
    check_invariants(trace, res, stats)


@pytest.mark.parametrize("where", ["__init__", "on_start", "on_idle"])
def test_an_error_in_a_schedulers_code_names_the_scheduler(tmp_path, where):
    # The traceback ended in the engine (or in SimPy's copy of the error) and named no
    # policy.
    from simsched.engine import JobSpec, Replay

    def boom(self, *args):
        raise ZeroDivisionError("plug-in bug")

    cls = type("Boom", (_Answers,), {"name": "test-boom", where: boom})
    machine = load_machine("itrs-scaling-4")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=5, depth=3, max_refs=20))
    r = Replay(machine, [JobSpec(trace, cls, {}, 0, "j0")])
    with pytest.raises(ZeroDivisionError, match="plug-in bug") as err:
        r.run()
    job = "" if where == "__init__" else " of job 'j0'"
    assert err.value.__notes__ == [
        f"raised by scheduler 'test-boom' (tests.engine.test_replay.Boom){job} at cycle 0"
    ]


def _check_cycles(res):
    """Busy cycles equal the strands' durations on the timeline; idle cycles are what the
    timeline leaves: no core is busy or scheduling longer than the makespan."""
    P = len(res.busy_cycles)
    on_core = np.bincount(res.strand_core, weights=res.strand_end - res.strand_start, minlength=P)
    np.testing.assert_array_equal(res.busy_cycles, on_core.astype(np.int64))
    # A core's scheduling cycles fit in the gaps between its strands (a decision's cost
    # is spent before the strand it picked starts).
    for c in range(P):
        mine = np.sort(res.strand_start[res.strand_core == c])
        ends = np.sort(res.strand_end[res.strand_core == c])
        gaps = int(mine[0]) + int(np.sum(mine[1:] - ends[:-1])) if mine.size else 0
        assert 0 <= res.sched_cycles[c] <= gaps
    assert np.all(res.idle_cycles >= 0)


def test_sync_last_child_continues_frame(tmp_path):
    """Under WS the post-sync strand runs on the core that finished its last predecessor."""
    machine = load_machine("itrs-scaling-4")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=2, depth=5, max_children=4))
    res, _ = _fast(trace, machine, get_scheduler("ws"), {}, 4, window=0)
    src, dst, kind = trace.edges.src, trace.edges.dst, trace.edges.kind
    joins = np.unique(dst[kind == 2])
    assert joins.size > 3
    for d in joins.tolist():
        preds = src[dst == d]
        last_end = res.strand_end[preds].max()
        assert res.strand_start[d] == last_end
        lasts = preds[res.strand_end[preds] == last_end]
        assert res.strand_core[d] in set(res.strand_core[lasts].tolist())


def test_one_core_runs_serial_order(tmp_path):
    m = load_machine("itrs-scaling-1")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=3, depth=4))
    n = trace.header.n_strands
    for sched, params in [("ws", {}), ("pdf", {})]:
        res, _ = _fast(trace, m, get_scheduler(sched), params, 0, window=0)
        assert np.all(np.diff(res.strand_start[np.argsort(res.strand_start, kind="stable")]) >= 0)
        assert np.array_equal(np.argsort(res.strand_start, kind="stable"), np.arange(n))
    res, _ = _fast(trace, m, get_scheduler("ws"), {"spawn_policy": "parent-first"}, 0, window=0)
    assert not np.array_equal(np.argsort(res.strand_start, kind="stable"), np.arange(n))


def test_same_seed_same_schedule_other_seed_differs(tmp_path):
    machine = load_machine("itrs-scaling-4")
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=9, depth=5, max_children=4))
    cls = get_scheduler("ws")
    a, _ = _fast(trace, machine, cls, {}, 1, window=1000)
    b, _ = _fast(trace, machine, cls, {}, 1, window=1000)
    c, _ = _fast(trace, machine, cls, {}, 2, window=1000)
    np.testing.assert_array_equal(a.strand_core, b.strand_core)
    np.testing.assert_array_equal(a.strand_end, b.strand_end)
    assert not np.array_equal(a.strand_core, c.strand_core)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tseed=st.integers(0, 10_000),
    depth=st.integers(1, 5),
    sched=st.sampled_from(SCHEDS),
    window=st.sampled_from([0, 1, 50, 100, 5000]),
    seed=st.integers(0, 3),
)
def test_invariants_hypothesis(tmp_path, tseed, depth, sched, window, seed):
    machine = load_machine(TWO_BY_TWO)
    path = tmp_path / f"h{tseed}-{depth}.sst"
    if not path.exists():
        make_trace(path, seed=tseed, depth=depth, max_refs=40)
    trace = open_trace(path)
    name, params = sched
    res, stats = _fast(trace, machine, get_scheduler(name), params, seed, window=window)
    check_invariants(trace, res, stats)
    _check_cycles(res)


@pytest.mark.parametrize("mspec", [TWO_BY_TWO, ONE_BY_THREE], ids=["2x2", "1x3"])
@pytest.mark.parametrize("sched", ["ws", "pdf"])
def test_per_core_stacks_equal_the_oracle(tmp_path, mspec, sched):
    """A trace naming its stack region: every core reads the stack references at its own
    copy (the oracle moves each reference by hand), through chunk copies made, evicted and
    remade in the engine's slots (many small chunks, few slot rows)."""
    machine = load_machine(mspec)
    path = make_trace(
        tmp_path / "t.sst", seed=5, depth=5, max_refs=60, chunk_refs=37, stack=(16384, 32768)
    )
    trace = open_trace(path)
    cls = get_scheduler(sched)
    res, stats = _fast(trace, machine, cls, {}, 3, window=0)
    check_invariants(trace, res, stats)
    oracle_mem = MemoryOracle(machine)
    ora = OracleEngine(trace, machine, cls, {}, 3, oracle_mem).run()
    np.testing.assert_array_equal(res.strand_core, ora["strand_core"])
    np.testing.assert_array_equal(res.strand_end, ora["strand_end"])
    np.testing.assert_array_equal(res.private_misses, ora["private_misses"])
    ostats = oracle_mem.stats()
    for a, b in zip(stats["levels"], ostats["levels"], strict=True):
        for f in ("accesses", "hits", "misses", "writebacks", "invalidations"):
            assert a[f] == b[f], (a["name"], f)
    # the stack copies matter: the same trace without its stack region replays otherwise
    plain = open_trace(make_trace(tmp_path / "p.sst", seed=5, depth=5, max_refs=60, chunk_refs=37))
    res_p, stats_p = _fast(plain, machine, cls, {}, 3, window=0)
    assert [lv["invalidations"] for lv in stats_p["levels"]] != [
        lv["invalidations"] for lv in stats["levels"]
    ]


class _Dawdler(Scheduler):
    """One FIFO pool whose cores each answer ``retry(1)`` a while before anything runs."""

    name = "test-dawdler"

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.pool: list[int] = []
        self.retries = 0

    def on_start(self, strand, now):
        self.pool.append(strand)
        self.ctx.wake(None)

    def on_finish(self, core, strand, now, ready, kinds):
        self.pool.extend(ready)
        self.ctx.wake(None)
        return self.on_idle(core, now)

    def on_idle(self, core, now):
        if self.retries < 3 * HEARTBEAT_TURNS:
            self.retries += 1
            return retry(1)
        return run(self.pool.pop(0), 1) if self.pool else WAIT


def test_progress_is_reported_while_no_strand_finishes(tmp_path):
    """A run whose cores only retried reported no progress at all (``--progress`` said
    nothing for minutes): the engine also calls the callback every few thousand turns of
    its loop, and a replay tells where it is; the results do not change."""
    m = load_machine("itrs-scaling-4")
    t = open_trace(make_trace(tmp_path / "t.sst", seed=1, depth=3, max_refs=20))
    calls: list[tuple[int, int, str]] = []
    reported = Replay(m, [JobSpec(t, _Dawdler, {})], window=0)
    reported.progress = lambda done, total: calls.append((done, total, reported.position()))
    res = reported.run()
    quiet = Replay(m, [JobSpec(t, _Dawdler, {})], window=0).run()
    assert res.makespan == quiet.makespan
    assert res.jobs[0].strand_end.tolist() == quiet.jobs[0].strand_end.tolist()
    early = [c for c in calls if c[0] == 0]  # before any strand ended
    assert len(early) >= 2
    assert early[0][2].startswith("cycle ") and early[0][2].endswith(
        f", 0 of {t.header.n_strands:,} strands done"
    )
    assert calls[-1][:2] == (t.header.n_refs, t.header.n_refs)
