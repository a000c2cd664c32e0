"""CAB's boundary level: [CAB11] §III-B Eqs. 1-4, §V-C's worked example, B from frames."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.schedulers.boundary import (
    CPU_BOUND_MISS_INTENSITY,
    boundary_level,
    choose_boundary_level,
    frame_arrays,
    intra_level,
    is_cpu_bound,
    measure_branching,
    miss_intensity,
)
from simsched.trace import open_trace
from simsched.workloads import generate

MB = 1 << 20


def test_cab_section_vc_worked_example():
    # [CAB11] §V-C: heat on a 3k x 2k grid of doubles = 48 MB, 4 sockets of 6 MB L3, B = 2:
    # BL = max{ceil(log2 4 + 1), ceil(log2(48MB/6MB) + 1)} = max{3, 4} = 4
    c = choose_boundary_level(2, 4, 6 * MB, 3072 * 2048 * 8)
    assert 3072 * 2048 * 8 == 48 * MB
    assert (c.bl, c.level_sockets, c.level_cache, c.reason) == (4, 3, 4, "cache")
    assert c.leaf_tasks == 8 and c.leaf_bytes == 6 * MB
    assert boundary_level(2, 4, 6 * MB, 48 * MB) == 4


def test_cab_section_ii_heat_example():
    # [CAB11] §II: a 10 x 10 grid of doubles (800 bytes) on a dual-socket machine with a
    # 480-byte shared cache: levels 0-2 are inter-socket, level 2 holds the leaf
    # inter-socket tasks.  Eq. 4: max{ceil(log2 2 + 1), ceil(log2(800/480) + 1)} = max{2, 2}
    c = choose_boundary_level(2, 2, 480, 10 * 10 * 8)
    assert (c.bl, c.level_sockets, c.level_cache, c.reason) == (2, 2, 2, "both")
    assert c.leaf_tasks == 2 and c.leaf_bytes == 400.0


@pytest.mark.parametrize(
    ("B", "M", "Sc", "Sd", "bl", "reason"),
    [
        (2, 4, 6 * MB, 6 * MB, 3, "sockets"),  # data fits one cache: Eq. 1 decides
        (2, 4, 6 * MB, 1, 3, "sockets"),  # log_B(Sd/Sc) far below 0
        (2, 4, 6 * MB, 24 * MB, 3, "both"),  # 24/6 = 4 = 2**2 exactly
        (2, 4, 6 * MB, 24 * MB + 1, 4, "cache"),  # one byte more needs a level more
        (2, 16, 1, 8, 5, "sockets"),  # log2 16 + 1 = 5; log2 8 + 1 = 4
        (3, 4, 1, 243, 6, "cache"),  # 243 = 3**5: log_3 243 + 1 = 6
        (5, 2, 1, 125, 4, "cache"),  # math.log(125, 5) = 3.0000000000000004: float gives 5
        (3, 27, 100, 100, 4, "sockets"),  # 27 = 3**3
        (4, 2, 10, 1, 2, "sockets"),  # Sd/Sc = 1/10: cache term ceil(log4 0.1) + 1 = -1 + 1
        (8, 32, 6 * MB, 48 * MB, 3, "sockets"),  # ceil(log8 32) = 2; log8 8 = 1
    ],
)
def test_hand_worked(B, M, Sc, Sd, bl, reason):
    c = choose_boundary_level(B, M, Sc, Sd)
    assert (c.bl, c.reason) == (bl, reason)
    assert c.leaf_tasks == B ** (bl - 1)


@pytest.mark.parametrize("Sc,Sd", [(10, 1), (100, 1), (1 << 30, 64), (64, 64)])
def test_cache_term_is_at_least_one(Sc, Sd):
    # Data that fits in one shared cache fits at the root's level: the bare formula gives
    # 0 for Sd/Sc = 1/10 and -2 for 1/100 with B = 4; the term is 1, the level of the root.
    c = choose_boundary_level(4, 2, Sc, Sd)
    assert c.level_cache == 1 and c.level_sockets == 2 and c.bl == 2


def test_single_socket_is_zero():
    # [CAB11] Algorithm II step 2: one socket, BL = 0, every task intra-socket
    c = choose_boundary_level(2, 1, 6 * MB, 48 * MB, miss_intensity=0.5)
    assert (c.bl, c.reason, c.leaf_tasks) == (0, "single-socket", 0)
    assert boundary_level(2, 1, 1, 10**9) == 0


@pytest.mark.parametrize(
    ("B", "M", "Sc", "Sd"),
    [
        (1, 4, 1, 1),
        (2.5, 4, 1, 1),
        (2, 0, 1, 1),
        (2, 4, 0, 1),
        (2, 4, 1, 0),
        (2, 4, 1, -3),
        (True, 4, 1, 1),
        (2, "4", 1, 1),
        (2, 4, 1.0, 8),
    ],
)
def test_bad_parameters(B, M, Sc, Sd):
    with pytest.raises(ConfigError):
        boundary_level(B, M, Sc, Sd)


def test_numpy_integers_accepted():
    assert boundary_level(np.int64(2), np.int32(4), np.int64(6 * MB), np.uint64(48 * MB)) == 4


_B = st.integers(2, 9)
_M = st.integers(2, 64)
_SIZE = st.integers(1, 1 << 40)


@given(_B, _M, _SIZE, _SIZE)
def test_eq1_eq2_hold_and_bl_is_smallest(B, M, Sc, Sd):
    bl = boundary_level(B, M, Sc, Sd)
    assert bl >= 2
    # Eq. 1 and Eq. 2 hold at BL ...
    assert B ** (bl - 1) >= M
    assert Sd <= Sc * B ** (bl - 1)
    # ... and one of them fails one level up (Eq. 4 picks the smallest such level)
    assert B ** (bl - 2) < M or Sd > Sc * B ** (bl - 2)


@given(_B, _M, _SIZE, _SIZE, _SIZE)
def test_monotonic_in_data_size(B, M, Sc, a, b):
    lo, hi = sorted((a, b))
    assert boundary_level(B, M, Sc, lo) <= boundary_level(B, M, Sc, hi)


@given(_B, _M, _SIZE, _SIZE, _SIZE)
def test_antitonic_in_cache_size(B, M, Sd, a, b):
    lo, hi = sorted((a, b))
    assert boundary_level(B, M, lo, Sd) >= boundary_level(B, M, hi, Sd)


@given(_B, _M, _M, _SIZE, _SIZE)
def test_monotonic_in_sockets(B, a, b, Sc, Sd):
    lo, hi = sorted((a, b))
    assert boundary_level(B, lo, Sc, Sd) <= boundary_level(B, hi, Sc, Sd)


@given(_B, _B, _M, _SIZE, _SIZE)
def test_antitonic_in_branching(a, b, M, Sc, Sd):
    lo, hi = sorted((a, b))
    assert boundary_level(lo, M, Sc, Sd) >= boundary_level(hi, M, Sc, Sd)


@given(_B, st.integers(0, 30), st.integers(1, 1 << 20))
def test_exact_at_powers(B, k, Sc):
    # Sd/Sc = B**k exactly: the cache term is k + 1; one byte more makes it k + 2
    assert choose_boundary_level(B, 2, Sc, Sc * B**k).level_cache == k + 1
    assert choose_boundary_level(B, 2, Sc, Sc * B**k + 1).level_cache == k + 2


# -- CPU-bound rule ([CAB11] §V-D) -------------------------------------------------------


def test_cpu_bound_rule():
    t = CPU_BOUND_MISS_INTENSITY
    assert is_cpu_bound(0.0)
    assert is_cpu_bound(t / 2)
    assert not is_cpu_bound(t)  # at the threshold: memory-bound
    assert not is_cpu_bound(0.02)
    assert is_cpu_bound(0.02, threshold=0.05)
    for bad in (-1e-9, float("nan"), float("inf")):
        with pytest.raises(ConfigError):
            is_cpu_bound(bad)
    with pytest.raises(ConfigError):
        is_cpu_bound(0.1, threshold=0)


def test_cpu_bound_gives_bl_zero_and_records_why():
    c = choose_boundary_level(2, 4, 6 * MB, 48 * MB, miss_intensity=4.6e-5)
    assert (c.bl, c.reason, c.leaf_tasks) == (0, "cpu-bound", 0)
    assert c.miss_intensity == 4.6e-5 and c.threshold == CPU_BOUND_MISS_INTENSITY
    m = choose_boundary_level(2, 4, 6 * MB, 48 * MB, miss_intensity=0.02)
    assert (m.bl, m.reason, m.miss_intensity) == (4, "cache", 0.02)
    rec = m.as_record()
    assert rec["bl"] == 4 and rec["bl_reason"] == "cache" and rec["bl_data_bytes"] == 48 * MB
    assert rec["bl_level_sockets"] == 3 and rec["bl_threshold"] == CPU_BOUND_MISS_INTENSITY


def test_miss_intensity():
    assert miss_intensity(10, 1000) == 0.01
    np.testing.assert_allclose(miss_intensity([0, 5], [10, 10]), [0.0, 0.5])
    for m, n in ((1, 0), (-1, 10), ([1, 2], [3])):
        with pytest.raises(ConfigError):
            miss_intensity(m, n)


# -- B from a frame table -------------------------------------------------------------


def frames_of(*roots):
    """Frame arrays (branching, level, parent) of main spawning ``roots``; a node is the
    list of its children, numbered depth first like a trace."""
    parent, level, branching = [-1], [0], [0]

    def add(node, p, b):
        f = len(parent)
        parent.append(p)
        level.append(level[p] + 1)
        branching.append(b)
        for c in node:
            add(c, f, len(node))

    for r in roots:
        add(r, 0, len(roots))
    return branching, level, parent


def test_branching_of_cab_fig1_heat_trace(tmp_path):
    # [CAB11] Fig. 1: main spawns heat once per iteration, heat halves the rows; main's
    # spawns (one per iteration) must not count
    path = tmp_path / "heat.sst"
    generate("heat", path, nx=10, ny=10, iters=3, cutoff=2, init=False)
    with open_trace(path) as t:
        fr = t.frames
        b = measure_branching(fr.branching, fr.level, fr.parent)
    assert (b.B, b.regular, b.share, b.mean) == (2, True, 1.0, 2.0)
    # T1 in each iteration (T2 and T3 have only leaves below them)
    assert (b.spawning_frames, b.basis) == (3, "recursive children")
    assert b.as_record()["branching"] == 2


def test_branching_counts_recursive_children_not_later_phases(tmp_path):
    # mergesort's psort spawns two psorts, syncs, then spawns merge tasks: the branching
    # column counts all of them, the data is divided in two
    path = tmp_path / "ms.sst"
    generate("mergesort", path, n=1 << 14)
    with open_trace(path) as t:
        fr = t.frames
        b = measure_branching(fr.branching, fr.level, fr.parent)
        assert int(np.max(fr.branching)) > 2
    assert (b.B, b.regular, b.basis) == (2, True, "recursive children")


def test_branching_excludes_main_and_falls_back_to_all_children():
    # main spawns five recursion roots, each splits into three leaves: one level only
    leaf = []
    b = measure_branching(*frames_of(*([[leaf, leaf, leaf]] * 5)))
    assert (b.B, b.spawning_frames, b.regular, b.basis) == (3, 5, True, "all children")


def test_branching_mode_of_irregular_dag():
    # the root splits in 3; its children split in 2, 2 and 4; below them two leaves each
    two = [[], []]
    b = measure_branching(*frames_of([[two, two], [two, two], [two, two, two, two]]))
    assert (b.B, b.spawning_frames, b.regular) == (2, 4, False)
    assert b.mean == pytest.approx(11 / 4) and b.share == pytest.approx(2 / 4)


def test_branching_ties_go_to_smaller_degree():
    # recursive degrees {3, 3, 2, 2}: a tie, B = 2
    one = [[]]
    b = measure_branching(*frames_of([[one, one, one], [one, one], [one, one]]))
    assert (b.B, b.share) == (2, 0.5)


def test_branching_needs_recursion_below_main():
    with pytest.raises(ConfigError, match="give bl explicitly"):
        measure_branching([0, 3, 3, 3], [0, 1, 1, 1], [-1, 0, 0, 0])


@pytest.mark.parametrize(
    "parent", [[-1, 0, 3, 1], [-1, -2, 0, 0], [[-1, 0]], [-1.0, 0.0, 0.0, 1.0]]
)
def test_frame_arrays_rejects_malformed_parents(parent):
    with pytest.raises(ConfigError):
        frame_arrays(parent)


def test_frame_arrays_rejects_column_of_other_length():
    with pytest.raises(ConfigError, match="level"):
        measure_branching([0, 1, 2], [0, 1], [-1, 0, 1])


def test_third_constraint_caps_bl_by_the_dags_depth():
    # [CAB11] §III-B: B = 2, 4 sockets, 6 MB shared cache, 200 MB of data
    big = dict(B=2, M=4, Sc=6 << 20, Sd=200 << 20)
    assert choose_boundary_level(**big).bl == 7  # Eq. 4 alone (no depth given)
    c = choose_boundary_level(**big, depth=8, cores_per_socket=8)
    assert (c.bl, c.reason, c.eq4, c.level_intra) == (5, "intra-tasks", 7, 5)
    assert c.leaf_tasks == 16 and c.leaf_bytes == (200 << 20) / 16
    deep = choose_boundary_level(**big, depth=12, cores_per_socket=8)
    assert (deep.bl, deep.reason) == (7, "cache")  # deep enough: Eq. 4 stands
    # too shallow for both tiers: fewer leaf tasks than sockets would remain
    flat = choose_boundary_level(**big, depth=5, cores_per_socket=8)
    assert (flat.bl, flat.reason, flat.leaf_tasks, flat.level_intra) == (0, "too-shallow", 0, 2)
    with pytest.raises(ConfigError, match="DAG depth"):
        choose_boundary_level(**big, depth=-1)


def _full_tree(b: int, depth: int) -> tuple[list[int], list[int]]:
    """Frame columns of main -> root -> b children per frame, ``depth`` levels below main."""
    parent, level = [-1, 0], [0, 1]
    frontier = [1]
    for lv in range(2, depth + 1):
        nxt = []
        for f in frontier:
            for _ in range(b):
                parent.append(f)
                level.append(lv)
                nxt.append(len(parent) - 1)
        frontier = nxt
    return parent, level


@given(b=st.integers(2, 4), depth=st.integers(1, 7), cores=st.integers(1, 16))
def test_intra_level_on_a_full_tree_is_the_depth_bound(b, depth, cores):
    # on a DAG whose every task divides alike the DAG's own cap is B**(depth - BL) >= N/M
    parent, level = _full_tree(b, depth)
    c = choose_boundary_level(b, 4, 6 << 20, 200 << 20, depth=depth, cores_per_socket=cores)
    assert intra_level(parent, level, cores) == max(c.level_intra, 0)


def test_intra_level_of_an_uneven_dag():
    # main spawns a big subtree (4 leaves) and a lone leaf: the lone leaf inter-socket task
    # at level 1 has one frame for a squad of 2, so no level satisfies the third constraint
    parent = [-1, 0, 0, 1, 1, 3, 3, 4, 4]
    level = [0, 1, 1, 2, 2, 3, 3, 3, 3]
    assert intra_level(parent, level, 2) == 0
    assert intra_level(parent, level, 1) == 3
    # a balanced binary tree of 4 leaves: levels 1 and 2 hold (4 and 2 leaves per frame)
    assert intra_level([-1, 0, 1, 1, 2, 2, 3, 3], [0, 1, 2, 2, 3, 3, 3, 3], 2) == 2
    assert intra_level([], [], 4) == 0


def test_intra_level_overrides_the_depth_estimate():
    big = dict(B=2, M=4, Sc=6 << 20, Sd=200 << 20)
    # the depth says 5 would do; the DAG itself allows level 3 only
    c = choose_boundary_level(**big, depth=8, cores_per_socket=8, level_intra=3)
    assert (c.bl, c.reason, c.level_intra, c.depth) == (3, "intra-tasks", 3, 8)
    # a DAG whose cap is above Eq. 1's level but at 0 is too shallow for two tiers
    z = choose_boundary_level(**big, depth=8, cores_per_socket=8, level_intra=0)
    assert (z.bl, z.reason) == (0, "too-shallow")
    with pytest.raises(ConfigError, match="third-constraint level"):
        choose_boundary_level(**big, level_intra=-1)
