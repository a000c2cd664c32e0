"""A finished run leaves no reference cycles among the engine's objects, so its memory
(model state, chunk buffers) returns when the caller drops the result, without waiting
for the cyclic garbage collector."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import simsched
from simsched.workloads import generate

ENGINE_TYPES = {"Replay", "ControlPlane", "CoreDriver", "ChunkSlots", "MemorySystem", "Job"}


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("release") / "mergesort.sst"
    generate("mergesort", path, n=1 << 13)
    return path


@pytest.mark.parametrize("scheduler", ["ws", "pdf"])
def test_finished_run_is_not_in_a_reference_cycle(trace, scheduler):
    simsched.run(trace, "itrs-scaling-4", scheduler)  # compile and load outside the check
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = simsched.run(trace, "itrs-scaling-4", scheduler)
        assert result.record["refs"] > 0
        del result
        gc.collect()
        cyclic = {type(o).__name__ for o in gc.garbage} & ENGINE_TYPES
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not cyclic, f"engine objects freed only by the cyclic collector: {sorted(cyclic)}"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_eight_runs_in_one_process_keep_resident_memory(trace):
    simsched.run(trace, "itrs-scaling-4", "ws")
    gc.collect()
    gc.disable()
    try:
        base = _rss_bytes()
        for seed in range(8):
            simsched.run(trace, "itrs-scaling-4", "ws", seed=seed)
        grown = _rss_bytes() - base
    finally:
        gc.enable()
    assert grown <= 0.10 * base, (
        f"resident memory grew {grown / 2**20:.0f} MB over {base / 2**20:.0f} MB"
    )
