"""What an LruTree pass yields, and the profile of a trace made of it.

The cache sizes of interest as distance buckets (:func:`bucket_bounds`), the per-strand
histograms of one pass (:class:`StrandHistograms`), their sums for every task group at once
(:func:`group_hits`, Eq. (2) of :mod:`simsched.profile.lrutree`) and the :class:`Profile`
built from them, with its ``.npz`` file.  It stands apart from the pass because all of it
works on finished histograms: a profile read from a file is never streamed again, and the
coarsening and the plots that read one need none of the pass's state.  A profile file is
user input, checked here once (:meth:`Profile.load`) before the compiled per-group sums
follow its indices.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simsched.errors import ConfigError, SimschedError, TraceFormatError, shown, spelled
from simsched.files import (
    check_path,
    describe_os_error,
    parse_json,
    regular_file_kind,
    write_bytes_atomic,
)
from simsched.params import check_int, is_power_of_two
from simsched.profile import _kernels as K
from simsched.profile.groups import GroupTree, array_1d

PROFILE_VERSION = 2


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
            # asked before opening: np.load of a named pipe waited for a writer for good
            kind = regular_file_kind(path)
            if kind is not None:
                raise ConfigError(
                    f"{name}: is {kind}, expected the .npz file of `simsched profile -o`"
                )
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except ConfigError:
            raise
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
