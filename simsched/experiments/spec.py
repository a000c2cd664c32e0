"""Sweep specifications: a strict YAML schema that expands into points with stable ids.

A sweep is the product of four axes — workloads × machines × schedulers × seeds — minus what
its filters drop, with chosen axes advancing together instead (``zip``).  Every value a point
depends on is *resolved* at expansion time: machine presets, files and overrides become the
validated machine (so an edited machine file is a new point, and a renamed preset is not), and
workloads become recipes (a trace file, a generator with its parameters, or a capture
command).  A point's id is a hash of that resolved content, so it survives reordering the
spec, adding axes values and moving the sweep folder, and it is what the runner uses to skip
finished points.

The schema (:mod:`simsched.experiments.schema`) is pydantic with ``extra="forbid"``; YAML is read safely (:func:`simsched.files.read_yaml`: a duplicate key is an error); every
error is a :class:`~simsched.errors.ConfigError` naming the spec file and the field.  Design
notes and the full syntax are in ``docs/sweeps.md``.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simsched.canonical import canonical_json, content_hash
from simsched.errors import ConfigError, shown, spelled
from simsched.experiments.pointspec import Point
from simsched.experiments.schema import (
    AXES,
    FILTER_KEYS,
    SeedRange,
    SweepSpec,
    format_params,
    grid_product,
    grid_size,
)
from simsched.experiments.store import natural_key
from simsched.files import check_path, describe_os_error, folder_blocker, parse_yaml
from simsched.machine import load_machine
from simsched.machine.loader import format_validation_error, safe_load_yaml
from simsched.params import check_strings, env_flag, is_flag

#: Most points a sweep may expand to, counted before filters (each axis is capped on its
#: own, their product is checked here before anything is built: 10 grid values × a million
#: seeds would take minutes and gigabytes just to list).
MAX_POINTS = 100_000


@dataclass
class LoadedSpec:
    """A validated spec with the paths it resolves against."""

    spec: SweepSpec
    path: Path
    small: bool
    #: the path as the caller gave it, which messages name (``path`` is resolved)
    given: Path | None = None

    @property
    def shown(self) -> Path:
        """The spec file as messages name it: as given (``s.yaml``), else resolved."""
        return self.given if self.given is not None else self.path

    @property
    def spec_dir(self) -> Path:
        """Folder of the spec file."""
        return self.path.parent

    @property
    def out_dir(self) -> Path:
        """Output folder of the sweep (absolute)."""
        out = self.spec.out or f"results/{self.spec.name}"
        # Absolute but not resolved: a symlink in the path stays one (a dangling link must
        # not become folders at its target, see simsched.files.make_output_dir).
        return Path(os.path.abspath(self.spec_dir / out))

    @property
    def trace_cache(self) -> Path:
        """Trace cache folder (absolute); default ``<out>/traces``."""
        if self.spec.trace_cache is None:
            return self.out_dir / "traces"
        return Path(os.path.abspath(self.spec_dir / self.spec.trace_cache))

    def points(self) -> list[Point]:
        """Expand the sweep (see :func:`expand`)."""
        return expand(self)


def check_loaded(value: Any, name: str = "loaded") -> LoadedSpec:
    """``value`` if it is a :class:`LoadedSpec`, else a one-line :class:`ConfigError`
    naming ``name`` (a spec's path given where the loaded spec is expected)."""
    if not isinstance(value, LoadedSpec):
        raise ConfigError(
            f"{name}={value!r}: expected a loaded spec (simsched.experiments.load_spec(path))"
        )
    return value


def _set_item(item: str) -> str:
    """An edit of :func:`load_spec`'s ``sets`` as a message names it: as an item of
    ``sets``, or on the command line as the ``--set`` typed."""
    return spelled(f"sets item {item!r}", f"--set {item!r}")


def parse_set(item: str) -> tuple[list[str], Any]:
    """Parse one ``--set path=value`` (value read as YAML: ``[0,1]``, ``8``, ``true``)."""
    if "=" not in item:
        raise ConfigError(f"{_set_item(item)}: expected key=value")
    key, _, raw = item.partition("=")
    if not key.strip():
        raise ConfigError(f"{_set_item(item)}: empty key")
    if not raw.strip():
        # YAML reads nothing as null, which the schema takes as "the default": `--set
        # out=$OUT` with OUT unset wrote to the default folder without a word.
        raise ConfigError(f"{_set_item(item)}: no value after '=' (write null to mean none)")
    try:
        value = parse_yaml(raw, _set_item(item))
    except ConfigError as exc:
        raise ConfigError(f"{exc} (the value is read as YAML)") from None
    parts = key.strip().split(".")
    if len(parts) > 4 and parts[0] == "machines" and parts[2] in ("overrides", "grid"):
        # A machine's overrides and grid are keyed by dotted fields (caches.L2.size): the
        # rest of the path is one such key, not mappings nested in it
        parts = [*parts[:3], ".".join(parts[3:])]
    return parts, value


def _apply_set(data: Any, path: list[str], value: Any, item: str) -> None:
    node = data
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(
                    f"{_set_item(item)}: {part!r} is not an index of a {len(node)}-list"
                )
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if not isinstance(node.get(part), dict | list):
                    node[part] = {}
                node = node[part]
        else:
            raise ConfigError(f"{_set_item(item)}: {'.'.join(path[:i])} is not a mapping or list")


def small_from_env() -> bool:
    """True when the environment asks for small runs (``SIMSCHED_SMALL=1``).

    Raises
    ------
    ConfigError
        Another value than 1/true/yes/on, 0/false/no/off or empty: ``SIMSCHED_SMALL=abc``
        (or a typo such as ``ture``) meant "not small" without a word, and a study ran at
        full size where a small run was wanted.
    """
    return env_flag("SIMSCHED_SMALL", False, on="1 (small runs)")


def load_spec(
    path: str | Path, *, small: bool | None = None, sets: list[str] | None = None
) -> LoadedSpec:
    """Read and validate a sweep spec.

    Parameters
    ----------
    path
        The YAML file.
    small
        Run small (each workload's ``small`` parameters, the ``small`` machines and seeds);
        ``None`` reads ``SIMSCHED_SMALL`` from the environment.
    sets
        ``key.path=value`` edits applied to the YAML before validation, e.g.
        ``seeds=[0]`` or ``workloads.0.params.n=4096``.

    Returns
    -------
    LoadedSpec

    Raises
    ------
    ConfigError
        The file is missing or not YAML, a field is wrong, a scheduler is not installed or
        refuses one of its parameters (the message names the field or entry).  Workloads,
        trace files and machines are checked by :func:`check_spec`, which ``sweep status``
        and :func:`~simsched.experiments.run_sweep` call.
    """
    path = check_path(path, "path")
    sets = check_strings(sets, "sets", "key=value")
    # "no" would read as true; a table's truth was asked inside pandas
    if small is not None and not is_flag(small):
        raise ConfigError(f"small={shown(small)}: expected True, False or None")
    small = None if small is None else bool(small)
    data = safe_load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with name, workloads, machines, schedulers")
    if "jobs" in data and "workloads" not in data:
        # the other YAML of simsched: name it rather than list every key this schema misses
        raise ConfigError(
            f"{path}: a job-set file (top-level jobs:, docs/jobs.md), not a sweep spec: run it "
            f"with `simsched run --jobs {path} -m MACHINE`, or name it in a sweep spec's "
            "workloads as {jobs: FILE}"
        )
    data = copy.deepcopy(data)
    set_keys: set[tuple[str, ...]] = set()
    for item in sets:
        keys, value = parse_set(item)
        if tuple(keys) in set_keys:  # the last one silently won
            key = ".".join(keys)
            raise ConfigError(spelled(f"sets: {key} is given twice", f"--set {key}: given twice"))
        set_keys.add(tuple(keys))
        _apply_set(data, keys, value, item)
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(str(path), exc)) from None
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    # a scheduler not installed, or a bad parameter of one, was accepted here and refused
    # only by sweep status or run_sweep; a grid of them is cheap to resolve
    _check_schedulers(spec, str(path))
    return LoadedSpec(
        spec=spec,
        path=path.resolve(),
        small=small_from_env() if small is None else small,
        given=path,
    )


def _check_schedulers(spec: SweepSpec, where: str) -> None:
    """Every scheduler of ``spec`` is registered (built in or an installed plug-in) and takes
    each of its parameter combinations, else a :class:`ConfigError` naming ``where`` (the
    spec file) and the entry."""
    from simsched.schedulers import get_scheduler

    for i, s in enumerate(spec.schedulers):
        try:
            cls = get_scheduler(s.name)
            for combo in grid_product(s.grid):
                cls.resolve_params({**s.params, **combo})
        except ConfigError as exc:
            raise ConfigError(f"{where}: schedulers.{i}: {exc}") from None


def _workload_entries(loaded: LoadedSpec) -> list[tuple[str, dict[str, Any]]]:
    entries: list[tuple[str, dict[str, Any]]] = []
    for i, w in enumerate(loaded.spec.workloads):
        where = f"workloads.{i}"
        if w.trace is not None:
            label = w.name or Path(w.trace).stem
            # Relative to the spec: the id does not change when the sweep folder moves.
            entries.append((label, {"kind": "trace", "path": w.trace}))
        elif w.jobs is not None:
            label = w.name or Path(w.jobs).stem
            try:
                digest = hashlib.sha256((loaded.spec_dir / w.jobs).read_bytes()).hexdigest()
            except OSError:
                raise ConfigError(f"{loaded.shown}: {where}.jobs: cannot read {w.jobs}") from None
            entries.append(
                (
                    label,
                    {
                        "kind": "jobs",
                        "path": w.jobs,
                        "controller": w.controller,
                        "quantum": w.quantum,
                        "digest": digest,
                    },
                )
            )
        elif w.capture is not None:
            label = w.name or Path(w.capture.program[0]).name
            recipe = w.capture.model_dump()
            digests = {}
            for src in w.capture.sources:
                p = loaded.spec_dir / src
                try:
                    digests[src] = hashlib.sha256(p.read_bytes()).hexdigest()
                except OSError:
                    raise ConfigError(
                        f"{loaded.shown}: {where}.capture.sources: cannot read {src}"
                    ) from None
            entries.append(
                (label, {"kind": "capture", "recipe": recipe, "source_digests": digests})
            )
        else:
            assert w.generator is not None
            base = dict(w.params)
            if loaded.small:
                base.update(w.small)
            combos = grid_product(
                {k: v for k, v in w.grid.items() if not (loaded.small and k in w.small)}
            )
            for combo in combos:
                params = {**base, **combo}
                label = w.name or w.generator
                if len(combos) > 1:
                    label = f"{label}[{format_params(combo)}]"
                entries.append(
                    (label, {"kind": "generator", "generator": w.generator, "params": params})
                )
    return entries


def _machine_entries(loaded: LoadedSpec) -> list[tuple[str, dict[str, Any]]]:
    entries: list[tuple[str, dict[str, Any]]] = []
    for i, m in enumerate(loaded.spec.machines):
        if m.file is not None:
            source = str((loaded.spec_dir / m.file).resolve())
        else:
            assert m.name is not None  # exactly one of the two (MachineSpec._one_source)
            source = m.name
            if source.endswith((".yaml", ".yml")):
                # a file, relative to the spec as `file:` and a bare .yaml name are (it was
                # read relative to the current folder)
                source = str((loaded.spec_dir / source).resolve())
            elif "/" in source or os.sep in source:
                # read as a preset's name, it was "no such preset or file" of a file that exists
                raise ConfigError(
                    f"{loaded.shown}: machines.{loaded.spec.machine_entry(i)}: {source!r} is a "
                    "path, not a preset; a "
                    "machine file is YAML, named by `file:` (or by a bare .yaml or .yml name)"
                )
        base_label = m.label or m.name or Path(m.file or "").stem
        combos = grid_product(m.grid)
        for combo in combos:
            overrides = {**m.overrides, **combo}
            label = base_label
            shown = {**m.overrides, **combo} if m.label is None else combo
            if shown:
                label = f"{label}[{format_params(shown)}]"
            try:
                machine = load_machine(source, overrides or None)
            except ConfigError as exc:
                raise ConfigError(
                    f"{loaded.shown}: machines.{loaded.spec.machine_entry(i)}: {exc}"
                ) from None
            entries.append(
                (
                    label,
                    {
                        "source": m.name or m.file,
                        "overrides": overrides,
                        "resolved": machine.as_dict(),
                    },
                )
            )
    return entries


def _scheduler_entries(loaded: LoadedSpec) -> list[tuple[str, dict[str, Any], list[int] | None]]:
    entries = []
    for s in loaded.spec.schedulers:
        combos = grid_product(s.grid)
        for combo in combos:
            params = {**s.params, **combo}
            label = s.label or s.name
            if len(combos) > 1:
                label = f"{label}[{format_params(combo)}]"
            seeds = s.seeds
            if seeds is not None and loaded.small and loaded.spec.small.seeds is not None:
                seeds = [x for x in seeds if x in loaded.spec.small.seeds] or seeds[:1]
            entries.append((label, {"name": s.name, "params": params}, seeds))
    return entries


def _policy(sched: dict[str, Any]) -> dict[str, Any]:
    """The policy a point's scheduler entry runs: its registered name (an alias resolved)
    and its parameters with every default filled in; as written when the name is not a
    registered scheduler (a custom point function's own)."""
    from simsched.schedulers import get_scheduler

    try:
        cls = get_scheduler(sched["name"])
        return {"name": cls.name, "params": cls.resolve_params(dict(sched["params"]))}
    except ConfigError:
        return {"name": sched["name"], "params": sched["params"]}


def _matches(rule: dict[str, Any], cols: dict[str, Any]) -> bool:
    """Whether a point's columns match an include / exclude rule.

    A value matches a column equal to it, or a grid label it is the entry name of
    (``heat`` matches ``heat[nx=130]``), so a rule can name a whole grid at once.
    """
    for key, want in rule.items():
        wanted = {str(w) for w in (want if isinstance(want, list) else [want])}
        value = str(cols[key])
        if value not in wanted and value.split("[", 1)[0] not in wanted:
            return False
    return True


def _seed_values(loaded: LoadedSpec) -> list[int] | range:
    """The sweep's seed axis (a range is not materialised, so counting it is free)."""
    spec = loaded.spec
    seeds: list[int] | range = (
        range(spec.seeds.start, spec.seeds.start + spec.seeds.count)
        if isinstance(spec.seeds, SeedRange)
        else list(spec.seeds)
    )
    # small.seeds and small.machines are checked in every run, small or not: a misspelt
    # one in a study's spec surfaced only in CI's small run
    if spec.small.seeds is not None:
        keep = set(spec.small.seeds)
        own = {x for sch in spec.schedulers for x in sch.seeds or ()}
        stray = sorted(x for x in keep if x not in seeds and x not in own)
        if stray:
            # as small.machines does for a label: a misspelt seed ran the first seed instead
            shown = (
                f"{seeds.start}..{seeds.stop - 1}"
                if isinstance(seeds, range)
                else ", ".join(map(str, seeds))
            )
            if own:
                shown += "; the schedulers' own: " + ", ".join(map(str, sorted(own)))
            raise ConfigError(
                f"{loaded.shown}: small.seeds: {stray[0]} is not a seed of the sweep "
                f"(its seeds: {shown})"
            )
        if not loaded.small:
            return seeds
        # A range ascends: its members among ``keep``, sorted, are in the axis's order.
        chosen = (
            sorted(s for s in keep if s in seeds)
            if isinstance(seeds, range)
            else [s for s in seeds if s in keep]
        )
        seeds = chosen or [seeds[0]]
    return seeds


def axis_sizes(loaded: LoadedSpec) -> dict[str, int]:
    """Length of each axis, counted from the spec without expanding anything.

    ``seeds`` is the longest seed list a scheduler runs (its own seeds or the sweep's), so
    the product of the sizes bounds the number of points before ``include``/``exclude``.
    """
    spec = loaded.spec
    workloads = 0
    for w in spec.workloads:
        grid = {k: v for k, v in w.grid.items() if not (loaded.small and k in w.small)}
        workloads += grid_size(grid) if w.generator is not None else 1
    machines = sum(grid_size(m.grid) for m in spec.machines)
    schedulers = sum(grid_size(s.grid) for s in spec.schedulers)
    seeds = max([len(_seed_values(loaded))] + [len(s.seeds or ()) for s in spec.schedulers])
    return {"workloads": workloads, "machines": machines, "schedulers": schedulers, "seeds": seeds}


def check_size(loaded: LoadedSpec, limit: int = MAX_POINTS) -> int:
    """Refuse a spec whose axes multiply to more than ``limit`` points, before expanding.

    Zipped axes count once (they advance together).  Returns the product.

    Raises
    ------
    ConfigError
        The product is above ``limit``; the message names it and its factors.
    """
    sizes = axis_sizes(loaded)
    factors: list[tuple[str, int]] = []
    zipped = {a for g in loaded.spec.zip for a in g}
    for axis in AXES:
        group = next((g for g in loaded.spec.zip if g[0] == axis), None)
        if group is not None:
            factors.append(("+".join(group), max(sizes[a] for a in group)))
        elif axis not in zipped:
            factors.append((axis, sizes[axis]))
    total = math.prod(n for _, n in factors)
    if total > limit:
        detail = " × ".join(f"{name} {n:,}" for name, n in factors)
        raise ConfigError(
            f"{loaded.shown}: the sweep's axes multiply to {total:,} points ({detail}), "
            f"more than the {limit:,} a sweep may have; narrow an axis or split the sweep"
        )
    return total


def expand(loaded: LoadedSpec) -> list[Point]:
    """Expand a loaded spec into its points, in a deterministic order.

    The order is the product of the axes in the order workloads, machines, schedulers,
    seeds (zipped groups count as one axis placed where their first member is), with
    ``include`` (keep points matching any rule) and ``exclude`` (drop points matching any
    rule) applied last.  Ids are unique; two spec entries that resolve to the same point
    are an error.

    Raises
    ------
    ConfigError
        The axes multiply to more than :data:`MAX_POINTS` (:func:`check_size`), a machine
        does not load, a zipped group has axes of different lengths, or two entries resolve
        to the same point.
    """
    check_loaded(loaded)
    check_size(loaded)
    spec = loaded.spec
    seeds_all = list(_seed_values(loaded))
    axes: dict[str, list[Any]] = {
        "workloads": _workload_entries(loaded),
        "machines": _machine_entries(loaded),
        "schedulers": _scheduler_entries(loaded),
        "seeds": seeds_all,
    }
    if spec.small.machines is not None:
        keep = set(spec.small.machines)
        unknown = keep - {label for label, _ in axes["machines"]}
        if unknown:
            raise ConfigError(
                f"{loaded.shown}: small.machines: no machine labelled {sorted(unknown)[0]!r}"
            )
        if loaded.small:
            axes["machines"] = [e for e in axes["machines"] if e[0] in keep]

    # Build the list of independent factors: zipped groups, then the remaining axes.
    factors: list[tuple[tuple[str, ...], list[tuple[Any, ...]]]] = []
    zipped = {a for g in spec.zip for a in g}
    for axis in AXES:
        group = next((tuple(g) for g in spec.zip if g[0] == axis), None)
        if group is not None:
            lengths = {a: len(axes[a]) for a in group}
            if len(set(lengths.values())) != 1:
                detail = ", ".join(f"{a}={n}" for a, n in lengths.items())
                raise ConfigError(f"{loaded.shown}: zip: axes have different lengths ({detail})")
            factors.append((group, list(zip(*(axes[a] for a in group), strict=True))))
        elif axis not in zipped:
            factors.append(((axis,), [(v,) for v in axes[axis]]))

    points: list[Point] = []
    seen: dict[str, str] = {}
    labelled: dict[str, str] = {}
    meaning: dict[str, tuple[str, str]] = {}  # a scheduler entry's policy: name, JSON
    twins: dict[tuple[str, str, str, int], str] = {}
    seen_values: dict[str, set[str]] = {key: set() for key in FILTER_KEYS}
    cache = str(loaded.trace_cache)
    for combo in itertools.product(*(values for _, values in factors)):
        chosen: dict[str, Any] = {}
        for (names, _), values in zip(factors, combo, strict=True):
            chosen.update(zip(names, values, strict=True))
        wl_label, wl = chosen["workloads"]
        m_label, mach = chosen["machines"]
        s_label, sched, own_seeds = chosen["schedulers"]
        seeds = [chosen["seeds"]]
        if own_seeds is not None:
            # A scheduler with its own seeds replaces the seed axis (e.g. PDF runs once).
            if chosen["seeds"] != seeds_all[0]:
                continue
            seeds = own_seeds
        for seed in seeds:
            resolved = {
                "workload": {k: v for k, v in wl.items()},
                "machine": mach["resolved"],
                "scheduler": sched,
                "seed": seed,
            }
            if spec.sample_iterations is not None:
                resolved["sample_iterations"] = spec.sample_iterations
            if spec.sample_precision is not None:
                resolved["sample_precision"] = spec.sample_precision
            pid = content_hash(resolved)
            label = f"{wl_label} / {m_label} / {s_label} / seed {seed}"
            if pid in seen:
                raise ConfigError(
                    f"{loaded.shown}: two entries resolve to the same point: {seen[pid]!r} and {label!r}"
                )
            seen[pid] = label
            point = Point(
                id=pid,
                sweep=spec.name,
                workload={"label": wl_label, **wl},
                machine={"label": m_label, **mach},
                scheduler={"label": s_label, **sched},
                seed=seed,
                trace_cache=cache,
                spec_dir=str(loaded.spec_dir),
                sample_iterations=spec.sample_iterations,
                sample_precision=spec.sample_precision,
            )
            cols = point.columns()
            for key in FILTER_KEYS:
                seen_values[key].add(str(cols[key]))
            if spec.include and not any(_matches(r, cols) for r in spec.include):
                continue
            if any(_matches(r, cols) for r in spec.exclude):
                continue
            # Rows, --where, include/exclude and figures know a point by its labels only:
            # two different points under one set of labels would be mixed in all of them.
            if labelled.setdefault(label, pid) != pid:
                raise ConfigError(
                    f"{loaded.shown}: two different points are both labelled {label!r}; give "
                    "their entries different names (name: of a workload, label: of a machine "
                    "or scheduler)"
                )
            # An alias and its name (ws, cilk) with the same parameters are one policy: the
            # two points differ by their scheduler's spelling alone, run the same
            # simulation twice and count as two schedulers in every table.  Labels tell
            # the other entries apart (the check above), so they key the twin.
            policy = meaning.get(s_label)
            if policy is None:
                resolved_policy = _policy(sched)
                policy = meaning[s_label] = (
                    resolved_policy["name"],
                    canonical_json(resolved_policy),
                )
            twin = (wl_label, m_label, policy[1], seed)
            if twin in twins:
                raise ConfigError(
                    f"{loaded.shown}: {twins[twin]!r} and {label!r} are one point: their "
                    f"schedulers both mean {policy[0]} with the same parameters; keep one"
                )
            twins[twin] = label
            points.append(point)
    _check_filter_values(loaded, seen_values)
    return points


def _check_filter_values(loaded: LoadedSpec, seen: dict[str, set[str]]) -> None:
    """Refuse an include/exclude value that matches no point of the sweep: a misspelt
    label silently kept fewer points (include) or dropped none (exclude).  A small run
    keeps fewer machines and seeds, so only a full one is checked."""
    if loaded.small:
        return
    for name in ("include", "exclude"):
        for i, rule in enumerate(getattr(loaded.spec, name)):
            for key, want in rule.items():
                values = seen[key]
                bases = {v.split("[", 1)[0] for v in values}
                for w in want if isinstance(want, list) else [want]:
                    if str(w) not in values and str(w) not in bases:
                        known = ", ".join(sorted(values, key=natural_key)[:12])
                        raise ConfigError(
                            f"{loaded.shown}: {name}.{i}.{key}: {w!r} matches no point "
                            f"(the sweep's {key} values: {known})"
                        )


def check_generator_size(where: str, recipes: list[dict[str, Any]], cache: Path) -> None:
    """Refuse a generated trace still to be made in ``cache`` that this host has too little
    memory to make, or that would hold more references than a generated trace may
    (:func:`simsched.workloads.check_size`): else every point of it ran, made the results
    folder and failed alike.  A trace already in the cache is not made again, so its size
    does not matter here."""
    from simsched.trace.recipes import cached_trace_path
    from simsched.workloads import check_size

    seen: set[Path] = set()
    for r in recipes:
        if r.get("kind") != "generator":
            continue
        path = cached_trace_path(r, cache)
        if path in seen or path.is_file():
            continue
        seen.add(path)
        try:
            check_size(r["generator"], dict(r["params"]))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


def check_trace_cache(loaded: LoadedSpec, points: list[Point], *, sizes: bool = True) -> None:
    """Refuse a trace cache this process cannot write while traces of ``points`` (the
    points about to run) are still to be made in it, or (``sizes``) a generated trace among
    them too large for this host's memory or too long (:func:`check_generator_size`): else
    every point of those traces fails alike, each with the same error.  ``sweep status``
    does not ask: a finished sweep's folder may be read-only and its traces gone.  A Dask
    sweep passes ``sizes=False``: its workers make the traces, and the host that submits
    it may have less memory than they have.

    Raises
    ------
    ConfigError
        Naming the spec, the cache and the folder that cannot be written.
    """
    from simsched.trace.recipes import cached_trace_path

    where, cache = str(loaded.shown), loaded.trace_cache
    # read only when something uses them (a job set's are in its files)
    recipes = _recipes(points) if sizes else None
    if recipes is not None:
        check_generator_size(where, recipes, cache)
    folder = cache
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # a missing cache is made inside its nearest existing folder
    if not folder.is_dir():
        return  # (a file in the way is said by the folder's own check, by name)
    writable = os.access(folder, os.W_OK | os.X_OK)
    if writable and folder == cache:
        return
    if recipes is None:
        recipes = _recipes(points)
    to_make = {cached_trace_path(r, cache) for r in recipes}
    missing = sorted(t.name for t in to_make if not t.is_file())
    if missing and writable:
        # access() says yes to root everywhere, and /proc or /sys refuse any new folder:
        # only making it tells (and the first point would make it anyway)
        from simsched.errors import OutputError
        from simsched.files import check_output_dir

        try:
            check_output_dir(cache)
        except OutputError as exc:
            raise ConfigError(
                f"{where}: trace_cache {cache}: {str(exc).partition(': ')[2]}, and "
                f"{len(missing)} trace(s) are still to be made there; set trace_cache to "
                "another folder"
            ) from None
    elif missing:
        raise ConfigError(
            f"{where}: trace_cache {cache}: {folder} is not writable, and {len(missing)} "
            f"trace(s) are still to be made there ({missing[0]}"
            f"{', ...' if len(missing) > 1 else ''}); make it writable or set trace_cache "
            "to another folder"
        )


def _recipes(points: list[Point]) -> list[dict[str, Any]]:
    """The recipes of the traces ``points`` make in the trace cache: their generated and
    captured workloads, and the generated jobs of their job sets."""
    from simsched.jobset import jobset_generator_recipes

    recipes = [p.workload for p in points if p.workload.get("kind") in ("generator", "capture")]
    for jobs in sorted(
        {Path(p.spec_dir) / p.workload["path"] for p in points if p.workload.get("kind") == "jobs"}
    ):
        recipes += jobset_generator_recipes(jobs)
    return recipes


def _check_trace_file(
    path: Path,
    name: str,
    *,
    opened: bool = True,
    relative_to: str = "the spec",
    sampled: bool = False,
) -> None:
    """Refuse a spec's trace file that every point of it would fail to open: missing, a
    folder or another file that is not a regular one, and (``opened``) empty, truncated,
    corrupt or of another format version, or (``sampled``) without iterations to sample.

    Opening it reads its header and tables and checks its content digest once (one pass
    over the file, remembered for the process), so a sweep's points do not each find out.
    """
    from simsched.engine.sampled import trace_iterations
    from simsched.errors import TraceFormatError
    from simsched.trace import open_trace

    # (os.path.isdir and isfile, unlike Path's, are False for a name too long)
    if os.path.isdir(path):
        raise ConfigError(
            f"trace {name}: is a folder, not a trace file (relative to {relative_to})"
        )
    if not os.path.isfile(path):
        what = "is not a regular file" if os.path.exists(path) else "no such file"
        raise ConfigError(f"trace {name}: {what} (relative to {relative_to})")
    if not opened:
        return
    try:
        with open_trace(path) as t:
            if sampled and trace_iterations(t) == 0:
                # known from the file alone: every point failed once it ran
                raise ConfigError(
                    f"trace {name}: has no iterations, so sample_iterations cannot sample "
                    "it (mark them with SS_ITER, or drop the workload or sample_iterations)"
                )
    except TraceFormatError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"trace {name}: cannot be read ({exc.strerror or exc})") from None


def _check_jobset_traces(path: Path, name: str) -> None:
    """Open the trace files of job set ``path`` (already checked whole by
    :func:`simsched.jobset.check_jobset`, which only finds them there), as
    :func:`_check_trace_file` opens a spec's own: a truncated or corrupt one would fail
    every point of the job set alike once it ran."""
    from simsched.jobset import jobset_trace_files

    for gi, written, full in jobset_trace_files(path):
        try:
            _check_trace_file(full, written, relative_to="the job set")
        except ConfigError as exc:
            raise ConfigError(f"{name}: jobs.{gi}.trace: {exc}") from None


def check_spec(loaded: LoadedSpec, *, generators: bool = True) -> list[Point]:
    """Expand a spec and check everything its points need, before any of them runs.

    The size of the sweep (:func:`check_size`), every scheduler and its parameters, every
    generator and its parameters (when ``generators``; a custom point function may interpret workloads its own way), every
    trace file, and that the expansion is not empty.

    Returns
    -------
    list of Point
        The points (as :func:`expand`).

    Raises
    ------
    ConfigError
        The first problem, naming the spec file and the entry.
    """
    from simsched.workloads import get as get_workload

    check_size(loaded)  # before any grid below is built
    spec = loaded.spec
    where = str(loaded.shown)
    cache = loaded.trace_cache
    if any(w.trace is None for w in spec.workloads):
        # generators, captures and job sets make their traces there: else each such point
        # fails when it makes its trace
        try:
            not_a_folder = cache.exists() and not cache.is_dir()
        except OSError as exc:  # a name too long: the CLI echoed the path without a word
            said = shown(str(cache))  # of the spec, thousands of characters long
            raise ConfigError(f"{where}: trace_cache {said}: {describe_os_error(exc)}") from None
        if not_a_folder:
            raise ConfigError(f"{where}: trace_cache {cache}: exists and is not a folder")
        blocker = folder_blocker(cache)  # a dangling link, or a file among its parents
        if blocker is not None:
            raise ConfigError(f"{where}: trace_cache {cache}: {blocker}")
    _check_schedulers(spec, where)
    for i, w in enumerate(spec.workloads):
        try:
            if w.trace is not None:
                # a custom point function may read other files than simsched traces
                _check_trace_file(
                    loaded.spec_dir / w.trace,
                    w.trace,
                    opened=generators,
                    sampled=spec.sample_iterations is not None,
                )
            if w.jobs is not None:
                from simsched.jobset import check_jobset

                check_jobset(loaded.spec_dir / w.jobs, controller=w.controller)
                if generators:
                    _check_jobset_traces(loaded.spec_dir / w.jobs, w.jobs)
                if w.quantum is not None:
                    from simsched.engine.controllers import check_quantum

                    check_quantum(w.quantum, "quantum")  # its floor, before any point runs
            if w.generator is not None and generators:
                if "/" in w.generator or os.sep in w.generator:
                    # a bare string is a trace only when it ends in .sst
                    raise ConfigError(
                        f"{w.generator!r} is a path, not a generator; name a trace file "
                        "as {trace: PATH} (a bare .sst name is one)"
                    )
                gen = get_workload(w.generator)
                if spec.sample_iterations is not None and gen.marks_iterations is False:
                    # known from the generator alone: every point failed once it ran
                    raise ConfigError(
                        f"generator {w.generator} marks no iterations in its traces, so "
                        "sample_iterations cannot sample it (drop the workload or "
                        "sample_iterations)"
                    )
                # The small values too, as a small run takes them (grid axes they set are
                # dropped): a typo there would otherwise wait for the first --small run.
                for small in dict.fromkeys((loaded.small, True)):
                    base = {**w.params, **(w.small if small else {})}
                    grid = {k: v for k, v in w.grid.items() if not (small and k in w.small)}
                    try:
                        for combo in grid_product(grid):
                            gen.resolve({**base, **combo})
                    except ConfigError as exc:
                        if small and not loaded.small:
                            raise ConfigError(f"small: {exc}") from None
                        raise
        except ConfigError as exc:
            raise ConfigError(f"{where}: workloads.{i}: {exc}") from None
    from simsched.machine import Machine
    from simsched.machine.resources import check_fits

    points = expand(loaded)
    if not points:
        raise ConfigError(f"{where}: the sweep has no points (check seeds, include and exclude)")
    machines: dict[str, Machine] = {}
    jobsets: set[tuple[str, str]] = set()
    for p in points:
        m_label = p.machine["label"]
        if m_label not in machines:
            machines[m_label] = Machine.model_validate(p.machine["resolved"])
            check_fits(machines[m_label], f"{where}: machine {m_label}")
        wl = p.workload
        if wl["kind"] == "jobs" and (wl["label"], m_label) not in jobsets:
            # The controller needs the machine (a static split of its cores, a quantum in
            # ms at its clock): else every point of the pair fails alike once it runs.
            jobsets.add((wl["label"], m_label))
            from simsched.jobset import check_jobset

            try:
                check_jobset(
                    loaded.spec_dir / wl["path"],
                    controller=wl.get("controller"),
                    quantum=wl.get("quantum"),
                    machine=machines[m_label],
                )
            except ConfigError as exc:
                raise ConfigError(
                    f"{where}: workload {wl['label']} on machine {m_label}: {exc}"
                ) from None
    return points
