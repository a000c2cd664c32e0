"""Repeated parts: a trace that stores identical iterations once is the same program."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

import simsched
from simsched.errors import ConfigError, TraceBuildError, TraceFormatError
from simsched.trace import TraceBuilder, copy, events, open_trace, reader, summary, validate
from simsched.trace import format as fmt
from simsched.trace.format import RefChunk
from simsched.workloads import generate
from tests.engine.machines import TWO_BY_TWO
from tests.trace import forge

HEAT = {"nx": 34, "ny": 18, "cutoff": 8}


def _pair(tmp_path, name="heat", **params):
    """The same program generated with and without its repeated part."""
    out = []
    for rep in (True, False):
        path = tmp_path / f"{name}-{rep}.sst"
        generate(name, path, repeat=rep, **params)
        out.append(path)
    return out


def _same_program(a, b):
    for f in ("n_strands", "n_frames", "n_edges", "n_refs", "n_chunks", "n_instructions"):
        assert getattr(a.header, f) == getattr(b.header, f), f
    for table in ("strands", "frames", "edges"):
        ta, tb = getattr(a, table), getattr(b, table)
        for col in ta.__dataclass_fields__:
            assert np.array_equal(getattr(ta, col), getattr(tb, col)), (table, col)
    assert np.array_equal(a.pred_count, b.pred_count)
    for col in ("first", "n"):
        assert np.array_equal(a.index[col], b.index[col])
    for ca, cb in zip(a.iter_chunks(), b.iter_chunks(), strict=True):
        assert ca.start == cb.start
        for col in ("addr", "size", "write", "gap"):
            assert np.array_equal(getattr(ca, col), getattr(cb, col)), col


@pytest.mark.parametrize(
    ("name", "params", "count"),
    [
        ("heat", {**HEAT, "iters": 7}, 3),  # two grids: period 2, iteration 6 after the copies
        ("sor", {"nx": 18, "ny": 18, "cutoff": 4, "iters": 5}, 5),  # in place: period 1
        ("heat", {**HEAT, "iters": 6, "irregular": True, "init": False}, 3),
    ],
)
def test_repeat_trace_is_the_plain_program(tmp_path, name, params, count):
    rep, plain = _pair(tmp_path, name, chunk_refs=4096, **params)
    with open_trace(rep) as a, open_trace(plain) as b:
        assert a.header.repeat is not None and a.header.repeat["count"] == count
        assert b.header.repeat is None
        assert a.header.repeat["stored_refs"] < a.header.n_refs
        _same_program(a, b)
        assert sorted(set(a.frames.iteration.tolist())) == [-1, *range(params["iters"])]
        hi = a.header.n_refs - 3
        assert np.array_equal(a.refs(5, hi).addr, b.refs(5, hi).addr)
    assert validate(rep)["refs"] == validate(plain)["refs"]
    # trace info reads a repeated part once and counts it as often as it runs
    a, b = summary(rep), summary(plain)
    own = {"file", "args", "params", "repeat", "file_bytes", "bytes_per_ref", "digest"}
    assert {k: v for k, v in a.items() if k not in own} == {
        k: v for k, v in b.items() if k not in own
    }


def test_repeat_replays_like_the_plain_program(tmp_path):
    # init=false: the first iteration places the pages (first touch), as a copy would not
    rep, plain = _pair(tmp_path, iters=6, chunk_refs=4096, init=False, **HEAT)
    for sched in ("ws", "laws"):
        a = simsched.run(rep, TWO_BY_TWO, sched, seed=2, speedup=False).record
        b = simsched.run(plain, TWO_BY_TWO, sched, seed=2, speedup=False).record
        differ = {k for k in a if a[k] != b.get(k)} - {"trace_digest", "trace_args", "wall_s"}
        assert not differ, (sched, differ)
        assert a["makespan_cycles"] > 0


def test_file_size_does_not_grow_with_iterations(tmp_path):
    sizes = {}
    for iters in (2, 200):
        path = tmp_path / f"heat-{iters}.sst"
        h = generate("heat", path, iters=iters, **HEAT)
        sizes[iters] = path.stat().st_size
        assert h.n_frames > 2 * iters
    assert sizes[200] <= 3 * sizes[2], sizes
    with open_trace(tmp_path / "heat-200.sst") as t:
        assert t.header.repeat["count"] == 100 and t.header.n_chunks >= 1
        assert int(t.frames.iteration.max()) == 199
    info = summary(tmp_path / "heat-200.sst")
    assert info["repeat"]["count"] == 100 and info["iterations"] == 200


# -- the builder's rule ---------------------------------------------------------------------


def _step(b, it, addr=0x1000):
    b.iteration(it)
    b.spawn()
    b.ref(addr, 8, True)
    b.ret()
    b.sync()


def test_builder_repeat_with_stride_and_epilogue(tmp_path):
    with TraceBuilder(tmp_path / "r.sst") as b:
        b.ref(0x10, 8, False)
        b.repeat_begin()
        _step(b, 0)
        _step(b, 1)
        b.repeat_end(4, stride=3)
        _step(b, 20)
    with open_trace(tmp_path / "r.sst") as t:
        kids = t.frames.iteration[t.frames.parent == 0]
        assert kids.tolist() == [0, 1, 3, 4, 6, 7, 9, 10, 20]
        assert t.header.n_refs == 1 + 9
        assert t.header.repeat["iteration_stride"] == 3


def test_count_one_writes_a_plain_trace(tmp_path):
    with TraceBuilder(tmp_path / "r.sst") as b:
        b.repeat_begin()
        _step(b, 0)
        h = b.repeat_end(1)
    assert h is None
    with open_trace(tmp_path / "r.sst") as t:
        assert t.header.repeat is None and t.header.n_frames == 2


def _fails(tmp_path, steps, message):
    b = TraceBuilder(tmp_path / "bad.sst")
    with pytest.raises(TraceBuildError, match=message):
        steps(b)
        b.close()
    b.abort()
    assert not (tmp_path / "bad.sst").exists()


def _nested(b):
    b.spawn()
    b.repeat_begin()


def _unsynced(b):
    b.spawn()
    b.ret()
    b.repeat_begin()


def _no_mark(b):
    b.repeat_begin()
    b.spawn()


def _ref_at_start(b):
    b.repeat_begin()
    b.ref(0x10, 8, False)
    _step(b, 0)
    b.repeat_end(2)


def _ref_after_end(b):
    b.repeat_begin()
    _step(b, 0)
    b.repeat_end(2)
    b.ref(0x10, 8, False)


def _spawn_after_end(b):
    b.repeat_begin()
    _step(b, 0)
    b.repeat_end(2)
    b.spawn()


def _twice(b):
    b.repeat_begin()
    _step(b, 0)
    b.repeat_end(2)
    b.repeat_begin()


def _bool_count(b):
    b.repeat_begin()
    _step(b, 0)
    b.repeat_end(True)  # repeated the part once, where every other count refuses a bool


def _small_stride(b):
    b.repeat_begin()
    _step(b, 0)
    _step(b, 1)
    b.repeat_end(2, stride=1)


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (_nested, "repeat_begin\\(\\) inside a spawned frame"),
        (_unsynced, "child\\(ren\\) not synced"),
        (_no_mark, "without an iteration mark"),
        (_ref_at_start, "between repeat_begin\\(\\) and its first spawn"),
        (_ref_after_end, "after repeat_end\\(\\)"),
        (_spawn_after_end, "without an iteration mark"),
        (_twice, "at most one repeated part"),
        (_small_stride, "iteration stride 1 \\(at least 2"),
        (_bool_count, "repeat count True is not an integer"),
        (lambda b: b.repeat_end(2), "repeat_end\\(\\) without repeat_begin\\(\\)"),
    ],
)
def test_builder_refuses_a_part_that_would_not_repeat(tmp_path, steps, message):
    _fails(tmp_path, steps, message)


@pytest.mark.parametrize(("limit", "most"), [("MAX_ROWS", 2 + 8 * 3), ("MAX_CHUNKS", 3)])
def test_builder_refuses_copies_a_reader_could_not_expand_at_once(
    tmp_path, monkeypatch, limit, most
):
    """At repeat_end(), not in close() after the rest of the program: a step is 8 rows
    (a frame, three strands, four edges) and, in chunks of 4,096, one chunk of 4,096
    references; main is 2 rows and no references."""
    from simsched.trace import repeat

    monkeypatch.setattr(repeat, limit, most)

    def steps(b, n):
        b.repeat_begin()
        b.iteration(0)
        b.spawn()
        b.refs(np.arange(4096, dtype=np.uint64) * 8, 8, False)
        b.ret()
        b.sync()
        b.repeat_end(n)

    with TraceBuilder(tmp_path / "ok.sst", chunk_refs=4096) as b:
        steps(b, 3)  # at the limit: written and read
    with open_trace(tmp_path / "ok.sst") as t:
        assert len(t.strands) + len(t.frames) + len(t.edges) == 26 and t.header.n_chunks == 3
    b = TraceBuilder(tmp_path / "bad.sst", chunk_refs=4096)
    with pytest.raises(TraceBuildError, match=r"4 copies of the repeated part would expand "
                       r"to 34 table rows and 4 chunks; a reader holds at most"):  # fmt: skip
        steps(b, 4)
    b.abort()
    assert not (tmp_path / "bad.sst").exists()
    # one copy is an ordinary part, which a reader does not expand: not refused
    with TraceBuilder(tmp_path / "one.sst", chunk_refs=4096) as b:
        for it in range(3):
            b.iteration(it)
            b.spawn()
            b.refs(np.arange(4096, dtype=np.uint64) * 8, 8, False)
            b.ret()
            b.sync()
        b.repeat_begin()
        b.iteration(3)
        b.spawn()
        b.ret()
        b.sync()
        b.repeat_end(1)
    with open_trace(tmp_path / "one.sst") as t:
        assert t.header.repeat is None and len(t.strands) + len(t.frames) + len(t.edges) == 34


# -- the reader refuses bad repeat tables ---------------------------------------------------


@pytest.fixture
def rep_trace(tmp_path):
    path = tmp_path / "rep.sst"
    generate("heat", path, iters=6, **HEAT)
    return path


def _repeat(**changes):
    def damage(parts):
        parts.meta["repeat"] = {**parts.meta["repeat"], **changes}

    return damage


def _drop(key):
    def damage(parts):
        if key == "flag":
            parts.flags &= ~fmt.FLAG_REPEAT
        else:
            del parts.meta["repeat"]

    return damage


def _without_last_strand(parts):
    s0, s1 = parts.meta["repeat"]["strands"]
    parts.meta["repeat"]["strands"] = [s0, s1 - 1]  # main's last strand, after the sync


BAD = {
    "body without its last sync": (
        _without_last_strand,
        "the repeated part expanded: frame \\d+ is joined 0 times",
    ),
    "count 0": (_repeat(count=0), "repeat': count is 0, not an integer in 1"),
    "stride 0": (_repeat(iteration_stride=0), "iteration_stride is 0"),
    "chunk size": (_repeat(chunk_refs=-1), "chunk_refs is -1"),
    "count a string": (_repeat(count="3"), "count is '3'"),
    "unknown key": (_repeat(colour=1), "must have exactly the keys"),
    "strands out of range": (_repeat(strands=[1, 10**6]), "strands \\[1, 1000000\\] is not"),
    "not a child of main": (_repeat(strands=[2, 20]), "are not a repeated part"),
    "iterations overflow": (
        _repeat(count=2, iteration_stride=fmt.MAX_ITERATION),
        "number iterations past 2\\^63 - 1",
    ),
    "too many copies": (_repeat(count=1 << 40), "expand to .* table rows"),
    # 100,000 copies of a 2 kB heat expanded to 21 M rows and took 3 GB to open; 2^28
    # rows, the bound before, some 35 GB
    "copies past the memory bound": (
        _repeat(count=1_000_000),
        "expand to \\d{8,9} table rows .* at most 16777216 rows",
    ),
    # the program served every reference as a chunk of its own, one by one
    "chunks smaller than the stored ones": (
        _repeat(chunk_refs=1),
        "chunk_refs is 1, but stored chunk 0 holds \\d+ references",
    ),
    "flag without the field": (_drop("meta"), "repeat flag and the meta field 'repeat' disagree"),
    "field without the flag": (_drop("flag"), "repeat flag and the meta field 'repeat' disagree"),
    "stride breaks the marks": (
        _repeat(iteration_stride=1),
        "the repeated part expanded: .*iteration numbers must increase",
    ),
}


@pytest.mark.parametrize(("damage", "message"), list(BAD.values()), ids=list(BAD))
def test_bad_repeat_tables_are_refused(tmp_path, rep_trace, damage, message):
    forge.assert_refused(rep_trace, damage, message, tmp_path / "bad.sst")


def _as_version(path, version):
    data = bytearray(path.read_bytes())
    data[8:10] = version.to_bytes(2, "little")
    data[16:20] = b"\0\0\0\0"
    data[16:20] = zlib.crc32(bytes(data[: fmt.HEADER_SIZE])).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def test_version_1_files_are_read_without_the_repeat_flag(tmp_path, rep_trace):
    plain = tmp_path / "plain.sst"
    generate("heat", plain, iters=2, **HEAT)
    with open_trace(_as_version(plain, 1)) as t:
        assert t.header.version == 1 and t.header.repeat is None
    with pytest.raises(TraceFormatError, match="unknown flag bits 0x4 .*version 1 defines 0x3"):
        open_trace(_as_version(rep_trace, 1))
    with pytest.raises(TraceFormatError, match="trace format version 4; this simsched reads"):
        open_trace(_as_version(plain, 4))


def test_header_json_names_the_repeat(rep_trace):
    with open_trace(rep_trace) as t:
        d = t.header.as_dict()
    assert json.loads(json.dumps(d))["repeat"]["count"] == 3
    assert d["repeat"]["stored_frames"] < d["n_frames"]


def test_copy_keeps_the_repeated_part(tmp_path):
    src = tmp_path / "src.sst"
    generate("heat", src, iters=7, chunk_refs=4096, **HEAT)
    t = open_trace(src)
    with TraceBuilder(tmp_path / "copy.sst", **_same_meta(t), chunk_refs=4096) as b:
        copy(t, b)
    assert open_trace(tmp_path / "copy.sst").header.digest == t.header.digest
    # without repeat=True the events are the whole program's, copies included
    whole = [ev[1] for ev in events(t) if ev[0] == "strand"]
    assert whole == list(range(t.header.n_strands))
    kept = [ev[1] for ev in events(t, repeat=True) if ev[0] == "strand"]
    assert len(kept) == t.header.repeat["stored_strands"]


def _same_meta(t):
    h = t.header
    return {
        "program": h.program,
        "args": list(h.args),
        "gaps_exact": h.gaps_exact,
        "params": h.params,
    }


def test_validate_reads_a_repeated_part_once_and_checks_every_copy(tmp_path, rep_trace):
    with open_trace(rep_trace) as t:
        s0, s1 = t.header.repeat["strands"]
        leaf = next(s for s in range(s0, s1) if t.strands.n_refs[s])

    parts = forge.read(rep_trace)
    parts.tables["strand_instr"][leaf] += 1  # still at least its references + tail
    bad = forge.seal(parts, tmp_path / "bad.sst")
    with open_trace(bad) as t:  # opening does not read references
        assert t.header.repeat is not None
    with pytest.raises(TraceFormatError, match=f"strand {leaf}: references, gaps and tail"):
        validate(bad)
    assert validate(rep_trace)["refs"] > forge.read(rep_trace).index["n"].sum()


def test_profiler_and_memory_replay_see_the_plain_program(tmp_path):
    from simsched.machine import load_machine
    from simsched.memory.replay import replay_trace
    from simsched.profile.lrutree import profile_trace

    rep, plain = _pair(tmp_path, iters=5, chunk_refs=4096, init=False, **HEAT)
    a, b = profile_trace(rep), profile_trace(plain)
    for name in ("accesses", "hits", "misses", "reuse", "working_set_bytes"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    m = load_machine(TWO_BY_TWO)
    ra, rb = replay_trace(m, rep, "rr"), replay_trace(m, plain, "rr")
    assert {k: v for k, v in ra.items() if k != "trace"} == {
        k: v for k, v in rb.items() if k != "trace"
    }


def _held_decoder(t, fail_first=False):
    """Make ``t``'s stored-chunk decoder count its calls and hold the first one until
    released (optionally failing it), so that a second thread asks meanwhile."""
    import threading

    calls, release = [], threading.Event()
    real = t._decode_stored

    def decode(k, out=None):
        calls.append(k)
        if len(calls) == 1:
            release.wait(5)
            if fail_first:
                raise TraceFormatError("stored chunk unreadable (held decoder)")
        return real(k, out)

    t._decode_stored = decode
    return calls, release


def _ask_twice(t, k, calls, release):
    import threading
    import time

    got = {}

    def ask(name):
        try:
            got[name] = t._stored_chunk(k)
        except TraceFormatError as e:
            got[name] = e

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    while not calls:
        time.sleep(0.001)
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    deadline = time.monotonic() + 0.3  # time for a second decode to begin, if it would
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    release.set()
    first.join(5)
    second.join(5)
    return got


def test_a_stored_chunk_two_threads_want_is_decoded_once(tmp_path):
    # The prefetch threads assemble neighbouring program chunks, which share a stored one.
    path = tmp_path / "rep.sst"
    generate("heat", path, iters=6, chunk_refs=4096, nx=66, ny=34, cutoff=8)
    with open_trace(path) as t:
        calls, release = _held_decoder(t)
        got = _ask_twice(t, 1, calls, release)
        assert calls == [1]
        assert got["first"] is got["second"]
        assert not t._stored_busy


def test_a_failed_stored_decode_is_retried_by_the_waiting_thread(tmp_path):
    path = tmp_path / "rep.sst"
    generate("heat", path, iters=6, chunk_refs=4096, nx=66, ny=34, cutoff=8)
    with open_trace(path) as t:
        calls, release = _held_decoder(t, fail_first=True)
        got = _ask_twice(t, 1, calls, release)
        assert isinstance(got["first"], TraceFormatError)
        assert calls == [1, 1] and len(got["second"]) > 0
        assert not t._stored_busy


# -- the repeated part kept decoded ---------------------------------------------------------


BIG = {"nx": 66, "ny": 66, "cutoff": 8}  # stored in more chunks than the LRU holds


def _walk_twice(t):
    return [c for _ in range(2) for c in t.iter_chunks(prefetch=False)]


@pytest.mark.parametrize("wide", [False, True], ids=["offsets", "whole-addresses"])
def test_the_repeated_part_is_decoded_once_when_it_fits(tmp_path, monkeypatch, wide):
    rep, plain = _pair(tmp_path, iters=9, chunk_refs=4096, **BIG)
    monkeypatch.delenv(reader.KEEP_ENV, raising=False)
    if wide:  # every chunk spans "too much" for offsets: kept with whole addresses
        monkeypatch.setattr(reader, "_OFFSET_SPAN", 64)
    with open_trace(rep) as a, open_trace(plain) as b:
        stored = a.header.repeat["stored_chunks"]
        assert stored > reader._STORED_CACHE  # more than the few an LRU holds
        body = [k for k in range(stored) if a._in_body(k)]
        assert 0 < len(body) <= stored
        _walk_twice(a)
        # the part's chunks decoded once, however often the program reads them; the
        # others (before and after the copies) once per walk
        assert a.stored_decodes == len(body) + 2 * (stored - len(body))
        assert a.kept_bytes == sum(reader._kept_bytes(a._stored_index[k], wide) for k in body)
        assert {a._kept[k].addr.dtype for k in body} == {np.dtype(np.uint64 if wide else np.uint32)}
        _same_program(a, b)
    monkeypatch.setenv(reader.KEEP_ENV, "0")
    with open_trace(rep) as a:
        got = _walk_twice(a)
        assert a.kept_bytes == 0 and a.stored_decodes > 2 * stored
    with open_trace(rep) as a:
        kept = _walk_twice(a)
    for x, y in zip(got, kept, strict=True):
        for col in ("addr", "size", "write", "gap", "dep"):
            assert np.array_equal(getattr(x, col), getattr(y, col)), col


def test_what_is_kept_stays_within_the_limit(tmp_path, monkeypatch):
    rep, _ = _pair(tmp_path, iters=9, chunk_refs=4096, **BIG)
    monkeypatch.delenv(reader.KEEP_ENV, raising=False)
    with open_trace(rep) as full:
        want = [c for c in full.iter_chunks(prefetch=False)]
        one = reader._kept_bytes(full._stored_index[1], False)
    with open_trace(rep) as t:
        t._keep = 2 * one  # two chunks' worth
        got = _walk_twice(t)
        assert 0 < t.kept_bytes <= 2 * one and len(t._kept) == 2
        assert t.stored_decodes > t.header.repeat["stored_chunks"]
    for x, y in zip(got, want + want, strict=True):
        for col in ("addr", "size", "write", "gap", "dep"):
            assert np.array_equal(getattr(x, col), getattr(y, col)), col


def test_a_kept_chunk_takes_the_stored_widths(tmp_path):
    path = tmp_path / "rep.sst"
    generate("heat", path, iters=6, chunk_refs=4096, **HEAT)
    with open_trace(path) as t:
        row = t._stored_index[0]
        c = t._decode_stored(0)
        assert reader._offset_base(c) == int(c.addr.min())
        k = reader._compact(c, row, reader._offset_base(c))
        assert k.addr.dtype == np.uint32 and k.base == int(c.addr.min())
        assert np.array_equal(k.addr.astype(np.uint64) + np.uint64(k.base), c.addr)
        assert k.gap.dtype == {1: np.uint8, 2: np.uint16, 4: np.uint32}[int(row["wg"])]
        assert np.array_equal(k.gap, c.gap) and np.array_equal(k.dep, c.dep)
        if not int(row["wd"]):
            assert k.dep.strides == (0,)  # no memory for a column of False
        held = k.addr.nbytes + k.size.nbytes + k.write.nbytes + k.gap.nbytes
        held += k.dep.nbytes if k.dep.strides != (0,) else 0
        assert held == reader._kept_bytes(row, False)


def test_addresses_spanning_4_gib_are_kept_whole():
    # offsets from the lowest address would wrap: the chunk keeps its 8-byte addresses
    addr = np.array([1 << 20, (1 << 20) + (1 << 32), 5 << 40], np.uint64)
    n = len(addr)
    c = RefChunk(
        7,
        addr,
        np.full(n, 8, np.uint8),
        np.zeros(n, bool),
        np.ones(n, np.uint32),
        np.zeros(n, bool),
    )
    row = np.zeros(1, fmt.INDEX_DTYPE)[0]
    row["n"], row["wg"], row["wd"] = n, 1, 0
    assert reader._offset_base(c) is None and reader._offset_base(c.slice(0, 1)) == 1 << 20
    assert reader._offset_base(c.slice(0, 0)) == 0
    k = reader._compact(c, row, None)
    assert k.addr.dtype == np.uint64 and np.array_equal(k.addr, addr)
    assert reader._kept_bytes(row, True) == n * (8 + 1 + 1 + 1)


@pytest.mark.parametrize("value", ["-1", "lots", "1.5", str((1 << 40) + 1)])
def test_a_bad_keep_limit_is_refused_with_its_name(tmp_path, monkeypatch, value):
    path = tmp_path / "rep.sst"
    generate("heat", path, iters=6, chunk_refs=4096, **HEAT)
    monkeypatch.setenv(reader.KEEP_ENV, value)
    with pytest.raises(ConfigError, match=f"SIMSCHED_KEEP_MB={value!r}: not a whole number"):
        open_trace(path)


def test_the_keep_limit_is_read_in_mib(monkeypatch):
    monkeypatch.setenv(reader.KEEP_ENV, " 12 ")
    assert reader.keep_bytes() == 12 << 20
    monkeypatch.setenv(reader.KEEP_ENV, "")
    assert reader.keep_bytes() == reader.KEEP_BYTES


def test_the_reader_keeps_at_most_half_the_available_memory(tmp_path, monkeypatch):
    path = tmp_path / "rep.sst"
    generate("heat", path, iters=6, chunk_refs=4096, **HEAT)
    monkeypatch.delenv(reader.KEEP_ENV, raising=False)
    monkeypatch.setattr(reader, "available_bytes", lambda: 10 << 20)
    with open_trace(path) as t:
        assert t._keep == 5 << 20
    monkeypatch.setattr(reader, "available_bytes", lambda: None)
    with open_trace(path) as t:
        assert t._keep == reader.KEEP_BYTES
