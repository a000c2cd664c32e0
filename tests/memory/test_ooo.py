"""Out-of-order cores (docs/machine-model.md §6.1): hand-worked timings, the oracle on
random machines, and the schema's rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.machine import load_machine
from simsched.memory.system import MemorySystem
from tests.memory._streams import STREAM_KINDS, compare, machine_specs, random_stream
from tests.oracles.memory_oracle import MemoryOracle


def one_level(core: dict | str | None, service: int = 0) -> object:
    d = {
        "name": "t",
        "cores_per_socket": 1,
        "caches": [
            {"name": "L1", "scope": "core", "size": 1024, "assoc": 2, "line": 64, "hit_latency": 2}
        ],
        "memory": {"latency": 100, "remote_latency": 0, "service_interval": service},
    }
    if core is not None:
        d["core"] = core
    return load_machine(d)


OOO = {"model": "out-of-order", "mshrs": 2, "rob": 10}
LINES = np.array([0, 64, 128, 192], np.uint64)


def test_worked_example_mshrs_and_dependence():
    """Four misses of 100 cycles, two MSHRs, the last one dependent:
    ref 0 issues at 0 (done 100), ref 1 at 2 (done 102), ref 2 finds both MSHRs busy and
    waits for the oldest (issues 100, done 200), ref 3 depends on a load and waits for
    every miss in flight (issues 200, done 300).  Blocking: 4 x 100."""
    deps = [False, False, False, True]
    blocking = MemorySystem(one_level(None))
    assert blocking.access_batch(0, LINES, 8, False, 0, deps=deps).tolist() == [100] * 4
    assert blocking.last_time == 400
    ooo = MemorySystem(one_level(OOO))
    assert ooo.access_batch(0, LINES, 8, False, 0, deps=deps).tolist() == [100] * 4
    assert ooo.last_time == 300


def test_worked_example_reorder_buffer():
    """rob = 3: a reference 6 instructions after a miss waits for it; hits do not wait."""
    ms = MemorySystem(one_level({"model": "out-of-order", "mshrs": 8, "rob": 3}))
    # ref 0 misses (issue 0, done 100, instruction 1); ref 1 hits the same line after 1
    # instruction (instruction 3: within the window, issues at 2 + 1 = 3, done 5); ref 2
    # after 5 more (instruction 9: the miss is 8 older, so it waits until 100).
    lat = ms.access_batch(0, np.array([0, 8, 64], np.uint64), 8, False, 0, gaps=[0, 1, 5])
    assert lat.tolist() == [100, 2, 100]
    assert ms.last_time == 200


def test_controller_queueing_binds_with_misses_in_flight():
    """With several misses in flight the memory controller's service interval becomes the
    limit: 4 misses, 8 MSHRs, 50 cycles per line -> the last starts service at 150."""
    ms = MemorySystem(one_level({"model": "out-of-order", "mshrs": 8, "rob": 100}, service=50))
    lat = ms.access_batch(0, LINES, 8, False, 0)
    assert lat.tolist() == [100, 148, 196, 244]
    assert ms.last_time == 6 + 244


def test_out_of_order_never_slower_than_blocking_on_independent_streams():
    rng = np.random.default_rng(5)
    a = (rng.integers(0, 1 << 16, 500) * 8).astype(np.uint64)
    g = rng.integers(0, 5, 500).astype(np.uint32)
    blocking = MemorySystem(one_level(None, service=10))
    blocking.access_batch(0, a, 8, False, 0, g)
    ooo = MemorySystem(one_level(OOO, service=10))
    ooo.access_batch(0, a, 8, False, 0, g)
    assert ooo.last_time < blocking.last_time
    assert ooo.stats()["levels"] == blocking.stats()["levels"]


_RANDOM = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_MACHINES = {
    "spec": machine_specs(),
    "mshrs": st.integers(1, 6),
    "rob": st.integers(1, 64),
    "seed": st.integers(0, 2**32 - 1),
}


# Each example is a new machine, so a new compiled kernel: two in every run, ten more
# with -m slow.
@settings(_RANDOM, max_examples=2)
@given(**_MACHINES)
def test_agrees_with_oracle_on_random_machines(spec, mshrs, rob, seed):
    _agrees_on(spec, mshrs, rob, seed)


@pytest.mark.slow
@settings(_RANDOM, max_examples=12)
@given(**_MACHINES)
def test_agrees_with_oracle_on_more_random_machines(spec, mshrs, rob, seed):
    _agrees_on(spec, mshrs, rob, seed)


def _agrees_on(spec, mshrs, rob, seed):
    m = load_machine({**spec, "core": {"model": "out-of-order", "mshrs": mshrs, "rob": rob}})
    ms = MemorySystem(m)
    orc = MemoryOracle(m)
    rng = np.random.default_rng(seed)
    for _ in range(10):
        kind = STREAM_KINDS[int(rng.integers(0, len(STREAM_KINDS)))]
        core = int(rng.integers(0, m.cores))
        a, s, w, g = random_stream(rng, int(rng.integers(1, 250)), kind)
        d = rng.random(a.shape[0]) < 0.2
        t = int(rng.integers(0, 5000))
        g = g if rng.random() < 0.5 else None
        compare(ms, orc, core, a, s, w, t, g, deps=d)
    assert ms.stats() == orc.stats()


@pytest.mark.parametrize(
    ("core", "message"),
    [
        ({"model": "out-of-order"}, "needs mshrs and rob"),
        ({"model": "out-of-order", "mshrs": 4}, "needs rob"),
        ({"model": "blocking", "rob": 4}, "rob apply to model: out-of-order"),
        ({"model": "out-of-order", "mshrs": 0, "rob": 4}, "mshrs"),
        ({"model": "superscalar"}, "model"),
        ({"model": "out-of-order", "mshrs": 4, "rob": 8, "width": 4}, "width"),
    ],
)
def test_core_section_errors(core, message):
    with pytest.raises(ConfigError, match=message):
        one_level(core)


def test_blocking_core_dumps_as_before():
    """``core: blocking`` (or no key) leaves the machine's data, hash and module as before."""
    plain = one_level(None)
    for core in ("blocking", {"model": "blocking"}):
        m = one_level(core)
        assert m.as_dict() == plain.as_dict()
    assert "core" in one_level(OOO).as_dict()
