"""SAWS Eq. 1 (exact and sampled, [SAWS12] §3.1, §4.2), A-Steal (§3.2), Fig. 4 on a fluid model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.engine.allot import deq_allot
from simsched.errors import ConfigError
from simsched.schedulers.desire import (
    ASteal,
    QuantumIntegrals,
    QuantumSamples,
    StepIntegral,
    desire_request,
    max_steal_attempts,
    saws_desire,
)

WORK, STEAL = 0, 1


def observe(states, lengths, steal_cost=1):
    """Exact and sampled observations of a scripted quantum, one cycle per row.

    ``states[t, j]`` is WORK or STEAL, ``lengths[t, j]`` the length of deque ``j``.  A
    stealing processor makes one attempt per cycle; its victims are the other processors
    in round-robin order (deterministic).  The script is observed, not changed by steals.
    """
    states, lengths = np.asarray(states), np.asarray(lengths)
    L, a = states.shape
    busy, queued = StepIntegral(), StepIntegral()
    attempts = pure = victim_len = 0
    nxt = [(j + 1) % a for j in range(a)]
    for t in range(L):
        busy.set(t, int(np.sum(states[t] == WORK)))
        queued.set(t, int(lengths[t].sum()))
        for j in range(a):
            if states[t, j] == STEAL and a > 1:
                v = nxt[j]
                nxt[j] = (v + 1) % a if (v + 1) % a != j else (v + 2) % a
                attempts += 1
                pure += int(states[t, v] == STEAL)
                victim_len += int(lengths[t, v])
    exact = QuantumIntegrals(L, a, busy.take(L), queued.take(L))
    # the step integrals agree with plain sums over cycles
    assert exact.busy_integral == np.sum(states == WORK)
    assert exact.deque_integral == lengths.sum()
    sampled = QuantumSamples(
        allotment=a,
        steal_attempts=attempts,
        purely_unsuccessful=pure,
        victim_length_sum=victim_len,
        deques_at_end=a,
        length_at_end=int(lengths[-1].sum()),
        max_attempts=max_steal_attempts(a, L, steal_cost),
    )
    return exact, sampled


def test_one_thief_exact_vs_sampled():
    # 4 processors, 100 cycles: three work (deques 3, 1 and 0 long), one steals throughout
    L = 100
    states = np.tile([WORK, WORK, WORK, STEAL], (L, 1))
    lengths = np.tile([3, 1, 0, 0], (L, 1))
    exact, sampled = observe(states, lengths)
    # exact: busy 3, queued 4, u = 3/4; Eq. 1 with beta = 2: 3 + 2*4 = 11
    assert (exact.busy(), exact.queued(), exact.utilization()) == (3.0, 4.0, 0.75)
    assert saws_desire(exact, 2) == 11.0 and desire_request(saws_desire(exact, 2)) == 11
    # sampled: 100 attempts on w0, w1, w2 in turn (34, 33, 33): none purely unsuccessful,
    # so u = 1 (a lone thief never meets another thief: §4.2.1 cannot see it)
    assert (sampled.steal_attempts, sampled.purely_unsuccessful) == (100, 0)
    assert sampled.victim_length_sum == 34 * 3 + 33 * 1
    assert sampled.utilization() == 1.0 and sampled.busy() == 4.0
    # alpha = 100 / (4 * 100); Q = e * 135/100 = 5.4 (e counts the thief's empty deque
    # too); Q' = 4; queued = 0.25 * 5.4 + 0.75 * 4 = 4.35; d = 4 + 2 * 4.35 = 12.7
    assert sampled.alpha() == 0.25
    assert sampled.queued() == pytest.approx(4.35)
    assert saws_desire(sampled, 2) == pytest.approx(12.7)
    assert desire_request(saws_desire(sampled, 2)) == 13


def test_two_thieves_meet_each_other():
    # w2 and w3 steal; each visits the three others in turn, so a third of the attempts
    # find the other thief stealing: sampled u = 2/3 against the exact 1/2
    L = 99
    states = np.tile([WORK, WORK, STEAL, STEAL], (L, 1))
    lengths = np.tile([2, 2, 0, 0], (L, 1))
    exact, sampled = observe(states, lengths)
    assert exact.utilization() == 0.5 and exact.busy() == 2.0 and exact.queued() == 4.0
    assert (sampled.steal_attempts, sampled.purely_unsuccessful) == (198, 66)
    assert sampled.utilization() == pytest.approx(2 / 3)
    # victims' deques: 132 of the attempts hit a 2-long deque: Q = 4 * 264/198
    assert sampled.victim_length_sum == 264
    al = 198 / 396
    assert sampled.queued() == pytest.approx(al * 4 * 264 / 198 + (1 - al) * 4)


def test_exact_and_sampled_agree_without_steals():
    # nobody steals: u = 1 both ways, alpha = 0 so queued is the end sample, which equals
    # the average when the deques do not change
    L = 50
    exact, sampled = observe(np.zeros((L, 3), int), np.tile([1, 0, 2], (L, 1)))
    assert sampled.steal_attempts == 0 and sampled.alpha() == 0.0
    assert exact.busy() == sampled.busy() == 3.0
    assert exact.queued() == sampled.queued() == 3.0
    assert saws_desire(exact, 2) == saws_desire(sampled, 2) == 9.0


def test_exact_and_sampled_agree_when_everyone_steals():
    L = 40
    exact, sampled = observe(np.ones((L, 4), int), np.zeros((L, 4), int))
    assert sampled.alpha() == 1.0
    assert exact.utilization() == sampled.utilization() == 0.0
    assert saws_desire(exact, 2) == saws_desire(sampled, 2) == 0.0
    assert desire_request(0.0) == 1  # a running job asks for at least one core


def test_changing_deques_sampled_uses_end_and_steal_samples():
    # one thief; w0's deque shrinks from 4 to 0 halfway: exact average 2, end sample 0
    L = 100
    states = np.tile([WORK, STEAL], (L, 1))
    lengths = np.zeros((L, 2), int)
    lengths[:50, 0] = 4
    exact, sampled = observe(states, lengths)
    assert exact.queued() == 2.0
    # the thief saw w0 on every attempt: 50 x 4; Q = 2 * 200/100 = 4; Q' = 0; alpha = 1/2
    assert sampled.queued() == pytest.approx(0.5 * 4.0 + 0.5 * 0.0)


def test_saws_eq1_and_parameters():
    q = QuantumIntegrals(length=10, allotment=4, busy_integral=30, deque_integral=25)
    assert saws_desire(q, 1) == 3 + 2.5 and saws_desire(q, 3) == 3 + 7.5
    for bad in (0.5, -1, float("nan"), "x", 1e6 * (1 + 1e-15), 1.7e308):
        with pytest.raises(ConfigError):
            saws_desire(q, bad)
    assert saws_desire(q, 1e6) == 3 + 2.5e6


def test_saws_and_asteal_bound_their_factors_by_name():
    # beta = 1.7e308 made the desire infinite in the middle of a run ("desire=inf must be
    # finite"), rho = 1e100 made it an integer beyond int64 ("desires must be whole
    # numbers"): both are refused up front, naming the parameter
    from simsched.schedulers import get_scheduler

    assert get_scheduler("saws").resolve_params({"beta": 1e6})["beta"] == 1e6
    assert get_scheduler("asteal").resolve_params({"rho": 1024})["rho"] == 1024
    for name, key, bad in (("saws", "beta", 1.7e308), ("asteal", "rho", 1e100)):
        with pytest.raises(ConfigError, match=rf"scheduler '{name}': {key}=.* must be <= "):
            get_scheduler(name).resolve_params({key: bad})


@pytest.mark.parametrize(
    "kw",
    [
        {"length": 0, "allotment": 1, "busy_integral": 0, "deque_integral": 0},
        {"length": 10, "allotment": 1, "busy_integral": 11, "deque_integral": 0},
        {"length": 10, "allotment": -1, "busy_integral": 0, "deque_integral": 0},
        {"length": 10, "allotment": 1, "busy_integral": 0, "deque_integral": -1},
    ],
)
def test_quantum_integrals_rejects(kw):
    with pytest.raises(ConfigError):
        QuantumIntegrals(**kw)


def test_quantum_samples_rejects():
    with pytest.raises(ConfigError):
        QuantumSamples(2, 5, 6, 0, 2, 0, 100)
    with pytest.raises(ConfigError):
        QuantumSamples(2, 5, 1, -1, 2, 0, 100)
    assert QuantumSamples(0, 0, 0, 0, 1, 3, 0).utilization() is None


@pytest.mark.parametrize(
    ("d", "cores"),
    [
        (0, 1),
        (0.3, 1),
        (1, 1),
        (1.0000000001, 1),
        (2.5, 3),
        (10, 10),
        (10.01, 11),
        # more than any machine: capped, and an int64 (ceil(1e100) broke DEQ's arrays)
        (2.0**33, 2**32),
        (1e100, 2**32),
        (1.7e308, 2**32),
    ],
)
def test_desire_request(d, cores):
    assert desire_request(d) == cores


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), None])
def test_desire_request_rejects(bad):
    with pytest.raises(ConfigError):
        desire_request(bad)


def test_max_steal_attempts():
    assert max_steal_attempts(4, 1000, 30) == 133
    with pytest.raises(ConfigError):
        max_steal_attempts(4, 1000, 0)


def test_step_integral():
    s = StepIntegral(0, 2)
    s.set(10, 5)  # 2 x 10
    s.add(14, -1)  # 5 x 4, then 4
    assert s.take(20) == 20 + 20 + 24
    assert s.value == 4
    assert s.take(25) == 20  # the next quantum starts with the current value
    with pytest.raises(ConfigError):
        s.set(24, 1)
    with pytest.raises(ConfigError):
        s.add(30, -10)


# -- A-Steal ([SAWS12] §3.2) ------------------------------------------------------------


def test_asteal_scripted_quanta():
    a = ASteal(rho=2, delta=0.8)
    assert a.desire == 1.0  # first quantum
    script = [
        # (a(q), u(q)) -> d(q+1), efficient, satisfied
        ((1, 1.0), 2.0, True, True),  # efficient and satisfied: x rho
        ((1, 0.9), 2.0, True, False),  # efficient and deprived (1 < 2): unchanged
        ((2, 0.8), 4.0, True, True),  # u = delta is efficient
        ((4, 0.5), 2.0, False, True),  # inefficient: / rho
        ((1, 0.3), 1.0, False, False),  # inefficient and deprived: / rho too
        ((0, None), 1.0, None, False),  # no processor: nothing learnt, desire kept
        ((3, 0.95), 2.0, True, True),
    ]
    for (alloc, u), nxt, eff, sat in script:
        assert a.update(alloc, u) == nxt
        step = a.history[-1]
        assert (step.efficient, step.satisfied, step.next_desire) == (eff, sat, nxt)
    assert [h.desire for h in a.history] == [1, 2, 2, 4, 2, 1, 1]


def test_asteal_takes_utilization_from_observations():
    a = ASteal(rho=3, delta=0.9)
    q = QuantumIntegrals(length=100, allotment=1, busy_integral=100, deque_integral=0)
    assert a.update(1, q.utilization()) == 3.0
    q = QuantumIntegrals(length=100, allotment=3, busy_integral=240, deque_integral=0)
    assert a.update(3, q.utilization()) == 1.0  # u = 0.8 < 0.9


@pytest.mark.parametrize(
    "kw", [{"rho": 1}, {"rho": 0.5}, {"rho": 1025}, {"delta": 0}, {"delta": 1.5}]
)
def test_asteal_rejects(kw):
    with pytest.raises(ConfigError):
        ASteal(**kw)


def test_asteal_desire_never_underflows_to_zero():
    # 860 inefficient quanta in a row (cores in transit for 1000 quanta) took rho = 1024's
    # desire through the subnormals to 0.0, which d * rho never leaves: the job asked for
    # one core for the rest of its run.  The desire now stops at the smallest normal.
    import sys

    smallest = sys.float_info.min
    for rho in (2.0, 3.0, 1024.0):
        a = ASteal(rho=rho, delta=0.8)
        for _ in range(2000):
            a.update(1, 0.0)
        assert smallest <= a.desire < smallest * rho
        for _ in range(3000):
            a.update(min(64, max(1, math.ceil(a.desire))), 1.0)  # efficient, satisfied
        assert a.desire > 1  # it grew back


@given(
    st.lists(st.tuples(st.integers(0, 64), st.floats(0, 1)), max_size=30),
    st.floats(1.1, 3),
    st.floats(0.5, 1),
)
def test_asteal_moves_by_rho_only(steps, rho, delta):
    a = ASteal(rho=rho, delta=delta)
    for alloc, u in steps:
        d = a.desire
        nxt = a.update(alloc, u if alloc else None)
        assert nxt in (d, d * rho, d / rho)
        assert (nxt == d / rho) == (alloc > 0 and u < delta)


# -- Fig. 4: the Fig. 3 data-parallel program on a fluid model ----------------------------


def fig3_fluid(policy, N=10, quanta=24, P=32, L=1000):
    """Desires per quantum of the Fig. 3 program under ``policy`` on ``P`` cores.

    The parent spawns ``N`` children of work far longer than the run, child first, so its
    continuation (the rest of the spawn loop) waits in a deque.  The paper's assumptions
    (§3.3): the controller satisfies the desire as far as ``P`` allows (DEQ with one job),
    and ready threads are stolen at once: an idle worker takes the continuation, spawns
    the next child and runs it, leaving the continuation for the next idle worker; once
    all ``N`` are spawned, the worker that takes the continuation reaches the sync and
    goes back to stealing.  A child whose worker was taken away waits in a muggable deque.
    ``policy(obs) -> desire`` sees the exact integrals of the quantum.
    """
    spawned, cont_ready = 0, True
    desire, out = 1.0, []
    for _ in range(quanta):
        out.append(desire)
        a = int(deq_allot([desire_request(desire)], P)[0])
        free = a - min(a, spawned)
        while cont_ready and free > 0:
            if spawned < N:
                spawned += 1
                free -= 1
            else:
                cont_ready = False
        busy = min(a, spawned)
        queued = int(cont_ready) + max(0, spawned - a)
        desire = policy(QuantumIntegrals(L, a, busy * L, queued * L))
    return out


def test_fig4_saws_settles_near_n():
    d = fig3_fluid(lambda obs: saws_desire(obs, beta=2))
    # grows by beta per quantum, overshoots by one while the parent reaches its sync,
    # then stays at N = 10 with no oscillation
    assert d == [1, 3, 5, 7, 9, 11] + [10] * 18


def test_fig4_asteal_oscillates():
    a = ASteal(rho=2, delta=0.8)
    d = fig3_fluid(lambda obs: a.update(obs.allotment, obs.utilization()))
    # catches up in about log_rho N quanta, then alternates 16 (u = 10/16 < 0.8) and 8
    assert d[:5] == [1, 2, 4, 8, 16]
    assert d[4:] == [16, 8] * 10
    assert 10 not in d


@pytest.mark.parametrize(("N", "beta"), [(10, 1), (10, 3), (7, 2), (25, 2), (30, 4)])
def test_saws_converges_in_about_n_over_beta(N, beta):
    d = fig3_fluid(lambda obs: saws_desire(obs, beta=beta), N=N, quanta=40)
    settle = next(i for i in range(len(d)) if all(x == N for x in d[i:]))
    assert settle <= math.ceil((N - 1) / beta) + 2
    assert max(d) <= N + beta  # small transient overshoot only


def test_asteal_never_settles_for_other_n():
    for N in (5, 12, 20):
        a = ASteal(rho=2, delta=0.8)
        d = fig3_fluid(lambda obs, a=a: a.update(obs.allotment, obs.utilization()), N=N)
        tail = d[len(d) // 2 :]
        assert len(set(tail)) == 2 and N not in tail
