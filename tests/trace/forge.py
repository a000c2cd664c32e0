"""Write trace files directly, bypassing TraceBuilder's checks, with valid checksums.

The tests use it to make what no simsched writer makes: traces whose tables, index, meta or
references were rewritten after the fact and then sealed again (every zstd frame with its
checksum, the header CRC and the content digest all valid), so the only thing that can
refuse them is the reader's own checking of what the file says.
"""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from simsched.trace import format as fmt
from tests.conftest import private_cache as shared_kernels_cache


@dataclass
class Parts:
    """The decoded pieces of a trace file; every array is a writable copy."""

    flags: int
    meta: dict
    tables: dict[str, np.ndarray]
    index: np.ndarray
    chunks: list[bytes]
    counts: tuple[int, ...] | None = None  # header counts (default: derived from the rest)
    trailer: bytes = b""  # bytes after the index section (covered by the digest)
    place_chunks: bool = True  # rewrite the index offsets to lay chunks out back to back
    meta_text: bytes | None = None  # the meta section's JSON text, instead of ``meta``'s
    toc_text: bytes | None = None  # the tables' table of contents, instead of the real one


def read(path: str | Path) -> Parts:
    """Split a (valid) trace into its parts."""
    data = Path(path).read_bytes()
    h = fmt.unpack_header(data, str(path))

    def section(key: str) -> bytes:
        off, ln = h[key]
        return data[off : off + ln]

    index = np.frombuffer(fmt.decompress(section("index"), "index"), fmt.INDEX_DTYPE).copy()
    tables = {k: v.copy() for k, v in fmt.decode_tables(section("tables"), "tables").items()}
    return Parts(
        flags=h["flags"],
        meta=fmt.decode_json(section("meta"), "meta"),
        tables=tables,
        index=index,
        chunks=[data[int(r["offset"]) : int(r["offset"] + r["length"])] for r in index],
    )


def decode(parts: Parts, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chunk ``k`` as (addresses, size/write bytes, gaps), without the reference rule."""
    from simsched.trace import _kernels

    row = parts.index[k]
    n, wa, wg = int(row["n"]), int(row["wa"]), int(row["wg"])
    buf = np.frombuffer(fmt.decompress(parts.chunks[k], "chunk"), np.uint8)
    addr, size = np.empty(n, np.uint64), np.empty(n, np.uint8)
    write, gap = np.empty(n, np.bool_), np.empty(n, np.uint32)
    _kernels._decode(buf, n, wa, wg, addr, size, write, gap)
    return addr, size | (write.astype(np.uint8) << 7), gap


def encode(parts: Parts, k: int, addr: np.ndarray, sizew: np.ndarray, gap: np.ndarray) -> None:
    """Replace chunk ``k`` by these references (same count), updating its index row."""
    frame, wa, wg, wd = fmt.encode_chunk(addr, sizew, gap, None, fmt.compressor())
    parts.chunks[k] = frame
    parts.index["wa"][k], parts.index["wg"][k], parts.index["wd"][k] = wa, wg, wd


def seal(parts: Parts, path: str | Path) -> Path:
    """Write the parts as a trace file with a valid header CRC and content digest."""
    cctx = fmt.compressor()
    body = bytearray()
    index = parts.index.copy()
    for k, frame in enumerate(parts.chunks):
        if parts.place_chunks and k < index.shape[0]:
            index[k]["offset"] = fmt.HEADER_SIZE + len(body)
            index[k]["length"] = len(frame)
        body += frame
    sections = []
    meta = (
        fmt.encode_json(parts.meta, cctx)
        if parts.meta_text is None
        else cctx.compress(parts.meta_text)
    )
    tables = fmt.encode_tables(parts.tables, cctx)
    if parts.toc_text is not None:  # same arrays after another table of contents
        raw = fmt.decompress(tables, "tables")
        (hlen,) = struct.unpack_from("<Q", raw)
        toc = parts.toc_text
        tables = cctx.compress(struct.pack("<Q", len(toc)) + toc + raw[8 + hlen :])
    for blob in (meta, tables, cctx.compress(index.tobytes())):
        sections += [fmt.HEADER_SIZE + len(body), len(blob)]
        body += blob
    body += parts.trailer
    t = parts.tables
    counts = parts.counts or (
        t["strand_frame"].shape[0],
        t["frame_parent"].shape[0],
        t["edge_src"].shape[0],
        int(index["n"].astype(np.int64).sum()),
        index.shape[0],
        int(t["strand_instr"].sum()),
    )
    header = fmt.pack_header(
        flags=parts.flags,
        counts=tuple(int(c) % (1 << 64) for c in counts),  # type: ignore[arg-type]
        sections=tuple(sections),  # type: ignore[arg-type]
        digest=hashlib.blake2b(bytes(body), digest_size=32).digest(),
    )
    path = Path(path)
    path.write_bytes(header + bytes(body))
    return path


def with_reference(src: str | Path, dst: str | Path, i: int, addr: int, size: int) -> Path:
    """Copy trace ``src`` to ``dst`` with reference ``i`` replaced by (addr, size), sealed.

    ``size`` may be 0 (the format stores 7 bits of size, so 0 is the one bad size it can
    hold); the write flag and gap are kept.
    """
    parts = read(src)
    first = parts.index["first"].astype(np.int64)
    k = int(np.searchsorted(first, i, side="right")) - 1
    a, sw, g = decode(parts, k)
    j = i - int(first[k])
    a[j] = addr
    sw[j] = (sw[j] & 0x80) | size
    encode(parts, k, a, sw, g)
    return seal(parts, dst)


def assert_refused(src: str | Path, damage, message: str, out: Path) -> Path:
    """Damage a copy of trace ``src`` (``damage(parts)``), seal it as ``out`` and check that
    opening it, and validating it, raises ``TraceFormatError`` "``out``: ..." matching
    the regular expression ``message``."""
    from simsched.errors import TraceFormatError
    from simsched.trace import open_trace, validate

    parts = read(src)
    damage(parts)
    bad = seal(parts, out)
    with pytest.raises(TraceFormatError, match=f"^{re.escape(str(bad))}: (.*)?({message})"):
        open_trace(bad)
    with pytest.raises(TraceFormatError):
        validate(bad)
    return bad


def reseal_bytes(data: bytes) -> bytes:
    """Give a damaged file a valid header CRC and content digest again (its counts and
    section table as they are), so only the checks behind the digest can refuse it."""
    if len(data) < fmt.HEADER_SIZE:
        return data
    digest = hashlib.blake2b(data[fmt.HEADER_SIZE :], digest_size=32).digest()
    head = bytearray(data[: fmt.HEADER_SIZE])
    head[120:152] = digest
    head[16:20] = b"\0\0\0\0"
    head[16:20] = zlib.crc32(bytes(head)).to_bytes(4, "little")
    return bytes(head) + data[fmt.HEADER_SIZE :]


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """A private SIMSCHED_CACHE_DIR for a test module (baselines; kernels shared)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIMSCHED_CACHE_DIR", str(shared_kernels_cache(tmp_path_factory.mktemp("cache"))))
        yield
