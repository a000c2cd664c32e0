"""Remote transfers over socket links: hand-worked latencies, queueing and statistics."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.machine import load_machine
from simsched.memory.system import MemorySystem
from tests.memory._streams import STREAM_KINDS, compare, random_stream
from tests.oracles.memory_oracle import MemoryOracle


def chain(**memory):
    """Four one-core sockets in a chain 0-1-2-3; 1 GHz, 2 GB/s links = 32 cycles/line."""
    return load_machine(
        {
            "name": "chain",
            "sockets": 4,
            "cores_per_socket": 1,
            "clock_ghz": 1.0,
            "caches": [
                {
                    "name": "L1",
                    "scope": "core",
                    "size": 128,
                    "assoc": 2,
                    "line": 64,
                    "hit_latency": 2,
                }
            ],
            "memory": {
                "latency": 100,
                "remote_latency": 10,
                "service_interval": 10,
                "placement": "node:3",
                **memory,
            },
            "links": [{"a": i, "b": i + 1, "bandwidth": 2.0, "latency": 20} for i in range(3)],
        }
    )


def test_remote_latency_adds_the_route():
    ms = MemorySystem(chain())
    lat = ms.access_batch(0, np.array([0, 4096], np.int64), 8, False, 0)
    # latency + remote_latency + three links of 20; the second fetch finds them free.
    assert lat.tolist() == [170, 170]
    links = ms.stats()["links"]
    back = {(ln["from"], ln["to"]): ln for ln in links}
    assert [back[(3, 2)]["lines"], back[(2, 1)]["lines"], back[(1, 0)]["lines"]] == [2, 2, 2]
    assert back[(0, 1)]["lines"] == 0
    assert back[(3, 2)]["busy_cycles"] == 64
    # The socket of the node: no link at all.
    ms = MemorySystem(chain())
    assert ms.access_batch(3, np.array([0], np.int64), 8, False, 0).tolist() == [100]
    assert sum(ln["lines"] for ln in ms.stats()["links"]) == 0


def test_two_fetches_queue_on_a_shared_link():
    ms = MemorySystem(chain())
    a = ms.access(0, 0, 8, False, 0)  # controller 0-10, links 3->2, 2->1, 1->0 busy 0-32
    b = ms.access(1, 4096, 8, False, 0)  # controller waits to 10, link 3->2 to 32
    assert a == 170
    # 100 + 10 + two links of 20 + controller wait 10 + link wait 22.
    assert b == 182
    back = {(ln["from"], ln["to"]): ln for ln in ms.stats()["links"]}
    assert back[(3, 2)]["queue_delay"] == 22 and back[(2, 1)]["queue_delay"] == 0


def test_writebacks_cross_the_links_towards_the_node():
    ms = MemorySystem(chain())
    # Two ways of one set: the third written line evicts the first, dirty.
    ms.access_batch(0, np.array([0, 64, 128], np.int64), 8, True, 0)
    st = ms.stats()
    assert st["nodes"][3]["writebacks"] == 1
    fwd = {(ln["from"], ln["to"]): ln["lines"] for ln in st["links"]}
    assert fwd[(0, 1)] == fwd[(1, 2)] == fwd[(2, 3)] == 1


def test_without_links_nothing_changes():
    d = chain().as_dict()
    del d["links"]
    ms = MemorySystem(load_machine(d))
    assert ms.access_batch(0, np.array([0], np.int64), 8, False, 0).tolist() == [110]
    assert "links" not in ms.stats()


def test_record_has_link_traffic_only_with_links():
    import json

    from simsched.engine.record import memory_fields

    ms = MemorySystem(chain())
    ms.access_batch(0, np.array([0], np.int64), 8, False, 0)
    rec = memory_fields(ms.stats(), makespan=170, instructions=1)
    traffic = {(x["from"], x["to"]): x for x in json.loads(rec["link_traffic"])}
    assert traffic[(3, 2)]["lines"] == 1
    assert traffic[(3, 2)]["utilization"] == 32 / 170
    d = chain().as_dict()
    del d["links"]
    ms = MemorySystem(load_machine(d))
    ms.access_batch(0, np.array([0], np.int64), 8, False, 0)
    assert "link_traffic" not in memory_fields(ms.stats(), makespan=110, instructions=1)


def _linked(rng: np.random.Generator, sockets: int, extra: int) -> dict:
    """A random machine whose sockets are joined by a random spanning tree plus ``extra``
    more links, listed in a random order, with random bandwidths and latencies."""
    pairs = [(int(rng.integers(0, s)), s) for s in range(1, sockets)]
    others = [(a, b) for a in range(sockets) for b in range(a + 1, sockets) if (a, b) not in pairs]
    pairs += [others[int(i)] for i in rng.permutation(len(others))[:extra]]
    links = [
        {
            "a": a,
            "b": b,
            "bandwidth": float(rng.choice([0.8, 2.0, 6.4, 12.8, 64.0])),
            "latency": int(rng.integers(0, 150)),
        }
        for a, b in (pairs[int(i)] for i in rng.permutation(len(pairs)))
    ]
    return {
        "name": f"linked-{sockets}",
        "sockets": sockets,
        "cores_per_socket": int(rng.integers(1, 3)),
        "clock_ghz": float(rng.choice([1.0, 2.5])),
        "caches": [
            {"name": "L1", "scope": "core", "size": 1024, "assoc": 2, "line": 64, "hit_latency": 2},
            {
                "name": "L2",
                "scope": "socket",
                "size": 8192,
                "assoc": 4,
                "line": 128,
                "hit_latency": 10,
                "inclusion": str(rng.choice(["inclusive", "non-inclusive"])),
            },
        ],  # fmt: skip
        "memory": {
            "latency": 100,
            "remote_latency": int(rng.integers(0, 50)),
            "service_interval": int(rng.integers(1, 30)),
            "page_size": 4096,
            "placement": str(rng.choice(["first-touch", "interleave", f"node:{sockets - 1}"])),
        },
        "links": links,
        **(
            {"core": {"model": "out-of-order", "mshrs": 4, "rob": 32}} if rng.random() < 0.5 else {}
        ),
    }


# Each seed is a new topology, so a new compiled kernel (15-30 s): three in every run
# (first touch with blocking cores; interleaved pages with out-of-order cores and a
# prefetcher; all pages on one node), three more with -m slow.
_SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "seed",
    [
        1,
        3,
        4,
        pytest.param(0, marks=_SLOW),
        pytest.param(2, marks=_SLOW),
        pytest.param(5, marks=_SLOW),
    ],
)
def test_links_agree_with_the_oracle(seed):
    """Random topologies (2-6 sockets, spanning tree plus extra links; blocking or
    out-of-order cores, a prefetcher in a third) and streams from every core: the same
    latencies, end times, statistics (links included) and cache
    contents as the pure-Python oracle of docs/machine-model.md §5.1."""
    rng = np.random.default_rng(seed)
    sockets = int(rng.integers(2, 7))
    spec = _linked(rng, sockets, int(rng.integers(0, sockets)))
    if seed % 3 == 0:
        spec["caches"][0]["prefetch"] = {"streams": 4, "distance": 2, "degree": 2}
    m = load_machine(spec)
    ms, orc = MemorySystem(m), MemoryOracle(m)
    for _ in range(40):
        kind = STREAM_KINDS[int(rng.integers(0, len(STREAM_KINDS)))]
        core = int(rng.integers(0, m.cores))
        a, s, w, g = random_stream(rng, int(rng.integers(1, 300)), kind)
        compare(ms, orc, core, a, s, w, int(rng.integers(0, 20000)), g)
    stats = ms.stats()
    assert sum(link["lines"] for link in stats["links"]) > 0
    assert stats == orc.stats()
    for k in range(len(m.caches)):
        for i in range(len(orc.sets[k])):
            assert ms.contents(k, i) == orc.contents(k, i)
