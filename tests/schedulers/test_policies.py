"""WS and PDF policies driven directly through the protocol (no engine)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.machine import load_machine
from simsched.schedulers import EDGE_CONT, EDGE_SPAWN, RETRY, RUN, SLEEP, WAIT, SchedContext
from simsched.schedulers._kernels import _eq1_ranges
from simsched.schedulers.pdf import ParallelDepthFirst
from simsched.schedulers.ws import WorkStealing
from simsched.trace import open_trace
from tests.engine.conftest import make_trace
from tests.engine.machines import TWO_BY_TWO


def _ctx(tmp_path, cores="itrs-scaling-4"):
    m = load_machine(cores)
    t = open_trace(make_trace(tmp_path / "t.sst", seed=1))
    woken = []
    return SchedContext(m, range(m.cores), t, lambda n, cores: woken.append(n)), woken, m


def test_ws_child_first_pushes_continuation(tmp_path):
    ctx, woken, m = _ctx(tmp_path)
    ws = WorkStealing(ctx, {}, np.random.default_rng(0))
    d = ws.on_finish(1, 0, 100, [5, 9], [EDGE_CONT, EDGE_SPAWN])
    assert d == (RUN, 9, m.costs.deque_op)
    assert list(ws.dq.deques[1]) == [5] and woken
    # Owner pops LIFO; a thief takes from the other end.
    ws.dq.deques[1].extend([6, 7])
    ws.dq.n_items += 2
    assert ws.on_idle(1, 200) == (RUN, 7, m.costs.deque_op)
    ws2 = WorkStealing(ctx, {"spawn_policy": "parent-first"}, np.random.default_rng(0))
    assert ws2.on_finish(1, 0, 100, [5, 9], [EDGE_CONT, EDGE_SPAWN])[1] == 5
    assert list(ws2.dq.deques[1]) == [9]


def test_ws_cross_socket_steal_pays_the_remote_price(tmp_path):
    """Two cores of one job on two sockets of the 2 x 2 test machine: the thief's only
    victim is on the other socket, so its steal costs remote_pool_op (as a CAB or LAWS
    cross-socket steal does), and the attempts it would have made asleep are counted at
    that price; on the same socket steal_attempt."""
    m = load_machine(TWO_BY_TWO)
    t = open_trace(make_trace(tmp_path / "t.sst", seed=1))
    assert m.socket_of(0) != m.socket_of(2) and m.socket_of(0) == m.socket_of(1)
    remote, local = m.costs.remote_pool_op, m.costs.steal_attempt
    assert remote != local
    for cores, price in (((0, 2), remote), ((0, 1), local)):
        ctx = SchedContext(m, cores, t, lambda n, cores: None)
        ws = WorkStealing(ctx, {}, np.random.default_rng(0))
        thief = cores[1]
        assert ws.on_idle(thief, 0) == WAIT  # nothing anywhere: sleeps
        ws.dq.push(0, 10)
        assert ws.on_idle(thief, 5 * price) == (RUN, 10, price)
        # asleep for 5 attempt periods at its one victim's price: 5 attempts, then the hit
        assert ws.counters["steal_attempts"] == 5 + 1


def test_ws_steal_attempts_random_victims(tmp_path):
    ctx, _, m = _ctx(tmp_path)
    ws = WorkStealing(ctx, {}, np.random.default_rng(0))
    ws.dq.deques[3].extend([10, 11])
    ws.dq.n_items = 2
    got = []
    for _ in range(50):
        d = ws.on_idle(0, 0)
        if d[0] == RUN:
            got.append(d)
            break
        assert d == (RETRY, -1, m.costs.steal_attempt)
    assert got == [(RUN, 10, m.costs.steal_attempt)]  # bottom of the victim's deque
    assert ws.counters["steals"] == 1 and ws.counters["steal_attempts"] >= 1
    # Everything empty: sleep, and count the attempts a spinning thief would have made.
    ws.dq.deques[3].clear()
    ws.dq.n_items = 0
    before = ws.counters["steal_attempts"]
    assert ws.on_idle(2, 1000)[0] == SLEEP
    ws.dq.deques[3].append(4)
    ws.dq.n_items = 1
    ws.on_idle(2, 1000 + 10 * m.costs.steal_attempt)
    assert ws.counters["steal_attempts"] == before + 10 + 1


def test_pdf_takes_earliest(tmp_path):
    ctx, woken, m = _ctx(tmp_path)
    pdf = ParallelDepthFirst(ctx, {}, np.random.default_rng(0))
    pdf.on_start(0, 0)
    assert pdf.on_idle(0, 0) == (RUN, 0, m.costs.queue_op)
    assert pdf.on_idle(1, 0)[0] == SLEEP
    # Spawn: both go to the ready set, the earliest (the child) is taken.
    assert pdf.on_finish(0, 0, 10, [4, 1], [EDGE_CONT, EDGE_SPAWN]) == (
        RUN,
        1,
        3 * m.costs.queue_op,
    )
    assert pdf.ready == [4]
    # A continuation released later waits behind an earlier ready strand.
    pdf.ready.append(2)
    import heapq

    heapq.heapify(pdf.ready)
    assert pdf.on_finish(1, 1, 20, [7], [EDGE_CONT])[1] == 2


def test_data_range_eq1(tmp_path):
    ctx, _, _ = _ctx(tmp_path)
    par, br, idx = ctx.frame_parent, ctx.frame_branching, ctx.frame_spawn_index
    for f in range(len(par)):
        lo, hi = ctx.data_range(f)
        p = int(par[f])
        if p < 0:
            assert (lo, hi) == (0.0, 1.0)
            continue
        plo, phi = ctx.data_range(p)
        w = (phi - plo) / br[f]
        assert np.isclose(lo, plo + idx[f] * w) and np.isclose(hi, plo + (idx[f] + 1) * w)
    assert ctx.head_core(0) == 0 and ctx.cores_of_socket(0) == (0, 1, 2, 3)


def _ranges_naive(parent, iteration, spawn_index, branching) -> np.ndarray:
    """LAWS Eq. 1 frame by frame in plain Python: the oracle of ``data_ranges``."""
    out = np.empty((len(parent), 2), dtype=np.float64)
    for f in range(len(parent)):
        p = int(parent[f])
        if p < 0 or iteration[p] != iteration[f]:
            out[f] = 0.0, 1.0
            continue
        b = max(int(branching[f]), 1)
        lo, hi = out[p, 0], out[p, 1]
        w = (hi - lo) / b
        out[f] = lo + int(spawn_index[f]) * w, lo + (int(spawn_index[f]) + 1) * w
    return out


def test_data_ranges_equal_the_plain_loop_bit_for_bit(tmp_path):
    ctx, _, _ = _ctx(tmp_path)
    fast = ctx.data_ranges()
    naive = _ranges_naive(
        ctx.frame_parent, ctx.frame_iteration, ctx.frame_spawn_index, ctx.frame_branching
    )
    assert fast.tobytes() == naive.tobytes()
    assert not fast.flags.writeable


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_eq1_kernel_equals_the_plain_loop_on_any_tree(data):
    """Random frame trees (parents first, odd branchings, iterations that restart the
    range, spawn indices beyond b, a zero branching): the same floats to the bit."""
    n = data.draw(st.integers(1, 200))
    parent = [-1]
    for f in range(1, n):
        parent.append(data.draw(st.integers(-1, f - 1)))
    iteration = sorted(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    branching = data.draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
    spawn_index = data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    cols = [np.array(x, dtype=np.int64) for x in (parent, iteration, spawn_index, branching)]
    out = np.empty((n, 2), dtype=np.float64)
    _eq1_ranges(*cols, out)
    assert out.tobytes() == _ranges_naive(*cols).tobytes()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_ws_victims_period_and_prices_are_the_plain_lists(tmp_path_factory, data):
    """WS's victims are one pool the job's cores share, each skipping itself (a list per
    core made a 16,384-core run hold 2 GB of them): the victims, the prices of the spin
    plans and the attempt period are those of the plain per-core list, the job's other
    cores then the departed ones' deques, in every order of cores."""
    m = load_machine("opteron-8380-4x4")
    t = open_trace(make_trace(tmp_path_factory.mktemp("v") / "t.sst", seed=1))
    cores = data.draw(st.permutations(range(m.cores)).map(lambda p: p[: 1 + p[0] % 16]))
    ctx = SchedContext(m, cores, t, lambda n, cores: None)
    ws = WorkStealing(ctx, {}, np.random.default_rng(0))
    ws.orphans = set(
        data.draw(
            st.sets(
                st.sampled_from([c for c in range(m.cores) if c not in cores])
                if len(cores) < m.cores
                else st.nothing()
            )
        )
    )
    ws.forget_victims()
    ws.dq.push(cores[0], 7)  # work somewhere: a plan to steal, not to sleep
    for core in cores:
        plain = [v for v in ctx.cores if v != core] + sorted(ws.orphans)
        o = ws.others(core)
        assert len(o) == len(plain) and [o[i] for i in range(len(o))] == plain
        assert ws.spin_period(core) == ctx.mean_steal_cycles(core, plain)
        plan = ws.spin_plan(core)
        if plan is not None:
            assert [plan.prices[o.position(i)] for i in range(len(o))] == [
                ctx.steal_cycles(core, v) for v in plain
            ]
