"""Layout of the memory model's state and the geometry its kernels are specialised on.

The generated kernels (:mod:`simsched.memory._kernels`) keep all mutable state in the tuple
``st`` documented in :mod:`simsched.memory.system`; the index constants of its flat arrays
(``LVL_*``, ``CORE_*``, ``NODE_*``, ``MISC_*``, ``TIM_*``, ``OOO_*``, ``PF_*``) are defined
here once, for the source generator and the Python side alike.  :class:`Geometry` holds
the constants of a machine that become literals of the generated source, and
:func:`geometry_of` reads them from a validated machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from simsched.machine import Machine
from simsched.machine.topology import routes
from simsched.trace.format import ADDRESS_BITS as VIRTUAL_BITS

__all__ = [
    "ADDRESS_BITS",
    "CORE_CYCLES",
    "CORE_FIELDS",
    "CORE_LEVEL0",
    "CORE_LINES",
    "CORE_MEM_LOCAL",
    "CORE_MEM_REMOTE",
    "CORE_QUEUE_DELAY",
    "CORE_REFS",
    "FILTER_BITS",
    "FILTER_MIN_BITS",
    "FILTER_REGION_SHIFT",
    "Geometry",
    "LVL_ACCESSES",
    "LVL_BACK_INV",
    "LVL_FIELDS",
    "LVL_HITS",
    "LVL_INVALIDATIONS",
    "LVL_MISSES",
    "LVL_WRITEBACKS",
    "MISC_PAGES",
    "MISC_PMISS",
    "MISC_PT_SHIFT",
    "MISC_STATUS",
    "MISC_TIME",
    "NMISC",
    "NNS",
    "NODE_BUSY",
    "NODE_FIELDS",
    "NODE_LOCAL",
    "NODE_QUEUE_DELAY",
    "NODE_REMOTE",
    "NODE_WB_QUEUE_DELAY",
    "NODE_WRITEBACKS",
    "NST",
    "OOO_COUNT",
    "OOO_HEAD",
    "OOO_INSTR",
    "OOO_RING",
    "PF_BEYOND",
    "PF_FIELDS",
    "PF_ISSUED",
    "PF_LATE",
    "PF_NEXT",
    "PF_OLD",
    "PF_STREAMS",
    "PF_TABLE_MAX",
    "PF_USEFUL",
    "PLACE_FIRST_TOUCH",
    "PLACE_FIXED",
    "PLACE_INTERLEAVE",
    "TIM_MEM",
    "TIM_REMOTE",
    "TIM_SERVICE",
    "geometry_of",
]

# Per level-instance statistics (flat array ``st[ST_LVL]``, index (k*MAXI + i)*NST + s).
LVL_ACCESSES, LVL_HITS, LVL_MISSES, LVL_WRITEBACKS, LVL_INVALIDATIONS, LVL_BACK_INV = range(6)
NST = 6
LVL_FIELDS = ("accesses", "hits", "misses", "writebacks", "invalidations", "back_invalidations")

# Per core statistics (flat array ``st[ST_CORE]``, index core*NCS + field; then per level
# accesses/hits/misses at CORE_LEVEL0 + 3*k, filled only for per-socket levels).
CORE_REFS, CORE_LINES, CORE_MEM_LOCAL, CORE_MEM_REMOTE, CORE_QUEUE_DELAY, CORE_CYCLES = range(6)
CORE_LEVEL0 = 6
CORE_FIELDS = ("refs", "lines", "mem_local", "mem_remote", "queue_delay", "cycles")

# Per node statistics (flat array ``st[ST_NODE]``, index node*NNS + field).
NODE_LOCAL, NODE_REMOTE, NODE_WRITEBACKS, NODE_BUSY, NODE_QUEUE_DELAY, NODE_WB_QUEUE_DELAY = range(
    6
)
NNS = 6
NODE_FIELDS = (
    "local",
    "remote",
    "writebacks",
    "busy_cycles",
    "queue_delay",
    "writeback_queue_delay",
)

# MISC array: page-table entries used, page-table hash shift, last batch end time, status.
# MISC array: page-table entries used, page-table hash shift, end time of the last
# ``_serve`` call, its status (1: invalid references were skipped) and the private-cache
# misses it counted.
MISC_PAGES, MISC_PT_SHIFT, MISC_TIME, MISC_STATUS, MISC_PMISS = range(5)
NMISC = 5

# TIMING array (run-time values, not compiled in): hit latency of each level, then the
# memory latency, the remote penalty and the controllers' service interval.  A machine
# that differs from another only in these shares its compiled module.
TIM_MEM, TIM_REMOTE, TIM_SERVICE = range(3)  # offsets after the L hit latencies

PLACE_FIRST_TOUCH, PLACE_INTERLEAVE, PLACE_FIXED = range(3)

# Per core fields of the misses-in-flight array ``st[ST_OOO]`` (out-of-order cores): the
# number in flight, the ring slot of the oldest, the core's instruction count; the ring
# starts at OOO_RING.
OOO_COUNT, OOO_HEAD, OOO_INSTR, OOO_RING = range(4)

# Per core fields of the prefetchers' state ``st[ST_PF]``: the stream slot replaced next,
# prefetches issued, prefetched lines a demand access used, those it used before they
# arrived, and prefetches served from beyond the core's private levels; the streams start
# at PF_STREAMS.
PF_NEXT, PF_ISSUED, PF_USEFUL, PF_LATE, PF_BEYOND, PF_STREAMS = range(6)
PF_FIELDS = ("issued", "useful", "late", "beyond")
#: Entries of a core's table of prefetched lines, whatever the level's size (so that a
#: size sweep shares one compiled module; the table only times and counts prefetches, a
#: collision forgets one).
PF_TABLE_MAX = 4096
#: Flag of a table entry whose prefetch was issued before the last ``reset_stats``: a
#: demand access still waits for it and trains on it, but it counts as neither useful nor
#: late (the counters it would add to were zeroed with its ``issued``).  Line numbers stay
#: below 2**57, so the bit is free.
PF_OLD = 1 << 62

#: Coherence filter: 2**FILTER_BITS buckets of counters of the lines each core's private
#: levels and each socket's shared levels hold, by address region of
#: 2**FILTER_REGION_SHIFT bytes (at least the largest line).  The buckets' sharer masks
#: lie together before the counters, so a write's test reads a dense array (512 KB at
#: 2**16 buckets) while the counters, touched only by fills and evictions, take the rest.
#: A bucket shared by regions of different caches sends a write to search caches that
#: hold none of its lines: at 2**13 buckets the Opteron's caches hold about as many
#: regions as there are buckets, 40 % of a CATS heat's writes searched in vain, and the
#: replay's kernel took 1.1-1.2x its time at 2**16 (the Xeon's, at 2**12: 96 %, 1.4x;
#: docs/performance.md, "A sparser coherence filter").
FILTER_BITS = 17
FILTER_REGION_SHIFT = 12
FILTER_MIN_BITS = 8
_GOLDEN = 0x9E3779B97F4A7C15
#: De Bruijn multiplier of the lowest-set-bit index (``_DEBRUIJN`` in generated modules).
_DEBRUIJN_MUL = 0x03F79D71B4CB0A89
_DEBRUIJN_TABLE = tuple(
    sorted(range(64), key=lambda i: (((1 << i) * _DEBRUIJN_MUL) & (2**64 - 1)) >> 58)
)

#: Addresses the model accepts are below 2**ADDRESS_BITS: traces hold virtual addresses
#: of ``VIRTUAL_BITS`` (the trace format's rule), and the engine places each job's
#: address space above them (:mod:`simsched.engine.job`: one bit of colour headroom and
#: eight bits of job tag).
ADDRESS_BITS = VIRTUAL_BITS + 9


@dataclass(frozen=True)
class Geometry:
    """Every constant baked into a generated module (derived from a :class:`Machine`)."""

    cores: int
    cores_per_socket: int
    sockets: int
    sets: tuple[int, ...]
    ways: tuple[int, ...]
    shifts: tuple[int, ...]
    private: tuple[bool, ...]
    inclusive: tuple[bool, ...]
    #: Exclusive (victim) levels: filled by the victims of the level above only.
    exclusive: tuple[bool, ...]
    page_shift: int
    placement: int
    fixed_node: int
    coherent: bool
    #: Directed socket links (0: none, remote accesses cost ``remote_latency`` only) and
    #: the most links a route crosses (:mod:`simsched.machine.topology`).
    links: int = 0
    hops: int = 0
    #: Out-of-order cores (docs/machine-model.md §6.1): first-level misses in flight per
    #: core and reorder-buffer entries; 0 and 0 for blocking cores.
    mshrs: int = 0
    rob: int = 0
    #: Stream prefetcher (docs/machine-model.md §6.2): the private level it fills (-1:
    #: none), streams per core, distance and degree in lines, and the entries (a power of
    #: two) of each core's table of prefetched lines.
    pf_level: int = -1
    pf_streams: int = 0
    pf_distance: int = 0
    pf_degree: int = 0
    pf_table: int = 0

    @property
    def levels(self) -> int:
        """Number of cache levels."""
        return len(self.sets)

    def instances(self, k: int) -> int:
        """Number of instances of level ``k`` (cores or sockets)."""
        return self.cores if self.private[k] else self.sockets

    @property
    def max_instances(self) -> int:
        """Largest instance count over the levels (stride of the level statistics)."""
        return max(self.instances(k) for k in range(self.levels))

    @property
    def ncs(self) -> int:
        """Stride of the per-core statistics."""
        return CORE_LEVEL0 + 3 * self.levels

    @property
    def st_lvl(self) -> int:
        """Index of the level statistics in the state tuple."""
        return self.levels

    @property
    def st_core(self) -> int:
        """Index of the per-core statistics."""
        return self.levels + 1

    @property
    def st_node(self) -> int:
        """Index of the per-node statistics."""
        return self.levels + 2

    @property
    def st_ctrl(self) -> int:
        """Index of the controllers' next-free times."""
        return self.levels + 3

    @property
    def st_pt(self) -> int:
        """Index of the page table."""
        return self.levels + 4

    @property
    def st_filter(self) -> int:
        """Index of the coherence filter."""
        return self.levels + 5

    @property
    def st_timing(self) -> int:
        """Index of the TIMING array (latencies and service interval, run-time values)."""
        return self.levels + 6

    @property
    def st_ooo(self) -> int:
        """Index of the out-of-order cores' misses in flight (:attr:`ooo_stride` per core)."""
        return self.levels + 7

    @property
    def st_pf(self) -> int:
        """Index of the prefetchers' state (:attr:`pf_stride` per core)."""
        return self.levels + 8

    @property
    def st_misc(self) -> int:
        """Index of the MISC array (always the last array of the state)."""
        return self.levels + 9

    @property
    def pf_stride(self) -> int:
        """int64 entries per core of the prefetchers' state: next stream slot to replace,
        counters (PF_ISSUED, PF_USEFUL, PF_LATE, PF_BEYOND), ``pf_streams`` streams of (last line,
        direction, seen), then ``pf_table`` (line, ready time) pairs."""
        return PF_STREAMS + 3 * self.pf_streams + 2 * self.pf_table

    @property
    def ooo_stride(self) -> int:
        """int64 entries per core of the misses-in-flight array: count, oldest slot,
        instructions issued, then ``mshrs`` completion times and ``mshrs`` instruction
        numbers (a ring, oldest first)."""
        return OOO_RING + 2 * self.mshrs

    @property
    def tim_routes(self) -> int:
        """TIMING offset of the route table: ``hops`` directed links (or -1) per (from,
        to) socket pair; then the routes' latencies, then each link's cycles per line."""
        return self.levels + 3

    @property
    def tim_route_latency(self) -> int:
        """TIMING offset of the routes' latencies, one per (from, to) socket pair."""
        return self.tim_routes + self.sockets * self.sockets * self.hops

    @property
    def tim_link_interval(self) -> int:
        """TIMING offset of the directed links' cycles per line."""
        return self.tim_route_latency + self.sockets * self.sockets

    @property
    def filter_bits(self) -> int:
        """log2 of the coherence filter's buckets; 0 = no filter (no coherence).

        Fewer buckets for many holders: the filter stays within about
        ``2**FILTER_BITS * 16`` entries (16 MB; 11 MB on the Opteron's 20 holders, 8.6 MB
        at 256 cores), its masks within 1 MB."""
        if not self.coherent:
            return 0
        over = max(0, (self.filter_stride - 1).bit_length() - 4)
        return max(FILTER_MIN_BITS, FILTER_BITS - over)

    @property
    def entities(self) -> int:
        """Holders the coherence filter counts for: cores, then sockets."""
        return self.cores + self.sockets

    @property
    def mask_words(self) -> int:
        """64-bit words of a filter bucket's sharer mask (one bit per entity)."""
        return (self.entities + 63) // 64

    @property
    def filter_stride(self) -> int:
        """int64 entries per filter bucket: the sharer mask, then one counter per entity."""
        return self.mask_words + self.entities

    @property
    def filter_counts(self) -> int:
        """Index in the filter of the first counter: the masks of all buckets come first."""
        return (1 << self.filter_bits) * self.mask_words if self.filter_bits else 0

    @property
    def region_shift(self) -> int:
        """log2 of the coherence filter's region size (a page, or the largest line)."""
        return max(FILTER_REGION_SHIFT, self.shifts[-1])


def geometry_of(machine: Machine) -> Geometry:
    """The constants of ``machine`` that the generated kernels are specialised on.

    Parameters
    ----------
    machine
        A validated machine.

    Returns
    -------
    Geometry
        Hashable geometry; two machines with equal geometry share one compiled module.
    """
    place = machine.memory.placement
    fixed = machine.memory.fixed_node
    if machine.sockets == 1:
        # One node: placement cannot matter, so skip the page map entirely.
        code, fixed = PLACE_FIXED, 0
    elif place == "first-touch":
        code = PLACE_FIRST_TOUCH
    elif place == "interleave":
        code = PLACE_INTERLEAVE
    else:
        code = PLACE_FIXED
    r = routes(machine)
    links = 0 if r is None else len(r.interval)
    return Geometry(
        links=links,
        hops=max(max(row) for row in r.hops) if r is not None and links else 0,
        cores=machine.cores,
        cores_per_socket=machine.cores_per_socket,
        sockets=machine.sockets,
        sets=tuple(c.sets for c in machine.caches),
        ways=tuple(c.assoc for c in machine.caches),
        shifts=tuple(c.line.bit_length() - 1 for c in machine.caches),
        private=tuple(c.scope == "core" for c in machine.caches),
        inclusive=tuple(bool(c.inclusive) for c in machine.caches),
        exclusive=tuple(bool(c.exclusive) for c in machine.caches),
        page_shift=machine.memory.page_size.bit_length() - 1,
        placement=code,
        fixed_node=fixed if fixed is not None else 0,
        coherent=machine.coherent,
        mshrs=0 if (ooo := machine.out_of_order) is None else int(ooo.mshrs or 0),
        rob=0 if ooo is None else int(ooo.rob or 0),
        **_prefetch_geometry(machine),
    )


def _prefetch_geometry(machine: Machine) -> dict[str, int]:
    for k, c in enumerate(machine.caches):
        if c.prefetch is not None:
            return {
                "pf_level": k,
                "pf_streams": c.prefetch.streams,
                "pf_distance": c.prefetch.distance,
                "pf_degree": c.prefetch.degree,
                "pf_table": PF_TABLE_MAX,
            }
    return {}
