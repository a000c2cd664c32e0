"""A sweep's unit: :class:`Point`, one resolved run, and :func:`check_point`, which refuses
anything else in one line naming the part.

A point is built by :func:`simsched.experiments.spec.expand` and travels as a plain dict
(to a worker process, a Dask cluster, a point's ``point.json``), so every function that
takes one checks it first: the Python API's ``simulate_point`` and ``execute_point`` may
be given anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass
from typing import Any

from simsched.canonical import canonical_json
from simsched.errors import ConfigError, shown
from simsched.params import check_int, check_seed


@dataclass(frozen=True)
class Point:
    """One resolved run of a sweep.

    Attributes
    ----------
    id
        Stable id: hash of everything below except labels' presentation and the sweep name.
    sweep
        The sweep's name.
    workload
        Label and recipe: ``{"label", "kind": "trace"|"generator"|"capture", ...}``.
    machine
        ``{"label", "source", "overrides", "resolved"}`` — ``resolved`` is the validated
        machine as JSON (what the run sees).
    scheduler
        ``{"label", "name", "params"}``.
    seed
        The seed.
    trace_cache
        Folder (absolute) where generated and captured traces are cached.
    spec_dir
        Folder (absolute) of the spec file; relative paths in recipes are relative to it.
    sample_iterations, sample_precision
        The sweep's ``sample_iterations`` (None: every iteration in detail) and
        ``sample_precision`` (None: the default); part of the id when set, so sampled and
        detailed results never mix.
    """

    id: str
    sweep: str
    workload: dict[str, Any]
    machine: dict[str, Any]
    scheduler: dict[str, Any]
    seed: int
    trace_cache: str
    spec_dir: str
    sample_iterations: int | None = None
    sample_precision: float | None = None

    def columns(self) -> dict[str, Any]:
        """The point's configuration as flat result-store columns."""
        res = self.machine["resolved"]
        cols: dict[str, Any] = {
            "point_id": self.id,
            "sweep": self.sweep,
            "workload": self.workload["label"],
            "workload_kind": self.workload["kind"],
            "workload_params": canonical_json(self.workload.get("params", {})),
            "machine": self.machine["label"],
            "machine_overrides": canonical_json(self.machine["overrides"]),
            "cores": res["sockets"] * res["cores_per_socket"],
            "sockets": res["sockets"],
            "scheduler": self.scheduler["label"],
            "scheduler_name": self.scheduler["name"],
            "scheduler_params": canonical_json(self.scheduler["params"]),
            "seed": self.seed,
        }
        for cache in res["caches"]:
            cols[f"{cache['name']}_size"] = cache["size"]
        for key, value in self.workload.get("params", {}).items():
            cols[f"workload.{key}"] = value
        for key, value in self.scheduler["params"].items():
            cols[f"scheduler.{key}"] = value
        for key, value in self.machine["overrides"].items():
            cols[f"machine.{key}"] = value
        return cols

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (what travels to workers and into ``point.json``)."""
        out: dict[str, Any] = {
            "id": self.id,
            "sweep": self.sweep,
            "workload": self.workload,
            "machine": self.machine,
            "scheduler": self.scheduler,
            "seed": self.seed,
            "trace_cache": self.trace_cache,
            "spec_dir": self.spec_dir,
        }
        if self.sample_iterations is not None:
            out["sample_iterations"] = self.sample_iterations
        if self.sample_precision is not None:
            out["sample_precision"] = self.sample_precision
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str = "data") -> Point:
        """Inverse of :meth:`to_dict`, checked as :func:`check_point` checks a point.

        Raises
        ------
        ConfigError
            ``data`` is not a mapping, lacks a key of a point, or holds a part of another
            shape; the message names ``name`` and the key.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{name}={shown(data)}: expected a point as a dict (Point.to_dict())")
        fields = cls.__dataclass_fields__
        missing = [k for k, f in fields.items() if f.default is MISSING and k not in data]
        if missing:
            raise ConfigError(f"{name}: no key {missing[0]!r} (a point has {', '.join(fields)})")
        return check_point(cls(**{k: data[k] for k in fields if k in data}), name)


#: The keys of each part of a point that running it, and its row, read.
_POINT_PARTS = {
    "workload": ("label", "kind"),
    "machine": ("label", "overrides", "resolved"),
    "scheduler": ("label", "name", "params"),
}
#: The keys of a workload recipe of each kind, beside its label and kind.
_RECIPE_KEYS = {
    "trace": ("path",),
    "generator": ("generator", "params"),
    "capture": ("recipe",),
    "jobs": ("path",),
}


def check_point(value: Any, name: str = "point") -> Point:
    """``value`` if it is a :class:`Point` of the shape a sweep makes, else a one-line
    :class:`ConfigError` naming ``name`` and the part that is wrong.

    A point made by hand (or a ``point.json`` edited) failed deep inside its run or its
    row with an ``AttributeError``, a ``KeyError`` or a ``TypeError``.  Checked: the
    types of the fields, the keys of the workload recipe, machine and scheduler parts that
    running a point reads, and the resolved machine's counts its columns read (the
    machine itself is validated when the point runs).
    """
    if not isinstance(value, Point):
        raise ConfigError(f"{name}={shown(value)}: expected a Point of a spec (loaded.points())")
    pid = value.id
    if not isinstance(pid, str) or pid in ("", ".", "..") or "/" in pid or os.sep in pid:
        # the point's folder is named by it
        raise ConfigError(f"{name}.id={shown(pid)}: expected a point id (a file name)")
    if not isinstance(value.sweep, str):
        raise ConfigError(f"{name}.sweep={shown(value.sweep)}: expected the sweep's name")
    for part, keys in _POINT_PARTS.items():
        d = getattr(value, part)
        if not isinstance(d, Mapping):
            raise ConfigError(f"{name}.{part}={shown(d)}: expected a mapping (dict)")
        lacks = [k for k in keys if k not in d]
        if lacks:
            raise ConfigError(f"{name}.{part}: no key {lacks[0]!r} (it has {', '.join(keys)})")
    kind = value.workload["kind"]
    if not isinstance(kind, str) or kind not in _RECIPE_KEYS:
        raise ConfigError(
            f"{name}.workload: kind {shown(kind)} is not one of {', '.join(_RECIPE_KEYS)}"
        )
    lacks = [k for k in _RECIPE_KEYS[kind] if k not in value.workload]
    if lacks:
        raise ConfigError(f"{name}.workload: a {kind} recipe has no key {lacks[0]!r}")
    for part, key in (
        ("workload", "params"),
        ("machine", "overrides"),
        ("machine", "resolved"),
        ("scheduler", "params"),
    ):
        v = getattr(value, part).get(key, {})
        if not isinstance(v, Mapping):
            raise ConfigError(f"{name}.{part}[{key!r}]={shown(v)}: expected a mapping (dict)")
    if not isinstance(value.scheduler["name"], str):
        raise ConfigError(
            f"{name}.scheduler['name']={shown(value.scheduler['name'])}: expected a "
            "scheduler's name"
        )
    resolved = value.machine["resolved"]
    where = f"{name}.machine['resolved']"
    for key in ("sockets", "cores_per_socket"):
        if key not in resolved:
            raise ConfigError(f"{where}: no key {key!r} (a resolved machine: machine_config(m))")
        check_int(f"{where}[{key!r}]", resolved[key], 1)
    caches = resolved.get("caches")
    if not isinstance(caches, list) or not all(
        isinstance(c, Mapping) and "name" in c and "size" in c for c in caches
    ):
        raise ConfigError(
            f"{where}['caches']={shown(caches)}: expected the list of cache levels, each "
            "with its name and size"
        )
    check_seed(value.seed, f"{name}.seed")
    for key in ("trace_cache", "spec_dir"):
        v = getattr(value, key)
        if not isinstance(v, str | os.PathLike):
            raise ConfigError(f"{name}.{key}={shown(v)}: expected a path")
    if value.sample_iterations is not None:
        check_int(f"{name}.sample_iterations", value.sample_iterations, 2)
    precision = value.sample_precision
    if precision is not None and (
        isinstance(precision, bool) or not isinstance(precision, int | float)
    ):
        raise ConfigError(f"{name}.sample_precision={shown(precision)}: expected a number")
    return value
