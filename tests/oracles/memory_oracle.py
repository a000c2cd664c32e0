"""Slow, obvious model of the memory hierarchy: the oracle of ``simsched.memory``.

Every cache set is an ``OrderedDict`` mapping a line number to its dirty flag, least
recently used first.  The semantics are those of ``docs/machine-model.md``, written out
step by step and independently of the generated Numba kernels:

* a reference touches every level-0 line it overlaps, one after the other, each issued
  when the previous one completed;
* a line access probes the levels of the issuing core from the top; the first level
  holding the line serves it (hit latency), or memory does (node latency, remote
  penalty, controller wait);
* the levels that missed are filled deepest first; each fill inserts the line at MRU and
  then handles its victim: an inclusive level back-invalidates the victim's sub-lines
  above it (their dirtiness joins the victim), a dirty victim is written back to the next
  level (which marks it dirty and MRU, or allocates it and handles its own victim) or to
  memory;
* an exclusive (victim) level is never filled by a demand miss: every victim of the level
  above, clean or dirty, arrives there as a write-back carrying its own dirty bit (only a
  dirty one counts as a write-back of the level above); a demand hit there removes the
  line, whose dirtiness goes to the level-0 copy;
* a write marks the level-0 copy dirty; with coherence it then removes the line from
  every cache not on the writer's path (other cores' private levels, other sockets'
  shared levels), top level first; an inclusive level losing a line back-invalidates the
  line's sub-lines above it;
* memory: one controller per node, busy ``service_interval`` cycles per line, fetches
  first and then the write-back of the victim;
* socket links (§5.1): each link is two directed links, each busy
  ``round(line * clock_ghz / bandwidth)`` cycles (at least 1) per last-level line; a
  transfer from socket ``s`` to ``t`` takes the fewest links, found breadth first from
  ``s`` with neighbours in the order the links are listed; a remote fetch crosses the
  route from the node to the core's socket from the cycle the controller starts serving
  it, each link reserved from the cycle the one before it started, and pays the route's
  latencies plus the last start minus that cycle; a remote write-back crosses the route
  from the socket to the node from the cycle of the write-back, and waits for nothing.
"""

from __future__ import annotations

from collections import OrderedDict

from simsched.machine import Machine

LVL_FIELDS = ("accesses", "hits", "misses", "writebacks", "invalidations", "back_invalidations")
CORE_FIELDS = ("refs", "lines", "mem_local", "mem_remote", "queue_delay", "cycles")
NODE_FIELDS = (
    "local",
    "remote",
    "writebacks",
    "busy_cycles",
    "queue_delay",
    "writeback_queue_delay",
)


def ooo_wait(
    flight: list[tuple[int, int]], now: int, ins: int, dep: bool, rob: int, mshrs: int
) -> tuple[int, int]:
    """Step 2 of the out-of-order rule (docs/machine-model.md §6.1), changing nothing.

    ``flight``: the core's misses in flight as (completion, instruction number), oldest
    first; ``now``: the reference's issue time by step 1; ``ins``: its instruction number.
    The reference waits, oldest first, for every miss ``rob`` or more instructions older
    (the reorder buffer is full), for all of them when it is ``dep``endent, and for the
    oldest left when all ``mshrs`` are busy.  Returns its issue time and how many of the
    oldest misses it waited for (they leave the list when it issues)."""
    waited = 0
    while waited < len(flight) and flight[waited][1] <= ins - rob:
        waited += 1
    if dep:
        waited = len(flight)
    if len(flight) - waited == mshrs:
        waited += 1
    return max([now] + [done for done, _ in flight[:waited]]), waited


class MemoryOracle:
    """Reference model with the same semantics and statistics as ``MemorySystem``."""

    def __init__(self, machine: Machine):
        self.m = machine
        self.levels = list(machine.caches)
        self.L = len(self.levels)
        self.cps = machine.cores_per_socket
        self.shift = [c.line.bit_length() - 1 for c in self.levels]
        self.page_shift = machine.memory.page_size.bit_length() - 1
        self.sets: list[list[list[OrderedDict]]] = []
        for c in self.levels:
            n = machine.cores if c.scope == "core" else machine.sockets
            self.sets.append([[OrderedDict() for _ in range(c.sets)] for _ in range(n)])
        self.lvl = [
            [dict.fromkeys(LVL_FIELDS, 0) for _ in range(len(self.sets[k]))] for k in range(self.L)
        ]
        self.core = [dict.fromkeys(CORE_FIELDS, 0) for _ in range(machine.cores)]
        self.core_lvl = [
            [dict.fromkeys(("accesses", "hits", "misses"), 0) for _ in range(self.L)]
            for _ in range(machine.cores)
        ]
        self.node = [dict.fromkeys(NODE_FIELDS, 0) for _ in range(machine.sockets)]
        self.ctrl_free = [0] * machine.sockets
        self._init_links()
        self.pages: dict[int, int] = {}
        # The stream prefetcher (docs/machine-model.md §6.2), per core: its streams
        # [last line, direction, valid], the slot replaced next, the table of prefetched
        # lines {slot: (line, ready)} and its counters.
        self.pf_level = next((k for k, c in enumerate(self.levels) if c.prefetch is not None), None)
        if self.pf_level is not None:
            c = self.levels[self.pf_level]
            self.pf_table = 4096
            self.pf = c.prefetch
            self.streams = [
                [[0, 0, False] for _ in range(c.prefetch.streams)] for _ in range(machine.cores)
            ]
            self.next_stream = [0] * machine.cores
            self.table: list[dict[int, tuple[int, int]]] = [{} for _ in range(machine.cores)]
            self.pf_count = [
                dict.fromkeys(("issued", "useful", "late", "beyond"), 0)
                for _ in range(machine.cores)
            ]
        # Out-of-order cores: misses in flight and instructions issued, per core.
        self.flight: dict[int, list[tuple[int, int]]] = {}
        self.instr: dict[int, int] = {}

    def _init_links(self) -> None:
        """Directed links ``2 i`` (a to b) and ``2 i + 1`` (b to a) of link ``i``, and the
        route (directed link ids) between every pair of sockets."""
        links = list(self.m.links or ())
        self.link_ends = []
        for ln in links:
            self.link_ends += [(ln.a, ln.b), (ln.b, ln.a)]
        line = self.levels[-1].line
        clock = self.m.clock_ghz or 0.0
        self.link_busy = [
            max(1, round(line * clock / links[d // 2].bandwidth)) for d in range(2 * len(links))
        ]
        self.link_latency = [links[d // 2].latency for d in range(2 * len(links))]
        self.link_free = [0] * (2 * len(links))
        self.link_count = [[0, 0] for _ in range(2 * len(links))]  # lines, queueing delay
        self.route: dict[tuple[int, int], list[int]] = {}
        for s in range(self.m.sockets):
            way = {s: []}
            frontier = [s]
            while frontier:
                nxt = []
                for u in frontier:
                    for d, (a, b) in enumerate(self.link_ends):
                        if a == u and b not in way:
                            way[b] = [*way[u], d]
                            nxt.append(b)
                frontier = nxt
            for t, path in way.items():
                self.route[(s, t)] = path

    def _cross(self, src: int, dst: int, t: int) -> int:
        """Reserve the route's links in order from cycle ``t``; the last one's start."""
        for d in self.route[(src, dst)]:
            start = max(t, self.link_free[d])
            self.link_free[d] = start + self.link_busy[d]
            self.link_count[d][0] += 1
            self.link_count[d][1] += start - t
            t = start
        return t

    # ------------------------------------------------------------------ helpers
    def _inst(self, k: int, core: int) -> int:
        return core if self.levels[k].scope == "core" else core // self.cps

    def _set(self, k: int, inst: int, line: int) -> OrderedDict:
        return self.sets[k][inst][line % self.levels[k].sets]

    def _line_at(self, k: int, a0: int) -> int:
        return (a0 << self.shift[0]) >> self.shift[k]

    def _node_of(self, page: int, sock: int) -> int:
        mem = self.m.memory
        if self.m.sockets == 1:
            return 0
        if mem.placement == "interleave":
            return page % self.m.sockets
        if mem.fixed_node is not None:
            return mem.fixed_node
        if page not in self.pages:
            self.pages[page] = sock
        return self.pages[page]

    def _controller(self, node: int, now: int) -> int:
        start = max(now, self.ctrl_free[node])
        self.ctrl_free[node] = start + self.m.memory.service_interval
        self.node[node]["busy_cycles"] += self.m.memory.service_interval
        return start - now

    # ------------------------------------------------------------------ memory
    def _mem_fetch(self, core: int, line: int, now: int) -> int:
        sock = core // self.cps
        page = (line << self.shift[-1]) >> self.page_shift
        node = self._node_of(page, sock)
        wait = self._controller(node, now)
        self.node[node]["queue_delay"] += wait
        self.core[core]["queue_delay"] += wait
        lat = self.m.memory.latency + wait
        if node == sock:
            self.node[node]["local"] += 1
            self.core[core]["mem_local"] += 1
        else:
            self.node[node]["remote"] += 1
            self.core[core]["mem_remote"] += 1
            lat += self.m.memory.remote_latency
            if self.link_ends:
                t0 = now + wait
                path = self.route[(node, sock)]
                lat += sum(self.link_latency[d] for d in path) + self._cross(node, sock, t0) - t0
        return lat

    def _mem_wb(self, core: int, line: int, now: int) -> None:
        sock = core // self.cps
        page = (line << self.shift[-1]) >> self.page_shift
        node = self._node_of(page, sock)
        wait = self._controller(node, now)
        self.node[node]["writebacks"] += 1
        self.node[node]["writeback_queue_delay"] += wait
        if self.link_ends and node != sock:
            self._cross(sock, node, now)

    # ------------------------------------------------------------------ caches
    def _covered(self, k: int, inst: int, j: int) -> list[int]:
        """Instances of level j above an instance of level k."""
        if self.levels[k].scope == "core" or self.levels[j].scope == "socket":
            return [inst]
        return list(range(inst * self.cps, (inst + 1) * self.cps))

    def _back_invalidate(self, k: int, inst: int, line: int) -> bool:
        dirty = False
        for j in range(k):
            r = self.shift[k] - self.shift[j]
            for c in self._covered(k, inst, j):
                for sub in range(line << r, (line + 1) << r):
                    s = self._set(j, c, sub)
                    if sub in s:
                        dirty |= s.pop(sub)
                        self.lvl[j][c]["back_invalidations"] += 1
        return dirty

    def _victim(self, k: int, core: int, inst: int, victim, now: int) -> None:
        if victim is None:
            return
        line, dirty = victim
        if self.levels[k].inclusive and k > 0:
            dirty |= self._back_invalidate(k, inst, line)
        if k + 1 < self.L and self.levels[k + 1].exclusive:
            if dirty:
                self.lvl[k][inst]["writebacks"] += 1
            self._wb_arrive(k + 1, core, line, now, dirty)
            return
        if not dirty:
            return
        self.lvl[k][inst]["writebacks"] += 1
        if k + 1 < self.L:
            self._wb_arrive(k + 1, core, line >> (self.shift[k + 1] - self.shift[k]), now)
        else:
            self._mem_wb(core, line, now)

    def _insert(self, k: int, inst: int, line: int, dirty: bool):
        s = self._set(k, inst, line)
        victim = s.popitem(last=False) if len(s) == self.levels[k].assoc else None
        s[line] = dirty
        return victim

    def _fill(self, k: int, core: int, line: int, dirty: bool, now: int) -> None:
        inst = self._inst(k, core)
        victim = self._insert(k, inst, line, dirty)
        self._victim(k, core, inst, victim, now)

    def _wb_arrive(self, k: int, core: int, line: int, now: int, dirty: bool = True) -> None:
        inst = self._inst(k, core)
        s = self._set(k, inst, line)
        if line in s:
            s[line] = s[line] or dirty
            s.move_to_end(line)
            return
        victim = self._insert(k, inst, line, dirty)
        self._victim(k, core, inst, victim, now)

    def _coherence(self, core: int, a0: int) -> None:
        sock = core // self.cps
        for k in range(self.L):
            line = self._line_at(k, a0)
            if self.levels[k].scope == "core":
                others = [c for c in range(self.m.cores) if c != core]
            else:
                others = [s for s in range(self.m.sockets) if s != sock]
            for i in others:
                s = self._set(k, i, line)
                if line in s:
                    del s[line]
                    self.lvl[k][i]["invalidations"] += 1
                    if self.levels[k].inclusive and k > 0:
                        self._back_invalidate(k, i, line)

    def _access_line(self, core: int, a0: int, write: bool, now: int) -> int:
        served = self.L
        lat = None
        taken_dirty = False
        trig = None
        for k in range(self.L):
            line = self._line_at(k, a0)
            inst = self._inst(k, core)
            self.lvl[k][inst]["accesses"] += 1
            self.core_lvl[core][k]["accesses"] += 1
            s = self._set(k, inst, line)
            if line in s:
                self.lvl[k][inst]["hits"] += 1
                self.core_lvl[core][k]["hits"] += 1
                if self.levels[k].exclusive:
                    taken_dirty = s.pop(line)
                else:
                    s.move_to_end(line)
                if k == 0 and write:
                    s[line] = True
                lat = self.levels[k].hit_latency
                served = k
                if k == self.pf_level:
                    slot = self._slot(line)
                    got = self.table[core].get(slot)
                    if got is not None and got[0] == line:
                        self.pf_count[core]["useful"] += 1
                        if got[1] > now + lat:
                            lat = got[1] - now
                            self.pf_count[core]["late"] += 1
                        del self.table[core][slot]
                        trig = line
                break
            self.lvl[k][inst]["misses"] += 1
            self.core_lvl[core][k]["misses"] += 1
            if k == self.pf_level:
                trig = line
        if lat is None:
            lat = self._mem_fetch(core, self._line_at(self.L - 1, a0), now)
        for k in range(served - 1, -1, -1):
            if not self.levels[k].exclusive:
                dirty = k == 0 and (write or taken_dirty)
                self._fill(k, core, self._line_at(k, a0), dirty, now)
        if write and self.m.coherent:
            self._coherence(core, a0)
        if trig is not None:
            self._train(core, trig, now)
        return lat

    # ------------------------------------------------------------------ prefetcher
    def _slot(self, line: int) -> int:
        tb = self.pf_table.bit_length() - 1
        return (line ^ (line >> tb)) & (self.pf_table - 1)

    def _train(self, core: int, x: int, now: int) -> None:
        streams = self.streams[core]
        match = None
        for e in streams:
            last, d, valid = e
            if valid and (x == last + d if d else x in (last + 1, last - 1)):
                match = e
                break
        if match is None:
            i = self.next_stream[core]
            self.next_stream[core] = (i + 1) % len(streams)
            streams[i][:] = [x, 0, True]
            return
        if match[1] == 0:
            match[1] = x - match[0]
        match[0] = x
        page_lines = max(self.page_shift - self.shift[self.pf_level], 0)
        for q in range(self.pf.distance, self.pf.distance + self.pf.degree):
            p = x + match[1] * q
            if p < 0 or p >> page_lines != x >> page_lines:
                break
            self._prefetch(core, p, now)

    def _prefetch(self, core: int, p: int, now: int) -> None:
        kp = self.pf_level
        if p in self._set(kp, self._inst(kp, core), p):
            return
        served, lat, taken_dirty = self.L, None, False
        for k in range(kp + 1, self.L):
            line = p >> (self.shift[k] - self.shift[kp])
            s = self._set(k, self._inst(k, core), line)
            if line in s:
                if self.levels[k].exclusive:
                    taken_dirty = s.pop(line)
                else:
                    s.move_to_end(line)
                lat, served = self.levels[k].hit_latency, k
                break
        if lat is None:
            lat = self._mem_fetch(core, p >> (self.shift[-1] - self.shift[kp]), now)
        for k in range(served - 1, kp - 1, -1):
            if not self.levels[k].exclusive:
                line = p >> (self.shift[k] - self.shift[kp])
                self._fill(k, core, line, k == kp and taken_dirty, now)
        self.pf_count[core]["issued"] += 1
        if served >= sum(1 for c in self.levels if c.scope == "core"):
            self.pf_count[core]["beyond"] += 1
        self.table[core][self._slot(p)] = (p, now + lat)

    # ------------------------------------------------------------------ public
    def access(self, core: int, addr: int, size: int, is_write: bool, now: int) -> int:
        """Latency of one reference; updates state and statistics."""
        first = addr >> self.shift[0]
        last = (addr + size - 1) >> self.shift[0]
        lat = 0
        for a0 in range(first, last + 1):
            lat += self._access_line(core, a0, bool(is_write), now + lat)
        c = self.core[core]
        c["refs"] += 1
        c["lines"] += last - first + 1
        c["cycles"] += lat
        return lat

    def access_batch(
        self, core, addrs, sizes, writes, start_time, gaps=None, deps=None
    ) -> list[int]:
        """Same timing rule as ``MemorySystem.access_batch``."""
        if self.m.out_of_order is not None:
            return self._ooo_batch(core, addrs, sizes, writes, start_time, gaps, deps)
        t = int(start_time)
        out = []
        for i in range(len(addrs)):
            if gaps is not None:
                t += int(gaps[i])
            d = self.access(core, int(addrs[i]), int(sizes[i]), bool(writes[i]), t)
            out.append(d)
            t += d
        self.last_time = t
        return out

    def _ooo_batch(self, core, addrs, sizes, writes, start_time, gaps, deps) -> list[int]:
        """The out-of-order rule of docs/machine-model.md §6.1, written from the page: a
        list of (completion, instruction number) per core, oldest first."""
        ooo = self.m.out_of_order
        h0 = self.levels[0].hit_latency
        flight = self.flight.setdefault(core, [])
        t = int(start_time)
        out = []
        for i in range(len(addrs)):
            gap = int(gaps[i]) if gaps is not None else 0
            self.instr[core] = self.instr.get(core, 0) + gap + 1
            ins = self.instr[core]
            dep = deps is not None and bool(deps[i])
            now, waited = ooo_wait(flight, t + gap, ins, dep, ooo.rob, ooo.mshrs)
            del flight[:waited]
            lat = self.access(core, int(addrs[i]), int(sizes[i]), bool(writes[i]), now)
            out.append(lat)
            if lat > h0:
                flight.append((now + lat, ins))
                t = now + h0
            else:
                t = now + lat
        self.last_time = max([t] + [d for d, _ in flight])
        flight.clear()
        return out

    def stats(self) -> dict:
        """Statistics in the format of ``MemorySystem.stats``."""
        levels = []
        for k, c in enumerate(self.levels):
            inst = [dict(d) for d in self.lvl[k]]
            tot = {f: sum(d[f] for d in inst) for f in LVL_FIELDS}
            levels.append(
                {"name": c.name, "scope": c.scope, "line": c.line, **tot, "instances": inst}
            )
        cores = []
        for i in range(self.m.cores):
            d = dict(self.core[i])
            d["levels"] = {c.name: dict(self.core_lvl[i][k]) for k, c in enumerate(self.levels)}
            cores.append(d)
        sockets = []
        for s in range(self.m.sockets):
            mine = cores[s * self.cps : (s + 1) * self.cps]
            d = {f: sum(c[f] for c in mine) for f in CORE_FIELDS}
            d["levels"] = {
                c.name: {
                    f: sum(x["levels"][c.name][f] for x in mine)
                    for f in ("accesses", "hits", "misses")
                }
                for c in self.levels
            }
            sockets.append(d)
        nodes = [dict(n) for n in self.node]
        lines = sum(n["local"] + n["remote"] + n["writebacks"] for n in nodes)
        first_touch = self.m.sockets > 1 and self.m.memory.placement == "first-touch"
        out = {
            "levels": levels,
            "cores": cores,
            "sockets": sockets,
            "nodes": nodes,
            "offchip_bytes": lines * self.levels[-1].line,
            "pages_mapped": len(self.pages) if first_touch else 0,
        }
        if self.link_ends:
            out["links"] = [
                {
                    "from": a,
                    "to": b,
                    "lines": self.link_count[d][0],
                    "busy_cycles": self.link_count[d][0] * self.link_busy[d],
                    "queue_delay": self.link_count[d][1],
                }
                for d, (a, b) in enumerate(self.link_ends)
            ]
        if self.pf_level is not None:
            per = [{**d, "useless": d["issued"] - d["useful"]} for d in self.pf_count]
            total = {
                f: sum(d[f] for d in per) for f in ("issued", "useful", "late", "beyond", "useless")
            }
            out["prefetch"] = {"level": self.levels[self.pf_level].name, **total, "cores": per}
        return out

    def contents(self, k: int, inst: int) -> list[list[tuple[int, bool]]]:
        """Level k instance ``inst``: per set, (line, dirty) from MRU to LRU."""
        return [list(reversed(list(s.items()))) for s in self.sets[k][inst]]
