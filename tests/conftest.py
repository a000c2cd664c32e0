"""Shared test settings: hypothesis profiles and small fixtures."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

from simsched.files import cache_dir

settings.register_profile(
    "simsched",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    max_examples=int(os.environ.get("SIMSCHED_HYPOTHESIS_EXAMPLES", "60")),
)
settings.load_profile("simsched")

# A test run started in the background of a non-interactive shell inherits SIGINT ignored,
# and so would every simsched process the Ctrl-C tests start (an ignored signal stays
# ignored across exec).  A user's terminal never does that: restore the default here.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _compile_untraced() -> None:
    """Let Numba compile without coverage's tracer on the compiling thread.

    ``make test COVERAGE=1`` measures coverage, and on Python 3.11 a thread with a trace function
    runs every Python frame on the interpreter's slow path: Numba's compiler, which is
    Python, then took about 40 % longer (32.2 against 22.9 s for two random link
    topologies of ``tests/memory/test_links.py``), and compiling is most of the suite's
    time.  What a compile runs is Numba's code, not simsched's, so the measurement loses
    nothing but the lines of simsched's own compile-time hooks.  The tracer is put back
    as it was, so the frames around the compile are measured as before.
    """
    from numba.core.dispatcher import Dispatcher

    compile_for_args = getattr(Dispatcher, "_compile_for_args", None)
    if compile_for_args is None:  # another Numba: slower under coverage, no worse
        return

    def untraced(self, *args, **kws):
        tracer = sys.gettrace()
        if tracer is None:
            return compile_for_args(self, *args, **kws)
        sys.settrace(None)
        try:
            return compile_for_args(self, *args, **kws)
        finally:
            sys.settrace(tracer)

    Dispatcher._compile_for_args = untraced


_compile_untraced()


def private_cache(root: Path) -> Path:
    """Make ``root`` a private SIMSCHED_CACHE_DIR that shares the session's compiled kernels.

    A test that checks what simsched caches (baselines, CAB's footprints) needs a cache of
    its own, but recompiling the Numba kernels into every such cache cost minutes; the
    kernel folder is keyed by the kernels' source, so sharing it changes no result.  The
    caller sets the environment variable.
    """
    shared = cache_dir("kernels")
    shared.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    (root / "kernels").symlink_to(shared, target_is_directory=True)
    return root
