"""``simsched.trace.format``: the reference rule against an independent statement of it,
position keys and their hashes, and the tables of older versions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import TraceFormatError
from simsched.trace import format as fmt

LIMIT = 1 << 48


def _valid(addr: int, size: int) -> bool:
    return 1 <= size <= 127 and addr + size <= LIMIT


near = st.one_of(
    st.integers(0, (1 << 64) - 1),
    st.integers(LIMIT - 300, LIMIT + 300),
    st.integers(0, 300),
)


@given(addr=near, size=st.integers(0, 300))
def test_one_reference(addr, size):
    if _valid(addr, size):
        fmt.check_ref(addr, size, lambda i: "x")
    else:
        with pytest.raises(TraceFormatError, match=f"^x: invalid reference \\(address {addr:#x}"):
            fmt.check_ref(addr, size, lambda i: "x")


@given(refs=st.lists(st.tuples(near, st.integers(0, 255)), min_size=1, max_size=40))
def test_arrays_name_the_first_invalid_reference(refs):
    addr = np.array([a for a, _ in refs], np.uint64)
    size = np.array([s for _, s in refs], np.uint8)
    bad = [i for i, (a, s) in enumerate(refs) if not _valid(a, s)]
    if not bad:
        fmt.check_refs(addr, size, lambda i: f"ref {i}")
        return
    with pytest.raises(TraceFormatError, match=f"^ref {bad[0]}: invalid reference"):
        fmt.check_refs(addr, size, lambda i: f"ref {i}")


def test_the_rule_fits_the_memory_model():
    """Every job's address space (tag and colour above the virtual addresses) is
    accepted by the memory model."""
    from simsched.engine.job import MAX_JOBS, addr_offset
    from simsched.memory._kernels import ADDRESS_BITS

    assert fmt.ADDRESS_LIMIT == LIMIT
    top = max(addr_offset(j) for j in range(MAX_JOBS)) + LIMIT - 1
    assert top >> ADDRESS_BITS == 0


def _toc(length: str) -> bytes:
    """The table of contents of forge's trace with the first array's length written as
    ``length`` (JSON text)."""
    import json

    toc, pos = [], 0
    for name, (dtype, _) in fmt.TABLES.items():
        toc.append({"name": name, "dtype": dtype, "length": 1, "offset": pos})
        pos += 1
    head = json.dumps(toc).replace('"length": 1', f'"length": {length}', 1)
    return head.encode()


@pytest.mark.parametrize(
    ("section", "text", "message"),
    [
        # json.loads raised ValueError, RecursionError and int() OverflowError past the
        # decoders' except clauses: a traceback instead of one line naming the trace
        ("meta_text", b'{"x": ' + b"9" * 5000 + b"}", "meta.*an integer with too many digits"),
        ("meta_text", b"[" * 100_000 + b"]" * 100_000, "meta.*nested too deeply"),
        ("meta_text", b"\xff", "meta.*byte 0 is not UTF-8"),
        ("toc_text", b"[" * 100_000 + b"]" * 100_000, "table of contents.*nested too deeply"),
        ("toc_text", _toc("9" * 5000), "table of contents.*too many digits"),
        ("toc_text", _toc("Infinity"), "length inf, not integers"),
        ("toc_text", _toc("NaN"), "length nan, not integers"),
        ("toc_text", _toc("1.5"), "length 1.5, not integers"),
    ],
)
def test_json_sections_that_json_loads_chokes_on(tmp_path, section, text, message):
    from simsched.trace import TraceBuilder
    from tests.trace import forge

    good = tmp_path / "good.sst"
    with TraceBuilder(good) as b:
        b.refs(np.arange(4) * 64, 8, False, 1)
    forge.assert_refused(
        good, lambda parts: setattr(parts, section, text), message, tmp_path / "bad.sst"
    )


def _tree(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A random frame tree in the tables' order (each parent before its children)."""
    parent = np.full(n, -1, np.int64)
    spawn_index = np.zeros(n, np.int64)
    kids = np.zeros(n, np.int64)
    for f in range(1, n):
        p = int(rng.integers(0, f)) if rng.random() < 0.5 else f - 1  # bushy and deep
        parent[f], spawn_index[f] = p, kids[p]
        kids[p] += 1
    return parent, spawn_index


@pytest.mark.parametrize("seed", range(5))
def test_key_hashes_are_the_hashes_of_whole_keys(seed):
    parent, spawn_index = _tree(np.random.default_rng(seed), 300)
    keys = [fmt.position_key(parent, spawn_index, f) for f in range(300)]
    assert keys[0] == () and all(keys[f][:-1] == keys[parent[f]] for f in range(1, 300))
    assert fmt.key_hashes(parent, spawn_index).tolist() == [fmt.key_hash(k) for k in keys]


def test_version_2_tables_with_whole_keys_are_read_without_them():
    # version 2 stored every frame's whole key (the square of the depth for a deep
    # recursion); a version 3 reader drops them and derives the same keys
    import json
    from pathlib import Path

    from simsched.trace import open_trace, validate

    sample = Path(__file__).parents[2] / "traces" / "samples" / "heat-512-16-16.valgrind.sst"
    data = sample.read_bytes()
    h = fmt.unpack_header(data[: fmt.HEADER_SIZE], str(sample))
    assert h["version"] == 2
    off, length = h["tables"]
    section = data[off : off + length]
    raw = fmt.decompress(section, "tables")
    hlen = int(np.frombuffer(raw[:8], "<u8")[0])
    body = raw[8 + hlen :]
    arrays = {
        e["name"]: np.frombuffer(body, e["dtype"], e["length"], e["offset"])
        for e in json.loads(raw[8 : 8 + hlen])
    }
    ko, kv = arrays["frame_key_offsets"], arrays["frame_key_values"]
    stored = [tuple(kv[ko[f] : ko[f + 1]].tolist()) for f in range(len(ko) - 1)]
    assert max(map(len, stored)) >= 3
    with open_trace(sample) as t:
        assert [t.frames.key(f) for f in range(len(t.frames))] == stored
        assert validate(t)["ok"]
    with pytest.raises(TraceFormatError, match="unexpected array 'frame_key_offsets'"):
        fmt.decode_tables(section, "tables", version=3)


def _v2_section(change: dict | None = None) -> bytes:
    """A version 2 tables section, every array empty, with ``change`` made to the
    ``frame_key_values`` entry of its table of contents."""
    import json
    import struct

    entries = [
        {"name": name, "dtype": dtype, "length": 0, "offset": 0}
        for name, (dtype, _) in {**fmt.TABLES, **fmt.LEGACY_TABLES}.items()
    ]
    for e in entries:
        if e["name"] == "frame_key_values":
            e.update(change or {})
    head = json.dumps(entries).encode()
    return fmt.compressor().compress(struct.pack("<Q", len(head)) + head)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"length": 1 << 60}, "array 'frame_key_values' extends past the section"),
        ({"offset": -(10**12)}, "array 'frame_key_values' extends past the section"),
        ({"offset": "x"}, "array 'frame_key_values' has offset 'x'"),
        ({"length": 2.5}, "not integers"),
        ({"dtype": "<i8"}, "unexpected array 'frame_key_values' of type '<i8'"),
    ],
)
def test_version_2_whole_key_entries_are_checked_before_they_are_dropped(change, message):
    """A version 2 table of contents whose whole-key entry pointed anywhere, or was not
    even a number, was skipped unread: open and `trace validate` accepted the file."""
    assert set(fmt.decode_tables(_v2_section(), "tables", version=2)) == set(fmt.TABLES)
    with pytest.raises(TraceFormatError, match=f"^tables: .*{message}"):
        fmt.decode_tables(_v2_section(change), "tables", version=2)


@given(
    addrs=st.lists(
        st.one_of(
            st.integers(0, LIMIT - 128),
            st.integers(LIMIT - 200, LIMIT - 128),
            st.integers(0, 1 << 20),
        ),
        min_size=1,
        max_size=300,
    ),
    gaps=st.integers(0, 3),
)
def test_columns_survive_encoding_at_every_width(addrs, gaps):
    """Addresses far apart (8-byte deltas, decoded plane by plane) or near (4-byte ones),
    gaps of every width: what is decoded is what was encoded."""
    import zstandard

    n = len(addrs)
    addr = np.array(addrs, np.uint64)
    size = (np.arange(n) % 127 + 1).astype(np.uint8)
    write = np.arange(n) % 3 == 0
    gap = (np.arange(n, dtype=np.uint64) * [0, 1, 300, 70000][gaps] % (1 << 32)).astype(np.uint32)
    dep = np.arange(n) % 5 == 1
    sizew = size | (write.astype(np.uint8) << 7)
    frame, wa, wg, wd = fmt.encode_chunk(addr, sizew, gap, dep, zstandard.ZstdCompressor())
    row = np.zeros(1, fmt.INDEX_DTYPE)[0]
    row["n"], row["wa"], row["wg"], row["wd"] = n, wa, wg, wd
    got = fmt.decode_chunk(frame, row, "x")
    for col, want in (("addr", addr), ("size", size), ("write", write), ("gap", gap)):
        np.testing.assert_array_equal(getattr(got, col), want, err_msg=col)
    np.testing.assert_array_equal(got.dep, dep if wd else np.zeros(n, np.bool_))
