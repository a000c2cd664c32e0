"""Fixtures of the capture tests: a private build cache and the programs, built once."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from simsched.capture import build, compile_program

PROGRAMS = Path(__file__).resolve().parents[2] / "traces" / "programs"

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="valgrind is not installed"
)


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private SIMSCHED_CACHE_DIR for the whole session."""
    d = tmp_path_factory.mktemp("simsched-cache")
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
