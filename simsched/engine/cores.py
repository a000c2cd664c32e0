"""The core driver: the only engine code that knows the memory model.

It owns the per-core state array ``cs`` and the reference buffers that the memory model's
window loop (:mod:`simsched.memory.window`, ``run_cores``) advances, builds the machine's
:class:`~simsched.memory.MemorySystem`, starts strands on cores, refills buffers from a
job's reference stream, grows the page table when the loop asks, and turns the loop's
return codes into the two things the event loop cares about: "core ``c`` finished its
strand" and "the engine's own next event is due".

Each core's buffer holds the next segment of its strand's references (never crossing a
trace chunk), copied from the job's chunk pool and shifted into the job's physical
address space (:attr:`simsched.engine.job.Job.addr_offset`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from simsched.errors import TraceFormatError
from simsched.memory import MemorySystem
from simsched.memory.window import (
    CODE_MUL,
    F_CLOCK,
    F_LAST,
    F_LEN,
    F_PMISS,
    F_POS,
    F_REFS,
    F_STATE,
    F_TAIL,
    INF,
    NF,
    R_DONE,
    R_GROW,
    R_INVALID,
    R_REFILL,
    S_IDLE,
    S_RUN,
)

#: Default references per core buffer.
DEFAULT_BUFFER_REFS = 1 << 14


def private_threshold(machine: Any) -> int:
    """Largest hit latency of the per-core levels: a longer reference missed them all."""
    lat = [c.hit_latency for c in machine.caches if c.scope == "core"]
    return int(max(lat)) if lat else -1


class CoreDriver:
    """Per-core clocks, buffers and the calls into the memory model's window loop.

    Parameters
    ----------
    machine
        The machine.
    window
        Interleaving window in cycles (0 = strict global order of references).
    buffer_refs
        Capacity of each core's reference buffer.
    memory
        A :class:`MemorySystem` of ``machine`` to use (default: a new one).
    """

    def __init__(
        self,
        machine: Any,
        *,
        window: int,
        buffer_refs: int = DEFAULT_BUFFER_REFS,
        memory: MemorySystem | None = None,
    ) -> None:
        self.machine = machine
        self.memory = memory if memory is not None else MemorySystem(machine)
        P = machine.cores
        B = int(buffer_refs)
        self.P, self.B = P, B
        self.cs = np.zeros((NF, P), dtype=np.int64)
        self.heap = np.zeros(P, dtype=np.int64)
        self.baddr = np.zeros((P, B), dtype=np.int64)
        self.bsize = np.zeros((P, B), dtype=np.uint8)
        self.bwrite = np.zeros((P, B), dtype=np.bool_)
        self.bgap = np.zeros((P, B), dtype=np.uint32)
        self.window = np.int64(window)
        self.pthresh = np.int64(private_threshold(machine))
        self.plimit = np.int64(self.memory.page_limit())
        self.kernel = self.memory.run_cores
        # Reference source of each core's strand: the job, next and end global ref index.
        self.job: list[Any] = [None] * P
        self.gcur = [0] * P
        self.gend = [0] * P
        self.chunk: list[Any] = [None] * P
        self.kernel_calls = 0
        self.kernel_ns = 0

    # -- strands ----------------------------------------------------------------------
    def start(self, c: int, job: Any, s: int, at: int) -> None:
        """Start strand ``s`` of ``job`` on core ``c`` at cycle ``at``."""
        cs = self.cs
        cs[F_CLOCK, c] = at
        cs[F_PMISS, c] = 0
        cs[F_TAIL, c] = job.tail[s]
        self.job[c] = job
        self.gcur[c] = job.ref_start[s]
        self.gend[c] = job.ref_start[s + 1]
        self._fill(c)
        cs[F_STATE, c] = S_RUN

    def finish(self, c: int) -> tuple[int, int]:
        """Retire core ``c``'s finished strand; returns (end cycle, its private misses)."""
        cs = self.cs
        cs[F_STATE, c] = S_IDLE
        self.chunk[c] = None  # only the job's pool keeps decoded chunks alive
        return int(cs[F_CLOCK, c]), int(cs[F_PMISS, c])

    def _fill(self, c: int) -> None:
        g = self.gcur[c]
        e = self.gend[c]
        cs = self.cs
        if g >= e:
            cs[F_LEN, c] = 0
            cs[F_POS, c] = 0
            cs[F_LAST, c] = 1
            return
        job = self.job[c]
        ch = self.chunk[c]
        if ch is None or not (ch.start <= g < ch.start + len(ch)):
            ch = job.chunk_of(g)
            self.chunk[c] = ch
        lo = g - ch.start
        hi = min(e - ch.start, len(ch), lo + self.B)
        m = hi - lo
        addr = ch.addr[lo:hi].view(np.int64)
        off = job.addr_offset
        if off:
            np.add(addr, off, out=self.baddr[c, :m])
        else:
            self.baddr[c, :m] = addr
        self.bsize[c, :m] = ch.size[lo:hi]
        self.bwrite[c, :m] = ch.write[lo:hi]
        self.bgap[c, :m] = ch.gap[lo:hi]
        self.gcur[c] = g + m
        cs[F_LEN, c] = m
        cs[F_POS, c] = 0
        cs[F_LAST, c] = 1 if g + m >= e else 0

    # -- the window loop ----------------------------------------------------------------
    def advance(self, limit: int) -> int:
        """Run the cores until one finishes its strand or ``limit`` is the next event.

        Returns
        -------
        int
            The core that finished (its clock is the finishing time), or -1 when the
            engine's own event at ``limit`` comes first or no core runs.
        """
        mem = self.memory
        cs = self.cs
        lim = np.int64(min(int(limit), INF))
        perf = time.perf_counter_ns
        while True:
            k0 = perf()
            code = self.kernel(
                mem.state,
                cs,
                self.heap,
                self.baddr,
                self.bsize,
                self.bwrite,
                self.bgap,
                lim,
                self.window,
                self.pthresh,
                self.plimit,
            )
            self.kernel_ns += perf() - k0
            self.kernel_calls += 1
            kind, c = divmod(int(code), CODE_MUL)
            if kind == R_DONE:
                return c
            if kind == R_REFILL:
                self._fill(c)
                cs[F_STATE, c] = S_RUN
                continue
            if kind == R_GROW:
                mem.grow()
                self.plimit = np.int64(mem.page_limit())
                continue
            if kind == R_INVALID:
                job = self.job[c]
                raise TraceFormatError(
                    f"{getattr(job, 'name', 'trace')}: core {c} met a reference the memory "
                    "model cannot serve (address beyond the physical address space, or size 0); run `simsched trace "
                    "validate` on the trace"
                )
            return -1

    @property
    def refs_per_core(self) -> np.ndarray:
        """References issued by every core so far."""
        return self.cs[F_REFS].copy()

    def refs_of(self, c: int) -> int:
        """References issued by core ``c`` so far."""
        return int(self.cs[F_REFS, c])
