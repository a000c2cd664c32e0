"""Regrain: replay a fine-grained trace with chosen task groups merged into single strands.

This is the middle bar of the PDF paper's Fig. 8 ([PDF07] §6.2): "we use the
same finest-grain trace in the CMP simulation but simply substitute a new task DAG based on
the recommended task grouping", so the coarse program replays without a recapture.

The trace is replayed as the builder calls that made it (:func:`simsched.trace.events`) into
a new :class:`~simsched.trace.TraceBuilder`, and every spawn, return and sync marker that
falls *strictly inside* a chosen group (between two of its strands) is dropped.  The group's
references and instructions then run in serial order as one strand.  This keeps the program
well formed for the three kinds of group coarsening chooses
(:mod:`simsched.profile.groups`):

* a **frame** group ``[F.first, F.last]``: the spawn before it and the return after it are
  outside and kept; everything inside is balanced — F becomes a leaf task;
* a **split** group ``[C_i.first, C_j.last]`` (siblings ``C_i .. C_j`` and the parent's
  strands between them): the spawn of ``C_i`` before it and the return of ``C_j`` after it
  are kept, so the siblings become *one* spawned task that runs them one after the other;
* a **phase** group: it begins after a sync (or at the frame's start) and its children all
  return inside it, so the phase runs inline in its frame; the sync after it has nothing left
  to wait for and no longer splits a strand.

Iteration marks are re-emitted before the spawns that are kept, for the frame they spawn, so
frames keep their iteration numbers; the builder renumbers spawn indices and position keys,
which count only the spawns that remain.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.errors import ConfigError, shown, spelled
from simsched.files import check_not_input, check_path
from simsched.params import check_int, check_mapping
from simsched.profile.coarsen import check_table_rows
from simsched.profile.groups import build_groups

if TYPE_CHECKING:
    from pathlib import Path

    from simsched.machine import Machine
    from simsched.trace import Trace, TraceHeader


def merge_mask(
    n_strands: int, ranges: Sequence[tuple[int, int]], source: str = "groups to merge"
) -> np.ndarray:
    """Which strands lose the marker that precedes them (they are inside a merged group).

    Parameters
    ----------
    n_strands
        Strands of the trace.
    ranges
        ``(first, last)`` strand ranges of the groups to merge; they must be disjoint.
    source
        Where the ranges come from (a parallelization table's path), for error messages.

    Returns
    -------
    numpy.ndarray
        Boolean mask: ``True`` for the strands ``first+1 .. last`` of every range.
    """
    mask = np.zeros(n_strands, bool)
    prev_last = -1
    for a, b in sorted(ranges):
        if not 0 <= a <= b < n_strands:
            raise ConfigError(
                f"{source}: group strands {a}..{b} outside the trace's 0..{n_strands - 1}"
            )
        if a <= prev_last:
            raise ConfigError(f"{source}: groups to merge overlap at strand {a}")
        mask[a + 1 : b + 1] = True
        prev_last = b
    return mask


def _check_ranges(ranges: Any) -> list[tuple[int, int]]:
    """``ranges`` (a list of ``(first_strand, last_strand)`` pairs of integers) as a list,
    else a one-line :class:`ConfigError` naming the item."""
    if isinstance(ranges, str | bytes) or not isinstance(ranges, Sequence | np.ndarray):
        raise ConfigError(
            f"ranges={shown(ranges)}: expected a list of (first_strand, last_strand) pairs"
        )
    out = []
    for i, r in enumerate(ranges):
        if isinstance(r, str | bytes) or not isinstance(r, Sequence | np.ndarray) or len(r) != 2:
            raise ConfigError(
                f"ranges[{i}]={shown(r)}: expected a (first_strand, last_strand) pair"
            )
        out.append((check_int(f"ranges[{i}][0]", r[0]), check_int(f"ranges[{i}][1]", r[1])))
    return out


_ROW_KEYS = ("machine", "trace_digest", "first_strand", "last_strand")


def _check_rows(rows: Any) -> list[Mapping[str, Any]]:
    """``rows`` (a parallelization table's rows, :func:`read_table`) as a list, else a
    one-line :class:`ConfigError` naming the row and the column it lacks or whose cell is
    of the wrong type (rows made in Python; :func:`read_table` gives text and integers)."""
    checked = check_table_rows(
        rows,
        _ROW_KEYS,
        "the rows of a parallelization table (simsched.profile.read_table(path))",
        hint=" (read_table(path) rows)",
    )
    for i, r in enumerate(checked):
        for key in ("machine", "trace_digest"):
            if not isinstance(r[key], str):
                raise ConfigError(f"rows[{i}]['{key}']={shown(r[key])}: expected text")
        for key in ("first_strand", "last_strand"):
            # any integer: one that is no group of the trace is the table's fault, said so
            # with the table's name (_regrain)
            check_int(f"rows[{i}]['{key}']", r[key], -(2**63))
    return checked


def _check_out(trace: Any, out: Any, table: str | os.PathLike | None = None) -> Path:
    """``out`` as a path, else a one-line :class:`ConfigError`; refused too when it is the
    trace (or the table) read, which the new trace would replace (the command line's
    ``--out`` is refused in the same words)."""
    from simsched.trace.reader import Trace

    path = check_path(out, "out")
    src = trace.path if isinstance(trace, Trace) else trace
    inputs = {"the trace": src if isinstance(src, str | os.PathLike) else None, "the table": table}
    check_not_input(path, "--out", inputs, keyword="out")
    return path


def regrain(
    trace: Trace | str | os.PathLike,
    out: str | os.PathLike,
    ranges: Sequence[tuple[int, int]],
    *,
    params: dict[str, Any] | None = None,
    source: str | None = None,
) -> TraceHeader:
    """Write a copy of ``trace`` in which each strand range in ``ranges`` is one strand.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace` or a path to one (opened and closed here).
    out
        Path of the new trace (written atomically); not the trace's own.
    ranges
        ``(first_strand, last_strand)`` of each chosen group, at least one; each must be a
        frame, phase or split group of the trace's task-group tree, and they must be
        disjoint.
    params
        Extra header parameters to record (a mapping, merged into the trace's own).
    source
        Where ``ranges`` come from (a text: a parallelization table's path), named when
        they overlap or are not groups of the trace; default the trace.

    Returns
    -------
    simsched.trace.TraceHeader
        Header of the written trace.

    Raises
    ------
    ConfigError
        ``out`` is not a path or is the trace itself; ``ranges`` is empty (nothing to
        merge: :func:`regrain_from_table` of an empty table is the way to write the trace
        unchanged) or not a list of pairs of strand numbers, a range is outside the trace or
        not one of its task groups, or two ranges overlap; ``params`` is not a mapping or
        ``source`` not a text.  All of it before anything is written.
    """
    from simsched.trace.reader import opened_trace

    path = _check_out(trace, out)
    checked = _check_ranges(ranges)
    if not checked:
        # a selection that matched nothing wrote a copy of the trace without a word
        raise ConfigError(f"ranges={shown(ranges)}: no group to merge, nothing to regrain")
    params = check_mapping(params, "params")
    if source is not None:
        source = str(check_path(source, "source"))
    with opened_trace(trace) as t:
        return _regrain(t, path, checked, params, source)


def _regrain(
    trace: Trace,
    out: Path,
    ranges: list[tuple[int, int]],
    params: dict[str, Any],
    source: str | None,
) -> TraceHeader:
    """:func:`regrain` of an open trace and checked arguments."""
    from simsched.trace import TraceBuilder, events

    h = trace.header
    p = {**h.params, **params, "regrained_from": h.digest, "merged_groups": len(ranges)}
    # first: an output that cannot be written fails before the group tree is built
    builder = TraceBuilder(
        out,
        program=h.program,
        args=list(h.args),
        backend=h.backend,
        gaps_exact=h.gaps_exact,
        line_size_hint=h.line_size_hint,
        params=p,
    )
    iteration = -1
    s = 0
    try:
        groups = build_groups(trace)
        known = {(int(a), int(b)) for a, b in zip(groups.start, groups.stop, strict=True)}
        for a, b in ranges:
            if (int(a), int(b)) not in known:
                if source is None:
                    said = f"{trace.path}: strands {a}..{b} are not a task group of this trace"
                else:  # a table's row (edited, damaged) is the table's fault, as an overlap is
                    said = f"{source}: strands {a}..{b} are not a task group of {trace.path}"
                raise ConfigError(said)
        mask = merge_mask(h.n_strands, ranges, source or str(trace.path))
        fiter = trace.frames.iteration
        first = trace.frames.first_strand
        sframe = trace.strands.frame
        for ev in events(trace):
            if ev[0] == "strand":
                s = ev[1]
            elif ev[0] == "refs":
                c = ev[1]
                builder.refs(c.addr, c.size, c.write, c.gap, c.dep)
            elif ev[0] == "instr":
                builder.instr(ev[1])
            elif ev[0] == "iteration":
                continue  # re-emitted below for the spawns that are kept
            else:
                # the marker precedes the next strand, which tells whether it is kept
                nxt = s + 1
                if mask[nxt]:
                    continue
                if ev[0] == "spawn":
                    f = int(sframe[nxt])
                    if first[f] == nxt and fiter[f] != iteration:
                        iteration = int(fiter[f])
                        builder.iteration(iteration)
                    builder.spawn()
                elif ev[0] == "ret":
                    builder.ret()
                else:
                    builder.sync()
        return builder.close()
    except BaseException:
        builder.abort()
        raise


def regrain_from_table(
    trace: Trace | str | os.PathLike,
    out: str | os.PathLike,
    rows: Sequence[dict[str, Any]],
    *,
    machine: str | Path | Machine | None = None,
    table: str | os.PathLike | None = None,
) -> TraceHeader:
    """Regrain ``trace`` with the groups a parallelization table chose.

    An empty table (``coarsen`` chose no group of more than one strand: the fine grain
    stays) is no mistake: the trace is written unchanged, ``merged_groups`` 0 in its
    header (``simsched regrain`` says so).  Such a table names no machine and no trace, so
    neither is checked against it.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace` or a path to one (the one the table's
        profile was made from).
    out
        Path of the new trace; not the trace's nor the table's.
    rows
        Rows of :func:`simsched.profile.coarsen.read_table`.
    machine
        Use the rows of this machine; required when the table holds several.  A name the
        rows give, else what ``simsched profile`` and ``simsched coarsen`` take as
        ``--machine``, whose name is used: a preset name, a machine file or a
        :class:`~simsched.machine.Machine` (:func:`simsched.machine.load_machine`).
    table
        Path of the table the rows were read from, named in error messages.

    Returns
    -------
    simsched.trace.TraceHeader

    Raises
    ------
    ConfigError
        ``out`` is not a path or is the trace or the table, ``rows`` are not a table's rows,
        the table holds several machines and ``machine`` is not given (or names none of
        them, or cannot be loaded), or it was made from another trace.  All of it before
        anything is written.
    """
    from simsched.trace.reader import opened_trace

    if table is not None:
        table = check_path(table, "table")
    path = _check_out(trace, out, table)
    checked = _check_rows(rows)
    name = str(table) if table is not None else "parallelization table"
    chosen, sel = _machine_rows(checked, machine, name)
    with opened_trace(trace) as t:
        foreign = sorted({r["trace_digest"] for r in sel} - {t.header.digest})
        if foreign:
            theirs, ours = _distinct_prefixes(foreign[0], t.header.digest)
            raise ConfigError(
                f"{name}: the table was made from another trace than {t.path} (digest "
                f"{theirs}, this trace {ours})"
            )
        ranges = [(int(r["first_strand"]), int(r["last_strand"])) for r in sel]
        return _regrain(t, path, ranges, {"regrain_machine": chosen}, name)


def _machine_rows(
    rows: list[Mapping[str, Any]], machine: Any, name: str
) -> tuple[str | None, list[Mapping[str, Any]]]:
    """The machine whose rows :func:`regrain_from_table` uses, and its rows."""
    blank = next((i for i, r in enumerate(rows) if not r["machine"].strip()), None)
    if blank is not None:
        # it was listed as a machine named "" among the others
        raise ConfigError(f"{name}: row {blank + 1} has an empty machine cell")
    machines = sorted({r["machine"] for r in rows})
    if machine is None:
        if len(machines) > 1:
            raise ConfigError(
                f"{name}: the table holds several machines ({', '.join(machines)}): choose "
                + spelled("one with machine=", "one with --machine")
            )
        chosen = machines[0] if machines else None
    elif isinstance(machine, str) and machine in machines:
        chosen = machine  # the rows' own name: a machine file's needs no file
    else:
        from simsched.machine import load_machine

        try:  # as profile and coarsen take --machine: a preset, a machine file or a Machine
            chosen = load_machine(machine).name
        except ConfigError:
            named = isinstance(machine, str) and not machine.endswith((".yaml", ".yml"))
            if not named or os.path.exists(machine):
                raise  # a machine file or a machine that is wrong: its own message
            chosen = machine  # no preset, no file: a name the table lacks (said below)
    sel = [r for r in rows if r["machine"] == chosen]
    if rows and not sel:
        via = ""
        if isinstance(machine, str | os.PathLike) and os.fspath(machine) != chosen:
            via = f" (the name in {os.fspath(machine)})"
        raise ConfigError(
            f"{name}: the table has no rows for machine {chosen!r}{via}; it holds "
            + ", ".join(machines)
        )
    return chosen, sel


def _distinct_prefixes(a: str, b: str, least: int = 16) -> tuple[str, str]:
    """Two different digests cut to one length, at least ``least`` characters and long enough
    to tell them apart (cut to a fixed 16, one damaged further on read as the trace's own)."""
    n = max(least, len(os.path.commonprefix([a, b])) + 1)

    def cut(d: str) -> str:
        return f"{d[:n]}…" if len(d) > n else d or "(empty)"

    return cut(a), cut(b)
