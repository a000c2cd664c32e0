"""mergesort generator: reference-by-reference agreement with the oracle, sortedness, DAG."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.trace import EDGE_SPAWN, open_trace
from simsched.workloads import generate
from simsched.workloads import mergesort as ms
from tests.oracles import workloads as oracle
from tests.workloads._compare import assert_same_stream, record

CASES = [
    dict(n=1, grain=1),
    dict(n=2, grain=1),
    dict(n=7, grain=1),
    dict(n=10, grain=3),
    dict(n=37, grain=4, merge_grain=5),
    dict(n=100, grain=8, merge_grain=10),
    dict(n=257, grain=16, merge_grain=24, elem_size=8, seed=3),
    dict(n=300, grain=300),
    dict(n=1000, grain=50, merge_grain=1, init=False),
    dict(n=64, grain=1, merge_grain=2),
    dict(n=37, grain=4, merge_grain=5, recursive_merge=True),
    dict(n=257, grain=16, merge_grain=24, elem_size=8, seed=3, recursive_merge=True),
    dict(n=1000, grain=50, merge_grain=1, init=False, recursive_merge=True),
    dict(n=2, grain=1, recursive_merge=True),
]


@pytest.mark.parametrize("params", CASES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_fast_path_equals_oracle(params):
    fast, out, _, _ = record("mergesort", ms.emit, **params)
    slow, ref, _, _ = record("mergesort", oracle.mergesort, **params)
    assert_same_stream(fast, slow)
    assert np.array_equal(out["output"], ref["output"])
    assert np.array_equal(out["output"], np.sort(out["input"]))


@settings(max_examples=25)
@given(
    n=st.integers(1, 300),
    grain=st.integers(1, 64),
    merge_grain=st.integers(1, 80),
    seed=st.integers(0, 2**32),
)
def test_fast_path_equals_oracle_random(n, grain, merge_grain, seed):
    params = dict(n=n, grain=grain, merge_grain=merge_grain, seed=seed, init=False)
    if seed % 2:
        params["recursive_merge"] = True
    fast, out, _, _ = record("mergesort", ms.emit, **params)
    slow, _, _, _ = record("mergesort", oracle.mergesort, **params)
    assert_same_stream(fast, slow)
    assert np.all(np.diff(out["output"].astype(np.int64)) >= 0)


def test_equal_keys_follow_the_program(monkeypatch):
    # many ties: the ranks must order them as `X[i] <= Y[j]` and `Y[mid] < x` do
    real = ms.input_keys
    monkeypatch.setattr(ms, "input_keys", lambda n, es, seed: real(n, es, seed) % 3)
    params = dict(n=200, grain=6, merge_grain=7)
    fast, out, _, _ = record("mergesort", ms.emit, **params)
    slow, ref, _, _ = record("mergesort", oracle.mergesort, **params)
    assert_same_stream(fast, slow)
    assert np.array_equal(out["output"], np.sort(out["input"]))


def _strands_frames(n, grain, merge_grain):
    """Strands and frames of psort(n) by the program's structure (independent count)."""
    if n <= grain:
        return 1, 1
    h = n // 2
    s1, f1 = _strands_frames(h, grain, merge_grain)
    s2, f2 = _strands_frames(n - h, grain, merge_grain)
    k = min(-(-n // merge_grain), h)
    strands = 4 + s1 + s2  # before/between/after the spawns, after the sync
    frames = 1 + f1 + f2
    if k > 1:
        strands += 2 * k + 1  # k chunk tasks: their strand and a continuation each; a sync
        frames += k
    return strands, frames


@pytest.mark.parametrize(
    "n,grain,merge_grain", [(1, 4, 4), (100, 8, 10), (1000, 64, 64), (4096, 256, 100)]
)
def test_dag_counts_and_invariants(tmp_path, n, grain, merge_grain):
    path = tmp_path / "ms.sst"
    h = generate("mergesort", path, n=n, grain=grain, merge_grain=merge_grain)
    s, f = _strands_frames(n, grain, merge_grain)
    assert h.n_strands == s + 3  # main: before its spawn, after it, after the final sync
    assert h.n_frames == f + 1
    with open_trace(path) as t:
        spawns = int(np.count_nonzero(t.edges.kind == EDGE_SPAWN))
        assert spawns == h.n_frames - 1
        # references: every key read/written inside A or tmp, at key alignment
        regions = h.params["regions"]
        lo = min(r["base"] for r in regions.values())
        for c in t.iter_chunks():
            a = c.addr.astype(np.int64)
            inside = np.zeros(len(a), bool)
            for r in regions.values():
                inside |= (a >= r["base"]) & (a + c.size <= r["base"] + r["bytes"])
            assert inside.all()
            assert np.all((a - lo) % 4 == 0)
            assert np.all(c.size == 4)
        # work and span: every level's merge is parallel, so the span is far below the work
        from simsched.trace import span

        sp = span(t)
        assert 0 < sp <= h.n_instructions
        if n >= 16 * grain:
            assert h.n_instructions / sp > 2.0


def test_reference_counts_follow_the_model():
    # with grain >= n the whole sort is one serial msort: count its refs independently
    n = 256
    fast, out, _, _ = record("mergesort", ms.emit, n=n, grain=n, init=False)
    refs = sum(len(s["addr"]) for s in fast.strands)
    # each of log2(n) levels moves every key once (2 refs), plus one extra read per
    # merge step while both runs are live (between n/2 and n-1 steps per merge level),
    # and nothing for the size-1 nodes at the even bottom level (log2(256) = 8)
    levels = 8
    assert 2 * n * levels + levels * n // 2 <= refs <= 3 * n * levels


@pytest.mark.parametrize("leaf_batch,merge_batch", [(1, 1), (16, 8), (50, 33)])
def test_batching_does_not_change_the_stream(monkeypatch, leaf_batch, merge_batch):
    # the kernels process leaves and merge chunks in batches; small batches must give the
    # same stream as the oracle (the default batches exceed these small sorts)
    monkeypatch.setattr(ms, "_LEAF_BATCH", leaf_batch)
    monkeypatch.setattr(ms, "_MERGE_BATCH", merge_batch)
    params = dict(n=500, grain=12, merge_grain=9, seed=11)
    fast, out, _, _ = record("mergesort", ms.emit, **params)
    slow, _, _, _ = record("mergesort", oracle.mergesort, **params)
    assert_same_stream(fast, slow)
    assert np.array_equal(out["output"], np.sort(out["input"]))


def test_default_grain_equals_oracle():
    # the default grain, several levels of parallel merge with binary searches
    params = dict(n=40_000, grain=2048, seed=5)
    fast, _, _, _ = record("mergesort", ms.emit, **params)
    slow, _, _, _ = record("mergesort", oracle.mergesort, **params)
    assert_same_stream(fast, slow)


def test_recursive_merge_has_cilksorts_frame_tree(tmp_path):
    # cilkmerge halves the longer run until merge_grain keys: every merge frame that
    # divides has exactly two children, and the merge recursion goes below psort's leaves
    from simsched.trace import open_trace
    from simsched.workloads import generate

    generate(
        "mergesort", tmp_path / "r.sst", n=4096, grain=256, merge_grain=64, recursive_merge=True
    )
    generate("mergesort", tmp_path / "f.sst", n=4096, grain=256, merge_grain=64)
    with open_trace(tmp_path / "r.sst") as r, open_trace(tmp_path / "f.sst") as f:
        rp, fp = np.asarray(r.frames.parent), np.asarray(f.frames.parent)
        rkids = np.bincount(rp[rp >= 0], minlength=rp.size)
        fkids = np.bincount(fp[fp >= 0], minlength=fp.size)
        # a psort frame: its two halves and the merge it calls; a merge frame: two halves
        assert rkids.max() == 3
        assert fkids.max() == 2 + 64  # the flat merge's 64 chunks join psort's two halves
        assert np.asarray(r.frames.level).max() > np.asarray(f.frames.level).max()


@pytest.mark.parametrize("recursive", [False, True])
def test_merge_grain_beyond_64_bits_counts_as_one_merge(tmp_path, recursive):
    # The reference count's kernels take 64-bit integers: merge_grain=10**30 (valid, a
    # merge never split) was an OverflowError instead of the trace merge_grain=n gives.
    big = generate(
        "mergesort",
        tmp_path / "a.sst",
        n=64,
        grain=8,
        merge_grain=10**30,
        recursive_merge=recursive,
    )
    same = generate(
        "mergesort", tmp_path / "b.sst", n=64, grain=8, merge_grain=64, recursive_merge=recursive
    )
    assert big.n_refs == same.n_refs
