"""Helpers shared by the tests of the sweep runner, its points and its executors: a fake
spec, the CLI in this process or in a child, waits on a log."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

from simsched.cli import main
from simsched.experiments import load_spec

HERE = Path(__file__).parent


SPEC = """
name: fake
workloads:
  - {name: w, generator: fake, params: {n: 10, sleep: SLEEP, fail: FAIL}}
machines: ["itrs-scaling-{1,2}"]
schedulers: [ws, {name: pdf, seeds: [0]}]
seeds: [0, 1]
"""


def make_spec(tmp_path: Path, sleep: float = 0.0, fail: bool = False) -> Path:
    path = tmp_path / "fake.yaml"
    path.write_text(
        textwrap.dedent(SPEC).replace("SLEEP", str(sleep)).replace("FAIL", str(fail).lower())
    )
    return path


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def cli_cmd(spec: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from simsched.cli import main; main(sys.argv[1:])",
        "sweep",
        "run",
        str(spec),
        "--no-progress",
        "--point-fn",
        "sweep_pointfns:fake_point",
        *extra,
    ]


def until(check, timeout: float = 10.0):
    """``check()``'s first true value, or its last value after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


def main_exit(args: list[str]) -> int:
    """The exit status of ``simsched ARGS``."""
    with pytest.raises(SystemExit) as info:
        main(args)
    return info.value.code or 0


def wait_for(log: Path, word: str, count: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count(word) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {count} {word!r} in {log} after {timeout} s")


def temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if ".tmp" in p.name]


def sweep_run_exit(spec: Path, point_fn: str, capsys) -> tuple[object, str]:
    """`sweep run SPEC` in this process with a point function of sweep_pointfns: its exit
    status and stderr."""
    args = ["sweep", "run", str(spec), "--workers", "0", "--no-progress"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--point-fn", f"sweep_pointfns:{point_fn}"])
    return info.value.code, capsys.readouterr().err


def gone(pid: int) -> bool:
    """Whether a process has exited (a zombie nobody reaped counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def fib_sweep(tmp_path, rest):
    """A sweep of a tiny generated fib on itrs-scaling-2, the spec ending in ``rest``."""
    spec = tmp_path / "real.yaml"
    spec.write_text(
        "name: real\nworkloads: [{generator: fib, params: {n: 8, cutoff: 2}}]\n"
        "machines: [itrs-scaling-2]\n" + rest
    )
    return load_spec(spec, small=False)
