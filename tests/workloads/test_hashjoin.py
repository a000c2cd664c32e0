"""hashjoin generator: oracle agreement, matches, sub-partition DAG, layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.trace import open_trace
from simsched.workloads import WORKLOADS, generate, hashjoin
from tests.oracles import workloads as oracle
from tests.workloads._compare import assert_same_stream, record


@pytest.mark.parametrize(
    "params",
    [
        dict(n_build=1, grain=1, subpart_kb=1),
        dict(n_build=50, grain=7, subparts=4, seed=5),
        dict(n_build=300, grain=64, subpart_kb=8, record_size=40),
        dict(n_build=200, matches=3, grain=1000, subparts=1, record_size=17),
    ],
)
def test_fast_path_equals_oracle(params):
    fast, out, p, _ = record("hashjoin", hashjoin.emit, **params)
    slow, ref, _, _ = record("hashjoin", oracle.hashjoin, **params)
    assert_same_stream(fast, slow)
    # every build record matched `matches` probe records, every probe record exactly one
    matched = ref["output"]
    n_probe = p["n_build"] * p["matches"]
    assert len(matched) == n_probe
    assert sorted(t for _, _, t in matched) == list(range(n_probe))
    per_build = np.bincount([r for _, r, _ in matched], minlength=p["n_build"])
    assert np.all(per_build == p["matches"])


def test_dag_structure_and_layout(tmp_path):
    path = tmp_path / "hj.sst"
    h = generate("hashjoin", path, n_build=2000, grain=100, subparts=4)
    p = WORKLOADS["hashjoin"].resolve(dict(n_build=2000, grain=100, subparts=4))
    data = hashjoin._Data(p)
    tasks = [-(-int(data.probe_start[s + 1] - data.probe_start[s]) // 100) for s in range(4)]
    assert h.n_frames == 1 + 4 + sum(tasks)
    regions = h.params["regions"]
    assert regions["build"]["bytes"] == 2000 * 100
    assert regions["probe"]["bytes"] == 4000 * 100
    assert regions["out"]["bytes"] == 4000 * 200
    spans = sorted((r["base"], r["base"] + r["bytes"]) for r in regions.values())
    assert all(e1 <= b2 for (_, e1), (b2, _) in zip(spans, spans[1:], strict=False))
    with open_trace(path) as t:
        fr = t.frames
        subs = np.flatnonzero(fr.level == 1)
        assert len(subs) == 4 and np.all(fr.branching[subs] == 4)
        for s, f in enumerate(subs):
            kids = np.flatnonzero(fr.parent == f)
            assert len(kids) == tasks[s] and np.all(fr.level[kids] == 2)
        for c in t.iter_chunks():
            a = c.addr.astype(np.int64)
            ok = np.zeros(len(a), bool)
            for r in regions.values():
                ok |= (a >= r["base"]) & (a + c.size <= r["base"] + r["bytes"])
            assert ok.all()
            # writes go to the output, the cells and the buckets only
            w = a[c.write]
            ok = np.zeros(len(w), bool)
            for name, r in regions.items():
                if name == "out" or name.startswith(("cells.", "buckets.")):
                    ok |= (w >= r["base"]) & (w < r["base"] + r["bytes"])
            assert ok.all()


def test_subparts_default_fits_the_target():
    p = WORKLOADS["hashjoin"].resolve(dict(n_build=100_000, subpart_kb=1024))
    per = 100 + hashjoin.CELL + hashjoin.BUCKET
    assert p["subparts"] * 1024 * 1024 >= 100_000 * per
    assert (p["subparts"] // 2) * 1024 * 1024 < 100_000 * per
    with pytest.raises(ConfigError, match="subparts"):
        WORKLOADS["hashjoin"].resolve(dict(subparts=3))


@settings(max_examples=15)
@given(
    n_build=st.integers(1, 120),
    matches=st.integers(1, 3),
    grain=st.integers(1, 40),
    subparts=st.sampled_from([1, 2, 4, 8]),
    record_size=st.integers(8, 70),
    seed=st.integers(0, 2**20),
)
def test_fast_path_equals_oracle_random(n_build, matches, grain, subparts, record_size, seed):
    params = dict(
        n_build=n_build,
        matches=matches,
        grain=grain,
        subparts=subparts,
        record_size=record_size,
        seed=seed,
    )
    fast, _, _, _ = record("hashjoin", hashjoin.emit, **params)
    slow, ref, _, _ = record("hashjoin", oracle.hashjoin, **params)
    assert_same_stream(fast, slow)
    assert len(ref["output"]) == n_build * matches
