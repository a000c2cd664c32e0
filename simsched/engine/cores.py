"""The core driver: the only engine code that knows the memory model.

It owns the per-core state array ``cs`` that the memory model's window loop
(:mod:`simsched.memory.window`, ``run_cores``) advances, builds the machine's
:class:`~simsched.memory.MemorySystem`, starts strands on cores, moves a core to the next
chunk of its strand, grows the page table when the loop asks, and turns the loop's return
codes into the two things the event loop cares about: "core ``c`` finished its strand"
and "the engine's own next event is due".

**Chunk slots.**  Cores read their references in place from decoded trace chunks: the
driver keeps ``slots`` rows of five 2-D arrays (addresses, sizes, write flags, gaps,
dependence flags), one
decoded chunk per row, shared by all jobs and managed as an LRU cache keyed by (job,
chunk).  A core running a strand pins the row it reads; starting a strand costs a dict
look-up, not a copy of its references.  Chunks are decoded ahead by background threads
(reading, decompression and decoding release the GIL) while the cores run, most urgent
first (:mod:`simsched.engine.ahead`: ready strands, before the run the first strands to
become ready, and the chunk after one a core reads near its end); results never depend on it, a core that needs a chunk in flight waits
for it.  A job's address space is applied by the loop
(``F_OFF``), so rows hold the trace's own addresses.

**Per-core stacks.**  A trace that names its stack region is replayed with every core's
stack references moved to that core's own copy of the region
(:mod:`simsched.memory.stacks`).  The shared rows keep the trace's addresses; a core
running such a job reads each segment of its strand (at most :data:`SEGMENT_REFS`
references) from a private stretch of the slot arrays, copied from the shared row and
remapped when the segment starts.  Core 0's copy is the trace's own region, so a one-core
replay reads exactly what it read before.
"""

from __future__ import annotations

import mmap
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simsched.engine.ahead import NEXT, READY, START, DecodeQueue, first_chunks
from simsched.errors import ConfigError, TraceFormatError
from simsched.host import available_bytes as available_memory
from simsched.memory import MemorySystem
from simsched.memory.stacks import copy_segment
from simsched.memory.window import (
    CODE_MUL,
    F_CLOCK,
    F_LAST,
    F_LEN,
    F_OFF,
    F_PMISS,
    F_POS,
    F_REFS,
    F_SLOT,
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
from simsched.workloads import CHUNK_PARAM

if TYPE_CHECKING:
    from simsched.engine.job import Job
    from simsched.machine import Machine

#: Chunks decoded ahead and not read yet at most, counting those being decoded, unless
#: ready strands want more (:mod:`simsched.engine.ahead`).
PREFETCH_DEPTH = 4
#: Background decoder threads (reading, decompressing and decoding release the GIL; two
#: keep a 2-CPU host busy while the engine waits for a chunk).  Chunks are handed to them
#: one per thread, so that the most urgent chunk wanted next never queues behind others.
DECODE_THREADS = 2
#: Seconds between looks at the decoder while the engine waits for a chunk in flight.
WAIT_POLL_S = 0.002
#: A core is handed at most this many references at a time; the window loop returns for
#: the next segment, which restarts the core's window.  The first engine copied segments
#: of this size into per-core buffers, and windowed replays keep its interleaving
#: exactly (tests/engine/test_golden.py); the cost is one return per 16 K references.
SEGMENT_REFS = 1 << 14
#: A core whose segment ends in the last this-many-th part of its chunk (or within two
#: segments of its end) wants the next chunk decoded.  Under PDF the cores move through the
#: trace together and use a chunk up in a fraction of a decode's time; a quarter measured
#: better than two segments (decode wait 0.19-0.23 of the wall time against 0.23-0.25 at
#: 32 cores) and, under WS, than a whole chunk (79 decodes against 84 for 60 chunks).
NEXT_PART = 4
#: Bytes of chunk buffers a run may plan (shared rows plus the cores' private stretches).
#: Below it every core reads its chunk's row in place (one row per core, as in the first
#: engine); above it the shared rows are capped and every core reads through its private
#: stretch, so the buffers stop growing with the cores (see :func:`buffer_plan`).
BUFFER_BUDGET = 640 << 20
#: Rows reading in place adds per core beyond the minimum, while the budget allows: they
#: hold chunks decoded ahead for cores that move on (a stolen strand, the next chunk) and
#: chunks cores come back to.  The published AMD 6P (8096 x 64 x 64 cells, one leaf a
#: quarter of a chunk) under WS at 16 cores decoded 1,154 chunks for its 1,012 with them,
#: against 1,735 (571 of them pushed out unread): 0.90x the CPU time, CATS 0.97x.
SPARE_ROWS_PER_CORE = 1
#: Bytes of chunk buffers a run may plan when its rows then hold every chunk of its
#: traces (64 chunks of 2^20 references at 256 cores), where the budget above would make every
#: core copy its segments and chunks be pushed out and decoded again: each chunk is then
#: decoded once and read in place.  A mergesort of 2^20 keys (60 such chunks) under WS on
#: itrs-scaling-256 decoded 609 chunks in 640 MiB and 60 held whole: 3.3-3.5 s of the
#: engine's CPU time against 7.0-7.1 s, 1.17 GB peak resident memory against 0.90 GB
#: (docs/performance.md).  Held to half the host's available memory (:func:`whole_budget`).
WHOLE_TRACE_BUDGET = 1 << 30
#: Bytes per buffered reference: address (8), size (1), write flag (1), gap (4), dependence
#: flag (1).
REF_BYTES = 15


class BufferPlan(NamedTuple):
    """How a run's chunk buffers are laid out (:func:`buffer_plan`).

    Attributes
    ----------
    rows
        Shared rows, one decoded chunk each.
    copy
        True: every core reads its segments from its private stretch (copied from a
        shared row, which is unpinned at once); False: cores read shared rows in place.
    nbytes
        Bytes the buffers take when every row and stretch is in use.
    whole
        The rows hold every chunk of the run's traces: none is pushed out.
    """

    rows: int
    copy: bool
    nbytes: int
    whole: bool = False


def whole_budget() -> int:
    """Bytes a plan that holds every chunk may take (:data:`WHOLE_TRACE_BUDGET`, at most
    half the host's available memory)."""
    have = available_memory()
    return WHOLE_TRACE_BUDGET if have is None else min(WHOLE_TRACE_BUDGET, have // 2)


def buffer_plan(
    cores: int,
    width: int,
    budget: int | None = None,
    chunks: int | None = None,
    whole: int = 0,
) -> BufferPlan:
    """The chunk buffers of a run on ``cores`` cores whose longest chunk is ``width``.

    Reading in place pins one row per running core, so the rows are the cores plus
    :data:`PREFETCH_DEPTH` plus two, and :data:`SPARE_ROWS_PER_CORE` more per core as far
    as ``budget`` allows; their bytes grow with the cores.  When the first bytes
    exceed ``budget`` (default :data:`BUFFER_BUDGET`), the shared rows are as many as the
    budget leaves after the private stretches (at least :data:`PREFETCH_DEPTH` plus two,
    so that a row to decode into always exists) and every core copies each segment
    (at most :data:`SEGMENT_REFS` references) to its own stretch: the references a core
    reads are the same, only where they sit differs, so results are identical.

    A run of ``chunks`` chunks in all gets one row per chunk (at least
    :data:`PREFETCH_DEPTH` plus two) instead, read in place, when that is fewer rows than
    reading in place would take, or when reading in place does not fit ``budget`` and one
    row per chunk fits ``whole``: a chunk then keeps its row once decoded, so a row to
    decode into always exists and nothing is decoded twice.

    Parameters
    ----------
    cores
        Cores of the machine (each has a private stretch).
    width
        References in the longest chunk of any job's trace.
    budget
        Bytes the plan aims to stay under.
    chunks
        Chunks of every job's trace together (None: not known).
    whole
        Bytes a plan of one row per chunk may take where ``budget`` is too small for
        reading in place (:func:`whole_budget`; 0: never more than ``budget``).

    Returns
    -------
    BufferPlan
        The rows, the reading mode and the bytes planned (which exceed ``budget`` only
        when the minimum rows and the stretches alone do).
    """
    budget = BUFFER_BUDGET if budget is None else int(budget)
    w = max(int(width), 1)
    row = w * REF_BYTES
    seg = min(SEGMENT_REFS, w)
    stretches = -(-int(cores) // (w // seg)) * row
    rows = int(cores) + PREFETCH_DEPTH + 2
    every = None if chunks is None else max(int(chunks), PREFETCH_DEPTH + 2)
    if rows * row + stretches <= budget:
        rows += min(int(cores) * SPARE_ROWS_PER_CORE, (budget - rows * row - stretches) // row)
        if every is not None and every <= rows:
            return BufferPlan(every, False, every * row + stretches, True)
        return BufferPlan(rows, False, rows * row + stretches)
    if every is not None and every * row + stretches <= max(budget, int(whole)):
        return BufferPlan(every, False, every * row + stretches, True)
    rows = max(PREFETCH_DEPTH + 2, (budget - stretches) // row)
    return BufferPlan(rows, True, rows * row + stretches)


def private_threshold(machine: Machine) -> int:
    """Largest hit latency of the per-core levels: a longer reference missed them all."""
    lat = [c.hit_latency for c in machine.caches if c.scope == "core"]
    return int(max(lat)) if lat else -1


def check_buffers(plan: BufferPlan, cores: int, width: int, machine: str = "machine") -> None:
    """Refuse, before anything is allocated, a run whose buffers exceed the budget
    (:data:`BUFFER_BUDGET`: the minimum rows and the cores' private stretches alone do;
    a plan of one row per chunk was held to :func:`whole_budget` when it was made) or the
    host's available memory.

    Raises
    ------
    ConfigError
        One line naming the machine, its cores, the bytes needed and the limit.
    """
    have = available_memory()
    limit, what = BUFFER_BUDGET, "the buffer budget"
    if plan.whole:  # planned within whole_budget(), which the host's memory bounds
        limit = max(limit, plan.nbytes)
    if have is not None and have < limit:
        limit, what = have, "the host's available memory"
    if plan.nbytes > limit:
        # The stretches shrink with the chunks below SEGMENT_REFS: name a chunk size that
        # fits, the one remedy short of fewer cores (a generator's chunk_refs). Above
        # SEGMENT_REFS the bytes are not monotonic in the chunk size, so it is the largest
        # power of two below the width that fits, not a bound on every smaller size; and
        # no generator writes chunks below CHUNK_PARAM's minimum.
        fits = 1 << ((max(int(width), 2) - 1).bit_length() - 1)  # below the width
        least = int(CHUNK_PARAM.minimum or 1)
        while fits >= least and buffer_plan(cores, fits).nbytes > limit:
            fits >>= 1
        remedy = (
            f"; a trace written in chunks of {fits:,} references fits "
            f"(a generator's chunk_refs={fits})"
            if fits >= least
            else ""
        )
        raise ConfigError(
            f"{machine}: {cores} cores need {plan.nbytes / 2**20:,.0f} MiB of trace buffers "
            f"({plan.rows} chunk rows of {width * REF_BYTES / 2**20:.1f} MiB and {cores} "
            f"per-core stretches), more than {what} ({limit / 2**20:,.0f} MiB){remedy}"
        )


def small_pages(shape: tuple[int, int], dtype: Any) -> np.ndarray:
    """A zeroed array in anonymous memory of ordinary pages.

    NumPy asks for transparent huge pages on large arrays; on a busy host the kernel then
    compacts memory to find each 2 MB page when it is first written, which made a chunk's
    first decode into a fresh row cost 2-3 times a decode into a used one (measured
    26-38 ms against 17 ms CPU).  The rows are written once per decode and read
    sequentially, so huge pages buy them nothing.
    """
    n = int(shape[0]) * int(shape[1])
    if not hasattr(mmap, "MAP_ANONYMOUS"):  # not a POSIX host
        return np.zeros(shape, dtype)
    nbytes = max(n * np.dtype(dtype).itemsize, 1)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        buf.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buf, dtype, count=n).reshape(shape)


class ChunkSlots:
    """Decoded trace chunks in the rows of five 2-D arrays, an LRU cache by (job, chunk).

    Parameters
    ----------
    rows
        Number of shared rows: more than the cores can pin and the decoders fill (at least
        :data:`PREFETCH_DEPTH` plus two), or at least one per chunk of the run's traces, so
        that a row to decode into always exists (see :func:`buffer_plan`).
    width
        Row length: the longest chunk of any job's trace.
    private
        Cores that get a private stretch of :attr:`seg` references (:meth:`private`),
        in extra rows after the shared ones.
    """

    def __init__(self, rows: int, width: int, private: int = 0, ahead: bool = True) -> None:
        w = max(int(width), 1)
        #: length of a core's private stretch (a segment never exceeds a chunk)
        self.seg = min(SEGMENT_REFS, w)
        per_row = w // self.seg
        self.shared = rows
        self.per_row = per_row
        rows += -(-int(private) // per_row)
        self.addr = small_pages((rows, w), np.uint64)
        self.addr_i64 = self.addr.view(np.int64)
        self.size = small_pages((rows, w), np.uint8)
        self.write = small_pages((rows, w), np.bool_)
        self.gap = small_pages((rows, w), np.uint32)
        self.dep = small_pages((rows, w), np.bool_)
        self.first = [0] * rows  # global index of the row's first reference
        self.length = [0] * rows
        self.pins = [0] * rows
        self.where: dict[tuple[int, int], int] = {}
        self.key: list[tuple[int, int] | None] = [None] * rows
        # Rows that hold a chunk and are not pinned, least recently used first; and rows
        # that hold nothing.
        self.lru: OrderedDict[int, None] = OrderedDict()
        self.free = list(range(self.shared - 1, -1, -1))
        self.flight: dict[tuple[int, int], tuple[int, Future]] = {}
        #: whether chunks are decoded ahead, and at most how many at once
        self.on = ahead
        self.depth = DECODE_THREADS if ahead else 0
        self.ahead: DecodeQueue[Any] = DecodeQueue()
        self.executor = ThreadPoolExecutor(
            max_workers=DECODE_THREADS, thread_name_prefix="simsched-decode"
        )
        self.loads = 0
        #: rows decoded ahead (or being decoded) that no core has read yet
        self.early: set[int] = set()
        #: those of them decoded on a guess about the next chunk (NEXT)
        self.guessed: set[int] = set()
        #: chunks handed to the background decoder, and of them those pushed out of their
        #: row before any core read them
        self.ahead_loads = 0
        self.wasted = 0
        #: nanoseconds the engine waited for decoding (a chunk in flight or decoded in place)
        self.wait_ns = 0

    def _row_for(self) -> int:
        if self.free:
            return self.free.pop()
        r, _ = self.lru.popitem(last=False)
        if r in self.early:
            self.early.discard(r)
            self.guessed.discard(r)
            self.wasted += 1
        key = self.key[r]
        assert key is not None, "an LRU row holds a chunk"
        del self.where[key]
        self.key[r] = None
        return r

    def _out(self, r: int) -> tuple[np.ndarray, ...]:
        return (self.addr[r], self.size[r], self.write[r], self.gap[r], self.dep[r])

    def _decode(self, trace: Any, k: int, r: int) -> Any:
        """Decode chunk ``k`` of ``trace`` into row ``r`` (safe from any thread)."""
        return trace.load_chunk(k, self._out(r))

    def _install(self, key: tuple[int, int], r: int, ch: Any) -> None:
        self.loads += 1
        self.first[r] = ch.start
        self.length[r] = len(ch)
        self.where[key] = r
        self.key[r] = key

    def _harvest(self) -> None:
        """Move chunks the background decoder has finished into the cache (unpinned), so
        that they count as resident and free their place in flight."""
        for key, (r, fut) in list(self.flight.items()):
            if fut.done():
                del self.flight[key]
                if fut.exception() is None:
                    self._install(key, r, fut.result())
                    self.lru[r] = None
                else:  # decoded again where it is needed, and the error raised there
                    self.early.discard(r)
                    self.guessed.discard(r)
                    self.free.append(r)

    def pump(self) -> None:
        """Hand the decoder the most urgent wanted chunks, one per thread (each into a row
        of its own, taken from the free or least recently used rows)."""
        flight = self.flight
        if flight:
            self._harvest()
        ahead = self.ahead
        guessed = self.guessed
        while len(flight) < self.depth and ahead:
            u = ahead.urgency()
            if u is None or (u >= NEXT and len(guessed) >= PREFETCH_DEPTH):
                # guesses beyond ready strands hold few rows, so they do not push out
                # chunks that cores come back to
                break
            got = ahead.pop()
            if got is None:
                break
            key, trace = got
            if key in self.where or key in flight:
                continue
            r = self._row_for()
            self.early.add(r)
            if u >= NEXT:
                guessed.add(r)
            self.ahead_loads += 1
            flight[key] = (r, self.executor.submit(self._decode, trace, key[1], r))

    def acquire(self, job: Job, k: int) -> int:
        """Pin and return the row holding chunk ``k`` of ``job``, decoding it if needed."""
        key = (job.jid, k)
        r = self.where.get(key)
        if r is None:
            t0 = time.perf_counter_ns()
            got = self.flight.pop(key, None)
            if got is not None:
                r, fut = got
                while True:
                    try:  # a decoding error surfaces here, where it is needed
                        ch = fut.result(timeout=WAIT_POLL_S)
                        break
                    except TimeoutError:
                        self.pump()  # the other threads decode on while this one waits
            else:
                self.ahead.discard(key)
                r = self._row_for()
                if self.on:
                    self.pump()  # before this thread is busy decoding
                ch = self._decode(job.trace, k, r)
            self.wait_ns += time.perf_counter_ns() - t0
            self._install(key, r, ch)
        elif self.pins[r] == 0:
            del self.lru[r]
        self.early.discard(r)
        self.guessed.discard(r)
        self.pins[r] += 1
        if self.on:
            self.pump()
        return r

    def private(self, c: int) -> tuple[int, int]:
        """Core ``c``'s private stretch: (row, offset of its first position)."""
        q, k = divmod(c, self.per_row)
        return self.shared + q, k * self.seg

    def release(self, r: int) -> None:
        """Unpin row ``r`` (it stays cached)."""
        self.pins[r] -= 1
        if self.pins[r] == 0:
            self.lru[r] = None

    def want(self, jid: int, trace: Any, k: int, urgency: int = READY) -> None:
        """Want chunk ``k`` of job ``jid``'s ``trace`` decoded ahead (in the background,
        most urgent first; :mod:`simsched.engine.ahead`) unless resident or coming."""
        key = (jid, k)
        if self.on and key not in self.where and key not in self.flight:
            self.ahead.want(key, urgency, trace)
            self.pump()

    def close(self) -> None:
        """Stop the background decoder (chunks in flight are dropped)."""
        self.executor.shutdown(wait=True, cancel_futures=True)


class Entry:
    """A Numba kernel called through its compiled entry (:func:`compiled_entry`): the
    first :attr:`call` goes through the dispatcher, which compiles or loads the kernel for
    the argument types, and resolves the entry later calls go to.  The caller passes
    arguments of the same types at every call."""

    __slots__ = ("kernel", "call")

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.call: Any = self._first

    def _first(self, *args: Any) -> Any:
        out = self.kernel(*args)
        self.call = compiled_entry(self.kernel, args)
        return out


def compiled_entry(kernel: Any, args: tuple[Any, ...]) -> Any:
    """The compiled function a Numba dispatcher ``kernel`` runs for ``args``, to be
    called with arguments of the same types.

    The engine calls the window loop tens of thousands of times per run (at every event
    of its own, and at every steal attempt under WS on many cores), often for a few
    references: the dispatcher's per-call work (typing every argument, a tuple of a
    dozen arrays among them, and finding the overload) took 1.5-2 us of a call that
    costs 0.7 us through the compiled entry.  The code run is the same.  Falls back to
    ``kernel`` when it is no dispatcher or has no overload for these types.
    """
    try:
        sig = tuple(kernel.typeof_pyval(a) for a in args)
        return kernel.overloads[sig].entry_point
    except (AttributeError, KeyError):
        return kernel


class CoreDriver:
    """Per-core clocks, chunk slots and the calls into the memory model's window loop.

    Parameters
    ----------
    machine
        The machine.
    window
        Interleaving window in cycles (0 = strict global order of references).
    chunk_width
        The longest trace chunk of any job (the length of a slot row).
    memory
        A :class:`MemorySystem` of ``machine`` to use (default: a new one).
    plan
        The buffers' layout (default: :func:`buffer_plan` of the machine's cores).
    decode_ahead
        Decode chunks ahead in the background (:mod:`simsched.engine.ahead`); False: each
        chunk when a core needs it.  Results are the same either way.
    first
        (job number, trace) of the jobs that start the run: the chunks of their first
        strands are decoded ahead from now on (:meth:`prefetch_start`), while the memory
        model is built or loaded.
    """

    def __init__(
        self,
        machine: Any,
        *,
        window: int,
        chunk_width: int,
        memory: MemorySystem | None = None,
        plan: BufferPlan | None = None,
        decode_ahead: bool = True,
        first: Sequence[tuple[int, Any]] = (),
    ) -> None:
        self.machine = machine
        P = machine.cores
        self.P = P
        self.cs = np.zeros((NF, P), dtype=np.int64)
        self.heap = np.zeros(P, dtype=np.int64)
        self.plan = plan if plan is not None else buffer_plan(P, chunk_width)
        self.slots = ChunkSlots(self.plan.rows, chunk_width, private=P, ahead=decode_ahead)
        if decode_ahead:
            self.prefetch_start(first)
        try:
            self.memory = memory if memory is not None else MemorySystem(machine)
        except BaseException:
            self.slots.close()
            raise
        # Scalars of the window loop as Python ints: NumPy scalars cost the call more.
        self.window = int(window)
        self.pthresh = private_threshold(machine)
        self.plimit = int(self.memory.page_limit())
        self.kernel = self.memory.run_cores
        self._loop = Entry(self.kernel)
        self._copy = Entry(copy_segment)
        # A flat view of cs for the per-strand reads and writes in Python: an item of a
        # memoryview is a plain int, where cs[f, c] makes a NumPy scalar (3-5x the cost).
        self._cv = self.cs.reshape(-1).data
        self.job: list[Any] = [None] * P
        self.gend = [0] * P  # global index past the last reference of each core's strand
        self.row = [-1] * P  # slot row each core has pinned
        self.seg_end = [0] * P  # global index past the last reference of each core's segment
        self.kernel_calls = 0
        self.kernel_ns = 0

    # -- strands ----------------------------------------------------------------------
    def start(self, c: int, job: Job, s: int, at: int) -> None:
        """Start strand ``s`` of ``job`` on core ``c`` at cycle ``at``."""
        cv, P = self._cv, self.P
        cv[F_CLOCK * P + c] = at
        cv[F_PMISS * P + c] = 0
        cv[F_TAIL * P + c] = job.tail[s]
        cv[F_OFF * P + c] = job.addr_offset
        self.job[c] = job
        self.gend[c] = job.ref_start[s + 1]
        self._map(c, job.ref_start[s])
        cv[F_STATE * P + c] = S_RUN

    def finish(self, c: int) -> tuple[int, int]:
        """Retire core ``c``'s finished strand; returns (end cycle, its private misses)."""
        cv, P = self._cv, self.P
        cv[F_STATE * P + c] = S_IDLE
        return cv[F_CLOCK * P + c], cv[F_PMISS * P + c]

    def prefetch(self, job: Job, strands: list[int]) -> None:
        """Decode ahead the chunks holding the first references of ``strands`` (ready:
        any idle core may take them now)."""
        rs = job.ref_start
        want = self.slots.want
        for s in strands:
            if rs[s] < rs[s + 1]:
                want(job.jid, job.trace, job.chunk_of_ref(rs[s]))

    def prefetch_start(self, jobs: Sequence[tuple[int, Any]]) -> None:
        """Decode ahead, before the run starts, the chunks of the strands that become
        ready first in the traces of ``jobs`` ((job number, trace) pairs): every idle core
        takes one of them at once (:func:`~simsched.engine.ahead.first_chunks`).  At most
        as many chunks as cores, and as the rows left when every core pins one."""
        if not jobs:
            return
        room = min(self.P, self.plan.rows - PREFETCH_DEPTH - 2)
        each = max(room // len(jobs), 1)
        for jid, trace in jobs:
            for k in first_chunks(trace, each):
                self.slots.want(jid, trace, k, START)

    def _map(self, c: int, g: int) -> None:
        """Point core ``c`` at its references from global index ``g`` to the strand's end."""
        e = self.gend[c]
        cv, P = self._cv, self.P
        slots = self.slots
        old = self.row[c]
        if g >= e:
            cv[F_SLOT * P + c] = 0
            cv[F_POS * P + c] = 0
            cv[F_LEN * P + c] = 0
            cv[F_LAST * P + c] = 1
            return
        job = self.job[c]
        k = job.chunk_of_ref(g)
        r = slots.acquire(job, k)
        if old >= 0:
            slots.release(old)
        self.row[c] = r
        first = slots.first[r]
        end = first + slots.length[r]
        stop = min(e, end, g + SEGMENT_REFS)
        self.seg_end[c] = stop
        if stop + max(2 * SEGMENT_REFS, (end - first) // NEXT_PART) >= end and end < job.n_refs:
            # near the chunk's end: this core, or the next strand laid out after this
            # one, reads on into the next chunk
            slots.want(job.jid, job.trace, k + 1, NEXT)
        cv[F_LAST * P + c] = 1 if stop == e else 0
        st = job.stacks
        if (st is not None and c > 0) or self.plan.copy:
            # This core's own stack, or too many cores for a row each: copy the segment to
            # the core's stretch (remapping its stack) and let the shared row go.
            pr, at = slots.private(c)
            n = stop - g
            lo, hi, shift = (st.lo, st.hi, st.shift(c)) if st is not None and c > 0 else (0, 0, 0)
            self._copy.call(
                slots.addr_i64, slots.size, slots.write, slots.gap, slots.dep,
                r, g - first, pr, at, n, lo, hi, shift,
            )  # fmt: skip
            slots.release(r)
            self.row[c] = -1
            cv[F_SLOT * P + c] = pr
            cv[F_POS * P + c] = at
            cv[F_LEN * P + c] = at + n
            return
        cv[F_SLOT * P + c] = r
        cv[F_POS * P + c] = g - first
        cv[F_LEN * P + c] = stop - first

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
        lim = min(int(limit), INF)
        perf = time.perf_counter_ns
        sl = self.slots
        loop = self._loop
        while True:
            k0 = perf()
            code = loop.call(
                mem.state,
                cs,
                self.heap,
                sl.addr_i64,
                sl.size,
                sl.write,
                sl.dep,
                sl.gap,
                lim,
                self.window,
                self.pthresh,
                self.plimit,
            )
            self.kernel_ns += perf() - k0
            self.kernel_calls += 1
            kind, c = divmod(code, CODE_MUL)
            if kind == R_DONE:
                return c
            if kind == R_REFILL:
                self._map(c, self.seg_end[c])
                self._cv[F_STATE * self.P + c] = S_RUN
                continue
            if kind == R_GROW:
                mem.grow()
                self.plimit = int(mem.page_limit())
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
        return self._cv[F_REFS * self.P + c]
