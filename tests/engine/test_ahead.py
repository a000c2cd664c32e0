"""Decoding ahead: the order of the decoder's work, and replays that do not depend on it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from simsched.engine import cores
from simsched.engine.ahead import NEXT, READY, START, DecodeQueue, first_chunks
from simsched.engine.cores import PREFETCH_DEPTH, ChunkSlots
from simsched.engine.replay import Engine
from simsched.machine import load_machine
from simsched.memory import MemorySystem
from simsched.schedulers import get_scheduler
from simsched.trace import open_trace
from simsched.trace.format import RefChunk
from simsched.workloads import generate
from tests.engine.conftest import make_trace


def test_queue_serves_the_most_urgent_then_the_oldest_wish():
    q: DecodeQueue[str] = DecodeQueue()
    q.want("a", START, "pa")
    q.want("b", NEXT, "pb")
    q.want("c", READY, "pc")
    q.want("d", START, "pd")
    q.want("b", READY, "pb2")  # wanted again, more pressing: moves up, keeps one entry
    q.want("c", NEXT, "pc3")  # wanted again, less pressing: stays where it was
    assert len(q) == 4 and "b" in q
    assert q.urgency() == READY
    assert [q.pop() for _ in range(4)] == [("c", "pc"), ("b", "pb2"), ("a", "pa"), ("d", "pd")]
    assert q.pop() is None and q.urgency() is None and not q


def test_queue_forgets_discarded_keys():
    q: DecodeQueue[None] = DecodeQueue()
    for k in range(3):
        q.want(k, READY, None)
    q.discard(0)
    q.discard(7)  # never wanted: no effect
    assert len(q) == 2 and 0 not in q
    assert [q.pop(), q.pop(), q.pop()] == [(1, None), (2, None), None]


class _Trace:
    """Chunks of ``n`` references each; records the order the decoder is asked for."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.asked: list[int] = []

    def load_chunk(self, k: int, out: tuple[np.ndarray, ...]) -> RefChunk:
        self.asked.append(k)
        addr, size, write, gap, dep = (x[: self.n] for x in out)
        addr[:] = k
        return RefChunk(k * self.n, addr, size, write, gap, dep)


def test_slots_decode_the_most_urgent_chunks_first_and_guesses_hold_few_rows():
    t = _Trace(8)
    slots = ChunkSlots(12, 8)
    try:
        slots.depth = 0  # hold the decoder while the wishes are made
        for k in (1, 2, 3, 5, 6):
            slots.want(0, t, k, NEXT)
        slots.want(0, t, 4, START)
        for k in (9, 8):
            slots.want(0, t, k, READY)
        slots.depth = 10  # more threads than guesses may hold rows
        slots.pump()
        # the ready strands' chunks first (oldest wish first), then the start-up guess,
        # then the next chunks, of which PREFETCH_DEPTH may be decoded ahead and unread
        assert PREFETCH_DEPTH == 4
        assert list(slots.flight) == [(0, 9), (0, 8), (0, 4), (0, 1), (0, 2), (0, 3), (0, 5)]
        r = slots.acquire(_job(t), 8)  # a core needs a chunk decoded ahead: it waits for it
        assert slots.addr[r, 0] == 8 and slots.pins[r] == 1
        assert (0, 6) not in slots.flight and (0, 6) not in slots.where
        slots.acquire(_job(t), 1)  # a guess read: the next one may go
        assert (0, 6) in slots.flight or (0, 6) in slots.where
        # a chunk nobody wanted ahead is decoded in place
        r = slots.acquire(_job(t), 7)
        assert slots.addr[r, 0] == 7
        assert slots.ahead_loads == 8 and slots.loads >= 3
    finally:
        slots.close()


def _job(trace: _Trace) -> SimpleNamespace:
    return SimpleNamespace(jid=0, trace=trace)


def test_first_chunks_follow_the_first_spawns(tmp_path):
    """The root's chunk first, then the chunk where the root's continuation reads (the
    second half of a mergesort, mid-trace): where the first thief goes."""
    path = tmp_path / "ms.sst"
    generate("mergesort", path, n=1 << 14, grain=64, chunk_refs=1 << 12)
    t = open_trace(path)
    n = int(t.index.shape[0])
    got = first_chunks(t, 8)
    assert len(got) == len(set(got)) == 8
    assert got[0] == 0
    # the first continuation with references lies in the second half of the sort
    assert any(k > n // 3 for k in got[:4])
    assert first_chunks(t, 0) == [] and len(first_chunks(t, 10**6)) <= n


@pytest.mark.parametrize("copy", [False, True], ids=["in-place", "copied"])
@pytest.mark.parametrize("sched", ["ws", "pdf"])
def test_steal_bound_replays_are_the_same_with_and_without_decoding_ahead(
    tmp_path, monkeypatch, sched, copy
):
    """Sixteen cores on tiny strands (WS: more steal attempts than strands), small chunks, few
    rows (223 chunks of 16 references for 38 rows or 16: chunks decoded ahead, evicted
    and decoded again), cores reading rows in place
    or copying their segments: the same record whether chunks are decoded ahead or when
    a core needs them."""
    if copy:  # 16 rows and 16 one-row stretches of 16 references
        monkeypatch.setattr(cores, "BUFFER_BUDGET", 32 * 16 * cores.REF_BYTES)
        monkeypatch.setattr(cores, "WHOLE_TRACE_BUDGET", 0)  # not one row per chunk
    machine = load_machine("opteron-8380-4x4")
    path = make_trace(tmp_path / "t.sst", seed=3, depth=9, max_refs=8, chunk_refs=16)
    out = []
    for ahead in (True, False):
        trace = open_trace(path)
        mem = MemorySystem(machine)
        eng = Engine(
            trace, machine, get_scheduler(sched), {}, 5, mem, window=100, decode_ahead=ahead
        )
        res = eng.run()
        out.append((res, mem.stats()))
    (a, sa), (b, sb) = out
    assert a.engine["chunks_ahead"] > 0 and b.engine["chunks_ahead"] == 0
    assert a.engine["chunk_loads"] > trace.index.shape[0]  # rows were too few: re-decoded
    for f in ("strand_core", "strand_start", "strand_end", "busy_cycles", "private_misses"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert a.counters == b.counters
    assert sa == sb
