"""Per-core stack copies (simsched.engine.stacks)."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.engine.stacks import StackLayout, stack_layout
from simsched.errors import ConfigError
from simsched.trace.format import ADDRESS_LIMIT


def test_no_copies_without_a_region_or_with_one_core():
    assert stack_layout(None, 32) is None
    assert stack_layout((4096, 8192), 1) is None


def test_copies_sit_a_power_of_two_apart_above_the_region():
    lay = stack_layout((0x7FF000, 0x800000 + 100), 4)  # 4196 bytes -> 8 KiB apart
    assert lay == StackLayout(0x7FF000, 0x800064, 8192)
    addr = np.array([0x7FEFFF, 0x7FF000, 0x800063, 0x800064, 0x10], np.uint64)
    lay.remap(addr, 0, 3)
    assert addr.tolist() == [0x7FEFFF, 0x7FF000 + 3 * 8192, 0x800063 + 3 * 8192, 0x800064, 0x10]
    lay.remap(addr, 3, 1)  # from one core's copy to another's
    assert addr.tolist() == [0x7FEFFF, 0x7FF000 + 8192, 0x800063 + 8192, 0x800064, 0x10]
    lay.remap(addr, 1, 0)
    assert addr.tolist() == [0x7FEFFF, 0x7FF000, 0x800063, 0x800064, 0x10]


def test_copies_go_below_when_there_is_no_room_above():
    top = ADDRESS_LIMIT - 4096
    lay = stack_layout((top - (1 << 20), top), 8)
    assert lay is not None and lay.step == -(1 << 20)
    addr = np.array([top - 8], np.uint64)
    lay.remap(addr, 0, 7)
    assert int(addr[0]) == top - 8 - 7 * (1 << 20)


def test_a_region_that_cannot_be_copied_is_refused():
    with pytest.raises(ConfigError, match="cannot be copied for 4 cores"):
        stack_layout((0, ADDRESS_LIMIT // 2 + 1), 4)
