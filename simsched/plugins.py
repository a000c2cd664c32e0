"""Which outside plug-ins a result depends on, and whether their source has changed since.

A record's ``code_identity`` (:func:`simsched.identity.results_identity`) names simsched's
own source only.  A run that used a plug-in -- a scheduler, a processor controller or a
workload generator installed from another package -- depends on that package's source
too, so its record also carries ``plugin_identity``: canonical JSON mapping
``"kind:name"`` to :func:`simsched.identity.outside_source_identity` of the package that
defines it.  A sweep compares it with the plug-ins installed now (:func:`plugins_changed`),
so that an edited plug-in's finished points count as stale as an edit to simsched would
(``sweep status``, ``sweep run --rerun-stale``).  Records of built-in plug-ins have no
such field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from simsched.canonical import canonical_json
from simsched.errors import ConfigError
from simsched.identity import outside_source_identity

#: The record field naming the outside plug-ins a run used.
PLUGIN_FIELD = "plugin_identity"


def _identity(kind: str, name: str) -> str | None:
    """:func:`~simsched.identity.outside_source_identity` of the module defining the
    plug-in of ``kind`` called ``name``; None for a built-in one, and when there is none
    (a kind or name no registry knows, or a plug-in that no longer loads)."""
    from simsched.engine.controllers import CONTROLLERS
    from simsched.schedulers.registry import SCHEDULERS
    from simsched.workloads import GENERATORS

    registry: Any = {"scheduler": SCHEDULERS, "controller": CONTROLLERS, "workload": GENERATORS}
    if kind not in registry:
        return None
    try:
        entry = registry[kind].get(name)
    except ConfigError:
        return None
    return outside_source_identity(
        entry.module.__name__ if kind == "workload" else entry.__module__
    )


def plugin_identity(uses: Iterable[tuple[str, str]], recorded: str | None = None) -> str | None:
    """The ``plugin_identity`` of a run that used ``uses``.

    Parameters
    ----------
    uses
        ``(kind, name)`` pairs, ``kind`` one of ``"scheduler"``, ``"controller"``,
        ``"workload"``; built-in ones are passed over.
    recorded
        A ``plugin_identity`` already recorded for the run, to add to.

    Returns
    -------
    str or None
        Canonical JSON ``{"kind:name": identity}`` of the outside plug-ins among them
        (and in ``recorded``); None when there are none.
    """
    found = json.loads(recorded) if recorded else {}
    for kind, name in uses:
        ident = _identity(kind, name)
        if ident is not None:
            found[f"{kind}:{name}"] = ident
    return canonical_json(found) if found else None


def note_plugins(rec: dict[str, Any], uses: Iterable[tuple[str, str]]) -> None:
    """Add the outside plug-ins among ``uses`` (``(kind, name)`` pairs) to ``rec``'s
    :data:`PLUGIN_FIELD` (:func:`plugin_identity`); a record of built-ins only gets none."""
    ident = plugin_identity(uses, rec.get(PLUGIN_FIELD))
    if ident is not None:
        rec[PLUGIN_FIELD] = ident


def plugins_changed(recorded: object) -> bool:
    """Whether a record's ``plugin_identity`` names a plug-in whose source differs from the
    one installed now, or that is no longer installed; False for a record without one
    (built-in plug-ins only) or one that cannot be read."""
    if not isinstance(recorded, str) or not recorded:
        return False
    try:
        named = json.loads(recorded)
    except ValueError:
        return False
    if not isinstance(named, dict):
        return False
    for key, ident in named.items():
        kind, _, name = str(key).partition(":")
        now = _identity(kind, name)
        if now is None or now != ident:
            return True
    return False
