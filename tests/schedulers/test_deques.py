"""Per-worker deques and sleeping thieves: a sleeping thief counts exactly the attempts a
spinning thief would have made."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simsched.schedulers.deques import SocketDeques, WorkerDeques


def test_lifo_for_the_owner_fifo_for_thieves():
    counters = {}
    dq = WorkerDeques(3, 10, counters)
    assert dq.push_all(1, [4, 5, 6]) == 3 and len(dq) == 3
    assert dq.pop(1) == 6
    assert dq.attempt(1) == 4
    assert dq.attempt(0) == -1
    assert counters == {"steal_attempts": 2, "steals": 1}
    assert dq.pop(2) == -1 and len(dq) == 1


def test_socket_counts_follow_a_mugged_deque():
    """Mugging moves the strands to the mugger's socket: the per-socket counts stay the
    sums of the deques (they went to [-1, 1] before)."""
    dq = SocketDeques(4, 10, {}, socket_of=[0, 0, 1, 1])
    dq.push_all(1, [7, 8])
    assert dq.socket_items == [2, 0]
    assert dq.mug(2, 1) == 2
    assert dq.socket_items == [0, 2]
    assert dq.pop(2) == 8 and dq.attempt(2) == 7
    assert dq.socket_items == [0, 0] and len(dq) == 0


@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["push", "pop", "steal", "mug", "take"]),
            st.integers(0, 3),
            st.integers(0, 3),
        ),
        max_size=40,
    )
)
def test_socket_counts_are_the_sums_of_the_deques(ops):
    socket_of = [0, 0, 1, 1]
    dq = SocketDeques(4, 10, {}, socket_of=socket_of)
    for k, (op, c, v) in enumerate(ops):
        if op == "push":
            dq.push(c, k)
        elif op == "pop":
            dq.pop(c)
        elif op == "steal":
            dq.attempt(v)
        elif op == "mug" and not dq.deques[c]:
            dq.mug(c, v)
        elif op == "take":
            dq.take_all(c)
        sums = [0, 0]
        for core, d in enumerate(dq.deques):
            sums[socket_of[core]] += len(d)
        assert dq.socket_items == sums and len(dq) == sum(sums)


@given(
    a=st.integers(1, 50),
    t0=st.integers(0, 1000),
    gaps=st.lists(st.integers(0, 400), min_size=1, max_size=8),
)
def test_sleeping_thief_counts_what_a_spinning_thief_attempts(a, t0, gaps):
    """A thief that sleeps at t0 and is woken at t1 (then attempts at t1, finds nothing,
    spends ``a`` cycles and sleeps again) counts the attempts of a thief spinning from t0:
    one every ``a`` cycles on its own grid, restarted at each wake-up."""
    counters = {}
    dq = WorkerDeques(1, a, counters)
    now = t0
    spinning = 0
    for g in gaps:
        dq.sleep(0, now)
        t1 = now + g
        dq.wake(0, t1)
        counters["steal_attempts"] += 1  # the real attempt at t1 (what on_idle counts)
        spinning += len(range(now, t1 + 1, a))  # attempts at now, now + a, ... <= t1
        now = t1 + a
    assert counters["steal_attempts"] == spinning
