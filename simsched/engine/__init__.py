"""The replay engine (DESIGN.md §5): cores, clocks, strand states, event loop; no policy.

:class:`~simsched.engine.replay.Engine` replays one trace on one machine under one
scheduler; the per-reference loop is Numba code appended to the memory model's generated
module (:mod:`simsched.engine._kernels`).  Most users call :func:`simsched.run`.
"""

from simsched.engine.replay import DEFAULT_WINDOW, Engine, EngineResult

__all__ = ["DEFAULT_WINDOW", "Engine", "EngineResult"]
