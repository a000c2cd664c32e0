"""The stream prefetcher (docs/machine-model.md §6.2): a hand-worked stream, the oracle on
random machines, blocking and out-of-order, and the schema's rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.machine import load_machine
from simsched.memory.system import MemorySystem
from tests.memory._streams import STREAM_KINDS, compare, machine_specs, random_stream
from tests.oracles.memory_oracle import MemoryOracle


def two_levels(prefetch: dict | None, **l2) -> object:
    caches = [
        {"name": "L1", "scope": "core", "size": 1024, "assoc": 2, "line": 64, "hit_latency": 2},
        {"name": "L2", "scope": "core", "size": 8192, "assoc": 4, "line": 64, "hit_latency": 10},
    ]
    caches[1].update(l2)
    if prefetch is not None:
        caches[1]["prefetch"] = prefetch
    return load_machine(
        {
            "name": "t",
            "cores_per_socket": 1,
            "caches": caches,
            "memory": {"latency": 100, "remote_latency": 0, "service_interval": 10},
        }
    )


def test_worked_stream():
    """A sweep of lines 0, 1, 2, ... with distance 2, degree 2.  Line 0 starts a stream;
    line 1 continues it (issue 100): lines 3 and 4 are fetched behind its own fetch
    (controller free at 110, 120: ready 210, 220).  Line 2 (issue 200) prefetches 5
    (ready 310).  Lines 3, 4, 5 (issue 300, 310, 320) hit L2 on prefetched lines that
    have arrived (10 cycles each) and prefetch 6, 7, 8 (ready 400, 410, 420); line 6
    issues at 330 and waits for its prefetch until 400 (70 cycles, late)."""
    ms = MemorySystem(two_levels({"streams": 4, "distance": 2, "degree": 2}))
    lat = ms.access_batch(0, (np.arange(8) * 64).astype(np.uint64), 8, False, 0)
    assert lat.tolist() == [100, 100, 100, 10, 10, 10, 70, 10]
    pf = ms.stats()["prefetch"]
    assert (pf["level"], pf["issued"], pf["useful"], pf["late"]) == ("L2", 8, 5, 1)
    # The same sweep without a prefetcher: every line from memory.
    plain = MemorySystem(two_levels(None))
    assert (
        plain.access_batch(0, (np.arange(8) * 64).astype(np.uint64), 8, False, 0).tolist()
        == [100] * 8
    )
    assert "prefetch" not in plain.stats()


def test_a_reset_keeps_the_timing_and_leaves_earlier_prefetches_uncounted():
    """The worked stream with reset_stats after line 5: lines 6 and 7 hit prefetches of
    before the reset.  They wait and train as without the reset, but count as neither
    useful nor late after it; before, they did (useful 2 with issued 1, useless -1)."""
    ms = MemorySystem(two_levels({"streams": 4, "distance": 2, "degree": 2}))
    lines = (np.arange(8) * 64).astype(np.uint64)
    first = ms.access_batch(0, lines[:6], 8, False, 0).tolist()
    before = ms.stats()["prefetch"]
    ms.reset_stats()
    assert first + ms.access_batch(0, lines[6:], 8, False, ms.last_time).tolist() == [
        100,
        100,
        100,
        10,
        10,
        10,
        70,
        10,
    ]
    after = ms.stats()["prefetch"]
    assert (before["issued"], before["useful"], before["late"]) == (6, 3, 0)
    assert (after["issued"], after["useful"], after["late"], after["useless"]) == (2, 0, 0, 2)
    # line 8 was prefetched before the reset, line 9 after it: only line 9 is useful
    ms.access_batch(0, (np.arange(8, 10) * 64).astype(np.uint64), 8, False, ms.last_time)
    assert ms.stats()["prefetch"]["useful"] == 1


def test_stream_stops_at_the_page():
    """Prefetches never cross the trigger's page: a sweep of the last lines of a 4 KB page
    prefetches nothing past it."""
    ms = MemorySystem(two_levels({"streams": 4, "distance": 2, "degree": 2}))
    lines = np.arange(60, 64) * 64  # lines 60-63 of page 0
    ms.access_batch(0, lines.astype(np.uint64), 8, False, 0)
    assert ms.stats()["prefetch"]["issued"] == 1  # line 63 only (from line 61)


def test_useless_prefetches_are_counted():
    """Two lines in a row, then elsewhere: the prefetched lines are never used."""
    ms = MemorySystem(two_levels({"streams": 4, "distance": 1, "degree": 3}))
    ms.access_batch(0, np.array([0, 64, 1 << 20], np.uint64), 8, False, 0)
    pf = ms.stats()["prefetch"]
    assert (pf["issued"], pf["useful"], pf["useless"]) == (3, 0, 3)
    ms.reset_stats()
    assert ms.stats()["prefetch"]["issued"] == 0


def _with_prefetch(spec: dict, draw_level: int, pf: dict) -> dict | None:
    private = [
        k
        for k, c in enumerate(spec["caches"])
        if c["scope"] == "core" and c.get("inclusion") != "exclusive"
    ]
    if not private:
        return None
    k = private[draw_level % len(private)]
    caches = [dict(c) for c in spec["caches"]]
    caches[k]["prefetch"] = pf
    return {**spec, "caches": caches}


_RANDOM = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
_MACHINES = {
    "spec": machine_specs(),
    "level": st.integers(0, 3),
    "streams": st.integers(1, 8),
    "distance": st.integers(1, 6),
    "degree": st.integers(1, 4),
    "ooo": st.booleans(),
    "seed": st.integers(0, 2**32 - 1),
}


# Each example is a new machine, so a new compiled kernel (about 25 s): two in every run,
# ten more with -m slow.
@settings(_RANDOM, max_examples=2)
@given(**_MACHINES)
def test_agrees_with_oracle_on_random_machines(spec, level, streams, distance, degree, ooo, seed):
    _agrees_on(spec, level, streams, distance, degree, ooo, seed)


@pytest.mark.slow
@settings(_RANDOM, max_examples=12)
@given(**_MACHINES)
def test_agrees_with_oracle_on_more_random_machines(
    spec, level, streams, distance, degree, ooo, seed
):
    _agrees_on(spec, level, streams, distance, degree, ooo, seed)


def _agrees_on(spec, level, streams, distance, degree, ooo, seed):
    pf = {"streams": streams, "distance": distance, "degree": degree}
    full = _with_prefetch(spec, level, pf)
    assume(full is not None)
    assert full is not None
    if ooo:
        full["core"] = {"model": "out-of-order", "mshrs": 4, "rob": 32}
    m = load_machine(full)
    ms = MemorySystem(m)
    orc = MemoryOracle(m)
    rng = np.random.default_rng(seed)
    for _ in range(10):
        kind = STREAM_KINDS[int(rng.integers(0, len(STREAM_KINDS)))]
        core = int(rng.integers(0, m.cores))
        a, s, w, g = random_stream(rng, int(rng.integers(1, 300)), kind)
        if rng.random() < 0.5:  # a sequential sweep, the prefetcher's case
            a = (int(rng.integers(0, 1 << 20)) * 64 + np.arange(a.shape[0]) * 8).astype(np.uint64)
        t = int(rng.integers(0, 5000))
        compare(ms, orc, core, a, s, w, t, g)
    assert ms.stats() == orc.stats()
    for k in range(len(m.caches)):
        for i in range(len(orc.sets[k])):
            assert ms.contents(k, i) == orc.contents(k, i)


@pytest.mark.parametrize(
    ("l2", "message"),
    [
        ({"scope": "socket"}, "fills a private level"),
        ({"inclusion": "exclusive"}, "fills a private level"),
    ],
)
def test_prefetch_errors(l2, message):
    with pytest.raises(ConfigError, match=message):
        two_levels({"streams": 4}, **l2)


def test_one_prefetching_level():
    spec = two_levels({}).as_dict()
    spec["caches"][0]["prefetch"] = {}
    with pytest.raises(ConfigError, match="one prefetching level"):
        load_machine(spec)


def test_no_prefetch_dumps_as_before():
    assert "prefetch" not in two_levels(None).as_dict()["caches"][1]
    assert two_levels({"streams": 2}).as_dict()["caches"][1]["prefetch"]["streams"] == 2
