"""Seeded fuzzing of corrupted traces through ``trace validate`` and ``run``.

Every case damages one good trace, either structurally (tables, index, meta, references or
header counts rewritten, then sealed again so every checksum and the digest are valid:
cyclic frame parents, out-of-range strand or frame indices, unknown edge kinds, dropped or
added edges, damaged iteration marks, edges moved to another strand of the right frame, ...) or byte by byte (bit flips, truncation, overwritten or inserted bytes,
junk appended, with or without a fresh digest).  Through the command line, each case must
either end in one line on stderr and exit status 2, or be a valid trace: then ``validate``
passes, ``run`` passes, and the replay satisfies the engine's invariants.  ``validate``
never passes a file ``run`` refuses.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import pytest

import simsched
from simsched.cli import main
from simsched.engine.check import check_invariants
from simsched.trace import TraceBuilder, open_trace
from simsched.trace import format as fmt
from tests.trace import forge
from tests.trace.forge import (
    Parts,
    private_cache,  # noqa: F401 - a fixture
)

pytestmark = pytest.mark.usefixtures("private_cache")

MACHINE = "itrs-scaling-2"
LIMIT = 1 << 48


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """Nested tasks, iteration marks, syncs in the middle, several chunks."""
    p = tmp_path_factory.mktemp("g") / "good.sst"
    rng = np.random.default_rng(5)

    def task(depth: int) -> None:
        b.refs(rng.integers(0, 1 << 20, 12, dtype=np.uint64), 8, rng.random(12) < 0.3, 2)
        if depth < 2:
            for _ in range(2):
                b.spawn()
                task(depth + 1)
                b.ret()
            b.sync()
        b.instr(5)

    with TraceBuilder(p, chunk_refs=64, program="fuzz", params={"n": 3}) as b:
        for it in range(2):
            b.iteration(it)
            task(0)
            b.ref(LIMIT - 8, 8, True)
    return p


# -- structural damage (sealed again) ----------------------------------------------------------


def _cast(arr: np.ndarray, i: int, v: int) -> None:
    arr[i] = np.array(v, np.int64).astype(arr.dtype)


def _value(rng, parts: Parts, v: int) -> int:
    t = parts.tables
    ns, nf, ne = (t[k].shape[0] for k in ("strand_frame", "frame_parent", "edge_src"))
    cands = [-1, 0, 1, v - 1, v + 1, 2 * v, ns - 1, ns, nf - 1, nf, ne, 1 << 40, -(1 << 40)]
    cands.append(int(rng.integers(-8, 3 * ns + 8)))
    return int(rng.choice(cands))


def m_set(parts: Parts, rng) -> str:
    name = str(rng.choice([k for k, v in parts.tables.items() if v.shape[0]]))
    arr = parts.tables[name]
    i = int(rng.integers(arr.shape[0]))
    v = _value(rng, parts, int(arr[i]) if arr.dtype != np.uint64 else 0)
    _cast(arr, i, v)
    return f"{name}[{i}] = {v}"


def m_swap(parts: Parts, rng) -> str:
    name = str(rng.choice([k for k, v in parts.tables.items() if v.shape[0] > 1]))
    arr = parts.tables[name]
    i, j = (int(x) for x in rng.choice(arr.shape[0], 2, replace=False))
    arr[[i, j]] = arr[[j, i]]
    return f"swap {name}[{i}], [{j}]"


def m_cycle(parts: Parts, rng) -> str:
    parent = parts.tables["frame_parent"]
    b = int(rng.integers(1, parent.shape[0]))
    a = int(rng.integers(b, parent.shape[0]))  # itself or a later frame: a cycle or a loop
    parent[b] = a
    if a > b and rng.random() < 0.5:
        parent[a] = b
    return f"frame parents {b} -> {a}"


def m_edge_kind(parts: Parts, rng) -> str:
    kind = parts.tables["edge_kind"]
    i = int(rng.integers(kind.shape[0]))
    kind[i] = int(rng.integers(0, 256))
    return f"edge_kind[{i}] = {kind[i]}"


def m_edge_reverse(parts: Parts, rng) -> str:
    t = parts.tables
    i = int(rng.integers(t["edge_src"].shape[0]))
    t["edge_src"][i], t["edge_dst"][i] = t["edge_dst"][i], t["edge_src"][i]
    return f"reverse edge {i}"


def _edges(parts: Parts, op: Callable[[np.ndarray], np.ndarray]) -> None:
    for k in ("edge_src", "edge_dst", "edge_kind"):
        parts.tables[k] = op(parts.tables[k])


def m_edge_count(parts: Parts, rng) -> str:
    t = parts.tables
    ns, ne = t["strand_frame"].shape[0], t["edge_src"].shape[0]
    i = int(rng.integers(ne))
    what = int(rng.integers(3))
    if what == 0:
        _edges(parts, lambda a: np.delete(a, i))
        return f"drop edge {i}"
    if what == 1:
        _edges(parts, lambda a: np.insert(a, i, a[i]))
        return f"duplicate edge {i}"
    s = int(rng.integers(ns - 1))
    d = int(rng.integers(s + 1, ns))
    at = int(np.searchsorted(t["edge_src"], s, side="right"))
    new = {"edge_src": s, "edge_dst": d, "edge_kind": int(rng.integers(3))}
    for k, v in new.items():
        t[k] = np.insert(t[k], at, v)
    return f"add edge {s} -> {d} ({new['edge_kind']})"


def m_strand_drop(parts: Parts, rng) -> str:
    t = parts.tables
    j = int(rng.integers(t["strand_frame"].shape[0]))
    for k in ("strand_frame", "strand_instr", "strand_tail"):
        t[k] = np.delete(t[k], j)
    t["strand_ref_start"] = np.delete(t["strand_ref_start"], j + int(rng.integers(2)))
    return f"drop strand {j}"


def m_counts(parts: Parts, rng) -> str:
    t, idx = parts.tables, parts.index
    counts = [
        t["strand_frame"].shape[0],
        t["frame_parent"].shape[0],
        t["edge_src"].shape[0],
        int(idx["n"].astype(np.int64).sum()),
        idx.shape[0],
        int(t["strand_instr"].sum()),
    ]
    k = int(rng.integers(6))
    counts[k] = max(0, counts[k] + int(rng.choice([-1, 1, 7, 1 << 20])))
    parts.counts = tuple(counts)
    return f"header count {k} = {counts[k]}"


def m_meta(parts: Parts, rng) -> str:
    key = str(
        rng.choice(
            [
                "backend",
                "program",
                "args",
                "gaps_exact",
                "line_size_hint",
                "params",
                "roi",
                "writer",
                "extra",
            ]
        )
    )
    value = [5, -64, 3, "x", [], [1], {}, None, True, 1.5][int(rng.integers(10))]
    if rng.random() < 0.2:
        parts.meta.pop(key, None)
        return f"meta drop {key}"
    parts.meta[key] = value
    return f"meta {key} = {value!r}"


def m_index(parts: Parts, rng) -> str:
    field = str(rng.choice(["offset", "length", "first", "n", "wa", "wg"]))
    k = int(rng.integers(parts.index.shape[0]))
    col = parts.index[field]
    v = int(rng.choice([0, 1, 2, 3, 8, int(col[k]) - 1, int(col[k]) + 1, 1 << 33]))
    _cast(col, k, v)
    parts.place_chunks = field not in ("offset", "length")
    return f"index[{k}].{field} = {v}"


def m_reference(parts: Parts, rng) -> str:
    k = int(rng.integers(parts.index.shape[0]))
    addr, sizew, gap = forge.decode(parts, k)
    j = int(rng.integers(addr.shape[0]))
    a, s = [
        (LIMIT, 8),
        (LIMIT - 4, 8),
        ((1 << 64) - 8, 8),
        (int(addr[j]), 0),
        (int(rng.integers(LIMIT)), int(rng.integers(1, 128))),
    ][int(rng.integers(5))]
    addr[j], sizew[j] = a, (sizew[j] & 0x80) | s
    if rng.random() < 0.3:
        gap[j] += 1
    forge.encode(parts, k, addr, sizew, gap)
    return f"chunk {k} reference {j} = ({a:#x}, {s})"


def m_chunks(parts: Parts, rng) -> str:
    n = parts.index.shape[0]
    i, j = (int(x) for x in rng.choice(n, 2, replace=False))
    if rng.random() < 0.5:
        parts.chunks[i], parts.chunks[j] = parts.chunks[j], parts.chunks[i]
        return f"swap chunk frames {i}, {j}"
    del parts.chunks[j]
    parts.index = np.delete(parts.index, j)
    return f"drop chunk {j}"


def m_trailer(parts: Parts, rng) -> str:
    parts.trailer = rng.bytes(int(rng.integers(1, 64)))
    return f"{len(parts.trailer)} bytes appended (digest valid)"


def m_iteration(parts: Parts, rng) -> str:
    """Damage the iteration marks (docs/trace-format.md, "Iterations")."""
    it = parts.tables["frame_iteration"]
    marked = np.flatnonzero(it >= 0)
    what = int(rng.integers(5))
    if what == 0:
        it[marked] = it[marked].max() - it[marked]
        return "iteration numbers reversed"
    if what == 1:
        it[0] = int(rng.choice([0, 1, 1 << 40]))
        return f"main's iteration = {int(it[0])}"
    if what == 2:
        f = int(rng.integers(1, it.shape[0]))
        it[f] = int(rng.choice([-1, 0, 1, 2, int(it[f]) + 1, 1 << 40]))
        return f"frame {f} iteration = {int(it[f])}"
    if what == 3:
        it[it == it.max()] = max(0, int(it.max()) - 1)  # iteration(k) twice
        return "last iteration repeats the one before"
    big = int(rng.choice([1 << 40, (1 << 63) - 1]))
    it[it == it.max()] = big  # still increasing: a valid trace
    return f"last iteration renumbered {big}"


def m_edge_target(parts: Parts, rng) -> str:
    """Move one edge to another strand of the frame it names (the frames stay right)."""
    t = parts.tables
    sf = t["strand_frame"]
    e = int(rng.integers(t["edge_src"].shape[0]))
    src, dst, kind = int(t["edge_src"][e]), int(t["edge_dst"][e]), int(t["edge_kind"][e])
    if not (0 <= src < sf.shape[0] and 0 <= dst < sf.shape[0]):
        # an earlier mutation of this trace already sent the edge outside the strands
        return f"edge {e} ({src} -> {dst}) left as it is"
    if kind == 2 or rng.random() < 0.3:  # a join (or any edge) to another strand of dst's frame
        cands = np.flatnonzero((sf == sf[dst]) & (np.arange(sf.shape[0]) > src))
        cands = cands[cands != dst]
        new_src, new_dst = src, int(rng.choice(cands)) if cands.size else dst
    else:  # a spawn or continuation from another strand of src's frame
        cands = np.flatnonzero((sf == sf[src]) & (np.arange(sf.shape[0]) < dst))
        cands = cands[cands != src]
        new_src, new_dst = int(rng.choice(cands)) if cands.size else src, dst
    t["edge_src"][e], t["edge_dst"][e] = new_src, new_dst
    order = np.argsort(t["edge_src"], kind="stable")
    _edges(parts, lambda a: a[order])
    return f"{fmt.EDGE_KINDS.get(kind, kind)} edge {src} -> {dst} moved to {new_src} -> {new_dst}"


STRUCTURAL = [
    m_iteration,
    m_edge_target,
    m_set,
    m_set,
    m_set,
    m_swap,
    m_cycle,
    m_edge_kind,
    m_edge_reverse,
    m_edge_count,
    m_strand_drop,
    m_counts,
    m_meta,
    m_index,
    m_reference,
    m_chunks,
    m_trailer,
]


# -- byte-level damage ---------------------------------------------------------------------


def b_flip(data: bytes, rng) -> tuple[bytes, str]:
    out = bytearray(data)
    pos = rng.integers(len(out), size=int(rng.integers(1, 9)))
    for p in pos:
        out[p] ^= 1 << int(rng.integers(8))
    return bytes(out), f"bits flipped at {sorted(pos.tolist())}"


def b_truncate(data: bytes, rng) -> tuple[bytes, str]:
    cut = int(rng.integers(len(data)))
    return data[:cut], f"truncated to {cut}"


def b_overwrite(data: bytes, rng) -> tuple[bytes, str]:
    at, n = int(rng.integers(len(data))), int(rng.integers(1, 32))
    return data[:at] + rng.bytes(n) + data[at + n :], f"{n} bytes overwritten at {at}"


def b_insert(data: bytes, rng) -> tuple[bytes, str]:
    at, n = int(rng.integers(len(data))), int(rng.integers(1, 32))
    return data[:at] + rng.bytes(n) + data[at:], f"{n} bytes inserted at {at}"


def b_append(data: bytes, rng) -> tuple[bytes, str]:
    n = int(rng.integers(1, 4096))
    return data + rng.bytes(n), f"{n} bytes appended"


BYTES = [b_flip, b_truncate, b_overwrite, b_insert, b_append]


def corrupt(parts: Parts, data: bytes, seed: int, path) -> str:
    """Write case ``seed`` to ``path``; returns what was done."""
    rng = np.random.default_rng([20240517, seed])
    if rng.random() < 0.7:
        p = copy.deepcopy(parts)
        what = [f(p, rng) for f in rng.choice(STRUCTURAL, int(rng.choice([1, 1, 1, 2])))]
        forge.seal(p, path)
        return "; ".join(what)
    out, what = BYTES[int(rng.integers(len(BYTES)))](data, rng)
    if rng.random() < 0.4:
        out, what = forge.reseal_bytes(out), what + " (header and digest resealed)"
    path.write_bytes(out)
    return what


# -- the check --------------------------------------------------------------------------------


def _cli(args, capsys) -> tuple[int, str]:
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def fuzz(good, tmp_path, capsys, cases: int) -> None:
    parts, data = forge.read(good), good.read_bytes()
    failures, refused = [], 0
    for seed in range(cases):
        path = tmp_path / f"case{seed}.sst"
        what = corrupt(parts, data, seed, path)
        sched = ("ws", "pdf")[seed % 2]
        v_code, v_err = _cli(["trace", "validate", path], capsys)
        r_code, r_err = _cli(["run", "-t", path, "-m", MACHINE, "-s", sched, "--json"], capsys)
        problem = None
        for cmd, code, err in (("validate", v_code, v_err), ("run", r_code, r_err)):
            lines = err.strip().splitlines()
            if code not in (0, 2) or (code == 2 and (len(lines) != 1 or str(path) not in err)):
                problem = f"{cmd} exit {code}: {err.strip()[-600:]}"
        if problem is None and v_code == 0 and r_code != 0:
            problem = f"validate passed, run refused: {r_err.strip()}"
        if problem is None and r_code == 0:
            try:
                with open_trace(path) as t:
                    res = simsched.run(t, MACHINE, sched, speedup=False)
                    check_invariants(t, res.engine_result, res.mem_stats)
            except Exception as exc:  # noqa: BLE001 - reported with the case
                problem = f"run passed but the replay is wrong: {type(exc).__name__}: {exc}"
        refused += v_code != 0
        if problem:
            failures.append(f"case {seed} ({what}): {problem}")
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} of {cases} cases)"
    assert refused > cases // 2  # the corruptions are real: most must be refused


def test_good_trace_round_trips(good, tmp_path, capsys):
    sealed = forge.seal(forge.read(good), tmp_path / "same.sst")
    assert sealed.read_bytes() == good.read_bytes()
    assert _cli(["trace", "validate", good], capsys) == (0, "")
    assert _cli(["run", "-t", good, "-m", MACHINE, "--json"], capsys) == (0, "")


def test_fuzz_300(good, tmp_path, capsys):
    fuzz(good, tmp_path, capsys, 300)


@pytest.mark.slow
def test_fuzz_3000(good, tmp_path, capsys):
    fuzz(good, tmp_path, capsys, 3000)
