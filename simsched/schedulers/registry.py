"""Scheduler registry: one dict from names (and aliases) to scheduler classes.

Built-in policies register here; out-of-tree policies are found through the entry-point
group ``simsched.schedulers`` (``name = "package.module:Class"`` in the plug-in's
``pyproject.toml``), loaded the first time the registry is read, so that a broken
plug-in cannot break ``import simsched``.
"""

from __future__ import annotations

from simsched.registry import PLUGIN_GROUPS, Registry, class_registry
from simsched.schedulers.asteal import AdaptiveSteal
from simsched.schedulers.base import Scheduler
from simsched.schedulers.cab import CacheAwareBiTier
from simsched.schedulers.cats import CacheAwareTaskStealing
from simsched.schedulers.laws import LocalityAware, LocalityAwareNC
from simsched.schedulers.pdf import ParallelDepthFirst
from simsched.schedulers.saws import StableAdaptiveWorkStealing
from simsched.schedulers.ws import WorkStealing
from simsched.schedulers.ws_equi import AdaptiveWorkStealing

ENTRY_POINT_GROUP = PLUGIN_GROUPS["scheduler"]


SCHEDULERS: Registry[type[Scheduler]] = class_registry("scheduler", ENTRY_POINT_GROUP, Scheduler)

#: Names and aliases of every known scheduler class.
REGISTRY: dict[str, type[Scheduler]] = SCHEDULERS.entries


def register(cls: type[Scheduler], *, replace: bool = False) -> type[Scheduler]:
    """Register a scheduler class under its ``name`` and ``aliases``.

    Parameters
    ----------
    cls
        A :class:`~simsched.schedulers.base.Scheduler` subclass with a non-empty ``name``.
    replace
        Allow replacing an existing registration of the same name.

    Returns
    -------
    type
        ``cls`` (so that the function can be used as a class decorator).
    """
    return SCHEDULERS.register(cls, replace=replace)


def scheduler_names() -> list[str]:
    """Canonical names of all known schedulers (built-in and plug-ins), sorted."""
    return SCHEDULERS.names()


def get_scheduler(name: str) -> type[Scheduler]:
    """The scheduler class called ``name`` (or one of its aliases; blanks and case do not
    matter).

    Raises
    ------
    ConfigError
        When no scheduler has that name; the message lists the known names.
    """
    return SCHEDULERS.get(name)


register(WorkStealing)
register(ParallelDepthFirst)
register(LocalityAware)
register(LocalityAwareNC)
register(CacheAwareTaskStealing)
register(CacheAwareBiTier)
register(AdaptiveWorkStealing)
register(StableAdaptiveWorkStealing)
register(AdaptiveSteal)
