"""The replay engine (docs/architecture.md §3): cores, clocks, jobs, events; no policy.

:class:`~simsched.engine.replay.Engine` replays one trace on one machine under one
scheduler; :class:`~simsched.engine.replay.Replay` replays a set of jobs under a
processor controller (:mod:`simsched.engine.controllers`).  The per-reference loop is the
memory model's window loop (:mod:`simsched.memory.window`), driven by
:class:`~simsched.engine.cores.CoreDriver`.  Most users call :func:`simsched.run`.
"""

from simsched.engine.job import JobSpec
from simsched.engine.outcome import EngineResult, ReplayResult
from simsched.engine.replay import DEFAULT_WINDOW, Engine, Replay

__all__ = ["DEFAULT_WINDOW", "Engine", "EngineResult", "JobSpec", "Replay", "ReplayResult"]
