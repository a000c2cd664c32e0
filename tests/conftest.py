"""Shared test settings: hypothesis profiles and small fixtures."""

from __future__ import annotations

import os
import signal
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
