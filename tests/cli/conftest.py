"""Shared fixtures of the command-line tests: a tiny trace and a way to run a command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simsched.cli import main
from simsched.workloads import generate

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def fib_trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("traces") / "fib.sst"
    generate("fib", path, n=12)
    return path


@pytest.fixture
def cli(capsys):
    """Run ``simsched ARGS`` in this process: (exit status, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as info:
            main([str(a) for a in args])
        out = capsys.readouterr()
        code = info.value.code
        return (0 if code is None else code), out.out, out.err

    return run


def run_process(*args: str, stdout=None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``simsched ARGS`` as a separate process (for real file descriptors)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from simsched.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=timeout,
    )
