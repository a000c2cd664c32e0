"""SetAssoc: the straightforward working-set method the PDF paper compares LruTree with.

003_e9659a8050adec3d.txt §6.1: "to obtain the working set size of a single task group, a
straightforward approach would be to generate the memory reference trace of the task group
and then perform trace-driven simulations of set-associative caches across a range of cache
sizes (starting with a cold cache).  We call this approach SetAssoc."  Because groups nest,
SetAssoc reads the trace once per level of the group tree: the groups at one depth are
disjoint, so one streaming pass over the trace replays all of them, each from a cold cache at
every size.

Two cache models, both true LRU, both Numba (:mod:`simsched.profile._kernels`):

* fully associative (``assoc=None``): the model LruTree's stack distances describe, so its
  misses must equal LruTree's exactly — the oracle of the profiler's tests;
* set-associative with ``assoc`` ways (``size / (line × assoc)`` sets, set = line mod sets):
  the caches the paper simulated; its misses differ from the fully associative ones by the
  conflict misses.

This module is also the timing baseline of ``benchmarks/bench_profile.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simsched.errors import SimschedError
from simsched.profile import _kernels as K
from simsched.profile.groups import GroupTree, build_groups


def replay_groups(
    lines: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    capacities: Sequence[int],
    assoc: int | None = None,
) -> np.ndarray:
    """Replay each access range ``lines[lo[g]:hi[g]]`` from a cold cache at every capacity.

    Parameters
    ----------
    lines
        Line addresses (``uint64``) in access order.
    lo, hi
        Bounds of each group's accesses.
    capacities
        Cache capacities in lines.
    assoc
        Ways per set; ``None`` for fully associative.

    Returns
    -------
    numpy.ndarray
        Misses, ``int64`` of shape ``(len(lo), len(capacities))``.
    """
    lines = np.ascontiguousarray(lines, np.uint64)
    lo = np.ascontiguousarray(lo, np.int64)
    hi = np.ascontiguousarray(hi, np.int64)
    cap = np.asarray(capacities, np.int64)
    if lo.shape != hi.shape or (lo > hi).any() or (lo < 0).any() or (hi > len(lines)).any():
        raise SimschedError("group access ranges are invalid")
    if len(cap) == 0 or (cap < 1).any():
        raise SimschedError("cache capacities must be at least one line")
    if len(cap) > 64:
        raise SimschedError("at most 64 cache sizes at once")
    out = np.zeros((len(lo), len(cap)), np.int64)
    if assoc is None:
        K._replay_fa(lines, lo, hi, cap, out)
    else:
        assoc = int(assoc)
        if assoc < 1 or (cap % assoc).any():
            bad = [int(c) for c in cap if c % assoc]
            raise SimschedError(f"capacities {bad} lines are not a multiple of {assoc} ways")
        ways = np.full(len(cap), assoc, np.int64)
        K._replay_sa(lines, lo, hi, cap // assoc, ways, out)
    return out


def setassoc_misses(
    trace,
    *,
    sizes: Sequence[int],
    line: int,
    assoc: int | None = None,
    groups: GroupTree | None = None,
    which: np.ndarray | None = None,
) -> np.ndarray:
    """Misses of every task group at every size by replaying it from a cold cache.

    The trace is streamed once per depth of the group tree; within a pass the groups at
    that depth (disjoint, in serial order) are replayed one after the other.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace`.
    sizes
        Cache sizes in bytes.
    line
        Line size in bytes (a power of two).
    assoc
        Ways per set; ``None`` for fully associative LRU.
    groups
        The task-group tree (built from the trace when omitted).
    which
        Boolean mask of the groups to replay (default: all); the others get ``-1``.

    Returns
    -------
    numpy.ndarray
        ``int64`` misses, shape ``(n_groups, len(sizes))``.
    """
    from simsched.profile.lrutree import bucket_bounds

    caps = bucket_bounds(sizes, line)
    shift = int(line).bit_length() - 1
    if groups is None:
        groups = build_groups(trace)
    ng = len(groups)
    sel = np.ones(ng, bool) if which is None else np.asarray(which, bool)
    out = np.full((ng, len(caps)), -1, np.int64)
    rs = trace.strands.ref_start
    for d in range(int(groups.depth.max()) + 1):
        ids = np.flatnonzero((groups.depth == d) & sel)
        if len(ids) == 0:
            continue
        ids = ids[np.argsort(groups.start[ids], kind="stable")]
        r_lo = rs[groups.start[ids]]
        r_hi = rs[groups.stop[ids] + 1]
        batch = _Batch(caps, assoc, out)
        k = 0
        for c in trace.iter_chunks():
            pos, end = c.start, c.start + len(c)
            while k < len(ids):
                if r_hi[k] <= pos:  # finished (or without references)
                    batch.close_group(ids[k])
                    k += 1
                    continue
                if r_lo[k] >= end:
                    break
                a, b = max(int(r_lo[k]), pos), min(int(r_hi[k]), end)
                batch.add(
                    K._expand_lines(
                        c.addr[a - c.start : b - c.start], c.size[a - c.start : b - c.start], shift
                    )
                )
                pos = b
                if b < r_hi[k]:
                    break
            # the trace is streamed once per depth; stop early when every group is done
            if k == len(ids):
                break
        while k < len(ids):
            batch.close_group(ids[k])
            k += 1
        batch.flush()
    return out


class _Batch:
    """Accesses of consecutive groups, replayed together once enough have accumulated."""

    LIMIT = 1 << 22

    def __init__(self, caps: np.ndarray, assoc: int | None, out: np.ndarray):
        self.caps, self.assoc, self.out = caps, assoc, out
        self.parts: list[np.ndarray] = []
        self.n = 0
        self.open_lo = 0
        self.ids: list[int] = []
        self.lo: list[int] = []
        self.hi: list[int] = []

    def add(self, lines: np.ndarray) -> None:
        self.parts.append(lines)
        self.n += len(lines)

    def close_group(self, g: int) -> None:
        self.ids.append(int(g))
        self.lo.append(self.open_lo)
        self.hi.append(self.n)
        self.open_lo = self.n
        if self.n >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        if self.ids:
            buf = np.concatenate(self.parts) if self.parts else np.empty(0, np.uint64)
            m = replay_groups(buf, np.asarray(self.lo), np.asarray(self.hi), self.caps, self.assoc)
            self.out[np.asarray(self.ids)] = m
        self.parts, self.n, self.open_lo = [], 0, 0
        self.ids, self.lo, self.hi = [], [], []
