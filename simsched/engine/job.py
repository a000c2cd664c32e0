"""A job: one program being replayed, with its own scheduler, DAG state and address space.

A :class:`Job` holds what the engine needs of one trace (reference ranges, tails,
successor lists, predecessor counts), the records of its strands (core, start, end), its
scheduler and the scheduler's :class:`~simsched.schedulers.base.SchedContext`, and the
set of cores it holds and which of them sleep.  Its references stay in the trace file
until a core needs them (:class:`simsched.engine.cores.ChunkSlots`), so memory stays
bounded whatever the trace length.  A :class:`JobSpec` is a job as a job set gives it
(trace, scheduler, parameters, arrival): the replay makes its :class:`Job` when it
arrives.

**Address spaces.**  Jobs never share a cache line: job ``j``'s virtual address ``a``
(below 2**48, checked when the trace is read) becomes the physical address
``(j << 49) + colour(j) + a`` (:data:`JOB_SHIFT`).  The tag keeps address spaces apart; the colour, a
deterministic multiple of 4 KB pages below 2**40 (0 for job 0), stands for the frames
an operating system would hand out, so that identical copies of one program do not map
their arrays onto the same cache sets.  Pages are still placed on NUMA nodes by the
machine's policy (first touch: the node of the core that touches a page first), per job.
Job 0 of a single-job run uses the addresses of the trace unchanged.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.canonical import canonical_json
from simsched.errors import contract_error
from simsched.memory.stacks import stack_layout
from simsched.schedulers.base import SchedContext, Scheduler
from simsched.trace.format import ADDRESS_BITS as VIRTUAL_BITS

#: Bits of the job tag's position in physical addresses (above the virtual addresses and
#: one bit of colour headroom).
JOB_SHIFT = VIRTUAL_BITS + 1
#: Largest number of jobs one run may hold (the job tag has 8 bits).
MAX_JOBS = 256


def _is_integer(v: Any) -> bool:
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def addr_offset(job: int) -> int:
    """Physical offset of job ``job``'s address space (see the module docstring)."""
    if job == 0:
        return 0
    colour = ((job * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)) >> 36  # 28 bits of pages
    return (job << JOB_SHIFT) + (colour << 12)


def _woken_after_run(n: int | None = None, cores: Sequence[int] | None = None) -> None:
    raise RuntimeError("a scheduler woke cores after its run ended")


@dataclass
class JobSpec:
    """One job of a job set, as the engine needs it.

    Attributes
    ----------
    trace
        The open trace.
    scheduler
        Scheduler class.
    params
        Scheduler parameters (the scheduler resolves and checks them).
    arrival
        Arrival cycle.
    name
        Label in results.
    """

    trace: Any
    scheduler: type[Scheduler]
    params: dict[str, Any]
    arrival: int = 0
    name: str = ""


class Job:
    """One trace under one scheduler on a set of cores.

    Parameters
    ----------
    jid
        Job number (index in the job set; 0 for single-job runs).
    name
        Label used in results and messages.
    trace
        The open trace.
    machine
        The machine.
    scheduler
        The scheduler class.
    params
        Resolved scheduler parameters.
    rng
        The job scheduler's random generator.
    wake
        Engine callback ``wake(job, n, cores)``.
    arrival
        Arrival cycle.
    facts
        The engine's measurements of the trace for the scheduler (``ctx.facts``).
    """

    def __init__(
        self,
        jid: int,
        name: str,
        trace: Any,
        machine: Any,
        scheduler: type[Scheduler],
        params: dict[str, Any],
        rng: np.random.Generator,
        wake: Any,
        arrival: int = 0,
        facts: Any = None,
    ) -> None:
        self.jid = jid
        self.name = name
        self.trace = trace
        self.arrival = int(arrival)
        self.addr_offset = addr_offset(jid)
        h = trace.header
        # Every core's own copy of the captured stack (None: references as captured).
        self.stacks = stack_layout(getattr(h, "stack", None), int(machine.cores))
        n = int(h.n_strands)
        self.n = n
        self.n_refs = int(h.n_refs)
        st = trace.strands
        self.ref_start = np.asarray(st.ref_start, dtype=np.int64).tolist()
        self.tail = np.asarray(st.tail, dtype=np.int64).tolist()
        self.instr = np.asarray(st.instr, dtype=np.int64).tolist()
        src = np.asarray(trace.edges.src, dtype=np.int64)
        self.succ_off = np.searchsorted(src, np.arange(n + 1, dtype=np.int64)).tolist()
        self.succ_dst = np.asarray(trace.edges.dst, dtype=np.int64).tolist()
        self.succ_kind = np.asarray(trace.edges.kind, dtype=np.int64).tolist()
        self.pred_rem = np.asarray(trace.pred_count, dtype=np.int64).tolist()
        # First reference of every chunk (a bisect on a list beats numpy per strand).
        self.chunk_first = (
            np.asarray(trace.index["first"], dtype=np.int64).tolist() if self.n_refs else [0]
        )
        # Strand records as lists while the replay runs (a list item costs a third of a
        # numpy item per strand); arrays() turns them into arrays at the end.
        self.strand_core = [-1] * n
        self.strand_start = [-1] * n
        self.strand_end = [-1] * n
        self.cost_ns = [0] * n
        # Per strand: (private misses, last-level misses, local DRAM, remote DRAM).
        self.strand_mem: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)] * n
        self.finished = 0
        self.refs_done = 0
        self.start_cycle = -1
        self.finish_cycle = -1
        # Accounting: core-cycles held (up to last_change), cycles running strands and
        # cycles of scheduling decisions.
        self.last_change = self.arrival
        self.allot_cycles = 0
        self.busy = 0
        self.schedc = 0
        # Private-cache misses of the job's strands, and of its cores' first references
        # after they moved to it (the cache cost of reallocations).
        self.pmiss = 0
        # Cores that moved to the job from another (each unavailable costs.core_move).
        self.core_moves = 0
        self.warm_refs = 0
        self.warm_misses = 0
        self.cores: set[int] = set()
        self.sleeping: set[int] = set()

        def wake_job(n: int | None = None, cores: Sequence[int] | None = None) -> None:
            wake(self, n, cores)

        self.ctx = SchedContext(machine, (), trace, wake_job, job=jid, facts=facts)
        self.sched = scheduler(self.ctx, params, rng)
        # Desire reported by the scheduler at quantum boundaries (None: not reported).
        self.desire: int | None = None

    def detach(self) -> None:
        """Cut the scheduler's wake callback (the run is over): it points at this job and
        at the replay, a reference cycle through the job's own context."""
        self.ctx._wake = _woken_after_run

    @property
    def done(self) -> bool:
        """Whether every strand has finished."""
        return self.finished >= self.n

    def chunk_of_ref(self, g: int) -> int:
        """Index of the trace chunk holding global reference ``g``."""
        return bisect_right(self.chunk_first, g) - 1

    def release(self, s: int) -> tuple[list[int], list[int]]:
        """Mark strand ``s`` finished; return the strands it made ready and their edges."""
        ready: list[int] = []
        kinds: list[int] = []
        pred = self.pred_rem
        dst = self.succ_dst
        for i in range(self.succ_off[s], self.succ_off[s + 1]):
            d = dst[i]
            r = pred[d] - 1
            pred[d] = r
            if r == 0:
                ready.append(d)
                kinds.append(self.succ_kind[i])
        self.finished += 1
        self.refs_done += self.ref_start[s + 1] - self.ref_start[s]
        return ready, kinds

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The strand records (core, start, end) as int64 arrays."""
        return (
            np.asarray(self.strand_core, dtype=np.int64),
            np.asarray(self.strand_start, dtype=np.int64),
            np.asarray(self.strand_end, dtype=np.int64),
        )

    def mem_arrays(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        """The per-strand memory counters as int64 arrays, one per name (in order)."""
        table = np.asarray(self.strand_mem, dtype=np.int64).reshape(self.n, len(names))
        return {name: table[:, i].copy() for i, name in enumerate(names)}

    def outputs(self) -> tuple[dict[str, int], dict[str, Any]]:
        """The scheduler's ``counters`` and :meth:`~Scheduler.record_fields` after the
        replay, checked: a value the record cannot hold failed later, naming no
        scheduler (``int()`` of a counter, or ``run --json`` printing the record)."""
        where = f"scheduler {self.sched.name!r} of job {self.name!r}"
        counters = self.sched.counters
        if not isinstance(counters, dict):
            raise contract_error(
                self.sched, f"{where}: counters is {counters!r}, not a dict of integers"
            )
        for k, v in counters.items():
            if not isinstance(k, str) or isinstance(v, bool) or not _is_integer(v):
                raise contract_error(self.sched, f"{where}: counter {k!r} is {v!r}, not an integer")
        fields = self.sched.record_fields()
        if not isinstance(fields, dict) or any(not isinstance(k, str) for k in fields):
            raise contract_error(
                self.sched, f"{where}: record_fields() gave {fields!r}, not a dict by name"
            )
        try:
            canonical_json(fields, strict=True)
        except (TypeError, ValueError) as exc:
            raise contract_error(
                self.sched, f"{where}: record_fields() gave a value no record holds ({exc})"
            ) from None
        return dict(counters), dict(fields)

    def ask_desire(self, now: int) -> int | None:
        """The scheduler's :meth:`~Scheduler.on_quantum` at ``now``: the job's processor
        desire, or None when it reports none."""
        d = self.sched.on_quantum(now)
        if d is None:
            return None
        # A desire of another kind failed later inside the controller ("invalid literal
        # for int()"), a float was truncated, a negative one blamed "desires".
        if isinstance(d, bool) or not _is_integer(d) or d < 0:
            raise contract_error(
                self.sched,
                f"scheduler {self.sched.name!r} of job {self.name!r} answered on_quantum at "
                f"{now} with {d!r}: a processor desire is an integer >= 0, or None",
            )
        return int(d)

    def check_runnable(self, s: int, c: int, now: int) -> None:
        """Raise if the scheduler chose a strand that is not ready or already ran."""
        if s < 0 or s >= self.n or self.strand_core[s] != -1 or self.pred_rem[s] != 0:
            raise contract_error(
                self.sched,
                f"scheduler {self.sched.name!r} of job {self.name!r} chose strand {s} on "
                f"core {c} at {now}, which is not ready or already ran",
            )
