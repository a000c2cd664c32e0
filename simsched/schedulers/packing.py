"""LAWS' adaptive DAG packer: SOSC (Eq. 2), CF roots (§3.3.1), Algorithm 1 (§3.3.2).

Design
------
Vectorised numpy over the frame arrays of a trace (frames are tasks; frames are numbered
parents before children, ``-1`` marks a root), plus one small state machine.  The ``laws``
and ``cats`` schedulers call them; nothing here knows the engine.

**SOSC, Eq. 2** ([LAWS15] §3.3.1).  In the first iteration LAWS counts the last-level
private-cache misses each task causes *itself* (its own strands, not its children's — that
is why the first iteration runs parent-first, §4), and estimates the shared cache a task
uses as those misses times the line size, ``M_alpha``.  The *size of shared cache used by
the subtree rooted at alpha* is, bottom-up,

    S_alpha = M_alpha + sum_{i=1..m} S_i            (Eq. 2, alpha's children 1..m).

:func:`sosc` evaluates it level by level, deepest first, with one ``np.add.at`` per level
(children's totals are final before they are added to their parents): on a complete
binary tree of 2**20 - 1 frames it took 0.18 s against 0.46 s for a per-frame Python loop
(one run on the shared development machine).  Integers throughout: the sums are exact.

**CF roots** ([LAWS15] §3.3.1).  With ``Sc`` the shared cache of a socket and ``beta`` the
parent of ``alpha``: ``alpha`` is a *CF root* if ``S_alpha <= Sc`` and ``S_beta > Sc``; it
is *socket-local* if ``S_beta < Sc``.  The paper leaves ``S_beta == Sc`` unassigned;
simsched reads it as socket-local, since ``beta`` then passes the CF-root test's first
condition itself and ``alpha`` lies inside ``beta``'s CF subtree.  A root frame (no parent)
that fits is a CF root (its "parent" is infinitely large); a frame that does not fit is in
the *free tier* (scheduled across sockets).  The tree is the profiled iteration's
(:func:`iteration_tree`): frames outside it have no misses and would all "fit".  Because Eq. 2 makes SOSC non-decreasing
towards the root, the classification needs only each frame's and its parent's SOSC
(:func:`classify_tasks`).  The packer works on the tasks allocated to one socket (§3.3);
a CF root above the level at which the allocator splits the data between sockets would
pack several sockets' data together, and the scheduler must cut there.  A packer without
that cut (CATS's) can find one CF root for the whole iteration; :func:`spread_roots` moves
the roots down until each socket has one in every group of procedures the iteration runs
at the same time ([CAB11] §III-B's first constraint).

**Algorithm 1** ([LAWS15] §3.3.2), line by line, as :class:`PackingTuner`: the initial
packing's time ``T`` starts it (line 1, ``Tc = T``); lines 3–9 move every CF root to its
children while that strictly improves the iteration time (``Tn < Tc``), saving each
improving packing and clearing ``EvalLarger``; if the first smaller packing did not
improve (``EvalLarger`` still set, line 10), lines 11–18 restore the initial roots, reset
``Tc = T`` and move every root to its parent while the time does not get worse (``Tn <= Tc``
saves and continues; ``Tn > Tc`` stops).  The output is the last saved packing (the initial
one if none was saved).  All CF subtrees grow or shrink together (§3.3.2, last paragraph).
Two readings the pseudo-code leaves open, decided here:

* "while CF root tasks have child tasks": the loop runs while *some* root has children;
  a root without children stays a root when the others move down (dropping it would put a
  leaf task in the free tier, which no packing size intends).  Likewise a root without a
  parent stays when the others move up.
* Moving up can make one root an ancestor of another (roots at uneven depths); the set
  keeps only the outermost, since a CF subtree contains its descendants.

The tuner is fed one iteration time at a time (:meth:`PackingTuner.record`) and answers the
roots to use in the next iteration.  It works on one template tree — in simsched the first
iteration's frames, with the iteration root's parent set to ``-1`` so that growing stops
there — and the scheduler maps template frames to the same tasks of later iterations by
their position keys ([LAWS15] §3.3: "the tasks in the same position of the execution DAGs
work on the same part of the dataset").

**CPU-bound programs** ([LAWS15] §6.6): a task whose cache miss intensity (misses per
instruction) is below a threshold is CPU-bound, and the program is CPU-bound if most tasks
are (:func:`laws_cpu_bound`; the threshold is the one CAB's rule uses,
:data:`simsched.schedulers.boundary.CPU_BOUND_MISS_INTENSITY`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.errors import ConfigError
from simsched.params import check_int, check_ints
from simsched.schedulers.boundary import (
    CPU_BOUND_MISS_INTENSITY,
    frame_arrays,
    miss_intensity,
)
from simsched.trace.structure import has_children

#: Task classes of :func:`classify_tasks`.
FREE = 0
CF_ROOT = 1
SOCKET_LOCAL = 2


def task_misses(strand_frame: Any, strand_misses: Any, n_frames: int) -> np.ndarray:
    """Misses each task (frame) caused itself: the sum over its own strands.

    Parameters
    ----------
    strand_frame
        Frame of every strand (the trace's ``strands.frame``).
    strand_misses
        Last-level private-cache misses of every strand (``on_profile``'s
        ``private_misses``; 0 for strands not profiled).
    n_frames
        Number of frames.

    Returns
    -------
    numpy.ndarray
        int64 misses per frame, the ``M_alpha / line size`` of [LAWS15] §3.3.1.
    """
    f = check_ints("strand frames", strand_frame)
    m = check_ints("strand misses", strand_misses)
    if f.shape != m.shape or f.ndim != 1:
        raise ConfigError(f"strand frames {f.shape} and misses {m.shape} differ in shape")
    if f.size and int(f.max()) >= n_frames:
        raise ConfigError(f"strand frame {int(f.max())} is out of range for {n_frames} frames")
    out = np.zeros(n_frames, dtype=np.int64)
    np.add.at(out, f, m)
    return out


def sosc(parent: Any, level: Any, misses: Any, line_size: int) -> np.ndarray:
    """Size of shared cache used by every task's subtree, [LAWS15] §3.3.1, Eq. 2.

    ``S_alpha = M_alpha + sum of S_child over alpha's children``, with
    ``M_alpha = misses[alpha] * line_size``.

    Parameters
    ----------
    parent
        Parent of every frame (-1 for a root; parents precede children).
    level
        Level of every frame (a child is one level below its parent).
    misses
        Last-level private-cache misses each frame caused itself (:func:`task_misses`).
    line_size
        Cache line size in bytes.

    Returns
    -------
    numpy.ndarray
        int64 SOSC in bytes per frame.

    Raises
    ------
    ConfigError
        Malformed arrays, negative misses, levels that do not follow the parents, or a
        line size that is not a positive integer.
    """
    p, lv, ms = frame_arrays(parent, level=level, misses=misses)
    line = check_int("line size", line_size, 1)
    lv = check_ints("frame levels", lv)
    s = check_ints("task misses", ms) * line
    child = np.flatnonzero(p >= 0)
    if np.any(lv[child] != lv[p[child]] + 1):
        raise ConfigError("frame levels do not follow the parents (child = parent + 1)")
    # deepest children first: a level's totals are final before they reach the next one up
    child = child[np.argsort(-lv[child], kind="stable")]
    bounds = np.flatnonzero(np.diff(lv[child])) + 1
    for grp in np.split(child, bounds):
        np.add.at(s, p[grp], s[grp])
    return s


def iteration_tree(parent: Any, iteration: Any, it: int) -> tuple[np.ndarray, np.ndarray]:
    """The frames of one iteration as a tree of their own (the packer's template).

    LAWS profiles the first iteration and packs the tasks of every later one the same way
    ([LAWS15] §3.3); SOSC, the CF roots and :class:`PackingTuner` work on that
    iteration's frames, cut from main so that no root grows past the iteration root.

    Parameters
    ----------
    parent
        Parent of every frame of the trace (-1 for main; parents precede children).
    iteration
        Iteration of every frame (the trace's ``frames.iteration``).
    it
        The iteration wanted.

    Returns
    -------
    frames : numpy.ndarray
        Trace frame numbers of the iteration, increasing.
    local_parent : numpy.ndarray
        Parent of each, as a position in ``frames``; -1 where the parent is outside the
        iteration.  Parents still precede children.
    """
    p, itr = frame_arrays(parent, iteration=iteration)
    frames = np.flatnonzero(itr == check_int("iteration", it, -1))
    local = np.full(p.shape[0] + 1, -1, dtype=np.int64)  # last slot: parent -1
    local[frames] = np.arange(frames.size)
    return frames, local[p[frames]]


def classify_tasks(sosc_bytes: Any, parent: Any, shared_cache: int) -> np.ndarray:
    """CF roots, socket-local tasks and free-tier tasks, [LAWS15] §3.3.1.

    Parameters
    ----------
    sosc_bytes
        SOSC of every frame (:func:`sosc`).
    parent
        Parent of every frame (-1 for a root).
    shared_cache
        Shared-cache size of a socket in bytes (``Sc``).

    Returns
    -------
    numpy.ndarray
        int8 per frame: :data:`CF_ROOT` (``S <= Sc`` and no parent or ``S_parent > Sc``),
        :data:`SOCKET_LOCAL` (``S_parent <= Sc``) or :data:`FREE` (the rest).
    """
    p, s = frame_arrays(parent, sosc=sosc_bytes)
    s = check_ints("SOSC", s)
    sc = check_int("shared cache", shared_cache, 1)
    fits = s <= sc
    has_p = p >= 0
    parent_fits = np.zeros_like(fits)
    parent_fits[has_p] = fits[p[has_p]]
    out = np.full(p.shape[0], FREE, dtype=np.int8)
    out[fits & ~parent_fits] = CF_ROOT
    out[parent_fits] = SOCKET_LOCAL
    return out


def cf_roots(sosc_bytes: Any, parent: Any, shared_cache: int) -> np.ndarray:
    """Frames that are CF roots in the initial packing, [LAWS15] §3.3.1.

    Parameters
    ----------
    sosc_bytes, parent, shared_cache
        As for :func:`classify_tasks`.

    Returns
    -------
    numpy.ndarray
        Sorted frame numbers of the CF roots (the input of :class:`PackingTuner`).
    """
    return np.flatnonzero(classify_tasks(sosc_bytes, parent, shared_cache) == CF_ROOT)


def _roots_to_children(parent: np.ndarray, has_child: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """Every root with children replaced by its children (a leaf root stays); sorted."""
    inset = np.zeros(parent.shape[0], dtype=bool)
    inset[roots] = True
    child_of_root = np.zeros_like(inset)
    has_p = parent >= 0
    child_of_root[has_p] = inset[parent[has_p]]
    keep = roots[~has_child[roots]]
    return np.union1d(keep, np.flatnonzero(child_of_root))


def _tree_tops(parent: np.ndarray) -> np.ndarray:
    """Per frame, the top frame of its tree (the frame itself where it has no parent)."""
    top = np.where(parent >= 0, parent, np.arange(parent.shape[0]))
    while True:  # pointer jumping: each pass halves every remaining path
        nxt = top[top]
        if np.array_equal(nxt, top):
            return top
        top = nxt


def spread_roots(parent: Any, roots: Any, at_least: int, together: Any = None) -> np.ndarray:
    """Move CF roots down until each procedure has ``at_least`` of them, [CAB11] §III-B.

    CAB's first constraint on a DAG's partition is "enough leaf inter-socket tasks to be
    distributed to the sockets" (Eq. 1, ``B**(BL-1) >= M``), and its §IV associates a
    boundary level "with each divide-and-conquer procedure".  A packing that is not cut
    per socket (CATS's) may find that a whole procedure fits one shared cache: one CF
    root, one socket at work.  The trees of the template are what an iteration spawns;
    those spawned before one sync run at the same time (``together``), and those after
    another sync after them (a SOR sweep's two half-sweeps).  So the roots are counted
    per group of trees that run together: in each group with too few, every root with
    children moves to its children (the move of Algorithm 1's lines 3-9) until the
    count is reached or only leaves are left.

    Parameters
    ----------
    parent
        Parent of every frame of the template tree (-1: none); parents precede children.
    roots
        Sorted CF roots, none an ancestor of another (:func:`cf_roots`).
    at_least
        The number of roots wanted in each group (the sockets), >= 1.
    together
        Per frame, an integer naming the group its tree runs in, read at each tree's top
        frame (trees whose tops carry the same value run at the same time); by default
        every tree is a group of its own.

    Returns
    -------
    numpy.ndarray
        The roots, sorted; ``roots`` itself when every group has enough.
    """
    (p,) = frame_arrays(parent)
    n = p.shape[0]
    r = check_ints("CF roots", roots).ravel()
    need = check_int("at_least", at_least, minimum=1)
    if r.size and r.max() >= n:
        raise ConfigError(f"CF roots must be frames 0..{n - 1}")
    top = _tree_tops(p)
    if together is None:
        group = top
    else:
        g = np.asarray(together)
        if g.shape != (n,) or not np.issubdtype(g.dtype, np.integer):
            raise ConfigError(f"together must be {n} integers, one per frame")
        _, group = np.unique(g[top], return_inverse=True)
    has_child = has_children(p)
    while r.size:
        short = np.bincount(group[r], minlength=n)[group[r]] < need
        move = short & has_child[r]
        if not move.any():
            return r
        r = np.union1d(r[~move], _roots_to_children(p, has_child, r[move]))
    return r


@dataclass(frozen=True)
class TuneStep:
    """One iteration seen by :class:`PackingTuner`.

    Attributes
    ----------
    move
        How the packing measured was made: ``"initial"``, ``"smaller"`` (roots moved to
        their children), ``"larger"`` (to their parents) or ``"final"`` (the chosen one).
    n_roots
        Number of CF roots of that packing.
    time
        The iteration time recorded for it.
    """

    move: str
    n_roots: int
    time: float


class PackingTuner:
    """Algorithm 1 of [LAWS15] §3.3.2: search the CF-root packing across iterations.

    Run an iteration with :attr:`current` as CF roots, then call :meth:`record` with its
    time; the answer is the packing for the next iteration.  After the search ends
    (:attr:`done`), :attr:`current` is the chosen packing for good.

    Parameters
    ----------
    parent
        Parent of every frame of the template tree (-1 where growing must stop, e.g. the
        iteration root); parents precede children.
    roots
        The initial CF roots ``alpha_1..alpha_m`` (:func:`cf_roots`); none may be an
        ancestor of another.

    Attributes
    ----------
    initial
        The initial roots.
    current
        Roots to use in the next iteration.
    best
        Last saved packing (Algorithm 1's "Save new CF root tasks").
    history
        One :class:`TuneStep` per recorded iteration.
    """

    def __init__(self, parent: Any, roots: Any) -> None:
        (self._parent,) = frame_arrays(parent)
        n = self._parent.shape[0]
        r = check_ints("CF roots", roots).ravel()
        if r.size == 0:
            raise ConfigError("Algorithm 1 needs at least one CF root")
        if np.any(r >= n):
            raise ConfigError(f"CF root {int(r.max())} is out of range for {n} frames")
        r = np.unique(r)
        if self._nested(r).any():
            raise ConfigError("CF roots must not contain one another (one is an ancestor)")
        self._has_child = has_children(self._parent)
        self.initial = r
        self.current = r
        self.best = r
        self.history: list[TuneStep] = []
        self._phase = "initial"
        self._T = 0.0
        self._tc = 0.0
        self._eval_larger = True

    @property
    def done(self) -> bool:
        """Whether the search has ended (the packing no longer changes)."""
        return self._phase == "done"

    @property
    def move(self) -> str:
        """How :attr:`current` was made: ``"initial"``, ``"smaller"``, ``"larger"`` or
        ``"final"`` (the search has ended)."""
        return "final" if self._phase == "done" else self._phase

    # -- moves ------------------------------------------------------------------------
    def _nested(self, r: np.ndarray) -> np.ndarray:
        """Mask of roots that have another root as a proper ancestor."""
        inset = np.zeros(self._parent.shape[0], dtype=bool)
        inset[r] = True
        covered = np.zeros(r.shape[0], dtype=bool)
        anc = self._parent[r]
        while True:
            live = anc >= 0
            if not live.any():
                return covered
            covered[live] |= inset[anc[live]]
            anc = np.where(live, self._parent[np.maximum(anc, 0)], -1)

    def _can_shrink(self, r: np.ndarray) -> bool:
        return bool(self._has_child[r].any())

    def _can_grow(self, r: np.ndarray) -> bool:
        return bool((self._parent[r] >= 0).any())

    def _smaller(self, r: np.ndarray) -> np.ndarray:
        return _roots_to_children(self._parent, self._has_child, r)

    def _larger(self, r: np.ndarray) -> np.ndarray:
        """Every root replaced by its parent (a root without one stays), outermost only."""
        up = self._parent[r]
        up = np.unique(np.where(up >= 0, up, r))
        return up[~self._nested(up)]

    # -- Algorithm 1 ----------------------------------------------------------------
    def _finish(self) -> None:
        self._phase = "done"
        self.current = self.best

    def _start_larger(self) -> None:
        # lines 10-14: restore the initial roots, Tc = T, first move up
        self._tc = self._T
        if self._can_grow(self.initial):
            self.current = self._larger(self.initial)
            self._phase = "larger"
        else:
            self._finish()

    def record(self, time: float) -> np.ndarray:
        """Record the time of the iteration just run under :attr:`current`.

        Parameters
        ----------
        time
            The iteration's execution time (cycles; any unit, the same for every call).

        Returns
        -------
        numpy.ndarray
            Sorted CF roots for the next iteration (:attr:`current`).

        Raises
        ------
        ConfigError
            ``time`` is not a finite non-negative number.
        """
        t = float(time)
        if not np.isfinite(t) or t < 0:
            raise ConfigError(f"iteration time {time!r} must be finite and >= 0")
        phase = self._phase
        self.history.append(
            TuneStep(phase if phase != "done" else "final", int(self.current.size), t)
        )
        if phase == "initial":  # line 1: Tc = T; line 3: first move down
            self._T = self._tc = t
            if self._can_shrink(self.current):
                self.current = self._smaller(self.current)
                self._phase = "smaller"
            else:
                self._start_larger()
        elif phase == "smaller":  # lines 6-9
            if t < self._tc:
                self._tc = t
                self.best = self.current
                self._eval_larger = False
                if self._can_shrink(self.current):
                    self.current = self._smaller(self.current)
                else:
                    self._finish()
            elif self._eval_larger:
                self._start_larger()
            else:
                self._finish()
        elif phase == "larger":  # lines 16-18
            if t > self._tc:
                self._finish()
            else:
                self._tc = t
                self.best = self.current
                if self._can_grow(self.current):
                    self.current = self._larger(self.current)
                else:
                    self._finish()
        return self.current


@dataclass(frozen=True)
class CpuBoundVerdict:
    """Result of :func:`laws_cpu_bound`.

    Attributes
    ----------
    cpu_bound
        More than half of the tasks with instructions are CPU-bound.
    share
        Fraction of those tasks whose miss intensity is below the threshold.
    tasks
        Number of tasks with at least one instruction (the ones judged).
    threshold
        The threshold used, misses per instruction.
    """

    cpu_bound: bool
    share: float
    tasks: int
    threshold: float


def laws_cpu_bound(
    misses: Any, instructions: Any, threshold: float = CPU_BOUND_MISS_INTENSITY
) -> CpuBoundVerdict:
    """LAWS' CPU-bound test, [LAWS15] §6.6.

    A task whose cache miss intensity (misses per instruction) is below ``threshold`` is
    CPU-bound; the program is CPU-bound if most tasks are (strictly more than half of the
    tasks that executed at least one instruction — a task with none has no intensity).
    Counted per task, as the paper says: in a divide-and-conquer DAG the inner tasks only
    spawn and so count as CPU-bound, and a binary recursion has one more leaf than inner
    tasks, so a memory-bound program wins only by its leaves' majority.

    Parameters
    ----------
    misses
        Last-level private-cache misses of every task (first iteration).
    instructions
        Instructions of every task.
    threshold
        Misses per instruction below which a task is CPU-bound.

    Returns
    -------
    CpuBoundVerdict

    Raises
    ------
    ConfigError
        Malformed counts, a non-positive threshold, or no task with instructions.
    """
    m = check_ints("task misses", misses)
    n = check_ints("task instructions", instructions)
    if m.shape != n.shape or m.ndim != 1:
        raise ConfigError(f"task misses {m.shape} and instructions {n.shape} differ in shape")
    t = float(threshold)
    if not np.isfinite(t) or t <= 0:
        raise ConfigError(f"CPU-bound threshold {threshold!r} must be finite and > 0")
    judged = n > 0
    if not judged.any():
        raise ConfigError("no task executed an instruction; LAWS' CPU-bound test needs some")
    below = miss_intensity(m[judged], n[judged]) < t
    k = int(judged.sum())
    return CpuBoundVerdict(bool(2 * int(below.sum()) > k), float(below.mean()), k, t)
