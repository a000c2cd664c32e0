"""Fixtures of the capture tests: a private build cache and the programs, built once."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from simsched.capture import build, compile_program
from simsched.trace import open_trace
from tests.conftest import private_cache

PROGRAMS = Path(__file__).resolve().parents[2] / "traces" / "programs"

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="valgrind is not installed"
)


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private SIMSCHED_CACHE_DIR for the whole session (the compiled kernels shared)."""
    d = private_cache(tmp_path_factory.mktemp("simsched-cache"))
    mp = pytest.MonkeyPatch()
    mp.setenv("SIMSCHED_CACHE_DIR", str(d))
    yield d
    mp.undo()


@pytest.fixture(scope="session")
def bindir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the test programs are built."""
    return tmp_path_factory.mktemp("bin")


def compile_gcc(cache: Path, bindir: Path, source: str, name: str, *flags: str) -> Path:
    """Build a program with ``simsched cc`` (gcc backend)."""
    out = bindir / name
    if not out.exists():
        rc = compile_program([*flags, str(PROGRAMS / source), "-o", str(out), "-lm"])
        assert rc == 0
    return out


def compile_plain(bindir: Path, source: str, name: str, *flags: str) -> Path:
    """Build a program with plain gcc and simsched.h (valgrind backend)."""
    out = bindir / name
    if not out.exists():
        cmd = ["gcc", *flags, f"-I{build.source_dir()}", str(PROGRAMS / source), "-o", str(out)]
        subprocess.run([*cmd, "-lm"], check=True, capture_output=True)
    return out


def data_refs(trace: Path, binary: Path, *, constants: bool = True) -> Counter:
    """Multiset of (region key, size, write) of a trace's heap and global references.

    Globals become (symbol, offset) via ``nm``; heap addresses are taken relative to the
    lowest heap address referenced; stack addresses (above 4 GiB in non-PIE programs,
    natively and under valgrind) are left out, and so are loads of read-only data
    (``nm`` types r/R: the compiler's constant pool) unless ``constants``.
    """
    syms = []
    end = None
    for line in subprocess.run(["nm", str(binary)], capture_output=True, text=True).stdout.split(
        "\n"
    ):
        parts = line.split()
        if len(parts) == 3 and parts[1] in "bBdDrRgGsS":
            syms.append((int(parts[0], 16), parts[2], parts[1] in "rR"))
            if parts[2] == "_end":
                end = int(parts[0], 16)
    syms.sort()
    starts = np.array([a for a, _, _ in syms], np.uint64)
    with open_trace(trace) as t:
        c = t.refs(0, t.header.n_refs)
        addr, size, write = c.addr, c.size, c.write
    glob = addr < end
    heap = (addr >= end) & (addr < 2**32)
    base = int(addr[heap].min()) if heap.any() else 0
    out: Counter = Counter()
    idx = np.searchsorted(starts, addr[glob], side="right") - 1
    for a, i, s, w in zip(addr[glob], idx, size[glob], write[glob], strict=True):
        if syms[i][2] and not constants:
            continue
        out[("g", syms[i][1], int(a) - syms[i][0], int(s), bool(w))] += 1
    keys = Counter(
        zip((addr[heap] - base).tolist(), size[heap].tolist(), write[heap].tolist(), strict=True)
    )
    for (a, s, w), n in keys.items():
        out[("h", a, s, bool(w))] += n
    return out
