"""The host-cache prefetch hint: it compiles to a prefetch and changes no value."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from simsched.machine import load_machine
from simsched.memory import _kernels as K
from simsched.memory._hostcache import _line_elements, host_prefetch, host_prefetch_span
from tests.memory._streams import machine


@njit(cache=False, nogil=True, _nrt=False)
def _sum_with_hints(a: np.ndarray, ahead: int) -> int:
    s = 0
    for i in range(a.shape[0]):
        host_prefetch(a, min(i + ahead, a.shape[0] - 1))
        s += a[i]
    return s


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
def test_hint_changes_no_value(dtype):
    a = (np.arange(1000) % 7).astype(dtype)
    assert _sum_with_hints(a, 16) == int(a.astype(np.int64).sum())
    # A strided view: the hint addresses the element, not the start of the buffer.
    assert _sum_with_hints(a[::3], 5) == int(a[::3].astype(np.int64).sum())


@njit(cache=False, nogil=True, _nrt=False)
def _sum_with_spans(a: np.ndarray, width: int) -> int:
    s = 0
    for lo in range(0, a.shape[0], width):
        hi = min(lo + width, a.shape[0]) - 1
        host_prefetch_span(a, lo, hi)
        for i in range(lo, hi + 1):
            s += a[i]
    return s


@pytest.mark.parametrize("dtype", [np.int64, np.uint32, np.uint8, np.bool_])
def test_span_hint_changes_no_value(dtype):
    a = (np.arange(1000) % 5).astype(dtype)
    for width in (1, 7, 32, 1000):
        assert _sum_with_spans(a, width) == int(a.astype(np.int64).sum())


def test_emits_a_prefetch_instruction():
    a = np.arange(100, dtype=np.int64)
    _sum_with_hints(a, 8)
    asm = _sum_with_hints.inspect_asm(_sum_with_hints.signatures[0])
    assert "prefetch" in asm


def test_rejects_what_is_not_a_1d_array():
    @njit(cache=False)
    def bad(x):
        host_prefetch(x, 0)

    with pytest.raises(TypingError):
        bad(np.zeros((2, 2)))
    with pytest.raises(TypingError):
        bad(3)


def test_serve_hints_the_next_references_lines():
    src = K.generate_source(K.geometry_of(load_machine("opteron-8380-4x4")))
    for arr in ("addrs", "gaps", "sizes", "writes", "deps"):
        assert f"host_prefetch_span({arr}, stop, e)" in src
    for arr in ("T0", "PF", "T1", "T2"):
        assert f"host_prefetch({arr}," in src
    # Without a prefetcher there is no prefetch table to hint.
    plain = K.generate_source(K.geometry_of(machine([{"size": 2048, "assoc": 2, "line": 64}])))
    assert "host_prefetch(T0," in plain
    assert "host_prefetch(PF," not in plain


def test_prefetch_hints_each_host_line_of_a_set_once():
    """The sets a prefetch searches are hinted one host line (8 entries) apart plus the
    last way, each entry once: a direct-mapped level's only entry is not hinted twice."""
    pf = {"streams": 4, "distance": 1, "degree": 1}
    for ways, hinted in (
        (1, [0]),
        (2, [0, 1]),
        (8, [0, 7]),
        (9, [0, 8]),
        (48, [*range(0, 48, 8), 47]),
    ):
        size = 64 * ways * 4
        g = K.geometry_of(machine([{"size": size, "assoc": ways, "line": 64, "prefetch": pf}]))
        lines = [s.strip() for s in K.generate_source(g).splitlines()]
        first = next(i for i, s in enumerate(lines) if s.startswith("hb = "))
        block = []
        for s in lines[first + 1 :]:
            if not s.startswith("host_prefetch(T0, hb + "):
                break
            block.append(int(s.removeprefix("host_prefetch(T0, hb + ").rstrip(")")))
        assert block == hinted, ways


@njit(cache=False, nogil=True, _nrt=False)
def _steps(a, b, c, d):
    return _line_elements(a), _line_elements(b), _line_elements(c), _line_elements(d)


def test_span_step_is_a_line_of_elements_known_when_compiling():
    arrs = (
        np.zeros(4, np.int64),
        np.zeros(4, np.uint32),
        np.zeros(4, np.uint8),
        np.zeros(4, np.bool_),
    )
    assert _steps(*arrs) == (8, 16, 64, 64)
    # No division left for the step or the loop's trip count.
    _span_only(arrs[0], 1, 3)
    assert "div" not in _span_only.inspect_asm(_span_only.signatures[0])


@njit(cache=False, nogil=True, _nrt=False)
def _span_only(a, lo, hi):
    host_prefetch_span(a, lo, hi)
