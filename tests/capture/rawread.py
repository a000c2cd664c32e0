"""A small independent reader and writer of the raw capture stream, for tests.

It mirrors ``ss_raw_rec`` and ``ss_raw_block`` of ``capture/simsched_raw.h`` with its own
NumPy dtypes and decodes version-2 blocks with a plain Python loop, record by record, the
way the header's comment describes them, so that the tests check the C writers against
the header and the importer's Numba decoder against an obvious oracle.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import zstandard

RAW = np.dtype([("a", "<u8"), ("b", "<u4"), ("c", "<u2"), ("kind", "u1"), ("flags", "u1")])
MAGIC = 0x3157415253534953
BLOCK_MAGIC = 0x32425353  # "SSB2"
ESCAPE = WIDE = 0xFF
M64 = (1 << 64) - 1


def _decode_v2(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """Decode a version-2 stream (header record included) into version-1 tuples."""
    out = [tuple(int(x) for x in np.frombuffer(data[:16], RAW)[0])]
    last = [0] * 256
    pos = 16
    while pos < len(data):
        magic, n, n_esc, n_wide, planes, zero = struct.unpack_from("<6I", data, pos)
        assert magic == BLOCK_MAGIC and zero == 0 and 0 < n <= 65536
        pos += 24
        meta = data[pos : pos + n]
        slot = data[pos + n : pos + 2 * n]
        gap = data[pos + 2 * n : pos + 3 * n]
        pos += 3 * n
        plane = {}
        for p in range(8):
            if planes >> p & 1:
                plane[p] = data[pos : pos + n]
                pos += n
        esc = np.frombuffer(data, RAW, count=n_esc, offset=pos)
        pos += 16 * n_esc
        wide = list(struct.unpack_from(f"<{n_wide}I", data, pos))
        pos += 4 * n_wide
        e = 0
        for i in range(n):
            if meta[i] == ESCAPE:
                out.append(tuple(int(x) for x in esc[e]))
                e += 1
                continue
            assert meta[i] <= 9, f"bad meta byte {meta[i]}"
            z = sum(plane[p][i] << (8 * p) for p in plane)
            d = (z >> 1) ^ (-(z & 1) & M64)
            a = (last[slot[i]] + d) & M64
            last[slot[i]] = a
            g = wide.pop(0) if gap[i] == WIDE else gap[i]
            out.append((a, g, 1 << (meta[i] >> 1), 1, meta[i] & 1))
        assert e == n_esc and not wide
    return out


def read_raw(path: str | Path) -> np.ndarray:
    """Return every record of a raw stream (version 1 or 2, plain or zstd) as an array."""
    data = Path(path).read_bytes()
    if data[:4] == b"\x28\xb5\x2f\xfd":
        data = zstandard.ZstdDecompressor().stream_reader(data).read()
    head = np.frombuffer(data[:16], RAW)[0]
    if int(head["kind"]) == 0 and int(head["a"]) == MAGIC and int(head["b"]) == 2:
        return np.array(_decode_v2(data), RAW)
    assert len(data) % 16 == 0, "a raw stream is a whole number of 16-byte records"
    return np.frombuffer(data, RAW)


def write_raw(path: str | Path, records: list[tuple[int, int, int, int, int]]) -> None:
    """Write records ``(a, b, c, kind, flags)`` as a plain version-1 raw stream."""
    Path(path).write_bytes(np.array(records, RAW).tobytes())


def encode_v2(
    records: list[tuple[int, int, int, int, int]],
    *,
    block: int = 65536,
    slot_of=lambda i, rec: (rec[0] >> 6) & 0xFF,  # noqa: E731 - any choice decodes the same
) -> bytes:
    """Encode records (the first a header record naming version 2) as a version-2 stream.

    REF records of sizes 1, 2, 4, 8, 16 go to the columns, every other record is escaped;
    ``slot_of(index, record)`` chooses the predictor slot, ``block`` the records per block.
    """
    out = [np.array([records[0]], RAW).tobytes()]
    last = [0] * 256
    body = records[1:]
    for s in range(0, len(body), block):
        part = body[s : s + block]
        meta, slot, gap, zs, esc, wide = [], [], [], [], [], []
        for i, (a, b, c, kind, flags) in enumerate(part):
            if kind == 1 and c in (1, 2, 4, 8, 16) and flags in (0, 1):
                k = slot_of(s + i, (a, b, c, kind, flags))
                d = (a - last[k]) & M64
                last[k] = a
                zs.append(((d << 1) ^ (M64 if d >> 63 else 0)) & M64)
                meta.append((c.bit_length() - 1) << 1 | flags)
                slot.append(k)
                if b >= WIDE:
                    gap.append(WIDE)
                    wide.append(b)
                else:
                    gap.append(b)
            else:
                meta.append(ESCAPE)
                slot.append(0)
                gap.append(0)
                zs.append(0)
                esc.append((a, b, c, kind, flags))
        anyz = 0
        for z in zs:
            anyz |= z
        planes = sum(1 << p for p in range(8) if (anyz >> (8 * p)) & 0xFF)
        n = len(part)
        chunk = [struct.pack("<6I", BLOCK_MAGIC, n, len(esc), len(wide), planes, 0)]
        chunk += [bytes(meta), bytes(slot), bytes(gap)]
        chunk += [bytes((z >> (8 * p)) & 0xFF for z in zs) for p in range(8) if planes >> p & 1]
        chunk += [np.array(esc, RAW).tobytes(), struct.pack(f"<{len(wide)}I", *wide)]
        out += chunk
    return b"".join(out)
