"""Coarsening (simsched.profile.coarsen): Eq. 3 of the PDF paper §6.2 and the table."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError, SimschedError, command_line
from simsched.machine import load_machine
from simsched.profile import cache_share, coarsen, profile_trace, read_table, write_table
from simsched.profile.coarsen import TABLE_COLUMNS
from simsched.profile.groups import ROLE_PAR, ROLE_SEQ
from tests.oracles.profile_oracle import coarsen_oracle
from tests.profile._traces import build_fanout, build_random


def _machine(cache_bytes: int, cores: int) -> SimpleNamespace:
    """A stand-in machine with one shared cache of any size (Eq. 3 reads only these)."""
    cache = SimpleNamespace(name="L2", scope="socket", size=cache_bytes, line=64)
    return SimpleNamespace(name=f"test-{cores}c", cores_per_socket=cores, caches=(cache,))


def test_eq3_on_eight_siblings(tmp_path):
    """main spawns 8 children of 32 words (4 lines each at 64 B): W(phase) = 33 lines.

    Eq. 3 at the phase (K = 2 halves): stop iff 33 × 64 <= 2 × C/(2P).
    """
    p = profile_trace(build_fanout(tmp_path / "f.sst", 8, words=32), sizes=[4096], line=64)
    g = p.groups
    phase = int(g.children_of(0)[0])
    ws = int(p.working_set_bytes[phase])
    assert ws == 33 * 64
    # C/(2P) * 2 = C/P >= ws  ->  the two halves of four siblings each become tasks
    big = _machine(ws * 4, 4)
    r = coarsen(p, big)
    halves = [c for c in g.children_of(phase) if g.role[c] == ROLE_PAR]
    assert sorted(r.chosen.tolist()) == sorted(halves)
    assert [row["kind"] for row in r.rows] == ["split", "split"]
    assert all(row["siblings"] == 2 for row in r.rows)
    # 17 strands: main's 9 + 8 children; merged into 2 tasks + main's strands between
    assert r.tasks == g.n_strands - sum(int(g.stop[c] - g.start[c]) for c in halves)
    # just below the threshold: descend one level (quarters, W(half) = 16 lines + glue)
    small = _machine(ws * 4 - 64 * 4, 4)
    r2 = coarsen(p, small)
    assert len(r2.chosen) > 2
    assert all(g.depth[c] > g.depth[halves[0]] for c in r2.chosen)


def test_phases_are_independent_sets(tmp_path):
    p = profile_trace(build_random(tmp_path / "r.sst", 5, depth=3), sizes=[4096], line=64)
    g = p.groups
    seq = np.flatnonzero((g.role == ROLE_SEQ) & (g.child_offsets[1:] > g.child_offsets[:-1]))
    assert len(seq), "the random program has frames with several phases"
    # a huge cache: each top-level independent set stops right away
    m = _machine(1 << 40, 1)
    r = coarsen(p, m)
    top = {
        int(c)
        for c in g.children_of(0)
        if g.role[c] in (ROLE_PAR, ROLE_SEQ) and not g.is_leaf(int(c))
    }
    assert {int(c) for c in r.chosen if not g.is_leaf(int(c))} == top
    assert {row["group"] for row in r.rows} == top


@given(seed=st.integers(0, 2**16), f1=st.floats(0.01, 100), f2=st.floats(0.01, 100))
def test_chosen_groups_are_disjoint_and_coarser_with_a_larger_factor(
    tmp_path_factory, seed, f1, f2
):
    path = build_random(tmp_path_factory.mktemp("c") / "r.sst", seed, depth=3)
    p = profile_trace(path, sizes=[4096], line=64)
    m = _machine(1 << 14, 4)
    lo, hi = sorted((f1, f2))
    a, b = coarsen(p, m, factor=lo), coarsen(p, m, factor=hi)
    g = p.groups
    for r in (a, b):
        starts, stops = g.start[r.chosen], g.stop[r.chosen]
        assert (starts[1:] > stops[:-1]).all()  # disjoint, in serial order
    assert b.tasks <= a.tasks
    # the larger factor stops at the same set or above: each group chosen with the smaller
    # factor lies inside one chosen with the larger
    for c in a.chosen:
        inside = (g.start[b.chosen] <= g.start[c]) & (g.stop[b.chosen] >= g.stop[c])
        assert inside.sum() == 1


@given(seed=st.integers(0, 2**16), cache=st.integers(1 << 8, 1 << 16), cores=st.integers(1, 8))
def test_coarsen_matches_the_recursive_oracle(tmp_path_factory, seed, cache, cores):
    path = build_random(tmp_path_factory.mktemp("co") / "r.sst", seed, depth=3)
    p = profile_trace(path, sizes=[4096], line=64)
    r = coarsen(p, _machine(cache, cores))
    expected = coarsen_oracle(p.groups, p.working_set_bytes, cache / (2.0 * cores))
    assert set(r.chosen.tolist()) == expected
    assert {row["group"] for row in r.rows} == {c for c in expected if not p.groups.is_leaf(c)}


def test_table_round_trip_and_errors(tmp_path):
    p = profile_trace(build_fanout(tmp_path / "f.sst", 8), sizes=[4096], line=128)
    r = coarsen(p, load_machine("itrs-scaling-16"))
    write_table(r.rows, tmp_path / "t.csv")
    rows = read_table(tmp_path / "t.csv")
    assert rows == r.rows
    assert rows and list(rows[0]) == list(TABLE_COLUMNS)
    # concatenated with cat: the second table's header is not a row
    both = (tmp_path / "t.csv").read_text() * 2
    (tmp_path / "both.csv").write_text(both)
    assert read_table(tmp_path / "both.csv") == rows + rows
    (tmp_path / "bad.csv").write_text("machine,group\nx,1\n")
    with pytest.raises(SimschedError, match="bad.csv.*missing"):
        read_table(tmp_path / "bad.csv")
    text = (tmp_path / "t.csv").read_text().splitlines()
    text[1] = text[1].replace(",split,", ",split,").replace(",0.5,", ",x,", 1)
    cols = text[1].split(",")
    cols[TABLE_COLUMNS.index("first_strand")] = "one"
    (tmp_path / "bad2.csv").write_text("\n".join([text[0], ",".join(cols)]) + "\n")
    with pytest.raises(SimschedError, match="line 2: column first_strand is not a number .'one'"):
        read_table(tmp_path / "bad2.csv")
    (tmp_path / "short.csv").write_text(text[0] + "\n" + ",".join(cols[:5]) + "\n")
    with pytest.raises(SimschedError, match="line 2: column group is not a number .missing"):
        read_table(tmp_path / "short.csv")
    with pytest.raises(ConfigError, match="factor"):
        coarsen(p, load_machine("itrs-scaling-16"), factor=0)
    with pytest.raises(ConfigError, match="no cache level 'L3'"):
        cache_share(load_machine("itrs-scaling-16"), "L3")


def test_cache_share_of_presets():
    s = cache_share(load_machine("itrs-scaling-16"))
    assert (s.name, s.size, s.cores) == ("L2", 20 << 20, 16)
    o = cache_share(load_machine("opteron-8380-4x4"))
    assert o.cores == 4  # one L3 per socket of four cores
    assert cache_share(load_machine("itrs-scaling-16"), "L1").cores == 1


@pytest.mark.parametrize(
    "factor, message",
    [
        (float("inf"), r"factor=inf: must be a positive number up to 1e\+06"),
        (float("nan"), r"factor=nan: must be a positive number up to 1e\+06"),
        # 1e308 overflowed making the threshold an integer; 1e19 wrote it past int64
        (1e308, r"factor=1e\+308: must be a positive number up to 1e\+06"),
        (None, r"factor=None: expected a positive number"),
        ("2", r"factor='2': expected a positive number"),
    ],
)
def test_coarsen_refuses_bad_factors(tmp_path, factor, message):
    p = profile_trace(build_fanout(tmp_path / "f.sst", 8), sizes=[4096], line=64)
    with pytest.raises(ConfigError, match=message):
        coarsen(p, load_machine("itrs-scaling-4"), factor=factor)


def test_coarsen_wants_a_profile_and_a_machine(tmp_path):
    path = build_fanout(tmp_path / "f.sst", 8)
    p = profile_trace(path, sizes=[4096], line=64)
    with pytest.raises(ConfigError, match=r"machine='itrs-scaling-4': expected a Machine"):
        coarsen(p, "itrs-scaling-4")
    with pytest.raises(ConfigError, match=r"machine='itrs-scaling-4': expected a Machine"):
        cache_share("itrs-scaling-4")
    with pytest.raises(ConfigError, match=r"profile: expected a Profile .* got PosixPath"):
        coarsen(path, load_machine("itrs-scaling-4"))


def test_coarsen_refuses_a_profile_of_another_line_size(tmp_path):
    """W is counted in the profile's lines: a 64-byte profile was coarsened for a machine of
    128-byte lines without a word, comparing another footprint with the cache."""
    path = build_fanout(tmp_path / "f.sst", 8)
    m = load_machine("itrs-scaling-16")  # 128-byte lines at both levels
    p = profile_trace(path, sizes=[4096], line=64)
    with pytest.raises(
        ConfigError,
        match=r"profile of f\.sst counts 64-byte lines but itrs-scaling-16's L2 has "
        r"128-byte lines: profile the trace again with line 128",
    ):
        coarsen(p, m)
    with pytest.raises(ConfigError, match="itrs-scaling-16's L1 has 128-byte lines"):
        coarsen(p, m, level="L1")
    assert cache_share(m).line == 128
    assert coarsen(profile_trace(path, sizes=[4096], line=128), m).tasks >= 1
    # profile --machine gives the outermost level's lines: it was the advice for L1 too
    mixed = load_machine("itrs-scaling-16", {"caches.L1.line": 64})
    with pytest.raises(ConfigError, match=r"with line 128 \(profile_trace\(trace, line=128\)\)$"):
        coarsen(p, mixed)
    with pytest.raises(
        ConfigError, match=r"L1 has 64-byte lines: .* \(profile_trace\(trace, line=64\)\)$"
    ):
        coarsen(profile_trace(path, sizes=[4096], line=128), mixed, level="L1")
    # the command line's advice is its command
    with (
        command_line(),
        pytest.raises(ConfigError, match=r"with line 128 \(simsched profile --line 128\)$"),
    ):
        coarsen(p, mixed)
    assert coarsen(p, mixed, level="L1").tasks >= 1


def test_table_functions_name_a_wrong_argument(tmp_path):
    """Before: TypeError or ValueError from csv or os."""
    with pytest.raises(ConfigError, match=r"rows=None: expected a list of table rows"):
        write_table(None, tmp_path / "t.csv")
    with pytest.raises(ConfigError, match=r"rows\[0\]: unknown column 'bogus'"):
        write_table([{"bogus": 1}], tmp_path / "t.csv")
    with pytest.raises(ConfigError, match=r"rows\[0\]: no column 'machine'"):
        write_table([{}], tmp_path / "t.csv")
    with pytest.raises(ConfigError, match=r"path=None: expected a path"):
        write_table([], None)
    with pytest.raises(ConfigError, match=r"path=None: expected a path"):
        read_table(None)
