"""What every benchmark script shares: its one JSON line, how it ends when interrupted,
where its scratch goes.

Every script prints its result as one JSON line through :func:`emit`, which adds the
whole process's cost beside the script's own figures (``process``: CPU seconds, its own
and its finished children's, wall seconds since :func:`run_main` started, and the host's
1-minute load average at the start and at the end).  These machines are shared: a figure
read without the load it was measured under cannot be compared with another.

A benchmark runs for minutes and is often stopped with Ctrl-C.  That is normal use, not an
error, so a script ends the way simsched's CLI does: one line on stderr and exit status 130,
no traceback.  Scripts keep their scratch files in a ``tempfile.TemporaryDirectory`` unless
told to keep them (``scratch_folder``), so the files go on the way out too.

A mistake in a script's arguments (a machine or scheduler that does not exist, a spec
file that is missing) is a user error as in the CLI: one line naming it and exit status 2.
So is a ``simsched`` child that ended with status 2, simsched's own exit status for a user
error, whose one line the child has already printed.

A script imports this module where it runs as a script (its ``__main__`` block or
``main``): run as ``python benchmarks/bench_x.py``, the benchmark folder is first on
``sys.path``.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_START: dict[str, Any] = {}

#: ``python -c`` code that runs simsched's CLI as the installed ``simsched`` does, without
#: depending on which ``simsched`` comes first on PATH; its exit status is the CLI's.
CLI_ENTRY = "import sys; from simsched.cli import main; sys.exit(main(sys.argv[1:]))"


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run ``cmd`` to its end, its standard output thrown away; return its (CPU, wall)
    seconds.  CPU is user + system of the child and of what it waited for, the
    operating system's own accounting of finished children."""
    kids = resource.RUSAGE_CHILDREN
    r0, t0 = resource.getrusage(kids), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(kids)
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, wall


def cli_command(*args: str) -> list[str]:
    """The command that runs ``simsched ARGS`` in a child process with this Python."""
    return [sys.executable, "-c", CLI_ENTRY, *args]


def _text(output: str | bytes | None) -> str:
    """A child's captured output as text, whether it was captured as bytes or not."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def check_child(p: subprocess.CompletedProcess, what: str) -> None:
    """Raise if the captured child ``p`` failed: exit status 2 (a user error, which the
    child named in its last line) as :class:`subprocess.CalledProcessError`, which
    :func:`run_main` reports as one line; any other status as a ``RuntimeError`` that
    quotes the end of the child's stderr."""
    if p.returncode == 2:
        raise subprocess.CalledProcessError(2, p.args, p.stdout, p.stderr)
    if p.returncode:
        raise RuntimeError(f"{what} failed: {_text(p.stderr).strip().splitlines()[-3:]}")


def emit(record: dict, *, sort_keys: bool = False) -> None:
    """Print ``record`` as the script's one JSON line, with the process's cost added, and
    the host's speed at the start and at the end (:func:`simsched.host.speed_reference`,
    best of three; its own CPU time is not counted in the process's)."""
    from simsched.host import process_cpu_s, speed_reference

    wall0 = _START.get("wall", time.perf_counter())
    process = {
        "cpu_s": round(process_cpu_s() - _START.get("host_cpu", 0.0), 3),
        "wall_s": round(time.perf_counter() - wall0, 3),
        "loadavg_1m_start": _START.get("load", os.getloadavg()[0]),
        "loadavg_1m_end": round(os.getloadavg()[0], 2),
    }
    loop, gather, _ = speed_reference(3)
    start = _START.get("host", (loop, gather))
    process.update(
        host_python_ms_start=start[0],
        host_python_ms_end=loop,
        host_gather_ms_start=start[1],
        host_gather_ms_end=gather,
    )
    print(json.dumps({**record, "process": process}, sort_keys=sort_keys), flush=True)


def run_main(main: Callable[[], object]) -> None:
    """Call a benchmark's ``main``; Ctrl-C ends the process with one line and status 130,
    a user error (simsched's, or a child's exit status 2) with one line and status 2."""
    from simsched.errors import SimschedError
    from simsched.host import speed_reference

    name = Path(sys.argv[0]).name
    loop, gather, spent = speed_reference(3)  # before the clocks start: not the script's
    _START.update(
        host=(loop, gather),
        host_cpu=spent,
        wall=time.perf_counter(),
        load=round(os.getloadavg()[0], 2),
    )
    try:
        main()
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except SimschedError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except subprocess.CalledProcessError as exc:
        if exc.returncode != 2:
            raise
        # The child's one line names the mistake: already on stderr, or passed on here when
        # its output was captured.
        said = _text(exc.stderr).splitlines()
        if said:
            print(said[-1], file=sys.stderr)
        raise SystemExit(2) from None


@contextlib.contextmanager
def scratch_folder(keep: str | Path | None, prefix: str) -> Iterator[Path]:
    """``keep`` (created if missing, left in place), or a temporary folder removed on exit."""
    if keep is not None:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield Path(keep)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)
