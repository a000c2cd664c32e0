"""One name registry for every kind of plug-in: schedulers, processor controllers, workloads.

A :class:`Registry` is a dict from names and aliases to entries (``Registry.entries``, the
``REGISTRY`` / ``WORKLOADS`` dicts the packages export), plus the entry-point group where
outside packages declare more (``[project.entry-points."simsched.schedulers"]`` in their
``pyproject.toml``).  The group is read the first time a name is looked up or the names
are listed, not at import, so that a broken plug-in cannot break ``import simsched``;
a plug-in that fails to load is reported when it is asked for, with its error.

Every kind looks a name up the same way: surrounding blanks and case do not matter
(``" WS"`` is ``ws``), anything but a string is no name, and an unknown name gives one
:class:`~simsched.errors.ConfigError` listing the known ones.  Written here rather than
taken from a plug-in library (pluggy, stevedore) because what is needed is a dict and
``importlib.metadata.entry_points``; those libraries bring hook calling and driver
managers that nothing here uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Generic, TypeVar

from simsched.errors import ConfigError, described, shown

__all__ = [
    "PLUGIN_GROUPS",
    "Registry",
    "class_registry",
    "name_key",
    "registered_source",
    "set_source_lookup",
]

#: Per kind of plug-in, how the package that owns its registry finds the source identity
#: of an entry registered in this process (:func:`set_source_lookup`).
_SOURCE_LOOKUPS: dict[str, Callable[[str], str | None]] = {}


def set_source_lookup(kind: str, lookup: Callable[[str], str | None]) -> None:
    """Say how to find the source identity of a ``kind`` plug-in registered in this
    process (:func:`registered_source`): the package that owns the registry sets it, for
    lower layers that may not import that package (the trace layer's cache keys)."""
    _SOURCE_LOOKUPS[kind] = lookup


def registered_source(kind: str, name: str) -> str | None:
    """The source identity (:func:`simsched.identity.outside_source_identity`) of the
    ``kind`` plug-in called ``name`` registered in this process from outside simsched;
    None for a built-in one, an unknown name, or a kind without a lookup."""
    lookup = _SOURCE_LOOKUPS.get(kind)
    return None if lookup is None else lookup(name)


#: The entry-point group of each kind of plug-in.
PLUGIN_GROUPS = {
    "scheduler": "simsched.schedulers",
    "controller": "simsched.controllers",
    "workload": "simsched.workloads",
}

T = TypeVar("T")


def name_key(name: object) -> str | None:
    """The lookup key of ``name``: stripped and lower-case; None for a non-string."""
    return name.strip().lower() if isinstance(name, str) else None


class Registry(Generic[T]):
    """Names and aliases of one kind of plug-in.

    Parameters
    ----------
    kind
        What the entries are, for messages (``"scheduler"``).
    group
        Entry-point group of outside plug-ins (``"simsched.schedulers"``).
    names_of
        The names an entry registers under: its canonical name first, then its aliases.
    adapt
        Turns what an entry point loads into an entry, given the entry point's name
        (a scheduler class renamed to the entry point's name, a generator module wrapped
        in a :class:`~simsched.workloads.Workload`); it raises for an object that is no
        entry of this kind.
    check
        Raises :class:`ConfigError` for an object that cannot be registered.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        names_of: Callable[[T], Iterable[str]],
        adapt: Callable[[object, str], T],
        check: Callable[[object], None] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self.entries: dict[str, T] = {}
        self._names_of = names_of
        self._adapt = adapt
        self._check = check
        self._plugin_errors: dict[str, str] = {}
        self._plugins_loaded = False

    def register(self, entry: T, *, replace: bool = False) -> T:
        """Register ``entry`` under its name and aliases.

        Parameters
        ----------
        entry
            The class or object to register.
        replace
            Allow replacing another entry registered under one of the same names.

        Returns
        -------
        object
            ``entry`` (so that ``register`` can decorate a class).

        Raises
        ------
        ConfigError
            ``entry`` is not of this kind, or one of its names is taken by another entry.
        """
        if self._check is not None:
            self._check(entry)
        names = [name_key(n) for n in self._names_of(entry)]
        if not names or any(not n for n in names):
            raise ConfigError(f"{entry!r}: a {self.kind} needs a non-empty name")
        for key in names:
            old = self.entries.get(key)  # type: ignore[arg-type]
            if old is not None and old is not entry and not replace:
                taken = getattr(old, "__name__", None) or repr(old)
                raise ConfigError(f"{self.kind} name {key!r} is already taken by {taken}")
        for key in names:
            self.entries[key] = entry  # type: ignore[index]
        return entry

    def load_plugins(self) -> None:
        """Register the entry points of :attr:`group` (once); failures are kept for
        :meth:`get` to report."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in metadata.entry_points(group=self.group):
            try:
                if name_key(ep.name) in self.entries:  # never replaces a built-in silently
                    raise ConfigError(f"the name {ep.name!r} is taken by a built-in {self.kind}")
                self.register(self._adapt(ep.load(), ep.name))
            except Exception as exc:  # a broken plug-in is reported when it is asked for
                self._plugin_errors[name_key(ep.name) or ep.name] = described(exc)

    def plugin_errors(self) -> dict[str, str]:
        """Entry points of :attr:`group` that failed to load, name -> error (read once)."""
        self.load_plugins()
        return dict(self._plugin_errors)

    def names(self) -> list[str]:
        """Canonical names of every entry (built in and plug-ins), sorted."""
        self.load_plugins()
        out = set()
        for entry in self.entries.values():
            out.add(name_key(next(iter(self._names_of(entry)))))
        return sorted(n for n in out if n)

    def get(self, name: object) -> T:
        """The entry called ``name`` (or one of its aliases).

        Raises
        ------
        ConfigError
            When no entry has that name: the message lists the known names, or gives the
            error of the plug-in of that name that failed to load.
        """
        key = name_key(name)
        if key is not None and key in self.entries:
            return self.entries[key]
        self.load_plugins()
        if key is not None and key in self.entries:
            return self.entries[key]
        if key in self._plugin_errors:
            raise ConfigError(
                f"{self.kind} {name!r}: plug-in failed to load ({self._plugin_errors[key]})"
            )
        raise ConfigError(f"unknown {self.kind} {shown(name)} (known: {', '.join(self.names())})")


def class_registry(kind: str, group: str, base: type) -> Registry:
    """A registry of ``base`` subclasses named by their ``name`` and ``aliases`` class
    attributes (schedulers, controllers).

    A plug-in class whose ``name`` differs from its entry point's name is registered under
    the entry point's name, with no aliases, so that the name in ``pyproject.toml`` is the
    one users type.
    """

    def check(cls: object) -> None:
        if not (isinstance(cls, type) and issubclass(cls, base)) or not getattr(cls, "name", ""):
            raise ConfigError(f"{cls!r} is not a {base.__name__} subclass with a name")

    def adapt(cls: object, name: str) -> type:
        check(cls)
        assert isinstance(cls, type)
        if getattr(cls, "name", "") != name:
            # in the plug-in's module, not simsched.registry, for reprs and error notes
            attrs = {"name": name, "aliases": (), "__module__": cls.__module__}
            cls = type(cls.__name__, (cls,), attrs)
        return cls

    return Registry(kind, group, lambda c: (c.name, *c.aliases), adapt, check)
