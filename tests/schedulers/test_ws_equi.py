"""The adaptive work-stealing runtime (WS-EQUI, base of SAWS and A-Steal) driven through
the protocol by hand: worker states, exact integrals, samples and mugging, worked out on
paper for a two-quantum script."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simsched.machine import load_machine
from simsched.schedulers import EDGE_CONT, EDGE_SPAWN, RUN, WAIT, SchedContext, get_scheduler
from simsched.schedulers.deques import WorkerDeques
from simsched.trace import open_trace
from tests.engine.conftest import make_trace
from tests.engine.machines import TWO_BY_TWO


def make(tmp_path, name, params=None, cores=(0, 1)):
    m = load_machine(TWO_BY_TWO)  # 4 cores; steal attempt 20 cycles, deque op 3
    t = open_trace(make_trace(tmp_path / "t.sst", seed=1))
    woken = []
    ctx = SchedContext(m, cores, t, lambda n=None, cores=None: woken.append(n))
    cls = get_scheduler(name)
    return cls(ctx, cls.resolve_params(params or {}), np.random.default_rng(0)), ctx


def first_quantum(s):
    """Core 0 runs the root, spawns at 100; core 1 sleeps, steals at 100, runs to 400,
    then sleeps until the quantum ends at 1000."""
    s.on_start(0, 0)
    assert s.on_idle(0, 0) == (RUN, 0, 3)
    assert s.on_idle(1, 0) == WAIT
    assert s.on_finish(0, 0, 100, [1, 2], [EDGE_CONT, EDGE_SPAWN]) == (RUN, 2, 3)
    assert s.on_idle(1, 100) == (RUN, 1, 20)  # the only victim is core 0
    assert s.on_finish(1, 1, 400, [], []) == WAIT
    return s.on_quantum(1000)


def test_first_quantum_exact_and_sampled_by_hand(tmp_path):
    seen = {}
    for measure in ("exact", "sampled"):
        s, _ = make(tmp_path, "saws", {"measure": measure})
        seen[measure] = first_quantum(s)
        # X: core 0 works 1000; core 1 steals [0, 120), works [120, 400), steals after
        assert s.last_held == 2000
        assert s.total[:3] == [1000 + 280, 0, 120 + 600]
        assert s.total[3] == 4 * 1000 - 2000  # sleeping workers: P - a(t)
        # attempts: 5 asleep in [0, 100), 1 real, 30 asleep in [400, 1000); no victim
        # was ever stealing (core 1 is alone), so none is purely unsuccessful
        assert s.counters["steal_attempts"] == 36 and s.counters["steals"] == 1
        assert s.counters["purely_unsuccessful_steals"] == 0
    # exact: busy 1280/1000, no strand queued for any time: d = 1.28, asks 2 cores
    # sampled: u = 1, busy = 1 x 2; alpha = 36/100, Q = 2 x 1/36, Q' = 0: d = 2.04 -> 3
    assert seen == {"exact": 2, "sampled": 3}


def test_mugging_second_quantum_by_hand(tmp_path):
    s, ctx = make(tmp_path, "saws")
    first_quantum(s)
    assert s.desires == [1.28]
    # core 0 leaves at 1100 after its strand, releasing two strands: its deque stays
    ctx.set_cores([1])
    s.on_depart(0, 2, 1100, [3, 4], [EDGE_CONT, EDGE_SPAWN])
    s.on_cores_changed((), (0,), 1100)
    assert s.orphans == {0}
    # core 1 wakes: its deque is empty, it mugs core 0's deque and runs the top strand
    assert s.on_idle(1, 1100) == (RUN, 4, 20)
    assert s.counters["mugs"] == 1 and not s.orphans and list(s.dq.deques[1]) == [3]
    assert s.on_quantum(1500) == 3
    # busy: core 0 works [1000, 1100), core 1 steals to 1100, mugs 20, works 380
    # queued: one strand from 1100 on -> 400;  d = 500/500 + 2 x 400/500 = 2.6
    assert s.desires[-1] == pytest.approx(2.6)
    assert s.last_held == 2 * 100 + 400
    rec = s.record_fields()
    assert rec["worker_cycles"] == {
        "working": 1280 + 100 + 380,
        "mugging": 20,
        "stealing": 720 + 100,
        "sleeping": 2000 + (4 * 500 - 600),
    }
    assert rec["quantum_desires"] == [1.28, 2.6]


def test_results_md_gives_the_desire_fields_to_the_policies_with_a_desire(tmp_path):
    """docs/results.md gave ws-equi's jobs ``quantum_desires``, which it never records."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    row = next(x for x in doc.splitlines() if x.startswith("| `jobs` |"))
    fields = {}
    for name in ("ws-equi", "saws", "asteal"):
        s, _ = make(tmp_path, name)
        first_quantum(s)
        fields[name] = sorted(s.record_fields())
    assert fields["ws-equi"] == ["worker_cycles"]
    assert (
        fields["saws"]
        == fields["asteal"]
        == [
            "quantum_desires",
            "quantum_utilization",
            "worker_cycles",
        ]
    )
    assert "for `saws`, `asteal` and `ws-equi`: `worker_cycles`" in row
    assert (
        "for `saws` and `asteal` (a desire: `ws-equi` has none) once a quantum has ended, "
        "`quantum_desires` and `quantum_utilization`"
    ) in row


def test_purely_unsuccessful_when_the_victim_steals(tmp_path):
    s, _ = make(tmp_path, "ws-equi", cores=(0, 1, 2))  # core 2 on the other socket
    s.on_start(0, 0)
    assert s.on_idle(0, 0)[0] == RUN
    assert s.on_idle(1, 0) == WAIT and s.on_idle(2, 0) == WAIT
    s.on_finish(0, 0, 40, [1, 2], [EDGE_CONT, EDGE_SPAWN])  # one strand queued on core 0
    # core 1 wakes: spinning over core 0 (20 cycles) and core 2 (another socket: the
    # default remote_pool_op, 100) it attempts every 60 cycles, so none asleep in
    # [0, 40); every real attempt that fails hit core 2, asleep (stealing): purely
    # unsuccessful, at the cross-socket price; the one on core 0 succeeds at 20
    t, fails = 40, 0
    while (d := s.on_idle(1, t))[0] != RUN:
        assert d[2] == 100
        fails += 1
        t += 100
    assert d[2] == 20
    assert s.counters["purely_unsuccessful_steals"] == fails
    # at the quantum's end core 2's 4 attempts asleep in [0, 400) (both its victims are
    # on the other socket: one per 100 cycles) are counted: the rate was 1/2 until core 1
    # got its strand at t, 0 after (core 2 the only thief)
    assert s.on_quantum(400) is None  # WS-EQUI reports no desire
    expected = fails + int(4 * (0.5 * t) / 400 + 0.5)
    assert s.counters["purely_unsuccessful_steals"] == expected
    assert s.counters["steal_attempts"] == fails + 1 + 4


def test_asteal_through_the_scheduler_on_scripted_quanta(tmp_path):
    s, ctx = make(tmp_path, "asteal", cores=(0,))
    assert s.initial_desire == 1
    s.on_start(0, 0)
    s.on_idle(0, 0)
    # Q1: one core working throughout: u = 1, a = 1 >= d = 1 -> efficient, satisfied: 2
    assert s.on_quantum(1000) == 2
    # Q2: still one core: efficient but deprived -> stays 2
    assert s.on_quantum(2000) == 2
    # Q3: a second core that only steals: u = 1/2 < 0.8 -> inefficient -> 1
    ctx.set_cores([0, 1])
    s.on_cores_changed((1,), (), 2000)
    assert s.on_idle(1, 2000) == WAIT
    assert s.on_quantum(3000) == 1
    steps = [(h.efficient, h.satisfied, h.next_desire) for h in s.asteal.history]
    assert steps == [(True, True, 2.0), (True, False, 2.0), (False, True, 1.0)]


@pytest.mark.parametrize(
    "name,params",
    [
        ("saws", {"beta": 0.5}),
        ("saws", {"measure": "guess"}),
        ("asteal", {"rho": 1.0}),
        ("asteal", {"delta": 1.5}),
        ("ws-equi", {"beta": 2}),
    ],
)
def test_bad_parameters(name, params):
    from simsched.errors import ConfigError

    with pytest.raises(ConfigError):
        get_scheduler(name).resolve_params(params)


def test_mug_moves_a_whole_deque():
    dq = WorkerDeques(3, 10, {})
    dq.push_all(2, [7, 8, 9])
    assert dq.mug(0, 2) == 3 and list(dq.deques[0]) == [7, 8, 9] and not dq.deques[2]
    assert len(dq) == 3 and dq.pop(0) == 9
    with pytest.raises(RuntimeError):
        dq.mug(0, 1)
