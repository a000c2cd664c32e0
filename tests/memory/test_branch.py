"""The branch hints: they reach the optimiser as branch weights and change no value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from numba.core.errors import TypingError

from simsched.machine import load_machine
from simsched.memory import _kernels as K
from simsched.memory._branch import likely, unlikely


@njit(cache=False, nogil=True, _nrt=False)
def _hinted(a: np.ndarray, x: int) -> tuple[int, int]:
    s = 0
    n = 0
    for i in range(a.shape[0]):
        if likely(a[i] < x):
            s += a[i]
        elif unlikely(a[i] == x):
            n += 1
    return s, n


@njit(cache=False, nogil=True, _nrt=False)
def _plain(a: np.ndarray, x: int) -> tuple[int, int]:
    s = 0
    n = 0
    for i in range(a.shape[0]):
        if a[i] < x:
            s += a[i]
        elif a[i] == x:
            n += 1
    return s, n


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=60), st.integers(-60, 60))
def test_hints_change_no_value(values, x):
    a = np.array(values, dtype=np.int64)
    assert _hinted(a, x) == _plain(a, x)


def test_hints_become_branch_weights():
    a = np.arange(10, dtype=np.int64)
    _hinted(a, 5)
    _plain(a, 5)
    hinted = _hinted.inspect_llvm(_hinted.signatures[0]).count("branch_weights")
    plain = _plain.inspect_llvm(_plain.signatures[0]).count("branch_weights")
    assert hinted > plain


def test_rejects_what_is_not_a_boolean():
    @njit(cache=False)
    def bad(x):
        return likely(x)

    with pytest.raises(TypingError):
        bad(3)
    with pytest.raises(TypingError):
        bad(np.zeros(2, np.bool_))


def test_serve_expects_a_first_level_hit():
    src = K.generate_source(K.geometry_of(load_machine("opteron-8380-4x4")))
    # The first level's hit is expected; the deeper levels' outcomes are not.
    assert src.count("if likely(p >= 0):") == 1
    assert "if p >= 0:" in src
    for rare in ("(trig)", "(others != 0)", "(lat > pthresh)", "(lat > H0)"):
        assert f"if unlikely{rare}:" in src
