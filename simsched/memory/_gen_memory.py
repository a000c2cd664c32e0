"""Source snippets of the generated memory kernels: what happens below a cache miss.

Part of the source generator of :mod:`simsched.memory._kernels`: back-invalidation of
inclusive levels, directory coherence, the NUMA page table and placement, the memory
controllers' queues and the inter-socket links, DRAM fetches and write-backs, victims
travelling down the hierarchy, demand fills and the statistics counters.
"""

from __future__ import annotations

from simsched.memory._gen_sets import (
    _base,
    _f_add,
    _fbase,
    _ind,
    _lvl_idx,
    _s_find,
    _s_insert,
    _s_remove,
    _s_touch,
    _sets,
    _tlist,
    _u,
)
from simsched.memory._geometry import (
    _DEBRUIJN_MUL,
    CORE_CYCLES,
    CORE_LEVEL0,
    CORE_LINES,
    CORE_MEM_LOCAL,
    CORE_MEM_REMOTE,
    CORE_QUEUE_DELAY,
    CORE_REFS,
    LVL_ACCESSES,
    LVL_BACK_INV,
    LVL_HITS,
    LVL_INVALIDATIONS,
    LVL_MISSES,
    LVL_WRITEBACKS,
    MISC_PAGES,
    MISC_PT_SHIFT,
    NNS,
    NODE_LOCAL,
    NODE_QUEUE_DELAY,
    NODE_REMOTE,
    NODE_WB_QUEUE_DELAY,
    NODE_WRITEBACKS,
    PLACE_FIRST_TOUCH,
    PLACE_FIXED,
    PLACE_INTERLEAVE,
    Geometry,
)


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
    return f"NS[{_u(f'nd * {NNS} + {field}')}] += {amount}"


def _core_inc(field: int, amount: str) -> str:
    return f"{_CORE_VAR[field]} += {amount}"


def _g_controller(g: Geometry, after_fetch: bool = False) -> list[str]:
    """Reserve node ``nd``'s controller from ``tl`` on: ``t0`` = start of service.

    ``after_fetch``: a fetch from the same (fixed) node was reserved at ``tl`` just
    before, so the controller is free at ``ctrl >= tl`` and no comparison is needed."""
    ctrl = "ctrl" if _local_node(g) else f"CTRL[{_u('nd')}]"
    if after_fetch and _local_node(g):
        return ["t0 = ctrl", "ctrl = t0 + SVC"]
    return [
        f"t0 = {ctrl}",
        "if t0 < tl:",
        "    t0 = tl",
        f"{ctrl} = t0 + SVC",
    ]


def _g_links(g: Geometry, src: str, dst: str, t: str) -> list[str]:
    """Reserve the links from socket ``src`` to ``dst`` from time ``t`` on: ``tq`` = when
    the last one starts (:func:`_links_source`)."""
    return [f"tq = _links(CTRL, NS, TIM, {src}, {dst}, {t})"]


def _links_source(g: Geometry) -> str:
    """``_links(CTRL, NS, TIM, src, dst, t)``: reserve, in order, the directed links from
    socket ``src`` to ``dst`` from time ``t`` on, like controllers; returns when the last
    one starts.  Link ``d``'s next free time is ``CTRL[sockets + d]``; its statistics
    ``NS[sockets * NNS + 2 d]`` (transfers) and ``+ 1`` (queueing delay).

    A function, as the filter's updates are (:func:`~simsched.memory._gen_sets._filter_source`):
    every fetch from and write-back to another socket's node crosses links."""
    if not g.links:
        return ""
    S, H = g.sockets, g.hops
    body = [
        f"rb = (src * {S} + dst) * {H}",
        "tq = t",
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
        "return tq",
    ]
    return "\n\n@_jit\ndef _links(CTRL, NS, TIM, src, dst, t):\n" + "\n".join(_ind(body, 1)) + "\n"


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
        f"CS[{_u(f'cb + {CORE_REFS}')}] += nrefs",
        f"CS[{_u(f'cb + {CORE_LINES}')}] += nlines",
        f"CS[{_u(f'cb + {CORE_CYCLES}')}] += ncycles",
        *[f"CS[{_u(f'cb + {f}')}] += {v}" for f, v in _CORE_VAR.items()],
    ]
    if _local_node(g):
        out += [f"NS[{g.fixed_node * NNS + f}] += {v}" for f, v in _NODE_VAR.items()]
        out.append(f"CTRL[{g.fixed_node}] = ctrl")
    for k in range(g.levels):
        for field, var in _FIELD_VAR.items():
            out.append(f"LS[{_u(_lvl_idx(g, k, f'ix{k}', field))}] += {var}{k}")
            if not g.private[k] and field != LVL_WRITEBACKS:
                out.append(f"CS[{_u(f'cb + {CORE_LEVEL0 + 3 * k + field}')}] += {var}{k}")
    return out
