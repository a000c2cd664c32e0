"""What every benchmark script shares: how it ends when interrupted, where its scratch goes.

A benchmark runs for minutes and is often stopped with Ctrl-C.  That is normal use, not an
error, so a script ends the way simsched's CLI does: one line on stderr and exit status 130,
no traceback.  Scripts keep their scratch files in a ``tempfile.TemporaryDirectory`` unless
told to keep them (``scratch_folder``), so the files go on the way out too.

A script imports this module where it runs as a script (its ``__main__`` block or
``main``): run as ``python benchmarks/bench_x.py``, the benchmark folder is first on
``sys.path``.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def run_main(main: Callable[[], object]) -> None:
    """Call a benchmark's ``main``; Ctrl-C ends the process with one line and status 130."""
    try:
        main()
    except KeyboardInterrupt:
        print(f"{Path(sys.argv[0]).name}: interrupted", file=sys.stderr)
        raise SystemExit(130) from None


@contextlib.contextmanager
def scratch_folder(keep: str | Path | None, prefix: str) -> Iterator[Path]:
    """``keep`` (created if missing, left in place), or a temporary folder removed on exit."""
    if keep is not None:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield Path(keep)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)
