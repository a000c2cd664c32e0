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
