"""How every benchmark script ends when it is interrupted.

A benchmark runs for minutes and is often stopped with Ctrl-C.  That is normal use, not an
error, so a script ends the way simsched's CLI does: one line on stderr and exit status 130,
no traceback.  Scripts keep their scratch files in a ``tempfile.TemporaryDirectory`` (unless
told to keep them), so the files go on the way out too.

A script imports this module inside its ``__main__`` block: run as
``python benchmarks/bench_x.py``, the benchmark folder is first on ``sys.path``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def run_main(main: Callable[[], object]) -> None:
    """Call a benchmark's ``main``; Ctrl-C ends the process with one line and status 130."""
    try:
        main()
    except KeyboardInterrupt:
        print(f"{Path(sys.argv[0]).name}: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
