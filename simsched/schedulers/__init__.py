"""Scheduling policies (docs/architecture.md §4.3): one module per policy, the protocol, the registry.

``REGISTRY`` maps names and aliases to classes; :func:`get_scheduler` looks one up and
raises :class:`simsched.errors.ConfigError` with the known names when it is unknown.
"""

from simsched.schedulers.base import (
    EDGE_CONT,
    EDGE_JOIN,
    EDGE_SPAWN,
    RETRY,
    RUN,
    SLEEP,
    WAIT,
    SchedContext,
    Scheduler,
    retry,
    run,
)
from simsched.schedulers.cab import CacheAwareBiTier
from simsched.schedulers.pdf import ParallelDepthFirst
from simsched.schedulers.registry import REGISTRY, get_scheduler, register, scheduler_names
from simsched.schedulers.ws import WorkStealing

__all__ = [
    "EDGE_CONT",
    "EDGE_JOIN",
    "EDGE_SPAWN",
    "REGISTRY",
    "RETRY",
    "RUN",
    "SLEEP",
    "WAIT",
    "CacheAwareBiTier",
    "ParallelDepthFirst",
    "SchedContext",
    "Scheduler",
    "WorkStealing",
    "get_scheduler",
    "register",
    "retry",
    "run",
    "scheduler_names",
]
