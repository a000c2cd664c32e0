"""Stencil generators: [CAB11] §II Fig. 1's DAG, the captured programs' shapes, oracle agreement."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.trace import open_trace
from simsched.workloads import generate, stencil
from tests.oracles import workloads as oracle
from tests.workloads._compare import assert_same_stream, assert_shape_of_capture, record


def test_cab_fig1_example(tmp_path):
    # [CAB11] §II: a 10 x 10 grid of doubles (8 x 8 interior), leaves of two rows: main (level 0)
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
    # [CAB11] §V-C: 3072 rows halved down to 128 give 7 levels (0-6)
    h = generate("heat", tmp_path / "h.sst", nx=3074, ny=3, iters=1, cutoff=128, init=False)
    with open_trace(tmp_path / "h.sst") as t:
        assert sorted(set(t.frames.level.tolist())) == list(range(7))
    assert h.n_refs == 3072 * 6
    r = record("heat", stencil.emit, nx=3074, ny=3, iters=1, cutoff=128, init=False)
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
    fast, _, _, _ = record("heat", stencil.emit, **params)
    slow, _, _, _ = record("heat", oracle.stencil, **params)
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
    fast, out, _, _ = record("heat", stencil.emit, **params)
    slow, _, _, _ = record("heat", oracle.stencil, **params)
    assert_same_stream(fast, slow)
    # the leaves tile the interior rows, none larger than the cut-off
    rows = [r for a, b in out["leaves"] for r in range(a, b)]
    assert rows == list(range(1, nx - 1))
    assert all(b - a <= cutoff for a, b in out["leaves"])


SAMPLES = [
    # sample, generator, parameters (the C program's N + 2 radius rows, STEPS, GRAIN)
    ("heat-128-4-8", "heat", dict(nx=130, ny=130, iters=4, cutoff=8)),
    ("heat-ir-128-4-8", "heat", dict(nx=130, ny=130, iters=4, cutoff=8, irregular=True)),
    ("sor-128-4-8", "sor", dict(nx=130, ny=130, iters=4, cutoff=8)),
    ("sor-ir-128-4-8", "sor", dict(nx=130, ny=130, iters=4, cutoff=8, irregular=True)),
    ("9p-128-4-8", "9p", dict(nx=130, ny=130, iters=4, cutoff=8)),
    ("9p-ir-128-4-8", "9p", dict(nx=130, ny=130, iters=4, cutoff=8, irregular=True)),
    ("6p-24-2-2", "6p", dict(nx=26, ny=26, nz=26, iters=2, cutoff=2)),
    ("6p-ir-24-2-2", "6p", dict(nx=26, ny=26, nz=26, iters=2, cutoff=2, irregular=True)),
    ("25p-24-2-2", "25p", dict(nx=32, ny=32, nz=32, iters=2, cutoff=2)),
    ("25p-ir-24-2-2", "25p", dict(nx=32, ny=32, nz=32, iters=2, cutoff=2, irregular=True)),
]


@pytest.mark.parametrize(("sample", "name", "params"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_shape_equals_the_captured_program(tmp_path, sample, name, params):
    sc, sg = assert_shape_of_capture(
        tmp_path, f"{sample}.valgrind.sst", name, 0.02, init=False, **params
    )
    # regular programs split in two below the root; -ir ones into 2-4 parts
    if params.get("irregular"):
        assert sg["branching"]["max"] in (3, 4)
    else:
        assert sg["branching"]["max"] == 2
    assert sg["iterations"] == params["iters"]


@pytest.mark.parametrize(
    "params",
    [
        dict(kind="sor", nx=9, ny=6, iters=2, cutoff=2),
        dict(kind="heat", nx=10, ny=6, iters=5, cutoff=2),  # two copies of two steps, one more
        dict(kind="sor", nx=12, ny=7, iters=1, cutoff=3, irregular=True, init=False),
        dict(kind="9p", nx=10, ny=5, iters=2, cutoff=2),
        dict(kind="heat", nx=23, ny=4, iters=2, cutoff=2, irregular=True),
        dict(kind="6p", nx=8, ny=5, nz=4, iters=2, cutoff=2),
        dict(kind="6p", nx=12, ny=3, nz=3, iters=1, cutoff=1, irregular=True, init=False),
        dict(kind="25p", nx=13, ny=10, nz=9, iters=1, cutoff=2, irregular=True),
    ],
)
def test_every_kind_equals_oracle(params):
    name = params.pop("kind")
    fast, _, _, _ = record(name, stencil.emit, **params)
    slow, _, _, _ = record(name, oracle.stencil, **params)
    assert_same_stream(fast, slow)


def test_sor_updates_in_place_red_then_black(tmp_path):
    path = tmp_path / "sor.sst"
    h = generate("sor", path, nx=6, ny=6, iters=1, cutoff=100, init=False)
    assert set(h.params["regions"]) == {"A"}
    A = h.params["regions"]["A"]["base"]
    with open_trace(path) as t:
        sweeps = []
        for s in range(h.n_strands):
            c = t.strand_refs(s)
            if len(c):
                w = (c.addr[c.write].astype(np.int64) - A) // 8
                sweeps.append(np.divmod(w, 6))
    assert len(sweeps) == 2  # the red root, then the black one, each a leaf
    for colour, (r, c) in enumerate(sweeps):
        assert np.all((r + c + colour) % 2 == 1)  # column 1 + ((row + colour) & 1), step 2
        assert len(r) == 8  # half of the 4 x 4 interior


def test_split_ir_matches_ssprog():
    # ss_pfor_ir on [0, 128) with grain 8: k = 2 even children
    assert stencil.split_ir(0, 128, 8) == [(0, 64), (64, 128)]
    # lo / grain = 1: three children of 12 rows, 4 each
    assert stencil.split_ir(8, 20, 8) == [(8, 12), (12, 16), (16, 20)]
    # lo / grain = 2: four children of 10 rows: floor(10 j / 4)
    assert stencil.split_ir(16, 26, 8) == [(16, 18), (18, 21), (21, 23), (23, 26)]
    # never more children than rows
    assert stencil.split_ir(16, 19, 8) == [(16, 17), (17, 18), (18, 19)]


def test_split_ir_uneven_shares():
    # k = 2 children of 128 * 1/3 and the rest
    assert stencil.split_ir(0, 128, 8, uneven=True) == [(0, 42), (42, 128)]
    # three children with shares 1/6, 2/6, 3/6 of 12 rows
    assert stencil.split_ir(8, 20, 8, uneven=True) == [(8, 10), (10, 14), (14, 20)]
    assert stencil.split_ir(16, 19, 8, uneven=True) == [(16, 17), (17, 18), (18, 19)]


@settings(max_examples=40)
@given(
    lo=st.integers(0, 200), n=st.integers(2, 300), grain=st.integers(1, 50), uneven=st.booleans()
)
def test_split_ir_tiles_the_range(lo, n, grain, uneven):
    parts = stencil.split_ir(lo, lo + n, grain, uneven)
    assert 2 <= len(parts) <= 4
    assert parts[0][0] == lo and parts[-1][1] == lo + n
    assert all(a < b for a, b in parts)
    assert all(b == a2 for (_, b), (a2, _) in zip(parts, parts[1:], strict=False))
    if not uneven:  # Eq. 1's assumption: shares differ by at most one row
        sizes = [b - a for a, b in parts]
        assert max(sizes) - min(sizes) <= 1


def test_variant_tables(tmp_path):
    from simsched.errors import ConfigError
    from simsched.workloads import WORKLOADS, params_of

    assert "nz" not in params_of("heat") and "nz" in params_of("25p")
    assert WORKLOADS["25p"].resolve({})["kind"] == "25p"
    h = generate("6p", tmp_path / "a.sst", nx=5, ny=4, nz=3, iters=1, cutoff=1)
    assert h.params["kind"] == "6p" and "kind=6p" in h.args
    # 25P reads 4 cells beyond the interior: the grid needs at least 9 cells per axis
    with pytest.raises(ConfigError, match="workload 25p: parameter nz: must be at least 9"):
        generate("25p", tmp_path / "b.sst", nz=8)
    with pytest.raises(ConfigError, match="workload sor: parameter ny: must be at least 4"):
        generate("sor", tmp_path / "c.sst", ny=3)
    with pytest.raises(ConfigError, match="workload heat: unknown parameter 'nz'"):
        generate("heat", tmp_path / "d.sst", nz=3)


@pytest.mark.parametrize("name", ["heat", "sor", "9p", "6p", "25p"])
def test_uneven_without_irregular_is_refused(tmp_path, name):
    """It was ignored: the even program, under a header saying uneven=True."""
    from simsched.errors import ConfigError

    with pytest.raises(ConfigError, match=f"workload {name}: parameter uneven: applies only"):
        generate(name, tmp_path / "u.sst", uneven=True)
    assert not (tmp_path / "u.sst").exists()
    shape = {"nx": 12, "ny": 12, **({"nz": 12} if name in ("6p", "25p") else {})}
    h = generate(name, tmp_path / "u.sst", **shape, iters=1, irregular=True, uneven=True)
    assert h.params["uneven"] is True
