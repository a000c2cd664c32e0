"""What a replay produces, before it becomes a result record (engine/record.py).

:class:`EngineResult` is one job's replay on a machine of its own (what ``simsched.run``
turns into a record); :class:`ReplayResult` a job set's, with one :class:`JobOutcome`
per job, the allotment series and the cache cost of reallocations
(:func:`warmup_summary`).  They are plain containers: the engine
(:class:`~simsched.engine.replay.Replay`) fills them, the record builders read them, and
neither side imports the other's machinery through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from simsched.engine.job import Job

#: Per-strand memory counters the engine records (``timeline.npz`` keeps them): misses in
#: every per-core level, misses in the last level, DRAM lines fetched from the core's own
#: node and from another node.
STRAND_MEM_FIELDS = ("private_misses", "llc_misses", "dram_local", "dram_remote")


#: References after a core joins a job that count as its warm-up (the cache cost of a
#: reallocation is the misses in them against the core's steady state).
WARMUP_REFS = 10_000


@dataclass
class EngineResult:
    """What replaying one job produced (before it is turned into a result record).

    Attributes
    ----------
    makespan
        Cycle at which the job's last strand finished.
    strand_core, strand_start, strand_end
        Per strand: the core that ran it and its start and end cycles (start is after the
        scheduling cost of the decision that picked it).
    busy_cycles, sched_cycles, idle_cycles
        Per core: cycles running strands, cycles of scheduling operations that led to
        running a strand, and the rest of ``[0, makespan)``.
    refs_per_core, private_misses
        Per core: references issued and references that missed every per-core level.
    counters
        The scheduler's counters (``steal_attempts``, ``steals``, ...).
    engine
        Engine statistics: events, kernel calls, wall time split, median bookkeeping cost
        per strand in nanoseconds (``median_strand_ns``).
    """

    makespan: int
    strand_core: np.ndarray
    strand_start: np.ndarray
    strand_end: np.ndarray
    busy_cycles: np.ndarray
    sched_cycles: np.ndarray
    idle_cycles: np.ndarray
    refs_per_core: np.ndarray
    private_misses: np.ndarray
    counters: dict[str, int]
    engine: dict[str, Any] = field(default_factory=dict)
    sched_fields: dict[str, Any] = field(default_factory=dict)
    #: Per strand memory counters (:data:`STRAND_MEM_FIELDS`).
    strand_mem: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class JobOutcome:
    """Per-job outcome of a multi-job replay (see docs/results.md, multi-job records)."""

    jid: int
    name: str
    arrival: int
    start: int
    finish: int
    strand_core: np.ndarray
    strand_start: np.ndarray
    strand_end: np.ndarray
    busy_cycles: int
    sched_cycles: int
    allotted_cycles: int
    instructions: int
    refs: int
    counters: dict[str, int]
    sched_fields: dict[str, Any] = field(default_factory=dict)
    #: Cores that moved to this job from another, and the cycles they were unavailable.
    core_moves: int = 0
    move_cycles: int = 0
    #: Per strand (arrays by :data:`STRAND_MEM_FIELDS`): private-cache misses,
    #: last-level misses, local and remote DRAM lines its references fetched.
    strand_mem: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class ReplayResult:
    """What a replay of a job set produced.

    Attributes
    ----------
    makespan
        Cycle at which the last job finished.
    jobs
        One :class:`JobOutcome` per job, in job-set order.
    busy_cycles, sched_cycles, refs_per_core, private_misses
        Per core, over all jobs.
    series
        Allotment series: one entry per quantum boundary, reallocation or job finish,
        ``(cycle, [cores per job], [desire per job or -1], [leaving cores per job])``;
        a finished job's desire is 0, ``leaving`` counts the cores a job holds only until
        the strand they run ends.
    reallocations
        Core moves between jobs (a core leaving one job for another or for the pool).
    core_moves, move_cycles
        Cores that joined a job other than the last one they held, and the cycles they
        were unavailable for it (``costs.core_move`` each).
    warmup
        Cache cost of reallocations (:func:`warmup_summary`): per job the private-cache
        miss rate of cores in their first :data:`WARMUP_REFS` references after they moved
        to it, against the job's other references; ``extra_misses`` over the set.
    engine
        Engine statistics (timing-dependent).
    """

    makespan: int
    jobs: list[JobOutcome]
    busy_cycles: np.ndarray
    sched_cycles: np.ndarray
    refs_per_core: np.ndarray
    private_misses: np.ndarray
    series: list[tuple[int, list[int], list[int], list[int]]]
    reallocations: int
    warmup: dict[str, Any]
    core_moves: int = 0
    move_cycles: int = 0
    engine: dict[str, Any] = field(default_factory=dict)


def warmup_summary(jobs: Sequence[Job | None], joins: int) -> dict[str, Any]:
    """The cache cost of reallocations, per job and over the set.

    For every job, the private-cache miss rate of its cores' first :data:`WARMUP_REFS`
    references after they moved to it from another job (``warm``) against the rate of all
    its other references (``steady``); ``extra_misses`` = warm misses minus what the
    job's steady rate would have given over the same references, summed over jobs.
    """
    per_job = []
    extra = 0.0
    warm_refs = warm_misses = 0
    for j in jobs:
        if j is None:
            continue
        s_refs = j.n_refs - j.warm_refs
        s_miss = j.pmiss - j.warm_misses
        steady = s_miss / s_refs if s_refs > 0 else 0.0
        extra += j.warm_misses - steady * j.warm_refs
        warm_refs += j.warm_refs
        warm_misses += j.warm_misses
        per_job.append(
            {
                "warm_refs": int(j.warm_refs),
                "warm_misses": int(j.warm_misses),
                "warm_miss_rate": j.warm_misses / j.warm_refs if j.warm_refs else 0.0,
                "steady_miss_rate": steady,
            }
        )
    return {
        "joins": int(joins),
        "warm_refs": int(warm_refs),
        "warm_misses": int(warm_misses),
        "extra_misses": round(extra, 3),
        "jobs": per_job,
    }


def single_result(r: ReplayResult, jid: int) -> EngineResult:
    """The :class:`EngineResult` of job ``jid`` of a replay whose cores served it alone."""
    j = r.jobs[jid]
    makespan = int(j.strand_end.max()) if j.strand_end.size else 0
    return EngineResult(
        makespan=makespan,
        strand_core=j.strand_core,
        strand_start=j.strand_start,
        strand_end=j.strand_end,
        busy_cycles=r.busy_cycles,
        sched_cycles=r.sched_cycles,
        idle_cycles=makespan - r.busy_cycles - r.sched_cycles,
        refs_per_core=r.refs_per_core,
        private_misses=r.private_misses,
        counters=j.counters,
        engine=r.engine,
        sched_fields=j.sched_fields,
        strand_mem=j.strand_mem,
    )
