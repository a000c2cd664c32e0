"""Peer check against pycachesim 0.3.1 (an independent LRU cache simulator).

On load-only streams both simulators model the same thing (set-associative LRU, lines
filled on a miss, a miss forwarded to the next level), so every level's miss count must be
identical.  With writes they differ by design: pycachesim does not move a line to the MRU
position on a write hit (and counts write-backs as stores into the next level), so only
load-only streams are compared; ``test_write_hit_mru_difference`` documents the difference.
"""

from __future__ import annotations

import numpy as np
import pytest

from simsched.memory import MemorySystem
from tests.memory._streams import machine

cachesim = pytest.importorskip("cachesim")

HIERARCHIES = {
    "l1": [(64, 8, 64)],
    "l1-l2": [(16, 4, 64), (64, 8, 64)],
    "l1-l2-l3-lines": [(8, 2, 32), (32, 4, 64), (64, 16, 128)],
    "direct": [(32, 1, 64), (128, 1, 64)],
}


def pycachesim(levels):
    mem = cachesim.MainMemory()
    caches = []
    nxt = None
    for i, (sets, ways, line) in reversed(list(enumerate(levels))):
        # Links go through the constructor: pycachesim 0.3.1's set_load_from() rejects a
        # next level with larger lines.
        c = cachesim.Cache(f"L{i + 1}", sets, ways, line, "LRU", load_from=nxt, store_to=nxt)
        caches.insert(0, c)
        nxt = c
    mem.load_to(caches[-1])
    mem.store_from(caches[-1])
    return cachesim.CacheSimulator(caches[0], mem), caches


def simsched(levels):
    m = machine([{"size": s * w * ln, "assoc": w, "line": ln} for s, w, ln in levels])
    return MemorySystem(m)


@pytest.mark.parametrize("name", sorted(HIERARCHIES))
@pytest.mark.parametrize("pattern", ["random", "sweep", "mixed", "unaligned"])
def test_load_only_misses_identical(name, pattern):
    levels = HIERARCHIES[name]
    rng = np.random.default_rng(sorted(HIERARCHIES).index(name) * 10 + len(pattern))
    n = 20000
    if pattern == "random":
        addrs = rng.integers(0, 1 << 17, n) * 8
    elif pattern == "sweep":
        addrs = (np.arange(n) * 8) % (1 << 16)
    elif pattern == "mixed":
        addrs = np.where(
            np.arange(n) % 512 < 256, np.arange(n) * 8, rng.integers(0, 1 << 15, n) * 8
        )
    else:
        addrs = rng.integers(0, 1 << 16, n)  # unaligned 8-byte loads straddle lines
    sizes = 8
    cs, caches = pycachesim(levels)
    cs.load(addrs.tolist(), length=sizes)
    ms = simsched(levels)
    ms.access_batch(0, addrs.astype(np.uint64), sizes, False, 0)
    got = [lvl["misses"] for lvl in ms.stats()["levels"]]
    want = [c.backend.MISS_count for c in caches]
    assert got == want
    # Both count a straddling load once per line it touches (pycachesim's LOAD_count
    # counts requests, its HIT_count and MISS_count count lines).
    assert [lvl["hits"] for lvl in ms.stats()["levels"]] == [c.backend.HIT_count for c in caches]
    assert caches[0].backend.LOAD_count == n


def test_write_hit_mru_difference():
    """One set, two ways: load A, load B, *store* A, load C.

    simsched moves A to MRU on the store, so C evicts B and a later load of A hits;
    pycachesim 0.3.1 leaves A at LRU on a write hit, so C evicts A and A misses."""
    levels = [(1, 2, 64)]
    A, B, C = 0, 64, 128
    cs, caches = pycachesim(levels)
    cs.load(A, length=8)
    cs.load(B, length=8)
    cs.store(A, length=8)
    cs.load(C, length=8)
    cs.load(A, length=8)
    ms = simsched(levels)
    for addr, w in ((A, False), (B, False), (A, True), (C, False), (A, False)):
        ms.access(0, addr, 8, w, 0)
    assert ms.stats()["levels"][0]["misses"] == 3
    assert caches[0].backend.MISS_count == 4
