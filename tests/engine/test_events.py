"""The engine's event queue (simsched.engine.events): heap and timer lanes together give
the entries in the order of one heap, whatever the delays and however they interleave."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.engine.events import MAX_LANES, EventQueue

# (pushes before the next pop, kind, delay) per step; the clock advances to each pop
steps = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 1), st.integers(-3, 3 * MAX_LANES)),
    min_size=1,
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(steps)
def test_the_queue_pops_in_heap_order(plan):
    q = EventQueue()
    ref: list[tuple[int, int, int, int, int]] = []
    now = seq = 0
    got, want = [], []
    for pushes, kind, delay in plan:
        for j in range(pushes):
            d = delay + j
            e = (now + d, kind, seq, j, 0)
            seq += 1
            heapq.heappush(ref, e)
            if kind:  # a timer, delays out of order among them (a moved core)
                q.push_timer(e, d)
            else:
                q.push(e)
        assert bool(q) == bool(ref) and len(q) == len(ref)
        if ref:
            top, src = q.top()
            assert top == ref[0]
            got.append(q.pop(src))
            want.append(heapq.heappop(ref))
            now = max(now, want[-1][0])
    while ref:
        top, src = q.top()
        got.append(q.pop(src))
        want.append(heapq.heappop(ref))
    assert got == want
    assert q.top() == (None, None) and not q


def test_delays_beyond_the_lanes_go_to_the_heap():
    q = EventQueue()
    for d in range(MAX_LANES + 3):
        q.push_timer((d, 1, d, 0, 0), d)
    assert len(q.lanes) == MAX_LANES and len(q.heap) == 3
    assert [q.pop(q.top()[1]) for _ in range(MAX_LANES + 3)] == [
        (d, 1, d, 0, 0) for d in range(MAX_LANES + 3)
    ]
