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
per-group sums (:func:`group_hits`) walk the chains the same way and add each group into its
parent in one reverse sweep over the pre-order ids.  So a recursion costs time and memory
linear in its depth; only the 16-bit level ids of the histograms bound it
(:data:`MAX_LEVELS`).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.errors import ConfigError, SimschedError, TraceFormatError, shown, spelled
from simsched.files import check_path, describe_os_error, parse_json, write_bytes_atomic
from simsched.identity import version
from simsched.params import check_callable, check_int, check_line_size, is_power_of_two
from simsched.profile import _kernels as K
from simsched.profile.groups import GroupTree, array_1d, build_groups, check_tree

if TYPE_CHECKING:
    from simsched.machine import Machine
    from simsched.trace import Trace

PROFILE_VERSION = 2
#: most group levels a strand's chain may have (the histograms' level ids are int16)
MAX_LEVELS = (1 << 15) - 1
DEFAULT_SIZES: tuple[int, ...] = tuple(16 * 1024 << i for i in range(13))  # 16 KB .. 64 MB


def _check_line(line: Any) -> int:
    """``line`` as a line size in bytes, any power of two (the profiler's own functions;
    the command line and :func:`profile_trace` hold it to 4..65536, ``check_line_size``)."""
    line = check_int("line", line, -(2**63))  # 0 and below: not a power of two, as 48
    if not is_power_of_two(line):
        raise ConfigError(f"line={line}: a line size is a power of two")
    return line


def check_sizes(sizes: Any) -> list[int]:
    """``sizes`` (cache sizes in bytes, each an integer from 1 to the machine model's
    largest size) as a list, else a one-line :class:`ConfigError` naming the item."""
    from simsched.machine.schema import MAX_SIZE

    if isinstance(sizes, str | bytes) or not isinstance(sizes, Sequence | np.ndarray):
        raise ConfigError(f"sizes={sizes!r}: expected a list of cache sizes in bytes")
    out = []
    for i, s in enumerate(sizes):
        try:
            out.append(check_int(f"sizes[{i}]", s, 1, MAX_SIZE))
        except ConfigError as exc:
            # simsched profile --sizes hands its parsed list here: say it of the option
            cli = f"--sizes: {shown(s)} is not a cache size (1 byte to 2^40)"
            raise ConfigError(spelled(str(exc), cli)) from None
    return out


class ProfileFormatError(SimschedError):
    """A profile file is missing, corrupt, of another version or does not fit its trace."""


def bucket_bounds(sizes: Sequence[int], line: int) -> np.ndarray:
    """Distance bucket bounds ``D_1 < … < D_k`` in lines for cache sizes in bytes.

    Parameters
    ----------
    sizes
        Cache sizes of interest in bytes, strictly increasing.
    line
        Line size in bytes (a power of two).

    Returns
    -------
    numpy.ndarray
        ``int64`` capacities in lines (``size // line``).

    Raises
    ------
    ConfigError
        If the line size is not a power of two, a size is smaller than a line or not a
        whole number of lines, or the sizes are not strictly increasing.
    """
    line = _check_line(line)
    sizes = check_sizes(sizes)
    if len(sizes) == 0:
        raise ConfigError("sizes=[]: no cache sizes given")
    # `simsched profile` names its option (--sizes, --line) in front of these itself
    named = spelled("sizes: ", "")
    b = np.asarray([int(s) // line for s in sizes], np.int64)
    if (b < 1).any():
        raise ConfigError(
            f"{named}cache size {min(sizes)} bytes is smaller than a {line}-byte line"
        )
    for s in sizes:
        if int(s) % line:
            # a cache holds whole lines: the size would be cut down to one silently while the
            # output still names the size asked for
            raise ConfigError(
                f"{named}cache size {int(s)} bytes is not a whole number of {line}-byte lines"
            )
    if (np.diff(b) <= 0).any():
        raise ConfigError(f"{named}cache sizes {list(sizes)} are not strictly increasing in lines")
    return b


@dataclass(frozen=True)
class StrandHistograms:
    """What one LruTree pass produces.

    Attributes
    ----------
    accesses, cold
        Line accesses of every strand, and those without a previous access.
    strand, level, bucket, count
        The per-strand 2-D histograms as COO entries: ``count`` accesses of ``strand`` in
        task-id-distance bucket ``level`` and distance bucket ``bucket`` (``len(bounds)`` is
        the bucket beyond the largest size).  Sorted by strand.
    distinct_lines
        Lines touched by the whole stream.
    state_bytes
        Bytes of the profiler state (hash table and tree) at the end.
    """

    accesses: np.ndarray
    cold: np.ndarray
    strand: np.ndarray
    level: np.ndarray
    bucket: np.ndarray
    count: np.ndarray
    distinct_lines: int
    state_bytes: int


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


def _cells_out_of_range(
    groups: GroupTree, strand: np.ndarray, level: np.ndarray, bucket: np.ndarray, nsizes: int
) -> bool:
    """Whether a histogram cell names no strand, a level below its strand's leaf (a cell's
    level indexes the strand's root-to-leaf chain) or a bucket beyond the one past the sizes."""
    n = groups.n_strands
    return bool(
        len(strand)
        and (
            ((strand < 0) | (strand >= n)).any()
            or (
                (level < 0) | (level > groups.depth[groups.leaf_of[np.clip(strand, 0, n - 1)]])
            ).any()
            or ((bucket < 0) | (bucket > nsizes)).any()
        )
    )


def group_hits(
    groups: GroupTree, hist: StrandHistograms, nsizes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evaluate Eq. (2) for every group at once.

    Each histogram cell of strand ``i`` at level ``l`` belongs to the group at depth ``l`` on
    ``i``'s chain (the deepest group holding both ends of the reuse); a group's hits are the
    sum over its subtree of those cells, accumulated bottom-up in one reverse sweep.  The
    chains are walked one strand after the other (``_kernels._group_sums``), never stored
    whole, so the cost is linear in the groups and cells, not in the sum of the strands'
    depths.

    Parameters
    ----------
    groups
        The task-group tree the histograms were collected for.
    hist
        LruTree output.
    nsizes
        Number of cache sizes (distance buckets are ``nsizes + 1``).

    Returns
    -------
    accesses, reuse, hits
        Per group: line accesses, accesses whose previous access lies in the group (at any
        distance), and hits at every size (``int64``, shape ``(n_groups, nsizes)``).
    """
    ng = len(groups)
    strand = np.ascontiguousarray(hist.strand, np.int64)
    level = np.ascontiguousarray(hist.level, np.int64)
    bucket = np.ascontiguousarray(hist.bucket, np.int64)
    count = np.ascontiguousarray(hist.count, np.int64)
    if not len(strand) == len(level) == len(bucket) == len(count):
        raise ProfileFormatError("histogram columns differ in length")
    if _cells_out_of_range(groups, strand, level, bucket, nsizes):
        raise ProfileFormatError("profile histogram entries are out of range")
    if (groups.parent[1:] >= np.arange(1, ng)).any():
        raise ProfileFormatError("group ids are not in pre-order")  # the sweep needs it
    e = np.zeros((ng, nsizes + 1), np.int64)
    parent, depth, start, leaf_of = (
        np.ascontiguousarray(a, np.int64)
        for a in (groups.parent, groups.depth, groups.start, groups.leaf_of)
    )
    K._group_sums(parent, depth, start, leaf_of, strand, level, bucket, count, e)
    c = np.cumsum(e, axis=1)
    cum = np.zeros(groups.n_strands + 1, np.int64)
    np.cumsum(hist.accesses, out=cum[1:])
    acc = cum[groups.stop + 1] - cum[groups.start]
    return acc, c[:, -1].copy(), c[:, :nsizes].copy()


@dataclass
class Profile:
    """The result of profiling one trace: histograms, groups and per-group miss curves.

    Attributes
    ----------
    meta
        JSON-able description: trace file name and digest, program, line size, cache sizes,
        counts.
    groups
        The task-group tree.
    hist
        The per-strand 2-D histograms.
    accesses, reuse, hits
        Per-group results of :func:`group_hits`.
    frames
        The trace's frame iterations, parents and spawn indices (``iteration``, ``parent``,
        ``spawn_index``), to name groups by position key in a parallelization table.
    """

    meta: dict[str, Any]
    groups: GroupTree
    hist: StrandHistograms
    accesses: np.ndarray = field(repr=False)
    reuse: np.ndarray = field(repr=False)
    hits: np.ndarray = field(repr=False)
    frames: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def frame_key(self, f: int) -> tuple[int, ...]:
        """Position key of frame ``f`` (its spawn indices from the iteration root)."""
        from simsched.trace.format import position_key

        if not self.frames:
            return ()
        return position_key(self.frames["parent"], self.frames["spawn_index"], f)

    @property
    def sizes(self) -> np.ndarray:
        """Cache sizes of interest in bytes."""
        return np.asarray(self.meta["sizes"], np.int64)

    @property
    def line(self) -> int:
        """Line size in bytes."""
        return int(self.meta["line"])

    @property
    def misses(self) -> np.ndarray:
        """Misses of every group at every size from a cold cache (Eq. 2), ``(groups, sizes)``."""
        return self.accesses[:, None] - self.hits

    @property
    def footprint_lines(self) -> np.ndarray:
        """Distinct lines each group touches."""
        return self.accesses - self.reuse

    @property
    def working_set_bytes(self) -> np.ndarray:
        """Working set of each group (its footprint in bytes, §6.2 with footnote 5)."""
        return self.footprint_lines * self.line

    def program_misses(self) -> dict[str, Any]:
        """The whole program's misses per cache size (group 0, from a cold cache)."""
        m = self.misses[0]
        return {
            "trace": self.meta["trace"],
            "digest": self.meta["digest"],
            "line": self.line,
            "accesses": int(self.accesses[0]),
            "footprint_lines": int(self.footprint_lines[0]),
            "groups": len(self.groups),
            "sizes": [int(s) for s in self.sizes],
            "misses": {str(int(s)): int(x) for s, x in zip(self.sizes, m, strict=True)},
            "miss_ratio": {
                str(int(s)): (float(x) / float(self.accesses[0]) if self.accesses[0] else 0.0)
                for s, x in zip(self.sizes, m, strict=True)
            },
        }

    # -- files ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the profile as one ``.npz`` file (no pickled objects), atomically.

        The JSON metadata is stored as a ``uint8`` array named ``meta_json``; the group tree,
        per-strand counts and COO histograms as plain numeric arrays.  Per-group results are
        recomputed on load (they are cheap), which keeps the file self-consistent.
        """
        path = check_path(path, "path")
        arrays: dict[str, np.ndarray] = {
            "meta_json": np.frombuffer(json.dumps(self.meta).encode(), np.uint8),
            "strand_accesses": self.hist.accesses,
            "strand_cold": self.hist.cold,
            "hist_strand": self.hist.strand,
            "hist_level": self.hist.level,
            "hist_bucket": self.hist.bucket,
            "hist_count": self.hist.count,
        }
        arrays.update(self.groups.as_arrays())
        arrays.update({f"frame_{k}": v for k, v in self.frames.items()})
        buf = io.BytesIO()
        np.savez_compressed(buf, allow_pickle=False, **arrays)
        write_bytes_atomic(path, buf.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Profile:
        """Read a profile written by :meth:`save`, checking all of it.

        A profile is user input: every array's type and length, the group tree's indices
        (which the compiled kernels follow without bounds checks), the histogram cells and
        the metadata are checked here, once, before anything uses them.

        Parameters
        ----------
        path
            The ``.npz`` file of ``simsched profile -o``.

        Returns
        -------
        Profile

        Raises
        ------
        ProfileFormatError
            If the file is not a readable, self-consistent simsched profile of this version
            (the message names ``path``).
        """
        name = str(check_path(path, "path"))
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except FileNotFoundError:
            raise ConfigError(f"{name}: no such file") from None
        except IsADirectoryError:
            raise ConfigError(
                f"{name}: is a folder, expected the .npz file of `simsched profile -o`"
            ) from None
        except PermissionError as exc:
            raise ConfigError(f"{name}: cannot read ({describe_os_error(exc)})") from None
        except Exception:
            # numpy's own message suggests allow_pickle=True: never advise loading such data.
            raise ProfileFormatError(
                f"{name}: not a simsched profile (expected the .npz file of `simsched profile -o`)"
            ) from None
        meta = _check_meta(name, arrays)
        groups = GroupTree.from_arrays(arrays, name, ProfileFormatError)
        hist = _check_histograms(name, arrays, groups, meta)
        frames = _check_frames(name, arrays, groups)
        return from_histograms(meta, groups, hist, frames)


# Every array of a profile and its dtype as :meth:`Profile.save` writes it (the COO level
# and bucket columns are the kernels' int16).
_HIST_DTYPES = {
    "strand_accesses": np.int64,
    "strand_cold": np.int64,
    "hist_strand": np.int64,
    "hist_level": np.int16,
    "hist_bucket": np.int16,
    "hist_count": np.int64,
}
_FRAME_KEYS = ("iteration", "parent", "spawn_index")


def _array(name: str, arrays: dict[str, np.ndarray], key: str, dtype: Any) -> np.ndarray:
    """``arrays[key]`` if it is a 1-D array of ``dtype``, else a :class:`ProfileFormatError`."""
    return array_1d(arrays, key, dtype, name, ProfileFormatError)


def _check_meta(name: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Decode and check the JSON metadata of a profile file: an object with its keys typed."""
    meta = parse_json(
        _array(name, arrays, "meta_json", np.uint8).tobytes(),
        f"{name}: profile metadata",
        ProfileFormatError,
    )
    if not isinstance(meta, dict):
        raise ProfileFormatError(f"{name}: profile metadata is not a JSON object")
    if meta.get("format") != "simsched-profile" or meta.get("version") != PROFILE_VERSION:
        raise ProfileFormatError(
            f"{name}: profile format {meta.get('format')!r} version "
            f"{meta.get('version')!r}, expected simsched-profile {PROFILE_VERSION}"
        )
    for key, typ in (("trace", str), ("digest", str), ("line", int), ("sizes", list)):
        if not isinstance(meta.get(key), typ) or isinstance(meta.get(key), bool):
            raise ProfileFormatError(
                f"{name}: profile metadata {key!r} is missing or not a JSON {typ.__name__}"
            )
    for key in ("strands", "distinct_lines", "state_bytes"):
        v = meta.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ProfileFormatError(f"{name}: profile metadata {key!r} is missing or not a count")
    sizes = meta["sizes"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in sizes):
        raise ProfileFormatError(f"{name}: profile metadata 'sizes' is not a list of integers")
    try:
        bucket_bounds(sizes, meta["line"])
    except SimschedError as exc:
        raise ProfileFormatError(f"{name}: profile metadata: {exc}") from None
    return meta


def _check_histograms(
    name: str, arrays: dict[str, np.ndarray], groups: GroupTree, meta: dict[str, Any]
) -> StrandHistograms:
    """Check a profile's histograms against its (checked) group tree and cache sizes."""
    a = {k: _array(name, arrays, k, dt) for k, dt in _HIST_DTYPES.items()}
    n = groups.n_strands
    if meta["strands"] != n:
        raise ProfileFormatError(
            f"{name}: profile metadata says {meta['strands']} strands, the group tree {n}"
        )
    if len(a["strand_accesses"]) != n or len(a["strand_cold"]) != n:
        raise ProfileFormatError(f"{name}: per-strand counts are not one per strand ({n})")
    cold, acc = a["strand_cold"], a["strand_accesses"]
    if (cold < 0).any() or (cold > acc).any():  # a negative cold count used to load
        raise ProfileFormatError(f"{name}: per-strand access counts are inconsistent")
    m = len(a["hist_strand"])
    if any(len(a[k]) != m for k in ("hist_level", "hist_bucket", "hist_count")):
        raise ProfileFormatError(f"{name}: histogram columns differ in length")
    st, lv, bk = a["hist_strand"], a["hist_level"], a["hist_bucket"]
    # group_hits indexes with a cell's level and bucket
    if _cells_out_of_range(groups, st, lv, bk, len(meta["sizes"])) or (a["hist_count"] < 0).any():
        raise ProfileFormatError(f"{name}: profile histogram entries are out of range")
    # Every access that is not cold lands in one cell of its strand: more hits than that
    # gave negative misses.
    hits = np.bincount(st, weights=a["hist_count"], minlength=n)
    if (hits > acc - cold).any():
        raise ProfileFormatError(f"{name}: a strand's histogram holds more hits than accesses")
    return StrandHistograms(
        accesses=a["strand_accesses"],
        cold=a["strand_cold"],
        strand=st,
        level=lv,
        bucket=bk,
        count=a["hist_count"],
        distinct_lines=meta["distinct_lines"],
        state_bytes=meta["state_bytes"],
    )


def _check_frames(
    name: str, arrays: dict[str, np.ndarray], groups: GroupTree
) -> dict[str, np.ndarray]:
    """The optional frame arrays (all three or none), consistent with the groups' frames."""
    present = [k for k in _FRAME_KEYS if f"frame_{k}" in arrays]
    if not present:
        return {}
    f = {k: _array(name, arrays, f"frame_{k}", np.int64) for k in _FRAME_KEYS}
    nf = len(f["iteration"])
    par, si = f["parent"], f["spawn_index"]
    ids = np.arange(nf)
    if (
        len(par) != nf
        or len(si) != nf
        or (nf and par[0] != -1)
        or ((par[1:] < 0) | (par[1:] >= ids[1:])).any()
        or (si < 0).any()
    ):
        # position_key walks up the parents: each must precede its child, ending at main
        raise ProfileFormatError(f"{name}: frame parents and spawn indices are inconsistent")
    if nf:
        from simsched.trace.structure import check_frame_keys

        # the coarsening table names groups by iteration and position key: the rules
        # the trace's frames followed (a spawn index of 2^62, an iteration of -2, ...
        # were written into the table as they were)
        try:
            check_frame_keys(name, par, si, f["iteration"])
        except TraceFormatError as exc:
            raise ProfileFormatError(f"{exc} (profile frame arrays)") from None
    if (groups.frame >= nf).any():
        raise ProfileFormatError(f"{name}: a group's frame is not one of the {nf} frames")
    return f


def from_histograms(
    meta: dict[str, Any],
    groups: GroupTree,
    hist: StrandHistograms,
    frames: dict[str, np.ndarray] | None = None,
) -> Profile:
    """Assemble a :class:`Profile` (computing the per-group results) from its parts."""
    nsizes = len(meta["sizes"])
    if len(hist.accesses) != groups.n_strands:
        raise ProfileFormatError("profile histograms and group tree disagree on the strands")
    acc, reuse, hits = group_hits(groups, hist, nsizes)
    return Profile(
        meta=meta,
        groups=groups,
        hist=hist,
        accesses=acc,
        reuse=reuse,
        hits=hits,
        frames=dict(frames or {}),
    )


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
