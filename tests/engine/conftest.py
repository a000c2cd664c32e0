"""Fixtures for engine tests: small random fork/join traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simsched.trace import TraceBuilder


def random_program(
    b: TraceBuilder,
    rng: np.random.Generator,
    depth: int,
    max_children: int,
    max_refs: int,
    space: int,
    dep_share: float = 0.0,
) -> None:
    """Emit a random fork/join frame body: refs, spawns (recursing), syncs; a share
    ``dep_share`` of the references is marked dependent (drawn only when it is not 0, so
    that the other traces stay as they were)."""

    def refs():
        k = int(rng.integers(0, max_refs + 1))
        if k:
            addrs = rng.integers(0, space, size=k).astype(np.uint64) * 8
            writes, gaps = rng.random(k) < 0.3, rng.integers(0, 4, size=k)
            deps = rng.random(k) < dep_share if dep_share else False
            b.refs(addrs, 8, writes, gaps, deps)
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


def iterated_tasks(
    path: Path,
    iterations: int = 3,
    lines: int = 16,
    stride: int = 4096,
    gap: int = 2,
    instr: int = 0,
    writes: bool = False,
) -> Path:
    """Write an iterative program of four tasks per iteration, task ``k`` reading (and,
    with ``writes``, every other task writing) ``lines`` lines from ``stride * k``, then
    running ``instr`` more instructions (100 000: CPU-bound, so LAWS and CATS fall back
    to WS after the first iteration)."""
    with TraceBuilder(path, program="iters", gaps_exact=True, line_size_hint=64) as b:
        for it in range(iterations):
            b.iteration(it)
            for k in range(4):
                b.spawn()
                addrs = np.arange(lines, dtype=np.uint64) * 64 + stride * k
                b.refs(addrs, 8, writes and k % 2 == 0, gap)
                if instr:
                    b.instr(instr)
                b.ret()
            b.sync()
    return path


def make_trace(
    path: Path,
    seed: int = 0,
    depth: int = 4,
    max_children: int = 3,
    max_refs: int = 30,
    space: int = 4096,
    chunk_refs: int = 97,
    stack: tuple[int, int] | None = None,
    dep_share: float = 0.0,
) -> Path:
    """Write a small random fork/join trace and return its path (small chunks, so that
    strands cross chunk boundaries and the engine moves cores from chunk to chunk).

    ``stack``: the stack region the trace names (addresses lie below ``8 * space``);
    ``dep_share``: the share of references marked dependent (docs/machine-model.md §6.1)."""
    rng = np.random.default_rng(seed)
    with TraceBuilder(
        path,
        program="random",
        args=[f"seed={seed}"],
        backend="synthetic",
        gaps_exact=True,
        line_size_hint=64,
        chunk_refs=chunk_refs,
        stack=stack,
    ) as b:
        random_program(b, rng, depth, max_children, max_refs, space, dep_share)
    return path
