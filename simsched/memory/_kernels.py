"""Source generator of the per-geometry Numba memory kernels.

The memory model is specialised per machine by *generating Python source* in which every
geometry parameter (ways, line shifts, scopes, inclusion flags, core and socket counts,
page shift, placement, coherence, core model, prefetcher) is a literal constant.  Numba
then sees loop bounds as compile-time constants and unrolls the way searches, which is
what lets the kernels run at C speed (a generic kernel with run-time geometry runs about
three times slower).  Two kinds of values stay run-time: timing (the TIMING array) and
the set counts, read from each level's array (:func:`_sets`), which cost 2 % and let a
sweep over cache sizes share one compiled module.

The set operations (find, move to MRU, insert at MRU, remove) are emitted inline as code
snippets (``_s_find`` ...), which keeps the number of compiled functions, and so the
compile time of a new geometry, small.  The generated module (see
:func:`generate_source`) contains, per cache level ``k``:

``_fill{k}`` / ``_wb{k}`` / ``_binv{k}`` / ``_inv{k}``
    demand fill, write-back arrival, back-invalidation of the levels above, and coherence
    invalidation at level ``k``;

an *exclusive* (victim) level ``k`` is never demand-filled: every victim of level ``k-1``,
clean or dirty, arrives there like a write-back carrying its dirty bit
(:func:`_g_victim_down`), and a demand hit there removes the line and hands its dirty bit
to the level-0 fill (:func:`_g_take`), so the line lives above it only;

and the entry points ``_serve(...)`` (references of one core up to a time bound, looping
inside Numba with the core's statistics in registers), ``run_cores`` (the multi-core window
loop of :mod:`simsched.memory.window`) and ``_page_node`` (NUMA placement).

Sets are stored MRU-first: a set is ``W`` consecutive int64 entries ``line << 1 | dirty``,
``-1`` for an empty way.  Empty ways always sit at the LRU end, so the victim of an
insertion is simply the last entry.  A hit shifts the entries in front of it down by one;
with temporal locality most hits are found in the first way.

All mutable state is the tuple ``st`` documented in :mod:`simsched.memory.system`; its
layout constants (``ST_*``, ``NST``, ...) are defined here once and imported there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import astuple, dataclass, replace
from pathlib import Path
from types import ModuleType

from simsched.files import cache_dir, write_text_atomic
from simsched.machine import Machine
from simsched.machine.topology import routes
from simsched.memory.window import driver_source
from simsched.trace.format import ADDRESS_BITS as VIRTUAL_BITS

#: Version of the generated code layout; part of every module hash.
TEMPLATE_VERSION = 6

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

#: Coherence filter: 2**FILTER_BITS buckets of counters of the lines each core's private
#: levels and each socket's shared levels hold, by address region of
#: 2**FILTER_REGION_SHIFT bytes (at least the largest line).
FILTER_BITS = 14
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
        ``2**FILTER_BITS * 16`` entries (2 MB), so its hot part stays in the host's cache
        (at 256 cores a full-size filter is 34 MB and every fill would miss in it)."""
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


# --------------------------------------------------------------------------- generation


def _ind(lines: list[str], n: int) -> list[str]:
    return [("    " * n + s) if s else s for s in lines]


def _inst(g: Geometry, k: int, core: str = "core") -> str:
    """Expression for the instance of level k used by ``core``."""
    if g.cores == 1:
        return "0"
    if g.private[k]:
        return core
    if g.cores_per_socket == 1:
        return core
    return f"({core} // {g.cores_per_socket})"


def _base(g: Geometry, k: int, inst: str, line: str) -> str:
    # The set count is a run-time value (``S{k}``, :func:`_sets`): machines that differ
    # only in cache sizes share one compiled module.
    return f"(({inst}) * S{k} + (({line}) & (S{k} - 1))) * {g.ways[k]}"


def _sets(g: Geometry, levels: range | list[int]) -> list[str]:
    """``S{k}``, the sets of level k, from the length of its array (instances x sets x
    ways entries), for the levels a generated function indexes."""
    return [f"S{k} = T{k}.shape[0] // {g.instances(k) * g.ways[k]}" for k in levels]


def _lvl_idx(g: Geometry, k: int, inst: str, field: int) -> str:
    return f"(({k * g.max_instances} + {inst}) * {NST} + {field})"


def _s_find(g: Geometry, k: int, T: str, b: str, a: str, p: str = "p") -> list[str]:
    """Set ``p`` to the way holding line ``a`` in the set at ``T[b]``, or -1."""
    w = g.ways[k]
    if w == 1:
        return [f"{p} = 0 if ({T}[{b}] >> 1) == {a} else -1"]
    return [
        f"{p} = -1",
        f"for q in range({w}):",
        f"    if ({T}[{b} + q] >> 1) == {a}:",
        f"        {p} = q",
        "        break",
    ]


def _s_touch(g: Geometry, k: int, T: str, b: str, p: str, d: str) -> list[str]:
    """Move way ``p`` to MRU, OR-ing in dirty bit ``d``."""
    if g.ways[k] == 1:
        return [] if d == "0" else [f"{T}[{b}] |= {d}"]
    return [
        f"v_ = {T}[{b} + {p}] | {d}",
        f"for q in range({p}, 0, -1):",
        f"    {T}[{b} + q] = {T}[{b} + q - 1]",
        f"{T}[{b}] = v_",
    ]


def _s_insert(g: Geometry, k: int, T: str, b: str, a: str, d: str, v: str = "v") -> list[str]:
    """Insert line ``a`` at MRU; ``v`` receives the evicted LRU entry (-1: none)."""
    w = g.ways[k]
    return [
        f"{v} = {T}[{b} + {w - 1}]",
        *(
            [f"for q in range({w - 1}, 0, -1):", f"    {T}[{b} + q] = {T}[{b} + q - 1]"]
            if w > 1
            else []
        ),
        f"{T}[{b}] = ({a} << 1) | {d}",
    ]


def _s_remove(g: Geometry, k: int, T: str, b: str, p: str, v: str = "v_") -> list[str]:
    """Remove way ``p`` (later ways move up, an empty way enters at LRU); ``v`` = entry."""
    w = g.ways[k]
    return [
        f"{v} = {T}[{b} + {p}]",
        *(
            [f"for q in range({p}, {w - 1}):", f"    {T}[{b} + q] = {T}[{b} + q + 1]"]
            if w > 1
            else []
        ),
        f"{T}[{b} + {w - 1}] = -1",
    ]


def _tlist(g: Geometry, n: int | None = None) -> str:
    return ", ".join(f"T{k}" for k in range(g.levels if n is None else n))


def _unpack(g: Geometry) -> str:
    return f"{_tlist(g)}, LS, CS, NS, CTRL, PT, FC, TIM, OO, PF, MISC = st"


def _fbase(g: Geometry, k: int, line: str) -> str:
    """First entry of the filter bucket of level-k line ``line``.

    The filter (a directory by address region) counts, per *entity* (core ``c``: its
    private levels; socket ``s``, entity ``cores + s``: its shared levels), the lines it
    holds by address *region* (``2**region_shift`` bytes, whole lines of every level);
    bucket = Fibonacci hash of the region.  A bucket is a sharer mask of ``mask_words``
    64-bit words (bit ``e``: entity ``e``'s counter is non-zero), then the ``cores +
    sockets`` counters.  A write reads the mask only and visits its set bits, so its cost
    grows with the sharers, not with the cores."""
    region = f"(({line}) >> {g.region_shift - g.shifts[k]})"
    h = f"np.int64((np.uint64{region} * np.uint64({_GOLDEN})) >> np.uint64({64 - g.filter_bits}))"
    return f"{h} * {g.filter_stride}"


def _mword(g: Geometry, e: str) -> str:
    """Offset in a bucket of the mask word holding entity ``e``'s bit."""
    return "0" if g.mask_words == 1 else f"(({e}) >> 6)"


def _entity(g: Geometry, k: int, inst: str) -> str:
    return f"({inst})" if g.private[k] else f"{g.cores} + ({inst})"


def _f_add(g: Geometry, k: int, inst: str, line: str, delta: int) -> list[str]:
    """Count a line entering (+1) or leaving (-1) instance ``inst`` of level k."""
    if not g.filter_bits:
        return []
    # The bit changes only when the counter leaves or reaches zero, rarely: a predicted
    # branch is cheaper than rewriting the mask word on every fill and eviction.
    one = "np.int64(1) << (e_ & 63)"
    word = f"FC[fb_ + {_mword(g, 'e_')}]"
    upd = (
        ["if FC[n_] == 1:", f"    {word} |= {one}"]
        if delta > 0
        else ["if FC[n_] == 0:", f"    {word} &= ~({one})"]
    )
    return [
        f"fb_ = {_fbase(g, k, line)}",
        f"e_ = {_entity(g, k, inst)}",
        f"n_ = fb_ + {g.mask_words} + e_",
        f"FC[n_] += {delta}",
        *upd,
    ]


def _binv(g: Geometry, k: int) -> str:
    """Back-invalidation of line ``a`` (level-k granularity) of instance ``i`` of level k:
    remove its sub-lines from the levels above that instance covers; return their dirt."""
    body: list[str] = ["d = 0", *_sets(g, range(k))]
    for j in range(k):
        r = g.shifts[k] - g.shifts[j]
        if g.private[k] or not g.private[j]:
            insts = ("i", "i + 1")
        else:
            insts = (f"i * {g.cores_per_socket}", f"(i + 1) * {g.cores_per_socket}")
        body += [
            f"for c in range({insts[0]}, {insts[1]}):",
            f"    for s in range(a << {r}, (a + 1) << {r}):",
            f"        b = {_base(g, j, 'c', 's')}",
            *_ind(_s_find(g, j, f"T{j}", "b", "s"), 2),
            "        if p >= 0:",
            *_ind(_s_remove(g, j, f"T{j}", "b", "p"), 3),
            "            d |= v_ & 1",
            f"            LS[{_lvl_idx(g, j, 'c', LVL_BACK_INV)}] += 1",
            *_ind(_f_add(g, j, "c", "s", -1), 3),
        ]
    body.append("return d")
    return (
        f"\n\n@_jit\ndef _binv{k}({_tlist(g, k)}, LS, FC, i, a):\n"
        + "\n".join(_ind(body, 1))
        + "\n"
    )


def _coherence(g: Geometry) -> str:
    """Write-invalidate: remove line ``a0`` (at each level's granularity) from every cache
    that is not on ``core``'s path, top level first.  Only the entities whose bit is set
    in the filter bucket's sharer mask are visited, lowest first (the order a scan over
    all of them would take); the others hold no line of the region.  A level's mask words
    are read when the level starts: invalidating one instance changes only its own bit
    at that level (an inclusive shared level's back-invalidation clears core bits, which
    belong to other levels)."""
    body = [
        f"sock = core // {g.cores_per_socket}",
        f"fb = {_fbase(g, 0, 'a0')}",
        *_sets(g, range(g.levels)),
    ]
    for k in range(g.levels):
        body.append(f"a{k} = a0 >> {g.shifts[k] - g.shifts[0]}")
        if g.private[k]:
            elo, ehi, own = 0, g.cores, "core"
        else:
            elo, ehi, own = g.cores, g.entities, f"{g.cores} + sock"
        body += [
            f"own = {own}",
            f"for wi in range({elo >> 6}, {((ehi - 1) >> 6) + 1}):",
            "    m = FC[fb + wi]",
            "    base = wi * 64",
            # Keep the bits of this level's entities, elo <= base + bit < ehi.
            f"    if base < {elo}:",
            f"        m &= -(np.int64(1) << ({elo} - base))",
            f"    if {ehi} - base < 64:",
            f"        m &= (np.int64(1) << ({ehi} - base)) - 1",
            "    if (own >> 6) == wi:",
            "        m &= ~(np.int64(1) << (own & 63))",
            "    while m != 0:",
            "        low = m & -m",
            "        m ^= low",
            f"        c = base + _DEBRUIJN[np.int64((np.uint64(low) * np.uint64({_DEBRUIJN_MUL}))"
            f" >> np.uint64(58))] - {elo}",
        ]
        body += _ind(_coherence_inner(g, k), 2)
    return (
        f"\n\n@_jit\ndef _coherence({_tlist(g)}, LS, FC, core, a0):\n"
        + "\n".join(_ind(body, 1))
        + "\n"
    )


def _coherence_inner(g: Geometry, k: int) -> list[str]:
    """Remove line a{k} from instance ``c`` of level k if it holds it."""
    inner = [
        f"b = {_base(g, k, 'c', f'a{k}')}",
        *_s_find(g, k, f"T{k}", "b", f"a{k}"),
        "if p >= 0:",
        *_ind(_s_remove(g, k, f"T{k}", "b", "p"), 1),
        f"    LS[{_lvl_idx(g, k, 'c', LVL_INVALIDATIONS)}] += 1",
        *_ind(_f_add(g, k, "c", f"a{k}", -1), 1),
    ]
    if g.inclusive[k] and k > 0:
        inner.append(f"    _binv{k}({_tlist(g, k)}, LS, FC, c, a{k})")
    return inner


def _page_table(g: Geometry) -> str:
    """First-touch page map: open addressing, linear probing, entries page << 8 | node."""
    if g.placement != PLACE_FIRST_TOUCH:
        return ""
    body = [
        "mask = PT.shape[0] - 1",
        "x = np.uint64(page) * np.uint64(0x9E3779B97F4A7C15)",
        f"h = np.int64(x >> np.uint64(MISC[{MISC_PT_SHIFT}]))",
        "while True:",
        "    e = PT[h]",
        "    if e < 0:",
        # Python grows the table between batches (MemorySystem.reserve); full = misuse.
        f"        if MISC[{MISC_PAGES}] >= mask:",
        "            raise RuntimeError('simsched memory page table full: call reserve()')",
        "        PT[h] = (page << 8) | sock",
        f"        MISC[{MISC_PAGES}] += 1",
        "        return sock",
        "    if (e >> 8) == page:",
        "        return e & 255",
        "    h = (h + 1) & mask",
    ]
    return "\n\n@_jit\ndef _page_node(PT, MISC, page, sock):\n" + "\n".join(_ind(body, 1)) + "\n"


def _node_expr(g: Geometry, page: str, sock: str) -> str:
    if g.placement == PLACE_FIXED:
        return str(g.fixed_node)
    if g.placement == PLACE_INTERLEAVE:
        if g.sockets & (g.sockets - 1) == 0:
            return f"({page}) & {g.sockets - 1}"
        return f"({page}) % {g.sockets}"
    return f"_page_node(PT, MISC, {page}, {sock})"


def _page_expr(g: Geometry, line: str) -> str:
    sh = g.shifts[-1]
    if sh >= g.page_shift:
        return f"({line}) << {sh - g.page_shift}"
    return f"({line}) >> {g.page_shift - sh}"


def _local_node(g: Geometry) -> bool:
    """Whether node statistics and the controller live in local variables: with a fixed
    node (one socket or ``node:N``) the node is a constant."""
    return g.placement == PLACE_FIXED


_NODE_VAR = {
    NODE_LOCAL: "nloc",
    NODE_REMOTE: "nrem",
    NODE_WRITEBACKS: "nwb",
    NODE_QUEUE_DELAY: "nqd",
    NODE_WB_QUEUE_DELAY: "nwbqd",
}
_CORE_VAR = {CORE_MEM_LOCAL: "cml", CORE_MEM_REMOTE: "cmr", CORE_QUEUE_DELAY: "cqd"}


def _node_inc(g: Geometry, field: int, amount: str) -> str:
    if _local_node(g):
        return f"{_NODE_VAR[field]} += {amount}"
    return f"NS[nd * {NNS} + {field}] += {amount}"


def _core_inc(field: int, amount: str) -> str:
    return f"{_CORE_VAR[field]} += {amount}"


def _g_controller(g: Geometry, after_fetch: bool = False) -> list[str]:
    """Reserve node ``nd``'s controller from ``tl`` on: ``t0`` = start of service.

    ``after_fetch``: a fetch from the same (fixed) node was reserved at ``tl`` just
    before, so the controller is free at ``ctrl >= tl`` and no comparison is needed."""
    ctrl = "ctrl" if _local_node(g) else "CTRL[nd]"
    if after_fetch and _local_node(g):
        return ["t0 = ctrl", "ctrl = t0 + SVC"]
    return [
        f"t0 = {ctrl}",
        "if t0 < tl:",
        "    t0 = tl",
        f"{ctrl} = t0 + SVC",
    ]


def _g_links(g: Geometry, src: str, dst: str, t: str) -> list[str]:
    """Reserve, in order, the directed links from socket ``src`` to ``dst`` from time
    ``t`` on, like controllers; ``tq`` = when the last one starts.  Link ``d``'s next
    free time is ``CTRL[sockets + d]``; its statistics ``NS[sockets * NNS + 2 d]``
    (transfers) and ``+ 1`` (queueing delay)."""
    S, H = g.sockets, g.hops
    return [
        f"rb = ({src} * {S} + {dst}) * {H}",
        f"tq = {t}",
        f"for h in range({H}):",
        f"    lk = TIM[{g.tim_routes} + rb + h]",
        "    if lk < 0:",
        "        break",
        f"    s1 = CTRL[{S} + lk]",
        "    if s1 < tq:",
        "        s1 = tq",
        f"    CTRL[{S} + lk] = s1 + TIM[{g.tim_link_interval} + lk]",
        f"    NS[{S * NNS} + 2 * lk] += 1",
        f"    NS[{S * NNS} + 2 * lk + 1] += s1 - tq",
        "    tq = s1",
    ]


def _g_mem_fetch(g: Geometry) -> list[str]:
    """Fetch line a{L-1} from its node at time ``tl``; sets ``dl``."""
    return [
        f"nd = {_node_expr(g, _page_expr(g, f'a{g.levels - 1}'), 'sock')}",
        *_g_controller(g),
        "wt = t0 - tl",
        _node_inc(g, NODE_QUEUE_DELAY, "wt"),
        _core_inc(CORE_QUEUE_DELAY, "wt"),
        "if nd == sock:",
        "    " + _node_inc(g, NODE_LOCAL, "1"),
        "    " + _core_inc(CORE_MEM_LOCAL, "1"),
        "    dl = MLAT + wt",
        "else:",
        "    " + _node_inc(g, NODE_REMOTE, "1"),
        "    " + _core_inc(CORE_MEM_REMOTE, "1"),
        *(
            # The line travels from its node to the socket over the route's links.
            [
                *_ind(_g_links(g, "nd", "sock", "t0"), 1),
                f"    dl = RMLAT + TIM[{g.tim_route_latency} + nd * {g.sockets} + sock] + wt"
                " + (tq - t0)",
            ]
            if g.links
            else ["    dl = RMLAT + wt"]
        ),
    ]


def _g_mem_wb(g: Geometry, line: str, after_fetch: bool = False) -> list[str]:
    """Write last-level line ``line`` back to its node (after the fetch, at ``tl``)."""
    return [
        f"nd = {_node_expr(g, _page_expr(g, line), 'sock')}",
        *_g_controller(g, after_fetch),
        _node_inc(g, NODE_WRITEBACKS, "1"),
        _node_inc(g, NODE_WB_QUEUE_DELAY, "t0 - tl"),
        *(["if nd != sock:", *_ind(_g_links(g, "sock", "nd", "tl"), 1)] if g.links else []),
    ]


def _g_victim(g: Geometry, k: int, v: str, after_fetch: bool = False) -> list[str]:
    """Handle entry ``v`` evicted from the core's instance of level k."""
    out = [f"if {v} >= 0:", f"    {v}d = {v} & 1"]
    out += _ind(_f_add(g, k, f"ix{k}", f"{v} >> 1", -1), 1)
    if g.inclusive[k] and k > 0:
        out.append(f"    {v}d |= _binv{k}({_tlist(g, k)}, LS, FC, ix{k}, {v} >> 1)")
    if k == g.levels - 1 and after_fetch and _local_node(g) and not g.links:
        # Branch-free write-back to the fixed node right after the fetch: whether a
        # victim is dirty is unpredictable, a mispredicted branch costs more than this.
        return [
            *out,
            f"    wbs{k} += {v}d",
            "    t0 = ctrl",
            f"    ctrl = t0 + SVC * {v}d",
            f"    nwb += {v}d",
            f"    nwbqd += {v}d * (t0 - tl)",
        ]
    if k + 1 < g.levels and g.exclusive[k + 1]:
        return out + _ind(_g_victim_down(g, k, v), 1)
    out += [f"    if {v}d:", f"        wbs{k} += 1"]
    if k + 1 < g.levels:
        out.append(f"        x{k + 1} = ({v} >> 1) >> {g.shifts[k + 1] - g.shifts[k]}")
        out += _ind(_g_wb(g, k + 1), 2)
    else:
        out += _ind(_g_mem_wb(g, f"{v} >> 1", after_fetch), 2)
    return out


def _g_wb(g: Geometry, m: int, d: str = "1") -> list[str]:
    """Line x{m} arrives at level m with dirty bit ``d`` (a write-back: "1"; a victim
    entering an exclusive level: its own bit): OR in ``d`` and move it to MRU, or
    allocate it."""
    return [
        f"c{m} = {_base(g, m, f'ix{m}', f'x{m}')}",
        *_s_find(g, m, f"T{m}", f"c{m}", f"x{m}"),
        "if p >= 0:",
        *_ind(_s_touch(g, m, f"T{m}", f"c{m}", "p", d), 1),
        "else:",
        *_ind(_s_insert(g, m, f"T{m}", f"c{m}", f"x{m}", d, f"u{m}"), 1),
        *_ind(_f_add(g, m, f"ix{m}", f"x{m}", 1), 1),
        *_ind(_g_victim(g, m, f"u{m}"), 1),
    ]


def _g_victim_down(g: Geometry, k: int, v: str) -> list[str]:
    """Victim ``v`` of level k (dirty bit ``{v}d``) enters exclusive level k+1, clean or
    dirty (the line sizes are equal); only a dirty one counts as a write-back."""
    return [
        f"if {v}d:",
        f"    wbs{k} += 1",
        f"x{k + 1} = {v} >> 1",
        *_g_wb(g, k + 1, f"{v}d"),
    ]


def _g_take(g: Geometry, k: int) -> list[str]:
    """Demand hit at exclusive level k (way ``p`` of set b{k}): the line leaves the level
    and moves up; its dirty bit goes to the level-0 fill (``xd``)."""
    return [
        *_s_remove(g, k, f"T{k}", f"b{k}", "p"),
        "xd = v_ & 1",
        *_f_add(g, k, f"ix{k}", f"a{k}", -1),
    ]


def _g_fill(g: Geometry, k: int, d: str) -> list[str]:
    """Insert the demand line a{k} at MRU of its set (b{k}) and handle the victim."""
    return [
        *_s_insert(g, k, f"T{k}", f"b{k}", f"a{k}", d, f"v{k}"),
        *_f_add(g, k, f"ix{k}", f"a{k}", 1),
        # The last level is filled only after a memory fetch at ``tl``.
        *_g_victim(g, k, f"v{k}", after_fetch=k == g.levels - 1),
    ]


_FIELD_VAR = {LVL_ACCESSES: "acc", LVL_HITS: "hit", LVL_MISSES: "mis", LVL_WRITEBACKS: "wbs"}


def _g_count(k: int, field: int) -> list[str]:
    """Count a demand access/hit/miss of the core's instance of level k.

    The counts of the serving core live in local variables (registers) and are added to
    the arrays by :func:`_g_flush` before ``_serve`` returns."""
    return [f"{_FIELD_VAR[field]}{k} += 1"]


def _g_locals(g: Geometry) -> list[str]:
    out = ["nrefs = 0", "nlines = 0", "ncycles = 0"]
    for k in range(g.levels):
        out += [f"acc{k} = 0", f"hit{k} = 0", f"mis{k} = 0", f"wbs{k} = 0"]
    out += [f"{v} = 0" for v in _CORE_VAR.values()]
    if _local_node(g):
        out += [f"{v} = 0" for v in _NODE_VAR.values()]
        out.append(f"ctrl = CTRL[{g.fixed_node}]")
    return out


def _g_flush(g: Geometry) -> list[str]:
    out = [
        f"CS[cb + {CORE_REFS}] += nrefs",
        f"CS[cb + {CORE_LINES}] += nlines",
        f"CS[cb + {CORE_CYCLES}] += ncycles",
        *[f"CS[cb + {f}] += {v}" for f, v in _CORE_VAR.items()],
    ]
    if _local_node(g):
        out += [f"NS[{g.fixed_node * NNS + f}] += {v}" for f, v in _NODE_VAR.items()]
        out.append(f"CTRL[{g.fixed_node}] = ctrl")
    for k in range(g.levels):
        for field, var in _FIELD_VAR.items():
            out.append(f"LS[{_lvl_idx(g, k, f'ix{k}', field)}] += {var}{k}")
            if not g.private[k] and field != LVL_WRITEBACKS:
                out.append(f"CS[cb + {CORE_LEVEL0 + 3 * k + field}] += {var}{k}")
    return out


def _g_line(g: Geometry) -> list[str]:
    """One access of level-0 line ``a0`` at time ``tl`` by ``core``; sets ``dl``."""
    L = g.levels
    body = [f"a{k} = a0 >> {g.shifts[k] - g.shifts[0]}" for k in range(1, L)]
    if any(g.exclusive):
        body.append("xd = 0")

    def probe(k: int) -> list[str]:
        out = [
            f"b{k} = {_base(g, k, f'ix{k}', f'a{k}')}",
            *_g_count(k, LVL_ACCESSES),
        ]
        out += [*_s_find(g, k, f"T{k}", f"b{k}", f"a{k}"), "if p >= 0:"]
        hit = _g_count(k, LVL_HITS)
        if g.exclusive[k]:
            hit += _g_take(g, k)
        else:
            hit += _s_touch(g, k, f"T{k}", f"b{k}", "p", "w" if k == 0 else "0")
        hit += [f"dl = H{k}", f"served = {k}"]
        if k == g.pf_level:
            hit += _g_pf_used(g)
        out += _ind(hit, 1)
        out.append("else:")
        miss = _g_count(k, LVL_MISSES)
        if k == g.pf_level:
            miss.append("trig = True")
        if k + 1 < L:
            miss += probe(k + 1)
        else:
            miss += [*_g_mem_fetch(g), f"served = {L}"]
        if k == 0:
            # Fill the levels that missed, deepest first (the line travels up from the
            # level that served it); each fill evicts and writes back its victim after
            # the fetch.
            for j in range(L - 1, 0, -1):
                if not g.exclusive[j]:
                    miss += [f"if served > {j}:", *_ind(_g_fill(g, j, "0"), 1)]
            miss += _g_fill(g, 0, "w | xd" if any(g.exclusive) else "w")
        out += _ind(miss, 1)
        return out

    body += probe(0)
    if g.coherent:
        # Search the other caches only if the filter says another entity may hold a line
        # of this region (the total minus the writer's core and socket).
        body += [
            "if w:",
            f"    fb = {_fbase(g, 0, 'a0')}",
            *_ind(_others(g), 1),
            "    if others != 0:",
            f"        _coherence({_tlist(g)}, LS, FC, core, a0)",
        ]
    if g.pf_level >= 0:
        body += _g_pf_trigger(g)
    return body


def _pf_slot(g: Geometry, line: str) -> str:
    """First entry of line ``line``'s slot in the core's table of prefetched lines."""
    tb = g.pf_table.bit_length() - 1
    first = PF_STREAMS + 3 * g.pf_streams
    return f"pfb + {first} + 2 * (({line} ^ ({line} >> {tb})) & {g.pf_table - 1})"


def _g_pf_used(g: Geometry) -> list[str]:
    """A demand hit at the prefetching level on a line the prefetcher brought: count it
    useful, wait until it has arrived (late if it had not), and trigger the prefetcher."""
    k = g.pf_level
    return [
        f"pfe = {_pf_slot(g, f'a{k}')}",
        f"if PF[pfe] == a{k}:",
        f"    PF[pfb + {PF_USEFUL}] += 1",
        "    pfr = PF[pfe + 1]",
        f"    if pfr > tl + H{k}:",
        "        dl = pfr - tl",
        f"        PF[pfb + {PF_LATE}] += 1",
        "    PF[pfe] = -1",
        "    trig = True",
    ]


def _g_pf_probe(g: Geometry, k: int) -> list[str]:
    """Prefetch path below the prefetching level: level k serves line a{k} (no demand
    statistics), or memory does; sets ``dl`` and ``served`` as the demand path does."""
    L = g.levels
    out = [f"b{k} = {_base(g, k, f'ix{k}', f'a{k}')}", *_s_find(g, k, f"T{k}", f"b{k}", f"a{k}")]
    out.append("if p >= 0:")
    hit = _g_take(g, k) if g.exclusive[k] else _s_touch(g, k, f"T{k}", f"b{k}", "p", "0")
    out += _ind([*hit, f"dl = H{k}", f"served = {k}"], 1)
    out.append("else:")
    miss = _g_pf_probe(g, k + 1) if k + 1 < L else [*_g_mem_fetch(g), f"served = {L}"]
    return out + _ind(miss, 1)


def _g_pf_fetch(g: Geometry) -> list[str]:
    """Prefetch line ``pfp`` (of the prefetching level kp) at time ``tl`` unless level kp
    holds it: fetch it like a demand miss of level kp (fills of kp and the levels it
    passes, victims, write-backs), and note when it arrives."""
    kp, L = g.pf_level, g.levels
    fill: list[str] = ["xd = 0"] if any(g.exclusive) else []
    fill += _g_pf_probe(g, kp + 1) if kp + 1 < L else [*_g_mem_fetch(g), f"served = {L}"]
    for j in range(L - 1, kp, -1):
        if not g.exclusive[j]:
            fill += [f"if served > {j}:", *_ind(_g_fill(g, j, "0"), 1)]
    fill += _g_fill(g, kp, "xd" if any(g.exclusive) else "0")
    npriv = sum(g.private)
    fill += [
        # A line brought from beyond the core's private levels counts in the strand's
        # private misses (the per-task profile CAB and LAWS read), as a demand miss would.
        f"if served >= {npriv}:",
        "    pm += 1",
        f"    PF[pfb + {PF_BEYOND}] += 1",
        f"PF[pfb + {PF_ISSUED}] += 1",
        f"pfe = {_pf_slot(g, 'pfp')}",
        "PF[pfe] = pfp",
        "PF[pfe + 1] = tl + dl",
    ]
    return [
        f"a{kp} = pfp",
        *[f"a{j} = pfp >> {g.shifts[j] - g.shifts[kp]}" for j in range(kp + 1, L)],
        f"b{kp} = {_base(g, kp, f'ix{kp}', f'a{kp}')}",
        *_s_find(g, kp, f"T{kp}", f"b{kp}", f"a{kp}"),
        "if p < 0:",
        *_ind(fill, 1),
    ]


def _g_pf_trigger(g: Geometry) -> list[str]:
    """After a demand access that missed the prefetching level kp or used a prefetched
    line there (``trig``): find the core's stream this line continues (the line after
    its last one, in its direction; either neighbour for a stream seen once), or start a
    stream in the next slot, round robin; a continued stream prefetches ``degree`` lines
    from ``distance`` lines ahead, within the trigger's page."""
    kp = g.pf_level
    S = g.pf_streams
    sb = PF_STREAMS
    page_lines = max(g.page_shift - g.shifts[kp], 0)
    trig = [
        "trig = False",
        "pfdl = dl",
        f"pfx = a{kp}",
        "pfm = -1",
        f"for e_ in range({S}):",
        f"    pfl = PF[pfb + {sb} + 3 * e_]",
        f"    pfd = PF[pfb + {sb} + 3 * e_ + 1]",
        f"    if PF[pfb + {sb} + 3 * e_ + 2] != 0 and (",
        "        pfx == pfl + pfd if pfd != 0 else (pfx == pfl + 1 or pfx == pfl - 1)",
        "    ):",
        "        pfm = e_",
        "        break",
        "if pfm < 0:",
        f"    e_ = PF[pfb + {PF_NEXT}]",
        f"    PF[pfb + {PF_NEXT}] = e_ + 1 if e_ + 1 < {S} else 0",
        f"    PF[pfb + {sb} + 3 * e_] = pfx",
        f"    PF[pfb + {sb} + 3 * e_ + 1] = 0",
        f"    PF[pfb + {sb} + 3 * e_ + 2] = 1",
        "else:",
        f"    pfo = pfb + {sb} + 3 * pfm",
        "    if PF[pfo + 1] == 0:",
        "        PF[pfo + 1] = pfx - PF[pfo]",
        "    PF[pfo] = pfx",
        "    pfd = PF[pfo + 1]",
        f"    for q_ in range({g.pf_distance}, {g.pf_distance + g.pf_degree}):",
        "        pfp = pfx + pfd * q_",
        f"        if pfp < 0 or (pfp >> {page_lines}) != (pfx >> {page_lines}):",
        "            break",
        *_ind(_g_pf_fetch(g), 2),
        "dl = pfdl",
    ]
    return ["if trig:", *_ind(trig, 1)]


def _others(g: Geometry) -> list[str]:
    """``others`` != 0 iff the sharer mask at ``fb`` names an entity other than the
    writer's core and socket (their lines are on the writer's path)."""
    se = f"{g.cores} + sock"
    if g.mask_words == 1:
        return [f"others = FC[fb] & ~((np.int64(1) << core) | (np.int64(1) << ({se})))"]
    return [
        "others = 0",
        f"for wi in range({g.mask_words}):",
        "    m = FC[fb + wi]",
        "    if (core >> 6) == wi:",
        "        m &= ~(np.int64(1) << (core & 63))",
        f"    if (({se}) >> 6) == wi:",
        f"        m &= ~(np.int64(1) << (({se}) & 63))",
        "    others |= m",
    ]


def _g_prologue(g: Geometry) -> list[str]:
    return [
        _unpack(g),
        # Constants when there is one socket / one core, so branches on them fold.
        "sock = 0" if g.sockets == 1 else f"sock = core // {g.cores_per_socket}",
        "cb = 0" if g.cores == 1 else f"cb = core * {g.ncs}",
        *[f"ix{k} = {_inst(g, k)}" for k in range(g.levels)],
        *_sets(g, range(g.levels)),
        *[f"H{k} = TIM[{k}]" for k in range(g.levels)],
        f"MLAT = TIM[{g.levels + TIM_MEM}]",
        f"RMLAT = MLAT + TIM[{g.levels + TIM_REMOTE}]",
        f"SVC = TIM[{g.levels + TIM_SERVICE}]",
    ]


def _ooo_retire(g: Geometry) -> list[str]:
    """Retire the oldest miss in flight: the issue time ``now`` waits for it.  Nothing is
    committed: ``k`` counts the retired misses, ``j`` is the slot of the next one."""
    return [
        "if OO[ob + j] > now:",
        "    now = OO[ob + j]",
        "k += 1",
        "j += 1",
        f"if j == {g.mshrs}:",
        "    j = 0",
    ]


def _ooo_issue(g: Geometry) -> list[str]:
    """Issue time ``now`` of reference ``i`` on an out-of-order core (docs/machine-model.md
    §6.1): after its gap, and after the misses it must wait for — those more than ``rob``
    instructions older (the reorder buffer is full), all of them when its address depends
    on a load (``deps[i]``), and the oldest when every MSHR is busy."""
    M, R = g.mshrs, g.rob
    return [
        "gi = np.int64(gaps[i]) if use_gaps else np.int64(0)",
        "now = t + gi",
        "ins1 = ins + gi + 1",
        "k = 0",
        "j = head",
        f"while k < cnt and OO[ob + {M} + j] <= ins1 - {R}:",
        *_ind(_ooo_retire(g), 1),
        "if deps[i]:",
        "    while k < cnt:",
        *_ind(_ooo_retire(g), 2),
        f"if cnt - k == {M}:",
        *_ind(_ooo_retire(g), 1),
    ]


def _drain(g: Geometry) -> str:
    """``_drain(st, core)``: when the last miss in flight of ``core`` completes (0: none);
    empties its MSHRs.  A strand ends when its misses have completed."""
    if not g.mshrs:
        return "\n\n@_jit\ndef _drain(st, core):\n    return np.int64(0)\n"
    body = [
        f"OO = st[{g.st_ooo}]",
        f"oc = core * {g.ooo_stride}",
        f"ob = oc + {OOO_RING}",
        f"head = OO[oc + {OOO_HEAD}]",
        "d = np.int64(0)",
        f"for k in range(OO[oc + {OOO_COUNT}]):",
        "    j = head + k",
        f"    if j >= {g.mshrs}:",
        f"        j -= {g.mshrs}",
        "    if OO[ob + j] > d:",
        "        d = OO[ob + j]",
        f"OO[oc + {OOO_COUNT}] = 0",
        "return d",
    ]
    return "\n\n@_jit\ndef _drain(st, core):\n" + "\n".join(_ind(body, 1)) + "\n"


def _entry(g: Geometry) -> str:
    ooo = g.mshrs > 0
    M = g.mshrs
    serve = [
        '"""Serve references i0..n-1 of one core in order, statistics kept in registers.',
        "",
        "Reference i (address ``addrs[i] + off``) issues ``gaps[i]`` cycles after the",
        "previous one completed (the first after ``t``).  Stops before the first",
        "reference whose issue time passes ``bound`` (at ``bound`` itself it stops unless",
        "``tie_wins`` or nothing was served yet), or when the page table reaches",
        "``page_limit`` entries.  Returns the index of the first",
        "reference not served; MISC holds the completion time of the last one served (on",
        "an out-of-order core, docs/machine-model.md §6.1: its issue time plus the first",
        "level's latency; ``deps`` marks references that wait for every miss in flight), the",
        "number whose latency exceeded ``pthresh`` and a status (1: invalid references, which",
        "get latency 0 and change nothing, were skipped).  Latencies go to ``out`` when it",
        "is not empty.",
        '"""',
        *_g_prologue(g),
        *_g_locals(g),
        *([f"pfb = core * {g.pf_stride}", "trig = False"] if g.pf_level >= 0 else []),
        *(
            [
                f"oc = core * {g.ooo_stride}",
                f"ob = oc + {OOO_RING}",
                f"cnt = OO[oc + {OOO_COUNT}]",
                f"head = OO[oc + {OOO_HEAD}]",
                f"ins = OO[oc + {OOO_INSTR}]",
            ]
            if ooo
            else []
        ),
        f"MISC[{MISC_STATUS}] = 0",
        "rec = out.shape[0] > 0",
        "pm = 0",
        "stop = n",
        "for i in range(i0, n):",
        *(
            [
                f"    if MISC[{MISC_PAGES}] >= page_limit:",
                "        stop = i",
                "        break",
            ]
            if g.placement == PLACE_FIRST_TOUCH
            else []
        ),
        "    addr = addrs[i] + off",
        "    size = np.int64(sizes[i])",
        # Invalid references (size 0, address >= 2**ADDRESS_BITS) are flagged and skipped; a
        # branch that leaves the loop would cost ~15 % of the loop's speed.
        f"    if ((addr + size - 1) | (size - 1)) >> {ADDRESS_BITS} != 0:",
        f"        MISC[{MISC_STATUS}] = 1",
        "        if rec:",
        "            out[i] = 0",
        "        continue",
        *(
            _ind(_ooo_issue(g), 1)
            if ooo
            else ["    now = t + np.int64(gaps[i]) if use_gaps else t"]
        ),
        # The time bound: shared levels and controllers must see every core's references
        # within the engine's window of global time order.
        "    if now > bound or (now == bound and not tie_wins and i > i0):",
        *(
            # A stall is committed (the waited-for misses retire, the clock moves to the
            # issue time less the gap), so that the core's next key is its issue time.
            [
                "        if now > t + gi:",
                "            head = j",
                "            cnt -= k",
                "            t = now - gi",
            ]
            if ooo
            else []
        ),
        "        stop = i",
        "        break",
        *(["    head = j", "    cnt -= k", "    ins = ins1"] if ooo else []),
        "    w = 1 if writes[i] else 0",
        f"    first = addr >> {g.shifts[0]}",
        f"    last = (addr + size - 1) >> {g.shifts[0]}",
        "    nrefs += 1",
        "    nlines += last - first + 1",
        # One line almost always; a straddling reference touches its lines one after the
        # other.  The line code is emitted once, with statistics in registers.
        "    lat = 0",
        "    for a0 in range(first, last + 1):",
        "        tl = now + lat",
        *_ind(_g_line(g), 2),
        "        lat += dl",
        "    ncycles += lat",
        "    if lat > pthresh:",
        "        pm += 1",
        "    if rec:",
        "        out[i] = lat",
        *(
            [
                # A first-level miss stays in flight; the core goes on after the
                # first level's latency, as after a hit.
                "    if lat > H0:",
                "        j = head + cnt",
                f"        if j >= {M}:",
                f"            j -= {M}",
                "        OO[ob + j] = now + lat",
                f"        OO[ob + {M} + j] = ins1",
                "        cnt += 1",
                "        t = now + H0",
                "    else:",
                "        t = now + lat",
            ]
            if ooo
            else ["    t = now + lat"]
        ),
        *_g_flush(g),
        *(
            [
                f"OO[oc + {OOO_COUNT}] = cnt",
                f"OO[oc + {OOO_HEAD}] = head",
                f"OO[oc + {OOO_INSTR}] = ins",
            ]
            if ooo
            else []
        ),
        f"MISC[{MISC_TIME}] = t",
        f"MISC[{MISC_PMISS}] = pm",
        "return stop",
    ]
    src = "\n\n@_jit\n"
    src += (
        "def _serve(st, core, addrs, sizes, writes, deps, gaps, use_gaps, t, out, i0, n, bound,"
        " tie_wins, pthresh, page_limit, off):\n"
    )
    src += "\n".join(_ind(serve, 1)) + "\n"
    return src


def generate_source(g: Geometry, extra_source: str = "") -> str:
    """Python source of the kernel module specialised on ``g``.

    Parameters
    ----------
    g
        The geometry constants.
    extra_source
        Source appended verbatim (e.g. another package's kernels calling ``access``).

    Returns
    -------
    str
        Module source; it starts with ``import numpy as np`` and ``from numba import njit``.
    """
    parts = [
        "import numpy as np\nfrom numba import njit\n",
        # No reference counting: the kernels allocate nothing, and NRT's atomic
        # increments on every array argument would cost more than a window's work.
        "_jit = njit(cache=True, nogil=True, _nrt=False)\n"
        '_jit_inline = njit(cache=True, nogil=True, _nrt=False, inline="always")\n',
        f'"""simsched memory kernels generated for {replace(g, sets=())!r} (any set counts)."""\n',
    ]
    for k in range(1, g.levels):
        if g.inclusive[k]:
            parts.append(_binv(g, k))
    if g.coherent:
        parts.append(f"_DEBRUIJN = np.array({list(_DEBRUIJN_TABLE)}, dtype=np.int64)\n")
        parts.append(_coherence(g))
    parts.append(_page_table(g))
    parts.append(_entry(g))
    parts.append(_drain(g))
    misc = {
        "MISC_PAGES": MISC_PAGES,
        "MISC_TIME": MISC_TIME,
        "MISC_STATUS": MISC_STATUS,
        "MISC_PMISS": MISC_PMISS,
    }
    parts.append(driver_source(g.st_misc, g.placement == PLACE_FIRST_TOUCH, misc, ooo=g.mshrs > 0))
    if extra_source:
        parts.append("\n\n# ---- extra source\n" + extra_source.rstrip() + "\n")
    return "\n".join(parts)


# --------------------------------------------------------------------------- module cache


def kernel_cache_dir() -> Path:
    """Folder of generated kernel modules: ``kernels`` in :func:`simsched.files.cache_dir`."""
    return cache_dir("kernels")


def _generator_text() -> str:
    here = Path(__file__).parent
    return "".join((here / f).read_text(encoding="utf-8") for f in ("_kernels.py", "window.py"))


def load_module(g: Geometry, extra_source: str = "", extra_name: str = "") -> ModuleType:
    """Generate (if needed), write and import the kernel module for ``g``.

    The module name is a hash of the geometry, this generator's source, ``extra_source``
    and ``extra_name``, so any change to one of them yields a new module (and a new Numba
    on-disk cache); an unchanged module is never rewritten, which keeps Numba's cache
    valid across processes.

    Parameters
    ----------
    g
        Geometry constants.
    extra_source, extra_name
        Appended source and a name for it (both enter the hash).

    Returns
    -------
    module
        The imported module (functions compile on first call, or load from Numba's cache).
    """
    h = hashlib.sha256()
    for part in (
        # The set counts are run-time values (:func:`_base`): not part of the name.
        repr(astuple(replace(g, sets=()))),
        str(TEMPLATE_VERSION),
        _generator_text(),
        extra_source,
        extra_name,
    ):
        h.update(part.encode())
        h.update(b"\0")
    tag = "".join(ch if ch.isalnum() else "_" for ch in extra_name)[:32]
    name = f"simsched_mem_{tag + '_' if tag else ''}{h.hexdigest()[:20]}"
    if name in sys.modules:
        return sys.modules[name]
    folder = kernel_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists():
        src = generate_source(g, extra_source)
        write_text_atomic(path, src)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
