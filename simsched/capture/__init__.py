"""Capturing real programs into simsched traces.

A program marks its fork/join structure with the macros of ``capture/simsched.h``
(``SS_SPAWN``, ``SS_SYNC``, ``SS_ITER``, ``SS_ROI_BEGIN``, ``SS_ROI_END``) and runs once,
serially, under a capture backend that writes the raw stream of
``capture/simsched_raw.h``; :func:`capture` imports it into a trace.

* :mod:`simsched.capture.build` builds the backends' native parts on first use into
  ``$SIMSCHED_CACHE_DIR`` (default ``~/.cache/simsched``).
* :mod:`simsched.capture.run` compiles programs (``simsched cc``) and runs captures
  (``simsched capture``).
* :mod:`simsched.capture.cilk` rewrites Cilk programs (``cilk_spawn``, ``cilk_sync``,
  ``cilk_for``, ``cilk_scope``) into the markers; :mod:`simsched.capture.cilkcc` puts
  the rewrite into ``simsched cc``'s build.

See ``docs/capture.md``.
"""

from __future__ import annotations

from simsched.capture.build import cache_dir, gcc_runtime, source_dir, valgrind_tool
from simsched.capture.run import (
    BACKENDS,
    CaptureResult,
    capture,
    cc_command,
    compile_program,
    count_markers,
)

__all__ = [
    "BACKENDS",
    "CaptureResult",
    "cache_dir",
    "capture",
    "cc_command",
    "compile_program",
    "count_markers",
    "gcc_runtime",
    "source_dir",
    "valgrind_tool",
]
