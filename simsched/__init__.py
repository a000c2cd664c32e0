"""simsched: a trace-driven CMP/NUMA task-scheduling simulator.

Replay a trace of a task-parallel program on a simulated multicore machine under a
scheduler: :func:`run` (one scheduler) and :func:`compare` (several), each returning
:class:`RunResult` records.  Sub-packages: ``trace`` (trace files), ``workloads``
(synthetic generators), ``machine`` (machine descriptions), ``memory`` (cache and DRAM
model), ``engine`` (the replay), ``schedulers``, ``experiments`` (sweeps and results),
``profile`` (working-set profiles), ``capture`` (tracing real programs), ``plotting``.

The names below are loaded on first use, so ``import simsched`` stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JobsResult", "RunResult", "__version__", "compare", "run", "run_jobs"]

_API = ("run", "compare", "run_jobs", "RunResult", "JobsResult")


def __getattr__(name: str) -> Any:
    # ``simsched.run`` / ``simsched.compare`` (simsched.api) and ``__version__`` are computed
    # on first use, so that ``import simsched`` stays light and free of import cycles.
    if name == "__version__":
        from simsched.identity import version

        return version()
    if name in _API:
        from simsched import api

        return getattr(api, name)
    raise AttributeError(f"module 'simsched' has no attribute {name!r}")


def __dir__() -> list[str]:
    # help(simsched) and tab completion see the lazily loaded names too.
    return sorted(set(globals()) | set(__all__))
