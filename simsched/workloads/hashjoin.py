"""hashjoin: the join phase of a partitioned hash join ([PDF07] §4.2).

The paper traces the join phase of a database hash join: the build and probe partitions are
already in memory, each divided into sub-partitions whose build side fits in the L2 cache;
per sub-partition the build keys go into a hash table, then the probe records look it up and
every match is written out as the concatenation of the build and the probe record.  The
original code used one thread per sub-partition; the paper splits each sub-partition's probe
into parallel tasks.  Records are 100 bytes with a 4-byte join key; every build record
matches two probe records.

The modelled program (serial elision)::

    main:      build[n_build], probe[n_probe], out[n_probe] (2 records each) already hold the
               partitions, grouped by sub-partition; hash tables allocated per sub-partition
               for s < P: spawn join(s)
               sync
    join(s):   # the build task (the first strand of the sub-partition's task)
               memset(buckets_s, 0xff)                              # all chains empty
               for each build record i of s:
                   h = hash(key(i)); c = &cells_s[i]; b = h >> (32 - log2 nbuckets_s)
                   c->hash = h; c->rid = i; c->next = buckets_s[b]; buckets_s[b] = i
               for each group of `grain` probe records: spawn probe(s, group)
               sync
    probe:     for each probe record p of the group:
                   h = hash(key(p)); c = buckets_s[h >> ...]
                   while c != -1:
                       if cells[c].hash == h and key(build[cells[c].rid]) == key(p):
                           memcpy(out[p], build[rid], R); memcpy(out[p] + R, probe[p], R)
                       c = cells[c].next

``hash(k) = k * 0x9E3779B1 mod 2**32`` (Knuth's multiplicative hash: a bijection, so equal
hashes mean equal keys); the partition phase put a key in sub-partition ``hash & (P - 1)``
and the table uses the high bits, so the two are independent.  Keys are distinct random
32-bit values; the probe partition holds each build key ``matches`` times, shuffled.

Memory layout: ``build``, ``probe`` and ``out`` arrays (``malloc``), then per sub-partition
``buckets.<s>`` (4-byte chain heads, one per bucket, a power of two at least the
sub-partition's record count) and ``cells.<s>`` (16 bytes per build record: hash, record id,
next, padding): the buckets live in their own array.  Every table stays allocated for the
whole join, so tables of sub-partitions processed at the same time never share addresses.

References: key loads are 4 bytes; cell fields are loaded and stored one 4-byte field at a
time; ``memset`` and ``memcpy`` move 16 bytes per reference (SSE2), the last move of a record
covering the remainder.  The partition phase is outside the traced region (as in the paper),
so the input partitions are not written by the trace.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.errors import ConfigError
from simsched.params import is_power_of_two
from simsched.workloads._common import (
    Heap,
    Param,
    concat_ranges,
    exclusive_cumsum,
    gen_memory,
    rng,
    seed_param,
)

#: generator memory per probe record: its key, hash, sort order and sorted copies (measured
#: 43 bytes at n_build = 2^22, matches = 2)
GEN_MEMORY_PER_PROBE = 48

NAME = "hashjoin"
SUMMARY = "join phase of a partitioned hash join, parallel probe (PDF paper §4.2)"
#: its trace marks iterations (a sweep's sample_iterations needs them)
MARKS_ITERATIONS = False

PARAMS = (
    Param("n_build", int, 1 << 17, "records of the build partition", minimum=1, maximum=1 << 26),
    Param("matches", int, 2, "probe records matching each build record", minimum=1, maximum=64),
    Param("grain", int, 1024, "probe records per probe task", minimum=1),
    Param(
        "subpart_kb",
        int,
        2048,
        "target size in KiB of one sub-partition's build side (records, hash cells and"
        " buckets); the paper fits it to the L2 cache",
        minimum=1,
    ),
    Param(
        "subparts",
        int,
        None,
        "number of sub-partitions, a power of two (default: the smallest that keeps the"
        " expected build side within subpart_kb)",
        minimum=1,
        maximum=1 << 16,
    ),
    Param(
        "record_size",
        int,
        100,
        "bytes per record; the join key is its first 4 bytes",
        minimum=8,
        maximum=4096,
    ),
    seed_param(),
)

KEY = 4
CELL = 16
BUCKET = 4
MOVE = 16
HASH_MUL = 0x9E3779B1

#: per build record: loop test and record pointer, before the key load
GAP_B_KEY = 3
#: hash (multiply, shift) before the bucket load
GAP_B_BUCKET = 4
#: gaps of the four stores of an insert: cell hash, rid, next, bucket head
GAP_B_STORES = (1, 0, 0, 0)
#: memset loop per 16-byte store
GAP_MEMSET = 1
#: per probe record: loop test and record pointer, before the key load
GAP_P_KEY = 3
#: hash and bucket index, before the bucket load
GAP_P_BUCKET = 4
#: per chain cell: end-of-chain test and branch, before the hash load
GAP_P_HASH = 2
#: hash compare and branch, before the record-id load
GAP_P_RID = 2
#: record address computation, before the build key load
GAP_P_BKEY = 1
#: key compare, branch, output pointer and memcpy call, before its first move
GAP_MEMCPY_CALL = 6
#: per 16-byte move of memcpy: before the load, before the store
GAP_MOVE = (1, 0)
#: before the next-pointer load
GAP_P_NEXT = 1
#: join(s) task: bounds of the sub-partition, table pointers
CALL_JOIN = 10
#: probe task: bounds of its group
CALL_PROBE = 6


def hash32(keys: np.ndarray) -> np.ndarray:
    """The join's hash: ``key * 0x9E3779B1 mod 2**32`` (uint32)."""
    return (keys.astype(np.uint64) * np.uint64(HASH_MUL) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _next_pow2(x: int) -> int:
    return 1 << max(0, (int(x) - 1).bit_length())


def finish_params(params: dict[str, Any]) -> dict[str, Any]:
    """Fill in ``subparts`` (see :data:`PARAMS`) and check it is a power of two."""
    out = dict(params)
    per_record = out["record_size"] + CELL + BUCKET
    if out["subparts"] is None:
        need = -(-out["n_build"] * per_record // (out["subpart_kb"] * 1024))
        out["subparts"] = _next_pow2(need)
    P = out["subparts"]
    if not is_power_of_two(P):
        raise ConfigError(f"workload hashjoin: parameter subparts: must be a power of two, got {P}")
    return out


def memory(params: dict[str, Any]) -> float:
    """Bytes generating needs (the up-front check): the keys of both sides and their
    partitioning (:class:`_Data`, built before anything is written), and the DAG: a join
    task per sub-partition and a probe task per ``grain`` probe records."""
    nb, P = params["n_build"], params["subparts"]
    probes = nb * params["matches"]
    frames = 1 + 2 * P + -(-probes // params["grain"])
    return gen_memory(frames, data=GEN_MEMORY_PER_PROBE * probes + 16 * nb)


def _build_keys(p: dict[str, Any]) -> tuple[np.random.Generator, np.ndarray]:
    """The build side's keys (distinct, random) and the generator that drew them, which
    goes on to shuffle the probe side (:class:`_Data`)."""
    g = rng(p["seed"], 0)
    return g, g.choice(1 << 32, size=p["n_build"], replace=False).astype(np.uint32)


def references(params: dict[str, Any]) -> int:
    """References of the trace, exactly, from the seeded build keys (the probe side is not
    drawn): ``sum_s ceil(B_s / 4) + 6 n_build + probes (4 + 4 C) + 2 matches sum_b L_b^2``.

    Sub-partition ``s`` with ``n_s`` build records has ``B_s`` buckets (the power of two at
    least ``n_s``, and 1): ``memset`` stores them 16 bytes at a time (``B_s / 4``
    references, rounded up), and each insert makes 6 references.  A probe record makes its
    key and bucket loads, two loads per cell of its bucket's chain (``L`` cells: its own
    key's is one of them) and, at its match, the record id, the build key and the two
    ``memcpy`` of ``C = ceil(record_size / 16)`` moves of a load and a store each:
    ``4 + 4 C + 2 L``.  The chains are data: each build record's chain is probed ``matches``
    times, so the chain cells read sum to ``matches`` times the sum over buckets of their
    length squared, counted here from the keys' hashes as :class:`_Emitter` fills them.
    """
    nb, P, matches = params["n_build"], params["subparts"], params["matches"]
    moves = -(-params["record_size"] // MOVE)
    h = hash32(_build_keys(params)[1])
    part = (h & np.uint32(P - 1)).astype(np.int64)
    n_s = np.bincount(part, minlength=P)
    buckets = np.array([_next_pow2(max(int(c), 1)) for c in n_s], np.int64)
    # the table of sub-partition s uses the high log2(B_s) bits of the hash
    shift = (32 - np.log2(buckets).astype(np.int64)).astype(np.uint64)
    bucket = (h.astype(np.uint64) >> shift[part]).astype(np.int64)
    first = exclusive_cumsum(buckets)
    chains = np.bincount(first[part] + bucket, minlength=int(first[-1]))
    chain_cells = int((chains.astype(np.int64) ** 2).sum())
    memset = int(((buckets * BUCKET + MOVE - 1) // MOVE).sum())
    probes = nb * matches
    return memset + 6 * nb + probes * (4 + 4 * moves) + 2 * matches * chain_cells


class _Data:
    """Keys and their partitioning (shared by the layout and the emitter)."""

    def __init__(self, p: dict[str, Any]):
        g, keys = _build_keys(p)
        P = p["subparts"]
        probe = g.permutation(np.repeat(keys, p["matches"]))
        hb, hp = hash32(keys), hash32(probe)
        mask = np.uint32(P - 1)
        ob = np.argsort(hb & mask, kind="stable")
        op = np.argsort(hp & mask, kind="stable")
        self.build_keys = keys[ob]  # key of build record i (partition order)
        self.probe_keys = probe[op]
        self.build_hash = hb[ob]
        self.probe_hash = hp[op]
        self.build_start = exclusive_cumsum(np.bincount(hb & mask, minlength=P))
        self.probe_start = exclusive_cumsum(np.bincount(hp & mask, minlength=P))


def layout(params: dict[str, Any], data: _Data | None = None) -> Heap:
    """The partitions, the output and one hash table (buckets + cells) per sub-partition."""
    data = data or _Data(params)
    rs = params["record_size"]
    nb = params["n_build"]
    n_probe = nb * params["matches"]
    heap = Heap()
    heap.malloc("build", nb * rs)
    heap.malloc("probe", n_probe * rs)
    heap.malloc("out", n_probe * 2 * rs)
    for s in range(params["subparts"]):
        n_s = int(data.build_start[s + 1] - data.build_start[s])
        heap.malloc(f"buckets.{s}", _next_pow2(max(n_s, 1)) * BUCKET)
        heap.malloc(f"cells.{s}", max(n_s, 1) * CELL)
    heap.context = data
    return heap


def _moves(rs: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and sizes of memcpy's moves for one record."""
    off = np.arange(0, rs, MOVE, dtype=np.int64)
    size = np.minimum(MOVE, rs - off)
    return off, size


class _Emitter:
    def __init__(self, b, p: dict[str, Any], heap: Heap, data: _Data):
        self.b, self.p, self.heap, self.d = b, p, heap, data
        self.rs = p["record_size"]
        self.build = heap.regions["build"].base
        self.probe = heap.regions["probe"].base
        self.out = heap.regions["out"].base
        self.moff, self.msize = _moves(self.rs)

    def run(self) -> None:
        b = self.b
        for s in range(self.p["subparts"]):
            b.spawn()
            self.join(s)
            b.ret()
        b.sync()

    def join(self, s: int) -> None:
        b, d, rs = self.b, self.d, self.rs
        b.instr(CALL_JOIN)
        b0, b1 = int(d.build_start[s]), int(d.build_start[s + 1])
        n_s = b1 - b0
        nbk = _next_pow2(max(n_s, 1))
        shift = np.uint32(32 - (nbk.bit_length() - 1))
        buckets = self.heap.regions[f"buckets.{s}"].base
        cells = self.heap.regions[f"cells.{s}"].base
        # memset of the bucket array
        moff = np.arange(0, nbk * BUCKET, MOVE, dtype=np.int64)
        b.refs(
            (buckets + moff).astype(np.uint64),
            np.minimum(MOVE, nbk * BUCKET - moff).astype(np.uint8),
            True,
            GAP_MEMSET,
        )
        h = d.build_hash[b0:b1]
        bk = (h.astype(np.uint64) >> np.uint64(shift)).astype(np.int64)
        if n_s:
            i = np.arange(n_s, dtype=np.int64)
            a = np.empty((n_s, 6), np.int64)
            a[:, 0] = self.build + (b0 + i) * rs
            a[:, 1] = buckets + bk * BUCKET
            a[:, 2] = cells + i * CELL
            a[:, 3] = cells + i * CELL + 4
            a[:, 4] = cells + i * CELL + 8
            a[:, 5] = buckets + bk * BUCKET
            g = np.empty((n_s, 6), np.uint32)
            g[:, 0] = GAP_B_KEY
            g[:, 1] = GAP_B_BUCKET
            g[:, 2:] = GAP_B_STORES
            w = np.zeros((n_s, 6), np.bool_)
            w[:, 2:] = True
            b.refs(a.ravel().astype(np.uint64), KEY, w.ravel(), g.ravel())
        # the hash chains as the inserts left them: newest first
        count = np.bincount(bk, minlength=nbk)
        chain = np.lexsort((-np.arange(n_s), bk))  # cells by bucket, newest first
        cstart = exclusive_cumsum(count)
        pos = np.empty(n_s, np.int64)
        pos[chain] = np.arange(n_s) - cstart[bk[chain]]
        # each probe key's build record (keys are distinct within the build side)
        p0, p1 = int(d.probe_start[s]), int(d.probe_start[s + 1])
        bkeys = d.build_keys[b0:b1]
        korder = np.argsort(bkeys)
        grain = self.p["grain"]
        for t0 in range(p0, p1, grain):
            t1 = min(p1, t0 + grain)
            pk = d.probe_keys[t0:t1]
            match = korder[np.searchsorted(bkeys, pk, sorter=korder)]
            pbk = bk[match]
            b.spawn()
            b.instr(CALL_PROBE)
            self.probe_refs(
                t0,
                pk,
                match,
                pbk,
                pos[match],
                count[pbk],
                cstart[pbk],
                chain,
                b0,
                buckets,
                cells,
                d.probe_hash[t0:t1],
            )
            b.ret()
        b.sync()

    def probe_refs(self, t0, pk, match, pbk, jpos, L, cstart, chain, b0, buckets, cells, ph):
        """References of probe records ``t0..`` (vectorised over records and chain cells)."""
        rs = self.rs
        n = len(pk)
        C = len(self.moff)
        MATCH = 2 + 4 * C
        tot_p = 2 + 2 * L + MATCH
        base = exclusive_cumsum(tot_p)
        T = int(base[-1])
        addr = np.empty(T, np.int64)
        size = np.empty(T, np.uint8)
        gap = np.empty(T, np.uint32)
        write = np.zeros(T, np.bool_)
        bp = base[:-1]
        g_idx = t0 + np.arange(n, dtype=np.int64)
        # key and bucket loads
        addr[bp] = self.probe + g_idx * rs
        addr[bp + 1] = buckets + pbk * BUCKET
        size[bp] = KEY
        size[bp + 1] = BUCKET
        gap[bp] = GAP_P_KEY
        gap[bp + 1] = GAP_P_BUCKET
        # chain walk: (record, position in chain) pairs
        rec = np.repeat(np.arange(n, dtype=np.int64), L)
        t = concat_ranges(np.zeros(n, np.int64), L)
        cell = chain[concat_ranges(cstart, L)]
        jr = jpos[rec]
        hpos = bp[rec] + 2 + 2 * t + np.where(t > jr, MATCH, 0)
        npos = hpos + 1 + np.where(t == jr, MATCH, 0)
        addr[hpos] = cells + cell * CELL
        addr[npos] = cells + cell * CELL + 8
        size[hpos] = 4
        size[npos] = 4
        gap[hpos] = GAP_P_HASH
        gap[npos] = GAP_P_NEXT
        # the match: record id, build key, then the two memcpys into the output record
        m0 = bp + 2 + 2 * jpos + 1
        addr[m0] = cells + match * CELL + 4
        addr[m0 + 1] = self.build + (b0 + match) * rs
        size[m0] = 4
        size[m0 + 1] = KEY
        gap[m0] = GAP_P_RID
        gap[m0 + 1] = GAP_P_BKEY
        k = np.arange(C, dtype=np.int64)
        outrec = self.out + g_idx * 2 * rs
        srcs = (self.build + (b0 + match) * rs, self.probe + g_idx * rs)
        for half, src in enumerate(srcs):
            first = m0 + 2 + half * 2 * C
            rpos = first[:, None] + 2 * k[None, :]
            addr[rpos] = src[:, None] + self.moff[None, :]
            addr[rpos + 1] = outrec[:, None] + half * rs + self.moff[None, :]
            size[rpos] = self.msize[None, :]
            size[rpos + 1] = self.msize[None, :]
            gap[rpos] = GAP_MOVE[0]
            gap[rpos + 1] = GAP_MOVE[1]
            write[rpos + 1] = True
            gap[first] += GAP_MEMCPY_CALL
        self.b.refs(addr.astype(np.uint64), size, write, gap)


def emit(b, params: dict[str, Any], heap: Heap, data: _Data | None = None) -> dict[str, Any]:
    """Write the hash-join program into builder ``b``.

    Parameters
    ----------
    b
        A :class:`~simsched.trace.TraceBuilder` (or anything with its methods).
    params
        Resolved parameters (``subparts`` filled in by :func:`finish_params`).
    heap
        The layout from :func:`layout`.
    data
        The keys (recomputed from the seed when not given).

    Returns
    -------
    dict
        ``build_keys``, ``probe_keys`` (partition order), ``build_start`` and
        ``probe_start`` (sub-partition bounds).
    """
    data = data or heap.context or _Data(params)
    _Emitter(b, params, heap, data).run()
    return {
        "build_keys": data.build_keys,
        "probe_keys": data.probe_keys,
        "build_start": data.build_start,
        "probe_start": data.probe_start,
    }
