"""Golden raw streams in the Pin tool's dialect, imported by simsched's importer.

The Pin tool (pintools/simsched_pin.cpp) cannot run here (no Pin kit), so its output
format is pinned down by a golden file written exactly as the tool writes: header with
backend 3 (pin) and the exact-gaps flag, references with per-record gaps (0 for the second
operand of one instruction), GAP records before markers, a final END marker.  The test
checks the file against the record list below and the trace imported from it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simsched.trace import EDGE_CONT, EDGE_JOIN, EDGE_SPAWN, import_raw, open_trace

from .rawread import read_raw, write_raw

GOLDEN = Path(__file__).with_name("data") / "pin_golden.raw"
MAGIC = 0x3157415253534953
HEADER, REF, GAP, MARKER = 0, 1, 3, 4
SPAWN, SPAWN_END, SYNC, ROI_BEGIN, ROI_END, END = 1, 2, 3, 5, 6, 7

# (a, b, c, kind, flags): main reads x, spawns a child that does `add [y], 1` (a read and a
# write by one instruction: the second gap is 0), syncs, writes z.
RECORDS = [
    (MAGIC, 1, 3, HEADER, 1),
    (0, 7, 0, GAP, 0),  # start-up instructions before the ROI marker
    (0, 0, ROI_BEGIN, MARKER, 0),
    (0x1000, 2, 8, REF, 0),  # 2 instructions, then a read of x
    (0, 3, 0, GAP, 0),
    (0, 0, SPAWN, MARKER, 0),
    (0x2000, 1, 4, REF, 0),  # child: add [y], 1
    (0x2000, 0, 4, REF, 1),
    (0, 2, 0, GAP, 0),
    (0, 0, SPAWN_END, MARKER, 0),
    (0, 0, SYNC, MARKER, 0),
    (0x3000, 4, 8, REF, 1),  # main writes z
    (0, 0, ROI_END, MARKER, 0),
    (0, 9, 0, GAP, 0),
    (0, 0, END, MARKER, 0),
]


def test_golden_file_is_the_documented_record_list(tmp_path):
    fresh = tmp_path / "fresh.raw"
    write_raw(fresh, RECORDS)
    assert GOLDEN.read_bytes() == fresh.read_bytes()
    recs = read_raw(GOLDEN)
    assert recs.shape[0] == len(RECORDS) and recs.itemsize == 16


def test_importer_reads_the_pin_dialect(tmp_path):
    h = import_raw(GOLDEN, tmp_path / "p.sst", program="golden", args=["1"])
    assert h.backend == "pin" and h.gaps_exact and h.roi
    assert (h.n_strands, h.n_frames, h.n_refs) == (4, 2, 4)
    with open_trace(tmp_path / "p.sst") as t:
        c = t.refs(0, 4)
        np.testing.assert_array_equal(c.addr, [0x1000, 0x2000, 0x2000, 0x3000])
        np.testing.assert_array_equal(c.size, [8, 4, 4, 8])
        np.testing.assert_array_equal(c.write, [False, False, True, True])
        np.testing.assert_array_equal(c.gap, [2, 1, 0, 4])
        np.testing.assert_array_equal(t.strands.frame, [0, 1, 0, 0])
        np.testing.assert_array_equal(np.diff(t.strands.ref_start), [1, 2, 0, 1])
        edges = sorted(
            zip(t.edges.src.tolist(), t.edges.dst.tolist(), t.edges.kind.tolist(), strict=True)
        )
        assert edges == [
            (0, 1, EDGE_SPAWN),
            (0, 2, EDGE_CONT),
            (1, 3, EDGE_JOIN),
            (2, 3, EDGE_CONT),
        ]
