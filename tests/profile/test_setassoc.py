"""SetAssoc baseline (simsched.profile.setassoc) as LruTree's oracle, and both against the
plain OrderedDict caches of tests/oracles/profile_oracle.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.profile import profile_trace, replay_groups, setassoc_misses
from simsched.trace import open_trace
from tests.oracles.profile_oracle import lru_misses, trace_line_accesses
from tests.oracles.profile_oracle import setassoc_misses as sa_oracle
from tests.profile._traces import build_random

SIZES = [128, 256, 512, 1024, 4096]


@given(seed=st.integers(0, 2**32 - 1))
def test_lrutree_equals_setassoc_fully_associative_for_every_group(tmp_path_factory, seed):
    path = build_random(tmp_path_factory.mktemp("sa") / "r.sst", seed, depth=3, lines=48)
    with open_trace(path) as t:
        p = profile_trace(t, sizes=SIZES, line=64)
        fa = setassoc_misses(t, sizes=SIZES, line=64, groups=p.groups)
        lines, strands = trace_line_accesses(t, 64)
    assert (fa == p.misses).all()
    strands = np.asarray(strands)
    lines = np.asarray(lines)
    g = p.groups
    for x in range(len(g)):
        sel = lines[(strands >= g.start[x]) & (strands <= g.stop[x])].tolist()
        exp = [lru_misses(sel, s // 64) for s in SIZES]
        assert p.misses[x].tolist() == exp
        assert p.footprint_lines[x] == len(set(sel))


@given(
    lines=st.lists(st.integers(0, 40), min_size=0, max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=4),
    assoc=st.sampled_from([1, 2, 4]),
)
def test_set_associative_replay_matches_ordereddict(lines, cuts, assoc):
    n = len(lines)
    bounds = sorted({0, n, *[min(c, n) for c in cuts]})
    lo, hi = np.array(bounds[:-1], np.int64), np.array(bounds[1:], np.int64)
    caps = [4, 8, 16]
    arr = np.asarray(lines, np.uint64)
    sa = replay_groups(arr, lo, hi, caps, assoc)
    fa = replay_groups(arr, lo, hi, caps, None)
    for k in range(len(lo)):
        seg = lines[lo[k] : hi[k]]
        assert sa[k].tolist() == [sa_oracle(seg, c, assoc) for c in caps]
        assert fa[k].tolist() == [lru_misses(seg, c) for c in caps]


def test_replay_validates_its_input():
    """A wrong argument is a ConfigError naming it; it was a bare SimschedError, and
    "group access ranges are invalid" named neither lo nor hi nor the group."""
    with pytest.raises(ConfigError, match="^capacities: .* not a multiple of assoc=3 ways"):
        replay_groups(np.zeros(4, np.uint64), np.array([0]), np.array([4]), [4, 8], 3)
    with pytest.raises(ConfigError, match=r"^lo\[0\]=3, hi\[0\]=2: expected 0 <= lo <= hi"):
        replay_groups(np.zeros(4, np.uint64), np.array([3]), np.array([2]), [4], None)
    with pytest.raises(ConfigError, match="^lo, hi: "):
        replay_groups(np.zeros(4, np.uint64), np.array([0, 1]), np.array([2]), [4], None)
    with pytest.raises(ConfigError, match="^capacities: 65 cache sizes; at most 64"):
        replay_groups(np.zeros(4, np.uint64), np.array([0]), np.array([4]), range(1, 66))


WORKLOADS = [
    ("mergesort", {"n": 2048, "grain": 64}),
    ("mergesort", {"n": 3000, "grain": 100, "merge_grain": 300, "elem_size": 8}),
    ("heat", {"nx": 64, "ny": 64, "iters": 2, "cutoff": 8}),
    ("fib", {"n": 12}),
    ("hashjoin", {"n_build": 2048, "grain": 64, "subpart_kb": 16}),
]


@pytest.mark.parametrize(("name", "params"), WORKLOADS)
def test_generated_workloads_lrutree_equals_setassoc(tmp_path, name, params):
    workloads = pytest.importorskip("simsched.workloads")
    if name not in workloads.WORKLOADS:
        pytest.skip(f"workload {name} not available")
    path = tmp_path / f"{name}.sst"
    workloads.generate(name, path, **params)
    sizes = [16384, 32768, 65536, 262144, 1 << 20]
    with open_trace(path) as t:
        p = profile_trace(t, sizes=sizes)
        fa = setassoc_misses(t, sizes=sizes, line=p.line, groups=p.groups)
    assert len(p.groups) > 10
    assert (fa == p.misses).all()


def test_mergesort_working_set_is_twice_the_subarray(tmp_path):
    """PDF paper §5.4 footnote 5: "the working set size for mergesorting a sub-array of size n
    is 2n" — the sub-array and its ping-pong buffer."""
    workloads = pytest.importorskip("simsched.workloads")
    path = tmp_path / "ms.sst"
    n, es = 4096, 4
    workloads.generate("mergesort", path, n=n, grain=256, elem_size=es, init=False)
    p = profile_trace(path, sizes=[1 << 16], line=64)
    g = p.groups
    with open_trace(path) as t:
        sort_frame = int(t.frames.parent[1] == 0 and 1)  # main spawns psort(0, n) first
        assert t.strands.frame[t.frames.first_strand[sort_frame]] == sort_frame
    x = int(np.flatnonzero((g.kind == 0) & (g.frame == sort_frame))[0])
    assert abs(int(p.working_set_bytes[x]) - 2 * n * es) <= 2 * 64


def test_setassoc_refuses_bad_sizes_and_lines(tmp_path):
    with open_trace(build_random(tmp_path / "r.sst", 0)) as t:
        with pytest.raises(
            ConfigError, match=r"sizes\[0\]=1180591620717411303424: must be between 1 and"
        ):
            setassoc_misses(t, sizes=[2**70], line=64)
        with pytest.raises(ConfigError, match=r"line=None: expected an integer"):
            setassoc_misses(t, sizes=[4096], line=None)


def test_setassoc_refuses_a_mask_that_is_not_one_bool_per_group(tmp_path):
    with open_trace(build_random(tmp_path / "r.sst", 2)) as t:
        ng = len(profile_trace(t, sizes=[4096], line=64).groups)
        with pytest.raises(ConfigError, match=r"which=.*expected a boolean mask .*not group"):
            setassoc_misses(t, sizes=[4096], line=64, which=np.array([3]))
        with pytest.raises(ConfigError, match=rf"which: the mask has shape \(1,\).*\({ng},\)"):
            setassoc_misses(t, sizes=[4096], line=64, which=np.array([True]))
        one = np.zeros(ng, bool)
        one[0] = True
        out = setassoc_misses(t, sizes=[4096], line=64, which=one)
        assert (out[1:] == -1).all() and (out[0] >= 0).all()


def test_setassoc_refuses_bad_assoc_capacities_and_another_traces_tree(tmp_path):
    small = build_random(tmp_path / "a.sst", 2)
    big = build_random(tmp_path / "b.sst", 1, depth=4)
    with open_trace(small) as a, open_trace(big) as b:
        other = profile_trace(b, sizes=[4096], line=64).groups
        assert other.n_strands != a.strands.ref_start.shape[0] - 1
        with pytest.raises(ConfigError, match=r"assoc=0: must be at least 1"):
            setassoc_misses(a, sizes=[4096], line=64, assoc=0)
        with pytest.raises(ConfigError, match=r"groups: the group tree is of another trace"):
            setassoc_misses(a, sizes=[4096], line=64, groups=other)
        with pytest.raises(ConfigError, match=r"groups='x': expected a GroupTree"):
            setassoc_misses(a, sizes=[4096], line=64, groups="x")
    with pytest.raises(ConfigError, match=r"capacities=None: expected a list"):
        replay_groups(np.zeros(4, np.uint64), np.array([0]), np.array([4]), None)
    with pytest.raises(ConfigError, match=r"capacities\[1\]=0: must be at least 1"):
        replay_groups(np.zeros(4, np.uint64), np.array([0]), np.array([4]), [4, 0])


def test_setassoc_accepts_a_path(tmp_path):
    path = build_random(tmp_path / "r.sst", 2)
    with open_trace(path) as t:
        want = setassoc_misses(t, sizes=[4096], line=64)
    assert (setassoc_misses(path, sizes=[4096], line=64) == want).all()
