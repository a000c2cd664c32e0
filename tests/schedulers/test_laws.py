"""LAWS, LAWS-NC and CATS: Eq. 1 and the allocator, replay invariants, fast = oracle."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.engine.check import check_invariants
from simsched.engine.replay import Engine
from simsched.errors import ConfigError
from simsched.machine import load_machine
from simsched.memory import MemorySystem
from simsched.schedulers import get_scheduler
from simsched.schedulers.base import SchedContext
from simsched.schedulers.laws import allocate, allocator_fit
from simsched.trace import open_trace
from simsched.workloads import generate
from tests.engine.conftest import iterated_tasks, make_trace
from tests.engine.machines import CHAIN_4X1, TWO_BY_TWO
from tests.oracles.engine_oracle import OracleEngine
from tests.oracles.memory_oracle import MemoryOracle

FAMILY = ["laws", "laws-nc", "cats"]


def _fake_ctx(parent, spawn_index, branching, iteration, sockets=2):
    """A SchedContext over a frame table alone (one strand per frame)."""
    n = len(parent)
    frames = SimpleNamespace(
        parent=np.array(parent),
        level=np.zeros(n, dtype=np.int64),
        spawn_index=np.array(spawn_index),
        branching=np.array(branching),
        iteration=np.array(iteration),
        key_hash=np.arange(n),
        first_strand=np.arange(n),
        last_strand=np.arange(n),
    )
    strands = SimpleNamespace(frame=np.arange(n), instr=np.ones(n, dtype=np.int64))
    trace = SimpleNamespace(frames=frames, strands=strands, header=SimpleNamespace(n_strands=n))
    machine = load_machine({**TWO_BY_TWO, "sockets": sockets})
    return SchedContext(machine, range(machine.cores), trace, lambda *a: None)


def test_eq1_and_allocation_of_fig4():
    # [LAWS15] Fig. 4: main -> root on [0, D); the root has three children; the middle
    # one is split in two: alpha_2 = [D/3, D/2) goes to the first socket.
    parent = [-1, 0, 1, 1, 1, 3, 3]
    idx = [0, 0, 0, 1, 2, 0, 1]
    br = [0, 1, 3, 3, 3, 2, 2]
    it = [-1, 0, 0, 0, 0, 0, 0]
    ctx = _fake_ctx(parent, idx, br, it)
    r = ctx.data_ranges()
    third = 1 / 3
    want = [
        (0, 1),
        (0, 1),
        (0, third),
        (third, 2 * third),
        (2 * third, 1),
        (third, 0.5),
        (0.5, 2 * third),
    ]
    np.testing.assert_allclose(r, np.array(want, dtype=float))
    home, straddles = allocate(r, 2)
    assert home.tolist() == [0, 0, 0, 0, 1, 0, 1]
    assert straddles.tolist() == [True, True, False, True, False, False, False]
    # four sockets: the middle child ties between sockets 1 and 2 (the lower wins)
    home4, _ = allocate(r, 4)
    assert home4.tolist() == [0, 0, 0, 1, 3, 1, 2]


def test_allocate_rejects_bad_input():
    with pytest.raises(ConfigError):
        allocate(np.zeros((3, 3)), 2)
    with pytest.raises(ConfigError):
        allocate(np.zeros((3, 2)), 0)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 8),
    st.floats(0, 1, allow_nan=False).flatmap(
        lambda lo: st.tuples(st.just(lo), st.floats(lo, 1, allow_nan=False))
    ),
)
def test_allocate_picks_the_largest_share(m, rng_):
    lo, hi = rng_
    if hi - lo < 1e-6:
        return
    home, straddles = allocate([[lo, hi]], m)
    ov = [max(0.0, min(hi * m, i + 1) - max(lo * m, i)) for i in range(m)]
    assert ov[int(home[0])] >= max(ov) - 1e-9
    assert bool(straddles[0]) == (sum(o > 1e-9 for o in ov) > 1)


# -- replays ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("laws")
    out = {}
    for name, gen, p in [
        ("heat", "heat", {"nx": 34, "ny": 18, "cutoff": 4, "iters": 4}),
        ("sor-ir", "sor", {"nx": 34, "ny": 18, "cutoff": 4, "iters": 4, "irregular": True}),
        ("ge", "ge", {"n": 24, "cutoff": 4, "steps": 6}),
    ]:
        path = d / f"{name}.sst"
        generate(gen, path, init=False, **p)
        out[name] = path
    return out


def _replay(trace, machine, sched, params=None, seed=0, window=0):
    mem = MemorySystem(machine)
    eng = Engine(trace, machine, get_scheduler(sched), params, seed, mem, window=window)
    res = eng.run()
    return res, mem.stats(), eng.replay.jobs[0].sched


def _check_locality(trace, res, sched):
    """A socket-local task never leaves its socket; no task crosses sockets in the first
    iteration."""
    sock = np.array([sched.sock[c] for c in range(len(sched.sock))])
    run_on = sock[res.strand_core]
    frame = np.asarray(trace.strands.frame)
    it = np.asarray(trace.frames.iteration)
    home = np.asarray(sched.home)
    first = it[frame] == sched.first_it
    assert np.array_equal(run_on[first], home[frame[first]])
    parent = np.asarray(trace.frames.parent)
    keys = np.asarray(trace.frames.key_hash)
    for k, roots in sched.roots_by_iteration.items():
        frames_k = np.flatnonzero(it == k)
        by_key = dict(zip(keys[frames_k].tolist(), frames_k.tolist(), strict=True))
        for r in roots:
            root = by_key[int(keys[r])]
            sub = {root}
            for f in frames_k:  # parents precede children
                if int(parent[f]) in sub:
                    sub.add(int(f))
            on = np.unique(run_on[np.isin(frame, list(sub))])
            assert on.size == 1, (k, root, on)


@pytest.mark.parametrize("sched", FAMILY)
@pytest.mark.parametrize("name", ["heat", "sor-ir", "ge"])
def test_invariants_on_every_replay(small_traces, sched, name):
    trace = open_trace(small_traces[name])
    for mname in (TWO_BY_TWO, "opteron-8380-4x4"):
        machine = load_machine(mname)
        for seed in (0, 1):
            res, stats, s = _replay(trace, machine, sched, seed=seed, window=100)
            check_invariants(trace, res, stats)
            _check_locality(trace, res, s)
            f = res.sched_fields
            assert len(f["iteration_cycles"]) == len(np.unique(trace.frames.iteration)) - 1
            assert all(c > 0 for c in f["iteration_cycles"])
            assert [p["iteration"] for p in f["packing"]] == list(range(len(f["packing"])))


def _root_starts(trace, sched):
    """First strands of the CF roots every packed iteration ran under."""
    it = np.asarray(trace.frames.iteration)
    keys = np.asarray(trace.frames.key_hash)
    first = np.asarray(trace.frames.first_strand)
    out = []
    for k, roots in sched.roots_by_iteration.items():
        frames_k = np.flatnonzero(it == k)
        by_key = dict(zip(keys[frames_k].tolist(), frames_k.tolist(), strict=True))
        out += [int(first[by_key[int(keys[r])]]) for r in roots]
    return out


@pytest.mark.parametrize("sched", ["laws", "cats"])
def test_cf_start_pools_empty_lets_the_next_subtree_overlap_the_last_ones_tail(tmp_path, sched):
    """§3.4 read two ways: by default a socket's head starts a CF root only once the
    running subtree has finished; with ``cf_start=pools-empty`` as soon as no core of its
    socket has a socket-local task queued, so subtrees overlap and every rule but that
    one still holds.  A 24 KB L3 packs several subtrees per socket (8 or more)."""
    generate("heat", tmp_path / "h.sst", nx=130, ny=66, cutoff=4, iters=4, init=False)
    trace = open_trace(tmp_path / "h.sst")
    machine = load_machine(
        "opteron-8380-4x4",
        overrides={"caches.L1.size": "1KB", "caches.L2.size": "4KB", "caches.L3.size": "24KB"},
    )
    runs, by_head = {}, {}
    for start in ("finished", "pools-empty", "any-core"):
        res, stats, s = _replay(trace, machine, sched, {"cf_start": start}, window=100)
        check_invariants(trace, res, stats)
        _check_locality(trace, res, s)
        assert s.active_last == {} and s.active == [0] * s.S
        runs[start] = res
        by_head[start] = {s.is_head[c] for c in res.strand_core[_root_starts(trace, s)].tolist()}
    fin, ovl, _ = (runs[k].counters for k in runs)
    assert fin["cf_overlaps"] == 0 < ovl["cf_overlaps"] <= ovl["cf_subtrees"]
    # after the profiled iteration only head cores start CF subtrees, but with any-core
    assert by_head == {"finished": {True}, "pools-empty": {True}, "any-core": {True, False}}
    # the default is the rule as it was: same schedule as without the parameter
    default, _, _ = _replay(trace, machine, sched, window=100)
    assert np.array_equal(default.strand_start, runs["finished"].strand_start)
    with pytest.raises(ConfigError):
        get_scheduler(sched).resolve_params({"cf_start": "never"})


def test_laws_tunes_and_logs_each_iteration(small_traces):
    trace = open_trace(small_traces["heat"])
    res, _, s = _replay(trace, load_machine(TWO_BY_TWO), "laws")
    log = res.sched_fields["packing"]
    assert log[0]["move"] == "profile" and log[1]["move"] == "initial"
    assert res.sched_fields["packing_mode"] == "packed"
    # the packing logged per iteration is the tuner's sequence of packings
    h = s.tuner.history
    assert [p["cf_roots"] for p in log[1 : 1 + len(h)]] == [x.n_roots for x in h]
    assert [p["move"] for p in log[1 : 1 + len(h)]] == [x.move for x in h]
    assert all(p["move"] == "final" for p in log[1 + len(h) :])
    assert all(p["cf_roots"] == s.tuner.current.size for p in log[1 + len(h) :])


def test_cats_never_retunes(small_traces):
    trace = open_trace(small_traces["heat"])
    res, _, s = _replay(trace, load_machine(TWO_BY_TWO), "cats")
    log = res.sched_fields["packing"]
    assert {p["move"] for p in log[1:]} == {"fixed"}
    assert len({p["cf_roots"] for p in log[1:]}) == 1
    assert s.tuner is None


@pytest.mark.parametrize(("name", "roots"), [("heat", 2), ("sor-ir", 4)])
def test_cats_gives_every_socket_a_cf_root_when_one_subtree_fits(
    small_traces, name, roots, monkeypatch
):
    """A shared cache that holds the whole iteration packs it as one CF root; CATS moves
    the roots down until every socket has one ([CAB11] §III-B's first constraint), so no
    socket idles after the first iteration (the captured heat-512 sample on the Opteron
    ran at 3.97x speedup on one socket before).  SOR's sweep is two half-sweeps one after
    the other: each needs a root per socket, four in all."""
    big = {**TWO_BY_TWO, "name": "test-2x2-bigL2"}
    big["caches"] = [TWO_BY_TWO["caches"][0], {**TWO_BY_TWO["caches"][1], "size": 1 << 20}]
    machine = load_machine(big)
    trace = open_trace(small_traces[name])
    res, _, s = _replay(trace, machine, "cats")
    log = res.sched_fields["packing"]
    assert res.sched_fields["packing_mode"] == "packed"
    assert {p["cf_roots"] for p in log[1:]} == {roots}
    # the rule is CATS's alone: LAWS' allocator already cuts the iteration per socket
    import simsched.schedulers.laws as laws_module

    def never(*args):
        raise AssertionError("LAWS spread its roots")

    monkeypatch.setattr(laws_module, "spread_roots", never)
    laws, _, _ = _replay(trace, machine, "laws")
    assert laws.sched_fields["packing"][1]["move"] == "initial"
    later = np.asarray(trace.frames.iteration)[np.asarray(trace.strands.frame)] >= 1
    for sock in range(2):
        on = np.isin(res.strand_core, [c for c in range(4) if s.sock[c] == sock])
        assert (on & later).any(), f"socket {sock} ran nothing after the first iteration"


def _procedures(path, syncs_between):
    """Eight iterations of two binary trees (8 KB each, depth 3) spawned by main, with a
    sync after each tree (one after the other) or after both (at the same time)."""
    from simsched.trace.builder import TraceBuilder

    def tree(b, base, nbytes, depth):
        if depth == 0:
            b.refs(base + np.arange(0, nbytes, 64), 8, False, 4)
            return
        for half in (0, nbytes // 2):
            b.spawn()
            tree(b, base + half, nbytes // 2, depth - 1)
            b.ret()
        b.sync()

    with TraceBuilder(path, program="procedures") as b:
        for it in range(8):
            b.iteration(it)
            for k in range(2):
                b.spawn()
                tree(b, 0x100000 + k * 8192, 8192, 3)
                b.ret()
                if syncs_between:
                    b.sync()
            b.sync()
    return path


@pytest.mark.parametrize(("sequential", "roots"), [(True, 4), (False, 2)])
def test_cats_counts_roots_per_group_of_procedures_that_run_together(tmp_path, sequential, roots):
    """Two procedures one after the other each need a root per socket; two spawned before
    one sync share the sockets, one root each (the rule split them to four roots of two
    leaves each for two-core sockets before, 1.5x slower on four such trees)."""
    big = {**TWO_BY_TWO, "name": "test-2x2-bigL2"}
    big["caches"] = [TWO_BY_TWO["caches"][0], {**TWO_BY_TWO["caches"][1], "size": 1 << 20}]
    trace = open_trace(_procedures(tmp_path / "p.sst", sequential))
    res, _, _ = _replay(trace, load_machine(big), "cats")
    assert res.sched_fields["packing_mode"] == "packed"
    assert {p["cf_roots"] for p in res.sched_fields["packing"][1:]} == {roots}


def test_ge_dag_change_stops_packing(small_traces):
    trace = open_trace(small_traces["ge"])
    res, _, _ = _replay(trace, load_machine(TWO_BY_TWO), "laws")
    it = np.asarray(trace.frames.iteration)
    keys = np.asarray(trace.frames.key_hash)
    k0 = set(keys[it == 0].tolist())
    changed = [
        k
        for k in range(1, it.max() + 1)
        if (it == k).sum() != (it == 0).sum() or not set(keys[it == k].tolist()) <= k0
    ]
    assert changed, "the GE trace's DAG should shrink"
    k = changed[0]
    assert res.sched_fields["packing_mode"] == f"DAG changed at iteration {k}: allocator only"
    assert {p["move"] for p in res.sched_fields["packing"][k + 1 :]} == {"none"}
    # CATS: where its packing stops applying, work stealing runs the rest
    res, _, _ = _replay(trace, load_machine(TWO_BY_TWO), "cats")
    assert res.sched_fields["packing_mode"] == f"DAG changed at iteration {k}: ws"
    assert {p["move"] for p in res.sched_fields["packing"][k + 1 :]} == {"ws"}


def test_falling_back_to_ws_at_once_is_ws(small_traces):
    """The fallback's mechanism is exact: a policy that hands its deques to WS before its
    first strand replays exactly as WS does (same cores, same makespan), so what a
    fallback later in a run costs is the state it inherits, not the hand-over."""
    from simsched.schedulers.cats import CacheAwareTaskStealing

    class WsAtOnce(CacheAwareTaskStealing):
        def on_start(self, strand, now):
            self._set_topology()
            self._to_ws("at once: ws")
            self.ws.on_start(strand, now)

    trace = open_trace(small_traces["sor-ir"])
    machine = load_machine("opteron-8380-4x4")
    for seed in (0, 1):
        runs = []
        for cls in (get_scheduler("ws"), WsAtOnce):
            eng = Engine(trace, machine, cls, None, seed, MemorySystem(machine))
            runs.append(eng.run())
        ws, fell = runs
        assert fell.makespan == ws.makespan
        assert np.array_equal(fell.strand_core, ws.strand_core)


def test_cats_without_packing_keeps_only_its_first_iteration(small_traces):
    """``pack=false``: CATS's profiled first iteration (its data placement) as with
    packing, then work stealing for every later iteration."""
    trace = open_trace(small_traces["heat"])
    machine = load_machine(TWO_BY_TWO)
    packed, _, _ = _replay(trace, machine, "cats")
    res, stats, s = _replay(trace, machine, "cats", {"pack": False})
    check_invariants(trace, res, stats)
    _check_locality(trace, res, s)
    f = res.sched_fields
    assert f["packing_mode"] == "pack=false: ws"
    assert [p["move"] for p in f["packing"]] == ["profile"] + ["ws"] * (len(f["packing"]) - 1)
    assert f["iteration_cycles"][0] == packed.sched_fields["iteration_cycles"][0]
    assert f["iteration_cycles"][1:] != packed.sched_fields["iteration_cycles"][1:]
    with pytest.raises(ConfigError):
        get_scheduler("laws").resolve_params({"pack": False})  # CATS's alone


@pytest.mark.parametrize("sched", ["laws", "cats"])
def test_a_cf_subtree_ending_on_another_socket_frees_its_own(tmp_path, sched):
    """In the iteration after the profiled one, GE-ir's changed DAG sends unmatched
    frames below a CF root through CF pools, so a subtree's last strand can end on
    another socket.  The socket that started the subtree must be freed all the same:
    left blocked, its head never starts another CF root (three of four sockets here),
    and on the Xeon at 1/64 caches with n = 1024 every socket was, a deadlock."""
    path = tmp_path / "ge-ir.sst"
    generate("ge", path, n=256, cutoff=1, steps=20, init=False, irregular=True)
    machine = load_machine(
        "opteron-8380-4x4",
        overrides={"caches.L1.size": "1KB", "caches.L2.size": "8KB", "caches.L3.size": "96KB"},
    )
    res, _, pol = _replay(open_trace(path), machine, sched)
    assert res.sched_fields["packing"][1]["cf_roots"] > 0  # it ran packed
    assert pol.active_last == {} and pol.active == [0] * pol.S


def test_packing_modes_are_the_documented_ones(small_traces, tmp_path):
    """docs/results.md's ``packing_mode`` row names what each kind of run records."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    row = next(x for x in doc.splitlines() if x.startswith("| `packing_mode` |"))
    machine = load_machine(TWO_BY_TWO)
    generate("fib", tmp_path / "fib.sst", n=8)
    runs = [("fib", tmp_path / "fib.sst", "laws"), ("heat", small_traces["heat"], "laws")]
    runs.append(("heat", small_traces["heat"], "laws-nc"))
    modes = {}
    for name, path, sched in runs:
        with open_trace(path) as trace:
            modes[name, sched] = _replay(trace, machine, sched)[0].sched_fields["packing_mode"]
    assert modes["fib", "laws"] == "first iteration"  # no iteration marks
    for mode in modes.values():
        assert f"`{mode}`" in row


def test_cpu_bound_program_falls_back_to_ws(small_traces):
    trace = open_trace(small_traces["heat"])
    machine = load_machine(TWO_BY_TWO)
    res, stats, _ = _replay(trace, machine, "laws", {"cpu_threshold": 10.0})
    check_invariants(trace, res, stats)
    assert res.sched_fields["packing_mode"].startswith("CPU-bound")
    assert {p["move"] for p in res.sched_fields["packing"][1:]} == {"ws"}
    with pytest.raises(ConfigError):
        get_scheduler("laws").resolve_params({"cpu_threshold": 0})


@pytest.mark.parametrize("sched", ["laws", "laws-nc"])
def test_falling_back_to_ws_on_one_socket_keeps_the_other_sockets_pool(tmp_path, sched):
    """A job holding the cores of socket 1 only: its first iteration's tasks of socket 0
    wait in socket 0's CF pool, which only pool steals empty.  When the CPU-bound test
    hands the job to WS, that pool goes to a core of the job (WS reads no pool): the
    job once stalled there with its strands queued where nobody looked."""
    from simsched.engine import JobSpec, Replay
    from simsched.engine.controllers import get_controller

    path = iterated_tasks(tmp_path / "cpu.sst", instr=100_000)  # CPU-bound: WS after it 0
    machine = load_machine(TWO_BY_TWO)
    cls = get_scheduler(sched)
    specs = [JobSpec(open_trace(path), cls, cls.resolve_params({}), 0, f"j{i}") for i in range(2)]
    ctl = get_controller("static")(machine, 2)
    res = Replay(machine, specs, controller=ctl, seed=3, window=0, memory=MemorySystem(machine))
    second = res.run().jobs[1]
    assert second.sched_fields["packing_mode"].startswith("CPU-bound")
    assert set(second.strand_core.tolist()) <= {2, 3}  # socket 1's cores


def test_laws_is_more_local_than_ws(small_traces):
    trace = open_trace(small_traces["heat"])
    machine = load_machine("opteron-8380-4x4")
    loc = {}
    for sched in ("ws", "laws"):
        _, stats, _ = _replay(trace, machine, sched, window=100)
        loc[sched] = sum(n["local"] for n in stats["nodes"]) / max(
            1, sum(n["local"] + n["remote"] for n in stats["nodes"])
        )
    assert loc["laws"] > loc["ws"]


# -- fast engine = oracle engine ---------------------------------------------------------


@pytest.mark.parametrize("sched", FAMILY)
@pytest.mark.parametrize("name", ["heat", "sor-ir"])
def test_fast_engine_equals_oracle_on_iterative_traces(small_traces, sched, name):
    trace = open_trace(small_traces[name])
    machine = load_machine(TWO_BY_TWO)
    res, stats, _ = _replay(trace, machine, sched, seed=3, window=0)
    mem = MemoryOracle(machine)
    ora = OracleEngine(trace, machine, get_scheduler(sched), {}, 3, mem).run()
    np.testing.assert_array_equal(res.strand_core, ora["strand_core"])
    np.testing.assert_array_equal(res.strand_start, ora["strand_start"])
    np.testing.assert_array_equal(res.strand_end, ora["strand_end"])
    np.testing.assert_array_equal(res.private_misses, ora["private_misses"])
    assert res.counters == ora["counters"]
    assert stats["nodes"] == mem.stats()["nodes"]


@pytest.mark.parametrize("sched", ["laws", "cats"])
def test_sparse_iteration_numbers_are_renumbered(small_traces, tmp_path, sched):
    # marks 0, 5, 2**40, 2**40 + 1 used to size per-iteration lists by the largest number
    # (terabytes); the run is now the one of marks 0, 1, 2, 3, with the trace's numbers kept
    from simsched.trace import TraceBuilder
    from simsched.trace.events import events

    labels = [0, 5, 2**40, 2**40 + 1]
    sparse = tmp_path / "sparse.sst"
    with open_trace(small_traces["heat"]) as t, TraceBuilder(sparse) as b:
        for ev in events(t):
            if ev[0] == "iteration":
                b.iteration(labels[ev[1]])
            elif ev[0] == "refs":
                b.refs(ev[1].addr, ev[1].size, ev[1].write, ev[1].gap)
            elif ev[0] == "instr":
                b.instr(ev[1])
            elif ev[0] != "strand":
                getattr(b, ev[0])()
    machine = load_machine(TWO_BY_TWO)
    with open_trace(small_traces["heat"]) as t0, open_trace(sparse) as t1:
        res0, _, s0 = _replay(t0, machine, sched)
        res1, _, s1 = _replay(t1, machine, sched)
    assert res1.makespan == res0.makespan
    assert np.array_equal(res1.strand_core, res0.strand_core)
    f0, f1 = s0.record_fields(), s1.record_fields()
    assert f1["iteration_cycles"] == f0["iteration_cycles"] and len(s1.it_cycles) == 4
    assert [e["iteration"] for e in f1["packing"]] == labels
    assert sorted(s1.roots_by_iteration) == [k for k in labels if k in s1.roots_by_iteration]
    assert s1.first_it == 0 and f1["packing_mode"] == f0["packing_mode"]


def test_a_head_core_steals_another_sockets_cf_root_only_when_its_own_are_started(
    small_traces,
):
    """[LAWS15] §3.4: cross-socket stealing only "after all the tasks in the CF task pool
    of ρ are completed".  Idle heads at an iteration's start used to take CF roots before
    the tasks above them pushed those home (heat on 4 sockets, seeds 1 and 2: 6 and 5 of 16
    CF roots ran on another socket and the makespan almost doubled)."""
    trace = open_trace(small_traces["heat"])
    machine = load_machine("opteron-8380-4x4")
    it = np.asarray(trace.frames.iteration)
    keys = np.asarray(trace.frames.key_hash)
    first = np.asarray(trace.frames.first_strand)
    for seed in (1, 2):
        res, _, s = _replay(trace, machine, "laws", seed=seed, window=100)
        ran = np.asarray(s.sock)[res.strand_core]
        start = np.asarray(res.strand_start)
        home = np.asarray(s.home)
        away = 0
        for k, tmpl in s.roots_by_iteration.items():
            fk = np.flatnonzero(it == k)
            by_key = dict(zip(keys[fk].tolist(), fk.tolist(), strict=True))
            roots = np.array([by_key[int(keys[r])] for r in tmpl])
            for r in roots:
                q = ran[first[r]]
                if q != home[r]:
                    away += 1
                    own = roots[home[roots] == q]
                    assert (start[first[own]] <= start[first[r]]).all()
        assert away == 0


def test_remote_pool_push_priced_by_hops(tmp_path):
    """A push into another socket's CF pool pays ctx.steal_cost for the distance (the
    price of a WS or CAB cross-socket steal between those sockets), the own pool
    queue_op."""
    m = load_machine(CHAIN_4X1)
    t = open_trace(make_trace(tmp_path / "t.sst", seed=1))
    ctx = SchedContext(m, range(4), t, lambda n=None, cores=None: None)
    cls = get_scheduler("laws")
    laws = cls(ctx, cls.resolve_params({}), np.random.default_rng(0))
    assert [laws._push_pool(0, p, 1) for p in range(4)] == [m.costs.queue_op, 100, 160, 220]
    assert laws.counters["remote_pool_pushes"] == 3


def _fit(parent, branching, spawn_index, refs, iteration=None, sockets=2):
    n = len(parent)
    it = iteration if iteration is not None else [0] * n
    ctx = _fake_ctx(parent, spawn_index, branching, it, sockets)
    ranges = ctx.data_ranges()
    home, _ = allocate(ranges, sockets)
    frames = np.flatnonzero(np.array(it) >= 0)
    return allocator_fit(ranges, home, frames, np.array(parent), np.array(refs), sockets)


def test_allocator_fit_of_an_even_and_of_an_opencilk_split():
    # an even binary split, references on the leaves only: Eq. 1 fits exactly
    parent = [-1, 0, 0, 1, 1, 2, 2]
    idx = [0, 0, 1, 0, 1, 0, 1]
    br = [0, 2, 2, 2, 2, 2, 2]
    assert _fit(parent, br, idx, [0, 0, 0, 5, 5, 5, 5]) == ([0.5, 0.5], 0.0)
    assert _fit(parent, br, idx, [0, 0, 0, 5, 5, 5, 5], sockets=4) == ([0.25] * 4, 0.0)
    # OpenCilk's cilk_for split of 8 rows at grain 1 from one frame: children of 4, 2 and
    # 1 rows, the last row run by the frame itself.  Eq. 1 gives each child a third and
    # the frame nothing: 0.5 * (|1/3 - 1/2| + |1/3 - 1/4| + |1/3 - 1/8| + |0 - 1/8|)
    parent = [-1, 0, 0, 0]
    shares, mismatch = _fit(parent, [3, 3, 3, 3], [0, 0, 1, 2], [1, 4, 2, 1])
    assert mismatch == round(7 / 24, 4)
    # socket 0 gets the root [0, 1) and the middle child [1/3, 2/3) (ties go to the lower
    # socket), with the first child: 7 of the 8 rows
    assert shares == [0.875, 0.125]
    # no references: nothing to measure
    assert _fit(parent, [3, 3, 3, 3], [0, 0, 1, 2], [0, 0, 0, 0]) == ([], 0.0)


def test_allocator_fit_weighs_each_root_by_its_references():
    # two iteration roots (red and black sweeps of one SOR step): each is [0, 1) and
    # splits evenly, so together they fit; the second one splits 1 : 3
    parent = [-1, 0, 1, 1, 0, 4, 4]
    idx = [0, 0, 0, 1, 1, 0, 1]
    br = [0, 2, 2, 2, 2, 2, 2]
    it = [-1, 0, 0, 0, 0, 0, 0]
    assert _fit(parent, br, idx, [0, 0, 3, 3, 0, 3, 3], it)[1] == 0.0
    # the second root: 0.5 * (|1/2 - 1/4| + |1/2 - 3/4|) = 1/4, weighted 8 / 14
    assert _fit(parent, br, idx, [0, 0, 3, 3, 0, 2, 6], it)[1] == round(0.25 * 8 / 14, 4)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8))
def test_allocator_fit_is_zero_when_every_task_divides_its_data_evenly(seed, m):
    # a random tree whose leaves make references in proportion to their Eq. 1 widths:
    # the division is even whatever the branching, and the mismatch 0
    rng = np.random.default_rng(seed)
    parent, idx, br, width = [-1], [0], [0], [1.0]
    frontier = [0]
    while frontier and len(parent) < 60:
        f = frontier.pop(0)
        k = int(rng.integers(0, 4)) if f else 3
        for i in range(k):
            parent.append(f)
            idx.append(i)
            br.append(k)
            width.append(width[f] / k)
            frontier.append(len(parent) - 1)
    n = len(parent)
    kids = np.bincount(np.array(parent[1:]), minlength=n)
    unit = 2 * 3**6 * 4**6  # every leaf width times this is an integer
    refs = [round(width[f] * unit) if kids[f] == 0 else 0 for f in range(n)]
    shares, mismatch = _fit(parent, br, idx, refs, sockets=m)
    assert mismatch == 0.0
    assert sum(shares) == pytest.approx(1.0, abs=1e-3)
    assert len(shares) == m
