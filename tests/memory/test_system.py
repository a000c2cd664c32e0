"""Tests of ``simsched.memory.MemorySystem``: worked examples, invariants and agreement
with the pure-Python oracle (``tests/oracles/memory_oracle.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.machine import load_machine
from simsched.memory import MemorySystem
from tests.memory._streams import STREAM_KINDS, compare, machine, machine_specs, random_stream
from tests.oracles.memory_oracle import MemoryOracle


def serve(ms, core, refs, t=0, gaps=None):
    """refs: list of (addr, size, write)."""
    a = np.array([r[0] for r in refs], np.uint64)
    s = np.array([r[1] for r in refs], np.uint8)
    w = np.array([r[2] for r in refs], bool)
    return np.asarray(ms.access_batch(core, a, s, w, t, gaps)).tolist()


def check_invariants(stats: dict, machine) -> None:
    for lvl in stats["levels"]:
        assert lvl["hits"] + lvl["misses"] == lvl["accesses"], lvl["name"]
        for inst in lvl["instances"]:
            assert inst["hits"] + inst["misses"] == inst["accesses"]
    # Demand accesses of level k+1 are exactly the misses of level k.
    for up, down in zip(stats["levels"], stats["levels"][1:], strict=False):
        assert down["accesses"] == up["misses"]
    first = stats["levels"][0]["accesses"]
    assert first == sum(c["lines"] for c in stats["cores"])
    fetched = sum(n["local"] + n["remote"] for n in stats["nodes"])
    # A prefetcher's fetches from memory come on top of the demand misses (§6.2).
    prefetched = stats["prefetch"]["issued"] if "prefetch" in stats else 0
    assert stats["levels"][-1]["misses"] <= fetched <= stats["levels"][-1]["misses"] + prefetched
    assert sum(n["writebacks"] for n in stats["nodes"]) == stats["levels"][-1]["writebacks"]


# ---------------------------------------------------------------- worked examples


def test_lru_order_and_hits():
    # One set, two ways: A B A C -> C evicts B (LRU), then B misses, A misses.
    ms = MemorySystem(machine([{"size": 128, "assoc": 2, "line": 64}], latency=100))
    A, B, C = 0, 64, 128
    lat = serve(ms, 0, [(A, 8, False), (B, 8, False), (A, 8, False), (C, 8, False), (A, 8, False)])
    assert lat == [100, 100, 1, 100, 1]
    assert ms.contents(0, 0) == [[(0, False), (2, False)]]
    lat = serve(ms, 0, [(B, 8, False)], t=ms.last_time)
    assert lat == [100]
    s = ms.stats()["levels"][0]
    assert (s["accesses"], s["hits"], s["misses"]) == (6, 2, 4)


def test_write_back_after_fetch_and_controller_queueing():
    # Direct-mapped single line; service interval 10: the fetch of B starts at t, the
    # write-back of dirty A follows it on the controller, delaying the next fetch.
    ms = MemorySystem(
        machine([{"size": 64, "assoc": 1, "line": 64}], latency=100, service_interval=10)
    )
    assert serve(ms, 0, [(0, 8, True)], t=0) == [100]  # controller busy [0, 10)
    assert ms.access(0, 64, 8, False, 1000) == 100  # fetch [1000,1010), wb [1010,1020)
    assert ms.access(0, 128, 8, False, 1005) == 100 + 15  # waits until 1020
    st_ = ms.stats()
    node = st_["nodes"][0]
    assert node["writebacks"] == 1 and node["local"] == 3
    # the write-back is posted at 1000 too and waits for the fetch: 10 cycles
    assert node["queue_delay"] == 15 and node["writeback_queue_delay"] == 10
    assert node["busy_cycles"] == 40
    assert st_["levels"][0]["writebacks"] == 1
    assert st_["offchip_bytes"] == 4 * 64


def test_straddling_reference_touches_every_line():
    ms = MemorySystem(machine([{"size": 4096, "assoc": 4, "line": 64}], latency=50))
    lat = serve(ms, 0, [(60, 8, False), (0, 200, False)])
    # 60..67 straddles lines 0 and 1 (two misses); 0..199 touches lines 0-3 (2 hits, 2 misses)
    assert lat == [100, 1 + 1 + 50 + 50]
    s = ms.stats()
    assert s["levels"][0]["accesses"] == 6
    assert s["cores"][0]["refs"] == 2 and s["cores"][0]["lines"] == 6


def test_gaps_and_issue_times():
    ms = MemorySystem(
        machine([{"size": 64, "assoc": 1, "line": 64}], latency=100, service_interval=300)
    )
    lat = ms.access_batch(0, np.array([0, 64], np.uint64), 8, False, 5, gaps=np.array([3, 7]))
    # first issues at 8 (served 8..108), controller busy until 308; second issues at
    # 115 and waits 193 cycles.
    assert lat.tolist() == [100, 100 + 193]
    assert ms.last_time == 8 + 100 + 7 + 293


def test_first_touch_and_remote_latency():
    m = machine(
        [{"size": 1024, "assoc": 2, "line": 64}],
        sockets=2,
        latency=100,
        remote_latency=60,
        page_size=4096,
    )
    ms = MemorySystem(m)
    assert ms.access(1, 0x10000, 8, False, 0) == 100  # socket 1 touches the page first
    assert ms.access(0, 0x10040, 8, False, 0) == 160  # remote for socket 0
    assert ms.access(0, 0x20000, 8, False, 0) == 100  # socket 0's own page
    s = ms.stats()
    assert s["nodes"][1]["local"] == 1 and s["nodes"][1]["remote"] == 1
    assert s["nodes"][0]["local"] == 1
    assert s["cores"][0]["mem_remote"] == 1 and s["pages_mapped"] == 2


@pytest.mark.parametrize("scope", ["socket", "core"])
def test_core_counter_reader_matches_stats_through_page_table_growth(scope):
    m = machine(
        [
            {"size": 1024, "assoc": 2, "line": 64},
            {"name": "L2", "scope": scope, "size": 4096, "assoc": 4, "line": 64},
        ],
        sockets=2,
        cores_per_socket=2,
        remote_latency=60,
    )
    ms = MemorySystem(m)
    read = ms.core_counter_reader()
    rng = np.random.default_rng(5)
    state0 = ms.state
    for step in range(4):
        for core in range(4):
            addrs = rng.integers(0, 1 << 30, size=300).astype(np.uint64) * 64
            ms.access_batch(core, addrs, np.full(300, 8), np.zeros(300, bool), step * 1000)
            cs = ms.stats()["cores"][core]
            want = (cs["levels"]["L2"]["misses"], cs["mem_local"], cs["mem_remote"])
            assert read(core) == want
    assert ms.state is not state0  # the page table grew: the reader followed the new state


@pytest.mark.parametrize(
    ("placement", "nodes"), [("interleave", [0, 1, 2, 0]), ("node:2", [2, 2, 2, 2])]
)
def test_interleave_and_fixed_placement(placement, nodes):
    m = machine(
        [{"size": 1024, "assoc": 2, "line": 64}],
        sockets=3,
        latency=10,
        remote_latency=5,
        placement=placement,
    )
    ms = MemorySystem(m)
    for p in range(4):
        ms.access(0, p * 4096, 8, False, 0)
    s = ms.stats()
    counts = [n["local"] + n["remote"] for n in s["nodes"]]
    assert counts == [nodes.count(i) for i in range(3)]
    assert s["pages_mapped"] == 0


def test_inclusive_last_level_back_invalidates():
    # L1 2 lines fully associative, L2 inclusive 2 lines: a line evicted from L2 must
    # leave L1 too, and its dirtiness travels with the L2 victim.
    m = machine(
        [
            {"size": 128, "assoc": 2, "line": 64},
            {"size": 128, "assoc": 2, "line": 64, "inclusive": True},
        ],
        latency=100,
    )
    ms = MemorySystem(m)
    serve(ms, 0, [(0, 8, True), (64, 8, False)])
    # Touch line 1 again in L1 only; L2's LRU is still line 0.
    serve(ms, 0, [(64, 8, False), (0, 8, False), (64, 8, False)])
    serve(ms, 0, [(128, 8, False)])  # L2 evicts its LRU (line 0), L1 loses line 0
    s = ms.stats()
    assert s["levels"][0]["back_invalidations"] == 1
    assert s["levels"][1]["writebacks"] == 1  # line 0 was dirty in L1 only
    assert all(line != 0 for line, _ in ms.contents(0, 0)[0])


def test_exclusive_level_takes_victims_and_gives_hits_up():
    # L1 one line, L2 exclusive two lines (fully associative): L2 holds only L1's victims,
    # clean or dirty, and a hit in L2 moves the line back to L1 and out of L2.
    m = machine(
        [
            {"size": 64, "assoc": 1, "line": 64},
            {"size": 128, "assoc": 2, "line": 64, "inclusion": "exclusive"},
        ],
        latency=100,
    )
    ms = MemorySystem(m)
    # Line 0 written (memory -> L1 only), line 1 read: line 0 (dirty) falls into L2.
    assert serve(ms, 0, [(0, 8, True), (64, 8, False)]) == [100, 100]
    assert ms.contents(1, 0) == [[(0, True)]]
    assert ms.contents(0, 0) == [[(1, False)]]
    # Line 0 again: an L2 hit (2 cycles); it leaves L2, its dirt goes up with it, and
    # L1's victim (clean line 1) takes its place.
    assert serve(ms, 0, [(0, 8, False)]) == [2]
    assert ms.contents(0, 0) == [[(0, True)]]
    assert ms.contents(1, 0) == [[(1, False)]]
    # Lines 2, 3, 4: L1's victims 0 (dirty), 2, 3 enter L2; L2's LRU victims leave it,
    # line 1 (clean) quietly, then line 0 (dirty) as a write-back to memory.
    serve(ms, 0, [(128, 8, False), (192, 8, False), (256, 8, False)])
    s = ms.stats()
    assert s["levels"][0]["writebacks"] == 2  # line 0 left L1 dirty twice
    assert s["levels"][1]["writebacks"] == 1
    assert s["nodes"][0]["writebacks"] == 1
    assert s["levels"][1]["hits"] == 1 and s["levels"][1]["accesses"] == 6
    assert [e for (e, _) in ms.contents(1, 0)[0]] == [3, 2]
    orc = MemoryOracle(m)
    for refs in ([(0, 8, True), (64, 8, False)], [(0, 8, False)]):
        serve(orc, 0, refs)
    serve(orc, 0, [(128, 8, False), (192, 8, False), (256, 8, False)])
    assert orc.stats() == s
    assert orc.contents(1, 0) == ms.contents(1, 0)


def test_coherence_invalidates_other_copies():
    m = machine(
        [
            {"size": 1024, "assoc": 2, "line": 64},
            {"size": 4096, "assoc": 4, "line": 64, "scope": "socket"},
        ],
        sockets=2,
        cores_per_socket=2,
        latency=100,
    )
    assert m.coherent
    ms = MemorySystem(m)
    for core in range(4):
        ms.access(core, 0, 8, False, 0)
    ms.access(0, 0, 8, True, 0)
    s = ms.stats()
    # cores 1, 2, 3 lose their L1 copies; socket 1 loses its L2 copy; socket 0's shared
    # L2 is on the writer's path and keeps it.
    assert s["levels"][0]["invalidations"] == 3
    assert s["levels"][1]["invalidations"] == 1
    assert ms.access(1, 0, 8, False, 0) == 2  # served by the shared L2 of socket 0
    assert ms.access(2, 0, 8, False, 0) == 100


def test_coherence_off_keeps_copies():
    m = machine([{"size": 1024, "assoc": 2, "line": 64}], cores_per_socket=2, coherence=False)
    ms = MemorySystem(m)
    ms.access(1, 0, 8, False, 0)
    ms.access(0, 0, 8, True, 0)
    assert ms.stats()["levels"][0]["invalidations"] == 0
    assert ms.access(1, 0, 8, False, 0) == 1


def test_reset_stats_keeps_contents():
    ms = MemorySystem(machine([{"size": 1024, "assoc": 2, "line": 64}]))
    serve(ms, 0, [(0, 8, False)])
    ms.reset_stats()
    assert ms.stats()["levels"][0]["accesses"] == 0
    assert ms.access(0, 0, 8, False, 0) == 1


def test_invalid_input_raises():
    ms = MemorySystem(machine([{"size": 1024, "assoc": 2, "line": 64}]))
    with pytest.raises(ValueError, match="core 3"):
        ms.access_batch(3, np.zeros(1, np.uint64), 8, False, 0)
    with pytest.raises(ValueError, match="reference 1"):
        ms.access_batch(0, np.array([0, 1 << 60], np.uint64), 8, False, 0)
    with pytest.raises(ValueError, match="sizes"):
        ms.access_batch(0, np.zeros(2, np.uint64), np.array([8, 0]), False, 0)
    with pytest.raises(ValueError, match="shape"):
        ms.access_batch(0, np.zeros(2, np.uint64), np.array([8, 8, 8]), False, 0)


def test_an_address_at_2_63_and_up_is_refused_even_when_its_end_wraps():
    """2**64 - 47 as uint64 is -47 to the kernels: with 82 bytes its last byte (34) lay
    below the limit, so the reference was served at a negative address (not refused as
    every address from 2**57 up is) and the error's own search found nothing."""
    ms = MemorySystem(machine([{"size": 1024, "assoc": 2, "line": 64}]))
    a = np.array([0, 2**64 - 47, 64], np.uint64)
    with pytest.raises(ValueError, match=r"reference 1: address 0xffffffffffffffd1"):
        ms.access_batch(0, a, np.array([8, 82, 8]), False, 0)
    # the other references were served; the bad one touched nothing
    assert ms.stats()["levels"][0]["accesses"] == 2
    with pytest.raises(ValueError, match="reference 0"):
        ms.access_batch(0, np.array([-1], np.int64), 2, False, 0)


def test_page_table_growth_does_not_change_results():
    m = machine(
        [{"size": 512, "assoc": 2, "line": 64}],
        sockets=2,
        latency=100,
        remote_latency=50,
        service_interval=3,
        page_size=64,
    )
    rng = np.random.default_rng(7)
    n = 6000
    addrs = rng.integers(0, 1 << 30, n).astype(np.uint64)
    writes = rng.random(n) < 0.3
    cores = rng.integers(0, 2, n)
    one = MemorySystem(m)
    many = MemorySystem(m)
    orc = MemoryOracle(m)
    lat_one = []
    lat_many = []
    for core in (0, 1):
        sel = cores == core
        lat_one += one.access_batch(core, addrs[sel], 8, writes[sel], 0).tolist()
        t = 0
        for lo in range(0, int(sel.sum()), 700):
            part = np.flatnonzero(sel)[lo : lo + 700]
            # Each piece starts when the previous one ended: the same time line.
            lat_many += many.access_batch(core, addrs[part], 8, writes[part], t).tolist()
            t = many.last_time
        orc_lat = orc.access_batch(core, addrs[sel], [8] * int(sel.sum()), writes[sel], 0)
        assert lat_one[-len(orc_lat) :] == orc_lat
    assert one.stats() == orc.stats()
    assert one.stats()["pages_mapped"] > 1024  # the table grew past its initial size
    # The table grows at other moments with other batch sizes; results are the same.
    assert lat_many == lat_one
    assert many.stats() == one.stats()
    assert many.contents(0, 0) == one.contents(0, 0)


def test_preset_machine_invariants():
    m = load_machine("opteron-8380-4x4")
    ms = MemorySystem(m)
    rng = np.random.default_rng(3)
    for core in range(m.cores):
        a, s, w, g = random_stream(rng, 2000, STREAM_KINDS[core % len(STREAM_KINDS)])
        ms.access_batch(core, a, s, w, 0, g)
    check_invariants(ms.stats(), m)


@pytest.mark.slow
def test_opteron_exclusive_l2_agrees_with_oracle():
    # The Opteron preset's L2 is exclusive (a victim cache of L1).  The oracle has no
    # socket links, so they are left out (a geometry of its own: compiles, slow).
    spec = load_machine("opteron-8380-4x4").as_dict()
    m = load_machine({k: v for k, v in spec.items() if k != "links"})
    assert m.level("L2").exclusive
    ms = MemorySystem(m)
    orc = MemoryOracle(m)
    rng = np.random.default_rng(3)
    for core in range(m.cores):
        a, s, w, g = random_stream(rng, 2000, STREAM_KINDS[core % len(STREAM_KINDS)])
        compare(ms, orc, core, a, s, w, 0, g)
    assert ms.stats() == orc.stats()
    check_invariants(ms.stats(), m)


# ---------------------------------------------------------------- oracle agreement


# Each example is a new cache geometry, so a new generated module to compile (1-4 s the
# first time, then loaded from the on-disk cache): few machines (derandomized, so the
# same ones every run and their kernels stay cached), many streams on each.
@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=machine_specs(), seed=st.integers(0, 2**32 - 1))
def test_agrees_with_oracle_on_random_machines(spec, seed):
    m = load_machine(spec)
    ms = MemorySystem(m)
    orc = MemoryOracle(m)
    rng = np.random.default_rng(seed)
    t = 0
    for _ in range(12):
        kind = STREAM_KINDS[int(rng.integers(0, len(STREAM_KINDS)))]
        core = int(rng.integers(0, m.cores))
        a, s, w, g = random_stream(rng, int(rng.integers(1, 250)), kind)
        t = int(rng.integers(0, 5000))
        compare(ms, orc, core, a, s, w, t, g if rng.random() < 0.5 else None)
    assert ms.stats() == orc.stats()
    for k in range(len(m.caches)):
        for i in range(len(orc.sets[k])):
            assert ms.contents(k, i) == orc.contents(k, i)
    check_invariants(ms.stats(), m)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=machine_specs(), seed=st.integers(0, 2**32 - 1))
def test_agrees_with_oracle_on_many_random_machines(spec, seed):
    """The same check on fresh random machines every run (each compiles: slow)."""
    test_agrees_with_oracle_on_random_machines.hypothesis.inner_test(spec, seed)


_NUMA_MEMORY = {
    "latency": 100,
    "remote_latency": 40,
    "service_interval": 7,
    "page_size": 256,
    "placement": "first-touch",
}

FIXED_MACHINES = {
    "numa-incl": {
        "name": "numa-incl",
        "sockets": 2,
        "cores_per_socket": 2,
        "caches": [
            {"name": "L1", "scope": "core", "size": 256, "assoc": 2, "line": 32, "hit_latency": 1},
            {"name": "L2", "scope": "core", "size": 1024, "assoc": 4, "line": 64, "hit_latency": 5},
            {
                "name": "L3",
                "scope": "socket",
                "size": 2048,
                "assoc": 4,
                "line": 64,
                "hit_latency": 20,
                "inclusive": True,
            },
        ],
        "memory": _NUMA_MEMORY,
    },
    # AMD K10's organisation: L2 a victim cache of L1, the shared L3 of L2 (exclusive).
    "numa-exclusive": {
        "name": "numa-excl",
        "sockets": 2,
        "cores_per_socket": 2,
        "caches": [
            {"name": "L1", "scope": "core", "size": 256, "assoc": 2, "line": 64, "hit_latency": 1},
            {
                "name": "L2",
                "scope": "core",
                "size": 512,
                "assoc": 4,
                "line": 64,
                "hit_latency": 5,
                "inclusion": "exclusive",
            },
            {
                "name": "L3",
                "scope": "socket",
                "size": 1024,
                "assoc": 4,
                "line": 64,
                "hit_latency": 20,
                "inclusion": "exclusive",
            },
        ],
        "memory": _NUMA_MEMORY,
    },
    "direct-mapped": {
        "name": "dm",
        "sockets": 1,
        "cores_per_socket": 3,
        "caches": [
            {"name": "L1", "scope": "core", "size": 128, "assoc": 1, "line": 16, "hit_latency": 2},
            {
                "name": "L2",
                "scope": "socket",
                "size": 512,
                "assoc": 1,
                "line": 16,
                "hit_latency": 9,
            },
        ],
        "memory": {"latency": 50, "service_interval": 20},
    },
}

refs_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # core (mod cores)
        st.integers(0, 4095),  # address
        st.sampled_from([1, 4, 8, 8, 64, 100]),  # size
        st.booleans(),  # write
        st.integers(0, 30),  # gap
    ),
    min_size=1,
    max_size=120,
)


@pytest.mark.parametrize(
    "name",
    [
        # A geometry of its own (compiles ~15 s): with the slow checks.
        pytest.param(n, marks=pytest.mark.slow) if n == "numa-exclusive" else n
        for n in sorted(FIXED_MACHINES)
    ],
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(refs=refs_strategy)
def test_agrees_with_oracle_on_shrinkable_streams(name, refs):
    m = load_machine(FIXED_MACHINES[name])
    ms = MemorySystem(m)
    orc = MemoryOracle(m)
    for core, addr, size, write, gap in refs:
        c = core % m.cores
        t = gap * 13
        assert ms.access(c, addr, size, write, t) == orc.access(c, addr, size, write, t)
    assert ms.stats() == orc.stats()
    check_invariants(ms.stats(), m)


def test_scalar_sizes_are_validated():
    ms = MemorySystem(machine([{"size": 1024, "assoc": 2, "line": 64}]))
    with pytest.raises(ValueError, match="sizes"):
        ms.access_batch(0, np.zeros(2, np.uint64), 0, False, 0)
    with pytest.raises(ValueError, match="gaps"):
        ms.access_batch(0, np.zeros(2, np.uint64), 8, False, 0, gaps=np.array([1, -1]))
    assert ms.access_batch(0, np.zeros(2, np.uint64), 300 - 292, True, 0).tolist() == [100, 1]


def _three_levels(sockets: int, cores_per_socket: int, inclusive: bool):
    """Small private L1 and L2 and a socket's L3, pages of 256 bytes: many holders share
    few sets."""
    return machine(
        [
            {"size": 256, "assoc": 2, "line": 32},
            {"size": 512, "assoc": 4, "line": 64},
            {"scope": "socket", "size": 2048, "assoc": 4, "line": 64, "inclusive": inclusive},
        ],
        sockets=sockets,
        cores_per_socket=cores_per_socket,
        page_size=256,
    )


@pytest.mark.parametrize(
    ("sockets", "cores_per_socket", "inclusive"),
    # 200 cores on one socket: a geometry of its own (compiles ~30 s in CI): slow checks
    [(3, 45, True), pytest.param(1, 200, False, marks=pytest.mark.slow)],
)
def test_coherence_directory_on_many_cores_agrees_with_oracle(sockets, cores_per_socket, inclusive):
    """More holders than one 64-bit mask word: sharer bits in every word, the own bit at
    bit 63 and across word boundaries, socket bits sharing a word with core bits."""
    m = _three_levels(sockets, cores_per_socket, inclusive)
    assert m.cores + m.sockets > 128
    ms = MemorySystem(m)
    orc = MemoryOracle(m)
    rng = np.random.default_rng(cores_per_socket)
    edge = [0, 1, 62, 63, 64, 65, 126, 127, 128, 129, m.cores - 1]
    t = 0
    for r in range(600):
        core = edge[r % len(edge)] if r % 2 else int(rng.integers(0, m.cores))
        n = int(rng.integers(1, 24))
        # A few hundred bytes shared by everyone: many sharers per line.
        a = rng.integers(0, 768, n).astype(np.uint64)
        s = rng.choice([1, 4, 8], n).astype(np.uint8)
        w = rng.random(n) < 0.4
        compare(ms, orc, core, a, s, w, t, None)
        t = ms.last_time
    stats = ms.stats()
    assert stats == orc.stats()
    assert sum(lv["invalidations"] for lv in stats["levels"]) > 1000
    for k in range(len(m.caches)):
        for i in range(len(orc.sets[k])):
            assert ms.contents(k, i) == orc.contents(k, i)


@pytest.mark.parametrize(("sockets", "cores_per_socket"), [(2, 2), (3, 45)])
def test_coherence_filter_counts_the_lines_each_holder_has(sockets, cores_per_socket):
    """The filter after a stream of shared reads and writes: every bucket's counter of a
    holder is the number of lines of the regions hashed to it that the holder's caches
    hold (a core's private levels, a socket's shared ones), and its sharer mask has
    exactly the bits of the non-zero counters.  The masks of all buckets lie before the
    counters (``filter_counts``)."""
    from simsched.memory._geometry import _GOLDEN

    m = _three_levels(sockets, cores_per_socket, inclusive=True)
    ms = MemorySystem(m)
    g = ms.geometry
    rng = np.random.default_rng(sockets)
    t = 0
    for _ in range(400):
        core = int(rng.integers(0, m.cores))
        n = int(rng.integers(1, 24))
        a = rng.integers(0, 1 << 14, n).astype(np.uint64)
        ms.access_batch(core, a, 8, rng.random(n) < 0.4, t)
        t = ms.last_time
    nb = 1 << g.filter_bits
    want = np.zeros((nb, g.entities), np.int64)
    for k in range(g.levels):
        for i in range(g.instances(k)):
            e = i if g.private[k] else g.cores + i
            for row in ms.contents(k, i):
                for line, _dirty in row:
                    region = line >> (g.region_shift - g.shifts[k])
                    h = ((region * _GOLDEN) % 2**64) >> (64 - g.filter_bits)
                    want[h, e] += 1
    fc = ms.state[g.st_filter]
    counts = fc[g.filter_counts :].reshape(nb, g.entities)
    assert (counts == want).all() and want.sum() > 100
    masks = fc[: g.filter_counts].reshape(nb, g.mask_words)
    for e in range(g.entities):
        held = (masks[:, e >> 6] >> (e & 63)) & 1
        assert (held == (want[:, e] != 0)).all(), e
    check_invariants(ms.stats(), m)
