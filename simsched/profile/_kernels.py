"""Numba kernels of the working-set profiler (private; called through validating wrappers).

LruTree pass ([PDF07] §6.1)
-------------------------------------------------------
The LRU stack of the paper is represented by the *time of the last access* of every line.
A bit set over time slots holds a 1 at the last-access time of each line in the tree, and a
Fenwick (binary indexed) tree over blocks of 64 slots counts the marks of each block, so the
stack position of line ``L`` last touched at time ``t`` is

    d = 1 + #{lines whose last access is later than t} = 1 + nlines - prefix(t)      (1)

(``prefix(t)`` counts the marks at times ``<= t``, which include ``L``'s own mark, and every
mark is earlier than the current time): the block tree's prefix up to ``t``'s block plus a
population count in ``t``'s word.  That is one O(log N) query and two O(log N) updates per
access instead of the paper's B-tree walk, with the same stack distance; at 1 bit a slot plus
4 bytes a block the tree state is ~0.5 byte a line and stays in the processor's caches, which
a plain Fenwick tree over the slots (4 bytes a slot) does not.

The top ``WIN`` lines of the stack (the most recently used) are kept outside the tree, in a
small array searched linearly: an access to one of them has its distance from its position in
that window and costs no tree operation, which is what makes interleaved streams (a merge reads
two runs and writes a third) and repeated accesses to one line cheap.  A line pushed out of the
window is older than every window line and newer than every line in the tree, so it takes the
next time slot; an access to a line in the tree removes its mark.  Formula (1) is unchanged,
``nlines`` counting the window's lines, which are all more recent than ``t``.

When the clock reaches the tree's capacity the live times (one per line in the tree) are
renumbered ``0 .. marks-1`` in their order (``_compact``), which keeps every distance, and the
capacity becomes the next power of two ``>= 2 * nlines`` — so a compaction happens at most
once per ``nlines`` accesses and costs O(capacity + table size).

Lines live in an open-addressing hash table (linear probing, Fibonacci hashing) of three
parallel numpy arrays: the line address (``uint64``), its time in the tree (``int32``, -1
while it is in the window) and the id of the strand that touched it last (``int32``): 16 bytes
a slot, 1/0.7 to 2/0.7 slots a line.  Lines are never deleted.

Per strand the kernel fills a dense scratch histogram ``scratch[level, bucket]``, lists the
levels it touches, and, when the strand ends, appends the non-zero cells of those levels in
increasing order to COO arrays (strand, level, bucket, count): the paper's per-task 2-D
histogram, stored sparsely.  See :mod:`simsched.profile.lrutree` for the meaning of ``level``
(the task-id-distance bucket): it is found by a binary search in the current strand's chain of
groups from the root (their first strands), which the kernel keeps in two arrays as long as
the tree is deep.  When the next strand starts, ``_enter`` rewrites the chain from that
strand's leaf up to the deepest group it shares with the old one; strands come in serial order
and a group is a run of consecutive strands, so every group is entered once in the whole pass.
Neither the chains (together as long as the sum of the strands' depths) nor a flush over a
strand's whole depth is ever paid: the pass costs O(groups + cells) beyond its per-access
work, not O(strands × depth).  ``_group_sums`` walks the chains the same way to attribute
the cells to their groups.

SetAssoc baseline (§6.1, "the straightforward approach")
--------------------------------------------------------
``_fa_step`` and ``_sa_step`` replay a piece of one group's accesses in caches of every size,
fully associative LRU and set-associative LRU respectively, with their state in arrays the
caller keeps between pieces (so a group streams through chunk by chunk); a new group starts
with a generation bump instead of clearing the caches.
"""

from __future__ import annotations

import numba as nb
import numpy as np

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_FIB = np.uint64(0x9E3779B97F4A7C15)

# indices of the LruTree scalar state vector
ST_NOW = 0  # next time slot
ST_NLINES = 1  # distinct lines seen (occupied hash slots, marks in the tree)
ST_CAP = 2  # time slots of the Fenwick tree (its array has cap + 1 entries)
ST_WN = 3  # lines in the MRU window
ST_CUR = 4  # strand of the scratch histogram
ST_NLV = 5  # levels of the scratch histogram holding counts (listed in lv_list)
ST_COO_N = 6  # COO entries written
ST_HBITS = 7  # log2 of the hash table size
ST_MAXOCC = 8  # occupied slots that trigger a table growth
ST_CLEN = 9  # length of the chain of groups held for strand ST_CUR (0: none yet)
ST_SIZE = 10

WIN = 8  # lines kept in the MRU window, outside the tree

# status codes returned by _lrutree_run
DONE = 0
NEED_COMPACT = 1
NEED_GROW = 2
NEED_COO = 3


_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@nb.njit(cache=True, inline="always")
def _popcount(x):
    """Set bits of a ``uint64`` (SWAR; LLVM turns it into one instruction where it can)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@nb.njit(cache=True, inline="always")
def _hash(line, hbits):
    return np.int64((line * _FIB) >> np.uint64(64 - hbits))


@nb.njit(cache=True)
def _enter(s, parent, depth, start, leaf_of, chain_node, chain_start, clen):
    """Make the chain (``chain_node``/``chain_start``, valid up to ``clen``) strand ``s``'s
    root-to-leaf chain of groups and return its length.

    The new chain shares the old one's groups down to their deepest common group, so only the
    groups below it are written, walking up from ``s``'s leaf: strands coming in serial order
    (or in any order with groups of consecutive strands) enter every group once.
    """
    g = leaf_of[s]
    d = depth[g]
    n = d + 1
    while g >= 0 and not (d < clen and chain_node[d] == g):
        chain_node[d] = g
        chain_start[d] = start[g]
        g = parent[g]
        d -= 1
    return n


@nb.njit(cache=True)
def _flush(st, scratch, lv_mark, lv_list, coo_s, coo_l, coo_b, coo_c):
    """Append the non-zero cells of the current strand's scratch histogram to the COO arrays,
    level by level in increasing order (only the ``st[ST_NLV]`` levels it touched)."""
    cur = st[ST_CUR]
    nbk = scratch.shape[1]
    n = st[ST_COO_N]
    levels = np.sort(lv_list[: st[ST_NLV]])
    for lv in levels:
        lv_mark[lv] = 0
        for b in range(nbk):
            c = scratch[lv, b]
            if c != 0:
                coo_s[n] = cur
                coo_l[n] = lv
                coo_b[n] = b
                coo_c[n] = c
                n += 1
                scratch[lv, b] = 0
    st[ST_COO_N] = n
    st[ST_NLV] = 0


@nb.njit(cache=True)
def _lrutree_run(
    addr,
    size,
    base,
    pos,
    shift,
    ref_start,
    keys,
    ltime,
    lstrand,
    bits,
    bfen,
    st,
    win_line,
    win_slot,
    bounds,
    parent,
    gdepth,
    gstart,
    leaf_of,
    chain_node,
    chain_start,
    scratch,
    lv_mark,
    lv_list,
    strand_acc,
    strand_cold,
    coo_s,
    coo_l,
    coo_b,
    coo_c,
):
    """Process references ``pos ..`` of one chunk; return ``(next position, status)``.

    The kernel stops before a reference when the state must grow (tree capacity, hash table,
    COO buffer); the caller grows it and calls again from the returned position.
    """
    n = addr.shape[0]
    nbounds = bounds.shape[0]
    nbk = nbounds + 1
    coo_cap = coo_s.shape[0]
    hbits = st[ST_HBITS]
    hmask = (np.int64(1) << hbits) - 1
    now = st[ST_NOW]
    nlines = st[ST_NLINES]
    cap = st[ST_CAP]
    nblk = cap >> 6
    wn = st[ST_WN]
    cur = st[ST_CUR]
    maxocc = st[ST_MAXOCC]
    ush = np.uint64(shift)
    status = DONE
    depth = st[ST_CLEN]
    if depth == 0:
        depth = _enter(cur, parent, gdepth, gstart, leaf_of, chain_node, chain_start, 0)
    while pos < n:
        g = base + pos
        # strand boundaries: flush the finished strand's histogram
        if ref_start[cur + 1] <= g:
            if st[ST_NLV] != 0:
                if st[ST_COO_N] + st[ST_NLV] * nbk > coo_cap:
                    status = NEED_COO
                    break
                st[ST_CUR] = cur
                _flush(st, scratch, lv_mark, lv_list, coo_s, coo_l, coo_b, coo_c)
            while ref_start[cur + 1] <= g:
                cur += 1
            depth = _enter(cur, parent, gdepth, gstart, leaf_of, chain_node, chain_start, depth)
        a = addr[pos]
        l0 = a >> ush
        l1 = (a + np.uint64(size[pos]) - np.uint64(1)) >> ush
        nl = np.int64(l1 - l0) + 1
        if now + nl > cap:
            status = NEED_COMPACT
            break
        if nlines + nl > maxocc:
            status = NEED_GROW
            break
        line = l0
        for _k in range(nl):
            p = 0
            while p < wn and win_line[p] != line:
                p += 1
            if p < wn:
                # in the MRU window: distance = position, no tree operation
                slot = win_slot[p]
                d = np.int64(p + 1)
                fresh = False
                for q in range(p, 0, -1):
                    win_line[q] = win_line[q - 1]
                    win_slot[q] = win_slot[q - 1]
            else:
                slot = _hash(line, hbits)
                while True:
                    kk = keys[slot]
                    if kk == line or kk == EMPTY:
                        break
                    slot = (slot + 1) & hmask
                if keys[slot] == EMPTY:
                    keys[slot] = line
                    fresh = True
                    d = np.int64(0)
                else:
                    fresh = False
                    t = np.int64(ltime[slot])
                    # prefix(t): tree marks at times <= t (whole blocks before t's block from
                    # the block tree, then t's own word); the window's lines are newer  Eq. (1)
                    w = t >> 6
                    i = w
                    s = np.int64(0)
                    while i > 0:
                        s += bfen[i]
                        i -= i & (-i)
                    s += _popcount(bits[w] & (_ALL >> np.uint64(63 - (t & 63))))
                    d = 1 + nlines - s
                    bits[w] &= ~(np.uint64(1) << np.uint64(t & 63))
                    i = w + 1
                    while i <= nblk:
                        bfen[i] -= 1
                        i += i & (-i)
                if wn == WIN:
                    # the window's oldest line moves into the tree, newer than all there
                    e = win_slot[WIN - 1]
                    ltime[e] = now
                    w = now >> 6
                    bits[w] |= np.uint64(1) << np.uint64(now & 63)
                    i = w + 1
                    while i <= nblk:
                        bfen[i] += 1
                        i += i & (-i)
                    now += 1
                else:
                    wn += 1
                for q in range(wn - 1, 0, -1):
                    win_line[q] = win_line[q - 1]
                    win_slot[q] = win_slot[q - 1]
                ltime[slot] = -1
                if fresh:
                    nlines += 1
            win_line[0] = line
            win_slot[0] = slot
            strand_acc[cur] += 1
            if fresh:
                strand_cold[cur] += 1
            else:
                j = np.int64(lstrand[slot])
                # task-id-distance bucket: deepest enclosing group of `cur` that holds j
                if j == cur:
                    lv = depth - 1
                else:
                    lo = 0
                    hi = depth - 1  # chain_start[depth - 1] == cur > j
                    while hi - lo > 1:
                        mid = (lo + hi) >> 1
                        if chain_start[mid] <= j:
                            lo = mid
                        else:
                            hi = mid
                    lv = lo
                b = 0
                while b < nbounds and d > bounds[b]:
                    b += 1
                if lv_mark[lv] == 0:
                    lv_mark[lv] = 1
                    lv_list[st[ST_NLV]] = lv
                    st[ST_NLV] += 1
                scratch[lv, b] += 1
            lstrand[slot] = cur
            line += np.uint64(1)
        pos += 1
    st[ST_NOW] = now
    st[ST_NLINES] = nlines
    st[ST_WN] = wn
    st[ST_CUR] = cur
    st[ST_CLEN] = depth
    return pos, status


@nb.njit(cache=True)
def _compact(keys, ltime, cap_old, marks, cap_new):
    """Renumber the tree's times ``0 .. marks-1`` in order; return the new bit set and block
    tree for ``cap_new`` time slots.

    Lines in the MRU window (time -1) have no mark and keep -1.
    """
    rank = np.full(cap_old, -1, np.int32)
    for s in range(keys.shape[0]):
        if keys[s] != EMPTY and ltime[s] >= 0:
            rank[ltime[s]] = 0
    run = 0
    for t in range(cap_old):
        if rank[t] == 0:
            rank[t] = run
            run += 1
    for s in range(keys.shape[0]):
        if keys[s] != EMPTY and ltime[s] >= 0:
            ltime[s] = rank[ltime[s]]
    nblk = cap_new >> 6
    bits = np.zeros(nblk, np.uint64)
    bfen = np.zeros(nblk + 1, np.int32)
    for t in range(marks):
        bits[t >> 6] |= np.uint64(1) << np.uint64(t & 63)
        bfen[(t >> 6) + 1] += 1
    for i in range(1, nblk + 1):
        j = i + (i & (-i))
        if j <= nblk:
            bfen[j] += bfen[i]
    return bits, bfen


@nb.njit(cache=True)
def _rehash(keys, ltime, lstrand, new_keys, new_ltime, new_lstrand, hbits, win_slot, wn):
    """Insert every line of the old table into the (empty) new one of ``2**hbits`` slots,
    and point the window at the lines' new slots."""
    hmask = (np.int64(1) << hbits) - 1
    for s in range(keys.shape[0]):
        k = keys[s]
        if k != EMPTY:
            slot = _hash(k, hbits)
            while new_keys[slot] != EMPTY:
                slot = (slot + 1) & hmask
            new_keys[slot] = k
            new_ltime[slot] = ltime[s]
            new_lstrand[slot] = lstrand[s]
    for p in range(wn):
        k = keys[win_slot[p]]
        slot = _hash(k, hbits)
        while new_keys[slot] != k:
            slot = (slot + 1) & hmask
        win_slot[p] = slot


@nb.njit(cache=True)
def _expand_lines(addr, size, shift):
    """Line addresses touched by each reference, a straddling reference giving several."""
    n = addr.shape[0]
    ush = np.uint64(shift)
    total = np.int64(0)
    for i in range(n):
        l0 = addr[i] >> ush
        l1 = (addr[i] + np.uint64(size[i]) - np.uint64(1)) >> ush
        total += np.int64(l1 - l0) + 1
    out = np.empty(total, np.uint64)
    k = 0
    for i in range(n):
        l0 = addr[i] >> ush
        l1 = (addr[i] + np.uint64(size[i]) - np.uint64(1)) >> ush
        line = l0
        while line <= l1:
            out[k] = line
            k += 1
            line += np.uint64(1)
    return out


@nb.njit(cache=True)
def _ancestors(parent, depth, leaf_of, anc_off, anc_node):
    """Fill the root-to-leaf chain of group ids of every strand (CSR by ``anc_off``)."""
    for s in range(leaf_of.shape[0]):
        g = leaf_of[s]
        k = anc_off[s + 1] - 1
        while g >= 0:
            anc_node[k] = g
            k -= 1
            g = parent[g]


@nb.njit(cache=True)
def _group_sums(parent, depth, start, leaf_of, strand, level, bucket, count, e):
    """Add every histogram cell to the group it belongs to, then every group to its parent.

    Cell ``(strand, level, bucket, count)`` belongs to the group at depth ``level`` on the
    strand's chain, which :func:`_enter` keeps as the cells come; group ids are pre-order, so
    one reverse sweep over the groups leaves each one's row holding its subtree's sum.
    """
    n = np.max(depth) + 1
    chain_node = np.empty(n, np.int64)
    chain_start = np.empty(n, np.int64)
    clen = 0
    cur = -1
    for k in range(strand.shape[0]):
        s = strand[k]
        if s != cur:
            clen = _enter(s, parent, depth, start, leaf_of, chain_node, chain_start, clen)
            cur = s
        e[chain_node[level[k]], bucket[k]] += count[k]
    for g in range(parent.shape[0] - 1, 0, -1):
        p = parent[g]
        for b in range(e.shape[1]):
            e[p, b] += e[g, b]


# ---------------------------------------------------------------------------------------
# SetAssoc baseline
# ---------------------------------------------------------------------------------------


@nb.njit(cache=True)
def _sa_step(lines, t0, gen, nsets, assoc, set_off, way_off, tags, stamp, sgen, miss):
    """Replay ``lines`` (times ``t0, t0+1, ...``) in every set-associative true-LRU cache.

    Cache ``k`` has ``nsets[k]`` sets of ``assoc[k]`` ways; its sets start at ``set_off[k]`` in
    ``sgen`` and its ways at ``way_off[k]`` in ``tags``/``stamp``.  A set whose generation is
    not ``gen`` is empty (a new group starts cold without clearing anything).
    """
    nk = nsets.shape[0]
    for k in range(nk):
        ns = np.uint64(nsets[k])
        w = assoc[k]
        so = set_off[k]
        wo = way_off[k]
        m = 0
        for i in range(lines.shape[0]):
            line = lines[i]
            t = t0 + i
            sidx = np.int64(line % ns)
            base = wo + sidx * w
            if sgen[so + sidx] != gen:
                for x in range(w):
                    tags[base + x] = EMPTY
                sgen[so + sidx] = gen
            hit = -1
            victim = 0
            oldest = np.int64(1) << 62
            for x in range(w):
                tx = tags[base + x]
                if tx == line:
                    hit = x
                    break
                if tx == EMPTY:
                    if oldest >= 0:
                        oldest = np.int64(-1)
                        victim = x
                elif stamp[base + x] < oldest:
                    oldest = stamp[base + x]
                    victim = x
            if hit >= 0:
                stamp[base + hit] = t
            else:
                m += 1
                tags[base + victim] = line
                stamp[base + victim] = t
        miss[k] += m


@nb.njit(cache=True)
def _fa_step(
    lines,
    pos,
    t0,
    gen,
    capacity,
    keys,
    kgen,
    last,
    res,
    qslot,
    qtime,
    qoff,
    qcap,
    qhead,
    qtail,
    count,
    miss,
    sc,
):
    """Replay ``lines[pos:]`` (times ``t0 + i``) in fully associative LRU caches of every size.

    Per size an LRU list is kept as a queue of ``(slot, time)`` access records with lazy
    deletion: the least recently used resident line is the oldest record whose time is still
    its line's last access.  A full queue is compacted, so it never holds more than a few
    records per resident line.  A hash table (generation-stamped: a group starts empty without
    clearing it) maps a line to its last access time and a bit mask of the sizes that hold it.
    ``sc`` = [occupied slots of this generation, log2 table size].  Returns the position
    reached: short of ``len(lines)`` when the table must grow first (:func:`_fa_grow`).
    """
    nk = capacity.shape[0]
    hbits = sc[1]
    hsize = np.int64(1) << hbits
    hmask = hsize - 1
    occ = sc[0]
    n = lines.shape[0]
    while pos < n:
        if 2 * (occ + 1) > hsize:
            break
        line = lines[pos]
        t = t0 + pos
        slot = _hash(line, hbits)
        while kgen[slot] == gen and keys[slot] != line:
            slot = (slot + 1) & hmask
        if kgen[slot] != gen:
            kgen[slot] = gen
            keys[slot] = line
            res[slot] = np.uint64(0)
            occ += 1
        last[slot] = t
        for k in range(nk):
            bit = np.uint64(1) << np.uint64(k)
            qo = qoff[k]
            if not (res[slot] & bit):
                miss[k] += 1
                res[slot] |= bit
                if count[k] == capacity[k]:
                    # evict the least recently used resident line
                    while True:
                        h = qhead[k]
                        s2 = qslot[qo + h]
                        qhead[k] = h + 1
                        if (res[s2] & bit) and last[s2] == qtime[qo + h] and s2 != slot:
                            res[s2] &= ~bit
                            break
                else:
                    count[k] += 1
            if qtail[k] == qcap[k]:
                # compact: keep only the records that are still a resident line's last access
                w = 0
                for x in range(qhead[k], qtail[k]):
                    s2 = qslot[qo + x]
                    if (res[s2] & bit) and last[s2] == qtime[qo + x] and s2 != slot:
                        qslot[qo + w] = s2
                        qtime[qo + w] = qtime[qo + x]
                        w += 1
                qhead[k] = 0
                qtail[k] = w
            qslot[qo + qtail[k]] = slot
            qtime[qo + qtail[k]] = t
            qtail[k] += 1
        pos += 1
    sc[0] = occ
    return pos


@nb.njit(cache=True)
def _fa_grow(keys, kgen, last, res, gen, nbits, qslot, qoff, qhead, qtail):
    """Rehash this generation's lines into a table of ``2**nbits`` slots; remap the queues."""
    nsize = np.int64(1) << nbits
    nkeys = np.full(nsize, EMPTY, np.uint64)
    ngen = np.zeros(nsize, np.int64)
    nlast = np.zeros(nsize, np.int64)
    nres = np.zeros(nsize, np.uint64)
    remap = np.full(keys.shape[0], -1, np.int64)
    for s in range(keys.shape[0]):
        if kgen[s] == gen:
            j = _hash(keys[s], nbits)
            while ngen[j] == gen:
                j = (j + 1) & (nsize - 1)
            nkeys[j] = keys[s]
            ngen[j] = gen
            nlast[j] = last[s]
            nres[j] = res[s]
            remap[s] = j
    for k in range(qoff.shape[0]):
        for x in range(qhead[k], qtail[k]):
            qslot[qoff[k] + x] = remap[qslot[qoff[k] + x]]
    return nkeys, ngen, nlast, nres
