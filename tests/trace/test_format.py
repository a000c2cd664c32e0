"""The reference rule of ``simsched.trace.format`` against an independent statement of it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import TraceFormatError
from simsched.trace import format as fmt

LIMIT = 1 << 48


def _valid(addr: int, size: int) -> bool:
    return 1 <= size <= 127 and addr + size <= LIMIT


near = st.one_of(
    st.integers(0, (1 << 64) - 1),
    st.integers(LIMIT - 300, LIMIT + 300),
    st.integers(0, 300),
)


@given(addr=near, size=st.integers(0, 300))
def test_one_reference(addr, size):
    if _valid(addr, size):
        fmt.check_ref(addr, size, lambda i: "x")
    else:
        with pytest.raises(TraceFormatError, match=f"^x: invalid reference \\(address {addr:#x}"):
            fmt.check_ref(addr, size, lambda i: "x")


@given(refs=st.lists(st.tuples(near, st.integers(0, 255)), min_size=1, max_size=40))
def test_arrays_name_the_first_invalid_reference(refs):
    addr = np.array([a for a, _ in refs], np.uint64)
    size = np.array([s for _, s in refs], np.uint8)
    bad = [i for i, (a, s) in enumerate(refs) if not _valid(a, s)]
    if not bad:
        fmt.check_refs(addr, size, lambda i: f"ref {i}")
        return
    with pytest.raises(TraceFormatError, match=f"^ref {bad[0]}: invalid reference"):
        fmt.check_refs(addr, size, lambda i: f"ref {i}")


def test_the_rule_fits_the_memory_model():
    """Every job's address space (tag and colour above the virtual addresses) is
    accepted by the memory model."""
    from simsched.engine.job import MAX_JOBS, addr_offset
    from simsched.memory._kernels import ADDRESS_BITS

    assert fmt.ADDRESS_LIMIT == LIMIT
    top = max(addr_offset(j) for j in range(MAX_JOBS)) + LIMIT - 1
    assert top >> ADDRESS_BITS == 0
