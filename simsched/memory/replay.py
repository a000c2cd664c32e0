"""Scheduler-free replay of a trace through the memory model (``simsched memsim``).

The trace's references are served in serial (1DF) order, the order a one-core execution
performs them, on one time line: a reference issues ``gap`` cycles after the previous one
completed, and a strand's tail instructions (those after its last reference) delay the
next reference by as many cycles.  With ``core_of_strand="0"`` every strand runs on core
0; with ``"rr"`` strand ``s`` runs on core ``s mod cores`` (still one after the other),
which makes the strands share (and invalidate) caches the way a round-robin placement
would, without any scheduler; a trace that names its stack region has each core's stack
references moved to that core's own copy, as in ``simsched run``
(:mod:`simsched.memory.stacks`).  References are streamed chunk by chunk, so memory stays
bounded by the chunk size and the model.
"""

from __future__ import annotations

import os

import numpy as np

from simsched.errors import ConfigError, shown, spelled
from simsched.machine import Machine
from simsched.memory.stacks import stack_layout
from simsched.memory.system import MemorySystem


def _add_gap_sums(gap_sum: np.ndarray, starts: np.ndarray, c) -> None:
    """Add the gaps of chunk ``c`` to the per-strand sums of the strands it overlaps."""
    n = len(c)
    cum = np.concatenate(([0], np.cumsum(c.gap, dtype=np.int64)))
    s_lo = max(int(np.searchsorted(starts, c.start, side="right")) - 1, 0)
    s_hi = min(int(np.searchsorted(starts, c.start + n, side="left")), len(starts) - 1)
    ids = np.arange(s_lo, s_hi)
    lo = np.clip(starts[ids] - c.start, 0, n)
    hi = np.clip(starts[ids + 1] - c.start, 0, n)
    gap_sum[ids] += cum[hi] - cum[lo]


#: largest gap the memory model takes before one reference (its gaps are uint32)
_GAP_MAX = (1 << 32) - 1


def _serve(
    ms: MemorySystem,
    core: int,
    addr: np.ndarray,
    size: np.ndarray,
    write: np.ndarray,
    now: int,
    gaps: np.ndarray,
    out: np.ndarray,
    drain: bool,
) -> None:
    """``ms.access_batch`` of one core's references, whatever their gaps.

    A strand's tail is folded into the next reference's gap, and a tail of 2^32
    instructions or more (a long computation without references, which the trace format
    allows) does not fit the model's 32-bit gaps: the batch is cut before each such
    reference, whose piece starts the excess later: a piece that does not drain leaves
    the time where the next one of the same core continues it exactly.
    """
    big = np.flatnonzero(gaps > _GAP_MAX)
    if big.shape[0] == 0:
        ms.access_batch(core, addr, size, write, now, gaps, out=out, drain=drain)
        return
    gaps = gaps.copy()
    cuts = [0, *big.tolist(), addr.shape[0]]
    for k, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        if k:
            now += int(gaps[lo]) - _GAP_MAX
            gaps[lo] = _GAP_MAX
        if hi > lo:
            last = hi == addr.shape[0]
            ms.access_batch(
                core,
                addr[lo:hi],
                size[lo:hi],
                write[lo:hi],
                now,
                gaps[lo:hi],
                out=out,
                drain=drain and last,
            )
            now = ms.last_time


def replay_trace(machine: Machine, trace: str | os.PathLike, core_of_strand: str = "0") -> dict:
    """Replay ``trace``'s references in serial order through ``machine``'s memory model.

    Parameters
    ----------
    machine
        The machine whose caches and memory are modelled.
    trace
        Path of a simsched trace.
    core_of_strand
        ``"0"``: every strand on core 0; ``"rr"``: strand ``s`` on core ``s mod cores``.

    Returns
    -------
    dict
        ``MemorySystem.stats()`` plus ``trace`` (path), ``machine`` (name),
        ``core_of_strand``, ``refs`` (references in the trace), ``extra_lines`` (first-level
        line accesses beyond one per reference, from references straddling a line
        boundary) and ``cycles`` (the time line's end).
    """
    from simsched.trace import open_trace

    if not isinstance(core_of_strand, str) or core_of_strand not in ("0", "rr"):
        raise ConfigError(
            spelled(
                f"core_of_strand={shown(core_of_strand)}: expected 'rr' or '0'",
                f"--core-of-strand: {core_of_strand!r} is not one of rr, 0",
            )
        )
    ms = MemorySystem(machine)
    cores = machine.cores
    with open_trace(trace) as t:
        starts = np.asarray(t.strands.ref_start, np.int64)
        n_strands = len(t.strands)
        instr = np.asarray(t.strands.instr, np.int64)
        n_in = np.diff(starts)
        gap_sum = np.zeros(n_strands, np.int64)
        n_refs = int(t.header.n_refs)
        stacks = stack_layout(t.header.stack, cores) if core_of_strand == "rr" else None
        # A strand's tail delays the first reference after it: fold it into that gap.
        tail_at = starts[1:]
        now = 0
        chunk_cap = 0
        out = np.empty(0, np.int64)
        for c in t.iter_chunks():
            n = len(c)
            if n == 0:
                continue
            if n > chunk_cap:
                chunk_cap = n
                out = np.empty(n, np.int64)
            _add_gap_sums(gap_sum, starts, c)
            gaps = c.gap.astype(np.int64)
            # Strands ending before a reference of this chunk: their gaps are all summed.
            e_lo = int(np.searchsorted(tail_at, c.start, side="left"))
            e_hi = int(np.searchsorted(tail_at, c.start + n, side="left"))
            ends = np.arange(e_lo, e_hi)
            tails = np.maximum(instr[ends] - n_in[ends] - gap_sum[ends], 0)
            np.add.at(gaps, tail_at[ends] - c.start, tails)
            # A chunk boundary is not an event of the program: misses stay in flight across
            # it (an out-of-order core drains at the end of the trace, or of a strand).
            end = c.start + n
            if core_of_strand == "0" or cores == 1:
                _serve(ms, 0, c.addr, c.size, c.write, now, gaps, out, end >= n_refs)
                now = ms.last_time
                continue
            s_lo = int(np.searchsorted(starts, c.start, side="right")) - 1
            s_hi = int(np.searchsorted(starts, c.start + n, side="left"))
            for s in range(max(s_lo, 0), min(s_hi, n_strands)):
                lo = max(int(starts[s]) - c.start, 0)
                hi = min(int(starts[s + 1]) - c.start, n)
                if hi <= lo:
                    continue
                addr = c.addr[lo:hi]
                _serve(
                    ms,
                    s % cores,
                    addr if stacks is None else stacks.moved(addr, s % cores),
                    c.size[lo:hi],
                    c.write[lo:hi],
                    now,
                    gaps[lo:hi],
                    out,
                    int(starts[s + 1]) <= end,
                )
                now = ms.last_time
        # Strands ending after the last reference add their tails to the end time.
        ends = np.flatnonzero(tail_at >= n_refs)
        now += int(np.maximum(instr[ends] - n_in[ends] - gap_sum[ends], 0).sum())
    stats = ms.stats()
    lines = stats["levels"][0]["accesses"]
    return {
        "trace": os.fspath(trace),
        "machine": machine.name,
        "core_of_strand": core_of_strand,
        "refs": n_refs,
        "extra_lines": lines - n_refs,
        "cycles": now,
        **stats,
    }
