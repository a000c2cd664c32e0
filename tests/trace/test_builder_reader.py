"""Round trips through TraceBuilder and the reader, streaming, and DAG well-formedness."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError, TraceBuildError, TraceFormatError
from simsched.trace import (
    EDGE_CONT,
    EDGE_JOIN,
    EDGE_SPAWN,
    TraceBuilder,
    copy,
    open_trace,
    span,
    summary,
    validate,
)
from simsched.trace.builder import NO_CALLEE
from tests.trace import forge


def _tree(b: TraceBuilder, depth: int, fanout: int, base: int) -> None:
    """A fork/join tree: each frame touches 10 words, spawns ``fanout`` children, syncs."""
    b.refs(base + 8 * np.arange(10), 8, np.arange(10) % 3 == 0, 2)
    if depth:
        for i in range(fanout):
            b.spawn()
            _tree(b, depth - 1, fanout, base + (i + 1) * 4096 * (depth + 1))
            b.ret()
        b.sync()
        b.instr(5)


def test_round_trip_counts_and_refs(tmp_path):
    p = tmp_path / "t.sst"
    rng = np.random.default_rng(1)
    addrs = rng.integers(0, 1 << 47, 10_000, dtype=np.uint64)
    sizes = rng.integers(1, 65, 10_000)
    writes = rng.random(10_000) < 0.3
    gaps = rng.integers(0, 100_000, 10_000)
    with TraceBuilder(p, program="rt", args=["a", "b"], chunk_refs=777, params={"x": 1}) as b:
        b.refs(addrs[:5000], sizes[:5000], writes[:5000], gaps[:5000])
        b.spawn()
        b.refs(addrs[5000:], sizes[5000:], writes[5000:], gaps[5000:])
        b.ret()
    t = open_trace(p)
    assert t.header.n_refs == 10_000
    assert t.header.n_chunks == -(-10_000 // 777)
    assert t.header.args == ("a", "b") and t.header.params == {"x": 1}
    got = t.refs(0, 10_000)
    np.testing.assert_array_equal(got.addr, addrs)
    np.testing.assert_array_equal(got.size, sizes)
    np.testing.assert_array_equal(got.write, writes)
    np.testing.assert_array_equal(got.gap, gaps)
    # strands: main before spawn, child, main continuation, (no post-sync: no refs after)
    assert t.header.n_strands == 4
    assert t.strands.ref_start.tolist() == [0, 5000, 10_000, 10_000, 10_000]
    assert t.header.n_instructions == 10_000 + int(gaps.sum())
    assert validate(t)["ok"]


def test_streaming_many_chunks_matches_random_access(tmp_path):
    p = tmp_path / "s.sst"
    n = 200_000
    a = np.arange(n, dtype=np.uint64) * 8 + 0x10000
    with TraceBuilder(p, chunk_refs=1000) as b:
        for k in range(0, n, 5000):
            b.refs(a[k : k + 5000], 8, False, 1)
    t = open_trace(p, cache_chunks=2)
    assert t.header.n_chunks == 200
    seen = 0
    for c in t.iter_chunks():
        assert c.start == seen
        np.testing.assert_array_equal(c.addr, a[seen : seen + len(c)])
        seen += len(c)
    assert seen == n
    r = t.refs(12_345, 150_001)
    np.testing.assert_array_equal(r.addr, a[12_345:150_001])


def test_dag_edges_and_frames(tmp_path):
    p = tmp_path / "d.sst"
    with TraceBuilder(p) as b:
        _tree(b, 2, 3, 0x100000)
    t = open_trace(p)
    # 1 + 3 + 9 frames; a frame with children has pre-spawn strands, continuations and a post-sync
    assert t.header.n_frames == 13
    internal = 1 + 3
    leaves = 9
    # internal frame: 1 first strand + 3 continuations + 1 post-sync = 5 strands; leaf: 1
    assert t.header.n_strands == internal * 5 + leaves
    kinds = np.bincount(t.edges.kind, minlength=3)
    assert kinds[EDGE_SPAWN] == 12
    assert kinds[EDGE_JOIN] == 12
    assert kinds[EDGE_CONT] == 12 + internal
    assert np.all(t.edges.src < t.edges.dst)
    f = t.frames
    assert f.level.tolist()[:2] == [0, 1] and f.level.max() == 2
    assert f.branching[1:].tolist() == [3] * 12
    assert sorted(f.key(i) for i in range(1, 13))[:4] == [(0,), (0, 0), (0, 1), (0, 2)]
    s = summary(t)
    assert s["work"] == t.header.n_instructions
    assert 0 < s["span"] < s["work"]
    assert span(t) == s["span"]


def test_span_of_chain_and_fork(tmp_path):
    p = tmp_path / "w.sst"
    with TraceBuilder(p) as b:
        b.instr(10)
        b.spawn()
        b.instr(100)
        b.ret()
        b.instr(30)
        b.sync()
        b.instr(1)
    t = open_trace(p)
    # strands: main(10) -> child(100) / cont(30) -> post-sync(1); span = 10 + 100 + 1
    assert t.strands.instr.tolist() == [10, 100, 30, 1]
    assert span(t) == 111


def test_events_copy_is_bit_identical(tmp_path):
    p, q = tmp_path / "a.sst", tmp_path / "b.sst"
    with TraceBuilder(p, program="x", chunk_refs=50) as b:
        b.iteration(0)
        _tree(b, 2, 2, 0x200000)
        b.iteration(1)
        _tree(b, 2, 2, 0x200000)
    t = open_trace(p)
    with TraceBuilder(q, program="x", chunk_refs=50) as b2:
        copy(t, b2)
    assert open_trace(q).header.digest == t.header.digest
    keys0 = {t.frames.key(f) for f in range(1, t.header.n_frames) if t.frames.iteration[f] == 0}
    keys1 = {t.frames.key(f) for f in range(1, t.header.n_frames) if t.frames.iteration[f] == 1}
    assert keys0 == keys1 and (0, 1) in keys0


def test_roi_keeps_only_marked_references(tmp_path):
    p = tmp_path / "r.sst"
    with TraceBuilder(p, roi=True) as b:
        b.ref(1, 8, False, 5)
        b.roi_begin()
        b.ref(2, 8, False, 3)
        b.roi_end()
        b.ref(3, 8, False)
    t = open_trace(p)
    assert t.header.n_refs == 1 and t.header.roi
    assert t.refs(0, 1).addr.tolist() == [2]
    assert t.header.n_instructions == 4


@pytest.mark.parametrize(
    "action, message",
    [
        (lambda b: b.ret(), "return without a matching spawn"),
        (lambda b: b.spawn(), "never returned"),
        (lambda b: b.refs([1, 2], 8, False, [-1, 0]), "negative instruction gap"),
        (lambda b: b.roi_begin(), "roi=True"),
    ],
)
def test_builder_rejects_malformed_programs(tmp_path, action, message):
    p = tmp_path / "bad.sst"
    with pytest.raises(TraceBuildError, match=message):
        with TraceBuilder(p) as b:
            action(b)
    assert not p.exists()
    assert list(tmp_path.iterdir()) == []  # the temporary file is removed too


LIMIT = 1 << 48


@pytest.mark.parametrize(
    "action, where, reason",
    [
        (lambda b: b.ref(0, 0, False), "chunk 0, reference 0", "size 0\\): its size"),
        (lambda b: b.ref(0, 200, False), "chunk 0, reference 0", "size 200\\): its size"),
        (lambda b: b.ref(LIMIT, 1, True), "chunk 0, reference 0", "not below 2\\^48"),
        (lambda b: b.ref(LIMIT - 4, 8, False), "chunk 0, reference 0", "runs past 2\\^48"),
        (lambda b: b.ref(-64, 8, False), "chunk 0, reference 0", "not below 2\\^48"),
        (lambda b: b.ref(1 << 70, 8, False), "chunk 0, reference 0", "not below 2\\^48"),
        # bulk: chunks of 4 references, the bad one is the 6th of the trace
        (
            lambda b: (
                b.refs([8, 16], 8, False),
                b.refs(np.arange(5) * 64 + LIMIT - 250, 64, True),
            ),
            "chunk 1, reference 1 \\(reference 5 of",
            "runs past 2\\^48",
        ),
        (
            lambda b: b.refs([8, 16, 24], np.array([8, 0, 8]), False),
            "chunk 0, reference 1",
            "size 0\\)",
        ),
        (lambda b: b.refs([8, -8], 8, False), "chunk 0, reference 1", "not below"),
    ],
)
def test_builder_rejects_invalid_references(tmp_path, action, where, reason):
    p = tmp_path / "bad.sst"
    with pytest.raises(TraceFormatError, match=f"bad.sst: {where}.*invalid reference.*{reason}"):
        with TraceBuilder(p, chunk_refs=4) as b:
            action(b)
    assert list(tmp_path.iterdir()) == []


def test_builder_accepts_the_last_valid_bytes(tmp_path):
    p = tmp_path / "edge.sst"
    with TraceBuilder(p) as b:
        b.ref(LIMIT - 8, 8, False)
        b.refs(np.array([LIMIT - 1, 0], np.uint64), np.array([1, 127]), True)
    t = open_trace(p)
    assert validate(t)["ok"] and t.refs(0, 3).addr.tolist() == [LIMIT - 8, LIMIT - 1, 0]


@given(st.lists(st.sampled_from(["spawn", "ret", "sync", "ref"]), max_size=60))
def test_random_programs_give_valid_dags(tmp_path_factory, ops):
    p = tmp_path_factory.mktemp("h") / "h.sst"
    with TraceBuilder(p, chunk_refs=7) as b:
        for i, op in enumerate(ops):
            if op == "spawn":
                b.spawn()
            elif op == "ret" and b.depth > 1:
                b.ret()
            elif op == "sync":
                b.sync()
            else:
                b.ref(64 * i, 8, i % 2 == 0, i)
        while b.depth > 1:
            b.ret()
    t = open_trace(p)
    assert validate(t)["ok"]
    assert t.header.n_frames == 1 + ops.count("spawn")
    assert int(t.pred_count[0]) == 0 and np.all(t.pred_count[1:] >= 1)


def test_builder_output_follows_the_file_rules(tmp_path):
    """A symlink is written through, a new file gets the umask's mode, nothing is left over."""
    import os
    import stat

    real = tmp_path / "real.sst"
    real.write_bytes(b"old")
    link = tmp_path / "link.sst"
    link.symlink_to(real)
    with TraceBuilder(link) as b:
        _tree(b, 1, 2, 0)
    assert link.is_symlink() and validate(str(link))["ok"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.sst", "real.sst"]

    old = os.umask(0o027)
    try:
        with TraceBuilder(tmp_path / "new.sst") as b:
            _tree(b, 1, 2, 0)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.sst").stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_refs": 0}, "chunk_refs=0: must be between 1 and 1048576"),
        ({"chunk_refs": None}, "chunk_refs=None: expected an integer"),
        (
            {"chunk_refs": 2**70},
            r"chunk_refs=1180591620717411303424: must be between 1 and 1048576 \(2\^20\)",
        ),
        ({"line_size_hint": 3}, "line_size_hint=3 must be a power of 2 up to 2\\^20"),
        ({"line_size_hint": float("nan")}, "line_size_hint=nan: expected an integer"),
        ({"stack": 5}, "stack=5: expected a pair"),
        ({"progress": 5}, "progress=5: expected a function or None"),
    ],
)
def test_builder_refuses_bad_options_before_writing(tmp_path, kwargs, message):
    """Before: ValueError, TypeError or OverflowError from inside (chunk_refs=0, None,
    2**70; stack=5), a trace that validate refuses (line_size_hint=3), or a TypeError
    from progress=5 only once the first chunk was written."""
    with pytest.raises(ConfigError, match=f"^{message}"):
        TraceBuilder(tmp_path / "t.sst", **kwargs)
    with pytest.raises(ConfigError, match="^path=None: expected a path"):
        TraceBuilder(None)
    assert list(tmp_path.iterdir()) == []


def test_open_trace_refuses_bad_paths_and_cache_sizes(tmp_path):
    """Before: TypeError from pathlib for None, and any cache_chunks (None: TypeError;
    -1 or NaN: silently one chunk)."""
    path = tmp_path / "t.sst"
    b = TraceBuilder(path)
    b.ref(64, 8, False)
    b.close()
    with pytest.raises(ConfigError, match="^trace=None: expected a path"):
        open_trace(None)
    with pytest.raises(ConfigError, match="^cache_chunks=-1: must be at least 1"):
        open_trace(path, cache_chunks=-1)
    with pytest.raises(ConfigError, match="^cache_chunks=None: expected an integer"):
        open_trace(path, cache_chunks=None)
    open_trace(path, cache_chunks=np.int64(2)).close()


def test_deep_recursion_costs_its_depth_not_its_square(tmp_path):
    # every frame stored its whole position key: a chain n deep held n^2 / 2 key values
    # (a list walk 20 000 deep took 77 s and 12.5 GB to import); the tables now hold a
    # fixed number of values per frame and the keys are walked up from the parents
    from simsched.trace import format as fmt

    n = 3000
    p = tmp_path / "deep.sst"
    with TraceBuilder(p) as b:
        for d in range(n):
            b.ref(0x1000 + 64 * d, 8, False)
            b.spawn()
        for _ in range(n):
            b.ret()
    tables = forge.read(p).tables
    assert sum(a.shape[0] for a in tables.values()) < 50 * (n + 1)  # was n^2 / 2 more
    with open_trace(p) as t:
        assert t.frames.key(n) == (0,) * n and t.frames.key(1) == (0,)
        assert int(t.frames.key_hash[n]) == fmt.key_hash((0,) * n)
        assert validate(t)["ok"]


def test_a_trace_written_by_two_commits_is_the_same_file(tmp_path, monkeypatch):
    """The meta section named the writer's commit (``simsched 0.1.1.dev568+gb76f...``), so
    the same trace made by two commits had other bytes and another digest."""
    from simsched.trace import builder
    from simsched.workloads import generate

    files = []
    for v in ("0.1.1.dev568+gb76f7ea9d", "0.1.1.dev570+g0123456789.d20261130"):
        monkeypatch.setattr(builder, "version", lambda v=v: v)
        files.append(tmp_path / f"{len(files)}.sst")
        generate("fib", files[-1], n=8)
    assert files[0].read_bytes() == files[1].read_bytes()
    assert _writer(files[0]) == "simsched 0.1.1 (development)"
    monkeypatch.setattr(builder, "version", lambda: "0.1.1")
    generate("fib", tmp_path / "r.sst", n=8)
    assert _writer(tmp_path / "r.sst") == "simsched 0.1.1"
    with open_trace(tmp_path / "r.sst") as t, open_trace(files[0]) as dev:
        assert t.header.digest != dev.header.digest


def _writer(path) -> str:
    from simsched.trace import format as fmt

    data = path.read_bytes()
    off, n = fmt.unpack_header(data[: fmt.HEADER_SIZE], str(path))["meta"]
    return fmt.decode_json(data[off : off + n], "meta")["writer"]


def test_copy_of_a_region_of_interest_trace_keeps_its_references(tmp_path):
    """A trace built with roi=True holds only its region's references; copied into a
    builder made like it (roi=True), every one of them is kept and the digest is the same
    (the copy dropped them all: the builder starts outside the region)."""
    p, q = tmp_path / "a.sst", tmp_path / "b.sst"
    with TraceBuilder(p, program="x", roi=True) as b:
        b.ref(0x1000, 8, False)  # before the region: not kept
        b.roi_begin()
        b.spawn()
        b.refs(0x2000 + 8 * np.arange(10), 8, True, 1)
        b.ret()
        b.sync()
        b.roi_end()
        b.ref(0x3000, 8, False)  # after it: not kept
    t = open_trace(p)
    assert t.header.roi and t.header.n_refs == 10
    with TraceBuilder(q, program="x", roi=True) as b2:
        copy(t, b2)
    c = open_trace(q)
    assert c.header.n_refs == 10
    assert c.header.digest == t.header.digest


def test_builder_refuses_arguments_given_as_one_string_and_a_flag_given_as_text(tmp_path):
    """args="x y" was stored as ('x', ' ', 'y'), and gaps_exact="no" as True."""
    from simsched.trace import TraceBuilder

    with pytest.raises(ConfigError, match="args='x y': expected a list"):
        TraceBuilder(tmp_path / "a.sst", args="x y")
    with pytest.raises(ConfigError, match="gaps_exact"):
        TraceBuilder(tmp_path / "b.sst", gaps_exact="no")
    # a program's name of two lines reached the comparison's titles and the results' CSV
    with pytest.raises(ConfigError, match=r"^program='a\\nb': expected one line of UTF-8 text"):
        TraceBuilder(tmp_path / "c.sst", program="a\nb")
    # a byte that is not UTF-8 (what os.fsdecode makes of b"a\xff") failed in the results'
    # Parquet table, with a traceback, in every run of the trace
    with pytest.raises(ConfigError, match=r"^program='a\\udcff': expected one line of UTF-8"):
        TraceBuilder(tmp_path / "d.sst", program="a\udcff")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_file_a_strand_out_of_range_and_a_closed_trace_are_one_line(tmp_path):
    """open_trace of a missing file was a FileNotFoundError, strand_refs of a strand out of
    range numpy's IndexError (-1 read the last), and a closed Trace's chunk "seek of closed
    file"."""
    from simsched.trace import open_trace
    from simsched.workloads import generate

    with pytest.raises(ConfigError, match=r"none\.sst: no such trace file$"):
        open_trace(tmp_path / "none.sst")
    p = tmp_path / "fib.sst"
    generate("fib", p, n=8)
    t = open_trace(p)
    n = t.header.n_strands
    for s in (n, -1, True, 1.5):
        with pytest.raises(ConfigError, match=rf"^strand .*: the trace has strands 0 to {n - 1}$"):
            t.strand_refs(s)
    assert len(t.strand_refs(n - 1).addr) >= 0
    t.close()
    with pytest.raises(ConfigError, match=r"this Trace is closed; open it again"):
        t.chunk(0)


def test_builder_and_importer_refuse_header_fields_they_cannot_hold(tmp_path):
    """roi="no" was True (every reference dropped), a backend of two lines or not text was
    stored, and import_raw blamed the raw stream for its caller's arguments ("args='a b'"
    was stored letter by letter)."""
    from simsched.trace import TraceBuilder
    from simsched.trace.raw import import_raw

    for kw, said in (
        ({"roi": "no"}, r"^roi='no': expected True or False"),
        ({"backend": 5}, r"^backend=5: expected one line of UTF-8 text"),
        ({"backend": "a\nb"}, r"^backend='a\\nb': expected one line of UTF-8 text"),
    ):
        with pytest.raises(ConfigError, match=said):
            TraceBuilder(tmp_path / "t.sst", **kw)
    raw = tmp_path / "x.raw"
    raw.write_bytes(b"")
    for kw, said in (
        ({"args": "a b"}, r"^args='a b': expected a list"),
        ({"program": 5}, r"^program=5: expected one line"),
        ({"line_size_hint": 48}, r"^line_size_hint=48 must be a power of 2"),
        ({"warn": 5}, r"^warn"),
    ):
        with pytest.raises(ConfigError, match=said):
            import_raw(raw, tmp_path / "t.sst", **kw)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["x.raw"]


def test_chunk_positions_out_of_range_are_refused(tmp_path):
    """iter_chunks(first=-1) yielded the last chunk and then every chunk again; a reference
    index before or past the trace's was placed in chunk -1 or the last."""
    from simsched.workloads import generate

    p = tmp_path / "fib.sst"
    generate("fib", p, n=8)
    with open_trace(p) as t:
        n, refs = len(t.index), t.header.n_refs
        assert list(t.iter_chunks(first=n)) == []
        for first in (-1, n + 1, 1.5, True):
            with pytest.raises(ConfigError, match="expected a chunk index"):
                list(t.iter_chunks(first=first))
        assert t.chunk_of_ref(refs - 1) == n - 1
        for i in (-5, refs):
            with pytest.raises(ConfigError, match=f"the trace has {refs} references"):
                t.chunk_of_ref(i)


def test_a_closed_trace_is_refused_by_name(tmp_path):
    """run, compare and the analyses failed deep inside with "seek of closed file"."""
    import simsched
    from simsched.trace import summary
    from simsched.workloads import generate

    p = tmp_path / "fib.sst"
    generate("fib", p, n=8)
    t = open_trace(p)
    t.close()
    assert t.closed
    for call in (
        lambda: simsched.run(t, "itrs-scaling-2"),
        lambda: simsched.compare(t, "itrs-scaling-2", ["ws"]),
        lambda: summary(t),
    ):
        with pytest.raises(ConfigError, match="this Trace is closed; open it again"):
            call()


def test_what_is_neither_a_path_nor_a_trace_is_refused_naming_both():
    """Every function taking a trace takes a path or an open Trace; the message said only
    "expected a path" where the profiler or the analyses were given something else."""
    import simsched
    from simsched.baseline import baseline_makespan
    from simsched.machine import load_machine
    from simsched.profile import profile_trace
    from simsched.trace import summary

    for call in (
        lambda: simsched.run(42, "itrs-scaling-2"),
        lambda: baseline_makespan(b"t.sst", load_machine("itrs-scaling-2")),
        lambda: summary(["t.sst"]),
        lambda: profile_trace(3.5),
    ):
        with pytest.raises(ConfigError, match=r"^trace=.*: expected a path or an open Trace$"):
            call()


def test_a_read_error_names_the_trace(tmp_path, monkeypatch):
    """A failed read carries no file name, and the command line took such an error for
    one of standard output's ("standard output: Input/output error" for /proc/self/mem)."""
    import errno

    path = tmp_path / "t.sst"
    with TraceBuilder(path) as b:
        b.ref(0x1000, 8, False)
    t = open_trace(path)

    class Failing:
        closed = False

        def seek(self, off):
            pass

        def read(self, n):
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(t, "_f", Failing())
    with pytest.raises(OSError) as info:
        t._read_at(0, 8)
    assert info.value.filename == str(path)


def test_chunk_and_reference_ranges_out_of_range_are_refused(tmp_path):
    """chunk(n) and load_chunk(n) failed with numpy's IndexError and chunk(-1) read the
    last chunk; refs(5, 2) and refs(0, n + 1) raised a bare IndexError."""
    from simsched.workloads import generate

    p = tmp_path / "fib.sst"
    generate("fib", p, n=8)
    with open_trace(p) as t:
        n, refs = len(t.index), t.header.n_refs
        assert t.chunk(np.int64(n - 1)).start == t.load_chunk(n - 1).start
        for k in (-1, n):
            for call in (t.chunk, t.load_chunk):
                with pytest.raises(ConfigError, match=f"^k={k}: must be between 0 and {n - 1}"):
                    call(k)
        with pytest.raises(ConfigError, match="^k=1.5: expected an integer"):
            t.chunk(1.5)
        assert len(t.refs(np.int64(2), 5)) == 3 and len(t.refs(4, 4)) == 0
        with pytest.raises(ConfigError, match="^stop=2: below start=5"):
            t.refs(5, 2)
        with pytest.raises(ConfigError, match=f"^stop={refs + 1}: must be between 0 and {refs}"):
            t.refs(0, refs + 1)
        with pytest.raises(ConfigError, match=f"^start=-1: must be between 0 and {refs}"):
            t.refs(-1, 3)
        with pytest.raises(ConfigError, match="^start=None: expected an integer"):
            t.refs(None, 3)


def _refused(tmp_path, action, message):
    """``action`` on a new builder raises a ConfigError starting with ``message``, and no
    trace is left behind."""
    p = tmp_path / "t.sst"
    with pytest.raises(ConfigError, match=f"^{message}"):
        with TraceBuilder(p) as b:
            action(b)
    assert not p.exists()


@pytest.mark.parametrize(
    ("action", "message"),
    [
        # numpy's "operands could not be broadcast together with remapped shapes"
        (lambda b: b.refs([0, 8, 16], [8, 8], False), "sizes: 2 values for 3 addresses"),
        (lambda b: b.refs([8], [8, 8, 8], False), "sizes: 3 values for 1 address;"),
        (lambda b: b.refs([0, 8, 16], 8, [True, False]), "writes: 2 values for 3 addresses"),
        (lambda b: b.refs([0, 8, 16], 8, False, [1, 2]), "gaps: 2 values for 3 addresses"),
        (lambda b: b.refs([0, 8], 8, False, np.zeros((2, 1), int)), r"gaps: an array of shape"),
        (lambda b: b.refs([0, 8], 8, False, 0, [True] * 3), "deps: 3 values for 2 addresses"),
        # a numba typing error from the reference rule's kernel
        (
            lambda b: b.refs(8 * np.arange(6).reshape(2, 3), 8, False),
            r"addrs: an array of shape \(2, 3\); expected one address or a 1-D array",
        ),
    ],
)
def test_builder_refs_refuses_arrays_of_other_lengths_or_shapes(tmp_path, action, message):
    _refused(tmp_path, action, message)


def test_builder_refs_takes_one_element_arrays_as_one_value(tmp_path):
    """numpy broadcasts an array of one element, and refs() took [8] as every size before
    it checked lengths; the check refused it ("1 value for 3 addresses")."""
    p, q = tmp_path / "a.sst", tmp_path / "b.sst"
    with TraceBuilder(p) as b:
        b.refs([0, 8, 16], [8], [True], [1], [False])
    with TraceBuilder(q) as b:
        b.refs([0, 8, 16], 8, True, 1, False)
    with open_trace(p) as a, open_trace(q) as c:
        assert a.header.digest == c.header.digest and a.header.n_refs == 3


def test_builder_refuses_more_instructions_than_a_trace_may_have(tmp_path):
    """instr(2**70) was accepted, and the next reference failed on its instruction gap:
    the limit is the 2^50 instructions of a trace."""
    from simsched.trace import format as fmt

    p = tmp_path / "t.sst"
    for n in (2**70, fmt.MAX_INSTRUCTIONS + 1):
        with pytest.raises(ConfigError, match=f"^n={n}: more than the 2\\^50 instructions"):
            with TraceBuilder(p) as b:
                b.instr(n)
                b.ref(64, 8, False)
    assert not p.exists()
    with TraceBuilder(p) as b:  # up to the limit, in a strand that ends without a reference
        b.instr(fmt.MAX_INSTRUCTIONS)
    with open_trace(p) as t:
        assert t.header.n_instructions == fmt.MAX_INSTRUCTIONS


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda b: b.ref(64, 8, "no"), "is_write='no': expected True or False"),
        (lambda b: b.ref(64, 8, 1), "is_write=1: expected True or False"),
        (lambda b: b.ref(64, 8, None), "is_write=None: expected True or False"),
        (lambda b: b.ref(64, 8, False, dep="yes"), "dep='yes': expected True or False"),
        (lambda b: b.refs([64], 8, "no"), "writes: expected True, False or an array of them"),
        (lambda b: b.refs([64, 72], 8, [0, 2]), "writes: .* got an array of int64"),
        (lambda b: b.refs([64], 8, False, 0, ["no"]), "deps: expected True, False or an array"),
    ],
)
def test_builder_write_and_dependence_flags_must_be_booleans(tmp_path, action, message):
    """ref(is_write="no") recorded a write, its truth being taken; refs() made True of
    "no" and a write of 2."""
    _refused(tmp_path, action, message)


def test_builder_takes_numpy_bools_as_flags(tmp_path):
    p, q = tmp_path / "a.sst", tmp_path / "b.sst"
    with TraceBuilder(p) as b:
        b.ref(64, 8, np.True_, dep=np.False_)
        b.refs([64, 128], 8, np.array([True, False]), 0, [False, True])
    with TraceBuilder(q) as b:
        b.ref(64, 8, True)
        b.refs([64, 128], 8, [True, False], 0, np.array([False, True]))
    with open_trace(p) as a, open_trace(q) as c:
        assert a.header.digest == c.header.digest
        assert a.refs(0, 3).write.tolist() == [True, True, False]


def test_builder_params_must_be_a_mapping(tmp_path):
    """params=[1] was stored in the header as it was; params="" as {} (its truth)."""
    for bad in ([1], "x", ""):
        with pytest.raises(ConfigError, match="^params=.*: expected a mapping"):
            TraceBuilder(tmp_path / "t.sst", params=bad)
    assert list(tmp_path.iterdir()) == []


def test_builder_params_must_be_json_and_numpy_values_are_numbers(tmp_path):
    """An object in params failed with a TypeError in close(), after every reference was
    written; numpy scalars were refused there too."""
    with pytest.raises(ConfigError, match="^params: object is not JSON serialisable"):
        TraceBuilder(tmp_path / "t.sst", params={"a": object()})
    assert list(tmp_path.iterdir()) == []
    b = TraceBuilder(tmp_path / "t.sst", params={"n": np.int64(5), "x": np.float32(0.5)})
    b.ref(64, 8, False)
    made = b.close()
    with open_trace(tmp_path / "t.sst") as t:
        assert t.header.params == made.params == {"n": 5, "x": 0.5}


def _frames_of(tmp_path, name, steps):
    p = tmp_path / f"{name}.sst"
    with TraceBuilder(p) as b:
        steps(b)
    with open_trace(p) as t:
        return t.frames.parent.tolist()


def _spawned_plain_function_calls_twice(b):
    b.spawn(callee=5)  # a plain function: no call() of its own
    for _ in range(2):
        b.call(fn=6)
        b.spawn()
        b.ret()
        b.call_ret()
    b.ret()
    b.sync()


def _spawn_with_a_call_in_its_arguments(b):
    b.spawn(callee=5)
    b.call(fn=6)  # the argument's call comes first: a child frame
    b.call_ret()
    b.call(fn=5)  # the spawned call itself: the frame the spawn opened
    b.spawn()
    b.ret()
    b.call_ret()
    b.ret()
    b.sync()


def _unknown_callee(callee, fn):
    def steps(b):
        b.spawn(callee=callee)
        b.call(fn=fn)  # right after the spawn: merged when either side is not known
        b.spawn()
        b.ret()
        b.call_ret()
        b.ret()
        b.sync()

    return steps


@pytest.mark.parametrize(
    "steps, parents",
    [
        # both calls are child frames of the spawned one (the first was merged into it)
        (_spawned_plain_function_calls_twice, [-1, 0, 1, 2, 1, 4]),
        (_spawn_with_a_call_in_its_arguments, [-1, 0, 1, 1]),
        (_unknown_callee(0, 6), [-1, 0, 1]),
        (_unknown_callee(5, 0), [-1, 0, 1]),
        (_unknown_callee(NO_CALLEE, 6), [-1, 0, 1, 2]),  # a cilk_for's half calls nothing
    ],
)
def test_a_call_is_merged_into_a_spawned_frame_only_if_it_is_the_spawned_call(
    tmp_path, steps, parents
):
    assert _frames_of(tmp_path, steps.__name__, steps) == parents


@pytest.mark.parametrize("bad", [-1, True, 1.5, 1 << 64, "5"])
def test_spawn_and_call_refuse_a_function_that_is_no_address(tmp_path, bad):
    with pytest.raises(TraceBuildError, match=r"spawn callee .* is not a function identifier"):
        with TraceBuilder(tmp_path / "a.sst") as b:
            b.spawn(callee=bad)
    with pytest.raises(TraceBuildError, match=r"call function .* is not a function identifier"):
        with TraceBuilder(tmp_path / "b.sst") as b:
            b.call(fn=bad)
