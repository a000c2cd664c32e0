"""Automatic task coarsening and the parallelization table (PDF paper §6.2).

[PDF07] §6.2: "The automatic task coarsening algorithm traverses the task
group tree from top to bottom and evaluates a heuristic stop criterion at every node.  Suppose
node G's working set size is W, and it has K child task groups of similar sizes.  We stop at
G's children if

    W <= K × (cachesize / (numcores × 2))                                              (3)

... For each independent set of children, we separately apply the criterion" (footnote 7).

simsched applies Eq. (3) on the task-group tree of :mod:`simsched.profile.groups`:

* the parallel children of a node (the two halves of a split, or the single child frame of a
  phase that spawns once) form one independent set with ``K`` = its size and ``W`` = the
  node's working set;
* each phase of a frame with several phases is an independent set of its own (``K = 1``,
  ``W`` = the phase's working set): phases run one after the other;
* the frame's own strands around its spawns (glue) are never chosen.

When Eq. (3) holds, every child of the set becomes one sequential task (it is *chosen*: the
traversal does not enter it); otherwise the traversal visits each child.  ``W`` is the group's
footprint in bytes from the profile (the working set of footnote 5), ``cachesize`` the size of
the machine's outermost cache level (or the level named) and ``numcores`` the number of cores
sharing one instance of it (the cores of a socket for a per-socket cache, 1 for a private
one).  ``factor`` scales the right-hand side (1.0 is the paper's rule).

The result is the paper's parallelization table (Fig. 7b) for one machine: one row per chosen
group that has more than one strand (a chosen single strand needs no change), with the
machine, the cache, the group's position (frame position key and iteration, the child range
of a split, the strand range) and the threshold that decided it.  It is written as CSV and is
what ``simsched regrain`` reads.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.errors import ConfigError, SimschedError, shown, spelled
from simsched.files import check_path, read_user_text, write_text_atomic
from simsched.profile.groups import KIND_NAMES, KIND_PHASE, ROLE_PAR, ROLE_SEQ, GroupTree
from simsched.profile.result import Profile

if TYPE_CHECKING:
    from simsched.machine import Machine

TABLE_COLUMNS = (
    "machine",
    "cache",
    "cache_bytes",
    "cores",
    "factor",
    "trace_digest",
    "group",
    "kind",
    "frame",
    "iteration",
    "frame_key",
    "phase",
    "child_lo",
    "child_hi",
    "first_strand",
    "last_strand",
    "depth",
    "siblings",
    "working_set_bytes",
    "threshold_bytes",
)


@dataclass(frozen=True)
class CacheShare:
    """The cache Eq. (3) divides and the cores that share it."""

    name: str
    size: int
    cores: int
    line: int = 0  #: line size in bytes (0: not known)


def cache_share(machine: Machine, level: str | None = None) -> CacheShare:
    """The cache level Eq. (3) uses: the outermost one, or the one named ``level``.

    Parameters
    ----------
    machine
        A :class:`simsched.machine.Machine`.
    level
        Cache level name (e.g. ``"L2"``); default the last level.

    Returns
    -------
    CacheShare
    """
    from simsched.machine.loader import check_machine

    check_machine(machine, reads=("name", "caches", "cores_per_socket"))
    if level is not None and not isinstance(level, str):
        raise ConfigError(f"level={level!r}: expected a cache level name such as 'L2'")
    caches = machine.caches
    if level is None:
        c = caches[-1]
    else:
        found = [c for c in caches if c.name == level]
        if not found:
            names = ", ".join(c.name for c in caches)
            raise ConfigError(f"machine {machine.name} has no cache level {level!r} ({names})")
        c = found[0]
    cores = machine.cores_per_socket if c.scope == "socket" else 1
    return CacheShare(c.name, int(c.size), int(cores), int(getattr(c, "line", 0) or 0))


@dataclass
class CoarsenResult:
    """Groups chosen by :func:`coarsen`.

    Attributes
    ----------
    chosen
        Ids of every chosen group (single strands included), in serial order.
    rows
        The parallelization table: one dict per chosen group with more than one strand.
    tasks
        Number of tasks (strands) the coarse program has, as
        :func:`simsched.profile.regrain_from_table` writes it: chosen groups plus the strands
        outside them, less the strands after a chosen phase (its sync no longer splits the
        frame's strand).
    """

    chosen: np.ndarray
    rows: list[dict[str, Any]]
    tasks: int


#: Largest ``factor`` (as ``coarsen -K`` takes it): a threshold of a million caches.
MAX_FACTOR = 1e6


def coarsen(
    profile: Profile,
    machine: Machine,
    *,
    factor: float = 1.0,
    level: str | None = None,
) -> CoarsenResult:
    """Choose the task groups that become sequential tasks on ``machine`` (Eq. 3).

    Parameters
    ----------
    profile
        LruTree profile of the fine-grained trace.
    machine
        Target :class:`simsched.machine.Machine`.
    factor
        Multiplier of the right-hand side of Eq. (3).
    level
        Cache level to use (default the outermost).

    Returns
    -------
    CoarsenResult

    Raises
    ------
    ConfigError
        A bad argument, or the profile's line size is not the cache level's: working sets
        are counted in the profile's lines.
    """
    if not isinstance(profile, Profile):
        raise ConfigError(
            f"profile: expected a Profile (simsched.profile.profile_trace), "
            f"got {type(profile).__name__}"
        )
    if isinstance(factor, bool) or not isinstance(factor, int | float | np.integer | np.floating):
        raise ConfigError(f"factor={factor!r}: expected a positive number")
    if not 0 < factor <= MAX_FACTOR:
        # 1e308 overflowed converting the threshold to an integer, and 1e19 wrote
        # thresholds beyond int64 into the table
        raise ConfigError(f"factor={factor!r}: must be a positive number up to {MAX_FACTOR:g}")
    share = cache_share(machine, level)
    if share.line and share.line != profile.line:
        # W is distinct lines × the profile's line size: lines of another size count a
        # different footprint, so Eq. 3 would compare the wrong working sets to the cache
        # the advice was profile --machine M: the outermost level's lines (not another
        # level's), and M's name (not the file an edited machine came from)
        raise ConfigError(
            f"profile of {profile.meta.get('trace', 'the trace')} counts {profile.line}-byte "
            f"lines but {machine.name}'s {share.name} has {share.line}-byte lines: profile "
            f"the trace again with line {share.line} ("
            + spelled(
                f"profile_trace(trace, line={share.line})", f"simsched profile --line {share.line}"
            )
            + ")"
        )
    unit = factor * share.size / (share.cores * 2.0)
    g = profile.groups
    ws = profile.working_set_bytes
    co = g.child_offsets
    role = g.role
    chosen: list[tuple[int, int]] = []  # (group, siblings K)
    stack = [0]
    while stack:
        node = stack.pop()
        kids = g.children[co[node] : co[node + 1]]
        par = kids[role[kids] == ROLE_PAR]
        seq = kids[role[kids] == ROLE_SEQ]
        if len(par):
            k = len(par)
            if ws[node] <= k * unit:
                chosen.extend((int(c), k) for c in par)
            else:
                stack.extend(int(c) for c in par if co[c + 1] > co[c])
        for c in seq:
            if co[c + 1] == co[c]:
                continue  # a single strand: already one task
            if ws[c] <= unit:
                chosen.append((int(c), 1))
            else:
                stack.append(int(c))
    chosen.sort(key=lambda x: int(g.start[x[0]]))
    ids = np.asarray([c for c, _ in chosen], np.int64)
    frames = profile.frames
    rows = []
    for c, k in chosen:
        if g.start[c] == g.stop[c]:
            continue
        f = int(g.frame[c])
        rows.append(
            {
                "machine": machine.name,
                "cache": share.name,
                "cache_bytes": share.size,
                "cores": share.cores,
                "factor": float(factor),
                "trace_digest": profile.meta["digest"],
                "group": c,
                "kind": KIND_NAMES[int(g.kind[c])],
                "frame": f,
                "iteration": int(frames["iteration"][f]) if frames else -1,
                "frame_key": ".".join(str(v) for v in profile.frame_key(f)),
                "phase": int(g.phase[c]),
                "child_lo": int(g.child_lo[c]),
                "child_hi": int(g.child_hi[c]),
                "first_strand": int(g.start[c]),
                "last_strand": int(g.stop[c]),
                "depth": int(g.depth[c]),
                "siblings": k,
                "working_set_bytes": int(ws[c]),
                "threshold_bytes": int(k * unit),
            }
        )
    covered = int(((g.stop[ids] - g.start[ids]) + 1).sum()) if len(ids) else 0
    tasks = g.n_strands - covered + len(ids) - _syncs_left_empty(g, ids)
    return CoarsenResult(chosen=ids, rows=rows, tasks=tasks)


def check_table_rows(
    rows: Any,
    required: Sequence[str],
    expected: str,
    *,
    known: Sequence[str] | None = None,
    hint: str = "",
) -> list[Mapping[str, Any]]:
    """``rows`` of a parallelization table as a list, else a one-line :class:`ConfigError`.

    Parameters
    ----------
    rows
        The rows given (a list of mappings).
    required
        The columns every row must have.
    expected
        What ``rows`` should have been, for the message when it is no list.
    known
        The columns a row may have (None: any).
    hint
        Added to the message of a row that lacks a column (where such rows come from).
    """
    if isinstance(rows, str | bytes) or not isinstance(rows, Sequence):
        raise ConfigError(f"rows={shown(rows)}: expected {expected}")
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise ConfigError(f"rows[{i}]={shown(r)}: expected a row (dict) of the table")
        unknown = [k for k in r if known is not None and k not in known]
        if unknown:
            raise ConfigError(f"rows[{i}]: unknown column {shown(unknown[0])}")
        lacks = [c for c in required if c not in r]
        if lacks:
            raise ConfigError(f"rows[{i}]: no column {', '.join(map(repr, lacks))}{hint}")
    return list(rows)


def write_table(rows: list[dict[str, Any]], path: str | os.PathLike) -> None:
    """Write a parallelization table as CSV (atomically).

    ``rows`` are :attr:`CoarsenResult.rows` (or :func:`read_table`'s), each with every
    column of :data:`TABLE_COLUMNS`; other rows are a one-line :class:`ConfigError`.
    """
    path = check_path(path, "path")
    checked = check_table_rows(
        rows, TABLE_COLUMNS, "a list of table rows (CoarsenResult.rows)", known=TABLE_COLUMNS
    )
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=TABLE_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in checked:
        w.writerow(r)
    write_text_atomic(path, buf.getvalue())


_INT_COLUMNS = {
    "cache_bytes",
    "cores",
    "group",
    "frame",
    "iteration",
    "phase",
    "child_lo",
    "child_hi",
    "first_strand",
    "last_strand",
    "depth",
    "siblings",
    "working_set_bytes",
    "threshold_bytes",
}


def read_table(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read a parallelization table written by :func:`write_table`.

    Raises
    ------
    SimschedError
        If a column is missing or a value is not a number where one is expected.
    """
    name = str(check_path(path, "path"))
    text = read_user_text(path, "parallelization table (CSV)")
    r = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in TABLE_COLUMNS if c not in (r.fieldnames or [])]
    if missing:
        raise SimschedError(f"{name}: not a parallelization table (missing {missing})")
    rows = []
    for i, row in enumerate(r, start=2):
        if all(row.get(c) == c for c in TABLE_COLUMNS):
            continue  # the header of a table appended with cat (tables concatenate)
        out: dict[str, Any] = dict(row)
        for c in TABLE_COLUMNS:  # in file order: the first bad column is named
            conv = int if c in _INT_COLUMNS else float if c == "factor" else None
            if conv is None:
                continue
            try:
                out[c] = conv(row[c])
            except (TypeError, ValueError):
                # a short row leaves its last columns None
                got = "missing" if row[c] is None else repr(row[c])
                raise SimschedError(
                    f"{name}: line {i}: column {c} is not a number ({got})"
                ) from None
        rows.append(out)
    return rows


def _syncs_left_empty(g: GroupTree, ids: np.ndarray) -> int:
    """How many syncs no longer start a strand once the groups ``ids`` run sequentially.

    A chosen phase runs inline in its frame with its spawns gone, so the sync after it has
    nothing to wait for and the strand after it continues the phase's strand (as
    :func:`simsched.profile.regrain` writes it); a phase that ends its frame has no sync
    after it."""
    n = 0
    for c in ids:
        if g.kind[c] != KIND_PHASE:
            continue
        nxt = int(g.stop[c]) + 1
        if nxt < g.n_strands and g.frame[g.leaf_of[nxt]] == g.frame[c]:
            n += 1
    return n
