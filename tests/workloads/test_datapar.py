"""datapar generator ([SAWS12] Fig. 3): one parent, N equal children, oracle agreement."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.trace import open_trace, span
from simsched.workloads import datapar, generate
from tests.oracles import workloads as oracle
from tests.workloads._compare import assert_same_stream, assert_shape_of_capture, record


def test_shape_equals_the_captured_program(tmp_path):
    _, sg = assert_shape_of_capture(
        tmp_path,
        "datapar-10-4096-8.valgrind.sst",
        "datapar",
        0.02,
        n=10,
        elems=4096,
        reps=8,
        init=False,
    )
    assert sg["branching"]["histogram"] == [[10, 1]]
    assert sg["levels"] == 2


def test_children_are_equal_and_parallelism_is_n(tmp_path):
    path = tmp_path / "dp.sst"
    h = generate("datapar", path, n=7, elems=300, reps=3, init=False)
    with open_trace(path) as t:
        child_strands = np.flatnonzero(t.strands.frame > 0)
        work = t.strands.instr[child_strands]
        assert len(work) == 7 and np.all(work == work[0])
        assert np.all(t.strands.n_refs[child_strands] == 2 * 300 * 3)
        # the span is one child plus main's few instructions: parallelism close to n
        assert 6.5 < h.n_instructions / span(t) <= 7
        # each child touches only its own slice
        A = h.params["regions"]["A"]["base"]
        for f, s in enumerate(child_strands):
            c = t.strand_refs(int(s))
            x = (c.addr.astype(np.int64) - A) // 8
            assert x.min() == f * 300 and x.max() == f * 300 + 299


@pytest.mark.parametrize(
    "params", [dict(n=3, elems=5, reps=2), dict(n=1, elems=1, reps=1, init=False)]
)
def test_fast_path_equals_oracle(params):
    fast, _, _, _ = record("datapar", datapar.emit, **params)
    slow, _, _, _ = record("datapar", oracle.datapar, **params)
    assert_same_stream(fast, slow)
