"""Slow, obvious oracles of the synthetic workload generators (``simsched.workloads``).

Each oracle runs the modelled C program one statement at a time on real data -- real keys
compared with ``<=``, a real chained hash table, a real grid -- and reports every reference
with :meth:`TraceBuilder.ref` and every call overhead with :meth:`TraceBuilder.instr`.  The
fast generators compute the same stream with vectorised NumPy; the tests require the two to
agree reference by reference, strand by strand.

:class:`Recorder` takes the place of a ``TraceBuilder``: it keeps the DAG events and the
references of every strand in memory with the builder's rules (an instruction count waits for
the next reference of the strand, or becomes the strand's tail; ``sync`` without children is
nothing; ``ret`` syncs), so two emitters can be compared without writing files.
"""

from __future__ import annotations

import numpy as np

from simsched.workloads import fib as fib_mod
from simsched.workloads import hashjoin as hj
from simsched.workloads import heat as heat_mod
from simsched.workloads import mergesort as ms


class Recorder:
    """In-memory stand-in for a TraceBuilder that records events and references."""

    def __init__(self):
        self.events: list[str] = []  # "spawn", "ret", "sync", "iter:<i>"
        self.strands: list[dict] = []
        self._open = [False]  # per open frame: children not yet synced
        self._new()

    def _new(self):
        self.strands.append({"addr": [], "size": [], "write": [], "gap": [], "tail": 0})
        self._pending = 0

    def _end(self):
        self.strands[-1]["tail"] = self._pending
        self._pending = 0

    def spawn(self):
        self._end()
        self.events.append("spawn")
        self._open[-1] = True
        self._open.append(False)
        self._new()

    def sync(self):
        if self._open[-1]:
            self._end()
            self.events.append("sync")
            self._open[-1] = False
            self._new()

    def ret(self):
        assert len(self._open) > 1, "ret without spawn"
        self.sync()
        self._end()
        self._open.pop()
        self.events.append("ret")
        self._new()

    def iteration(self, i):
        self.events.append(f"iter:{int(i)}")

    def instr(self, n):
        assert n >= 0
        self._pending += int(n)

    def ref(self, addr, size, is_write, gap=0):
        s = self.strands[-1]
        s["addr"].append(int(addr))
        s["size"].append(int(size))
        s["write"].append(bool(is_write))
        s["gap"].append(int(gap) + self._pending)
        self._pending = 0

    def refs(self, addrs, sizes, writes, gaps=0):
        a = np.atleast_1d(np.asarray(addrs)).astype(np.uint64)
        n = len(a)
        if n == 0:
            return
        sz = np.broadcast_to(np.asarray(sizes), (n,))
        w = np.broadcast_to(np.asarray(writes, bool), (n,))
        g = np.broadcast_to(np.asarray(gaps), (n,)).astype(np.int64).copy()
        g[0] += self._pending
        self._pending = 0
        s = self.strands[-1]
        s["addr"].extend(int(x) for x in a)
        s["size"].extend(int(x) for x in sz)
        s["write"].extend(bool(x) for x in w)
        s["gap"].extend(int(x) for x in g)

    def close(self):
        self.sync()
        self._end()
        assert len(self._open) == 1, "unreturned frames"

    def canonical(self):
        """(events, per-strand tuples of arrays) for comparisons."""
        out = []
        for s in self.strands:
            out.append(
                (
                    np.asarray(s["addr"], np.uint64),
                    np.asarray(s["size"], np.int64),
                    np.asarray(s["write"], bool),
                    np.asarray(s["gap"], np.int64),
                    s["tail"],
                )
            )
        return self.events, out


# -- mergesort (simsched/workloads/mergesort.py) ----------------------------------------------


def mergesort(b, p, heap):
    """The mergesort program of ``simsched.workloads.mergesort``, statement by statement."""
    n, grain, mg, es = p["n"], p["grain"], p["merge_grain"], p["elem_size"]
    keys = ms.input_keys(n, es, p["seed"])
    base = (heap.regions["A"].base, heap.regions["tmp"].base)
    mem = [[int(k) for k in keys], [None] * n]

    def ref(arr, i, w, gap):
        b.ref(base[arr] + i * es, es, w, gap)

    def merge(src, dst, i, ie, j, je, k):
        b.instr(ms.CALL_MERGE)
        while i < ie and j < je:
            ref(src, i, False, ms.GAP_MERGE_X)
            ref(src, j, False, ms.GAP_MERGE_Y)
            ref(dst, k, True, ms.GAP_MERGE_W)
            if mem[src][i] <= mem[src][j]:
                mem[dst][k] = mem[src][i]
                i += 1
            else:
                mem[dst][k] = mem[src][j]
                j += 1
            k += 1
        for a, e in ((i, ie), (j, je)):
            while a < e:
                ref(src, a, False, ms.GAP_COPY_R)
                ref(dst, k, True, ms.GAP_COPY_W)
                mem[dst][k] = mem[src][a]
                a += 1
                k += 1

    def msort(lo, m, d):
        b.instr(ms.CALL_MSORT)
        dst, src = d & 1, 1 - (d & 1)
        if m == 1:
            if dst == 1:
                ref(0, lo, False, ms.GAP_COPY_R)
                ref(1, lo, True, ms.GAP_COPY_W)
                mem[1][lo] = mem[0][lo]
            return
        h = m // 2
        msort(lo, h, d + 1)
        msort(lo + h, m - h, d + 1)
        merge(src, dst, lo, lo + h, lo + h, lo + m, lo)

    def psort(lo, m, d):
        b.instr(ms.CALL_PSORT)
        if m <= grain:
            msort(lo, m, d)
            return
        h = m // 2
        b.spawn()
        psort(lo, h, d + 1)
        b.ret()
        b.spawn()
        psort(lo + h, m - h, d + 1)
        b.ret()
        b.sync()
        dst, src = d & 1, 1 - (d & 1)
        k = min(-(-m // mg), h)
        if k == 1:
            merge(src, dst, lo, lo + h, lo + h, lo + m, lo)
            return
        ps, qs = [0], [0]
        for c in range(1, k):
            pc = c * h // k
            x = mem[src][lo + pc]
            ref(src, lo + pc, False, ms.GAP_SPLIT)
            a, z = 0, m - h
            while a < z:
                mid = (a + z) // 2
                ref(src, lo + h + mid, False, ms.GAP_PROBE)
                if mem[src][lo + h + mid] < x:
                    a = mid + 1
                else:
                    z = mid
            ps.append(pc)
            qs.append(a)
        ps.append(h)
        qs.append(m - h)
        for c in range(k):
            b.spawn()
            merge(
                src,
                dst,
                lo + ps[c],
                lo + ps[c + 1],
                lo + h + qs[c],
                lo + h + qs[c + 1],
                lo + ps[c] + qs[c],
            )
            b.ret()
        b.sync()

    if p["init"]:
        for i in range(n):
            ref(0, i, True, ms.GAP_INIT)
    b.spawn()
    psort(0, n, 0)
    b.ret()
    b.sync()
    return {"input": keys, "output": np.asarray(mem[0], dtype=keys.dtype)}


# -- fib (simsched/workloads/fib.py) ------------------------------------------------------------


def fib(b, p, heap):
    """The fib program of ``simsched.workloads.fib``, call by call."""
    n, cutoff = p["n"], p["cutoff"]

    def refs(depth, table):
        for slot, w, g in table:
            b.ref(fib_mod.stack_addr(depth, slot), 8, w, g)

    def sfib(m, depth):
        if m < 2:
            refs(depth, fib_mod.BASE)
            return m
        refs(depth, fib_mod.ENTRY)
        b.instr(fib_mod.AFTER_ENTRY)
        x = sfib(m - 1, depth + 1)
        refs(depth, (fib_mod.STORE_X,))
        b.instr(fib_mod.AFTER_STORE_X)
        y = sfib(m - 2, depth + 1)
        refs(depth, fib_mod.EXIT)
        return x + y

    def task(m, depth):
        if m < cutoff:
            return sfib(m, depth)
        refs(depth, fib_mod.ENTRY)
        b.instr(fib_mod.AFTER_ENTRY)
        b.spawn()
        x = task(m - 1, depth + 1)
        b.ret()
        refs(depth, (fib_mod.STORE_X,))
        b.instr(fib_mod.AFTER_STORE_X)
        b.spawn()
        y = task(m - 2, depth + 1)
        b.ret()
        b.sync()
        refs(depth, fib_mod.EXIT)
        return x + y

    b.spawn()
    value = task(n, 1)
    b.ret()
    b.sync()
    return {"value": value}


# -- heat (simsched/workloads/heat.py) ------------------------------------------------------------


def heat(b, p, heap):
    """The heat program of ``simsched.workloads.heat``, point by point on a real grid."""
    nx, ny, cutoff, E = p["nx"], p["ny"], p["cutoff"], heat_mod.ELEM
    base = (heap.regions["A"].base, heap.regions["B"].base)
    grid = [np.zeros((nx, ny)), np.zeros((nx, ny))]
    if p["init"]:
        for r in range(nx):
            for c in range(ny):
                b.ref(base[0] + (r * ny + c) * E, E, True, heat_mod.GAP_INIT[0])
                b.ref(base[1] + (r * ny + c) * E, E, True, heat_mod.GAP_INIT[1])
                grid[0][r, c] = grid[1][r, c] = 1.0 if r in (0, nx - 1) else 0.0

    def step(r0, r1, old, new):
        b.instr(heat_mod.CALL_HEAT)
        if r1 - r0 <= cutoff:
            for r in range(r0, r1):
                b.instr(heat_mod.GAP_ROW)
                for c in range(1, ny - 1):
                    acc = []
                    for (dr, dc), g in zip(heat_mod.STENCIL, heat_mod.GAP_LOADS, strict=True):
                        b.ref(base[old] + ((r + dr) * ny + c + dc) * E, E, False, g)
                        acc.append(grid[old][r + dr, c + dc])
                    b.ref(base[new] + (r * ny + c) * E, E, True, heat_mod.GAP_STORE)
                    centre = acc[0]
                    grid[new][r, c] = centre + 0.1 * (sum(acc[1:]) - 4 * centre)
            return
        m = (r0 + r1) // 2
        b.spawn()
        step(r0, m, old, new)
        b.ret()
        b.spawn()
        step(m, r1, old, new)
        b.ret()
        b.sync()

    for it in range(p["iters"]):
        b.iteration(it)
        b.spawn()
        step(1, nx - 1, it % 2, 1 - it % 2)
        b.ret()
        b.sync()
    return {"grid": grid[p["iters"] % 2]}


# -- hashjoin (simsched/workloads/hashjoin.py) ----------------------------------------------------


def hashjoin(b, p, heap):
    """The hash-join program of ``simsched.workloads.hashjoin`` with a real chained table."""
    data = hj._Data(p)
    rs = p["record_size"]
    build, probe, out = (heap.regions[k].base for k in ("build", "probe", "out"))
    moves = [(o, min(hj.MOVE, rs - o)) for o in range(0, rs, hj.MOVE)]
    output = []

    def memcpy(dst, src):
        b.instr(hj.GAP_MEMCPY_CALL)
        for o, sz in moves:
            b.ref(src + o, sz, False, hj.GAP_MOVE[0])
            b.ref(dst + o, sz, True, hj.GAP_MOVE[1])

    for s in range(p["subparts"]):
        b.spawn()
        b.instr(hj.CALL_JOIN)
        b0, b1 = int(data.build_start[s]), int(data.build_start[s + 1])
        n_s = b1 - b0
        nbk = 1
        while nbk < n_s:
            nbk *= 2
        shift = 32 - (nbk.bit_length() - 1)
        bkt = heap.regions[f"buckets.{s}"].base
        cel = heap.regions[f"cells.{s}"].base
        for o in range(0, nbk * hj.BUCKET, hj.MOVE):
            b.ref(bkt + o, min(hj.MOVE, nbk * hj.BUCKET - o), True, hj.GAP_MEMSET)
        heads = [-1] * nbk
        cells = []
        for i in range(n_s):
            key = int(data.build_keys[b0 + i])
            b.ref(build + (b0 + i) * rs, hj.KEY, False, hj.GAP_B_KEY)
            h = (key * hj.HASH_MUL) & 0xFFFFFFFF
            k = h >> shift
            b.ref(bkt + k * hj.BUCKET, hj.BUCKET, False, hj.GAP_B_BUCKET)
            g = hj.GAP_B_STORES
            b.ref(cel + i * hj.CELL, 4, True, g[0])
            b.ref(cel + i * hj.CELL + 4, 4, True, g[1])
            b.ref(cel + i * hj.CELL + 8, 4, True, g[2])
            b.ref(bkt + k * hj.BUCKET, hj.BUCKET, True, g[3])
            cells.append((h, i, heads[k]))
            heads[k] = i
        p0, p1 = int(data.probe_start[s]), int(data.probe_start[s + 1])
        for t0 in range(p0, p1, p["grain"]):
            b.spawn()
            b.instr(hj.CALL_PROBE)
            for t in range(t0, min(p1, t0 + p["grain"])):
                key = int(data.probe_keys[t])
                b.ref(probe + t * rs, hj.KEY, False, hj.GAP_P_KEY)
                h = (key * hj.HASH_MUL) & 0xFFFFFFFF
                k = h >> shift
                b.ref(bkt + k * hj.BUCKET, hj.BUCKET, False, hj.GAP_P_BUCKET)
                c = heads[k]
                while c != -1:
                    ch, rid, nxt = cells[c]
                    b.ref(cel + c * hj.CELL, 4, False, hj.GAP_P_HASH)
                    if ch == h:
                        b.ref(cel + c * hj.CELL + 4, 4, False, hj.GAP_P_RID)
                        b.ref(build + (b0 + rid) * rs, hj.KEY, False, hj.GAP_P_BKEY)
                        if int(data.build_keys[b0 + rid]) == key:
                            memcpy(out + t * 2 * rs, build + (b0 + rid) * rs)
                            memcpy(out + t * 2 * rs + rs, probe + t * rs)
                            output.append((key, b0 + rid, t))
                    b.ref(cel + c * hj.CELL + 8, 4, False, hj.GAP_P_NEXT)
                    c = nxt
            b.ret()
        b.sync()
        b.ret()
    b.sync()
    return {"output": output}
