"""Slow, obviously correct models of the working-set profiler (simsched.profile).

* :func:`lru_misses` / :func:`setassoc_misses` — an ``OrderedDict`` LRU cache (one per set)
  replayed from cold: the SetAssoc method of the PDF paper §6.1 in its plainest form.
* :func:`stack_events` — the LRU stack as a Python list: per access, the stack distance and
  the previous strand, for checking LruTree's histograms cell by cell.
* :func:`group_tree_oracle` — the task groups rebuilt by a recursive walk over the frames.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np


def line_accesses(addr, size, line: int) -> tuple[list[int], list[int]]:
    """Line addresses touched by each reference (straddles touch every line) and the index
    of the reference each line access came from."""
    out, src = [], []
    for i, (a, s) in enumerate(zip(addr.tolist(), size.tolist(), strict=True)):
        for ln in range(a // line, (a + s - 1) // line + 1):
            out.append(ln)
            src.append(i)
    return out, src


def lru_misses(lines: list[int], capacity: int) -> int:
    """Misses of a fully associative LRU cache of ``capacity`` lines, from cold."""
    cache: OrderedDict[int, None] = OrderedDict()
    miss = 0
    for ln in lines:
        if ln in cache:
            cache.move_to_end(ln)
        else:
            miss += 1
            cache[ln] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return miss


def setassoc_misses(lines: list[int], capacity: int, assoc: int) -> int:
    """Misses of a set-associative LRU cache (``capacity // assoc`` sets, set = line mod sets)."""
    nsets = capacity // assoc
    sets = [OrderedDict() for _ in range(nsets)]
    miss = 0
    for ln in lines:
        s = sets[ln % nsets]
        if ln in s:
            s.move_to_end(ln)
        else:
            miss += 1
            s[ln] = None
            if len(s) > assoc:
                s.popitem(last=False)
    return miss


def stack_events(lines: list[int], strands: list[int]) -> list[tuple[int, int | None]]:
    """(stack distance, previous strand) of every access; distance 0 and None when cold."""
    stack: list[int] = []  # most recent first
    last: dict[int, int] = {}
    out = []
    for ln, s in zip(lines, strands, strict=True):
        if ln in last:
            d = stack.index(ln) + 1
            stack.pop(d - 1)
            out.append((d, last[ln]))
        else:
            out.append((0, None))
        stack.insert(0, ln)
        last[ln] = s
    return out


def trace_line_accesses(t, line: int) -> tuple[list[int], list[int]]:
    """All line accesses of a trace in serial order, and the strand of each."""
    lines: list[int] = []
    strands: list[int] = []
    rs = t.strands.ref_start
    for s in range(t.header.n_strands):
        c = t.refs(int(rs[s]), int(rs[s + 1]))
        ls, _ = line_accesses(c.addr, c.size, line)
        lines += ls
        strands += [s] * len(ls)
    return lines, strands


def group_tree_oracle(t) -> list[tuple[int, int, str]]:
    """(start, stop, kind) of every task group in pre-order, by a plain recursive walk."""
    from simsched.trace import EDGE_JOIN

    frame = t.strands.frame
    first, last = t.frames.first_strand, t.frames.last_strand
    post = set(t.edges.dst[t.edges.kind == EDGE_JOIN].tolist())
    out: list[tuple[int, int, str]] = []

    def items(f):
        own = [(int(s), -1) for s in np.flatnonzero(frame == f)]
        kids = [(int(first[c]), int(c)) for c in np.flatnonzero(t.frames.parent == f) if c != 0]
        return sorted(own + kids)

    def rng(it):
        return (it[0], it[0]) if it[1] < 0 else (int(first[it[1]]), int(last[it[1]]))

    def walk_frame(f):
        out.append((int(first[f]), int(last[f]), "frame"))
        its = items(f)
        if len(its) == 1:
            return
        phases = [[]]
        for it in its:
            if it[1] < 0 and it[0] in post and phases[-1]:
                phases.append([])
            phases[-1].append(it)
        if len(phases) == 1:
            walk_content(phases[0])
            return
        for ph in phases:
            if len(ph) == 1 and ph[0][1] < 0:
                out.append((ph[0][0], ph[0][0], "strand"))
            else:
                out.append((rng(ph[0])[0], rng(ph[-1])[1], "phase"))
                walk_content(ph)

    def walk_content(its):
        kids = [i for i, it in enumerate(its) if it[1] >= 0]
        if len(kids) <= 1:
            for it in its:
                if it[1] >= 0:
                    walk_frame(it[1])
                else:
                    out.append((it[0], it[0], "strand"))
            return
        for i in range(kids[0]):
            out.append((its[i][0], its[i][0], "strand"))
        walk_halves(its, kids)
        for i in range(kids[-1] + 1, len(its)):
            out.append((its[i][0], its[i][0], "strand"))

    def walk_halves(its, kids):
        m = (len(kids) + 1) // 2
        walk_split(its, kids[:m])
        for i in range(kids[m - 1] + 1, kids[m]):
            out.append((its[i][0], its[i][0], "strand"))
        walk_split(its, kids[m:])

    def walk_split(its, kids):
        if len(kids) == 1:
            walk_frame(its[kids[0]][1])
            return
        out.append((int(first[its[kids[0]][1]]), int(last[its[kids[-1]][1]]), "split"))
        walk_halves(its, kids)

    walk_frame(0)
    return out


def coarsen_oracle(groups, ws, unit: float) -> set[int]:
    """PDF paper §6.2 by plain recursion: the groups that become sequential tasks.

    At every node the parallel children (role 1) form one set with K = their number and
    W = the node's working set; every phase (role 2) of a frame is a set of its own.  A set
    whose W <= K × unit stops: its members are chosen; otherwise each member is visited.
    """
    chosen: set[int] = set()

    def kids(x):
        return [int(c) for c in groups.children_of(x)]

    def leaf(x):
        return groups.is_leaf(x)

    def visit(x):
        par = [c for c in kids(x) if groups.role[c] == 1]
        if par:
            if ws[x] <= len(par) * unit:
                chosen.update(par)
            else:
                for c in par:
                    if not leaf(c):
                        visit(c)
        for c in kids(x):
            if groups.role[c] == 2 and not leaf(c):
                if ws[c] <= unit:
                    chosen.add(c)
                else:
                    visit(c)

    visit(0)
    return chosen
