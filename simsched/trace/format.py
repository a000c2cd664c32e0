"""Trace format v2 (``.sst``): layout, header and codecs, shared by the writer and the reader.

File layout (all integers little-endian; the full specification is ``docs/trace-format.md``)::

    [fixed header, 160 bytes]
    [reference chunks]   each one zstd frame (with content checksum) of CHUNK_REFS refs at most
    [meta section]       zstd(JSON): backend, program, args, parameters, ...
    [tables section]     zstd(JSON table of contents + raw arrays): strands, frames, edges
    [index section]      zstd(array of INDEX_DTYPE): one row per chunk

The fixed header holds the counts, the offset and length of each section, a CRC-32 of itself
and a BLAKE2b-256 digest of every byte after it.  Chunks cover consecutive references, so a
reader streams them one by one and never holds the whole trace.  Everything is plain arrays and
JSON: the reader never unpickles anything.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

import numpy as np
import zstandard

from simsched.errors import TraceFormatError
from simsched.files import parse_json
from simsched.trace import _kernels

MAGIC = b"SIMSCHT\x00"
VERSION = 3
#: versions this reader accepts: a v1 file is a v2 file whose chunks have no dependence
#: column (its index rows' ``wd`` byte, padding in v1, is zero) and no repeat flag; a v2
#: file is a v3 file that also stores every frame's whole position key (LEGACY_TABLES)
READ_VERSIONS = (1, 2, 3)
HEADER = struct.Struct("<8sHHII4x6Q6Q32s8x")
HEADER_SIZE = HEADER.size
assert HEADER_SIZE == 160

FLAG_GAPS_EXACT = 1
#: the meta section names the captured thread's stack region (``"stack": [lo, hi]``): the
#: replay gives each core its own copy of it (docs/capture.md, "Per-worker stacks")
FLAG_STACK = 2
#: the meta section describes a repeated part (``"repeat"``): the file stores one copy of
#: it and the reader replays it ``count`` times (docs/trace-format.md, "Repeated parts");
#: defined since version 2
FLAG_REPEAT = 4
#: every flag bit this version defines; a reader refuses a header with any other bit set
FLAGS = FLAG_GAPS_EXACT | FLAG_STACK | FLAG_REPEAT
#: the flag bits each version defines
VERSION_FLAGS = {1: FLAG_GAPS_EXACT | FLAG_STACK, 2: FLAGS, 3: FLAGS}

EDGE_SPAWN = 0
EDGE_CONT = 1
EDGE_JOIN = 2
EDGE_KINDS = {EDGE_SPAWN: "spawn", EDGE_CONT: "continuation", EDGE_JOIN: "join"}

#: references per chunk written by default (about 1-2 MB compressed for typical programs)
CHUNK_REFS = 1 << 20
#: largest size of one reference (the low 7 bits of the size/write byte)
MAX_REF_SIZE = 127
#: every byte a reference touches lies below 2**ADDRESS_BITS
ADDRESS_BITS = _kernels.ADDRESS_BITS
ADDRESS_LIMIT = 1 << ADDRESS_BITS
#: most instructions a trace may have in all (1.1e15, some 40,000 times the largest
#: published workload): the engine's int64 cycle counts sum them over the cores (a strand
#: of 2^62 instructions ended a run in a "deadlock", one of 2^60 gave negative idle cycles)
MAX_INSTRUCTIONS = 1 << 50
#: largest iteration number (``frame_iteration`` is int64; -1 means "before the first mark")
MAX_ITERATION = (1 << 63) - 1

_FAULTS = {
    _kernels.REF_BAD_SIZE: "its size is not in 1..{max_size}",
    _kernels.REF_BAD_ADDRESS: f"its address is not below 2^{ADDRESS_BITS}",
    _kernels.REF_WRAPS: f"it runs past 2^{ADDRESS_BITS}",
}


def key_hash(key: tuple[int, ...]) -> int:
    """A frame's position key (child indices from main) as the table's ``key_hash``.

    BLAKE2b-64 of the key as little-endian int32s, defined here once; :func:`key_hashes`
    computes the same values for a whole frame table.
    """
    h = hashlib.blake2b(digest_size=8)
    h.update(np.asarray(key, dtype="<i4").tobytes())
    return int.from_bytes(h.digest(), "little")


def position_key(parent: np.ndarray, spawn_index: np.ndarray, f: int) -> tuple[int, ...]:
    """Frame ``f``'s position key: the spawn indices on its path from main (``()``: main).

    A key is its parent's followed by its own spawn index (main's children: just that
    index), so the frame table holds every key without storing it; walking up costs the
    frame's depth.
    """
    path = []
    while f > 0:
        path.append(int(spawn_index[f]))
        f = int(parent[f])
    return tuple(reversed(path))


def key_hashes(parent: np.ndarray, spawn_index: np.ndarray) -> np.ndarray:
    """:func:`key_hash` of every frame's position key, in time and memory linear in frames.

    Hashing each whole key costs the sum of the frames' depths, the square of the depth
    for a deep recursion; BLAKE2b is a stream, so a frame's hash state is its parent's
    with the frame's own index appended.  Parents come before their children (the
    tables' order), and a frame's state is dropped once its last child has taken it.
    """
    n = len(parent)
    out = np.zeros(n, np.uint64)
    if n == 0:
        return out
    par = np.asarray(parent, np.int64)
    last = np.full(n, -1, np.int64)
    kids = np.flatnonzero(par[1:] >= 0) + 1
    np.maximum.at(last, par[kids], kids)
    root = hashlib.blake2b(digest_size=8)
    out[0] = int.from_bytes(root.digest(), "little")
    state = {0: root}
    idx = np.asarray(spawn_index, "<i4").tobytes()
    for f in kids.tolist():
        p = int(par[f])
        h = state[p].copy() if last[p] != f else state.pop(p)
        h.update(idx[4 * f : 4 * f + 4])
        out[f] = int.from_bytes(h.digest(), "little")
        if last[f] >= 0:
            state[f] = h
    return out


def _fail_ref(where: str, addr: int, size: int, fault: int, max_size: int) -> None:
    reason = _FAULTS[fault].format(max_size=max_size)
    raise TraceFormatError(f"{where}: invalid reference (address {addr:#x}, size {size}): {reason}")


def check_refs(
    addr: np.ndarray,
    size: np.ndarray,
    where: Callable[[int], str],
    *,
    max_size: int = MAX_REF_SIZE,
) -> None:
    """Apply the reference rule to arrays of references; raise on the first invalid one.

    The rule (one definition, :func:`simsched.trace._kernels._ref_fault`, applied by the
    builder, the raw importer, the reader and therefore ``validate``): a reference's size
    is in ``1..max_size`` and every byte it touches lies below ``2**ADDRESS_BITS``.

    Parameters
    ----------
    addr
        Addresses (uint64, or integers that are converted; negative ones wrap and fail).
    size
        Sizes in bytes, one per address or a scalar.
    where
        ``where(i)`` names reference ``i`` for the message (file, chunk, index).
    max_size
        Largest size allowed (:data:`MAX_REF_SIZE` for references; the raw importer
        passes the width of its length field for block operations it splits itself).

    Raises
    ------
    TraceFormatError
        ``"{where(i)}: invalid reference (address ..., size ...): {reason}"``.
    """
    a = np.asarray(addr)
    if a.dtype != np.uint64:
        a = a.astype(np.int64).view(np.uint64) if a.dtype.kind == "i" else a.astype(np.uint64)
    a = np.atleast_1d(a)
    s = np.asarray(size)
    if s.dtype.kind not in "iu":
        s = s.astype(np.int64)
    s = np.broadcast_to(s, a.shape)
    i, fault = _kernels._first_bad_ref(a, s, max_size)
    if i >= 0:
        _fail_ref(where(int(i)), int(a[i]), int(s[i]), int(fault), max_size)


def check_ref(addr: int, size: int, where: Callable[[int], str]) -> None:
    """:func:`check_refs` for one reference given as Python integers (no arrays built)."""
    # The kernel takes 64-bit integers; anything outside is invalid anyway.
    a = np.uint64(addr if 0 <= addr < 1 << 64 else (1 << 64) - 1)
    s = np.uint64(size if 0 <= size < 1 << 64 else 0)
    fault = _kernels._ref_fault(a, s, MAX_REF_SIZE)
    if fault != _kernels.REF_OK:
        _fail_ref(where(0), addr, size, int(fault), MAX_REF_SIZE)


INDEX_DTYPE = np.dtype(
    [
        ("offset", "<u8"),  # file offset of the chunk's zstd frame
        ("length", "<u8"),  # its compressed length
        ("first", "<u8"),  # global index of its first reference
        ("n", "<u4"),  # references in it
        ("wa", "u1"),  # bytes per address delta (4 or 8)
        ("wg", "u1"),  # bytes per gap (1, 2 or 4)
        ("wd", "u1"),  # dependence column: 0 none (every reference independent), 1 a bitmap
        ("pad", "u1"),
    ]
)

#: the arrays of the tables section: name -> (dtype, length key)
TABLES: dict[str, tuple[str, str]] = {
    "strand_frame": ("<i8", "strands"),
    "strand_ref_start": ("<i8", "strands+1"),
    "strand_instr": ("<i8", "strands"),
    "strand_tail": ("<i8", "strands"),
    "frame_parent": ("<i8", "frames"),
    "frame_spawn_index": ("<i8", "frames"),
    "frame_branching": ("<i8", "frames"),
    "frame_level": ("<i8", "frames"),
    "frame_iteration": ("<i8", "frames"),
    "frame_first_strand": ("<i8", "frames"),
    "frame_last_strand": ("<i8", "frames"),
    "frame_key_hash": ("<u8", "frames"),
    "edge_src": ("<i8", "edges"),
    "edge_dst": ("<i8", "edges"),
    "edge_kind": ("u1", "edges"),
}

#: arrays a version 1 or 2 file also has: every frame's whole position key, which the
#: parents and spawn indices already give (:func:`position_key`); read past and dropped
LEGACY_TABLES: dict[str, tuple[str, str]] = {
    "frame_key_offsets": ("<i8", "frames+1"),
    "frame_key_values": ("<i4", "keys"),
}


class TraceMeta(TypedDict):
    """The meta section as :class:`~simsched.trace.TraceBuilder` writes it.

    A reader checks a stored one field by field (``structure.META_FIELDS``): traces by other
    writers may leave fields out.
    """

    backend: str
    program: str
    args: list[str]
    gaps_exact: bool
    line_size_hint: int
    params: dict[str, Any]
    roi: bool
    writer: str
    stack: NotRequired[list[int]]
    repeat: NotRequired[dict[str, int]]


@dataclass(frozen=True)
class TraceHeader:
    """What a trace says about itself: counts, provenance and content digest."""

    version: int
    backend: str
    program: str
    args: tuple[str, ...]
    gaps_exact: bool
    line_size_hint: int
    n_strands: int
    n_frames: int
    n_edges: int
    n_refs: int
    n_chunks: int
    n_instructions: int
    digest: str
    params: dict[str, Any] = field(default_factory=dict)
    roi: bool = False
    #: the captured thread's stack region ``(lo, hi)`` (bytes ``lo..hi-1``), or None
    stack: tuple[int, int] | None = None
    #: the repeated part as stored (meta field ``repeat``, :mod:`simsched.trace.repeat`) and
    #: what the file holds (``stored_strands``, ``stored_refs``, ...), or None; the counts
    #: above are always those of the whole program, every repetition included
    repeat: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-able view."""
        d = dict(self.__dict__)
        d["args"] = list(self.args)
        if self.stack is None:
            del d["stack"]  # traces without a stack region print as before
        else:
            d["stack"] = list(self.stack)
        if self.repeat is None:
            del d["repeat"]
        return d


def pack_header(
    *,
    flags: int,
    counts: tuple[int, int, int, int, int, int],
    sections: tuple[int, int, int, int, int, int],
    digest: bytes,
) -> bytes:
    """Build the fixed header with its CRC."""
    raw = HEADER.pack(MAGIC, VERSION, HEADER_SIZE, flags, 0, *counts, *sections, digest)
    crc = zlib.crc32(raw)
    return HEADER.pack(MAGIC, VERSION, HEADER_SIZE, flags, crc, *counts, *sections, digest)


def section_within(off_len: tuple[int, int], file_size: int) -> bool:
    """Whether a section at ``(offset, length)`` lies after the header and inside a file
    of ``file_size`` bytes (a truncated file's sections do not)."""
    off, ln = off_len
    return HEADER_SIZE <= off and off + ln <= file_size


def unpack_header(raw: bytes, source: str) -> dict[str, Any]:
    """Parse and check the fixed header; raise :class:`TraceFormatError` naming ``source``."""
    if len(raw) < HEADER_SIZE:
        if raw[: len(MAGIC)] != MAGIC[: len(raw)]:
            raise TraceFormatError(f"{source}: not a simsched trace (bad magic)")
        raise TraceFormatError(
            f"{source}: truncated: {len(raw)} bytes, shorter than the {HEADER_SIZE}-byte header"
        )
    magic, version, hsize, flags, crc, *rest = HEADER.unpack(raw[:HEADER_SIZE])
    if magic != MAGIC:
        raise TraceFormatError(f"{source}: not a simsched trace (bad magic {magic!r})")
    if version not in READ_VERSIONS:
        raise TraceFormatError(
            f"{source}: trace format version {version}; this simsched reads versions "
            f"{', '.join(map(str, READ_VERSIONS))}"
        )
    zeroed = raw[:16] + b"\0\0\0\0" + raw[20:HEADER_SIZE]
    if zlib.crc32(zeroed) != crc or hsize != HEADER_SIZE:
        raise TraceFormatError(f"{source}: header is corrupt (CRC mismatch in bytes 0-159)")
    known = VERSION_FLAGS[version]
    if flags & ~known:
        raise TraceFormatError(
            f"{source}: unknown flag bits {flags & ~known:#x} in the header (version {version} "
            f"defines {known:#x})"
        )
    if any(raw[20:24]) or any(raw[152:HEADER_SIZE]):
        raise TraceFormatError(f"{source}: reserved header bytes (20-23, 152-159) are not zero")
    counts = rest[:6]
    sections = rest[6:12]
    digest = rest[12]
    return {
        "version": version,
        "flags": flags,
        "n_strands": counts[0],
        "n_frames": counts[1],
        "n_edges": counts[2],
        "n_refs": counts[3],
        "n_chunks": counts[4],
        "n_instructions": counts[5],
        "meta": (sections[0], sections[1]),
        "tables": (sections[2], sections[3]),
        "index": (sections[4], sections[5]),
        "digest": digest,
    }


_CCTX_LEVEL = 3


def compressor(level: int = _CCTX_LEVEL) -> zstandard.ZstdCompressor:
    """A zstd compressor that writes content sizes and checksums."""
    return zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True)


_local = threading.local()


def decompress(buf: bytes, what: str, expected_size: int | None = None) -> bytes:
    """Decompress one zstd frame, turning any failure into :class:`TraceFormatError`."""
    dctx = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    try:
        claimed = zstandard.frame_content_size(buf)
        if expected_size is not None and claimed not in (-1, expected_size):
            raise TraceFormatError(
                f"{what}: the compressed frame claims {claimed} bytes, expected {expected_size}"
            )
        out = dctx.decompress(buf)
    except zstandard.ZstdError as exc:
        raise TraceFormatError(f"{what}: corrupt compressed data ({exc})") from None
    except MemoryError:
        # A damaged frame header can claim any size; decompress() allocates it up front.
        raise TraceFormatError(
            f"{what}: corrupt compressed data (claims {claimed} bytes)"
        ) from None
    if expected_size is not None and len(out) != expected_size:
        raise TraceFormatError(
            f"{what}: decompressed to {len(out)} bytes, expected {expected_size}"
        )
    return out


def encode_json(obj: Any, cctx: zstandard.ZstdCompressor) -> bytes:
    """Compress a JSON document."""
    return cctx.compress(json.dumps(obj, sort_keys=True).encode("utf-8"))


def decode_json(buf: bytes, what: str) -> Any:
    """Decompress and parse a JSON section (any way it fails is a :class:`TraceFormatError`
    naming ``what``: bad bytes, an over-long integer, nesting too deep)."""
    return parse_json(decompress(buf, what), what, TraceFormatError)


def encode_tables(arrays: dict[str, np.ndarray], cctx: zstandard.ZstdCompressor) -> bytes:
    """Serialise named arrays as a length-prefixed JSON table of contents plus raw bytes."""
    toc = []
    blobs = []
    pos = 0
    for name, (dtype, _) in TABLES.items():
        a = np.ascontiguousarray(arrays[name], dtype=dtype)
        toc.append({"name": name, "dtype": dtype, "length": int(a.shape[0]), "offset": pos})
        blobs.append(a.tobytes())
        pos += a.nbytes
    head = json.dumps(toc).encode("utf-8")
    return cctx.compress(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def decode_tables(buf: bytes, what: str, version: int = VERSION) -> dict[str, np.ndarray]:
    """Inverse of :func:`encode_tables`, checking every array's presence and extent.

    A file of a version before 3 may hold the :data:`LEGACY_TABLES` too; their entries are
    checked like the others (a type, an offset and a length within the section), and the
    arrays dropped.
    """
    legacy = LEGACY_TABLES if version < 3 else {}
    raw = decompress(buf, what)
    if len(raw) < 8:
        raise TraceFormatError(f"{what}: too short")
    (hlen,) = struct.unpack_from("<Q", raw)
    toc = parse_json(raw[8 : 8 + hlen], f"{what}: table of contents", TraceFormatError)
    body = memoryview(raw)[8 + hlen :]
    out: dict[str, np.ndarray] = {}
    try:
        for entry in toc:
            name, dtype = entry["name"], entry["dtype"]
            known = legacy if name in legacy else TABLES
            if name not in known or known[name][0] != dtype:
                raise TraceFormatError(f"{what}: unexpected array {name!r} of type {dtype!r}")
            dt = np.dtype(dtype)
            start, length = entry["offset"], entry["length"]
            # exact integers only: int() of Infinity raised OverflowError, of 1.5 truncated
            if not all(type(v) is int for v in (start, length)):
                raise TraceFormatError(
                    f"{what}: array {name!r} has offset {start!r} and length {length!r}, "
                    "not integers"
                )
            end = start + length * dt.itemsize
            if start < 0 or length < 0 or end > len(body):
                raise TraceFormatError(f"{what}: array {name!r} extends past the section")
            if name not in legacy:  # a legacy array is checked like any other, then dropped
                out[name] = np.frombuffer(body[start:end], dtype=dt)
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceFormatError(f"{what}: malformed table of contents ({exc})") from None
    missing = sorted(set(TABLES) - set(out))
    if missing:
        raise TraceFormatError(f"{what}: missing arrays {', '.join(missing)}")
    return out


def encode_chunk(
    addr: np.ndarray,
    sizew: np.ndarray,
    gap: np.ndarray,
    dep: np.ndarray | None,
    cctx: zstandard.ZstdCompressor,
) -> tuple[bytes, int, int, int]:
    """Encode and compress one chunk; returns (frame, address width, gap width, dependence
    width).  ``dep`` (bool, or None) marks references whose address depends on an earlier
    load; a chunk with none stores no dependence column (width 0)."""
    n = addr.shape[0]
    wa = 4 if _kernels._max_zigzag(addr, np.uint64(0)) < (1 << 32) else 8
    gmax = int(gap.max()) if n else 0
    wg = 1 if gmax < (1 << 8) else 2 if gmax < (1 << 16) else 4
    wd = 1 if dep is not None and bool(dep.any()) else 0
    payload = np.empty(n * (wa + 1 + wg) + wd * _dep_bytes(n), dtype=np.uint8)
    _kernels._encode(addr, sizew, gap, wa, wg, payload)
    if dep is not None and wd:
        payload[n * (wa + 1 + wg) :] = np.packbits(dep, bitorder="little")
    return cctx.compress(payload.data), wa, wg, wd


def _dep_bytes(n: int) -> int:
    return (n + 7) >> 3


@dataclass(frozen=True)
class RefChunk:
    """A run of consecutive references: ``start`` is the global index of the first one."""

    start: int
    addr: np.ndarray  # uint64
    size: np.ndarray  # uint8
    write: np.ndarray  # bool
    gap: np.ndarray  # uint32
    dep: np.ndarray  # bool: the address depends on an earlier load (docs/trace-format.md)

    def __len__(self) -> int:
        return int(self.addr.shape[0])

    def slice(self, lo: int, hi: int) -> RefChunk:
        """References ``[lo, hi)`` in chunk-local positions (views, no copy)."""
        return RefChunk(
            self.start + lo,
            self.addr[lo:hi],
            self.size[lo:hi],
            self.write[lo:hi],
            self.gap[lo:hi],
            self.dep[lo:hi],
        )

    @staticmethod
    def concat(parts: list[RefChunk]) -> RefChunk:
        """Join consecutive chunks into one."""
        if len(parts) == 1:
            return parts[0]
        return RefChunk(
            parts[0].start if parts else 0,
            np.concatenate([p.addr for p in parts]) if parts else np.empty(0, np.uint64),
            np.concatenate([p.size for p in parts]) if parts else np.empty(0, np.uint8),
            np.concatenate([p.write for p in parts]) if parts else np.empty(0, np.bool_),
            np.concatenate([p.gap for p in parts]) if parts else np.empty(0, np.uint32),
            np.concatenate([p.dep for p in parts]) if parts else np.empty(0, np.bool_),
        )


def decode_chunk(
    frame: bytes, row: np.void, what: str, out: tuple[np.ndarray, ...] | None = None
) -> RefChunk:
    """Decompress and decode one chunk described by its index row.

    ``out``: five arrays (uint64 addresses, uint8 sizes, bool writes, uint32 gaps, bool
    dependences) of at least the chunk's length to decode into; the chunk's columns are
    then views of them.
    """
    n, wa, wg, wd = int(row["n"]), int(row["wa"]), int(row["wg"]), int(row["wd"])
    if wa not in (4, 8) or wg not in (1, 2, 4) or wd not in (0, 1):
        raise TraceFormatError(f"{what}: invalid column widths {wa}/{wg}/{wd} in the index")
    body = n * (wa + 1 + wg)
    buf = np.frombuffer(decompress(frame, what, body + wd * _dep_bytes(n)), dtype=np.uint8)
    if out is None:
        addr = np.empty(n, np.uint64)
        size = np.empty(n, np.uint8)
        write = np.empty(n, np.bool_)
        gap = np.empty(n, np.uint32)
        dep = np.empty(n, np.bool_)
    else:
        addr, size, write, gap, dep = (x[:n] for x in out)
    _kernels._decode(buf, n, wa, wg, addr, size, write, gap)
    if wd:
        dep[:] = np.unpackbits(buf[body:], count=n, bitorder="little").view(np.bool_)
    else:
        dep[:] = False
    first = int(row["first"])
    check_refs(addr, size, lambda i: f"{what}, reference {i} (reference {first + i} of the trace)")
    return RefChunk(first, addr, size, write, gap, dep)
