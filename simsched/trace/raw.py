"""Importing the raw capture stream (``capture/simsched_raw.h``) into a trace.

The C capture runtimes write fixed 16-byte little-endian records; :data:`RAW_DTYPE` mirrors
``ss_raw_rec`` field for field (a test parses the header and compares).  The importer
streams the raw file (plain, or one zstd stream) block by block: runs of reference records
go to :meth:`TraceBuilder.refs` as whole arrays, markers drive the builder's DAG calls, block
operations (RANGE records) are split into references of at most ``SS_RANGE_PIECE`` bytes.

If the stream contains any ROI_BEGIN marker, only references between ROI markers are kept;
otherwise the whole run is the region of interest.  Finding that out costs one quick pass
over the record kinds before the import.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import zstandard

from simsched.errors import SimschedError, TraceFormatError
from simsched.trace import format as fmt
from simsched.trace.builder import TraceBuilder

RAW_DTYPE = np.dtype([("a", "<u8"), ("b", "<u4"), ("c", "<u2"), ("kind", "u1"), ("flags", "u1")])
assert RAW_DTYPE.itemsize == 16

RAW_MAGIC = 0x3157415253534953
RAW_VERSION = 1
RANGE_PIECE = 64

REC_HEADER, REC_REF, REC_RANGE, REC_GAP, REC_MARKER = 0, 1, 2, 3, 4
M_SPAWN, M_SPAWN_END, M_SYNC, M_ITER, M_ROI_BEGIN, M_ROI_END, M_END = 1, 2, 3, 4, 5, 6, 7
BACKENDS = {0: "unknown", 1: "gcc", 2: "valgrind", 3: "pin", 4: "test"}
FLAG_WRITE = 1
FLAG_GAPS_EXACT = 1

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BLOCK = 1 << 18  # records per block (4 MB)


def _open_stream(path: Path) -> io.BufferedIOBase:
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    head = f.read(4)
    f.seek(0)
    if head == _ZSTD_MAGIC:
        return zstandard.ZstdDecompressor().stream_reader(f, closefd=True)
    return f


def iter_raw_blocks(
    path: str | os.PathLike, block: int = _BLOCK
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(index of the first record, records)`` blocks of a raw stream."""
    path = Path(path)
    first = 0
    with _open_stream(path) as f:
        while True:
            try:
                buf = f.read(block * 16)
            except zstandard.ZstdError as exc:
                raise TraceFormatError(
                    f"{path}: corrupt zstd stream near record {first} ({exc})"
                ) from None
            if not buf:
                return
            if len(buf) % 16:
                more = b""
                try:
                    while len(buf) % 16 and (more := f.read(16 - len(buf) % 16)):
                        buf += more
                except zstandard.ZstdError as exc:
                    raise TraceFormatError(f"{path}: corrupt zstd stream ({exc})") from None
                if len(buf) % 16:
                    raise TraceFormatError(
                        f"{path}: truncated: {len(buf) % 16} stray bytes after record "
                        f"{first + len(buf) // 16} (a raw stream is a sequence of 16-byte records)"
                    )
            recs = np.frombuffer(buf, dtype=RAW_DTYPE)
            yield first, recs
            first += recs.shape[0]


def _has_roi(path: Path) -> bool:
    for _, recs in iter_raw_blocks(path):
        if np.any((recs["kind"] == REC_MARKER) & (recs["c"] == M_ROI_BEGIN)):
            return True
    return False


def _range_pieces(start: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Split ``[start, start+length)`` at RANGE_PIECE-aligned boundaries."""
    end = start + length
    first_b = (start // RANGE_PIECE + 1) * RANGE_PIECE
    bounds = np.arange(first_b, end, RANGE_PIECE, dtype=np.uint64)
    starts = np.concatenate([np.array([start], np.uint64), bounds])
    ends = np.concatenate([bounds, np.array([end], np.uint64)])
    return starts, (ends - starts).astype(np.uint8)


def import_raw(
    raw_path: str | os.PathLike,
    out_path: str | os.PathLike,
    *,
    program: str = "",
    args: list[str] | tuple[str, ...] = (),
    progress: Callable[[int, int], None] | None = None,
    line_size_hint: int = 64,
) -> fmt.TraceHeader:
    """Convert a raw capture stream into a trace, streaming.

    Parameters
    ----------
    raw_path
        The raw stream, plain or zstd-compressed.
    out_path
        The trace to write (atomically).
    program, args
        Provenance for the trace header.
    progress
        Called as ``progress(records_done, bytes_read_so_far)`` after each block.
    line_size_hint
        Stored in the header.

    Returns
    -------
    TraceHeader

    Raises
    ------
    TraceFormatError
        The stream is malformed: bad header, unknown record, unbalanced markers, missing
        END marker, truncation.
    """
    raw_path = Path(raw_path)
    name = str(raw_path)
    if not raw_path.exists():
        raise TraceFormatError(f"{name}: no such raw stream")
    roi = _has_roi(raw_path)
    b: TraceBuilder | None = None
    ended = False
    pos = 0
    try:
        for first, recs in iter_raw_blocks(raw_path):
            start = 0
            if b is None:
                h = recs[0]
                if h["kind"] != REC_HEADER or int(h["a"]) != RAW_MAGIC:
                    raise TraceFormatError(f"{name}: not a simsched raw stream (bad header record)")
                if int(h["b"]) != RAW_VERSION:
                    raise TraceFormatError(
                        f"{name}: raw stream version {int(h['b'])}; this simsched reads {RAW_VERSION}"
                    )
                b = TraceBuilder(
                    out_path,
                    program=program,
                    args=list(args),
                    backend=BACKENDS.get(int(h["c"]), "unknown"),
                    gaps_exact=bool(int(h["flags"]) & FLAG_GAPS_EXACT),
                    line_size_hint=line_size_hint,
                    roi=roi,
                )
                start = 1
            if ended:
                raise TraceFormatError(f"{name}: records after the END marker at record {first}")
            kind = recs["kind"]
            csz = recs["c"]
            special = np.flatnonzero((kind != REC_REF) | (csz == 0) | (csz > fmt.MAX_REF_SIZE))
            special = special[special >= start]
            prev = start
            for i in special:
                i = int(i)
                if i > prev:
                    run = recs[prev:i]
                    b.refs(run["a"], run["c"], (run["flags"] & FLAG_WRITE) != 0, run["b"])
                pos = first + i
                r = recs[i]
                k = int(r["kind"])
                if k == REC_MARKER:
                    m = int(r["c"])
                    if m == M_SPAWN:
                        b.spawn()
                    elif m == M_SPAWN_END:
                        b.ret()
                    elif m == M_SYNC:
                        b.sync()
                    elif m == M_ITER:
                        b.iteration(int(r["a"]))
                    elif m == M_ROI_BEGIN:
                        b.roi_begin()
                    elif m == M_ROI_END:
                        b.roi_end()
                    elif m == M_END:
                        ended = True
                        if i != recs.shape[0] - 1:
                            raise TraceFormatError(
                                f"{name}: records after the END marker at record {pos}"
                            )
                    else:
                        raise TraceFormatError(f"{name}: record {pos}: unknown marker {m}")
                elif k == REC_GAP:
                    b.instr(int(r["b"]))
                elif k in (REC_REF, REC_RANGE):
                    length = int(r["b"]) if k == REC_RANGE else int(r["c"])
                    if k == REC_REF:
                        b.instr(0)
                    if length == 0:
                        if k == REC_REF:
                            raise TraceFormatError(f"{name}: record {pos}: reference of size 0")
                    else:
                        starts, sizes = _range_pieces(int(r["a"]), length)
                        gaps = np.zeros(starts.shape[0], np.uint32)
                        if k == REC_REF:
                            gaps[0] = int(r["b"])
                        b.refs(starts, sizes, bool(int(r["flags"]) & FLAG_WRITE), gaps)
                elif k == REC_HEADER:
                    raise TraceFormatError(f"{name}: record {pos}: a second header record")
                else:
                    raise TraceFormatError(f"{name}: record {pos}: unknown record kind {k}")
                prev = i + 1
            if prev < recs.shape[0]:
                run = recs[prev:]
                b.refs(run["a"], run["c"], (run["flags"] & FLAG_WRITE) != 0, run["b"])
            if progress is not None:
                progress(first + recs.shape[0], 0)
        if b is None:
            raise TraceFormatError(f"{name}: empty raw stream")
        if not ended:
            raise TraceFormatError(
                f"{name}: the stream ends without an END marker (the program crashed, or the "
                "capture was cut short)"
            )
        if b.depth != 1:
            raise TraceFormatError(
                f"{name}: {b.depth - 1} spawn(s) without a matching SPAWN_END at the end"
            )
        return b.close()
    except SimschedError as exc:
        if b is not None and not b._closed:
            b.abort()
        if isinstance(exc, TraceFormatError):
            raise
        raise TraceFormatError(f"{name}: near record {pos}: {exc}") from None
    except BaseException:
        if b is not None and not b._closed:
            b.abort()
        raise
