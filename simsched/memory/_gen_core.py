"""Source snippets of the generated memory kernels: one core's access and the entry points.

Part of the source generator of :mod:`simsched.memory._kernels`: one level-0 access
(:func:`_g_line`), the stream prefetcher (training, probes, fetches), the out-of-order
core's miss window (issue and retire), and the generated entry points ``_serve`` (a
core's references up to a time bound) and the drain of outstanding misses.
"""

from __future__ import annotations

from simsched.memory._gen_memory import (
    _g_count,
    _g_fill,
    _g_flush,
    _g_locals,
    _g_mem_fetch,
    _g_take,
)
from simsched.memory._gen_sets import (
    _base,
    _fbase,
    _ind,
    _inst,
    _s_find,
    _s_touch,
    _sets,
    _tlist,
    _u,
    _unpack,
)
from simsched.memory._geometry import (
    ADDRESS_BITS,
    LVL_ACCESSES,
    LVL_HITS,
    LVL_MISSES,
    MISC_PAGES,
    MISC_PMISS,
    MISC_STATUS,
    MISC_TIME,
    OOO_COUNT,
    OOO_HEAD,
    OOO_INSTR,
    OOO_RING,
    PF_BEYOND,
    PF_ISSUED,
    PF_LATE,
    PF_NEXT,
    PF_OLD,
    PF_STREAMS,
    PF_USEFUL,
    PLACE_FIRST_TOUCH,
    TIM_MEM,
    TIM_REMOTE,
    TIM_SERVICE,
    Geometry,
)


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
        # A first-level hit is the common case; the levels below serve misses of every
        # kind, with no outcome to expect.
        hit_test = "if likely(p >= 0):" if k == 0 else "if p >= 0:"
        out += [*_s_find(g, k, f"T{k}", f"b{k}", f"a{k}"), hit_test]
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
            "    if unlikely(others != 0):",
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
        f"pft = PF[{_u('pfe')}]",
        # An entry of before the last reset_stats (PF_OLD) times and trains as any other.
        f"if unlikely(pft & {~PF_OLD} == a{k}):",
        f"    pfn = 1 if pft == a{k} else 0",
        f"    PF[pfb + {PF_USEFUL}] += pfn",
        f"    pfr = PF[{_u('pfe + 1')}]",
        f"    if pfr > tl + H{k}:",
        "        dl = pfr - tl",
        f"        PF[pfb + {PF_LATE}] += pfn",
        f"    PF[{_u('pfe')}] = -1",
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


def _g_pf_host(g: Geometry) -> list[str]:
    """Host-cache prefetch of the sets a prefetch of line ``pfp`` will search."""
    kp, L = g.pf_level, g.levels
    out = []
    for k in range(kp, L):
        out.append(f"hb = {_base(g, k, f'ix{k}', f'(pfp >> {g.shifts[k] - g.shifts[kp]})')}")
        # One hint per host line of the set (8 entries), and its last way; once each.
        for e in sorted({*range(0, g.ways[k], 8), g.ways[k] - 1}):
            out.append(f"host_prefetch(T{k}, hb + {e})")
    return out


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
    # The lines a continued stream prefetches: the host is asked for the sets their
    # fetches search first, then they are fetched.
    each_line = [
        f"    for q_ in range({g.pf_distance}, {g.pf_distance + g.pf_degree}):",
        "        pfp = pfx + pfd * q_",
        f"        if pfp < 0 or (pfp >> {page_lines}) != (pfx >> {page_lines}):",
        "            break",
    ]
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
        *each_line,
        *_ind(_g_pf_host(g), 2),
        *each_line,
        *_ind(_g_pf_fetch(g), 2),
        "dl = pfdl",
    ]
    return ["if unlikely(trig):", *_ind(trig, 1)]


def _others(g: Geometry) -> list[str]:
    """``others`` != 0 iff the sharer mask at ``fb`` names an entity other than the
    writer's core and socket (their lines are on the writer's path)."""
    se = f"{g.cores} + sock"
    if g.mask_words == 1:
        return [f"others = FC[{_u('fb')}] & ~((np.int64(1) << core) | (np.int64(1) << ({se})))"]
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
        f"if OO[{_u('ob + j')}] > now:",
        f"    now = OO[{_u('ob + j')}]",
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
        f"gi = np.int64(gaps[{_u('i')}]) if use_gaps else np.int64(0)",
        "now = t + gi",
        "ins1 = ins + gi + 1",
        "k = 0",
        "j = head",
        f"while k < cnt and OO[{_u(f'ob + {M} + j')}] <= ins1 - {R}:",
        *_ind(_ooo_retire(g), 1),
        f"if deps[{_u('i')}]:",
        "    while k < cnt:",
        *_ind(_ooo_retire(g), 2),
        f"if unlikely(cnt - k == {M}):",
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


#: References ahead of where a core stops whose trace lines ``_serve`` prefetches.
HOST_PREFETCH_REFS = 32


def _entry(g: Geometry) -> str:
    ooo = g.mshrs > 0
    M = g.mshrs
    serve = [
        '"""Serve references i0..n-1 of one core in order, statistics kept in registers.',
        "",
        "Reference i (address ``addrs[i] + off``) issues ``gaps[i]`` cycles after the",
        "previous one completed (the first after ``t``).  Stops before the first",
        "reference whose issue time passes ``bound`` (at ``bound`` itself it stops unless",
        "``tie_wins``, or nothing was served yet and the reference did not stall), or",
        "when the page table reaches ``page_limit`` entries.  Returns the index of the first",
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
                f"    if unlikely(MISC[{MISC_PAGES}] >= page_limit):",
                "        stop = i",
                "        break",
            ]
            if g.placement == PLACE_FIRST_TOUCH
            else []
        ),
        f"    addr = addrs[{_u('i')}] + off",
        f"    size = np.int64(sizes[{_u('i')}])",
        # Invalid references (size 0, address >= 2**ADDRESS_BITS) are flagged and skipped; a
        # branch that leaves the loop would cost ~15 % of the loop's speed.
        # (addr itself too: a negative one, 2**63 and up as uint64, ends past zero.)
        f"    if unlikely((addr | (addr + size - 1) | (size - 1)) >> {ADDRESS_BITS} != 0):",
        f"        MISC[{MISC_STATUS}] = 1",
        "        if rec:",
        "            out[i] = 0",
        "        continue",
        *(
            _ind(_ooo_issue(g), 1)
            if ooo
            else [f"    now = t + np.int64(gaps[{_u('i')}]) if use_gaps else t"]
        ),
        # The time bound: shared levels and controllers must see every core's references
        # within the engine's window of global time order.  The first reference of a
        # call may go at the bound itself: its core won its place in the window loop's
        # heap with that very issue time.  Not so a stalled one (out-of-order): it won
        # the place with its issue time before the wait, so at the bound it must win the
        # tie on its own, or stop (its stall committed below) and be ordered by its real
        # issue time.
        (
            "    if unlikely(now > bound or (now == bound and not tie_wins and (i > i0 or now > t + gi))):"
            if ooo
            else "    if unlikely(now > bound or (now == bound and not tie_wins and i > i0)):"
        ),
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
        f"    w = 1 if writes[{_u('i')}] else 0",
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
        "    if unlikely(lat > pthresh):",
        "        pm += 1",
        "    if rec:",
        "        out[i] = lat",
        *(
            [
                # A first-level miss stays in flight; the core goes on after the
                # first level's latency, as after a hit.
                "    if unlikely(lat > H0):",
                "        j = head + cnt",
                f"        if j >= {M}:",
                f"            j -= {M}",
                f"        OO[{_u('ob + j')}] = now + lat",
                f"        OO[{_u(f'ob + {M} + j')}] = ins1",
                "        cnt += 1",
                "        t = now + H0",
                "    else:",
                "        t = now + lat",
            ]
            if ooo
            else ["    t = now + lat"]
        ),
        # The lines of the core's next references, fetched into the host's caches while
        # the other cores run (simsched/memory/_hostcache.py says why).
        "if stop < n:",
        f"    e = min(stop + {HOST_PREFETCH_REFS}, n) - 1",
        *[
            f"    host_prefetch_span({a}, stop, e)"
            for a in ("addrs", "gaps", "sizes", "writes", "deps")
        ],
        # ... and the first-level set (and prefetch-table slot) its next reference reads.
        f"    xa = (addrs[{_u('stop')}] + off) >> {g.shifts[0]}",
        f"    host_prefetch(T0, {_base(g, 0, 'ix0', 'xa')})",
        *([f"    host_prefetch(PF, {_pf_slot(g, 'xa')})"] if g.pf_level == 0 else []),
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
