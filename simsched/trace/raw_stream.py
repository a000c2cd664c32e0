"""The raw capture stream (``capture/simsched_raw.h``): its records, and reading them.

A raw stream starts with a 16-byte header record whose version says how the rest is laid
out.  Version 1 (the valgrind and Pin tools) is a sequence of fixed 16-byte little-endian
records; :data:`RAW_DTYPE` mirrors ``ss_raw_rec`` field for field (a test parses the C
header and compares).  Version 2 (the gcc runtime) is a sequence of column blocks
(:data:`BLOCK_DTYPE` mirrors ``ss_raw_block``): per block the REF records' size/write
codes, address-predictor slots, narrow gaps and the byte planes of their zigzag address
deltas, with every other record kept verbatim on the side.  That form is about 3-7 bytes
per reference before compression, mostly runs of equal bytes, so zstd compresses it
several times faster and smaller than the 16-byte records.  :func:`iter_raw_blocks` turns
both versions into the same arrays of :data:`RAW_DTYPE` records (version 2 through the
Numba kernel of :mod:`simsched.trace._raw_kernels`), so the importer
(:mod:`simsched.trace.raw`) sees one format; it is apart from the importer because it
reads bytes and knows nothing of frames (the capture reads a stream's markers with it
too).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import zstandard

from simsched.errors import TraceFormatError
from simsched.trace import _raw_kernels as _rk

RAW_DTYPE = np.dtype([("a", "<u8"), ("b", "<u4"), ("c", "<u2"), ("kind", "u1"), ("flags", "u1")])
assert RAW_DTYPE.itemsize == 16

RAW_MAGIC = 0x3157415253534953
RAW_VERSION = 1  # 16-byte records
RAW_VERSION_BLOCKS = 2  # column blocks
RAW_VERSIONS = (RAW_VERSION, RAW_VERSION_BLOCKS)
RANGE_PIECE = 64

BLOCK_DTYPE = np.dtype(
    [
        ("magic", "<u4"),
        ("n", "<u4"),
        ("n_esc", "<u4"),
        ("n_wide", "<u4"),
        ("planes", "<u4"),
        ("zero", "<u4"),
    ]
)
assert BLOCK_DTYPE.itemsize == 24
BLOCK_MAGIC = 0x32425353
BLOCK_MAX_RECS = 65536
BLOCK_SLOTS = 256
BLOCK_ESCAPE = 0xFF
BLOCK_WIDE_GAP = 0xFF

REC_HEADER, REC_REF, REC_RANGE, REC_GAP, REC_MARKER = 0, 1, 2, 3, 4
M_SPAWN, M_SPAWN_END, M_SYNC, M_ITER, M_ROI_BEGIN, M_ROI_END, M_END = 1, 2, 3, 4, 5, 6, 7
M_CALL, M_CALL_END = 8, 9  # a Cilk function's own frame (simsched_cilk.h)
M_STACK = 10  # the captured thread's stack region: bytes a .. a + b - 1
M_THREAD = 11  # the program started a thread: a capture records a serial run only
BACKENDS = {0: "unknown", 1: "gcc", 2: "valgrind", 3: "pin", 4: "test"}
FLAG_WRITE = 1
FLAG_GAPS_EXACT = 1

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BLOCK = 1 << 18  # records per block (4 MB)


class _ZstdFrameCut(Exception):
    """The file ends inside its zstd frame (a cut or unfinished file)."""


def _zstd_frame_ends(path: Path) -> bool:
    """Whether the zstd frame at the start of ``path`` ends in the file.

    Walks the frame's block headers (RFC 8878: a 3-byte header per block, the last one
    flagged, then the checksum if the frame has one), decompressing nothing.
    """
    with open(path, "rb", buffering=0) as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        head = os.pread(fd, 18, 0)  # the longest frame header
        try:
            pos = zstandard.frame_header_size(head)
            checksum = zstandard.get_frame_parameters(head).has_checksum
        except zstandard.ZstdError:
            return False
        while True:
            block = os.pread(fd, 3, pos)
            if len(block) < 3:
                return False
            h = int.from_bytes(block, "little")
            rle = (h >> 1) & 3 == 1  # one byte stands for the whole block
            pos += 3 + (1 if rle else h >> 3)
            if h & 1:
                return pos + 4 * checksum <= size


class _ZstdStream:
    """The decompressed bytes of a zstd file; reading past the end of a cut frame raises.

    zstandard's stream reader ends quietly where a cut file ends, so a stream cut after
    its first records would read as a whole one without its END marker.  When the reader
    ends, the frame's block headers say whether the file holds all of it: a decompression
    object, which knows, copies every byte once more and slowed reading a version-1
    stream measurably.  Like the reader, it stops at the end of the first frame.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        f = open(path, "rb")  # noqa: SIM115 - the reader closes it
        self._reader = zstandard.ZstdDecompressor().stream_reader(f, closefd=True)
        self._ends = False  # the frame was found whole
        self.produced = 0  # decompressed bytes so far

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes; none at the end of the frame.

        Raises
        ------
        _ZstdFrameCut
            The file ends before its frame does.
        zstandard.ZstdError
            The compressed data is corrupt.
        """
        out = self._reader.read(size)
        if not out and not self._ends:
            if not _zstd_frame_ends(self._path):
                raise _ZstdFrameCut
            self._ends = True
        self.produced += len(out)
        return out

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> _ZstdStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# A raw stream is read as it is stored: plain, or through a zstd decompressor.
_Stream = io.BufferedReader | _ZstdStream


def _open_stream(path: Path) -> _Stream:
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    head = f.read(4)
    if head == _ZSTD_MAGIC:
        f.close()
        return _ZstdStream(path)
    f.seek(0)
    return f


def _read(f: _Stream, size: int, name: str, where: int) -> bytes:
    """Read up to ``size`` bytes (fewer only at the end of the stream)."""
    out = b""
    try:
        while len(out) < size:
            more = f.read(size - len(out))
            if not more:
                break
            out += more
    except zstandard.ZstdError as exc:
        raise TraceFormatError(f"{name}: corrupt zstd stream near record {where} ({exc})") from None
    except _ZstdFrameCut:
        if isinstance(f, _ZstdStream) and f.produced == 0:
            raise TraceFormatError(
                f"{name}: truncated or corrupt zstd stream (it ends before its first record)"
            ) from None
        raise TraceFormatError(
            f"{name}: truncated near record {where} (the zstd stream ends inside a frame)"
        ) from None
    return out


def _stream_version(head: bytes, name: str) -> int:
    """The version of a stream whose first 16 bytes are ``head``; raise unless it is one."""
    if not head:
        raise TraceFormatError(f"{name}: empty raw stream")
    h = np.frombuffer(head, RAW_DTYPE)[0] if len(head) == 16 else None
    if h is None or int(h["a"]) != RAW_MAGIC:
        raise TraceFormatError(
            f"{name}: not a simsched raw stream (bad header record: it does not start with "
            f"the raw magic {RAW_MAGIC:#x})"
        )
    if int(h["kind"]) != REC_HEADER:
        # the magic is there: the record's kind byte is damaged, not the file's type wrong
        raise TraceFormatError(
            f"{name}: bad header record: kind {int(h['kind'])}, where a header record has "
            f"{REC_HEADER}"
        )
    if int(h["b"]) not in RAW_VERSIONS:
        raise TraceFormatError(
            f"{name}: raw stream version {int(h['b'])}; this simsched reads "
            f"versions {', '.join(map(str, RAW_VERSIONS))}"
        )
    # What the header's backend and flags say enters the trace: an id or a bit no capture
    # writes is damage, not a backend called "unknown"
    if int(h["c"]) not in BACKENDS:
        raise TraceFormatError(
            f"{name}: bad header record: backend id {int(h['c'])} (known: "
            f"{', '.join(f'{k} {v}' for k, v in BACKENDS.items())})"
        )
    if int(h["flags"]) & ~FLAG_GAPS_EXACT:
        raise TraceFormatError(
            f"{name}: bad header record: flags {int(h['flags']):#04x} (known: "
            f"{FLAG_GAPS_EXACT:#04x}, gaps exact)"
        )
    return int(h["b"])


def _iter_v1(f: _Stream, head: bytes, name: str, block: int) -> Iterator[tuple[int, np.ndarray]]:
    first = 0
    while True:
        buf = head + _read(f, block * 16 - len(head), name, first)
        head = b""
        if not buf:
            return
        if len(buf) % 16:
            raise TraceFormatError(
                f"{name}: truncated: {len(buf) % 16} stray bytes after record "
                f"{first + len(buf) // 16} (a raw stream is a sequence of 16-byte records)"
            )
        recs = np.frombuffer(buf, dtype=RAW_DTYPE)
        yield first, recs
        first += recs.shape[0]


def _iter_v2_bodies(f: _Stream, name: str) -> Iterator[tuple[int, np.void, np.ndarray, bytes]]:
    """Yield ``(index of the block's first record, block header, plane shifts, body)``."""
    first = 1  # record 0 is the stream header
    while True:
        raw_h = _read(f, BLOCK_DTYPE.itemsize, name, first)
        if not raw_h:
            return
        if len(raw_h) < BLOCK_DTYPE.itemsize:
            raise TraceFormatError(f"{name}: truncated: a partial block header at record {first}")
        h = np.frombuffer(raw_h, BLOCK_DTYPE)[0]
        n, n_esc, n_wide, planes = (int(h[k]) for k in ("n", "n_esc", "n_wide", "planes"))
        if int(h["magic"]) != BLOCK_MAGIC:
            if int.from_bytes(raw_h[:8], "little") == RAW_MAGIC:
                raise TraceFormatError(
                    f"{name}: a second stream's header at record {first}, where a block should "
                    "start (two raw streams joined into one file?)"
                )
            raise TraceFormatError(f"{name}: bad block header at record {first} (wrong magic)")
        # one message per field: a single one listed every field, the valid ones too
        checks = (
            (0 < n <= BLOCK_MAX_RECS, f"{n} records (a block holds 1 to {BLOCK_MAX_RECS})"),
            (n_esc <= n, f"{n_esc} escaped records of its {n}"),
            (n_wide <= n, f"{n_wide} wide gaps for its {n} records"),
            (planes <= 0xFF, f"planes {planes:#x} (8 planes at most, 0xff)"),
            (not h["zero"], f"reserved field {int(h['zero'])}, not 0"),
        )
        bad = next((why for ok, why in checks if not ok), None)
        if bad is not None:
            raise TraceFormatError(f"{name}: bad block header at record {first}: {bad}")
        shifts = np.array([8 * p for p in range(8) if planes >> p & 1], np.uint64)
        size = n * (3 + shifts.shape[0]) + n_esc * RAW_DTYPE.itemsize + n_wide * 4
        body = _read(f, size, name, first)
        if len(body) < size:
            raise TraceFormatError(
                f"{name}: truncated: the block at record {first} has {len(body)} of its "
                f"{size} bytes"
            )
        yield first, h, shifts, body
        first += n


def _decode_v2(
    h: np.void,
    shifts: np.ndarray,
    body: bytes,
    last: np.ndarray,
    name: str,
    first: int,
    out: np.ndarray,
) -> None:
    """Decode one block into ``out`` (``n`` records of :data:`RAW_DTYPE`)."""
    n, n_esc, n_wide = int(h["n"]), int(h["n_esc"]), int(h["n_wide"])
    k = shifts.shape[0]
    cols = np.frombuffer(body, np.uint8, count=n * (3 + k))
    esc = np.frombuffer(body, "<u8", count=2 * n_esc, offset=n * (3 + k)).reshape(n_esc, 2)
    wide = np.frombuffer(body, "<u4", count=n_wide, offset=n * (3 + k) + 16 * n_esc)
    code, i = _rk.decode_block(
        cols[:n],
        cols[n : 2 * n],
        cols[2 * n : 3 * n],
        cols[3 * n :].reshape(k, n),
        shifts,
        esc,
        wide,
        last,
        out.view("<u8").reshape(n, 2),
    )
    if code == _rk.BAD_META:
        raise TraceFormatError(
            f"{name}: record {first + i}: bad meta byte {int(cols[i])} in a version-2 block"
        )
    if code == _rk.FEW_ESCAPES:
        raise TraceFormatError(
            f"{name}: the block at record {first} names {n_esc} escaped records, but its "
            "meta column disagrees"
        )
    if code == _rk.FEW_WIDE:
        raise TraceFormatError(
            f"{name}: the block at record {first} names {n_wide} wide gaps, but its gap "
            "column disagrees"
        )


def _iter_v2(f: _Stream, head: bytes, name: str, block: int) -> Iterator[tuple[int, np.ndarray]]:
    last = np.zeros(BLOCK_SLOTS, np.uint64)  # the address predictors, carried across blocks
    first = 0
    pending: list[tuple[int, np.void, np.ndarray, bytes]] = []
    have = 1  # the header record leads the first batch

    def batch() -> np.ndarray:
        # Decode straight into one array per batch (no concatenation).
        out = np.empty(have, RAW_DTYPE)
        pos = 0
        if first == 0:
            out[0] = np.frombuffer(head, RAW_DTYPE)[0]
            pos = 1
        for start, h, shifts, body in pending:
            n = int(h["n"])
            _decode_v2(h, shifts, body, last, name, start, out[pos : pos + n])
            pos += n
        return out

    for item in _iter_v2_bodies(f, name):
        pending.append(item)
        have += int(item[1]["n"])
        if have >= block:
            recs = batch()
            yield first, recs
            first += recs.shape[0]
            pending, have = [], 0
    if have:
        yield first, batch()


def iter_raw_blocks(
    path: str | os.PathLike, block: int = _BLOCK, *, source: str | None = None
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield the records of a raw stream (version 1 or 2), block by block.

    Parameters
    ----------
    path
        The raw stream, plain or zstd-compressed.
    block
        About how many records to yield at a time.
    source
        What to name in error messages (default ``path``).

    Yields
    ------
    (int, numpy.ndarray)
        The index of the block's first record and the records (:data:`RAW_DTYPE`); the
        first block starts with the header record.  A version-2 stream is decoded into the
        version-1 records it stands for.

    Raises
    ------
    TraceFormatError
        The file is not a raw stream (no header record) or of another version, is
        truncated, its zstd stream is corrupt or ends inside its frame, or a version-2
        block is malformed.
    """
    path = Path(path)
    name = source or str(path)
    with _open_stream(path) as f:
        head = _read(f, 16, name, 0)
        if _stream_version(head, name) == RAW_VERSION_BLOCKS:
            yield from _iter_v2(f, head, name, block)
        else:
            yield from _iter_v1(f, head, name, block)
