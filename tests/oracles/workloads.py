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

import copy

import numpy as np

from simsched.workloads import datapar as dp_mod
from simsched.workloads import fib as fib_mod
from simsched.workloads import ge as ge_mod
from simsched.workloads import hashjoin as hj
from simsched.workloads import mergesort as ms
from simsched.workloads import stencil as st_mod


class Recorder:
    """In-memory stand-in for a TraceBuilder that records events and references."""

    def __init__(self):
        self.events: list[str] = []  # "spawn", "ret", "sync", "iter:<i>"
        self.strands: list[dict] = []
        self._open = [False]  # per open frame: children not yet synced
        self.stack: tuple[int, int] | None = None
        self._new()

    def set_stack(self, lo, hi):
        self.stack = (int(lo), int(hi))

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

    def call(self):  # a called Cilk function: a frame of its own, waited for at once
        self._end()
        self.events.append("call")
        self._open.append(False)
        self._new()

    def call_ret(self):
        self.ret("call_ret")

    def ret(self, event="ret"):
        assert len(self._open) > 1, f"{event} without a frame to close"
        self.sync()
        self._end()
        self._open.pop()
        self.events.append(event)
        self._new()

    def iteration(self, i):
        self.events.append(f"iter:{int(i)}")

    def repeat_begin(self):
        self._rep = (len(self.events), len(self.strands))

    def repeat_end(self, count, stride=None):
        """Record the part since repeat_begin ``count`` times: the whole program."""
        e0, s0 = self._rep
        body_events = self.events[e0:]
        marks = [int(e[5:]) for e in body_events if e.startswith("iter:")]
        stride = stride or marks[-1] - marks[0] + 1
        body = self.strands[s0:]
        body[-1]["tail"] = self._pending  # main's strand, ended by the next copy's spawn
        for k in range(1, count):
            self.events += [
                f"iter:{int(e[5:]) + k * stride}" if e.startswith("iter:") else e
                for e in body_events
            ]
            self.strands += [copy.deepcopy(s) for s in body]

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

    def search(src, xi, ylo, m):
        x = mem[src][xi]
        ref(src, xi, False, ms.GAP_SPLIT)
        a, z = 0, m
        while a < z:
            mid = (a + z) // 2
            ref(src, ylo + mid, False, ms.GAP_PROBE)
            if mem[src][ylo + mid] < x:
                a = mid + 1
            else:
                z = mid
        return a

    def cilkmerge(src, dst, xs, xe, ys, ye, o):
        if xe - xs < ye - ys:
            xs, xe, ys, ye = ys, ye, xs, xe
        if (xe - xs) + (ye - ys) <= mg or xe - xs < 2:
            merge(src, dst, xs, xe, ys, ye, o)
            return
        mid = (xe - xs) // 2
        q = search(src, xs + mid, ys, ye - ys)
        b.spawn()
        cilkmerge(src, dst, xs, xs + mid, ys, ys + q, o)
        b.ret()
        b.spawn()
        cilkmerge(src, dst, xs + mid, xe, ys + q, ye, o + mid + q)
        b.ret()
        b.sync()

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
        if p.get("recursive_merge", False):
            b.call()
            cilkmerge(src, dst, lo, lo + h, lo + h, lo + m, lo)
            b.call_ret()
            return
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

    # the main thread's stack: the top 8 MiB below the stack top
    b.set_stack(fib_mod.STACK_TOP - (8 << 20), fib_mod.STACK_TOP)

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


# -- stencils (simsched/workloads/stencil.py) -----------------------------------------------------


def _pfor(b, lo, hi, cutoff, irregular, leaf, call, call_ir, uneven=False):
    """ss_pfor / ss_pfor_ir of ssprog.h, written out again from the C source; ``uneven``:
    child j of k gets a share (j + 1) / (k (k + 1) / 2) instead of 1 / k."""
    b.instr(call)
    n = hi - lo
    if n <= cutoff:
        leaf(lo, hi)
        return
    if not irregular:
        parts = [(lo, lo + n // 2), (lo + n // 2, hi)]
    else:
        b.instr(call_ir)
        k = min(2 + (lo // cutoff) % 3, n)
        if not uneven:
            parts = [(lo + n * j // k, lo + n * (j + 1) // k) for j in range(k)]
        else:
            parts, start = [], lo
            for j in range(k):
                end = hi if j == k - 1 else start + n * (j + 1) // (k * (k + 1) // 2)
                if end <= start:
                    end = start + 1
                end = min(end, hi)
                if end > start:
                    parts.append((start, end))
                start = end
    for c0, c1 in parts:
        b.spawn()
        _pfor(b, c0, c1, cutoff, irregular, leaf, call, call_ir, uneven)
        b.ret()
    b.sync()


def _pfor_over(b, p, rows, leaf):
    """The program's parallel loop over ``rows`` rows with ``p``'s cut-off and split."""
    calls = (st_mod.CALL_HEAT, st_mod.CALL_IR)
    _pfor(b, 0, rows, p["cutoff"], p["irregular"], leaf, *calls, p["uneven"])


def stencil(b, p, heap):
    """The stencil ``p["kind"]`` of ``simsched.workloads.stencil``, point by point on a grid."""
    kind = st_mod.KINDS[p["kind"]]
    E, R = st_mod.ELEM, kind.radius
    nx, ny, nz = p["nx"], p["ny"], p.get("nz", 1)
    names = [n for n in ("A", "B") if n in heap.regions]
    base = [heap.regions[n].base for n in names]
    grid = [np.zeros((nx, ny, nz)) for _ in names]
    if p["init"]:
        for x in range(nx * ny * nz):
            for k in range(len(names)):
                b.ref(base[k] + x * E, E, True, st_mod.GAP_INIT[k])
        for g in grid:
            g[0] = 1.0

    def at(i, j, k):
        return (i * ny + j) * nz + k

    def update(old, new, i, j, k):
        vals = []
        for (di, dj, dk), g in zip(kind.loads, kind.gap_loads, strict=True):
            b.ref(base[old] + at(i + di, j + dj, k + dk) * E, E, False, g)
            vals.append(grid[old][i + di, j + dj, k + dk])
        b.ref(base[new] + at(i, j, k) * E, E, True, kind.gap_store)
        grid[new][i, j, k] = sum(vals) / len(vals)

    def sweep(old, new, colour):
        def leaf(lo, hi):
            for i in range(lo + R, hi + R):
                if kind.dims == 3:
                    for j in range(R, ny - R):
                        b.instr(st_mod.GAP_ROW)
                        for k in range(R, nz - R):
                            update(old, new, i, j, k)
                else:
                    b.instr(st_mod.GAP_ROW)
                    j0 = 1 + ((i + colour) & 1) if kind.sweeps == 2 else 1
                    for j in range(j0, ny - 1, kind.sweeps):
                        update(old, new, i, j, 0)

        _pfor_over(b, p, nx - 2 * R, leaf)

    for it in range(p["iters"]):
        b.iteration(it)
        old, new = (0, 0) if kind.sweeps == 2 else (it % 2, 1 - it % 2)
        for colour in range(kind.sweeps):
            b.spawn()
            sweep(old, new, colour)
            b.ret()
            b.sync()
    return {"grid": grid[0] if kind.sweeps == 2 else grid[p["iters"] % 2]}


# -- ge (simsched/workloads/ge.py) ----------------------------------------------------------------


def ge(b, p, heap):
    """The ge program of ``simsched.workloads.ge``, element by element on a real matrix."""
    n, E = p["n"], ge_mod.ELEM
    a0 = heap.regions["A"].base
    A = np.eye(n) * n + 1.0
    if p["init"]:
        for x in range(n * n):
            b.ref(a0 + x * E, E, True, ge_mod.GAP_INIT)

    def addr(i, j):
        return a0 + (i * n + j) * E

    for k in range(p["steps"]):
        b.iteration(k)

        def leaf(lo, hi, k=k):
            for i in range(k + 1 + lo, k + 1 + hi):
                b.ref(addr(i, k), E, False, ge_mod.GAP_ROW)
                b.ref(addr(k, k), E, False, 0)
                f = A[i, k] / A[k, k]
                b.instr(ge_mod.GAP_DIV)
                for j in range(k, n):
                    b.ref(addr(k, j), E, False, ge_mod.GAP_COL[0])
                    b.ref(addr(i, j), E, False, ge_mod.GAP_COL[1])
                    b.ref(addr(i, j), E, True, ge_mod.GAP_COL[2])
                    A[i, j] -= f * A[k, j]

        b.spawn()
        _pfor_over(b, p, n - 1 - k, leaf)
        b.ret()
        b.sync()
    return {"matrix": A}


# -- datapar (simsched/workloads/datapar.py) -----------------------------------------------------


def datapar(b, p, heap):
    """The datapar program of ``simsched.workloads.datapar``, element by element."""
    E, a0 = dp_mod.ELEM, heap.regions["A"].base
    total = p["n"] * p["elems"]
    if p["init"]:
        for x in range(total):
            b.ref(a0 + x * E, E, True, dp_mod.GAP_INIT)
    for i in range(p["n"]):
        b.instr(dp_mod.GAP_SPAWN)
        b.spawn()
        b.instr(dp_mod.CALL_WORK)
        for _ in range(p["reps"]):
            b.instr(dp_mod.GAP_SWEEP)
            for j in range(p["elems"]):
                x = a0 + (i * p["elems"] + j) * E
                b.ref(x, E, False, dp_mod.GAP_ELEM[0])
                b.ref(x, E, True, dp_mod.GAP_ELEM[1])
        b.ret()
    b.sync()
    return {"children": p["n"]}


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
