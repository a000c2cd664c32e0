"""The raw capture stream: the Python mirror of simsched_raw.h and the importer."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
import zstandard

from simsched.errors import TraceFormatError
from simsched.trace import open_trace, validate
from simsched.trace import raw as R
from simsched.trace import raw_stream as RS
from tests.capture.rawread import encode_v2

HEADER = Path(__file__).resolve().parents[2] / "capture" / "simsched_raw.h"


def _defines() -> dict[str, int]:
    text = HEADER.read_text()
    return {
        m.group(1): int(m.group(2).rstrip("uUlL"), 0)
        for m in re.finditer(r"#define\s+(SS_\w+)\s+(0x[0-9a-fA-F]+\w*|\d+\w*)", text)
    }


def test_python_mirror_matches_c_header():
    d = _defines()
    assert d["SS_RAW_MAGIC"] == R.RAW_MAGIC
    assert d["SS_RAW_VERSION"] == R.RAW_VERSION
    assert d["SS_RANGE_PIECE"] == R.RANGE_PIECE
    for name in ("HEADER", "REF", "RANGE", "GAP", "MARKER"):
        assert d[f"SS_REC_{name}"] == getattr(R, f"REC_{name}")
    for name in ("SPAWN", "SPAWN_END", "SYNC", "ITER", "ROI_BEGIN", "ROI_END", "END", "STACK"):
        assert d[f"SS_M_{name}"] == getattr(R, f"M_{name}")
    # field order and widths of struct ss_raw_rec
    body = re.search(r"typedef struct ss_raw_rec \{(.*?)\}", HEADER.read_text(), re.S).group(1)
    fields = re.findall(r"uint(\d+)_t\s+(\w+);", body)
    assert [(n, int(w) // 8) for w, n in fields] == [
        (n, R.RAW_DTYPE[n].itemsize) for n in R.RAW_DTYPE.names
    ]
    assert R.RAW_DTYPE.str == "|V16"
    # version 2: the block constants and struct ss_raw_block
    assert d["SS_RAW_VERSION_BLOCKS"] == R.RAW_VERSION_BLOCKS
    for name in ("MAGIC", "MAX_RECS", "SLOTS", "ESCAPE", "WIDE_GAP"):
        assert d[f"SS_BLOCK_{name}"] == getattr(R, f"BLOCK_{name}")
    assert R.BLOCK_MAGIC.to_bytes(4, "little") == b"SSB2"
    body = re.search(r"typedef struct ss_raw_block \{(.*?)\}", HEADER.read_text(), re.S).group(1)
    fields = re.findall(r"uint(\d+)_t\s+(\w+);", body)
    assert [(n, int(w) // 8) for w, n in fields] == [
        (n, R.BLOCK_DTYPE[n].itemsize) for n in R.BLOCK_DTYPE.names
    ]


def rec(kind, a=0, b=0, c=0, flags=0):
    return (a, b, c, kind, flags)


def header(backend=4, exact=1):
    return rec(R.REC_HEADER, R.RAW_MAGIC, R.RAW_VERSION, backend, exact)


def write(path: Path, records, compress=False) -> Path:
    data = np.array(records, dtype=R.RAW_DTYPE).tobytes()
    if compress:
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def fib_records(n: int) -> list:
    out = []

    def fib(k):
        out.append(rec(R.REC_REF, 0x7000 + k * 8, 3, 8, 0))
        if k < 2:
            return
        out.append(rec(R.REC_MARKER, c=R.M_SPAWN))
        fib(k - 1)
        out.append(rec(R.REC_MARKER, c=R.M_SPAWN_END))
        out.append(rec(R.REC_MARKER, c=R.M_SPAWN))
        fib(k - 2)
        out.append(rec(R.REC_MARKER, c=R.M_SPAWN_END))
        out.append(rec(R.REC_MARKER, c=R.M_SYNC))
        out.append(rec(R.REC_GAP, b=4))

    fib(n)
    return [header(), *out, rec(R.REC_MARKER, c=R.M_END)]


@pytest.mark.parametrize("compress", [False, True])
def test_import_fib_dag(tmp_path, compress):
    raw = write(tmp_path / "fib.raw", fib_records(8), compress)
    h = R.import_raw(raw, tmp_path / "fib.sst", program="fib")
    t = open_trace(tmp_path / "fib.sst")
    assert validate(t)["ok"]
    # frames: calls of fib(8) = 2*fib(9)-1 = 67; strands: leaves 1, internal 4 (pre, cont, cont, post)
    calls = 67
    leaves = 34
    assert h.n_frames == calls
    assert h.n_strands == leaves + 4 * (calls - leaves)
    assert h.backend == "test" and h.gaps_exact
    assert h.n_refs == calls
    assert h.n_instructions == calls * 4 + 4 * (calls - leaves)


def test_ranges_split_at_piece_boundaries(tmp_path):
    recs = [
        header(),
        rec(R.REC_RANGE, 0x1030, 200, 0, 1),
        rec(R.REC_REF, 0x5000, 7, 256, 0),
        rec(R.REC_MARKER, c=R.M_END),
    ]
    R.import_raw(write(tmp_path / "r.raw", recs), tmp_path / "r.sst")
    t = open_trace(tmp_path / "r.sst")
    c = t.refs(0, t.header.n_refs)
    # 0x1030 + 200 bytes ends at 0x10F8
    assert c.addr.tolist() == [0x1030, 0x1040, 0x1080, 0x10C0, 0x5000, 0x5040, 0x5080, 0x50C0]
    assert c.size.tolist() == [16, 64, 64, 56, 64, 64, 64, 64]
    assert c.write.tolist() == [True] * 4 + [False] * 4
    assert c.gap.tolist() == [0, 0, 0, 0, 7, 0, 0, 0]


def _cilk(tmp_path, markers):
    recs = [header()]
    for i, m in enumerate(markers):
        recs.append(rec(R.REC_REF, 0x1000 + 64 * i, 1, 8))
        recs.append(rec(R.REC_MARKER, c=m))
    recs.append(rec(R.REC_MARKER, c=R.M_END))
    out = tmp_path / "c.sst"
    R.import_raw(write(tmp_path / "c.raw", recs), out)
    validate(out)
    return open_trace(out)


def test_cilk_call_of_a_spawned_function_is_merged_into_the_spawned_frame(tmp_path):
    # spawn f; f: CALL ... CALL_END; SPAWN_END; sync -- the same DAG as without CALL
    with _cilk(tmp_path, [R.M_SPAWN, R.M_CALL, R.M_CALL_END, R.M_SPAWN_END, R.M_SYNC]) as t:
        assert t.header.n_frames == 2
        assert t.frames.parent.tolist() == [-1, 0]
        assert t.strands.frame.tolist() == [0, 1, 0, 0]
        joins = t.edges.kind == R.fmt.EDGE_JOIN
        assert t.edges.src[joins].tolist() == [1] and t.edges.dst[joins].tolist() == [3]


def test_called_cilk_function_has_its_own_frame_joined_at_once(tmp_path):
    # spawn g; call f (its own frame, a sibling of g); sync: the caller waits for f right
    # after it returns (join into the next strand) and for g at the sync
    marks = [R.M_SPAWN, R.M_SPAWN_END, R.M_CALL, R.M_SPAWN, R.M_SPAWN_END, R.M_CALL_END]
    with _cilk(tmp_path, [*marks, R.M_SYNC]) as t:
        assert t.frames.parent.tolist() == [-1, 0, 0, 2]
        assert t.frames.branching.tolist()[1:] == [2, 2, 1]
        assert t.frames.level.tolist() == [0, 1, 1, 2]
        joins = t.edges.kind == R.fmt.EDGE_JOIN
        pairs = list(zip(t.edges.src[joins].tolist(), t.edges.dst[joins].tolist(), strict=True))
        f = t.frames
        called_last = int(f.last_strand[2])
        assert (called_last, called_last + 1) in pairs  # f joins the caller's next strand
        assert (int(f.last_strand[1]), t.header.n_strands - 1) in pairs  # g at the sync


def test_roi_markers_filter(tmp_path):
    recs = [
        header(),
        rec(R.REC_REF, 0x10, 1, 4),
        rec(R.REC_MARKER, c=R.M_ROI_BEGIN),
        rec(R.REC_REF, 0x20, 2, 4),
        rec(R.REC_MARKER, c=R.M_ROI_END),
        rec(R.REC_REF, 0x30, 3, 4),
        rec(R.REC_MARKER, c=R.M_END),
    ]
    h = R.import_raw(write(tmp_path / "roi.raw", recs), tmp_path / "roi.sst")
    assert h.n_refs == 1 and h.roi


def test_roi_markers_out_of_order_are_named(tmp_path):
    # a BEGIN inside a region and an END outside one change nothing (the markers are a
    # switch), so the trace is the same; they were accepted without a word
    ref = rec(R.REC_REF, 0x20, 2, 4)
    begin, end = rec(R.REC_MARKER, c=R.M_ROI_BEGIN), rec(R.REC_MARKER, c=R.M_ROI_END)
    cases = {
        "twice": [begin, ref, begin, ref, end, ref, end],
        "usual": [begin, ref, end, ref, begin, ref, end],
        "open": [ref, begin, ref],  # to the end: the usual way to leave out the set-up
    }
    said = {}
    for case, marks in cases.items():
        warned: list[str] = []
        recs = [header(), *marks, rec(R.REC_MARKER, c=R.M_END)]
        h = R.import_raw(write(tmp_path / f"{case}.raw", recs), tmp_path / f"{case}.sst",
                         warn=warned.append)  # fmt: skip
        said[case] = (h.n_refs, warned)
    n, warned = said["twice"]
    assert n == 2 and len(warned) == 1
    assert "SS_ROI_BEGIN at record 3 with the region already open" in warned[0]
    assert "SS_ROI_END at record 7 with no region open" in warned[0]
    assert said["usual"] == (2, []) and said["open"] == (1, [])


def test_roi_end_without_any_begin_names_the_markers(tmp_path):
    # the builder's "roi_end() on a builder made without roi=True" reached the user
    recs = [header(), rec(R.REC_REF, 0x20, 2, 4), rec(R.REC_MARKER, c=R.M_ROI_END),
            rec(R.REC_MARKER, c=R.M_END)]  # fmt: skip
    with pytest.raises(TraceFormatError) as info:
        R.import_raw(write(tmp_path / "e.raw", recs), tmp_path / "e.sst")
    msg = str(info.value)
    assert "record 2: SS_ROI_END without any SS_ROI_BEGIN" in msg and "builder" not in msg
    assert not (tmp_path / "e.sst").exists()


@pytest.mark.parametrize(
    "records, message",
    [
        ([rec(R.REC_REF, 1, 0, 8)], "bad header"),
        ([header(), rec(R.REC_REF, 1, 0, 8)], "without an END marker"),
        ([header(), rec(R.REC_MARKER, c=R.M_SPAWN_END), rec(R.REC_MARKER, c=R.M_END)], "record 1"),
        (
            [header(), rec(R.REC_MARKER, c=R.M_SPAWN), rec(R.REC_MARKER, c=R.M_END)],
            "SPAWN_END at the end of the run: a non-local exit",
        ),
        (
            [header(), rec(R.REC_MARKER, c=R.M_CALL), rec(R.REC_MARKER, c=R.M_END)],
            "CALL_END at .* \\(longjmp out of a spawned call",
        ),
        (
            [header(), rec(R.REC_MARKER, c=R.M_CALL_END), rec(R.REC_MARKER, c=R.M_END)],
            "record 1: .*without a matching call",
        ),
        (  # a spawned call returns while a Cilk function it called is still open
            [header()]
            + [rec(R.REC_MARKER, c=m) for m in (R.M_SPAWN, R.M_CALL, R.M_CALL, R.M_SPAWN_END)]
            + [rec(R.REC_MARKER, c=R.M_END)],
            "record 4: .*is open: a non-local exit",
        ),
        ([header(), rec(9), rec(R.REC_MARKER, c=R.M_END)], "unknown record kind 9"),
        ([header(), rec(R.REC_MARKER, c=42), rec(R.REC_MARKER, c=R.M_END)], "unknown marker 42"),
        (
            [header(), rec(R.REC_MARKER, 0x1000, 0, R.M_STACK), rec(R.REC_MARKER, c=R.M_END)],
            "record 1: the stack region 0x1000 \\+ 0 bytes is empty",
        ),
        (
            [header()]
            + [rec(R.REC_MARKER, a, 4096, R.M_STACK) for a in (0x1000, 0x3000)]
            + [rec(R.REC_MARKER, c=R.M_END)],
            "record 2: a second, different stack region 0x3000-0x4000",
        ),
        ([header(), rec(R.REC_MARKER, c=R.M_END), rec(R.REC_REF, 1, 0, 8)], "after the END"),
        ([rec(R.REC_HEADER, R.RAW_MAGIC, 7)], "version 7"),
        # what the header says enters the trace: an id or a flag no capture writes is damage
        ([header(backend=99), rec(R.REC_MARKER, c=R.M_END)], "bad header record: backend id 99"),
        ([header(exact=0xFF), rec(R.REC_MARKER, c=R.M_END)], "bad header record: flags 0xff"),
        # the iteration rule: in main, increasing numbers
        (
            [
                header(),
                rec(R.REC_MARKER, c=R.M_ITER, a=2),
                rec(R.REC_MARKER, c=R.M_ITER, a=1),
                rec(R.REC_MARKER, c=R.M_END),
            ],
            "near record 2: .*iteration mark 1 after iteration 2",
        ),
        (
            [
                header(),
                rec(R.REC_MARKER, c=R.M_SPAWN),
                rec(R.REC_MARKER, c=R.M_ITER, a=0),
                rec(R.REC_MARKER, c=R.M_SPAWN_END),
                rec(R.REC_MARKER, c=R.M_END),
            ],
            "near record 2: .*iteration mark 0 inside a spawned frame",
        ),
        # the reference rule, naming the record
        (
            [header(), rec(R.REC_REF, 1 << 48, 0, 8), rec(R.REC_MARKER, c=R.M_END)],
            "record 1: "
            "invalid reference \\(address 0x1000000000000, size 8\\): its address is not below",
        ),
        ([header(), rec(R.REC_REF, 64, 0, 0), rec(R.REC_MARKER, c=R.M_END)], "record 1: .*size 0"),
        (
            [
                header(),
                rec(R.REC_GAP, b=3),
                rec(R.REC_RANGE, (1 << 48) - 100, 101, 0, 1),
                rec(R.REC_MARKER, c=R.M_END),
            ],
            "record 2: .*runs past 2\\^48",
        ),
        (
            [header(), rec(R.REC_REF, (1 << 64) - 8, 0, 300), rec(R.REC_MARKER, c=R.M_END)],
            "record 1: .*not below 2\\^48",
        ),
    ],
)
def test_malformed_streams(tmp_path, records, message):
    with pytest.raises(TraceFormatError, match=message):
        R.import_raw(write(tmp_path / "m.raw", records), tmp_path / "m.sst")
    assert not (tmp_path / "m.sst").exists()


@pytest.mark.parametrize(
    "marks",
    [
        [(R.M_ITER, 5), (R.M_SPAWN, 0), (R.M_SPAWN_END, 0), (R.M_ITER, 3)],  # builder's error
        [(R.M_ROI_END, 0)],
        [(R.M_SPAWN_END, 0)],  # a frame closed without its spawn
        [(R.M_SPAWN, 0)],  # ... or left open at the end
    ],
)
def test_errors_name_the_raw_stream_not_the_output(tmp_path, marks):
    # the output is where the builder writes, in the CLI a hidden temporary file: naming
    # it (or the program) made the message point at a file the user never saw
    records = [header(), *(rec(R.REC_MARKER, a=a, c=m) for m, a in marks)]
    raw = write(tmp_path / "m.raw", [*records, rec(R.REC_MARKER, c=R.M_END)])
    with pytest.raises(TraceFormatError) as info:
        R.import_raw(raw, tmp_path / ".out.tmp.sst", program="theprogram")
    msg = str(info.value)
    assert msg.startswith(f"{raw}: ") and ".out.tmp" not in msg and "theprogram" not in msg
    with pytest.raises(TraceFormatError, match=r"^myprog: "):
        R.import_raw(raw, tmp_path / ".out.tmp.sst", source="myprog")


def test_a_truncated_zstd_stream_is_not_called_empty(tmp_path):
    good = write(tmp_path / "g.raw", [header(), rec(R.REC_MARKER, c=R.M_END)], compress=True)
    data = good.read_bytes()
    for cut in (4, len(data) // 2):
        (tmp_path / "t.raw.zst").write_bytes(data[:cut])
        with pytest.raises(TraceFormatError, match=r"t\.raw\.zst: truncated or corrupt zstd"):
            R.import_raw(tmp_path / "t.raw.zst", tmp_path / "t.sst")
    (tmp_path / "e.raw").write_bytes(b"")
    with pytest.raises(TraceFormatError, match=r"e\.raw: empty raw stream"):
        R.import_raw(tmp_path / "e.raw", tmp_path / "e.sst")


@pytest.mark.parametrize("version", [1, 2])
def test_a_zstd_stream_cut_after_its_first_records_says_it_is_truncated(tmp_path, version):
    """zstd's stream reader ends quietly at a cut frame: the records it gave read as a whole
    stream without its END marker (version 1) or with a partial block (version 2)."""
    refs = [rec(R.REC_REF, 0x7000 + 8 * i, 3, 8, 0) for i in range(40_000)]
    end = rec(R.REC_MARKER, c=R.M_END)
    if version == 1:
        good = write(tmp_path / "g.raw.zst", [header(), *refs, end], compress=True)
    else:
        good = write2(tmp_path / "g.raw.zst", [header2(), *refs, end], compress=True)
    R.import_raw(good, tmp_path / "g.sst")
    data = good.read_bytes()
    cut = tmp_path / "c.raw.zst"
    cut.write_bytes(data[: len(data) - 10])
    # the cut stream still gives its first records: it is not cut before them
    assert zstandard.ZstdDecompressor().stream_reader(data[: len(data) - 10]).read(16)
    with pytest.raises(TraceFormatError) as info:
        R.import_raw(cut, tmp_path / "c.sst")
    assert re.fullmatch(
        rf"{re.escape(str(cut))}: truncated near record \d+ \(the zstd stream ends inside a "
        r"frame\)",
        str(info.value),
    )
    assert not (tmp_path / "c.sst").exists()


def test_a_zstd_stream_whose_bytes_changed_fails_its_checksum(tmp_path):
    """The capture backends write a content checksum: a changed byte that still
    decompresses (to wrong records) is refused by it."""
    rng = np.random.default_rng(1)
    refs = [rec(R.REC_REF, int(a) * 8, 3, 8, 0) for a in rng.integers(0, 1 << 40, 5000)]
    data = np.array([header(), *refs, rec(R.REC_MARKER, c=R.M_END)], dtype=R.RAW_DTYPE).tobytes()
    plain = zstandard.ZstdCompressor(level=1).compress(data)
    summed = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(data)
    # the same frame but for the header's flag and the checksum after the last block
    assert len(summed) == len(plain) + 4

    def flipped(frame: bytes, at: int) -> bytes:
        return frame[:at] + bytes([frame[at] ^ 0x10]) + frame[at + 1 :]

    def misread(at: int) -> bool:  # decompresses, to other bytes of the same length
        try:
            out = zstandard.ZstdDecompressor().decompress(flipped(plain, at))
        except zstandard.ZstdError:
            return False
        return len(out) == len(data) and out != data

    at = next(a for a in range(len(plain) // 2, len(plain)) if misread(a))
    p = tmp_path / "flipped.raw.zst"
    p.write_bytes(flipped(summed, at))
    with pytest.raises(TraceFormatError, match=r"flipped\.raw\.zst: corrupt zstd stream near"):
        R.import_raw(p, tmp_path / "f.sst")
    assert not (tmp_path / "f.sst").exists()


def _frame_ends_by_decompressing(data: bytes) -> bool:
    d = zstandard.ZstdDecompressor().decompressobj()
    try:
        d.decompress(data)
    except zstandard.ZstdError:
        return False
    return d.eof


@pytest.mark.parametrize("checksum", [False, True])
def test_the_block_walk_agrees_with_the_decompressor_on_where_a_frame_ends(tmp_path, checksum):
    # zeros make RLE blocks, random bytes raw ones, text compressed ones; several of each
    rng = np.random.default_rng(0)
    text = b"".join(b"spawn %d sync %d\n" % (i, i * i) for i in range(12_000))
    content = bytes(300_000) + rng.bytes(140_000) + text + bytes(5)
    frame = zstandard.ZstdCompressor(write_checksum=checksum).compress(content)
    n = len(frame)
    cuts = {*range(0, 64), *range(0, n, 211), *range(n - 64, n + 1)}
    p = tmp_path / "f.zst"
    for cut in sorted(cuts):
        p.write_bytes(frame[:cut])
        assert RS._zstd_frame_ends(p) == _frame_ends_by_decompressing(frame[:cut]), cut
    p.write_bytes(frame + b"trailing")
    assert RS._zstd_frame_ends(p)


@pytest.mark.parametrize("data", [b"x" * 24, b"SIMSCHT\0" + bytes(200), b"short"])
def test_a_file_that_is_not_a_raw_stream_is_named_so(tmp_path, data):
    p = tmp_path / "notraw.bin"
    p.write_bytes(data)
    with pytest.raises(TraceFormatError, match="not a simsched raw stream") as exc:
        R.import_raw(p, tmp_path / "n.sst")
    assert "stray" not in str(exc.value)
    assert not (tmp_path / "n.sst").exists()


def test_records_up_to_the_last_valid_byte_are_imported(tmp_path):
    recs = [
        header(),
        rec(R.REC_REF, (1 << 48) - 8, 0, 8),
        rec(R.REC_RANGE, (1 << 48) - 100, 100, 0, 1),
        rec(R.REC_MARKER, c=R.M_END),
    ]
    h = R.import_raw(write(tmp_path / "e.raw", recs), tmp_path / "e.sst")
    with open_trace(tmp_path / "e.sst") as t:
        c = t.refs(0, h.n_refs)
        assert int(c.addr[-1]) + int(c.size[-1]) == 1 << 48 and int(c.size.sum()) == 108


def test_truncated_stream(tmp_path):
    p = write(tmp_path / "f.raw", fib_records(4))
    p.write_bytes(p.read_bytes()[:-5])
    with pytest.raises(TraceFormatError, match="truncated"):
        R.import_raw(p, tmp_path / "f.sst")


# ---- version 2 (column blocks) -----------------------------------------------------------


def header2(backend=1, exact=0):
    return rec(R.REC_HEADER, R.RAW_MAGIC, R.RAW_VERSION_BLOCKS, backend, exact)


def write2(path: Path, records, compress=False, **kw) -> Path:
    data = encode_v2(records, **kw)
    if compress:
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def _all_records(path: Path) -> np.ndarray:
    return np.concatenate([r for _, r in R.iter_raw_blocks(path, block=1000)])


def mixed_records(rng: np.random.Generator, n: int) -> list:
    """References of every size and direction, wide gaps, far jumps, ranges and markers."""
    out = [header2()]
    base = [0x7FFD_0000_1000, 0x5555_0000_0040, 0x10_0000, 0xFFFF_FFFF_FFFF_FFF0]
    for i in range(n):
        u = rng.random()
        if u < 0.01:
            out.append(rec(R.REC_MARKER, c=R.M_ITER, a=i))
        elif u < 0.02:
            out.append(rec(R.REC_RANGE, int(base[1] + rng.integers(0, 1 << 20)), 300, 0, 1))
        elif u < 0.03:
            out.append(rec(R.REC_GAP, b=int(rng.integers(1, 1 << 32))))
        elif u < 0.035:
            out.append(rec(R.REC_REF, 0x1234, 3, 3, 0))  # odd size: escaped
        else:
            a = (base[i % 4] + int(rng.integers(-(1 << 40), 1 << 40))) % (1 << 64)
            gap = int(rng.integers(0, 300)) if rng.random() < 0.5 else int(rng.integers(0, 3))
            size = int(1 << rng.integers(0, 5))
            out.append(rec(R.REC_REF, a, gap, size, int(rng.integers(0, 2))))
    out.append(rec(R.REC_MARKER, c=R.M_END))
    return out


@pytest.mark.parametrize("compress", [False, True])
def test_v2_decodes_to_the_records_it_encodes(tmp_path, compress):
    recs = mixed_records(np.random.default_rng(5), 5000)
    # small blocks: the predictor slots carry across block boundaries
    p = write2(tmp_path / "m.raw", recs, compress, block=700)
    got = _all_records(p)
    np.testing.assert_array_equal(got, np.array(recs, R.RAW_DTYPE))


def test_v2_slot_choice_does_not_change_the_records(tmp_path):
    recs = mixed_records(np.random.default_rng(6), 2000)
    a = _all_records(write2(tmp_path / "a.raw", recs, slot_of=lambda i, r: 0))
    b = _all_records(write2(tmp_path / "b.raw", recs, slot_of=lambda i, r: i % 256))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("compress", [False, True])
def test_v2_import_equals_v1_import(tmp_path, compress):
    body = fib_records(9)[1:]
    h1 = R.import_raw(write(tmp_path / "f1.raw", [header(), *body]), tmp_path / "f1.sst")
    v2 = write2(tmp_path / "f2.raw", [header2(backend=4, exact=1), *body], compress, block=50)
    h2 = R.import_raw(v2, tmp_path / "f2.sst")
    assert h1.digest == h2.digest
    assert (h2.n_refs, h2.n_strands, h2.backend) == (h1.n_refs, h1.n_strands, "test")


def test_v2_roi_is_found_in_escaped_records(tmp_path):
    recs = [
        header2(),
        rec(R.REC_REF, 0x10, 1, 4),
        rec(R.REC_MARKER, c=R.M_ROI_BEGIN),
        rec(R.REC_REF, 0x20, 2, 4),
        rec(R.REC_REF, 0x24, 2, 4),
        rec(R.REC_MARKER, c=R.M_ROI_END),
        rec(R.REC_MARKER, c=R.M_END),
    ]
    h = R.import_raw(write2(tmp_path / "roi.raw", recs, block=3), tmp_path / "roi.sst")
    assert h.n_refs == 2 and h.roi


def _v2_bytes(records, **kw) -> bytearray:
    return bytearray(encode_v2(records, **kw))


def _corrupt(tmp_path, data: bytes, message: str) -> None:
    p = tmp_path / "bad.raw"
    p.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match=message):
        R.import_raw(p, tmp_path / "bad.sst")
    assert not (tmp_path / "bad.sst").exists()


def test_v2_malformed_blocks(tmp_path):
    recs = [header2(), rec(R.REC_REF, 0x40, 300, 8, 1), rec(R.REC_MARKER, c=R.M_END)]
    good = _v2_bytes(recs)
    # block layout: 16-byte stream header, 24-byte block header, meta at 40, slot 42, gap 44
    bad = bytearray(good)
    bad[16] ^= 1
    _corrupt(tmp_path, bad, "wrong magic")
    bad = bytearray(good)
    bad[20:24] = (70000).to_bytes(4, "little")
    _corrupt(tmp_path, bad, r"bad block header at record 1: 70000 records \(a block holds 1 to")
    # one message named every field, the valid ones too, whichever was wrong
    bad = bytearray(good)
    bad[36] = 1
    _corrupt(tmp_path, bad, r"bad block header at record 1: reserved field 1, not 0$")
    bad = bytearray(good)
    bad[14] = R.REC_MARKER  # the header record's kind byte: its magic is intact
    _corrupt(tmp_path, bad, rf"bad header record: kind {R.REC_MARKER}, where a header record")
    bad = bytearray(good)
    bad[40] = 0x20
    _corrupt(tmp_path, bad, "record 1: bad meta byte 32")
    bad = bytearray(good)
    bad[41] = 1  # the END escape becomes a REF: one escaped record left over
    _corrupt(tmp_path, bad, "escaped records")
    bad = bytearray(good)
    bad[44] = 7  # the wide gap becomes a narrow one: one wide gap left over
    _corrupt(tmp_path, bad, "wide gaps")
    _corrupt(tmp_path, good[:-3], "truncated")
    _corrupt(tmp_path, good[:30], "partial block header")
    # two captures' streams in one file (cat a.raw b.raw): was "bad block header (wrong magic)"
    _corrupt(tmp_path, good + good, r"a second stream.s header at record 3, where a block should")


def _expand_reference(recs):
    """Record by record, what the importer's kernel must produce (pieces at 64-byte lines)."""
    addr, size, write, gap = [], [], [], []
    pending = 0
    for r in recs:
        k, a, b, c, w = int(r["kind"]), int(r["a"]), int(r["b"]), int(r["c"]), int(r["flags"]) & 1
        if k == R.REC_GAP:
            pending += b
            continue
        length, g = (c, pending + b) if k == R.REC_REF else (b, pending)
        if length == 0:
            continue
        pending = 0
        if k == R.REC_REF and length <= 127:
            addr.append(a), size.append(length), write.append(w), gap.append(g)
            continue
        p, first = a, True
        while p < a + length:
            q = min((p // 64 + 1) * 64, a + length)
            addr.append(p), size.append(q - p), write.append(w), gap.append(g if first else 0)
            p, first = q, False
    return addr, size, write, gap, pending


def test_range_expansion_kernel_matches_record_by_record_expansion():
    from simsched.trace import _raw_kernels as rk

    rng = np.random.default_rng(7)
    n = 3000
    recs = np.zeros(n, R.RAW_DTYPE)
    kind = rng.choice([R.REC_REF, R.REC_RANGE, R.REC_GAP], n, p=[0.5, 0.35, 0.15])
    recs["kind"] = kind
    recs["a"] = rng.integers(0, 1 << 40, n)
    recs["flags"] = rng.integers(0, 2, n)
    is_ref = kind == R.REC_REF
    recs["c"] = np.where(is_ref, rng.choice([1, 2, 4, 8, 16, 127, 128, 300], n), 0)
    recs["b"] = np.where(
        is_ref, rng.integers(0, 50, n), np.where(kind == R.REC_RANGE, rng.integers(0, 700, n), 9)
    )
    words = recs.view("<u8").reshape(-1, 2)
    st, idx, addr, sizew, gap, trailing, lo, hi = rk.expand_records(words, 127, 64)
    assert st == rk.EXPAND_OK and idx == -1
    want = _expand_reference(recs)
    assert addr.tolist() == want[0]
    assert (sizew & 0x7F).tolist() == want[1]
    assert (sizew >> 7).tolist() == want[2]
    assert gap.tolist() == want[3]
    assert int(trailing) == want[4]
    assert lo == min(want[0]) and hi == max(
        a + s - 1 for a, s in zip(want[0], want[1], strict=True)
    )


def test_a_gap_that_does_not_fit_32_bits_names_its_record(tmp_path):
    recs = [
        header(),
        rec(R.REC_GAP, b=(1 << 32) - 1),
        rec(R.REC_GAP, b=5),
        rec(R.REC_REF, 64, 0, 8),
        rec(R.REC_MARKER, c=R.M_END),
    ]
    with pytest.raises(TraceFormatError, match="record 3: instruction gap does not fit 32 bits"):
        R.import_raw(write(tmp_path / "g.raw", recs), tmp_path / "g.sst")


def test_stack_marker_names_the_stack_region(tmp_path):
    """A STACK marker (the valgrind tool writes one) puts the region in the trace."""
    recs = [
        header(),
        rec(R.REC_REF, 0x7FF000, 3, 8),
        rec(R.REC_MARKER, 0x7F0000, 0x10000, R.M_STACK),
        rec(R.REC_MARKER, 0x7F0000, 0x10000, R.M_STACK),  # repeated alike: fine
        rec(R.REC_MARKER, c=R.M_END),
    ]
    h = R.import_raw(write(tmp_path / "st.raw", recs), tmp_path / "st.sst")
    assert h.stack == (0x7F0000, 0x800000)
    with open_trace(tmp_path / "st.sst") as t:
        assert t.header.stack == (0x7F0000, 0x800000)
        assert t.header.as_dict()["stack"] == [0x7F0000, 0x800000]
    validate(tmp_path / "st.sst")
    # without the marker the trace names no stack, and prints as before
    h = R.import_raw(write(tmp_path / "n.raw", [recs[0], recs[1], recs[-1]]), tmp_path / "n.sst")
    assert h.stack is None and "stack" not in h.as_dict()


def _spawned_body(ref_addr):
    """main spawns a Cilk function (its CALL/CALL_END inside the spawn), 4 KiB deep."""
    return [
        header(),
        rec(R.REC_MARKER, 0x7F0000, 0x10000, R.M_STACK),
        rec(R.REC_REF, 0x7FFF00, 1, 8, 1),  # main's local
        rec(R.REC_MARKER, 0, 0x1000, R.M_SPAWN),
        rec(R.REC_REF, 0x7FFF00, 1, 8),  # the argument load: the spawning code's own
        rec(R.REC_MARKER, c=R.M_CALL),
        rec(R.REC_REF, 0x7FEF80, 1, 8, 1),  # the function's own frame
        rec(R.REC_REF, ref_addr, 1, 8, 1),
        rec(R.REC_MARKER, c=R.M_CALL_END),
        rec(R.REC_REF, 0x7FFF08, 1, 8, 1),  # the store of its value
        rec(R.REC_MARKER, c=R.M_SPAWN_END),
        rec(R.REC_MARKER, c=R.M_SYNC),
        rec(R.REC_MARKER, c=R.M_END),
    ]


def test_a_spawned_body_using_an_ancestors_stack_object_is_reported(tmp_path):
    said: list[str] = []
    R.import_raw(
        write(tmp_path / "a.raw", _spawned_body(0x7FFF00)), tmp_path / "a.sst", warn=said.append
    )
    assert len(said) == 1
    assert re.search(
        r"a\.raw: 1 reference\(s\) in the body of a spawned Cilk function reach a stack object "
        r"of an enclosing frame through a pointer \(the first near record 6: address "
        r"0x7fff00, 256 bytes below the stack top\)",
        said[0],
    )
    # its own frame only (the argument load and the value's store are the spawner's)
    said.clear()
    R.import_raw(
        write(tmp_path / "b.raw", _spawned_body(0x7FEF90)), tmp_path / "b.sst", warn=said.append
    )
    assert said == []


def test_import_refuses_a_pipe_or_a_folder_without_reading_it(tmp_path):
    """A named pipe blocked the import until something wrote to it."""
    import os

    from simsched.errors import ConfigError

    fifo = tmp_path / "raw.fifo"
    os.mkfifo(fifo)
    with pytest.raises(TraceFormatError, match=re.escape(f"{fifo}: is a named pipe, not a raw")):
        R.import_raw(fifo, tmp_path / "t.sst")
    with pytest.raises(TraceFormatError, match=re.escape(f"{tmp_path}: is a folder, not a raw")):
        R.import_raw(tmp_path, tmp_path / "t.sst")
    with pytest.raises(ConfigError, match="raw_path=None"):
        R.import_raw(None, tmp_path / "t.sst")
    with pytest.raises(ConfigError, match="^iterations='x': choose one of auto, markers, none$"):
        R.import_raw(fifo, tmp_path / "t.sst", iterations="x")
    assert not (tmp_path / "t.sst").exists()


def test_import_refuses_an_output_it_cannot_write_before_it_reads_a_record(tmp_path, monkeypatch):
    """The Python API turned its own raw stream into the trace without a word, where
    ``trace import`` refused, and a folder as the output was told as a fault of the
    stream ("fib: near record 0: d: is a folder ..."); one check now serves both."""
    from simsched.errors import ConfigError, OutputError, command_line

    raw = write(tmp_path / "x.raw", fib_records(4))
    data = raw.read_bytes()
    (tmp_path / "link.raw").symlink_to(raw)
    (tmp_path / "d").mkdir()

    def never(*args, **kwargs):
        pytest.fail("a record was read")

    monkeypatch.setattr(R, "_has_roi", never)
    tail = "writing there would replace it (choose another file)"
    for out in (raw, tmp_path / "link.raw", tmp_path / "d" / ".." / "x.raw"):
        with pytest.raises(ConfigError) as info:
            R.import_raw(raw, out, program="fib")
        assert (
            str(info.value)
            == f"out_path={str(out)!r}: is the raw stream this function reads; {tail}"
        )
    with command_line(), pytest.raises(ConfigError) as info:
        R.import_raw(raw, raw, program="fib")
    assert str(info.value) == f"--out {raw}: is the raw stream this command reads; {tail}"
    with pytest.raises(OutputError) as info:
        R.import_raw(raw, tmp_path / "d", program="fib")
    assert str(info.value) == f"{tmp_path / 'd'}: is a folder, expected a file name"
    assert raw.read_bytes() == data and list((tmp_path / "d").iterdir()) == []


def test_an_output_that_fails_is_not_told_as_a_fault_of_the_stream(tmp_path):
    # it was "x.raw: near record 25: cannot write (...)", a TraceFormatError
    from simsched.errors import OutputError

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    raw = write(tmp_path / "x.raw", fib_records(4))
    with pytest.raises(OutputError) as info:
        R.import_raw(raw, "/dev/full", program="fib")
    assert str(info.value) == "/dev/full: cannot write (no space left on the device)"
