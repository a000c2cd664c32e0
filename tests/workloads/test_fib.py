"""fib generator: strand count from its recurrence, work and span, oracle agreement."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.trace import open_trace, span
from simsched.workloads import fib, generate
from tests.oracles import workloads as oracle
from tests.workloads._compare import assert_same_stream, record


def _work_span(n: int, cutoff: int) -> tuple[int, int]:
    """Work and span of fib(n) from the program's strands, by recurrence."""
    entry = len(fib.ENTRY) + sum(g for _, _, g in fib.ENTRY) + fib.AFTER_ENTRY
    store = 1 + fib.STORE_X[2] + fib.AFTER_STORE_X
    exit_ = len(fib.EXIT) + sum(g for _, _, g in fib.EXIT)
    base = len(fib.BASE) + sum(g for _, _, g in fib.BASE)
    serial = {}
    for m in range(max(n, 1) + 1):
        serial[m] = base if m < 2 else entry + serial[m - 1] + store + serial[m - 2] + exit_
    par = {}
    for m in range(max(n, 1) + 1):
        if m < cutoff:
            par[m] = (serial[m], serial[m])
        else:
            (w1, s1), (w2, s2) = par[m - 1], par[m - 2]
            # strands: entry -> child1 -> join; entry -> store -> child2 -> join; exit
            par[m] = (entry + w1 + store + w2 + exit_, entry + max(s1, store + s2) + exit_)
    return par[n]


@pytest.mark.parametrize("n,cutoff", [(0, 2), (1, 2), (2, 2), (5, 2), (12, 2), (12, 5), (9, 20)])
def test_strands_work_and_span_follow_the_recurrences(tmp_path, n, cutoff):
    path = tmp_path / "fib.sst"
    h = generate("fib", path, n=n, cutoff=cutoff)
    assert h.n_strands == fib.strand_count(n, cutoff)
    # the recurrence written out independently: S(m) = 1 below the cut-off, else 4 + S + S
    S = {}
    for m in range(n + 1):
        S[m] = 1 if m < cutoff else 4 + S[m - 1] + S[m - 2]
    assert h.n_strands == S[n] + 3
    work, sp = _work_span(n, cutoff)
    assert h.n_instructions == work
    with open_trace(path) as t:
        assert span(t) == sp
        stack = h.params["regions"]["stack"]
        for c in t.iter_chunks():
            a = c.addr.astype(np.int64)
            assert np.all((a >= stack["base"]) & (a + 8 <= stack["base"] + stack["bytes"]))
            assert np.all(a % 8 == 0)
    # almost no data: the footprint is a few stack frames
    assert stack["bytes"] <= 64 + 32 * max(n, 1)


@pytest.mark.parametrize("n,cutoff", [(0, 2), (3, 2), (10, 2), (10, 4), (11, 30)])
def test_fast_path_equals_oracle(n, cutoff):
    fast, out, _, _ = record("fib", fib.emit, n=n, cutoff=cutoff)
    slow, ref, _, _ = record("fib", oracle.fib, n=n, cutoff=cutoff)
    assert_same_stream(fast, slow)
    assert fast.stack == slow.stack is not None
    assert out["value"] == ref["value"] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89][n]


def test_parallelism_grows_with_n(tmp_path):
    par = []
    for n in (10, 16):
        h = generate("fib", tmp_path / f"f{n}.sst", n=n)
        with open_trace(tmp_path / f"f{n}.sst") as t:
            par.append(h.n_instructions / span(t))
    assert par[1] > 3 * par[0] > 3


def test_each_core_runs_on_its_own_stack(tmp_path):
    """The trace names the modelled stack region, so a 32-core WS replay gives every core a
    stack of its own: the serial run's stack lines are no longer passed between L1s (about
    two thirds of the references were invalidations when every core shared them)."""
    from simsched.api import run

    path = tmp_path / "fib.sst"
    h = generate("fib", path, n=14, cutoff=2)
    assert h.stack == (fib.STACK_TOP - fib.STACK_SIZE, fib.STACK_TOP)
    res = run(path, "sunfire-x4600-8x4", "ws", speedup=False).record
    assert res["L1_invalidations"] <= 0.02 * res["refs"]
