"""A small independent reader of the raw capture stream, for tests.

It mirrors ``ss_raw_rec`` of ``capture/simsched_raw.h`` with its own NumPy dtype (a u8,
b u4, c u2, kind u1, flags u1, little-endian) so that the tests check the C writers
against the header, not against the importer they feed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import zstandard

RAW = np.dtype([("a", "<u8"), ("b", "<u4"), ("c", "<u2"), ("kind", "u1"), ("flags", "u1")])


def read_raw(path: str | Path) -> np.ndarray:
    """Return every record of a raw stream (plain or zstd) as a structured array."""
    data = Path(path).read_bytes()
    if data[:4] == b"\x28\xb5\x2f\xfd":
        data = zstandard.ZstdDecompressor().stream_reader(data).read()
    assert len(data) % 16 == 0, "a raw stream is a whole number of 16-byte records"
    return np.frombuffer(data, RAW)


def write_raw(path: str | Path, records: list[tuple[int, int, int, int, int]]) -> None:
    """Write records ``(a, b, c, kind, flags)`` as a plain raw stream."""
    Path(path).write_bytes(np.array(records, RAW).tobytes())
