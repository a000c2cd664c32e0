"""``MemorySystem``: the Python face of the per-geometry memory kernels.

A :class:`MemorySystem` owns one generated kernel module (see
:mod:`simsched.memory._kernels`) and the model's whole mutable state, a tuple of numpy
arrays ``state`` passed as the first argument ``st`` of every kernel:

=====================  ==================================================================
``st[k]``, k < L        level k's sets: int64, ``instances * sets * ways`` entries, each
                        set MRU-first, entry ``line << 1 | dirty``, ``-1`` empty
``st[L]``               level statistics, flat ``(L, max_instances, 6)``: accesses, hits,
                        misses, writebacks, invalidations, back_invalidations
``st[L+1]``             core statistics, flat ``(cores, 6 + 3L)``: refs, lines, mem_local,
                        mem_remote, queue_delay, cycles; then accesses/hits/misses per
                        level (kept for per-socket levels only; private levels derive them
                        from the level statistics)
``st[L+2]``             node statistics, flat ``(sockets, 6)``: local, remote, writebacks,
                        busy_cycles, queue_delay, writeback_queue_delay
``st[L+3]``             each node controller's next free cycle
``st[L+4]``             first-touch page table (open addressing, ``page << 8 | node``)
``st[L+5]``             coherence filter: per bucket (hash of a 4 KB address region), a
                        sharer mask (one bit per core, then per socket; 64 per word), then
                        the lines each core's private levels and each socket's shared
                        levels hold
``st[L+6]``             TIMING: hit latency of every level, memory latency, remote
                        penalty, service interval (run-time values: a machine that differs
                        only in these shares the compiled module of its geometry)
``st[L+7]``             out-of-order cores' misses in flight, per core: count, oldest ring
                        slot, instructions issued, then ``mshrs`` completion times and
                        ``mshrs`` instruction numbers (one unused entry for blocking cores)
``st[L+8]``             MISC (last): pages mapped, page-table hash shift, end time, status
                        and private-cache misses of the last ``_serve`` call
=====================  ==================================================================

The page table is the only structure that grows.  Kernels cannot replace an array inside
the tuple, so growth happens around them: ``_serve`` and ``run_cores`` stop as soon as the
table reaches :meth:`MemorySystem.page_limit` (half full), Python rehashes into a table
twice as large (:meth:`MemorySystem.grow`, a new ``state`` tuple), and the caller resumes
where it stopped.  Growth never changes results, only the table's size.

Two entry points serve references: :meth:`MemorySystem.access_batch` (one core, an array
of references) and :attr:`MemorySystem.run_cores`, the multi-core window loop of
:mod:`simsched.memory.window` that the replay engine drives.  Both check the status the
kernels leave in MISC (invalid references).
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from simsched.machine import Machine
from simsched.machine.topology import link_name, routes
from simsched.memory import _kernels as K
from simsched.memory import window as W

_MIN_PT = 1024
#: A time bound and a latency threshold that are never reached.
_NO_BOUND = np.int64(1) << np.int64(62)
#: the dependence column handed to a blocking core's kernel, which does not read it
_NO_DEPS = np.zeros(1, np.bool_)


def timing_of(machine: Machine) -> np.ndarray:
    """The TIMING array of ``machine``: hit latencies, memory latency, remote penalty,
    service interval (layout ``K.TIM_*``)."""
    m = machine.memory
    vals = [c.hit_latency for c in machine.caches]
    vals += [0, 0, 0]
    L = len(machine.caches)
    vals[L + K.TIM_MEM] = m.latency
    vals[L + K.TIM_REMOTE] = m.remote_latency
    vals[L + K.TIM_SERVICE] = m.service_interval
    r = routes(machine)
    if r is not None and r.interval:
        # Route table (directed links, -1 padded to the longest route), route latencies
        # and link intervals: the layout of Geometry.tim_routes.
        hops = max(max(row) for row in r.hops)
        for row in r.path:
            for p in row:
                vals += p + [-1] * (hops - len(p))
        vals += [x for row in r.latency for x in row]
        vals += r.interval
    return np.array(vals, dtype=np.int64)


def _pt_shift(cap: int) -> int:
    return 64 - (cap.bit_length() - 1)


def _zeros_lazy(n: int) -> npt.NDArray[np.int64]:
    """``n`` zero int64s in pages of their own, mapped anonymously: the operating system
    zeroes a page when the kernel first touches it.  ``np.zeros`` of the filter's
    megabytes could come from the allocator's heap once earlier filters were freed
    (glibc raises its mmap threshold to the largest block freed), and was then cleared
    whole at every ``MemorySystem``, where a run touches a few of its pages."""
    if n * 8 < 1 << 20:
        return np.zeros(n, np.int64)
    return np.frombuffer(mmap.mmap(-1, n * 8), np.int64)


class MemorySystem:
    """Exact set-associative LRU caches, NUMA placement and memory controllers of a machine.

    Parameters
    ----------
    machine
        The machine to model.

    Attributes
    ----------
    machine : Machine
        The modelled machine.
    module : module
        The generated, imported kernel module.
    state : tuple of numpy.ndarray
        All mutable model state (see the module docstring).
    """

    def __init__(self, machine: Machine):
        self.machine = machine
        self.geometry = K.geometry_of(machine)
        self.module = K.load_module(self.geometry)
        self.state = self._new_state()
        # Compile (or load from Numba's disk cache) now, with the real argument types;
        # one process at a time compiles a new module (K.first_compile).  The window loop
        # waits for its first use (:attr:`run_cores`).
        with K.first_compile(self.module):
            self.access_batch(
                0, np.zeros(0, np.uint64), np.zeros(0, np.uint8), np.zeros(0, bool), 0
            )
        self._run_cores_ready = False

    # ------------------------------------------------------------------ state
    def _new_state(self) -> tuple[np.ndarray, ...]:
        g = self.geometry
        arrays: list[np.ndarray] = []
        for k in range(g.levels):
            arrays.append(np.full(g.instances(k) * g.sets[k] * g.ways[k], -1, np.int64))
        arrays.append(np.zeros(g.levels * g.max_instances * K.NST, np.int64))
        arrays.append(np.zeros(g.cores * g.ncs, np.int64))
        # Nodes, then two counters per directed link; controllers, then links.
        arrays.append(np.zeros(g.sockets * K.NNS + 2 * g.links, np.int64))
        arrays.append(np.zeros(g.sockets + g.links, np.int64))
        cap = _MIN_PT if g.placement == K.PLACE_FIRST_TOUCH else 1
        arrays.append(np.full(cap, -1, np.int64))
        # Coherence filter: the buckets' sharer masks, then per bucket the lines held by
        # each core and socket.
        n_fc = (1 << g.filter_bits) * g.filter_stride if g.filter_bits else 1
        arrays.append(_zeros_lazy(n_fc))
        arrays.append(timing_of(self.machine))
        arrays.append(np.zeros(max(g.cores * g.ooo_stride if g.mshrs else 0, 1), np.int64))
        pf = np.zeros(max(g.cores * g.pf_stride if g.pf_level >= 0 else 0, 1), np.int64)
        if g.pf_level >= 0:
            # Table slots hold no line (-1) until a prefetch fills them.
            table = pf.reshape(g.cores, g.pf_stride)[:, K.PF_STREAMS + 3 * g.pf_streams :]
            table[:, 0::2] = -1
        arrays.append(pf)
        misc = np.zeros(K.NMISC, np.int64)
        misc[K.MISC_PT_SHIFT] = _pt_shift(max(cap, _MIN_PT))
        arrays.append(misc)
        return tuple(arrays)

    @property
    def _first_touch(self) -> bool:
        return self.geometry.placement == K.PLACE_FIRST_TOUCH

    def page_limit(self) -> int:
        """Pages the page table may hold before ``_serve``/``run_cores`` stop for growth.

        The one place the page budget is computed: half the table's capacity (open
        addressing stays fast), unbounded for placements without a page table.  A kernel
        that stops for it returns to its caller, which calls :meth:`grow` and resumes.
        """
        if not self._first_touch:
            return int(np.iinfo(np.int64).max)
        return int(self.state[self.geometry.st_pt].shape[0] // 2)

    def grow(self) -> None:
        """Double the page table if it is at its :meth:`page_limit`; re-read :attr:`state`."""
        if self._first_touch:
            used = int(self.state[self.geometry.st_misc][K.MISC_PAGES])
            self._grow(used + self.pages_per_ref + 1)

    def core_counter_reader(self) -> Callable[[int], tuple[int, int, int]]:
        """A reader of one core's running counters, cheap enough to call per strand.

        Returns
        -------
        callable
            ``read(core) -> (last-level misses, local DRAM lines, remote DRAM lines)``,
            the totals of ``core``'s references so far (the figures of :meth:`stats`
            under ``cores[core]``).  The difference of two reads around a strand is that
            strand's share, since a core serves only its own strand's references.
        """
        g = self.geometry
        k = g.levels - 1
        ncs = g.ncs
        local = K.CORE_FIELDS.index("mem_local")
        remote = K.CORE_FIELDS.index("mem_remote")
        if g.private[k]:
            where, base, step = g.st_lvl, k * g.max_instances * K.NST + K.LVL_MISSES, K.NST
        else:
            where, base, step = g.st_core, K.CORE_LEVEL0 + 3 * k + 2, ncs
        st_core = g.st_core
        # Bound item readers of the current state (per strand, attribute lookups count).
        seen = self.state
        level_item, core_item = seen[where].item, seen[st_core].item

        def read(core: int) -> tuple[int, int, int]:
            nonlocal seen, level_item, core_item
            if self.state is not seen:  # growth replaced the tuple: bind to the new arrays
                seen = self.state
                level_item, core_item = seen[where].item, seen[st_core].item
            c = core * ncs
            return level_item(base + core * step), core_item(c + local), core_item(c + remote)

        return read

    @property
    def run_cores(self):
        """The compiled multi-core window loop (:mod:`simsched.memory.window`).

        It compiles (or loads) on first use, like the module's first use, under
        :func:`~simsched.memory._kernels.first_compile`: a model used only through
        :meth:`access_batch` (``simsched memsim``, most of the memory tests) does not pay
        the 3-4 CPU-s it adds to a new machine's compile."""
        if not self._run_cores_ready:
            P = self.geometry.cores
            with K.first_compile(self.module, "run_cores"):
                self.module.run_cores(
                    self.state,
                    np.zeros((W.NF, P), np.int64),
                    np.zeros(P, np.int64),
                    np.zeros((P, 1), np.int64),
                    np.zeros((P, 1), np.uint8),
                    np.zeros((P, 1), np.bool_),
                    np.zeros((P, 1), np.bool_),
                    np.zeros((P, 1), np.uint32),
                    np.int64(0),
                    np.int64(0),
                    np.int64(0),
                    np.int64(self.page_limit()),
                )
            self._run_cores_ready = True
        return self.module.run_cores

    def _grow(self, needed: int) -> None:
        """Rehash the page table into one that holds ``needed`` pages at most half full."""
        g = self.geometry
        old = self.state[g.st_pt]
        cap = old.shape[0]
        while needed > cap // 2:
            cap *= 2
        if cap == old.shape[0]:
            return
        table = np.full(cap, -1, np.int64)
        entries = old[old >= 0]
        shift = _pt_shift(cap)
        pages = (entries >> 8).astype(np.uint64)
        with np.errstate(over="ignore"):
            slots = ((pages * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift)).astype(np.int64)
        mask = cap - 1
        for e, h in zip(entries.tolist(), slots.tolist(), strict=True):
            while table[h] >= 0:
                h = (h + 1) & mask
            table[h] = e
        misc = self.state[g.st_misc]
        misc[K.MISC_PT_SHIFT] = shift
        st = list(self.state)
        st[g.st_pt] = table
        self.state = tuple(st)

    @property
    def pages_per_ref(self) -> int:
        """Most pages one reference (at most 255 bytes) can touch."""
        return 254 // self.machine.memory.page_size + 2

    # ------------------------------------------------------------------ access
    def access_batch(
        self,
        core: int,
        addrs: npt.ArrayLike,
        sizes: npt.ArrayLike,
        writes: npt.ArrayLike,
        start_time: int,
        gaps: npt.ArrayLike | None = None,
        out: np.ndarray | None = None,
        deps: npt.ArrayLike | None = None,
        drain: bool = True,
    ) -> np.ndarray:
        """Serve references in order on one core and return their latencies.

        Reference ``i`` issues ``gaps[i]`` cycles after reference ``i - 1`` completed (the
        first one ``gaps[0]`` cycles after ``start_time``); its latency is that of the level
        serving each line it touches (memory: latency, remote penalty and controller wait),
        summed over the lines of a straddling reference.

        Parameters
        ----------
        core
            Issuing core, ``0 <= core < machine.cores``.
        addrs
            Byte addresses (below 2**57, see ``ADDRESS_BITS``), uint64 or int64 array.
        sizes
            Sizes in bytes (1..255), an array or a scalar.
        writes
            Write flags, an array or a scalar.
        start_time
            Cycle at which the core starts.
        gaps
            Cycles of non-memory work before each reference (default none).
        out
            Optional int64 buffer of at least ``len(addrs)`` entries to receive the
            latencies (saves an allocation per batch).
        deps
            Flags of references whose address depends on an earlier load (default none);
            only out-of-order cores read them (docs/machine-model.md §6.1).
        drain
            On an out-of-order core, end the batch when its last miss in flight completes
            (the default).  False leaves the misses in flight and :attr:`last_time` at the
            last reference's completion, so that a next batch of the same core starting at
            :attr:`last_time` continues this one exactly: a caller streaming one sequence
            of references in pieces (chunks) drains only after its last piece.

        Returns
        -------
        numpy.ndarray
            int64 latency of every reference (a view of ``out`` when given).  The end time is available as
            :attr:`last_time`.
        """
        g = self.geometry
        if not 0 <= int(core) < g.cores:
            raise ValueError(f"core {core} out of range (the machine has {g.cores} cores)")
        a = np.ascontiguousarray(addrs)
        if a.ndim != 1:
            raise ValueError("addrs must be one-dimensional")
        if a.dtype == np.uint64:
            a = a.view(np.int64)
        elif a.dtype != np.int64:
            a = a.astype(np.int64)
        n = a.shape[0]
        s = self._column(sizes, n, np.uint8, "sizes")
        w = self._column(writes, n, np.bool_, "writes")
        if deps is None and not g.mshrs:
            d = _NO_DEPS  # a blocking core never reads the column: no array per batch
        else:
            d = self._column(False if deps is None else deps, n, np.bool_, "deps")
        use_gaps = gaps is not None
        gp = np.zeros(1, np.uint32) if gaps is None else self._column(gaps, n, np.uint32, "gaps")
        if out is None:
            out = np.empty(n, np.int64)
        else:
            if out.dtype != np.int64 or out.ndim != 1 or out.shape[0] < n:
                raise ValueError(f"out must be a 1-D int64 array of at least {n} entries")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("out must be C-contiguous and writeable")
            out = out[:n]
        t = int(start_time)
        i = 0
        while True:
            i = self.module._serve(
                self.state,
                int(core),
                a,
                s,
                w,
                d,
                gp,
                use_gaps,
                t,
                out,
                i,
                n,
                _NO_BOUND,
                True,
                _NO_BOUND,
                self.page_limit(),
                0,
            )
            misc = self.state[g.st_misc]
            t = int(misc[K.MISC_TIME])
            if misc[K.MISC_STATUS]:
                ua = a.astype(np.uint64)
                end = ua + s.astype(np.uint64) - np.uint64(1)
                far = ((ua | end) >> np.uint64(K.ADDRESS_BITS)) != 0
                bad = int(np.flatnonzero(far | (s == 0))[0])
                raise ValueError(
                    f"reference {bad}: address {int(a[bad]) & (2**64 - 1):#x} is not below "
                    f"2**{K.ADDRESS_BITS} or its size is 0 (invalid references were skipped, "
                    "the others served)"
                )
            if i >= n:
                break
            self._grow(int(misc[K.MISC_PAGES]) + 1)
        if g.mshrs and drain:
            # The batch ends when its last miss in flight completes.
            t = max(t, int(self.module._drain(self.state, int(core))))
        self.last_time = t
        return out

    @staticmethod
    def _column(x: npt.ArrayLike, n: int, dtype: type, what: str) -> np.ndarray:
        """``x`` as a contiguous array of ``n`` values of ``dtype`` (scalars broadcast);
        arrays already of that dtype are used without a copy."""
        arr = np.asarray(x)
        if arr.ndim == 0:
            arr = arr.reshape(1)
            full = True
        else:
            full = False
            if arr.shape != (n,):
                raise ValueError(f"{what} has shape {arr.shape}, expected ({n},)")
        if arr.dtype != dtype:
            if dtype == np.uint8 and (arr.min(initial=1) < 1 or arr.max(initial=1) > 255):
                raise ValueError(f"{what} must be between 1 and 255")
            if dtype == np.uint32 and (arr.min(initial=0) < 0 or arr.max(initial=0) >= 2**32):
                raise ValueError(f"{what} must be between 0 and 2**32 - 1")
            arr = arr.astype(dtype)
        if full:
            return np.full(n, arr[0], dtype)
        return np.ascontiguousarray(arr)

    def access(self, core: int, addr: int, size: int, is_write: bool, now: int) -> int:
        """Serve one reference issued by ``core`` at cycle ``now``; return its latency.

        Convenience for tests and interactive use (one kernel call per reference).
        """
        lat = self.access_batch(
            core, np.array([addr], np.uint64), np.array([size]), np.array([is_write]), now
        )
        return int(lat[0])

    def contents(self, level: int, instance: int) -> list[list[tuple[int, bool]]]:
        """Lines held by one cache: per set, ``(line number, dirty)`` from MRU to LRU.

        Parameters
        ----------
        level
            Level index (0 = closest to the core).
        instance
            Core (per-core level) or socket (per-socket level).

        Returns
        -------
        list
            One list per set; line numbers are byte addresses >> log2(line size).
        """
        g = self.geometry
        if not 0 <= level < g.levels or not 0 <= instance < g.instances(level):
            raise ValueError(f"no cache instance {instance} at level {level}")
        sets = self.state[level].reshape(g.instances(level), g.sets[level], g.ways[level])
        return [[(int(v >> 1), bool(v & 1)) for v in row if v >= 0] for row in sets[instance]]

    # ------------------------------------------------------------------ statistics
    def reset_stats(self) -> None:
        """Zero every statistic; cache contents, controllers, pages and the prefetchers'
        streams and tables are kept.  A prefetch issued before the reset still times and
        trains a later access to its line, but counts as neither useful nor late after
        it, so that ``useful <= issued``: counted, a warm-up's prefetches used after the
        reset made ``useless`` negative."""
        g = self.geometry
        for idx in (g.st_lvl, g.st_core, g.st_node):
            self.state[idx][:] = 0
        if g.pf_level >= 0:
            per_core = self.state[g.st_pf].reshape(g.cores, g.pf_stride)
            per_core[:, K.PF_ISSUED : K.PF_STREAMS] = 0
            lines = per_core[:, K.PF_STREAMS + 3 * g.pf_streams :: 2]
            lines[lines >= 0] |= K.PF_OLD

    def stats(self) -> dict:
        """Statistics per level (and instance), core, socket and node.

        Returns
        -------
        dict
            ``{"levels": [...], "cores": [...], "sockets": [...], "nodes": [...],
            "offchip_bytes": int, "pages_mapped": int}`` where

            - each level is ``{"name", "scope", "line", "accesses", "hits", "misses",
              "writebacks", "invalidations", "back_invalidations", "instances": [...]}``
              with totals over its instances and one dict of the same six counters per
              instance (per core or per socket); ``writebacks`` counts dirty lines this
              level evicted, ``invalidations`` copies removed by coherence,
              ``back_invalidations`` copies removed because an inclusive level below
              evicted (or lost) the line;
            - each core is ``{"refs", "lines", "cycles", "mem_local", "mem_remote",
              "queue_delay", "levels": {name: {"accesses", "hits", "misses"}}}`` where
              ``lines`` is the number of first-level line accesses (refs plus the extra
              lines of straddling refs), ``cycles`` the sum of reference latencies,
              ``queue_delay`` the controller wait its fetches suffered;
            - each socket sums its cores (same keys);
            - each node is ``{"local", "remote", "writebacks", "busy_cycles",
              "queue_delay", "writeback_queue_delay"}``: lines fetched for local and
              remote sockets, dirty lines written back, cycles its controller was busy,
              fetch and write-back waits for the controller;
            - ``offchip_bytes`` = (fetched + written-back lines) × last-level line size;
            - ``pages_mapped``: pages placed by first touch (0 for other placements).
        """
        g = self.geometry
        m = self.machine
        L = g.levels
        lv = self.state[g.st_lvl].reshape(L, g.max_instances, K.NST)
        cs = self.state[g.st_core].reshape(g.cores, g.ncs)
        ns = self.state[g.st_node][: g.sockets * K.NNS].reshape(g.sockets, K.NNS)
        levels = []
        for k, c in enumerate(m.caches):
            ni = g.instances(k)
            inst = [dict(zip(K.LVL_FIELDS, map(int, lv[k, i]), strict=True)) for i in range(ni)]
            tot = {f: int(lv[k, :ni, j].sum()) for j, f in enumerate(K.LVL_FIELDS)}
            levels.append(
                {"name": c.name, "scope": c.scope, "line": c.line, **tot, "instances": inst}
            )
        cores = []
        for core in range(g.cores):
            d: dict[str, Any] = dict(
                zip(K.CORE_FIELDS, map(int, cs[core, : K.CORE_LEVEL0]), strict=True)
            )
            per = {}
            for k, c in enumerate(m.caches):
                if g.private[k]:
                    row = lv[k, core]
                    vals: Any = (row[K.LVL_ACCESSES], row[K.LVL_HITS], row[K.LVL_MISSES])
                else:
                    vals = cs[core, K.CORE_LEVEL0 + 3 * k : K.CORE_LEVEL0 + 3 * k + 3]
                per[c.name] = dict(zip(("accesses", "hits", "misses"), map(int, vals), strict=True))
            d["levels"] = per
            cores.append(d)
        sockets = []
        for s in range(g.sockets):
            mine = cores[s * g.cores_per_socket : (s + 1) * g.cores_per_socket]
            d = {f: sum(x[f] for x in mine) for f in K.CORE_FIELDS}
            d["levels"] = {
                c.name: {
                    f: sum(x["levels"][c.name][f] for x in mine)
                    for f in ("accesses", "hits", "misses")
                }
                for c in m.caches
            }
            sockets.append(d)
        nodes = [dict(zip(K.NODE_FIELDS, map(int, ns[n]), strict=True)) for n in range(g.sockets)]
        for d in nodes:
            # The controller is busy one service interval per line it transfers.
            d["busy_cycles"] = m.memory.service_interval * (
                d["local"] + d["remote"] + d["writebacks"]
            )
        lines = sum(n["local"] + n["remote"] + n["writebacks"] for n in nodes)
        pages = int(self.state[g.st_misc][K.MISC_PAGES]) if self._first_touch else 0
        out = {
            "levels": levels,
            "cores": cores,
            "sockets": sockets,
            "nodes": nodes,
            "offchip_bytes": lines * m.caches[-1].line,
            "pages_mapped": pages,
        }
        if g.links:
            out["links"] = self._link_stats()
        if g.pf_level >= 0:
            out["prefetch"] = self._prefetch_stats()
        return out

    def _prefetch_stats(self) -> dict:
        """The prefetcher's counters: totals and per core (``useless``: issued, not used)."""
        g = self.geometry
        per_core = self.state[g.st_pf].reshape(g.cores, g.pf_stride)
        cores = []
        for c in range(g.cores):
            d = dict(
                zip(K.PF_FIELDS, map(int, per_core[c, K.PF_ISSUED : K.PF_STREAMS]), strict=True)
            )
            d["useless"] = d["issued"] - d["useful"]
            cores.append(d)
        total = {f: sum(d[f] for d in cores) for f in (*K.PF_FIELDS, "useless")}
        return {"level": self.machine.caches[g.pf_level].name, **total, "cores": cores}

    def _link_stats(self) -> list[dict]:
        """Per directed link: its ends, lines carried, busy and queueing cycles."""
        g = self.geometry
        r = routes(self.machine)
        assert r is not None
        ls = self.state[g.st_node][g.sockets * K.NNS :].reshape(g.links, 2)
        out = []
        for d in range(g.links):
            a, b = link_name(self.machine, d)
            n, q = int(ls[d, 0]), int(ls[d, 1])
            out.append(
                {"from": a, "to": b, "lines": n, "busy_cycles": n * r.interval[d], "queue_delay": q}
            )
        return out
