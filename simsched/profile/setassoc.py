"""SetAssoc: the straightforward working-set method the PDF paper compares LruTree with.

[PDF07] §6.1: "to obtain the working set size of a single task group, a
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

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.errors import ConfigError, shown
from simsched.params import check_int
from simsched.profile import _kernels as K
from simsched.profile.groups import GroupTree, build_groups

if TYPE_CHECKING:
    from simsched.trace import Trace


class _FullyAssociative:
    """Fully associative LRU caches of several capacities, one group at a time."""

    def __init__(self, caps: np.ndarray):
        self.caps = caps
        qcap = 2 * caps + 64
        self.qcap = qcap
        self.qoff = np.zeros(len(caps), np.int64)
        self.qoff[1:] = np.cumsum(qcap)[:-1]
        self.qslot = np.zeros(int(qcap.sum()), np.int64)
        self.qtime = np.zeros(int(qcap.sum()), np.int64)
        self.qhead = np.zeros(len(caps), np.int64)
        self.qtail = np.zeros(len(caps), np.int64)
        self.count = np.zeros(len(caps), np.int64)
        self.miss = np.zeros(len(caps), np.int64)
        hb = 10
        self.keys = np.full(1 << hb, K.EMPTY, np.uint64)
        self.kgen = np.zeros(1 << hb, np.int64)
        self.last = np.zeros(1 << hb, np.int64)
        self.res = np.zeros(1 << hb, np.uint64)
        self.sc = np.array([0, hb], np.int64)
        self.gen = 0
        self.t = 0

    def start(self) -> None:
        self.gen += 1
        self.t = 0
        self.sc[0] = 0
        for a in (self.qhead, self.qtail, self.count, self.miss):
            a[:] = 0

    def feed(self, lines: np.ndarray) -> None:
        pos = 0
        while pos < len(lines):
            pos = K._fa_step(
                lines, pos, self.t, self.gen, self.caps, self.keys, self.kgen, self.last,
                self.res, self.qslot, self.qtime, self.qoff, self.qcap, self.qhead, self.qtail,
                self.count, self.miss, self.sc,
            )  # fmt: skip
            if pos < len(lines):
                nb_ = int(self.sc[1]) + 1
                self.keys, self.kgen, self.last, self.res = K._fa_grow(
                    self.keys, self.kgen, self.last, self.res, self.gen, nb_,
                    self.qslot, self.qoff, self.qhead, self.qtail,
                )  # fmt: skip
                self.sc[1] = nb_
        self.t += len(lines)


class _SetAssociative:
    """Set-associative true-LRU caches of several capacities, one group at a time."""

    def __init__(self, caps: np.ndarray, assoc: int):
        self.nsets = caps // assoc
        self.assoc = np.full(len(caps), assoc, np.int64)
        self.set_off = np.zeros(len(caps), np.int64)
        self.set_off[1:] = np.cumsum(self.nsets)[:-1]
        self.way_off = self.set_off * assoc
        self.tags = np.full(int(caps.sum()), K.EMPTY, np.uint64)
        self.stamp = np.zeros(int(caps.sum()), np.int64)
        self.sgen = np.zeros(int(self.nsets.sum()), np.int64)
        self.miss = np.zeros(len(caps), np.int64)
        self.gen = 0
        self.t = 0

    def start(self) -> None:
        self.gen += 1
        self.t = 0
        self.miss[:] = 0

    def feed(self, lines: np.ndarray) -> None:
        K._sa_step(
            lines, self.t, self.gen, self.nsets, self.assoc, self.set_off, self.way_off,
            self.tags, self.stamp, self.sgen, self.miss,
        )  # fmt: skip
        self.t += len(lines)


def _model(caps: np.ndarray, assoc: int | None, what: str) -> _FullyAssociative | _SetAssociative:
    """The cache model of capacities ``caps`` (lines) and ``assoc`` ways (None: fully
    associative); ``what`` names the capacities' argument in messages."""
    if len(caps) == 0 or (caps < 1).any():
        raise ConfigError(f"{what}: no cache capacity given, or one of less than a line")
    if len(caps) > 64:
        raise ConfigError(f"{what}: {len(caps)} cache sizes; at most 64 at once")
    if assoc is None:
        return _FullyAssociative(caps)
    assoc = check_int("assoc", assoc, 1)
    if (caps % assoc).any():
        bad = [int(c) for c in caps if c % assoc]
        raise ConfigError(
            f"{what}: capacities {bad} lines are not a multiple of assoc={assoc} ways"
        )
    return _SetAssociative(caps, assoc)


def _check_capacities(capacities: Any) -> np.ndarray:
    """``capacities`` (a list of cache capacities in lines, each at least 1) as an int64
    array, else a one-line :class:`ConfigError` naming the argument or the item."""
    if isinstance(capacities, str | bytes) or not isinstance(capacities, Sequence | np.ndarray):
        raise ConfigError(
            f"capacities={shown(capacities)}: expected a list of cache capacities in lines"
        )
    caps = [check_int(f"capacities[{i}]", c, 1) for i, c in enumerate(capacities)]
    return np.asarray(caps, np.int64)


def _check_which(which: Any, ng: int) -> np.ndarray:
    """``which`` (None, or a boolean mask with one entry per group) as a bool array, else
    a one-line :class:`ConfigError`: an index array or a mask of another length was cast
    to bool and broadcast, and every group was replayed without a word."""
    if which is None:
        return np.ones(ng, bool)
    arr = np.asarray(which) if isinstance(which, Sequence | np.ndarray) else None
    if arr is None or isinstance(which, str | bytes) or (arr.size and arr.dtype != np.bool_):
        raise ConfigError(
            f"which={shown(which)}: expected a boolean mask with one entry per group "
            f"({ng} groups), not group numbers"
        )
    if arr.ndim != 1 or arr.shape[0] != ng:
        raise ConfigError(
            f"which: the mask has shape {arr.shape}, expected one entry per group ({ng},)"
        )
    return arr.astype(bool)


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
    if lo.shape != hi.shape:
        raise ConfigError(
            f"lo, hi: {lo.shape} and {hi.shape} bounds; expected one of each per group"
        )
    bad = np.flatnonzero((lo > hi) | (lo < 0) | (hi > len(lines)))
    if len(bad):
        g = int(bad[0])
        raise ConfigError(
            f"lo[{g}]={int(lo[g])}, hi[{g}]={int(hi[g])}: expected 0 <= lo <= hi <= "
            f"{len(lines)} (the accesses in lines)"
        )
    model = _model(_check_capacities(capacities), assoc, "capacities")
    out = np.zeros((len(lo), len(model.miss)), np.int64)
    for g in range(len(lo)):
        model.start()
        model.feed(lines[lo[g] : hi[g]])
        out[g] = model.miss
    return out


def setassoc_misses(
    trace: Trace | str | os.PathLike,
    *,
    sizes: Sequence[int],
    line: int,
    assoc: int | None = None,
    groups: GroupTree | None = None,
    which: np.ndarray | None = None,
) -> np.ndarray:
    """Misses of every task group at every size by replaying it from a cold cache.

    The trace is streamed once per depth of the group tree; within a pass the groups at
    that depth (disjoint, in serial order) are replayed one after the other, each chunk's
    accesses going straight into the caches (nothing but the cache state is kept).

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace` or a path to one (opened and closed here).
    sizes
        Cache sizes in bytes.
    line
        Line size in bytes (a power of two).
    assoc
        Ways per set; ``None`` for fully associative LRU.
    groups
        The task-group tree of this trace (built from the trace when omitted).
    which
        Boolean mask of the groups to replay, one entry per group (default: all); the
        others get ``-1``.

    Returns
    -------
    numpy.ndarray
        ``int64`` misses, shape ``(n_groups, len(sizes))``.
    """
    from simsched.profile.result import bucket_bounds, check_sizes
    from simsched.trace.reader import opened_trace

    caps = bucket_bounds(check_sizes(sizes), check_int("line", line, 1))
    shift = int(line).bit_length() - 1
    if groups is not None and not isinstance(groups, GroupTree):
        raise ConfigError(
            f"groups={shown(groups)}: expected a GroupTree (build_groups(trace)) or None"
        )
    model = _model(caps, assoc, "sizes")
    with opened_trace(trace) as t:
        return _setassoc_pass(t, caps, shift, model, groups, which)


def _setassoc_pass(
    trace: Trace,
    caps: np.ndarray,
    shift: int,
    model: _FullyAssociative | _SetAssociative,
    groups: GroupTree | None,
    which: Any,
) -> np.ndarray:
    """:func:`setassoc_misses` on an open trace, its arguments checked."""
    if groups is None:
        groups = build_groups(trace)
    rs = trace.strands.ref_start
    if groups.n_strands != len(rs) - 1:
        raise ConfigError(
            f"groups: the group tree is of another trace ({groups.n_strands} strands; "
            f"{getattr(trace, 'path', 'the trace')} has {len(rs) - 1})"
        )
    ng = len(groups)
    sel = _check_which(which, ng)
    out = np.full((ng, len(caps)), -1, np.int64)
    for d in range(int(groups.depth.max()) + 1):
        ids = np.flatnonzero((groups.depth == d) & sel)
        if len(ids) == 0:
            continue
        ids = ids[np.argsort(groups.start[ids], kind="stable")]
        r_lo = rs[groups.start[ids]]
        r_hi = rs[groups.stop[ids] + 1]
        k = 0
        started = False
        for c in trace.iter_chunks():
            pos, end = c.start, c.start + len(c)
            while k < len(ids):
                if not started:
                    model.start()
                    started = True
                if r_hi[k] <= pos:  # finished (or without references)
                    out[ids[k]] = model.miss
                    k += 1
                    started = False
                    continue
                if r_lo[k] >= end:
                    break
                a, b = max(int(r_lo[k]), pos) - c.start, min(int(r_hi[k]), end) - c.start
                model.feed(K._expand_lines(c.addr[a:b], c.size[a:b], shift))
                pos = b + c.start
                if pos < r_hi[k]:
                    break
            if k == len(ids):  # every group of this depth is done: stop reading
                break
        while k < len(ids):
            if not started:
                model.start()
            out[ids[k]] = model.miss
            k += 1
            started = False
    return out
