"""Per-core stack copies (simsched.memory.stacks)."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.errors import ConfigError
from simsched.memory.stacks import StackLayout, copy_segment, stack_layout
from simsched.trace.format import ADDRESS_LIMIT


def test_no_copies_without_a_region_or_with_one_core():
    assert stack_layout(None, 32) is None
    assert stack_layout((4096, 8192), 1) is None


def _rows(addrs):
    n = len(addrs)
    a = np.zeros((2, n), np.int64)
    a[0] = addrs
    size = np.zeros((2, n), np.uint8)
    size[0] = np.arange(n) + 1
    write = np.zeros((2, n), np.bool_)
    write[0, ::2] = True
    gap = np.zeros((2, n), np.uint32)
    gap[0] = np.arange(n) * 3
    return a, size, write, gap


def _copy(lay, addrs, core):
    a, size, write, gap = _rows(addrs)
    n = len(addrs)
    dep = write.copy()
    copy_segment(a, size, write, gap, dep, 0, 1, 1, 0, n - 1, lay.lo, lay.hi, lay.shift(core))
    assert dep[1, : n - 1].tolist() == write[0, 1:].tolist()
    assert size[1, : n - 1].tolist() == size[0, 1:].tolist()
    assert write[1, : n - 1].tolist() == write[0, 1:].tolist()
    assert gap[1, : n - 1].tolist() == gap[0, 1:].tolist()
    return a[1, : n - 1].tolist()


def test_copies_sit_a_power_of_two_apart_above_the_region():
    lay = stack_layout((0x7FF000, 0x800000 + 100), 4)  # 4196 bytes -> 8 KiB apart
    assert lay == StackLayout(0x7FF000, 0x800064, 8192)
    addrs = [0, 0x7FEFFF, 0x7FF000, 0x800063, 0x800064, 0x10]
    assert _copy(lay, addrs, 3) == [
        0x7FEFFF,
        0x7FF000 + 3 * 8192,
        0x800063 + 3 * 8192,
        0x800064,
        0x10,
    ]
    assert _copy(lay, addrs, 0) == addrs[1:]


def test_copies_go_below_when_there_is_no_room_above():
    top = ADDRESS_LIMIT - 4096
    lay = stack_layout((top - (1 << 20), top), 8)
    assert lay is not None and lay.step == -(1 << 20)
    assert _copy(lay, [0, top - 8], 7) == [top - 8 - 7 * (1 << 20)]


def test_a_region_that_cannot_be_copied_is_refused():
    with pytest.raises(ConfigError, match="cannot be copied for 4 cores"):
        stack_layout((0, ADDRESS_LIMIT // 2 + 1), 4)


def test_moved_gives_the_addresses_a_core_issues():
    lay = stack_layout((0x7FF000, 0x800000), 4)
    addr = np.array([0x10, 0x7FF008, 0x7FFFF8, 0x800000], np.uint64)
    assert lay.moved(addr, 0) is addr
    assert lay.moved(addr, 2).tolist() == [0x10, 0x7FF008 + 2 * 4096, 0x7FFFF8 + 2 * 4096, 0x800000]
    assert addr.tolist() == [0x10, 0x7FF008, 0x7FFFF8, 0x800000]  # left as it was


def test_memsim_round_robin_gives_every_core_its_own_stack(tmp_path):
    """memsim --core-of-strand rr places strands on cores like `run` does its stacks: fib
    (only stack references) then invalidates almost nothing; one core is unchanged."""
    from simsched.machine import load_machine
    from simsched.memory.replay import replay_trace
    from simsched.trace.builder import TraceBuilder
    from simsched.workloads import generate

    path = tmp_path / "fib.sst"
    generate("fib", path, n=12, cutoff=2)
    m = load_machine("sunfire-x4600-8x4")
    rr = replay_trace(m, path, "rr")
    assert rr["levels"][0]["invalidations"] <= 0.02 * rr["refs"]
    one = replay_trace(m, path, "0")
    # the same program without a named stack: every core on the serial stack
    orig = TraceBuilder.set_stack
    try:
        TraceBuilder.set_stack = lambda self, lo, hi: None  # type: ignore[method-assign]
        generate("fib", tmp_path / "plain.sst", n=12, cutoff=2)
    finally:
        TraceBuilder.set_stack = orig  # type: ignore[method-assign]
    shared = replay_trace(m, tmp_path / "plain.sst", "rr")
    assert shared["levels"][0]["invalidations"] > 0.3 * shared["refs"]
    plain_one = replay_trace(m, tmp_path / "plain.sst", "0")
    assert one["levels"] == plain_one["levels"] and one["cycles"] == plain_one["cycles"]
