"""Job sets: several programs arriving over time on one machine (docs/jobs.md).

A job set is a YAML file (strict schema: unknown keys are errors) listing groups of
jobs; each group names a trace or a generator recipe, the job scheduler, how many
copies, and when they arrive: at a cycle, at explicit cycles, or by a Poisson process
seeded from the job set's seed.  :func:`load_jobset` resolves it into a
:class:`JobSet` — every job with its trace file, scheduler class, parameters and
arrival cycle — which :func:`simsched.run_jobs` replays.

Example::

    seed: 1
    controller: equi          # default; `simsched run --controller` overrides
    jobs:
      - trace: traces/samples/mergesort-16384-1024.valgrind.sst
        scheduler: ws
        copies: 4
        arrival: 0
      - generator: fib
        params: {n: 18}
        copies: 4
        arrival: {poisson: {mean: 200000}}   # mean cycles between arrivals

Relative trace paths are relative to the job-set file.  Generated traces are made once
and cached by their recipe (``$SIMSCHED_CACHE_DIR/traces``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from simsched.errors import SCALAR_TAGS, ConfigError, field_message, scalar_type_error, shown
from simsched.files import (
    cache_output,
    describe_os_error,
    parse_yaml,
    read_user_text,
    regular_file_kind,
)
from simsched.params import (
    MAX_ARRIVAL,
    MAX_QUANTUM,
    MAX_SEED,
    check_label,
    check_seed,
    python_scalars,
)

Scalar = int | float | str | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the fields that are numbers: YAML's true/false is refused by name (pydantic takes it
    #: as 1/0 for a float)
    _NUMBERS: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in cls._NUMBERS:
                v = data.get(name)
                if isinstance(v, bool) or (
                    isinstance(v, list) and any(isinstance(x, bool) for x in v)
                ):
                    raise ValueError(f"{name}: a number is needed, not {str(v).lower()}")
        return data


class PoissonArrivals(_Strict):
    """Arrivals of a group's copies by a Poisson process."""

    _NUMBERS = ("mean", "start")

    # allow_inf_nan: nan was refused as "should be less than or equal to 1152921504606847000"
    mean: float = Field(
        gt=0,
        le=MAX_ARRIVAL,
        allow_inf_nan=False,
        description="mean cycles between arrivals (1/lambda)",
    )
    start: StrictInt = Field(
        default=0, ge=0, le=MAX_ARRIVAL, description="cycle the process starts at"
    )


class PoissonSpec(_Strict):
    """``arrival: {poisson: {mean: ..., start: ...}}``: copies arrive by a Poisson process."""

    poisson: PoissonArrivals


class JobGroup(_Strict):
    """Copies of one program: exactly one of ``trace`` or ``generator``."""

    _NUMBERS = ("copies", "arrival")

    name: str | None = Field(default=None, description="label (default: file or generator)")
    # min_length: "" was the job set's own folder (": is a folder, expected a trace file")
    trace: str | None = Field(default=None, min_length=1)
    generator: str | None = Field(default=None, min_length=1)
    params: dict[str, Scalar] = Field(default_factory=dict, description="generator parameters")
    scheduler: str = "ws"
    scheduler_params: dict[str, Scalar] = Field(default_factory=dict)
    copies: StrictInt = Field(default=1, ge=1, le=256)
    arrival: StrictInt | list[StrictInt] | PoissonSpec = Field(
        default=0, description="cycle, list of cycles (one per copy) or {poisson: {mean}}"
    )

    @field_validator("name")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        # "" was replaced by the default label without a word, and a NUL or a newline
        # reached the record's tables and the figures' titles
        return None if value is None else check_label(value, "a job")

    @model_validator(mode="after")
    def _check(self) -> JobGroup:
        if (self.trace is None) == (self.generator is None):
            raise ValueError("give exactly one of trace or generator")
        if self.params and self.generator is None:
            raise ValueError("params apply to generators only")
        if isinstance(self.arrival, int) and not 0 <= self.arrival <= MAX_ARRIVAL:
            raise ValueError(f"arrival {self.arrival}: must be between 0 and 2^60 cycles")
        if isinstance(self.arrival, list):
            if len(self.arrival) != self.copies:
                raise ValueError(
                    f"arrival lists {len(self.arrival)} cycles for {self.copies} copies"
                )
            if any(not 0 <= t <= MAX_ARRIVAL for t in self.arrival):
                raise ValueError("arrival cycles must be between 0 and 2^60")
        return self


class JobSetSpec(_Strict):
    """A job-set file."""

    _NUMBERS = ("seed", "quantum", "quantum_ms")

    seed: StrictInt = Field(
        default=0, ge=0, le=MAX_SEED, description="seeds the arrivals and job schedulers"
    )
    controller: str = Field(default="equi", description="processor controller")
    controller_params: dict[str, Any] = Field(default_factory=dict)
    quantum: StrictInt = Field(
        default=0, ge=0, le=MAX_QUANTUM, description="controller quantum in cycles"
    )
    quantum_ms: float | None = Field(
        default=None,
        gt=0,
        le=1e6,
        allow_inf_nan=False,
        description="controller quantum in ms (machine clock_ghz)",
    )
    jobs: list[JobGroup] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_quantum(self) -> JobSetSpec:
        if self.quantum and self.quantum_ms is not None:
            raise ValueError("give quantum (cycles) or quantum_ms, not both")
        if self.quantum_ms is not None and "quantum_ms" in self.controller_params:
            raise ValueError("quantum_ms is given twice (also in controller_params)")
        return self


@dataclass
class JobEntry:
    """One resolved job of a job set."""

    name: str
    trace: Path
    scheduler: str
    params: dict[str, Any]
    arrival: int
    group: int


@dataclass
class JobSet:
    """A resolved job set: every job with its trace file and arrival cycle."""

    jobs: list[JobEntry]
    seed: int = 0
    controller: str = "equi"
    controller_params: dict[str, Any] = field(default_factory=dict)
    quantum: int = 0
    source: str = ""


def check_built_jobset(js: JobSet) -> None:
    """Refuse a :class:`JobSet` made in Python that a job-set file could not give: its
    jobs not :class:`JobEntry`, a name empty or given twice (records, tables and figures
    tell jobs apart by it), parameters that are not a mapping (the arrivals are checked
    where the run reads them).

    Raises
    ------
    ConfigError
        The first problem, naming the job.
    """
    if not isinstance(js.jobs, list | tuple) or not js.jobs:
        raise ConfigError(f"JobSet.jobs={shown(js.jobs)}: expected a non-empty list of JobEntry")
    seen: set[str] = set()
    for i, j in enumerate(js.jobs):
        if not isinstance(j, JobEntry):
            raise ConfigError(f"JobSet.jobs[{i}]: {shown(j)} is not a JobEntry")
        if not isinstance(j.name, str) or not j.name:
            raise ConfigError(f"JobSet.jobs[{i}]: name {shown(j.name)} is not a job's name")
        try:
            check_label(j.name, "a job")
        except ValueError as exc:
            raise ConfigError(f"JobSet.jobs[{i}]: name {exc}") from None
        if j.name in seen:
            raise ConfigError(f"JobSet.jobs[{i}]: job name {j.name!r} is also an earlier job's")
        seen.add(j.name)
        if not isinstance(j.params, dict):
            raise ConfigError(
                f"JobSet.jobs[{i}] ({j.name}): params {shown(j.params)} is not a dict"
            )


def _arrivals(group: JobGroup, rng: np.random.Generator, where: str) -> list[int]:
    a = group.arrival
    if isinstance(a, int):
        return [a] * group.copies
    if isinstance(a, list):
        return [int(x) for x in a]
    p = a.poisson
    gaps = rng.exponential(p.mean, size=group.copies)
    last = p.start + float(np.sum(gaps))
    if last > MAX_ARRIVAL:
        raise ConfigError(
            f"{where}.arrival: the Poisson process (mean {p.mean:g}, start {p.start}) "
            f"draws arrivals up to {last:.3g} cycles, beyond 2^60"
        )
    return [int(p.start + x) for x in np.floor(np.cumsum(gaps))]


def _label(group: JobGroup) -> str:
    if group.name:
        return group.name
    if group.generator:
        return group.generator
    return Path(group.trace or "trace").name.split(".")[0]


def _read_spec(source: str | os.PathLike | dict[str, Any]) -> tuple[JobSetSpec, Path, str]:
    """The validated job-set spec, the folder relative paths start from, and its name."""
    if isinstance(source, dict):
        data, base, name = python_scalars(source), Path.cwd(), "job set"
    else:
        if not isinstance(source, str | os.PathLike):
            raise ConfigError(f"job set {source!r}: expected a YAML path or a dict")
        path = Path(source)
        name = str(path)
        if not os.path.lexists(path) and str(source):
            raise ConfigError(f"{path}: no such job-set file")
        # the one reader of a user's text: a device or a named pipe is refused, not read
        # until memory runs out or something writes to it
        data = parse_yaml(read_user_text(source, "job-set (YAML)"), str(path))
        base = path.parent
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a job set is a mapping with a 'jobs' list")
    if isinstance(data, dict) and "workloads" in data and "jobs" not in data:
        # the other YAML of simsched: name it rather than list every key this schema misses
        # a dict has no file to give `sweep run` ("run it with `simsched sweep run job set`")
        how = (
            "not a job set"
            if isinstance(source, dict)
            else f"not a job-set file: run it with `simsched sweep run {name}`"
        )
        raise ConfigError(f"{name}: a sweep spec (top-level workloads:, docs/sweeps.md), {how}")
    try:
        spec = JobSetSpec.model_validate(data)
    except ValidationError as exc:
        err = _most_specific(exc.errors())
        loc = ".".join(str(x) for x in err["loc"] if x not in _UNION_TAGS)
        msg = field_message(err)
        raise ConfigError(f"{name}: {loc}: {msg}" if loc else f"{name}: {msg}") from None
    _check_names(spec, name)
    return spec, base, name


def _job_names(g: JobGroup) -> list[str]:
    """The names of group ``g``'s jobs: its label, numbered when it has copies."""
    label = _label(g)
    return [f"{label}#{k}" for k in range(g.copies)] if g.copies > 1 else [label]


def _check_names(spec: JobSetSpec, name: str) -> None:
    """Refuse two jobs of one name: records, tables and figures tell jobs apart by it."""
    seen: dict[str, int] = {}
    for gi, g in enumerate(spec.jobs):
        for job in _job_names(g):
            if job in seen:
                how = (
                    ""
                    if g.name
                    else " (from its " + ("generator)" if g.generator else "trace file's name)")
                )
                raise ConfigError(
                    f"{name}: jobs.{gi}: job name {job!r}{how} is also a job of jobs.{seen[job]}; "
                    "give one of the groups another `name:`"
                )
            seen[job] = gi


# pydantic names the branch of ``arrival`` (int | list[int] | PoissonSpec) it tried.
_UNION_TAGS = ("int", "list[int]", "PoissonSpec")


def _most_specific(errors: list[Any]) -> Any:
    """The first error, or — when it only says a branch of ``arrival`` had another type
    (a Poisson mapping is not an int) — the deepest error of the same field: the one of
    the branch the input's type matched."""
    err = errors[0]
    if len(err["loc"]) < 2 or err["loc"][-1] not in _UNION_TAGS:
        return err
    parent = tuple(err["loc"][:-1])
    same = [e for e in errors if tuple(e["loc"][: len(parent)]) == parent]
    if {e["loc"][-1] for e in same} == SCALAR_TAGS:
        # a parameter's value (Scalar) of no branch's type: pydantic's first words, "Input
        # should be a valid integer", were said of a list or an object given as text
        return scalar_type_error(parent, err.get("input"))
    # a key the branch does not know says more than the key it then misses: {gauss: ...}
    # was "arrival.poisson: required key missing"
    unknown = [e for e in same if e["type"] == "extra_forbidden"]
    return max(unknown or same, key=lambda e: len(e["loc"]))


def _check_group(
    name: str,
    gi: int,
    g: JobGroup,
    base: Path,
    scheduler: str | None,
    scheduler_params: dict[str, Any] | None,
) -> tuple[str, dict[str, Any]]:
    """The group's scheduler name and resolved parameters; its trace or generator checked."""
    from simsched.schedulers import get_scheduler
    from simsched.workloads import get as get_workload

    where = f"{name}: jobs.{gi}"
    try:
        sched = get_scheduler(scheduler or g.scheduler)
        raw = dict(g.scheduler_params) if scheduler_params is None else dict(scheduler_params)
        params = sched.resolve_params(raw)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if g.trace is not None:
        p = Path(g.trace)
        full = p if p.is_absolute() else base / p
        try:
            kind = regular_file_kind(full)
        except FileNotFoundError:
            raise ConfigError(f"{where}.trace: {g.trace} does not exist") from None
        except OSError as exc:  # no permission, a name too long...
            raise ConfigError(f"{where}.trace: {g.trace}: {describe_os_error(exc)}") from None
        if kind is not None:  # a named pipe or a device was said not to exist
            raise ConfigError(f"{where}.trace: {g.trace} is {kind}, expected a trace file")
    else:
        try:
            workload = get_workload(g.generator)
        except ConfigError as exc:
            raise ConfigError(f"{where}.generator: {exc}") from None
        try:
            workload.resolve(dict(g.params))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return sched.name, params


def check_jobset(
    source: str | os.PathLike | dict[str, Any],
    *,
    controller: str | None = None,
    scheduler: str | None = None,
    machine: Any = None,
    quantum: int | None = None,
) -> None:
    """Check a job set whole without making any trace: schema, schedulers and their
    parameters, trace files, generators and their parameters, the controller's name, and
    — given the ``machine`` (a :class:`~simsched.machine.Machine`) — the controller as
    :func:`simsched.run_jobs` makes it there (its parameters, the quantum and its floor,
    ``static`` shares), ``controller`` and ``quantum`` replacing the file's.

    Raises
    ------
    ConfigError
        The first problem, naming the file and the entry.
    """
    from simsched.engine.controllers import check_departures, get_controller
    from simsched.schedulers import get_scheduler

    spec, base, name = _read_spec(source)
    for gi, g in enumerate(spec.jobs):
        _check_group(name, gi, g, base, scheduler, None)
    try:
        cls = get_controller(controller or spec.controller)
        if machine is not None:
            cparams = dict(spec.controller_params)
            if spec.quantum_ms is not None:
                cparams["quantum_ms"] = spec.quantum_ms
            n_jobs = sum(g.copies for g in spec.jobs)
            ctl = cls(machine, n_jobs, cparams, spec.quantum if quantum is None else int(quantum))
            check_departures(ctl, (get_scheduler(scheduler or g.scheduler) for g in spec.jobs))
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _recipe(g: JobGroup) -> dict[str, Any]:
    """The trace recipe of job group ``g`` (:mod:`simsched.trace.recipes`)."""
    if g.trace is not None:
        return {"kind": "trace", "path": g.trace, "label": _label(g)}
    return {"kind": "generator", "generator": g.generator, "params": dict(g.params)}


def jobset_generator_recipes(source: str | os.PathLike | dict[str, Any]) -> list[dict[str, Any]]:
    """The recipes of the traces a job set makes (its generator groups), making none.

    Raises
    ------
    ConfigError
        The file cannot be read or breaks the schema.
    """
    spec, _, _ = _read_spec(source)
    return [_recipe(g) for g in spec.jobs if g.trace is None]


def jobset_trace_files(source: str | os.PathLike | dict[str, Any]) -> list[tuple[int, str, Path]]:
    """The trace files a job set names, opening none: each group's index, the path as
    written and the path it resolves to (relative to the job set's folder).

    Raises
    ------
    ConfigError
        The file cannot be read or breaks the schema.
    """
    spec, base, _ = _read_spec(source)
    return [
        (gi, g.trace, Path(g.trace) if Path(g.trace).is_absolute() else base / g.trace)
        for gi, g in enumerate(spec.jobs)
        if g.trace is not None
    ]


def load_jobset(
    source: str | os.PathLike | dict[str, Any],
    *,
    seed: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    scheduler: str | None = None,
    scheduler_params: dict[str, Any] | None = None,
) -> JobSet:
    """Read and resolve a job-set file (or dict).

    Parameters
    ----------
    source
        Path of a YAML job-set file, or the same content as a dict.
    seed
        Overrides the file's ``seed``.
    cache_dir
        Folder for generated traces (default ``$SIMSCHED_CACHE_DIR/traces``).
    scheduler, scheduler_params
        Override every job's scheduler and its parameters (sweeps over job schedulers).

    Returns
    -------
    JobSet
        The jobs in file order (copies of a group one after another).

    Raises
    ------
    ConfigError
        Unreadable file, schema violation (naming the field), missing trace, unknown
        generator, scheduler or parameter.
    """
    from simsched.files import cache_dir as default_cache
    from simsched.trace.recipes import ensure_trace
    from simsched.workloads import generate

    spec, base, name = _read_spec(source)
    s = spec.seed if seed is None else check_seed(seed)
    cache = Path(cache_dir) if cache_dir is not None else default_cache("traces")
    jobs: list[JobEntry] = []
    for gi, g in enumerate(spec.jobs):
        sched_name, params = _check_group(name, gi, g, base, scheduler, scheduler_params)
        with cache_output() if cache_dir is None else contextlib.nullcontext():
            trace = ensure_trace(_recipe(g), cache, base, generate=generate)
        arrivals = _arrivals(g, np.random.default_rng([s, gi]), f"{name}: jobs.{gi}")
        for job_name, t in zip(_job_names(g), arrivals, strict=True):
            jobs.append(
                JobEntry(
                    name=job_name,
                    trace=Path(trace),
                    scheduler=sched_name,
                    params=params,
                    arrival=t,
                    group=gi,
                )
            )
    cparams = dict(spec.controller_params)
    if spec.quantum_ms is not None:
        # Cycles need the machine's clock: the controller converts (quantum_cycles).
        cparams["quantum_ms"] = spec.quantum_ms
    return JobSet(
        jobs=jobs,
        seed=s,
        controller=spec.controller,
        controller_params=cparams,
        quantum=spec.quantum,
        source=name,
    )
