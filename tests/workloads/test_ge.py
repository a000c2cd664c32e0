"""ge generator: the captured program's shape, an iteration per pivot, oracle agreement."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.trace import open_trace
from simsched.workloads import ge, generate
from tests.oracles import workloads as oracle
from tests.workloads._compare import assert_same_stream, assert_shape_of_capture, record


@pytest.mark.parametrize("irregular", [False, True])
def test_shape_equals_the_captured_program(tmp_path, irregular):
    sample = f"ge{'-ir' if irregular else ''}-96-8.valgrind.sst"
    _, sg = assert_shape_of_capture(
        tmp_path, sample, "ge", 0.02, n=96, cutoff=8, irregular=irregular, init=False
    )
    assert sg["iterations"] == 95
    # the DAG shrinks with the pivot: the last step eliminates one row in one leaf
    assert sg["frames_per_iteration"]["min"] == 1


def test_iterations_shrink_and_cover_the_rows(tmp_path):
    r = record("ge", ge.emit, n=20, cutoff=3, init=False)
    leaves = r[1]["leaves"]
    assert len(leaves) == 19
    for k, ls in enumerate(leaves):
        rows = [i for a, b in ls for i in range(a, b)]
        assert rows == list(range(k + 1, 20))
        assert all(b - a <= 3 for a, b in ls)
    path = tmp_path / "ge.sst"
    h = generate("ge", path, n=20, cutoff=3, steps=5, init=False)
    assert h.params["steps"] == 5
    with open_trace(path) as t:
        it = t.frames.iteration[1:]
        assert sorted(set(it.tolist())) == [0, 1, 2, 3, 4]
        counts = np.bincount(it)
        assert np.all(np.diff(counts) <= 0)  # fewer rows, never more tasks
    # at most n - 1 steps (ge.c caps a larger STEPS; the generator refuses it, so that a
    # grid over steps cannot give two labels one trace without a word)
    assert generate("ge", tmp_path / "x.sst", n=5, steps=4).params["steps"] == 4
    assert generate("ge", tmp_path / "x.sst", n=5).params["steps"] == 4
    with pytest.raises(
        ConfigError, match=r"^workload ge: parameter steps: 99 is more than n - 1 = 4, the pivot"
    ):
        generate("ge", tmp_path / "y.sst", n=5, steps=99)
    assert not (tmp_path / "y.sst").exists()


def test_eliminates_for_real():
    # the oracle runs the elimination; the result is upper triangular below the diagonal
    _, out, _, _ = record("ge", oracle.ge, n=7, cutoff=2, init=False)
    a = out["matrix"]
    assert np.allclose(np.tril(a, -1), 0)


@settings(max_examples=15)
@given(
    n=st.integers(2, 14),
    cutoff=st.integers(1, 6),
    irregular=st.booleans(),
    init=st.booleans(),
)
def test_fast_path_equals_oracle(n, cutoff, irregular, init):
    params = dict(n=n, cutoff=cutoff, irregular=irregular, init=init)
    fast, _, _, _ = record("ge", ge.emit, **params)
    slow, _, _, _ = record("ge", oracle.ge, **params)
    assert_same_stream(fast, slow)


def test_uneven_without_irregular_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="workload ge: parameter uneven: applies only"):
        generate("ge", tmp_path / "u.sst", n=8, uneven=True)
    assert generate("ge", tmp_path / "u.sst", n=8, irregular=True, uneven=True).params["uneven"]
