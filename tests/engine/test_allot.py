"""EQUI and DEQ ([SAWS12] §4.3, Algorithm 1) in whole cores: hand-worked cases, invariants."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.engine.allot import deq_allot, equi_allot
from simsched.errors import ConfigError


@pytest.mark.parametrize(
    ("n", "P", "expected"),
    [(3, 8, [3, 3, 2]), (4, 16, [4, 4, 4, 4]), (5, 3, [1, 1, 1, 0, 0]), (0, 8, []), (2, 0, [0, 0])],
)
def test_equi_hand_worked(n, P, expected):
    assert equi_allot(n, P).tolist() == expected


@pytest.mark.parametrize(
    ("desires", "P", "expected"),
    [
        # all above the equal share 8/3: equal split, the remainder to the first job(s)
        ([10, 10, 10], 8, [3, 3, 2]),
        ([40, 9], 11, [6, 5]),
        # all below the equal share: everyone gets its desire, cores stay free
        ([1, 2, 3], 16, [1, 2, 3]),
        # below and above: 2, 3 <= 16/4 get theirs, 40 and 9 split the 11 left
        ([2, 40, 3, 9], 16, [2, 6, 3, 5]),
        # three levels: share 4 serves 1; share 15/3 = 5 serves 5; 7 and 20 split 10
        ([1, 5, 7, 20], 16, [1, 5, 5, 5]),
        # a job above the first share (5 > 4) is served at the second level (5 <= 15/3)
        ([1, 5, 5, 20], 16, [1, 5, 5, 5]),
        # desire exactly the share is in S (line 3 is d <= P/|J|)
        ([4, 4, 4, 4], 16, [4, 4, 4, 4]),
        # jobs without desire get nothing and leave their share to the others
        ([0, 0, 7], 4, [0, 0, 4]),
        ([0, 0, 0, 0, 2, 2], 3, [0, 0, 0, 0, 2, 1]),
        # more jobs than cores: the first jobs in job order get one core each
        ([3, 3, 3, 3, 3], 3, [1, 1, 1, 0, 0]),
        ([], 8, []),
        ([5, 1], 0, [0, 0]),
    ],
)
def test_deq_hand_worked(desires, P, expected):
    assert deq_allot(desires, P).tolist() == expected


def test_deq_accepts_whole_floats_and_numpy():
    assert deq_allot(np.array([2.0, 40.0]), np.int64(8)).tolist() == [2, 6]


@pytest.mark.parametrize(
    ("desires", "P", "expected"),
    [
        ([3 * 10**18] * 3 + [1], 16, [5, 5, 5, 1]),
        ([2**62, 1], 16, [15, 1]),
        ([2**63 - 1] * 2, 16, [8, 8]),
        ([2**63 - 1, 3], 7, [4, 3]),
    ],
)
def test_deq_huge_desires_do_not_overflow(desires, P, expected):
    # d_i * |J| wrapped past 2^63 to a negative number, and DEQ served the job its desire
    # (billions of cores); a desire of more than P cores is a desire of all of them
    a = deq_allot(desires, P)
    assert a.tolist() == expected
    assert a.sum() <= P


@given(st.lists(st.integers(0, 2**63 - 1), max_size=8), st.integers(0, 64))
def test_deq_invariants_any_int64_desire(desires, P):
    a = deq_allot(desires, P)
    assert np.all(a >= 0) and a.sum() <= P
    assert all(int(x) <= d for x, d in zip(a, desires, strict=True))
    # capping every desire at P changes nothing: no desire past the machine matters
    assert deq_allot([min(d, P) for d in desires], P).tolist() == a.tolist()


@pytest.mark.parametrize(
    ("desires", "P"),
    [
        ([1.5, 2], 4),
        ([-1, 2], 4),
        ([[1, 2]], 4),
        ([1, 2], -1),
        ([1, 2], 2.0),
        ([1], True),
        ([float("nan")], 4),
        (["a"], 4),
    ],
)
def test_deq_rejects_bad_input(desires, P):
    with pytest.raises(ConfigError):
        deq_allot(desires, P)


@pytest.mark.parametrize(("n", "P"), [(-1, 4), (2, -1), (1.0, 4), (True, 4)])
def test_equi_rejects_bad_input(n, P):
    with pytest.raises(ConfigError):
        equi_allot(n, P)


def deq_real(desires, P):
    """Algorithm 1 literally, with real (rational) shares."""
    out = [None] * len(desires)

    def deq(jobs, p):
        if not jobs:
            return
        share = Fraction(p, len(jobs))
        s = [j for j in jobs if desires[j] <= share]
        if not s:
            for j in jobs:
                out[j] = share
            return
        for j in s:
            out[j] = Fraction(desires[j])
        deq([j for j in jobs if j not in s], p - sum(desires[j] for j in s))

    deq(list(range(len(desires))), P)
    return out


_DESIRES = st.lists(st.integers(0, 40), max_size=12)
_P = st.integers(0, 64)


@given(_DESIRES, _P)
def test_deq_invariants(desires, P):
    a = deq_allot(desires, P)
    d = np.array(desires, dtype=np.int64)
    assert a.dtype == np.int64 and a.shape == d.shape
    assert np.all(a >= 0) and np.all(a <= d)  # never more than the desire
    assert a.sum() <= P
    if d.sum() >= P:
        assert a.sum() == P  # no core idle while a job wants more
    if np.count_nonzero(d) <= P:
        assert np.all(a[d > 0] >= 1)  # no job with a desire starved
    assert deq_allot(desires, P).tolist() == a.tolist()  # deterministic


@given(_DESIRES, _P)
def test_deq_rounds_the_real_algorithm_by_less_than_one(desires, P):
    # jobs the real Algorithm 1 serves get exactly their desire; the others get their real
    # share rounded down or up
    a = deq_allot(desires, P)
    for j, r in enumerate(deq_real(desires, P)):
        if r == desires[j]:
            assert a[j] == desires[j]
        else:
            assert abs(Fraction(int(a[j])) - r) < 1


@given(st.integers(0, 40), _P)
def test_equi_invariants(n, P):
    a = equi_allot(n, P)
    assert a.shape == (n,) and a.sum() == (P if n else 0)
    if n:
        assert a.max() - a.min() <= 1
        assert np.all(np.diff(a) <= 0)  # the larger shares go to the first jobs
    # EQUI is DEQ when every job wants all the cores
    assert deq_allot([P + 1] * n, P).tolist() == a.tolist()
