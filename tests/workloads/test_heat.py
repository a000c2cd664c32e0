"""heat generator: CAB §II Fig. 1's DAG, iterations and position keys, oracle agreement."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.trace import open_trace
from simsched.workloads import generate, heat
from tests.oracles import workloads as oracle
from tests.workloads._compare import assert_same_stream, record


def test_cab_fig1_example(tmp_path):
    # CAB §II: a 10 x 10 grid of doubles (8 x 8 interior), leaves of two rows: main (level 0)
    # spawns T1 (level 1), which spawns T2, T3 (level 2), which spawn T4..T7 (level 3)
    path = tmp_path / "heat.sst"
    h = generate("heat", path, nx=10, ny=10, iters=3, cutoff=2, init=False)
    assert h.n_frames == 1 + 3 * 7
    with open_trace(path) as t:
        fr = t.frames
        for it in range(3):
            f = np.flatnonzero(fr.iteration == it)
            assert len(f) == 7
            assert sorted(fr.level[f].tolist()) == [1, 2, 2, 3, 3, 3, 3]
            # the same task has the same position key in every iteration
            assert sorted(fr.key(int(x)) for x in f) == [
                (0,),
                (0, 0),
                (0, 0, 0),
                (0, 0, 1),
                (0, 1),
                (0, 1, 0),
                (0, 1, 1),
            ]
        # only the leaves touch data: 2 rows x 8 columns x 6 references each
        nrefs = t.strands.n_refs
        for s in range(len(nrefs)):
            lvl = int(fr.level[t.strands.frame[s]])
            assert nrefs[s] == (2 * 8 * 6 if lvl == 3 else 0)
        A, B = h.params["regions"]["A"], h.params["regions"]["B"]
        for c in t.iter_chunks():
            a = c.addr.astype(np.int64)
            inA = (a >= A["base"]) & (a < A["base"] + A["bytes"])
            inB = (a >= B["base"]) & (a < B["base"] + B["bytes"])
            assert np.all(inA | inB)
            assert np.all(c.size == 8)
    assert h.n_refs == 3 * 8 * 8 * 6


def test_leaves_split_rows_like_cab(tmp_path):
    # CAB §V-C: 3072 rows halved down to 128 give 7 levels (0-6)
    h = generate("heat", tmp_path / "h.sst", nx=3074, ny=3, iters=1, cutoff=128, init=False)
    with open_trace(tmp_path / "h.sst") as t:
        assert sorted(set(t.frames.level.tolist())) == list(range(7))
    assert h.n_refs == 3072 * 6
    r = record("heat", heat.emit, nx=3074, ny=3, iters=1, cutoff=128, init=False)
    leaves = r[1]["leaves"]
    assert leaves[0][0] == 1 and leaves[-1][1] == 3073
    assert all(b - a <= 128 for a, b in leaves) and len(leaves) == 32
    assert all(a2 == b1 for (_, b1), (a2, _) in zip(leaves, leaves[1:], strict=False))


@pytest.mark.parametrize(
    "params",
    [
        dict(nx=10, ny=10, iters=2, cutoff=2),
        dict(nx=13, ny=7, iters=3, cutoff=3, init=False),
        dict(nx=3, ny=3, iters=1, cutoff=1),
        dict(nx=20, ny=5, iters=2, cutoff=100),
    ],
)
def test_fast_path_equals_oracle(params):
    fast, _, _, _ = record("heat", heat.emit, **params)
    slow, _, _, _ = record("heat", oracle.heat, **params)
    assert_same_stream(fast, slow)


def test_grids_alternate(tmp_path):
    # iteration i reads one grid and writes the other; writes never touch the boundary
    path = tmp_path / "heat.sst"
    h = generate("heat", path, nx=8, ny=6, iters=2, cutoff=2, init=False)
    A, B = h.params["regions"]["A"]["base"], h.params["regions"]["B"]["base"]
    with open_trace(path) as t:
        for s in range(h.n_strands):
            c = t.strand_refs(s)
            if not len(c):
                continue
            it = int(t.frames.iteration[t.strands.frame[s]])
            old, new = (A, B) if it == 0 else (B, A)
            w = c.addr[c.write].astype(np.int64)
            r = c.addr[~c.write].astype(np.int64)
            assert np.all((w >= new) & (w < new + 8 * 6 * 8))
            assert np.all((r >= old) & (r < old + 8 * 6 * 8))
            rows, cols = np.divmod((w - new) // 8, 6)
            assert np.all((rows >= 1) & (rows <= 6) & (cols >= 1) & (cols <= 4))


@settings(max_examples=15)
@given(
    nx=st.integers(3, 24),
    ny=st.integers(3, 12),
    iters=st.integers(1, 3),
    cutoff=st.integers(1, 30),
)
def test_fast_path_equals_oracle_random(nx, ny, iters, cutoff):
    params = dict(nx=nx, ny=ny, iters=iters, cutoff=cutoff, init=False)
    fast, out, _, _ = record("heat", heat.emit, **params)
    slow, _, _, _ = record("heat", oracle.heat, **params)
    assert_same_stream(fast, slow)
    # the leaves tile the interior rows, none larger than the cut-off
    rows = [r for a, b in out["leaves"] for r in range(a, b)]
    assert rows == list(range(1, nx - 1))
    assert all(b - a <= cutoff for a, b in out["leaves"])
