"""The memory/engine contract (docs/architecture.md §4), pinned from both sides.

The engine may use only: ``MemorySystem(machine)``, ``.state``, ``.run_cores`` (signature
:data:`simsched.memory.window.DRIVER_SIGNATURE`), ``.page_limit()``, ``.grow()``,
``.stats()``, ``.core_counter_reader()`` and the names of :mod:`simsched.memory.window`.  Every caller of the batch
loop ``_serve`` checks the status it leaves in MISC.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import simsched.engine
from simsched.memory import MemorySystem
from simsched.memory import _kernels as K
from simsched.memory import window as W
from tests.memory._streams import machine

ROOT = Path(simsched.engine.__file__).parents[1]
M2 = machine([{"size": 2048, "assoc": 2, "line": 64}], sockets=2, placement="first-touch")


def test_generated_driver_has_the_pinned_signature_and_named_constants():
    src = K.generate_source(K.geometry_of(M2))
    assert f"def {W.DRIVER_SIGNATURE}:" in src
    # The template is filled from the named constants: no placeholder survives, and the
    # return codes appear as their values times CODE_MUL.
    assert "{" not in src.split("def run_cores", 1)[1].split("\n\n\n")[0]
    for code in (W.R_DONE, W.R_REFILL, W.R_LIMIT, W.R_GROW, W.R_INVALID):
        assert f"{code} * {W.CODE_MUL}" in src
    assert W.DRIVER_TEMPLATE.count("{R_") >= 5


def test_engine_uses_only_the_contract():
    """No engine module imports memory internals or calls private kernels."""
    for path in (ROOT / "engine").glob("*.py"):
        text = path.read_text()
        assert "memory._" not in text, path.name  # _kernels and its generator parts
        assert "memory.system" not in text, path.name
        assert not re.search(r"\._serve\b|\._batch\b|\.module\b|st\[len\(", text), path.name


def test_every_serve_caller_checks_the_status():
    callers = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        if "_serve(" in text and "def _serve" not in text:
            callers.append(path.name)
            assert "MISC_STATUS" in text, path.name
    assert sorted(callers) == ["system.py", "window.py"]


def test_page_budget_is_computed_by_the_memory_model_only():
    assert "page_limit" in inspect.getsource(MemorySystem)
    for path in (ROOT / "engine").glob("*.py"):
        text = path.read_text()
        assert "shape[0] // 2" not in text and "pages_per_ref" not in text, path.name


def test_invalid_reference_is_reported_by_both_entry_points():
    mem = MemorySystem(M2)
    with pytest.raises(ValueError, match="reference 1"):
        mem.access_batch(0, np.array([64, 1 << 60, 128], np.uint64), 8, False, 0)
    mem = MemorySystem(M2)
    P = M2.cores
    cs = np.zeros((W.NF, P), np.int64)
    buf = np.zeros((P, 4), np.int64)
    buf[0, :2] = [64, 1 << 60]
    cs[W.F_STATE, 0] = W.S_RUN
    cs[W.F_LEN, 0] = 2
    cs[W.F_LAST, 0] = 1
    code = mem.run_cores(
        mem.state,
        cs,
        np.zeros(P, np.int64),
        buf,
        np.full((P, 4), 8, np.uint8),
        np.zeros((P, 4), np.bool_),
        np.zeros((P, 4), np.bool_),
        np.zeros((P, 4), np.uint32),
        np.int64(W.INF),
        np.int64(0),
        np.int64(1),
        np.int64(mem.page_limit()),
    )
    assert divmod(int(code), W.CODE_MUL) == (W.R_INVALID, 0)


def test_timing_is_a_run_time_value():
    """Two machines that differ only in latencies share one compiled module."""
    a = machine([{"size": 2048, "assoc": 2, "line": 64}], latency=200)
    b = machine([{"size": 2048, "assoc": 2, "line": 64}], latency=201)
    ma, mb = MemorySystem(a), MemorySystem(b)
    assert ma.module is mb.module
    la = ma.access(0, 4096, 8, False, 0)
    lb = mb.access(0, 4096, 8, False, 0)
    assert lb == la + 1
