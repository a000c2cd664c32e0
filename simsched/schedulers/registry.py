"""Scheduler registry: one dict from names (and aliases) to scheduler classes.

Built-in policies register here; out-of-tree policies are found through the entry-point
group ``simsched.schedulers`` (``name = "package.module:Class"`` in the plug-in's
``pyproject.toml``), loaded the first time the registry is read, so that a broken
plug-in cannot break ``import simsched``.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from simsched.errors import ConfigError
from simsched.schedulers.asteal import AdaptiveSteal
from simsched.schedulers.base import Scheduler
from simsched.schedulers.cab import CacheAwareBiTier
from simsched.schedulers.cats import CacheAwareTaskStealing
from simsched.schedulers.laws import LocalityAware, LocalityAwareNC
from simsched.schedulers.pdf import ParallelDepthFirst
from simsched.schedulers.saws import StableAdaptiveWorkStealing
from simsched.schedulers.ws import WorkStealing
from simsched.schedulers.ws_equi import AdaptiveWorkStealing

ENTRY_POINT_GROUP = "simsched.schedulers"

#: Names and aliases of every known scheduler class.
REGISTRY: dict[str, type[Scheduler]] = {}

_plugin_errors: dict[str, str] = {}
_plugins_loaded = False


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
    if not (isinstance(cls, type) and issubclass(cls, Scheduler)) or not cls.name:
        raise ConfigError(f"{cls!r} is not a Scheduler subclass with a name")
    for key in (cls.name, *cls.aliases):
        old = REGISTRY.get(key)
        if old is not None and old is not cls and not replace:
            raise ConfigError(f"scheduler name {key!r} is already taken by {old.__name__}")
        REGISTRY[key] = cls
    return cls


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
            if getattr(cls, "name", "") != ep.name:
                cls = type(cls.__name__, (cls,), {"name": ep.name, "aliases": ()})
            register(cls)
        except Exception as exc:  # a broken plug-in is reported when it is asked for
            _plugin_errors[ep.name] = f"{type(exc).__name__}: {exc}"


def scheduler_names() -> list[str]:
    """Canonical names of all known schedulers (built-in and plug-ins), sorted."""
    _load_plugins()
    return sorted({cls.name for cls in REGISTRY.values()})


def get_scheduler(name: str) -> type[Scheduler]:
    """The scheduler class called ``name`` (or one of its aliases).

    Raises
    ------
    ConfigError
        When no scheduler has that name; the message lists the known names.
    """
    _load_plugins()
    key = str(name).strip().lower()
    cls = REGISTRY.get(key)
    if cls is not None:
        return cls
    if key in _plugin_errors:
        raise ConfigError(f"scheduler {name!r}: plug-in failed to load ({_plugin_errors[key]})")
    raise ConfigError(f"scheduler {name!r}: unknown (known: {', '.join(sorted(REGISTRY))})")


register(WorkStealing)
register(ParallelDepthFirst)
register(LocalityAware)
register(LocalityAwareNC)
register(CacheAwareTaskStealing)
register(CacheAwareBiTier)
register(AdaptiveWorkStealing)
register(StableAdaptiveWorkStealing)
register(AdaptiveSteal)
