"""Task groups: the hierarchy of consecutive strands a fork/join DAG gives (PDF paper §6.1).

The PDF paper ([PDF07] §6.1) calls a set of tasks that are consecutive in the
serial execution a *task group*; the groups form a tree in which a parent is the union of its
children, siblings are disjoint, and the leaves are single tasks.  simsched builds that tree
from the trace tables alone (no reference is read), so the profiler knows it before its pass:

* **frame** — the subtree of one frame: strands ``first_strand .. last_strand`` of the frame
  (its own strands and all its descendants, contiguous in serial order);
* **phase** — the part of a frame between two syncs (a frame with one phase is not split);
  consecutive phases depend on each other;
* **split** — "a group containing K tasks is divided into two sub-groups containing ⌈K/2⌉ and
  ⌊K/2⌋ tasks" (§6.1): the K children a phase spawns are split in two recursively; a split
  group covers children ``C_i .. C_j`` and the frame's own (continuation) strands between
  them, so its range is ``C_i.first .. C_j.last``;
* **strand** — a leaf: one strand of a frame that is not a whole frame (the frame's own code
  between spawns and syncs).  A frame with a single strand is itself a leaf.

A node's children partition its strand range.  Each child has a *role* for coarsening (§6.2,
footnote 7, "for each independent set of children, we separately apply the criterion"):
``ROLE_PAR`` children form the node's one set of parallel siblings (the two halves of a split,
or the single child frame of a phase that spawns once), ``ROLE_SEQ`` children are the phases
of a frame, each an independent set of its own, and ``ROLE_GLUE`` children are the frame's own
strands around the spawns, which coarsening never picks.

Group ids are pre-order (a parent's id is smaller than its children's), which lets
per-group sums run bottom-up in one reverse sweep.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from simsched.errors import SimschedError, TraceFormatError
from simsched.profile import _kernels as K
from simsched.trace import EDGE_JOIN

if TYPE_CHECKING:
    from simsched.trace import Trace

KIND_FRAME = 0
KIND_PHASE = 1
KIND_SPLIT = 2
KIND_STRAND = 3
KIND_NAMES = ("frame", "phase", "split", "strand")

ROLE_ROOT = -1
ROLE_GLUE = 0
ROLE_PAR = 1
ROLE_SEQ = 2


@dataclass(frozen=True)
class GroupTree:
    """The task-group tree of one trace (arrays indexed by group id, pre-order).

    Attributes
    ----------
    start, stop
        First and last strand of each group (inclusive).
    parent
        Parent group (-1 for the root, group 0).
    depth
        Depth (the root is 0).
    kind
        ``KIND_FRAME``, ``KIND_PHASE``, ``KIND_SPLIT`` or ``KIND_STRAND``.
    role
        The group's role among its parent's children (``ROLE_*``).
    frame
        For a frame group the frame itself; otherwise the frame whose strands and children it
        partitions.
    phase
        Phase index within ``frame`` (-1 for frame groups that are a whole frame).
    child_lo, child_hi
        Spawn indices of the first and last child frame of ``frame`` that a phase or split
        group contains (-1 when it contains none); for a frame group, its own spawn index.
    child_offsets, children
        CSR lists of each group's children in serial order.
    leaf_of
        The leaf group of every strand.
    """

    start: np.ndarray
    stop: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    kind: np.ndarray
    role: np.ndarray
    frame: np.ndarray
    phase: np.ndarray
    child_lo: np.ndarray
    child_hi: np.ndarray
    child_offsets: np.ndarray
    children: np.ndarray
    leaf_of: np.ndarray

    def __len__(self) -> int:
        return int(self.start.shape[0])

    @property
    def n_strands(self) -> int:
        """Strands of the trace the tree was built for."""
        return int(self.leaf_of.shape[0])

    def children_of(self, g: int) -> np.ndarray:
        """Children of group ``g`` in serial order."""
        return self.children[self.child_offsets[g] : self.child_offsets[g + 1]]

    def is_leaf(self, g: int) -> bool:
        """Whether group ``g`` is a single strand."""
        return bool(self.child_offsets[g + 1] == self.child_offsets[g])

    def ancestors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Root-to-leaf chains of every strand, spelt out.

        Together they are as long as the sum of the strands' depths (quadratic in a
        recursion's depth), so the profiler does not build them: its kernels walk one chain
        at a time from ``parent`` and ``leaf_of``.

        Returns
        -------
        anc_offsets, anc_nodes, anc_starts
            CSR by strand: ``anc_nodes[anc_offsets[s]:anc_offsets[s+1]]`` are the groups that
            contain strand ``s`` from the root down to its leaf, and ``anc_starts`` their
            first strands (non-decreasing along each chain).
        """
        nd = self.depth[self.leaf_of] + 1
        off = np.zeros(self.n_strands + 1, np.int64)
        np.cumsum(nd, out=off[1:])
        nodes = np.empty(int(off[-1]), np.int64)
        K._ancestors(self.parent, self.depth, self.leaf_of, off, nodes)
        return off, nodes, self.start[nodes]

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The tree as named arrays (for saving in a profile)."""
        return {f"group_{k}": getattr(self, k) for k in _FIELDS}

    @classmethod
    def from_arrays(
        cls,
        arrays: dict[str, np.ndarray],
        source: str = "profile",
        error: type[SimschedError] = TraceFormatError,
    ) -> GroupTree:
        """Inverse of :meth:`as_arrays`, checking every invariant :func:`build_groups` keeps.

        The arrays come from a file, and the tree's indices are followed by compiled kernels
        (:meth:`ancestors`, the profiler's pass and per-group sums) that do not check
        bounds: a parent out of range would read and write outside the arrays.  So nothing
        of the tree is trusted before it is checked.

        Parameters
        ----------
        arrays
            The ``group_*`` arrays of :meth:`as_arrays` (other keys are ignored).
        source
            Name of the input, for error messages.
        error
            The error to raise (a profile's loader gives its own).

        Returns
        -------
        GroupTree

        Raises
        ------
        SimschedError
            ``error``: an array is missing, of another type or length, or the arrays do not
            form a pre-order tree whose children partition their parent's strands.
        """
        fields = {
            k: array_1d(
                arrays, f"group_{k}", np.int8 if k in ("kind", "role") else np.int64, source, error
            )
            for k in _FIELDS
        }
        tree = cls(**fields)
        check_tree(tree, source, error)
        return tree

    def label(self, g: int) -> str:
        """A short human-readable name: kind, frame, phase and child range."""
        k = KIND_NAMES[int(self.kind[g])]
        f = int(self.frame[g])
        if k == "frame":
            return f"frame {f}"
        if k == "strand":
            return f"strand {int(self.start[g])} of frame {f}"
        ph = f" phase {int(self.phase[g])}" if self.phase[g] >= 0 else ""
        return f"{k} of frame {f}{ph} children {int(self.child_lo[g])}-{int(self.child_hi[g])}"


_FIELDS = (
    "start",
    "stop",
    "parent",
    "depth",
    "kind",
    "role",
    "frame",
    "phase",
    "child_lo",
    "child_hi",
    "child_offsets",
    "children",
    "leaf_of",
)


def array_1d(
    arrays: dict[str, np.ndarray],
    key: str,
    dtype: type | np.dtype,
    source: str,
    error: type[SimschedError],
) -> np.ndarray:
    """``arrays[key]`` if it is a 1-D array of ``dtype``, else ``error`` naming ``source``
    (the one check of an array read from a file before the kernels use it)."""
    a = arrays.get(key)
    if not isinstance(a, np.ndarray) or a.dtype != np.dtype(dtype) or a.ndim != 1:
        raise error(f"{source}: array {key} is missing or not 1-D {np.dtype(dtype)}")
    return a


def check_tree(g: GroupTree, source: str, error: type[SimschedError]) -> None:
    """Raise ``error`` unless ``g`` is shaped as :func:`build_groups` makes it.

    The invariants: group 0 is the root (parent -1, depth 0, strands ``0 .. n-1``); every
    other group's parent comes before it (pre-order) and its depth is its parent's plus one,
    which makes every parent chain end at the root within ``depth`` steps; the CSR children
    lists hold every non-root group once, under its parent, in serial order, and partition
    the parent's strands; ``leaf_of`` maps every strand to the leaf group of that one strand.
    """
    ng = len(g)
    n = g.n_strands

    def bad(what: str) -> SimschedError:
        return error(f"{source}: corrupt group tree ({what})")

    if ng == 0 or n == 0:
        raise bad("no groups or no strands")
    for k in _FIELDS[:10]:
        if getattr(g, k).shape[0] != ng:
            raise bad(f"group_{k} has {getattr(g, k).shape[0]} entries for {ng} groups")
    co, ch = g.child_offsets, g.children
    if co.shape[0] != ng + 1 or ch.shape[0] != ng - 1:
        raise bad("child lists do not have one entry per non-root group")
    ids = np.arange(ng)
    par = g.parent
    if par[0] != -1 or g.depth[0] != 0 or g.start[0] != 0 or g.stop[0] != n - 1:
        raise bad("group 0 is not the root over every strand")
    if ((par[1:] < 0) | (par[1:] >= ids[1:])).any():
        raise bad("a parent does not precede its child")
    if (g.depth[1:] != g.depth[par[1:]] + 1).any():
        raise bad("a depth is not its parent's plus one")
    if ((g.start < 0) | (g.start > g.stop) | (g.stop >= n)).any():
        raise bad(f"a strand range is outside 0..{n - 1}")
    if co[0] != 0 or co[-1] != ng - 1 or (np.diff(co) < 0).any():
        raise bad("child offsets are not increasing from 0 to the number of children")
    if ((ch < 1) | (ch >= ng)).any() or (par[ch] != np.repeat(ids, np.diff(co))).any():
        raise bad("a child list disagrees with the parents")
    # Children in serial order and partitioning the parent: a child starts where its
    # predecessor stopped (or where the parent starts) and the last one ends with the parent.
    first = co[par[ch]] == np.arange(ng - 1)
    prev = np.concatenate(([0], g.stop[ch[:-1]] + 1))[: ng - 1]
    want_start = np.where(first, g.start[par[ch]], prev)
    has = np.diff(co) > 0
    if (g.start[ch] != want_start).any() or (g.stop[ch[co[1:][has] - 1]] != g.stop[has]).any():
        raise bad("children do not partition their parent's strands")
    leaf = g.leaf_of
    if ((leaf < 0) | (leaf >= ng)).any():
        raise bad("a strand's leaf group is out of range")
    strands = np.arange(n)
    if (g.start[leaf] != strands).any() or (g.stop[leaf] != strands).any() or (has[leaf]).any():
        raise bad("a strand's leaf group is not that strand alone")
    if ((g.kind < 0) | (g.kind >= len(KIND_NAMES))).any() or (
        (g.role < ROLE_ROOT) | (g.role > ROLE_SEQ)
    ).any():
        raise bad("a group kind or role is unknown")
    if (g.frame < 0).any():
        raise bad("a frame number is negative")
    # Only labels (:meth:`GroupTree.label`) and the coarsening table read these, yet a
    # damaged file printed them as they were (a phase of -7, a child range 9-2).
    if (g.phase < -1).any() or ((g.kind == KIND_FRAME) & (g.phase != -1)).any():
        raise bad("a phase number is below -1, or a whole frame's group has one")
    lo, hi = g.child_lo, g.child_hi
    if ((lo < -1) | ((lo == -1) != (hi == -1)) | (hi < lo)).any():
        raise bad("a child spawn-index range is neither -1 to -1 nor increasing")


class _Builder:
    """Accumulates groups in pre-order while walking the frame tree."""

    def __init__(self, n_strands: int):
        self.start: list[int] = []
        self.stop: list[int] = []
        self.parent: list[int] = []
        self.depth: list[int] = []
        self.kind: list[int] = []
        self.role: list[int] = []
        self.frame: list[int] = []
        self.phase: list[int] = []
        self.clo: list[int] = []
        self.chi: list[int] = []
        self.kids: list[list[int]] = []
        self.leaf_of = np.full(n_strands, -1, np.int64)

    def node(
        self,
        start: int,
        stop: int,
        parent: int,
        kind: int,
        role: int,
        frame: int,
        phase: int,
        clo: int,
        chi: int,
    ) -> int:
        g = len(self.start)
        self.start.append(start)
        self.stop.append(stop)
        self.parent.append(parent)
        self.depth.append(self.depth[parent] + 1 if parent >= 0 else 0)
        self.kind.append(kind)
        self.role.append(role)
        self.frame.append(frame)
        self.phase.append(phase)
        self.clo.append(clo)
        self.chi.append(chi)
        self.kids.append([])
        if parent >= 0:
            self.kids[parent].append(g)
        return g


def build_groups(trace: Trace | str | os.PathLike) -> GroupTree:
    """Build the task-group tree of a trace from its tables.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace` or a path to one (opened and closed here).

    Returns
    -------
    GroupTree
        Every frame, phase, split and strand group; group 0 is the whole program.
    """
    from simsched.trace.reader import opened_trace

    with opened_trace(trace) as t:
        return _build_groups(t)


def _build_groups(trace: Trace) -> GroupTree:
    """:func:`build_groups` of an open trace."""
    return build_groups_from_tables(
        strand_frame=trace.strands.frame,
        frame_parent=trace.frames.parent,
        frame_first=trace.frames.first_strand,
        frame_last=trace.frames.last_strand,
        frame_spawn_index=trace.frames.spawn_index,
        join_dst=trace.edges.dst[trace.edges.kind == EDGE_JOIN],
        source=str(getattr(trace, "path", "trace")),
    )


def build_groups_from_tables(
    *,
    strand_frame: np.ndarray,
    frame_parent: np.ndarray,
    frame_first: np.ndarray,
    frame_last: np.ndarray,
    frame_spawn_index: np.ndarray,
    join_dst: np.ndarray,
    source: str = "trace",
) -> GroupTree:
    """Build the task-group tree from the strand, frame and join-edge tables.

    Parameters
    ----------
    strand_frame
        Frame of every strand (strands in serial order).
    frame_parent, frame_first, frame_last, frame_spawn_index
        Per-frame parent, first and last strand, and spawn index.
    join_dst
        Destinations of the join edges (the post-sync strands).
    source
        Name of the input, for error messages.

    Returns
    -------
    GroupTree
    """
    n = int(strand_frame.shape[0])
    nf = int(frame_parent.shape[0])
    if n == 0 or nf == 0:
        raise TraceFormatError(f"{source}: the trace has no strands")
    post_sync = np.zeros(n, bool)
    post_sync[np.asarray(join_dst, np.int64)] = True
    # own strands of every frame (CSR), in serial order
    order = np.argsort(strand_frame, kind="stable")
    own_off = np.zeros(nf + 1, np.int64)
    np.cumsum(np.bincount(strand_frame, minlength=nf), out=own_off[1:])
    # child frames of every frame, in serial order (ids are spawn order)
    kids = np.arange(1, nf, dtype=np.int64)
    korder = kids[np.lexsort((frame_first[kids], frame_parent[kids]))]
    kid_off = np.zeros(nf + 1, np.int64)
    np.cumsum(np.bincount(frame_parent[kids], minlength=nf), out=kid_off[1:])

    b = _Builder(n)
    first = frame_first
    last = frame_last

    def items_of(f: int) -> list[tuple[int, int]]:
        """Own strands (as (s, -1)) and child frames (as (first, c)) in serial order."""
        own = order[own_off[f] : own_off[f + 1]]
        ch = korder[kid_off[f] : kid_off[f + 1]]
        out = [(int(s), -1) for s in own] + [(int(first[c]), int(c)) for c in ch]
        out.sort()
        return out

    def leaf(s: int, parent: int, role: int, f: int, phase: int) -> int:
        g = b.node(s, s, parent, KIND_STRAND, role, f, phase, -1, -1)
        b.leaf_of[s] = g
        return g

    # explicit work stack of pending calls — deep recursions stay off the Python stack
    stack: list[Callable[[], None]] = []

    def frame_node(f: int, parent: int, role: int) -> None:
        lo, hi = int(first[f]), int(last[f])
        si = int(frame_spawn_index[f]) if parent >= 0 else 0
        g = b.node(lo, hi, parent, KIND_FRAME, role, f, -1, si, si)
        items = items_of(f)
        if len(items) == 1:  # a single strand: the frame is a leaf
            b.leaf_of[lo] = g
            return
        phases: list[list[tuple[int, int]]] = [[]]
        for it in items:
            if it[1] < 0 and post_sync[it[0]] and phases[-1]:
                phases.append([])
            phases[-1].append(it)
        if len(phases) == 1:
            stack.append(partial(phase_content, phases[0], g, f, -1))
            return
        todo: list[Callable[[], None]] = []
        for p, ph in enumerate(phases):
            if len(ph) == 1 and ph[0][1] < 0:
                todo.append(partial(leaf_task, ph[0][0], g, ROLE_SEQ, f, p))
            else:
                todo.append(partial(phase_node, ph, g, f, p))
        stack.extend(reversed(todo))

    def leaf_task(s: int, parent: int, role: int, f: int, phase: int) -> None:
        leaf(s, parent, role, f, phase)

    def span(it: tuple[int, int]) -> tuple[int, int]:
        return (it[0], it[0]) if it[1] < 0 else (int(first[it[1]]), int(last[it[1]]))

    def phase_node(items: list[tuple[int, int]], parent: int, f: int, p: int) -> None:
        lo, hi = span(items[0])[0], span(items[-1])[1]
        cs = [c for _, c in items if c >= 0]
        clo = int(frame_spawn_index[cs[0]]) if cs else -1
        chi = int(frame_spawn_index[cs[-1]]) if cs else -1
        g = b.node(lo, hi, parent, KIND_PHASE, ROLE_SEQ, f, p, clo, chi)
        stack.append(partial(phase_content, items, g, f, p))

    def phase_content(items: list[tuple[int, int]], g: int, f: int, p: int) -> None:
        """Children of a phase (or of a one-phase frame): glue strands and the split tree."""
        pos = [i for i, (_, c) in enumerate(items) if c >= 0]
        todo: list[Callable[[], None]] = []
        if not pos:
            for s, _ in items:
                todo.append(partial(leaf_task, s, g, ROLE_GLUE, f, p))
        elif len(pos) == 1:
            for it in items:
                if it[1] >= 0:
                    todo.append(partial(frame_node, it[1], g, ROLE_PAR))
                else:
                    todo.append(partial(leaf_task, it[0], g, ROLE_GLUE, f, p))
        else:
            for i in range(pos[0]):
                todo.append(partial(leaf_task, items[i][0], g, ROLE_GLUE, f, p))
            todo.extend(halves(items, pos, g, f, p))
            for i in range(pos[-1] + 1, len(items)):
                todo.append(partial(leaf_task, items[i][0], g, ROLE_GLUE, f, p))
        stack.extend(reversed(todo))

    def halves(
        items: list[tuple[int, int]], pos: list[int], g: int, f: int, p: int
    ) -> list[Callable[[], None]]:
        """Split children ``pos`` (indices into items) into ⌈K/2⌉ and ⌊K/2⌋ (§6.1)."""
        k = len(pos)
        m = (k + 1) // 2
        todo: list[Callable[[], None]] = [partial(sub_split, items, pos[:m], g, f, p)]
        for i in range(pos[m - 1] + 1, pos[m]):
            todo.append(partial(leaf_task, items[i][0], g, ROLE_GLUE, f, p))
        todo.append(partial(sub_split, items, pos[m:], g, f, p))
        return todo

    def sub_split(
        items: list[tuple[int, int]], pos: list[int], parent: int, f: int, p: int
    ) -> None:
        if len(pos) == 1:
            frame_node(items[pos[0]][1], parent, ROLE_PAR)
            return
        c0, c1 = items[pos[0]][1], items[pos[-1]][1]
        g = b.node(
            int(first[c0]),
            int(last[c1]),
            parent,
            KIND_SPLIT,
            ROLE_PAR,
            f,
            p,
            int(frame_spawn_index[c0]),
            int(frame_spawn_index[c1]),
        )
        stack.extend(reversed(halves(items, pos, g, f, p)))

    frame_node(0, -1, ROLE_ROOT)
    while stack:
        stack.pop()()

    ng = len(b.start)
    child_off = np.zeros(ng + 1, np.int64)
    np.cumsum([len(k) for k in b.kids], out=child_off[1:])
    children = np.fromiter((c for k in b.kids for c in k), np.int64, count=int(child_off[-1]))
    tree = GroupTree(
        start=np.asarray(b.start, np.int64),
        stop=np.asarray(b.stop, np.int64),
        parent=np.asarray(b.parent, np.int64),
        depth=np.asarray(b.depth, np.int64),
        kind=np.asarray(b.kind, np.int8),
        role=np.asarray(b.role, np.int8),
        frame=np.asarray(b.frame, np.int64),
        phase=np.asarray(b.phase, np.int64),
        child_lo=np.asarray(b.clo, np.int64),
        child_hi=np.asarray(b.chi, np.int64),
        child_offsets=child_off,
        children=children,
        leaf_of=b.leaf_of,
    )
    if (tree.leaf_of < 0).any() or tree.start[0] != 0 or tree.stop[0] != n - 1:
        bad = int(np.flatnonzero(tree.leaf_of < 0)[0]) if (tree.leaf_of < 0).any() else 0
        raise TraceFormatError(
            f"{source}: frames and strands do not nest (strand {bad} is in no task group)"
        )
    return tree
