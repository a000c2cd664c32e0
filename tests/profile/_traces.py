"""Random fork/join traces for the profiler tests, built with TraceBuilder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simsched.trace import TraceBuilder


def random_program(b: TraceBuilder, rng: np.random.Generator, depth: int, lines: int) -> None:
    """A random frame: references, spawns (0-4 per phase), syncs, nested to ``depth``.

    Addresses are drawn from ``lines`` 64-byte lines with sizes up to 16 bytes and odd
    offsets, so some references straddle two lines.
    """

    def refs(k: int) -> None:
        if k:
            base = rng.integers(0, lines, k) * 64
            off = rng.choice([0, 8, 56, 60], k)
            b.refs(
                base + off,
                rng.choice([1, 4, 8, 16], k),
                rng.random(k) < 0.25,
                rng.integers(0, 3, k),
            )

    refs(int(rng.integers(0, 6)))
    if depth == 0:
        return
    for _phase in range(int(rng.integers(1, 3))):
        for _ in range(int(rng.integers(0, 5))):
            b.spawn()
            random_program(b, rng, depth - 1, lines)
            b.ret()
            refs(int(rng.integers(0, 3)))
        if rng.random() < 0.7:
            b.sync()
            refs(int(rng.integers(0, 4)))
        b.instr(int(rng.integers(0, 5)))


def build_random(path: Path, seed: int, depth: int = 3, lines: int = 64) -> Path:
    """Write a random trace to ``path`` and return it."""
    rng = np.random.default_rng(seed)
    with TraceBuilder(path, program="random", args=[f"seed={seed}"], line_size_hint=64) as b:
        random_program(b, rng, depth, lines)
    return path


def build_fanout(path: Path, fanout: int, words: int = 32) -> Path:
    """main spawns ``fanout`` children that each sweep their own ``words`` 8-byte words."""
    with TraceBuilder(path, program="fanout") as b:
        b.ref(0, 8, True)
        for i in range(fanout):
            b.spawn()
            b.refs(4096 * (i + 1) + 8 * np.arange(words), 8, False)
            b.ret()
        b.sync()
        b.ref(0, 8, False)
    return path


def machine_file(path: Path, name: str = "custom", line: int = 64) -> Path:
    """Write a one-core machine file named ``name`` (a 10 MB L2 of ``line``-byte lines) to
    ``path`` and return it."""
    import yaml

    from simsched.machine import load_machine

    data = load_machine("itrs-scaling-1").as_dict()
    data["name"] = name
    data["caches"][0]["line"] = min(line, 128)
    data["caches"][-1]["line"] = line
    data["memory"]["page_size"] = max(data["memory"]["page_size"], line)
    path.write_text(yaml.safe_dump(data))
    return path
