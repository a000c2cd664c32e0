"""LruTree: the one-pass working-set profiler of the PDF paper ([PDF07] §6.1).

One pass over the trace simulates an LRU stack (fully associative LRU, in cache lines).  For
every access of strand ``i`` to line ``L`` it yields ``L``'s stack distance ``d`` (position
from the top, 1 = most recently used) and the *previous-ID* ``j``, the strand that touched
``L`` last, and counts the access in strand ``i``'s two-dimensional histogram at
``(distance bucket p, task-id-distance bucket)`` where ``D_{p-1} < d <= D_p`` (§6.1).  The
distance buckets ``D_1 < ... < D_k`` are the cache sizes of interest in lines (default: powers
of two from 16 KB to 64 MB) plus a last bucket for ``d > D_k``; accesses with no previous
access (``j`` undefined) are counted per strand as *cold*.

Task-id-distance buckets
------------------------
The paper buckets ``T = i - j`` and reads a group ``[b, e]``'s hits at size ``D_p`` as

    hits(b..e, D_p) = Σ_{i=b..e} Σ_{D <= D_p, T <= i - b} H_i(D, T).                    (§6.1)

Only the groups of the task-group tree are ever asked for, and the groups that contain strand
``i`` form a chain root ⊇ … ⊇ leaf with first strands ``a_0 <= a_1 <= … <= a_m = i``.  So the
only thresholds ``i - b`` that matter for strand ``i`` are ``i - a_l``, and simsched uses them
as strand ``i``'s task-id-distance bucket bounds: the access falls in bucket ``l`` when
``i - a_{l+1} < T <= i - a_l``, i.e. ``l`` is the depth of the deepest group that holds both
``i`` and ``j``.  ``T <= i - b`` for the group at depth ``δ`` is then ``l >= δ``, and the paper's
sum is exact — not an approximation by coarse ``T`` buckets — with ``m + 1`` buckets per strand.

Why the result is exact: a group is a run of consecutive strands and the trace is in serial
order, so when the previous access of ``L`` lies inside the group every access between the two
lies inside it too, and the global stack distance equals the distance in a cold-cache replay
of the group alone.  An access whose previous access lies before the group (``l < δ``) or that
has none is a compulsory miss of the group at every size.  Hence, for a group ``g`` with
``A_g`` line accesses,

    misses(g, D_p) = A_g - Σ_{i in g} Σ_{l >= depth(g)} Σ_{q <= p} H_i(q, l)             (2)

which the tests check against the SetAssoc baseline (:mod:`simsched.profile.setassoc`) and a
pure-Python oracle at every size.  A group's footprint (distinct lines) is ``A_g`` minus the
accesses whose previous access lies in the group at any distance, and the working set the
coarsening rule uses (§6.2) is that footprint in bytes (the paper's footnote 5: sorting ``n``
bytes has a working set of ``2n``, its data).

A reference that straddles a line boundary accesses every line it touches, as the memory
model does; misses and accesses count line accesses.

Memory: the hash table costs 16 bytes a slot at a load between 0.35 and 0.7, and the tree a
bit per time slot plus 4 bytes per 64 slots with between 2 and 4 slots per line, so the steady
state is at most 16/0.35 + 0.75 ≈ 47 bytes per distinct line, plus the histograms (the chunk being processed is
the only other large array).  See :mod:`simsched.profile._kernels` for the tree and its
compaction.

Depth: the pass holds one strand's chain at a time (``m + 1`` levels, entered group by group
as the strands go by) and a scratch histogram of ``levels × buckets`` cells, and the
per-group sums (:func:`~simsched.profile.result.group_hits`) walk the chains the same way and
add each group into its parent in one reverse sweep over the pre-order ids.  So a recursion
costs time and memory linear in its depth; only the 16-bit level ids of the histograms bound
it (:data:`MAX_LEVELS`).

This module holds the pass: :class:`LruTree`, the validating face of the Numba kernels of
:mod:`simsched.profile._kernels`, and :func:`profile_trace`, which runs it over a trace.
What a pass yields (the bucket bounds, the per-strand histograms, Eq. (2) for every group,
the :class:`~simsched.profile.result.Profile` and its file) is
:mod:`simsched.profile.result`'s, whose names are importable from here too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from simsched.errors import ConfigError, SimschedError, shown, spelled
from simsched.identity import version
from simsched.params import check_callable, check_int, check_line_size
from simsched.profile import _kernels as K
from simsched.profile.groups import GroupTree, build_groups, check_tree
from simsched.profile.result import (  # noqa: F401 - the profile's names, kept importable here
    PROFILE_VERSION,
    Profile,
    ProfileFormatError,
    StrandHistograms,
    _check_line,
    bucket_bounds,
    check_sizes,
    from_histograms,
    group_hits,
)

if TYPE_CHECKING:
    from simsched.machine import Machine
    from simsched.trace import Trace

#: most group levels a strand's chain may have (the histograms' level ids are int16)
MAX_LEVELS = (1 << 15) - 1
DEFAULT_SIZES: tuple[int, ...] = tuple(16 * 1024 << i for i in range(13))  # 16 KB .. 64 MB


class LruTree:
    """Streaming LruTree state: feed references chunk by chunk, then :meth:`finish`.

    Parameters
    ----------
    bounds
        Distance bucket bounds in lines (:func:`bucket_bounds`).
    line
        Line size in bytes (a power of two).
    ref_start
        Strand ``s`` owns references ``[ref_start[s], ref_start[s+1])``; default: one strand
        holding every reference.
    groups
        The task-group tree (:func:`build_groups`): the groups that contain a strand, from the
        root down to the strand itself, are its chain.
    anc_offsets, anc_starts
        Instead of ``groups``, every strand's chain spelt out: the first strands of the groups
        that contain it from the root down to the strand itself (:meth:`GroupTree.ancestors`),
        in which a group is known by its depth and first strand.  Default (neither given):
        the strand alone.

    Examples
    --------
    >>> import numpy as np
    >>> lt = LruTree(np.array([2, 4]), line=64)
    >>> lt.feed(np.array([0, 64, 128, 0], np.uint64), np.full(4, 8, np.uint8), 0)
    >>> h = lt.finish()
    >>> int(h.cold[0]), h.bucket.tolist(), h.count.tolist()   # line 0 again at distance 3
    (3, [1], [1])
    """

    def __init__(
        self,
        bounds: np.ndarray,
        *,
        line: int,
        ref_start: np.ndarray | None = None,
        anc_offsets: np.ndarray | None = None,
        anc_starts: np.ndarray | None = None,
        groups: GroupTree | None = None,
        hash_bits: int = 16,
        time_slots: int = 1 << 16,
    ):
        bounds = np.ascontiguousarray(bounds, np.int64)
        if (
            bounds.ndim != 1
            or len(bounds) == 0
            or (bounds < 1).any()
            or (np.diff(bounds) <= 0).any()
        ):
            raise ConfigError(
                "bounds: distance bucket bounds must be positive and strictly increasing"
            )
        line = _check_line(line)
        if ref_start is None:
            ref_start = np.array([0, np.iinfo(np.int64).max], np.int64)
        ref_start = np.ascontiguousarray(ref_start, np.int64)
        ns = len(ref_start) - 1
        if ns < 1 or (np.diff(ref_start) < 0).any() or ref_start[0] != 0:
            raise ConfigError("ref_start: must start at 0 and be non-decreasing")
        if ns >= 1 << 31:
            raise SimschedError(f"{ns} strands do not fit the profiler's 32-bit strand ids")
        if groups is not None:
            if anc_offsets is not None or anc_starts is not None:
                raise ConfigError(
                    "groups, anc_offsets, anc_starts: give the group tree or the ancestor "
                    "chains, not both"
                )
            if not isinstance(groups, GroupTree):
                raise ConfigError(
                    f"groups={shown(groups)}: expected a GroupTree (build_groups(trace)) or None"
                )
            if groups.n_strands != ns:
                raise ConfigError(
                    f"groups: the group tree has {groups.n_strands} strands, ref_start {ns}"
                )
            check_tree(groups, "groups", ConfigError)
            tree = (groups.parent, groups.depth, groups.start, groups.leaf_of)
        else:
            if anc_offsets is None and anc_starts is None:
                anc_offsets = np.arange(ns + 1, dtype=np.int64)
                anc_starts = np.arange(ns, dtype=np.int64)
            elif anc_offsets is None or anc_starts is None:
                raise ConfigError("anc_offsets, anc_starts: give both or neither")
            tree = _chain_tree(anc_offsets, anc_starts, ns)
        parent, gdepth, gstart, leaf_of = (np.ascontiguousarray(a, np.int64) for a in tree)
        self._max_depth = int(gdepth[leaf_of].max()) + 1
        if self._max_depth > MAX_LEVELS or len(bounds) > MAX_LEVELS:
            raise SimschedError("group tree too deep for the profiler's 16-bit level ids")
        self.bounds = bounds
        self.line = line
        self.shift = line.bit_length() - 1
        self._ref_start = ref_start
        self._tree = (parent, gdepth, gstart, leaf_of)
        # the current strand's chain (group ids and first strands, root first) and the levels
        # of its scratch histogram that hold counts
        self._chain = (np.zeros(self._max_depth, np.int64), np.zeros(self._max_depth, np.int64))
        self._lv_mark = np.zeros(self._max_depth, np.int8)
        self._lv_list = np.zeros(self._max_depth, np.int64)
        hb = max(4, int(hash_bits))
        self._keys = np.full(1 << hb, K.EMPTY, np.uint64)
        self._ltime = np.zeros(1 << hb, np.int32)
        self._lstrand = np.zeros(1 << hb, np.int32)
        cap = 1 << max(6, int(time_slots - 1).bit_length())  # a power of two, >= 64
        self._bits = np.zeros(cap >> 6, np.uint64)
        self._bfen = np.zeros((cap >> 6) + 1, np.int32)
        self._st = np.zeros(K.ST_SIZE, np.int64)
        self._st[K.ST_CAP] = cap
        self._win_line = np.full(K.WIN, K.EMPTY, np.uint64)
        self._win_slot = np.zeros(K.WIN, np.int64)
        self._st[K.ST_HBITS] = hb
        self._st[K.ST_MAXOCC] = int(0.7 * (1 << hb))
        self._scratch = np.zeros((self._max_depth, len(bounds) + 1), np.int64)
        self._acc = np.zeros(ns, np.int64)
        self._cold = np.zeros(ns, np.int64)
        coo = 1 << 12
        # COO histogram columns: strand, level, bucket, count
        self._coo: list[np.ndarray] = [
            np.zeros(coo, np.int64),
            np.zeros(coo, np.int16),
            np.zeros(coo, np.int16),
            np.zeros(coo, np.int64),
        ]
        self._next = 0
        self._done = False

    # -- state management -------------------------------------------------------------
    def _compact(self) -> None:
        st = self._st
        nlines = int(st[K.ST_NLINES])
        marks = nlines - int(st[K.ST_WN])
        old = int(st[K.ST_CAP])
        new = max(old, 1 << int(2 * nlines + 64 - 1).bit_length())
        if new >= 1 << 31:
            raise SimschedError("more distinct lines than the profiler's 32-bit clock can order")
        self._bits, self._bfen = K._compact(self._keys, self._ltime, old, marks, new)
        st[K.ST_CAP] = new
        st[K.ST_NOW] = marks

    def _grow(self) -> None:
        st = self._st
        hb = int(st[K.ST_HBITS]) + 1
        keys = np.full(1 << hb, K.EMPTY, np.uint64)
        ltime = np.zeros(1 << hb, np.int32)
        lstrand = np.zeros(1 << hb, np.int32)
        K._rehash(
            self._keys,
            self._ltime,
            self._lstrand,
            keys,
            ltime,
            lstrand,
            hb,
            self._win_slot,
            int(st[K.ST_WN]),
        )
        self._keys, self._ltime, self._lstrand = keys, ltime, lstrand
        st[K.ST_HBITS] = hb
        st[K.ST_MAXOCC] = int(0.7 * (1 << hb))

    def _grow_coo(self) -> None:
        n = len(self._coo[0])
        need = int(self._st[K.ST_NLV]) * (len(self.bounds) + 1)
        new = max(2 * n, n + need)
        self._coo = [np.concatenate([a, np.zeros(new - n, a.dtype)]) for a in self._coo]

    # -- public -----------------------------------------------------------------------
    def feed(self, addr: np.ndarray, size: np.ndarray, start: int) -> None:
        """Process the next chunk of references.

        Parameters
        ----------
        addr, size
            Byte addresses (``uint64``) and sizes in bytes (``uint8``, 1..255) of consecutive
            references.
        start
            Global index of the first reference; chunks must come in order without gaps.
        """
        if self._done:
            raise SimschedError("LruTree.feed() after finish()")
        start = check_int("start", start)
        if start != self._next:
            raise ConfigError(f"start={start}: the chunk must start at reference {self._next}")
        addr, size = np.asarray(addr), np.asarray(size)
        if addr.shape != size.shape or addr.ndim != 1:
            raise ConfigError("addr, size: expected 1-D arrays of the same length")
        # Checked before the casts below, which would wrap a size of 300 to 44, a negative
        # address to a huge one, and truncate a float without a word.
        for name, a in (("addr", addr), ("size", size)):
            if len(a) and a.dtype.kind not in "iu":
                raise ConfigError(f"{name}: reference {name}s must be integers, not {a.dtype}")
        if len(size) and (int(size.min()) < 1 or int(size.max()) > 255):
            raise ConfigError("size: reference sizes must be at least 1 byte and at most 255")
        if len(addr) and addr.dtype.kind == "i" and int(addr.min()) < 0:
            raise ConfigError(f"addr: reference {int(np.argmin(addr))} has a negative address")
        addr = np.ascontiguousarray(addr, np.uint64)
        size = np.ascontiguousarray(size, np.uint8)
        # A reference whose last byte passes 2**64 wraps to line 0: the kernel took it for a
        # negative number of lines and dropped it, counting no access.
        past = addr > np.uint64(2**64 - 1) - (size.astype(np.uint64) - np.uint64(1))
        if past.any():
            raise ConfigError(f"addr: reference {int(np.argmax(past))}: its bytes pass 2**64")
        if self._next + len(addr) > self._ref_start[-1]:
            raise ConfigError("addr: more references than the strands own (ref_start)")
        pos = 0
        c = self._coo
        while True:
            pos, status = K._lrutree_run(
                addr,
                size,
                self._next,
                pos,
                self.shift,
                self._ref_start,
                self._keys,
                self._ltime,
                self._lstrand,
                self._bits,
                self._bfen,
                self._st,
                self._win_line,
                self._win_slot,
                self.bounds,
                *self._tree,
                *self._chain,
                self._scratch,
                self._lv_mark,
                self._lv_list,
                self._acc,
                self._cold,
                c[0],
                c[1],
                c[2],
                c[3],
            )
            if status == K.DONE:
                break
            if status == K.NEED_COMPACT:
                self._compact()
            elif status == K.NEED_GROW:
                self._grow()
            else:
                self._grow_coo()
                c = self._coo
        self._next += len(addr)

    @property
    def distinct_lines(self) -> int:
        """Lines seen so far."""
        return int(self._st[K.ST_NLINES])

    @property
    def state_bytes(self) -> int:
        """Bytes held by the hash table and the Fenwick tree."""
        arrays = (self._keys, self._ltime, self._lstrand, self._bits, self._bfen)
        return int(sum(a.nbytes for a in arrays))

    def finish(self) -> StrandHistograms:
        """Flush the last strand and return the histograms."""
        if not self._done:
            if self._st[K.ST_NLV]:
                need = int(self._st[K.ST_NLV]) * (len(self.bounds) + 1)
                if self._st[K.ST_COO_N] + need > len(self._coo[0]):
                    self._grow_coo()
                c = self._coo
                K._flush(
                    self._st, self._scratch, self._lv_mark, self._lv_list, c[0], c[1], c[2], c[3]
                )
            self._done = True
        n = int(self._st[K.ST_COO_N])
        c = self._coo
        return StrandHistograms(
            accesses=self._acc,
            cold=self._cold,
            strand=c[0][:n].copy(),
            level=c[1][:n].copy(),
            bucket=c[2][:n].copy(),
            count=c[3][:n].copy(),
            distinct_lines=self.distinct_lines,
            state_bytes=self.state_bytes,
        )


def _chain_tree(
    anc_offsets: np.ndarray, anc_starts: np.ndarray, ns: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tree (parent, depth, first strand and the leaf of every strand) that the strands'
    root-to-leaf chains spell out, a group being known by its depth and first strand."""
    off = np.ascontiguousarray(anc_offsets, np.int64)
    starts = np.ascontiguousarray(anc_starts, np.int64)
    if len(off) != ns + 1 or off[0] != 0 or off[-1] != len(starts):
        raise ConfigError("anc_offsets: the ancestor chains do not match the strands")
    depth = np.diff(off)
    if (depth < 1).any() or (starts[off[1:] - 1] != np.arange(ns)).any():
        raise ConfigError("anc_starts: every strand's ancestor chain must end with the strand")
    if ((starts < 0) | (starts >= ns)).any():
        raise ConfigError("anc_starts: an ancestor chain names a strand that does not exist")
    entry = np.arange(len(starts))
    level = entry - np.repeat(off[:-1], depth)
    key, node = np.unique(level * ns + starts, return_inverse=True)
    up = np.where(level > 0, node[entry - 1], -1)
    parent = np.full(len(key), -1, np.int64)
    parent[node] = up
    if (parent[node] != up).any():
        raise ConfigError(
            "anc_starts: the ancestor chains do not form a tree (a group has two parents)"
        )
    return parent, key // ns, key % ns, node[off[1:] - 1]


def profile_trace(
    trace: Trace | str | os.PathLike,
    *,
    sizes: Sequence[int] | None = None,
    line: int | None = None,
    machine: str | Path | Machine | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Profile:
    """Run LruTree over a trace, streaming it chunk by chunk, and evaluate every task group.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace` or a path to one.
    sizes
        Cache sizes of interest in bytes (default :data:`DEFAULT_SIZES`, 16 KB … 64 MB).
    line
        Line size in bytes, a power of two from 4 to 65536 (default: ``machine``'s, else
        the trace's ``line_size_hint``).
    machine
        Take the line size from this machine's outermost cache, as ``simsched profile
        --machine`` does: a preset name, a machine file or a
        :class:`~simsched.machine.Machine` (:func:`simsched.machine.load_machine`); not
        with ``line``.
    progress
        Called with (references done, references total) after each chunk.

    Returns
    -------
    Profile

    Raises
    ------
    ConfigError
        The line size (given, the machine's or the trace's hint) is not a power of two from
        4 to 65536 bytes, ``line`` and ``machine`` are both given, the machine cannot be
        loaded, or the sizes are not increasing cache sizes that are whole numbers of lines.
        All of it before the trace is read.
    """
    from simsched.trace.reader import opened_trace

    # first: the size every other check divides by (the command line's --line too)
    if line is not None:
        line = check_line_size(line, spelled(f"line={shown(line)}", f"--line {line}"))
        line_from = spelled(f"line={line}", f"--line {line}")
    default_sizes = sizes is None
    if sizes is None:
        sizes = list(DEFAULT_SIZES)
    else:
        sizes = check_sizes(sizes)
        if not sizes:  # an empty list is a mistake, not a request for the default sizes
            raise ConfigError("sizes=[]: give at least one cache size (None: the default sizes)")
    check_callable(progress, "progress")
    if machine is not None:
        if line is not None:
            # alternatives: the line won and the machine, even a misspelt one, was ignored
            raise ConfigError(
                spelled("line and machine", "--line and --machine")
                + " both give the line size: give one of them"
            )
        line, line_from = _machine_line(machine)
    with opened_trace(trace) as t:
        h = t.header
        if line is None:
            line_from = f"{t.path}: its line size hint {h.line_size_hint}"
            line = check_line_size(h.line_size_hint, line_from)
        try:
            bounds = bucket_bounds(sizes, line)
        except ConfigError as exc:
            if not default_sizes:
                # bucket_bounds says "sizes: " itself to a Python caller, nothing to the
                # command line's, whose option is --sizes
                raise ConfigError(spelled("", "--sizes: ") + str(exc)) from None
            if "smaller than" not in str(exc):
                raise
            # the sizes are the defaults: the line is what the caller chose
            raise ConfigError(
                f"{line_from}: {str(exc).removeprefix('sizes: ')} (the smallest default size; "
                + spelled("give sizes=[...])", "choose sizes with --sizes)")
            ) from None
        groups = build_groups(t)
        levels = int(groups.depth.max()) + 1
        if levels > MAX_LEVELS:
            # before anything is sized by the depth (the level ids would not fit)
            raise SimschedError(
                f"{t.path}: its task-group tree is {levels} levels deep (a recursion about "
                f"{levels // 2} frames deep); the profiler handles up to {MAX_LEVELS} levels"
            )
        lt = LruTree(bounds, line=line, ref_start=t.strands.ref_start, groups=groups)
        for c in t.iter_chunks():
            lt.feed(c.addr, c.size, c.start)
            if progress is not None:
                progress(c.start + len(c), h.n_refs)
        hist = lt.finish()
        meta = {
            "format": "simsched-profile",
            "version": PROFILE_VERSION,
            "simsched": version(),
            "trace": Path(str(t.path)).name,
            "digest": h.digest,
            "program": h.program,
            "args": list(h.args),
            "line": line,
            "sizes": sizes,
            "bounds_lines": [int(x) for x in bounds],
            "refs": int(h.n_refs),
            "strands": int(h.n_strands),
            "distinct_lines": hist.distinct_lines,
            "state_bytes": hist.state_bytes,
        }
        frames = {
            "iteration": np.asarray(t.frames.iteration, np.int64),
            "parent": np.asarray(t.frames.parent, np.int64),
            "spawn_index": np.asarray(t.frames.spawn_index, np.int64),
        }
        return from_histograms(meta, groups, hist, frames)


def _machine_line(machine: str | Path | Machine) -> tuple[int, str]:
    """The line size of ``machine``'s outermost cache (:func:`profile_trace`), and how a
    message names where it came from."""
    from simsched.machine import load_machine

    m = load_machine(machine)
    level = m.caches[-1]
    if isinstance(machine, str | os.PathLike):
        said = spelled(f"machine={os.fspath(machine)!r}", f"--machine {machine}")
    else:
        said = f"machine {m.name!r}"
    line = check_line_size(level.line, f"{said} ({level.name} line {level.line})")
    return line, said
