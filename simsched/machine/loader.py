"""Loading machines from presets, YAML files and dotted-key overrides."""

from __future__ import annotations

import copy
import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simsched.errors import SCALAR_TAGS, ConfigError, field_message, scalar_type_error, shown
from simsched.files import parse_yaml, read_yaml
from simsched.machine.presets import PRESET_DICTS, PRESET_FILES, preset_names
from simsched.machine.schema import Machine, exponent_hint
from simsched.params import check_mapping, python_scalars


def _loc_text(loc: tuple, data: Any) -> str:
    """A field's dotted path, with the name of the cache level it is in as ``data`` gives
    it (``caches.1.size (L2)``, as the checks of the whole machine say it): an override
    names a level (``caches.L2.size``), and the index alone left the user to count."""
    text = ".".join(str(p) for p in loc)
    caches = data.get("caches") if isinstance(data, dict) else None
    if len(loc) > 1 and loc[0] == "caches" and isinstance(loc[1], int) and isinstance(caches, list):
        level = caches[loc[1]] if 0 <= loc[1] < len(caches) else None
        name = level.get("name") if isinstance(level, dict) else None
        if isinstance(name, str) and name:
            text += f" ({shown(name) if len(name) > 20 or not name.isprintable() else name})"
    return text


def _one_per_scalar(errors: list[Any]) -> list[Any]:
    """``errors`` with the four errors of a value that is of none of a scalar's branches
    (a list, a mapping, null) made one: pydantic gave one per branch, so a sweep spec's
    ``params: {n: [1]}`` was four clauses (``params.n.str: Input should be a valid string,
    ...; params.n.int: ...``) naming types the user never wrote."""
    out: list[Any] = []
    said: set[tuple] = set()
    for err in errors:
        loc = tuple(err["loc"])
        if loc and loc[-1] in SCALAR_TAGS:
            parent = loc[:-1]
            tags = {e["loc"][-1] for e in errors if tuple(e["loc"][:-1]) == parent}
            if tags >= SCALAR_TAGS:
                if parent not in said:
                    said.add(parent)
                    out.append(scalar_type_error(parent, err.get("input")))
                continue
        out.append(err)
    return out


def format_validation_error(source: str, exc: ValidationError, data: Any = None) -> str:
    """One line naming ``source`` and every offending field of a pydantic error (a cache
    level by its name in ``data``, the machine's fields as given, when it has one)."""
    parts = []
    errors = _one_per_scalar(exc.errors())
    for err in errors:
        if err["type"] == "too_short" and any(
            e["loc"][: len(err["loc"])] == err["loc"] and len(e["loc"]) > len(err["loc"])
            for e in errors
        ):
            # a list whose only item failed is also "too short": the item's error says why
            continue
        loc = _loc_text(err["loc"], data)
        msg = field_message(err)
        given = err.get("input")
        if err["type"] in ("int_type", "float_type", "bool_type", "string_type"):
            # "should be a valid integer" alone left 2.5, true or YAML's text '1e9' unnamed
            msg += f", got {'the text ' if isinstance(given, str) else ''}{shown(given)}"
            msg += exponent_hint(given)
        # a check of the whole file (links, caches, placement) names its fields itself
        parts.append(f"{loc}: {msg}" if loc else msg)
    return f"{source}: " + "; ".join(parts)


def safe_load_yaml(path: Path) -> Any:
    """Read a YAML file safely, refusing duplicate keys (:func:`simsched.files.read_yaml`)."""
    return read_yaml(path)


def _raw_machine(spec: str | Path | dict) -> tuple[str, dict]:
    if isinstance(spec, Mapping):  # a read-only mapping (MappingProxyType) too
        return "machine", copy.deepcopy(dict(spec))
    if not isinstance(spec, str | os.PathLike):
        # str(None) was looked up as a preset: "machine 'None': no such preset or file"
        raise ConfigError(
            f"machine={spec!r}: expected a preset name, a machine file, a mapping of "
            "machine fields or a Machine"
        )
    key = str(spec)
    if not key:
        # Path("") is the current folder: "machine '': .: is a folder, expected a YAML file"
        raise ConfigError(
            f"machine {key!r}: an empty name; give a preset name (`simsched machine list`) "
            "or a machine file"
        )
    if key in PRESET_DICTS:
        return key, copy.deepcopy(PRESET_DICTS[key])
    if key in PRESET_FILES:
        return key, parse_yaml(PRESET_FILES[key], f"preset {key}")
    path = Path(key)
    try:
        exists = path.exists()
    except OSError:  # a name too long for a path (ENAMETOOLONG) is no file either
        exists = False
    if path.suffix in (".yaml", ".yml") or exists:
        data = safe_load_yaml(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of machine fields at the top level")
        return str(path), data
    close = _near_presets(key)
    hint = f" (did you mean {', '.join(close)}?)" if close else " (see `simsched machine list`)"
    # a name of thousands of characters was echoed whole
    said = repr(key) if len(key) <= 120 else f"{key[:100]!r}... ({len(key):,} characters)"
    raise ConfigError(f"machine {said}: no such preset or file{hint}")


def _near_presets(key: str) -> list[str]:
    """Preset names like ``key``, in any case: those it begins (``Opteron``), else the
    closest.  Names are matched in lower case because the presets are written so and a
    name typed as in a datasheet (``OPTERON-8380-4x4``, ``Xeon``) found none."""
    names = preset_names()
    lower = key.lower()
    begun = [n for n in names if len(lower) >= 3 and n.lower().startswith(lower)]
    if begun:
        return begun[:4]
    by_lower = {n.lower(): n for n in names}
    return [by_lower[n] for n in difflib.get_close_matches(lower, list(by_lower), n=4, cutoff=0.6)]


def apply_overrides(data: dict, overrides: dict[str, Any], source: str) -> dict:
    """Apply dotted-key overrides such as ``{"caches.L2.size": "8MB", "cores": 8}``.

    ``cores`` is shorthand for ``cores_per_socket`` on a one-socket machine.  A path
    segment may name a cache level (``caches.L2``) or index it (``caches.1``).
    """
    data = copy.deepcopy(data)
    for key, value in overrides.items():
        if not isinstance(key, str) or not all(key.split(".")):
            # "" went on to the schema, which said only "unknown key"
            raise ConfigError(
                f"{source}: override {key!r}: expected a dotted key such as caches.L2.size"
            )
        if key == "cores":
            if data.get("sockets", 1) != 1:
                raise ConfigError(
                    f"{source}: override cores: the machine has {data['sockets']} sockets; "
                    "set cores_per_socket instead"
                )
            key = "cores_per_socket"
        parts = key.split(".")
        node: Any = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if last and isinstance(value, dict) and isinstance(node, dict):
                if isinstance(node.get(part), list):
                    # {caches: {L2: {size: 1MB}}} put a mapping where the list of levels
                    # (or links) is, and validation then spoke of a tuple
                    raise ConfigError(
                        f"{source}: override {key}: a mapping cannot replace the list "
                        f"{part!r}; set one field with a dotted key, e.g. "
                        f"{_dotted_example(key, value)}"
                    )
            if isinstance(node, list):
                idx = next(
                    (
                        j
                        for j, c in enumerate(node)
                        if isinstance(c, dict) and c.get("name") == part
                    ),
                    None,
                )
                if idx is None and part.isdigit() and int(part) < len(node):
                    idx = int(part)
                if idx is None:
                    where = ".".join(parts[:i])
                    if where != "caches":  # the links, say: "no cache level" misled
                        have = f"0 to {len(node) - 1}" if node else "it is empty"
                        raise ConfigError(
                            f"{source}: override {key}: {where} has no item {part!r} ({have})"
                        )
                    raise ConfigError(f"{source}: override {key}: no cache level {part!r}")
                if last:
                    node[idx] = value
                else:
                    node = node[idx]
            elif isinstance(node, dict):
                if last:
                    node[part] = value
                else:
                    if (
                        parts[0] == "caches"
                        and i == 2
                        and part == "prefetch"
                        and node.get(part) is None
                    ):
                        # caches.L1.prefetch.distance on a level without a prefetcher
                        # added one, with defaults for the other fields: a study of the
                        # distance turned prefetching on where the machine had none
                        raise ConfigError(
                            f"{source}: override {key}: cache level "
                            f"{node.get('name', parts[1])!r} has no "
                            "prefetcher to change; add one as a whole: prefetch: {streams: 16, "
                            "distance: 4, degree: 2} in a machine file, or that mapping as "
                            f"the value of caches.{parts[1]}.prefetch in a sweep spec's "
                            # --set reads a value as a number, true/false, null or text
                            "overrides or the Python API (--set takes no mapping)"
                        )
                    if part not in node and parts[i + 1].isdigit():
                        # links.0.a on a machine without links made a mapping where the
                        # list belongs, and validation then spoke of a tuple
                        raise ConfigError(
                            f"{source}: override {key}: the machine has no {part!r} to "
                            f"index; give the whole list (e.g. in a machine file)"
                        )
                    node = node.setdefault(part, {})
            else:
                # name the field that holds a value, not the key looked up inside it
                raise ConfigError(
                    f"{source}: override {key}: {'.'.join(parts[:i])} is {node!r}, not a mapping"
                )
    return data


def load_machine(
    spec: str | Path | dict | Machine, overrides: dict[str, Any] | None = None
) -> Machine:
    """Load a machine from a preset name, a YAML file or a mapping.

    Parameters
    ----------
    spec
        A preset name (``simsched machine list``), a path to a YAML file, a mapping of
        machine fields, or a :class:`Machine` (returned as is when there are no overrides).
    overrides
        Dotted-key overrides applied before validation, e.g. ``{"caches.L2.size": "8MB"}``.

    Returns
    -------
    Machine
        The validated machine.

    Raises
    ------
    ConfigError
        The preset or file does not exist, the YAML is invalid, or a field is wrong; the
        message names the source and every offending field.
    """
    overrides = check_mapping(overrides, "overrides")
    if isinstance(spec, Machine):
        if not overrides:
            return spec
        source, data = "machine", spec.as_dict()
    else:
        source, data = _raw_machine(spec)
    if overrides:
        data = apply_overrides(data, overrides, source)
    try:
        return Machine.model_validate(python_scalars(data))
    except ValidationError as exc:
        msg = format_validation_error(source, exc, data)
        sections = [k for k, v in (overrides or {}).items() if isinstance(v, dict)]
        if sections:
            # A mapping replaces its whole section, so the fields it leaves out are
            # "missing": say how to change one field and keep the rest.
            k = sections[0]
            msg += (
                f" (override {k} replaces the whole section; to change one field and keep "
                f"the others use a dotted key, e.g. {_dotted_example(k, overrides[k])})"
            )
        raise ConfigError(msg) from None


def _dotted_example(key: str, value: dict) -> str:
    """The first leaf of a nested override as a dotted key: ``memory.placement: x``."""
    while isinstance(value, dict) and value:
        sub, value = next(iter(value.items()))
        key = f"{key}.{sub}"
    return f"{key}: {value}"


def check_machine(value: Any, name: str = "machine", *, reads: tuple[str, ...] = ()) -> None:
    """A one-line :class:`ConfigError` naming ``name`` unless ``value`` is a
    :class:`Machine` (a preset name or path given where a loaded machine is expected).
    With ``reads``, any object with those attributes passes too: a function that reads
    only them takes a stand-in (a machine with a cache of any size, in tests)."""
    if isinstance(value, Machine) or (reads and all(hasattr(value, a) for a in reads)):
        return
    raise ConfigError(f"{name}={value!r}: expected a Machine (see simsched.machine.load_machine)")


def machine_config(machine: Machine) -> dict[str, Any]:
    """The resolved machine as a plain dict (JSON-able)."""
    return machine.as_dict()


def one_core_machine(machine: Machine) -> Machine:
    """The one-core version of ``machine``: same caches and memory, no scheduling costs.

    Coherence is off: with one core on one socket no other cache can hold a line, so a
    write never invalidates anything and the records are those of the coherent machine
    (tests/machine/test_machine.py checks it), while the generated memory module leaves
    out the coherence filter and compiles in less time.
    """
    d = machine_config(machine)
    d["name"] = f"{machine.name}-1core"
    d["sockets"] = 1
    d["cores_per_socket"] = 1
    d.pop("links", None)  # one socket: nothing to link
    d["costs"] = dict.fromkeys(d["costs"], 0)
    if str(d["memory"].get("placement", "")).startswith("node:"):
        d["memory"]["placement"] = "node:0"
    d["coherence"] = False
    return Machine.model_validate(d)
