"""LAWS' DAG packer: SOSC by [LAWS15] Eq. 2, CF roots (§3.3.1), Algorithm 1's moves (§3.3.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.schedulers.packing import (
    CF_ROOT,
    FREE,
    SOCKET_LOCAL,
    PackingTuner,
    cf_roots,
    classify_tasks,
    iteration_tree,
    laws_cpu_bound,
    sosc,
    spread_roots,
    task_misses,
)
from simsched.trace import open_trace
from simsched.workloads import generate

# Hand-worked DAG 1 (line size 64): main 0 -> root 1 -> {2, 3}; 2 -> {4, 5}; 3 -> {6, 7}.
# Own misses: 2 and 3 one each, the leaves four each.
P1 = np.array([-1, 0, 1, 1, 2, 2, 3, 3])
L1 = np.array([0, 1, 2, 2, 3, 3, 3, 3])
M1 = np.array([0, 0, 1, 1, 4, 4, 4, 4])


def test_eq2_hand_worked_regular():
    # leaves 4*64 = 256; S2 = S3 = 64 + 2*256 = 576; S1 = 0 + 2*576 = 1152; S0 = S1
    np.testing.assert_array_equal(sosc(P1, L1, M1, 64), [1152, 1152, 576, 576, 256, 256, 256, 256])


def test_eq2_hand_worked_irregular_serial_numbering():
    # serial (depth-first) numbering: 0 main; 1 root; 2 <- 1; 3, 4 <- 2; 5 <- 1; 6 <- 5;
    # 7, 8 <- 6; 9 <- 1 (a leaf child of the root).  Line size 1: SOSC in misses.
    parent = [-1, 0, 1, 2, 2, 1, 5, 6, 6, 1]
    level = [0, 1, 2, 3, 3, 2, 3, 4, 4, 2]
    own = [1, 0, 2, 3, 5, 0, 1, 4, 4, 7]
    # S3=3 S4=5 S2=2+3+5=10; S7=S8=4 S6=1+8=9 S5=0+9=9; S9=7; S1=10+9+7=26; S0=1+26=27
    np.testing.assert_array_equal(sosc(parent, level, own, 1), [27, 26, 10, 3, 5, 9, 9, 4, 4, 7])


@pytest.mark.parametrize(
    ("Sc", "classes"),
    [
        (600, [FREE, FREE, CF_ROOT, CF_ROOT] + [SOCKET_LOCAL] * 4),
        # S_beta == Sc: beta (2, 3) is a CF root, so its children are socket-local
        (576, [FREE, FREE, CF_ROOT, CF_ROOT] + [SOCKET_LOCAL] * 4),
        (575, [FREE] * 4 + [CF_ROOT] * 4),
        (256, [FREE] * 4 + [CF_ROOT] * 4),
        (255, [FREE] * 8),  # nothing fits: no CF subtree at all
        (1152, [CF_ROOT] + [SOCKET_LOCAL] * 7),  # the whole DAG fits: main is the CF root
    ],
)
def test_cf_root_rule(Sc, classes):
    s = sosc(P1, L1, M1, 64)
    np.testing.assert_array_equal(classify_tasks(s, P1, Sc), classes)
    np.testing.assert_array_equal(cf_roots(s, P1, Sc), np.flatnonzero(np.array(classes) == 1))


def test_task_misses_sums_own_strands():
    np.testing.assert_array_equal(task_misses([0, 1, 1, 0, 2], [1, 2, 3, 4, 0], 4), [5, 5, 0, 0])
    with pytest.raises(ConfigError):
        task_misses([0, 5], [1, 1], 4)
    with pytest.raises(ConfigError):
        task_misses([0, 1], [1, -1], 4)


def test_sosc_on_a_heat_trace(tmp_path):
    # [CAB11] Fig. 1's heat DAG, three iterations; let each task's misses be its references
    path = tmp_path / "heat.sst"
    generate("heat", path, nx=10, ny=10, iters=3, cutoff=2, init=False)
    with open_trace(path) as t:
        fr, strands = t.frames, t.strands
        own = task_misses(strands.frame, strands.n_refs, len(fr))
        s = sosc(fr.parent, fr.level, own, 1)
        leaf = int(own[fr.level == 3][0])  # 2 rows x 8 columns x 6 references
        assert leaf == 96 and np.all(own[fr.level == 3] == leaf)
        for lv, mult in ((3, 1), (2, 2), (1, 4)):
            assert np.all(s[fr.level == lv] == mult * leaf)
        assert s[0] == 3 * 4 * leaf == own.sum()
        roots = cf_roots(s, fr.parent, 2 * leaf)
        assert np.all(fr.level[roots] == 2) and roots.size == 3 * 2


def test_iteration_template_pipeline_on_a_heat_trace(tmp_path):
    # profile iteration 1 of heat, pack it, tune it, find the same tasks in iteration 2
    path = tmp_path / "heat.sst"
    generate("heat", path, nx=10, ny=10, iters=3, cutoff=2, init=False)
    with open_trace(path) as t:
        fr, strands = t.frames, t.strands
        frames, lp = iteration_tree(fr.parent, fr.iteration, 1)
        assert frames.size == 7 and lp[0] == -1 and np.all(lp[1:] >= 0)
        assert np.all(fr.iteration[frames] == 1)
        assert np.all(fr.parent[frames[1:]] == frames[lp[1:]])
        own = task_misses(strands.frame, strands.n_refs, len(fr))[frames]
        s = sosc(lp, fr.level[frames], own, 1)
        assert s[0] == own.sum() == 4 * 96
        roots = cf_roots(s, lp, 2 * 96)
        assert np.all(fr.level[frames[roots]] == 2)
        tuner = PackingTuner(lp, roots)
        smaller = tuner.record(1000)
        assert np.all(fr.level[frames[smaller]] == 3) and smaller.size == 4
        keys = {fr.key(int(f)) for f in frames[smaller]}
        later, _ = iteration_tree(fr.parent, fr.iteration, 2)
        assert keys <= {fr.key(int(f)) for f in later}
        assert iteration_tree(fr.parent, fr.iteration, 7)[0].size == 0


def test_sosc_rejects_bad_input():
    with pytest.raises(ConfigError, match="levels"):
        sosc(P1, [0, 1, 2, 2, 3, 3, 3, 4], M1, 64)
    with pytest.raises(ConfigError):
        sosc(P1, L1, M1, 0)
    with pytest.raises(ConfigError):
        sosc(P1, L1, -M1, 64)
    with pytest.raises(ConfigError):
        sosc([-1, 2, 0], [0, 1, 1], [0, 0, 0], 64)
    with pytest.raises(ConfigError):
        classify_tasks([1, 1], [-1, 0], 0)


@st.composite
def trees(draw):
    n = draw(st.integers(1, 60))
    parent = [-1] + [draw(st.integers(-1, i - 1)) for i in range(1, n)]
    level = []
    for f, p in enumerate(parent):
        level.append(0 if p < 0 else level[p] + 1)
        assert p < f
    own = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    return np.array(parent), np.array(level), np.array(own)


def _children(parent, f):
    return [c for c in range(len(parent)) if parent[c] == f]


def _ancestors(parent, f):
    out = []
    while parent[f] >= 0:
        f = int(parent[f])
        out.append(f)
    return out


@given(trees(), st.integers(1, 128))
def test_sosc_is_subtree_sum(tree, line):
    parent, level, own = tree
    s = sosc(parent, level, own, line)
    ref = own * line
    for f in range(len(parent)):
        for a in _ancestors(parent, f):
            ref[a] += own[f] * line
    np.testing.assert_array_equal(s, ref)


@given(trees(), st.integers(0, 60_000))
def test_classes_partition_every_root_path(tree, Sc):
    # along every path from a root: free tasks, then at most one CF root, then socket-local
    parent, level, own = tree
    s = sosc(parent, level, own, 64)
    c = classify_tasks(s, parent, Sc + 1)
    for f in range(len(parent)):
        chain = [int(c[a]) for a in reversed(_ancestors(parent, f))] + [int(c[f])]
        k = sum(1 for x in chain if x == CF_ROOT)
        assert k <= 1
        if k:
            i = chain.index(CF_ROOT)
            assert set(chain[:i]) <= {FREE} and set(chain[i + 1 :]) <= {SOCKET_LOCAL}
            assert s[f] <= Sc + 1
        else:
            assert set(chain) == {FREE} and s[f] > Sc + 1


def test_spread_roots_moves_down_until_every_socket_has_one():
    # the full binary tree of depth 4 below (PT): one root for four sockets goes two
    # levels down; roots at uneven depths move together; leaves stay; enough is enough
    assert spread_roots(PT, [0], 4).tolist() == lvl(2)
    assert spread_roots(PT, [0], 3).tolist() == lvl(2)
    assert spread_roots(PT, lvl(1), 2).tolist() == lvl(1)
    assert spread_roots(PT, [1, 6], 3).tolist() == [3, 4, 13, 14]
    assert spread_roots(PT, [0], 100).tolist() == lvl(4)
    assert spread_roots(PT, [], 4).tolist() == []
    # two procedures one after the other (a SOR sweep's half-sweeps): each gets its own
    two = np.array([-1, 0, 0, 1, 1, 2, 2, -1, 7, 7, 8, 8, 9, 9])
    assert spread_roots(two, [0, 7], 2).tolist() == [1, 2, 8, 9]
    assert spread_roots(two, [0, 8, 9], 2).tolist() == [1, 2, 8, 9]
    assert spread_roots(two, [0, 8, 9], 4).tolist() == [3, 4, 5, 6, 10, 11, 12, 13]
    # ... and two that run at the same time (the same group at their tops) share the count
    same = np.zeros(14, dtype=np.int64)
    assert spread_roots(two, [0, 7], 2, together=same).tolist() == [0, 7]
    assert spread_roots(two, [0, 7], 4, together=same).tolist() == [1, 2, 8, 9]
    apart = np.where(np.arange(14) < 7, 5, 9)
    assert spread_roots(two, [0, 7], 2, together=apart).tolist() == [1, 2, 8, 9]
    with pytest.raises(ConfigError, match="together must be 14 integers"):
        spread_roots(two, [0, 7], 2, together=[0, 1])
    for bad in ([31], [-1]):
        with pytest.raises(ConfigError):
            spread_roots(PT, bad, 2)
    with pytest.raises(ConfigError):
        spread_roots(PT, [0], 0)


@given(trees(), st.integers(1, 9))
def test_spread_roots_keeps_the_leaves_it_covers(tree, need):
    parent = tree[0]
    n = len(parent)
    tops = [f for f in range(n) if parent[f] < 0]
    out = spread_roots(parent, tops, need)

    def covered(roots):
        rs = set(roots)
        return {f for f in range(n) if f in rs or rs & set(_ancestors(parent, f))}

    leaves = set(range(n)) - set(parent.tolist())
    assert leaves <= covered(out)  # every leaf stays inside a CF subtree
    assert not any(set(_ancestors(parent, int(r))) & set(out.tolist()) for r in out)
    for t in tops:  # every tree has enough roots, or only leaves as roots
        mine = [int(r) for r in out if r == t or t in _ancestors(parent, int(r))]
        assert len(mine) >= need or set(mine) <= leaves
        # the obvious loop, one tree at a time: as deep as needed and no deeper
        r = [t]
        while len(r) < need and any(x not in leaves for x in r):
            r = sorted(c for x in r for c in ([x] if x in leaves else _children(parent, x)))
        assert mine == r
    # roots already enough come back as they were
    assert spread_roots(parent, out, need).tolist() == out.tolist()


# -- Algorithm 1 -------------------------------------------------------------------------

# Template tree (also for spread_roots above): a full binary tree of depth 4, numbered level by level: frame 0 is the
# iteration root (level 0), level k holds frames 2**k - 1 .. 2**(k+1) - 2.
PT = np.array([-1] + [(f - 1) // 2 for f in range(1, 31)])


def lvl(k):
    return list(range(2**k - 1, 2 ** (k + 1) - 1))


def run_script(roots, times):
    t = PackingTuner(PT, roots)
    seen = [t.current.tolist()]
    for x in times:
        seen.append(t.record(x).tolist())
    return t, seen


def test_smaller_while_improving_until_leaves():
    # lines 3-8: 100 (initial, level 2) -> level 3: 90 better -> level 4: 80 better; the
    # leaves have no children, the loop ends, EvalLarger = 0: the leaves are chosen
    t, seen = run_script(lvl(2), [100, 90, 80])
    assert seen == [lvl(2), lvl(3), lvl(4), lvl(4)]
    assert t.done and t.best.tolist() == lvl(4)
    assert [(h.move, h.n_roots, h.time) for h in t.history] == [
        ("initial", 4, 100.0),
        ("smaller", 8, 90.0),
        ("smaller", 16, 80.0),
    ]


def test_smaller_stops_at_first_non_improvement():
    # level 3 improves (90 < 100), level 4 does not (95 >= 90): break; EvalLarger = 0 ends
    t, seen = run_script(lvl(2), [100, 90, 95])
    assert seen[-1] == lvl(3) and t.done


def test_smaller_tie_is_not_an_improvement_then_larger():
    # line 7 needs Tn < Tc: a tie breaks the loop with EvalLarger = 1 -> lines 10-14
    t, seen = run_script(lvl(2), [100, 100])
    assert seen[-1] == lvl(1) and not t.done


def test_larger_while_not_worse():
    # smaller is worse (110 > 100): restore level 2, Tc = T = 100, go up: level 1 at 95
    # saved, level 0 at 97 > 95 breaks: level 1 is chosen
    t, seen = run_script(lvl(2), [100, 110, 95, 97])
    assert seen == [lvl(2), lvl(3), lvl(1), lvl(0), lvl(1)]
    assert t.done
    assert [h.move for h in t.history] == ["initial", "smaller", "larger", "larger"]


def test_larger_accepts_ties_up_to_the_root():
    # line 17 breaks only on Tn > Tc, so equal times keep growing; the root has no parent
    t, seen = run_script(lvl(2), [100, 110, 100, 100])
    assert seen[-1] == lvl(0) and t.done


def test_nothing_better_keeps_initial_packing():
    t, seen = run_script(lvl(2), [100, 110, 120])
    assert seen[-1] == lvl(2) and t.done and t.best.tolist() == lvl(2)


def test_larger_is_compared_with_initial_time_not_smaller_time():
    # Tc is reset to T (line 12): level 1 at 105 is worse than T = 100 though better than 110
    t, seen = run_script(lvl(2), [100, 110, 105])
    assert seen[-1] == lvl(2) and t.done


def test_initial_leaves_go_straight_to_larger():
    t, seen = run_script(lvl(4), [100])
    assert seen[-1] == lvl(3) and not t.done


def test_root_only_cannot_move_up_after_smaller_fails():
    t, seen = run_script([0], [100, 101])
    assert seen == [[0], lvl(1), [0]] and t.done


def test_done_keeps_answering_the_choice():
    t, _ = run_script(lvl(2), [100, 110, 120])
    assert t.record(50).tolist() == lvl(2)
    assert t.history[-1].move == "final" and t.done


def test_uneven_roots_move_together_and_stay_outermost():
    # roots at uneven depths: 3, 4 (level 2) and 11..14 (level 3)
    t = PackingTuner(PT, [3, 4, 11, 12, 13, 14])
    assert t.record(100).tolist() == [7, 8, 9, 10, *range(23, 31)]
    assert t.record(110).tolist() == [1, 5, 6]  # restored, then every root's parent
    assert t.record(90).tolist() == [0]  # parents {0, 2}: 2 is inside 0's subtree


def test_smaller_keeps_a_leaf_root():
    t = PackingTuner(PT, [15, 8])  # 15 is a leaf, 8 has children 17 and 18
    assert t.record(100).tolist() == [15, 17, 18]


@pytest.mark.parametrize("roots", [[], [1, 3], [31], [-1]])
def test_tuner_rejects_bad_roots(roots):
    with pytest.raises(ConfigError):
        PackingTuner(PT, roots)


def test_tuner_rejects_bad_time():
    t = PackingTuner(PT, lvl(2))
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ConfigError):
            t.record(bad)


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=12), st.integers(0, 4))
def test_tuner_terminates_and_returns_a_measured_packing(times, k):
    # on any sequence of times the search ends within depth + 2 iterations, the chosen
    # packing is one of those measured, and its time is the smallest among them
    t = PackingTuner(PT, lvl(k))
    measured = []
    for x in times:
        measured.append((t.current.tolist(), x))
        t.record(x)
    if len(times) >= 7:
        assert t.done
    if t.done:
        chosen = [x for r, x in measured if r == t.current.tolist()]
        assert chosen and min(chosen) == min(x for _, x in measured)


# -- LAWS §6.6 CPU-bound test --------------------------------------------------------------


def test_laws_cpu_bound_majority_of_tasks():
    # intensities 0, 0, 0 (inner tasks) and 0.05 x 3 (leaves): half CPU-bound is not "most"
    v = laws_cpu_bound([0, 0, 0, 50, 50, 50], [10, 10, 10, 1000, 1000, 1000])
    assert (v.cpu_bound, v.share, v.tasks) == (False, 0.5, 6)
    v = laws_cpu_bound([0, 0, 0, 50, 50], [10, 10, 10, 1000, 1000])
    assert v.cpu_bound and v.share == pytest.approx(0.6)
    # tasks without instructions are not judged; the threshold is a parameter
    v = laws_cpu_bound([0, 1, 1], [0, 100, 100], threshold=0.001)
    assert (v.cpu_bound, v.tasks) == (False, 2)
    assert laws_cpu_bound([0, 1, 1], [0, 100, 100], threshold=0.5).cpu_bound


def test_laws_cpu_bound_rejects_bad_input():
    with pytest.raises(ConfigError):
        laws_cpu_bound([1], [0])
    with pytest.raises(ConfigError):
        laws_cpu_bound([1, 2], [3])
    with pytest.raises(ConfigError):
        laws_cpu_bound([1], [3], threshold=-1)
