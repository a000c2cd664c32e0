"""LruTree (simsched.profile.lrutree): histograms cell by cell against a list-based LRU stack."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError, SimschedError
from simsched.profile import (
    LruTree,
    Profile,
    ProfileFormatError,
    bucket_bounds,
    build_groups,
    profile_trace,
)
from simsched.trace import TraceBuilder, open_trace
from tests.blocking import raised_within
from tests.oracles.profile_oracle import (
    line_accesses,
    lru_misses,
    stack_events,
    trace_line_accesses,
)
from tests.profile._traces import build_random, machine_file


def _expected(t, groups, bounds, line):
    """(strand, level, bucket) -> count and cold per strand, from the list-based stack."""
    lines, strands = trace_line_accesses(t, line)
    ev = stack_events(lines, strands)
    cells: Counter = Counter()
    cold = np.zeros(t.header.n_strands, np.int64)
    for (d, j), i in zip(ev, strands, strict=True):
        if j is None:
            cold[i] += 1
            continue
        both = (groups.start <= j) & (groups.stop >= i)  # groups holding j .. i
        level = int(groups.depth[both].max())
        bucket = int(np.searchsorted(bounds, d, side="left"))
        cells[(i, level, bucket)] += 1
    return cells, cold


@given(
    seed=st.integers(0, 2**32 - 1),
    line=st.sampled_from([16, 64]),
    hash_bits=st.integers(4, 6),
    slots=st.integers(64, 200),
)
def test_histograms_match_the_stack_oracle(tmp_path_factory, seed, line, hash_bits, slots):
    # tiny initial state: hash growth and tree compaction happen many times
    path = build_random(tmp_path_factory.mktemp("lt") / "r.sst", seed, depth=3, lines=80)
    with open_trace(path) as t:
        groups = build_groups(t)
        off, _, starts = groups.ancestors()
        bounds = np.array([2, 5, 17, 40])
        lt = LruTree(
            bounds,
            line=line,
            ref_start=t.strands.ref_start,
            anc_offsets=off,
            anc_starts=starts,
            hash_bits=hash_bits,
            time_slots=slots,
        )
        for c in t.iter_chunks():
            lt.feed(c.addr, c.size, c.start)
        h = lt.finish()
        cells, cold = _expected(t, groups, bounds, line)
    got = Counter()
    for s, lv, b, c in zip(h.strand, h.level, h.bucket, h.count, strict=True):
        got[(int(s), int(lv), int(b))] += int(c)
    assert got == cells
    assert (h.cold == cold).all()
    assert (h.count > 0).all()
    assert (np.diff(h.strand) >= 0).all()


def test_chunked_feed_equals_one_feed():
    rng = np.random.default_rng(7)
    addr = (rng.integers(0, 5000, 20000) * 8).astype(np.uint64)
    size = np.full(len(addr), 8, np.uint8)
    bounds = bucket_bounds([1024, 4096, 16384], 64)
    one = LruTree(bounds, line=64)
    one.feed(addr, size, 0)
    a = one.finish()
    many = LruTree(bounds, line=64, hash_bits=4, time_slots=64)
    for lo in range(0, len(addr), 777):
        many.feed(addr[lo : lo + 777], size[lo : lo + 777], lo)
    b = many.finish()
    assert a.distinct_lines == b.distinct_lines == len(np.unique(addr // 64))
    assert (a.bucket == b.bucket).all() and (a.count == b.count).all()


def test_straddling_reference_touches_both_lines():
    lt = LruTree(np.array([1, 4]), line=64)
    # 8 bytes at 60 touch lines 0 and 1; then line 0 again at distance 2
    lt.feed(np.array([60, 0], np.uint64), np.array([8, 4], np.uint8), 0)
    h = lt.finish()
    assert int(h.accesses[0]) == 3 and int(h.cold[0]) == 2
    assert h.bucket.tolist() == [1] and h.count.tolist() == [1]
    lines, _ = line_accesses(np.array([60, 0]), np.array([8, 4]), 64)
    assert lines == [0, 1, 0]


def test_paper_rule_previous_task_before_the_group_is_a_cold_miss(tmp_path):
    """§6.1: for group b..e, a reference of task i whose previous-ID j < b misses at every
    size, while j >= b hits once the cache holds its stack distance."""
    p = tmp_path / "two.sst"
    with TraceBuilder(p, program="two") as b:
        b.spawn()  # task A touches lines 0..3
        b.refs(64 * np.arange(4), 8, False)
        b.ret()
        b.spawn()  # task B touches line 0 (previous-ID A) and line 9 twice
        b.refs(np.array([0, 9 * 64, 5 * 64, 9 * 64]), 8, False)
        b.ret()
        b.sync()
    pr = profile_trace(p, sizes=[64, 128, 256], line=64)
    g = pr.groups
    task_b = int(np.flatnonzero((g.kind == 0) & (g.frame == 2))[0])
    # in B alone: 0, 9, 5 cold; the second 9 has stack distance 2 (5 in between)
    assert pr.misses[task_b].tolist() == [4, 3, 3]
    # whole program: B's line 0 has stack distance 4 (lines 1, 2, 3 of A since): it hits
    # only in the 4-line cache; the second 9 hits from 2 lines up
    assert pr.misses[0].tolist() == [8, 7, 6]


def test_memory_per_distinct_line_is_at_most_64_bytes():
    rng = np.random.default_rng(3)
    n_lines = 300_000
    addr = rng.permutation(n_lines).astype(np.uint64) * np.uint64(64)
    lt = LruTree(bucket_bounds([16384, 1 << 20], 64), line=64)
    for lo in range(0, n_lines, 65536):
        lt.feed(addr[lo : lo + 65536], np.full(min(65536, n_lines - lo), 8, np.uint8), lo)
        assert lt.state_bytes <= 64 * max(lt.distinct_lines, 1 << 16)
    assert lt.distinct_lines == n_lines
    assert lt.state_bytes / n_lines <= 64


def test_feed_validates_its_input():
    """A wrong argument is a ConfigError naming it (it was a bare SimschedError, the class
    of no particular input), as bucket_bounds' are: bucket_bounds([32], 64) said "cache
    size 32 bytes is smaller" without naming sizes."""
    lt = LruTree(np.array([4]), line=64)
    with pytest.raises(ConfigError, match="^start=5: the chunk must start at reference 0"):
        lt.feed(np.zeros(2, np.uint64), np.ones(2, np.uint8), 5)
    with pytest.raises(ConfigError, match="^addr, size: expected 1-D arrays of the same length"):
        lt.feed(np.zeros(2, np.uint64), np.ones(3, np.uint8), 0)
    with pytest.raises(ConfigError, match="^size: reference sizes must be at least 1 byte"):
        lt.feed(np.zeros(2, np.uint64), np.zeros(2, np.uint8), 0)
    with pytest.raises(ConfigError, match="^line=48: a line size is a power of two"):
        LruTree(np.array([4]), line=48)
    with pytest.raises(ConfigError, match="^line=48: a line size is a power of two"):
        bucket_bounds([4096], 48)
    with pytest.raises(ConfigError, match="^sizes=\\[\\]: no cache sizes given"):
        bucket_bounds([], 64)
    with pytest.raises(ConfigError, match="^sizes: cache sizes \\[4096, 4096\\] are not strictly"):
        bucket_bounds([4096, 4096], 64)
    with pytest.raises(ConfigError, match="^sizes: cache size 32 bytes is smaller than"):
        bucket_bounds([32], 64)
    with pytest.raises(ConfigError, match="^sizes: cache size 1000 bytes is not a whole number"):
        bucket_bounds([1000], 64)
    with pytest.raises(ConfigError, match="^groups=3: expected a GroupTree"):
        LruTree(np.array([4]), line=64, groups=3)
    assert bucket_bounds([5 << 20], 128).tolist() == [40960]  # not a power of two: allowed


@pytest.mark.parametrize(
    ("addr", "size", "message"),
    [
        (np.array([2**64 - 4], np.uint64), np.array([8], np.uint8), "pass 2\\*\\*64"),
        (np.array([0]), np.array([300]), "at most 255"),
        (np.array([-64]), np.array([8]), "negative address"),
        (np.array([0.5]), np.array([8]), "must be integers"),
        (np.array([0]), np.array([8.0]), "must be integers"),
    ],
)
def test_feed_refuses_references_it_would_wrap(addr, size, message):
    lt = LruTree(np.array([4]), line=64)
    with pytest.raises(ConfigError, match=message):
        lt.feed(addr, size, 0)
    # nothing was counted: the same tree still takes the chunk's valid form
    lt.feed(np.array([0, 64, 0], np.uint64), np.full(3, 8, np.uint8), 0)
    h = lt.finish()
    assert h.accesses.tolist() == [3] and h.cold.tolist() == [2]


def test_profile_save_load_round_trip(tmp_path):
    path = build_random(tmp_path / "r.sst", 11)
    p = profile_trace(path, sizes=[1024, 4096], line=64)
    p.save(tmp_path / "r.prof")
    q = Profile.load(tmp_path / "r.prof")
    assert q.meta == p.meta
    assert (q.misses == p.misses).all() and (q.working_set_bytes == p.working_set_bytes).all()
    assert q.frame_key(1) == p.frame_key(1)
    (tmp_path / "bad.prof").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ProfileFormatError, match="bad.prof"):
        Profile.load(tmp_path / "bad.prof")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ProfileFormatError, match="other.npz"):
        Profile.load(tmp_path / "other.npz")


def _damaged(tmp_path, damage):
    """A valid profile's arrays with ``damage(arrays, meta)`` applied, saved as bad.prof."""
    path = build_random(tmp_path / "r.sst", 11)
    profile_trace(path, sizes=[1024, 4096], line=64).save(tmp_path / "r.prof")
    with np.load(tmp_path / "r.prof") as z:
        arrays = {k: z[k].copy() for k in z.files}
    meta = json.loads(arrays["meta_json"].tobytes())
    new_meta = damage(arrays, meta)
    if new_meta is not None:
        arrays["meta_json"] = np.frombuffer(new_meta, np.uint8)
    with open(tmp_path / "bad.prof", "wb") as f:  # a path would get ".npz" appended
        np.savez(f, **arrays)
    return tmp_path / "bad.prof"


def _meta(**changes):
    def damage(arrays, meta):
        meta.update(changes)
        return json.dumps({k: v for k, v in meta.items() if v is not None}).encode()

    return damage


def _set(key, index, value):
    def damage(arrays, meta):
        arrays[key][index] = value

    return damage


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        # a parent out of range made the ancestors kernel write outside its array
        (_set("group_parent", 3, 10**6), "parent does not precede"),
        (_set("group_parent", 3, 3), "parent does not precede"),
        (_set("group_depth", 3, 10**6), "depth"),
        (_set("group_children", 3, 10**6), "child list"),
        (_set("group_child_offsets", 2, -5), "child offsets"),
        (_set("group_leaf_of", 0, 10**6), "leaf group"),
        (_set("group_start", 1, 5), "strand range|partition"),
        (_set("group_kind", 1, 9), "kind"),
        (_set("group_frame", 1, 10**6), "frame"),
        # read only by labels and the coarsening table, which printed them as they were
        (_set("group_phase", 0, 3), "a whole frame's group has one"),
        (_set("group_phase", 1, -7), "phase number is below -1"),
        (_set("group_child_lo", 0, -1), "child spawn-index range"),
        (_set("group_child_hi", 0, -2), "child spawn-index range"),
        (lambda a, m: a.__setitem__("group_stop", a["group_stop"][:5]), "entries"),
        (lambda a, m: a.__delitem__("group_start"), "group_start"),
        (_set("hist_strand", 0, 10**6), "out of range"),
        (_set("hist_level", 0, 300), "out of range"),
        (_set("hist_bucket", 0, -5), "out of range"),
        (lambda a, m: a.__setitem__("hist_count", a["hist_count"] * 1.0), "hist_count"),
        # both loaded, and gave wrong (negative) misses
        (_set("strand_cold", 0, -1), "per-strand access counts are inconsistent"),
        (_set("hist_count", 0, 10**9), "more hits than accesses"),
        (_set("frame_parent", 2, 2), "frame parents"),
        (lambda a, m: a.__setitem__("frame_spawn_index", a["frame_spawn_index"][:-1]), "parents"),
        # the coarsening table named groups by these as they were: key "4611686018427387904"
        (_set("frame_spawn_index", 1, 1 << 62), "frame 1 is spawn 4611686018427387904 of"),
        (_set("frame_iteration", 1, -2), "frame 1 has iteration -2"),
        (_set("frame_iteration", 0, 5), "frame 0 \\(main\\) has iteration 5"),
        (lambda a, m: b"[1]", "not a JSON object"),
        (lambda a, m: b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (lambda a, m: b'{"line": ' + b"9" * 5000 + b"}", "not valid JSON"),
        (lambda a, m: b"\xff", "not valid JSON"),
        (_meta(line=None), "'line'"),
        (_meta(line=0), "power of two"),
        (_meta(sizes="x"), "'sizes'"),
        (_meta(sizes=[]), "no cache sizes"),
        (_meta(strands=5), "5 strands"),
        (_meta(digest=None), "'digest'"),
        (_meta(state_bytes=-1), "'state_bytes'"),
    ],
)
def test_load_rejects_a_damaged_profile_naming_it(tmp_path, damage, message):
    bad = _damaged(tmp_path, damage)
    with pytest.raises(ProfileFormatError, match=message) as err:
        Profile.load(bad)
    assert str(err.value).startswith(str(bad))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sizes": "a"}, r"sizes='a': expected a list of cache sizes in bytes"),
        ({"sizes": 4096}, r"sizes=4096: expected a list"),
        (
            {"sizes": [2**70]},
            r"sizes\[0\]=1180591620717411303424: must be between 1 and 1099511627776 \(2\^40\)",
        ),
        ({"sizes": [4096, float("nan")]}, r"sizes\[1\]=nan: expected an integer"),
        ({"sizes": [0]}, r"sizes\[0\]=0: must be between 1 and"),
        # an empty list was taken for the 13 default sizes
        ({"sizes": []}, r"sizes=\[\]: give at least one cache size \(None: the default sizes\)"),
        ({"sizes": np.array([], np.int64)}, r"sizes=\[\]: give at least one cache size"),
        ({"line": float("nan")}, r"line=nan: expected an integer"),
        ({"line": "64"}, r"line='64': expected an integer"),
        # a size or a line that do not fit each other was a bare SimschedError
        ({"sizes": [1000], "line": 64}, r"^sizes: cache size 1000 bytes is not a whole number"),
        ({"sizes": [8192, 4096]}, r"^sizes: cache sizes \[8192, 4096\] are not strictly"),
        ({"line": 48}, r"^line=48: a line size is a power of two"),
        # with the default sizes the line is the choice to change (the message said sizes)
        (
            {"line": 65536},
            r"^line=65536: cache size 16384 bytes is smaller than a 65536-byte line "
            r"\(the smallest default size; give sizes=\[\.\.\.\]\)$",
        ),
        ({"sizes": [32]}, r"^sizes: cache size 32 bytes is smaller than a 64-byte line$"),
        # lines of 1 and 2 bytes were profiled, which simsched profile --line refuses, and
        # 131072 was blamed on the default sizes, not on the largest line size
        (
            {"line": 1, "sizes": [16384]},
            r"^line=1: a line size is a power of two from 4 to 65536 bytes$",
        ),
        ({"line": 2}, r"^line=2: a line size is a power of two from 4 to 65536 bytes$"),
        ({"line": 131072}, r"^line=131072: a line size is a power of two from 4 to 65536 bytes$"),
        (
            {"line": 131072, "sizes": "a"},
            r"^line=131072: a line size is a power of two from 4 to 65536 bytes$",
        ),
        ({"line": 64.0}, r"^line=64\.0: expected an integer \(a line size is a power of two "),
        (
            {"line": 64, "machine": "itrs-scaling-1"},
            r"^line and machine both give the line size: give one of them$",
        ),
    ],
)
def test_profile_trace_refuses_bad_sizes_and_lines(tmp_path, kwargs, message):
    path = build_random(tmp_path / "r.sst", 0)
    with pytest.raises(ConfigError, match=message):
        profile_trace(path, **kwargs)
    # numpy integers are integers
    assert profile_trace(path, sizes=np.array([4096, 8192]), line=np.int64(64)).sizes.tolist() == [
        4096,
        8192,
    ]


def test_profile_trace_checks_the_line_of_a_machine_and_of_the_trace(tmp_path):
    """The line a machine or the trace's hint gives is held to the same rule as line=, and
    the default sizes too small for it are the line's fault: named where it came from."""
    from simsched.errors import command_line
    from simsched.machine import load_machine

    path = build_random(tmp_path / "r.sst", 0)
    big = machine_file(tmp_path / "big.yaml", name="big", line=32768)
    assert profile_trace(path, sizes=[32768], machine=big).line == 32768
    assert profile_trace(path, sizes=[65536], machine=load_machine(big)).line == 32768
    small = "cache size 16384 bytes is smaller than a 32768-byte line (the smallest default size; "
    cases = [
        (big, f"machine={str(big)!r}: {small}give sizes=[...])"),
        (load_machine(big), f"machine 'big': {small}give sizes=[...])"),
    ]
    for machine, said in cases:
        with pytest.raises(ConfigError) as info:
            profile_trace(path, machine=machine)
        assert str(info.value) == said
    with command_line(), pytest.raises(ConfigError) as info:
        profile_trace(path, machine=big)
    assert str(info.value) == f"--machine {big}: {small}choose sizes with --sizes)"
    huge = machine_file(tmp_path / "huge.yaml", name="huge", line=131072)
    with pytest.raises(ConfigError) as info:
        profile_trace(path, sizes=[1 << 20], machine=huge)
    assert str(info.value) == (
        f"machine={str(huge)!r} (L2 line 131072): a line size is a power of two from 4 to "
        "65536 bytes"
    )
    hint = tmp_path / "h.sst"
    with TraceBuilder(hint, line_size_hint=2) as b:
        b.ref(0, 8, False)
    with pytest.raises(ConfigError) as info:
        profile_trace(hint)
    assert str(info.value) == (
        f"{hint}: its line size hint 2: a line size is a power of two from 4 to 65536 bytes"
    )
    assert profile_trace(hint, line=64).line == 64


def test_a_recursion_too_deep_is_refused_before_its_chains_are_built(tmp_path, monkeypatch):
    # the strands' root-to-leaf chains total the sum of their depths: a list walk 20 000
    # deep filled 19 GB in 41 s before the level limit was checked
    import simsched.profile.lrutree as lrutree
    from simsched.profile.groups import GroupTree

    p = tmp_path / "deep.sst"
    with TraceBuilder(p) as b:
        for d in range(40):
            b.ref(64 * d, 8, False)
            b.spawn()
        for _ in range(40):
            b.ret()
    monkeypatch.setattr(lrutree, "MAX_LEVELS", 50)

    def never(self):
        raise AssertionError("ancestor chains built")

    monkeypatch.setattr(GroupTree, "ancestors", never)
    with pytest.raises(SimschedError, match=r"deep.sst: its task-group tree is \d+ levels deep"):
        profile_trace(p)


def _list_walk(path, frames):
    """A recursion ``frames`` deep: on the way down each frame reads its line, the next one and
    line 0, then spawns the next frame; on the way up each reads its line and line 0 again."""
    with TraceBuilder(path, program="walk") as b:
        for d in range(frames):
            b.refs(64 * np.array([d, d + 1, 0]), 8, False)
            b.spawn()
        for d in range(frames):
            b.refs(64 * np.array([frames - d, 0]), 8, False)
            b.ret()
    return path


def _check_against_the_oracles(p, path, groups_to_replay):
    """``p``'s histograms cell by cell against the stack oracle, and the misses of the groups
    ``groups_to_replay`` against a plain LRU replay of each group's accesses."""
    g = p.groups
    with open_trace(path) as t:
        cells, cold = _expected(t, g, np.asarray(p.meta["bounds_lines"]), p.line)
        lines, strands = trace_line_accesses(t, p.line)
    got = Counter()
    for s, lv, b, c in zip(p.hist.strand, p.hist.level, p.hist.bucket, p.hist.count, strict=True):
        got[(int(s), int(lv), int(b))] += int(c)
    assert got == cells
    assert (p.hist.cold == cold).all()
    strands_a = np.asarray(strands)
    for x in groups_to_replay:
        sel = np.flatnonzero((strands_a >= g.start[x]) & (strands_a <= g.stop[x]))
        seg = [lines[i] for i in sel]
        assert p.accesses[x] == len(seg) and p.footprint_lines[x] == len(set(seg))
        assert p.misses[x].tolist() == [lru_misses(seg, int(c)) for c in p.meta["bounds_lines"]]


def test_a_deep_recursion_costs_memory_linear_in_its_depth(tmp_path, monkeypatch):
    # The strands' root-to-leaf chains of groups, together as long as the sum of the strands'
    # depths, were built whole and every strand's histogram flushed over its whole chain: a
    # list walk 5 000 deep took 6.3 s and 2.5 GB.  Now no chain is stored whole.
    from simsched.profile.groups import GroupTree

    sizes = [256, 1024, 4096]
    small = profile_trace(_list_walk(tmp_path / "small.sst", 30), sizes=sizes, line=64)
    _check_against_the_oracles(small, tmp_path / "small.sst", range(len(small.groups)))

    def never(self):
        raise AssertionError("ancestor chains built")

    monkeypatch.setattr(GroupTree, "ancestors", never)
    frames = 1500
    path = _list_walk(tmp_path / "deep.sst", frames)
    tracemalloc.start()
    try:
        p = profile_trace(path, sizes=sizes, line=64)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    levels = int(p.groups.depth.max()) + 1
    assert levels == 2 * frames + 1
    # with the chains built whole this walk (3 001 levels, 4 501 strands) peaked at 223 MB
    # of numpy arrays; now at 5.8 MB, which grows with the levels
    assert peak < 4000 * levels
    g = p.groups
    frame_group = {int(f): x for x, f in enumerate(g.frame) if g.kind[x] == 0}
    _check_against_the_oracles(p, path, [frame_group[f] for f in (0, 1, 700, 1499, 1500)])
    # closed form: frame f's group reads lines f .. frames and 0, 3 accesses a frame on the
    # way down (the deepest reads none) and 2 on the way up
    for f in range(1, frames + 1):
        x = frame_group[f]
        assert p.accesses[x] == 5 * (frames - f) + 2
        assert p.footprint_lines[x] == frames - f + 2


def test_a_group_tree_and_its_chains_give_the_same_histograms(tmp_path):
    path = build_random(tmp_path / "r.sst", 5, depth=4, lines=40)
    bounds = np.array([2, 5, 17, 40])
    with open_trace(path) as t:
        groups = build_groups(t)
        off, _, starts = groups.ancestors()
        rs = t.strands.ref_start
        runs = [
            LruTree(bounds, line=64, ref_start=rs, groups=groups, hash_bits=4, time_slots=64),
            LruTree(bounds, line=64, ref_start=rs, anc_offsets=off, anc_starts=starts),
        ]
        for lt in runs:
            for c in t.iter_chunks():
                lt.feed(c.addr, c.size, c.start)
        a, b = (lt.finish() for lt in runs)
        for k in ("accesses", "cold", "strand", "level", "bucket", "count"):
            assert getattr(a, k).tobytes() == getattr(b, k).tobytes(), k
        with pytest.raises(SimschedError, match="not both"):
            LruTree(
                bounds, line=64, ref_start=rs, groups=groups, anc_offsets=off, anc_starts=starts
            )
        with pytest.raises(SimschedError, match="two parents"):
            # group (level 1, first strand 0) is under root 0 in strand 0's chain, root 1 in 1's
            LruTree(
                bounds,
                line=64,
                ref_start=np.array([0, 1, 2]),
                anc_offsets=np.array([0, 2, 5]),
                anc_starts=np.array([0, 0, 1, 0, 1]),
            )


def test_profile_files_and_bucket_bounds_name_a_wrong_argument(tmp_path):
    """Before: FileNotFoundError, IsADirectoryError, TypeError, or 'cache size 0 bytes'."""
    from simsched.profile import Profile, bucket_bounds

    with pytest.raises(ConfigError, match=r"missing\.npz: no such file"):
        Profile.load(tmp_path / "missing.npz")
    with pytest.raises(ConfigError, match=r": is a folder, expected the \.npz file"):
        Profile.load(tmp_path)
    # np.load of a named pipe waited for a writer for good (`simsched coarsen PIPE`)
    os.mkfifo(tmp_path / "pipe.prof")
    [exc] = raised_within(lambda: Profile.load(tmp_path / "pipe.prof"), "Profile.load")
    assert isinstance(exc, ConfigError)
    assert str(exc).endswith(
        "pipe.prof: is a named pipe, expected the .npz file of `simsched profile -o`"
    )
    p = profile_trace(build_random(tmp_path / "r.sst", 2), sizes=[4096], line=64)
    with pytest.raises(ConfigError, match=r"path=None: expected a path"):
        p.save(None)
    with pytest.raises(ConfigError, match=r"line=None: expected an integer"):
        bucket_bounds([4096], None)
    with pytest.raises(ConfigError, match=r"sizes=None: expected a list"):
        bucket_bounds(None, 64)
    with pytest.raises(ConfigError, match=r"sizes\[0\]=nan: expected an integer"):
        bucket_bounds([float("nan")], 64)
    with pytest.raises(ConfigError, match=r"sizes='4096': expected a list"):
        bucket_bounds("4096", 64)
