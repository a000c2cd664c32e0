"""Fixtures for engine tests: small random fork/join traces and a stand-in memory system."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from simsched.engine._kernels import WINDOW_SOURCE
from simsched.trace import TraceBuilder

_STUB_ACCESS = """
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def access(st, core, addr, size, is_write, now):
    # A deterministic stand-in: one shared "line state" per 128-byte line in a small
    # table, so that the order of references across cores changes latencies.
    line = (addr >> 7) & 1023
    last = st[0][line]
    st[0][line] = now + 1
    st[1][1] += 1
    if last == 0:
        return np.int64(40)
    if now - last < 200:
        return np.int64(1)
    return np.int64(12)
"""


class StubMemory:
    """Fixed-rule memory stand-in that hosts the engine kernel like ``MemorySystem`` does."""

    def __init__(self, tmp_path: Path, name: str = "stub_mem"):
        path = tmp_path / f"{name}.py"
        path.write_text(_STUB_ACCESS + WINDOW_SOURCE)
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        self.module = mod
        self.state = (np.zeros(1024, np.int64), np.zeros(2, np.int64))


def random_program(
    b: TraceBuilder,
    rng: np.random.Generator,
    depth: int,
    max_children: int,
    max_refs: int,
    space: int,
) -> None:
    """Emit a random fork/join frame body: refs, spawns (recursing), syncs."""

    def refs():
        k = int(rng.integers(0, max_refs + 1))
        if k:
            addrs = rng.integers(0, space, size=k).astype(np.uint64) * 8
            b.refs(addrs, 8, rng.random(k) < 0.3, rng.integers(0, 4, size=k))
        if rng.random() < 0.3:
            b.instr(int(rng.integers(1, 20)))

    def body(d):
        refs()
        if d < depth:
            for _ in range(int(rng.integers(2 if d == 0 else 0, max_children + 1))):
                b.spawn()
                body(d + 1)
                b.ret()
                refs()
                if rng.random() < 0.2:
                    b.sync()
                    refs()

    body(0)


def make_trace(
    path: Path,
    seed: int = 0,
    depth: int = 4,
    max_children: int = 3,
    max_refs: int = 30,
    space: int = 4096,
) -> Path:
    """Write a small random fork/join trace and return its path."""
    rng = np.random.default_rng(seed)
    with TraceBuilder(
        path,
        program="random",
        args=[f"seed={seed}"],
        backend="synthetic",
        gaps_exact=True,
        line_size_hint=64,
    ) as b:
        random_program(b, rng, depth, max_children, max_refs, space)
    return path


@pytest.fixture
def stub_memory(tmp_path):
    return StubMemory(tmp_path)
