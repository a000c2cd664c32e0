"""Ctrl-C while a program is still loading its libraries: one line and status 130.

A study script spends its first second importing numpy, pandas, matplotlib and numba, and
an interrupt there ended in a KeyboardInterrupt traceback from inside those libraries and a
death by the signal, where the rest of the script answers Ctrl-C with one line and status
130.  Python offers no hook before a script's imports, so a script run as a program calls
:func:`while_loading` first, before its other imports (ruff's E402 is off for the scripts
for that reason): it sets a SIGINT handler that prints that line and exits with 130 (a
``SystemExit``, so ``finally`` blocks still run).  The script's runner calls :func:`restore`
before ``main``, giving Python's own handler back: from there Ctrl-C is a KeyboardInterrupt
that unwinds the work and that the runner reports.  A notebook that imports a script as a
module keeps its own handling: the call is under ``if __name__ == "__main__"``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

#: Exit status of a program ended by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "simsched"
    print(f"{prog}: interrupted (Ctrl-C)", file=sys.stderr)
    raise SystemExit(INTERRUPTED)


def while_loading() -> None:
    """Until :func:`restore`, Ctrl-C prints ``PROG: interrupted (Ctrl-C)`` and exits 130."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_interrupt)


def restore() -> None:
    """Give SIGINT back to Python (KeyboardInterrupt), if :func:`while_loading` took it."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is _on_interrupt
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)
