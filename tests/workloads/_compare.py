"""Helpers shared by the workload tests: run a generator and its oracle into recorders."""

from __future__ import annotations

import numpy as np

from simsched.workloads import WORKLOADS
from tests.oracles.workloads import Recorder


def record(name: str, emitter, **params):
    """Run ``emitter(b, p, heap)`` (a generator's emit or its oracle) into a Recorder."""
    w = WORKLOADS[name]
    p = w.resolve(params)
    heap = w.layout(p)
    r = Recorder()
    out = emitter(r, p, heap)
    r.close()
    return r, out, p, heap


def assert_same_stream(fast: Recorder, slow: Recorder) -> None:
    """The two recorders saw the same DAG events and, strand by strand, the same refs."""
    ef, sf = fast.canonical()
    es, ss = slow.canonical()
    assert ef == es, "different DAG events"
    assert len(sf) == len(ss)
    names = ("addr", "size", "write", "gap")
    for i, (a, b) in enumerate(zip(sf, ss, strict=True)):
        for f, name in enumerate(names):
            x, y = a[f], b[f]
            assert len(x) == len(y), f"strand {i}: {len(x)} refs, oracle {len(y)}"
            bad = np.flatnonzero(x != y)
            assert not len(bad), f"strand {i}: {name} differs first at ref {bad[0]}"
        assert a[4] == b[4], f"strand {i}: tail {a[4]}, oracle {b[4]}"


#: frame columns that make a DAG's shape
SHAPE_COLUMNS = ("parent", "level", "branching", "spawn_index", "iteration")


def assert_shape_of_capture(tmp_path, sample, name: str, footprint_tol: float, **params):
    """The generator's trace has the frames of a captured sample, column by column.

    ``sample`` is a file of ``traces/samples`` (or an absolute path) captured from the C
    program the generator models.  The capture's data footprint (distinct 64-byte lines) may exceed the generator's
    by ``footprint_tol`` of it plus 4 KiB: it also sees the stack and a few globals.
    """
    from pathlib import Path

    from simsched.trace import open_trace, summary
    from simsched.workloads import generate

    captured = Path(__file__).resolve().parents[2] / "traces" / "samples" / sample
    if Path(sample).is_absolute():
        captured = Path(sample)
    out = tmp_path / "gen.sst"
    h = generate(name, out, **params)
    with open_trace(captured) as c, open_trace(out) as g:
        assert len(c.frames) == len(g.frames) == h.n_frames
        for col in SHAPE_COLUMNS:
            x, y = getattr(c.frames, col), getattr(g.frames, col)
            bad = np.flatnonzero(x != y)
            assert not len(bad), f"frame {bad[0]}: {col} {y[bad[0]]}, captured {x[bad[0]]}"
        assert c.header.n_strands == g.header.n_strands
        assert np.array_equal(c.edges.kind, g.edges.kind)
        sc, sg = summary(c), summary(g)
    for key in ("levels", "branching", "branching_by_level", "iterations", "frames_per_iteration"):
        assert sc[key] == sg[key], key
    # the capture also touches a few stack and global lines
    diff = sc["footprint_bytes"] - sg["footprint_bytes"]
    assert 0 <= diff <= footprint_tol * sg["footprint_bytes"] + 4096, (
        sc["footprint_bytes"],
        sg["footprint_bytes"],
    )
    return sc, sg
