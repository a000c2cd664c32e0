"""Invariants every replay must satisfy (docs/architecture.md §6), checked by the tests on every run.

* each strand runs exactly once;
* no strand starts before all its predecessors have finished;
* no core runs two strands at once;
* every reference is counted once at each level: hits + misses = accesses (in total and
  per cache instance), the first level sees every reference (straddling ones twice), and
  the cores issued exactly the trace's references.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from simsched.engine.outcome import EngineResult
    from simsched.trace import Trace


def check_invariants(trace: Trace, result: EngineResult, mem_stats: dict | None = None) -> None:
    """Raise ``AssertionError`` naming the first invariant a replay violates.

    Parameters
    ----------
    trace
        The replayed trace.
    result
        The :class:`~simsched.engine.outcome.EngineResult` (or an object with the same
        ``strand_core``, ``strand_start``, ``strand_end`` arrays).
    mem_stats
        ``MemorySystem.stats()`` after the replay (optional).
    """
    n = int(trace.header.n_strands)
    core = np.asarray(result.strand_core)
    start = np.asarray(result.strand_start)
    end = np.asarray(result.strand_end)
    if core.shape != (n,) or np.any(core < 0):
        missing = np.flatnonzero(core < 0)[:5].tolist()
        raise AssertionError(f"strands never ran: {missing}")
    if np.any(end < start) or np.any(start < 0):
        raise AssertionError("a strand ends before it starts")
    src = np.asarray(trace.edges.src)
    dst = np.asarray(trace.edges.dst)
    bad = np.flatnonzero(start[dst] < end[src])
    if bad.size:
        i = int(bad[0])
        raise AssertionError(
            f"strand {int(dst[i])} started at {int(start[dst[i]])} before its predecessor "
            f"{int(src[i])} finished at {int(end[src[i]])}"
        )
    order = np.lexsort((start, core))
    c, s, e = core[order], start[order], end[order]
    same = c[1:] == c[:-1]
    overlap = np.flatnonzero(same & (s[1:] < e[:-1]))
    if overlap.size:
        i = int(overlap[0])
        raise AssertionError(
            f"core {int(c[i])} runs strands {int(order[i])} and {int(order[i + 1])} at once"
        )
    refs_issued = getattr(result, "refs_per_core", None)
    if refs_issued is not None and int(np.sum(refs_issued)) != int(trace.header.n_refs):
        raise AssertionError(
            f"cores issued {int(np.sum(refs_issued))} references, the trace has "
            f"{int(trace.header.n_refs)}"
        )
    if mem_stats is None:
        return
    for lv in mem_stats["levels"]:
        if lv["hits"] + lv["misses"] != lv["accesses"]:
            raise AssertionError(f"level {lv['name']}: hits + misses != accesses")
        for i, inst in enumerate(lv["instances"]):
            if inst["hits"] + inst["misses"] != inst["accesses"]:
                raise AssertionError(f"level {lv['name']} instance {i}: hits + misses != accesses")
    first = mem_stats["levels"][0]["accesses"]
    if first < int(trace.header.n_refs):
        raise AssertionError(
            f"the first level saw {first} accesses, fewer than the {trace.header.n_refs} references"
        )
