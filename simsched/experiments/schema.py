"""The sweep file's schema: one strict pydantic model per part, names with braces, grids.

Every model forbids unknown keys (``extra="forbid"``) and is frozen; defaults are declared
here once.  A model checks what one entry can know on its own (a key fixed and swept, an
empty grid axis, a seed beyond 64 bits); what needs the whole sweep (machine files,
generators, filters naming values that exist) is checked when the spec is loaded and
expanded (:mod:`simsched.experiments.spec`).  The full syntax is in ``docs/sweeps.md``.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictFloat,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from simsched.errors import ConfigError, field_message, shown
from simsched.machine.schema import exponent_hint
from simsched.params import MAX_QUANTUM, MAX_SEED

Scalar = str | int | float | bool
#: A seed: a non-negative 64-bit integer (numpy's generators refuse negative ones).
Seed = Annotated[StrictInt, Field(ge=0, le=MAX_SEED)]


def _one_line(value: str) -> str:
    """A label as given, or an error: it is a column's value, a table's cell and a
    figure's legend entry, where an empty one shows nothing and a newline breaks the row."""
    if not value:
        raise PydanticCustomError("label", "an empty label; leave it out for the default one")
    bad = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise PydanticCustomError(
            "label",
            "{given} holds the control character {char}: a label is one line of text",
            {"given": shown(value), "char": repr(bad)},
        )
    return value


#: A workload's ``name`` or a machine's or scheduler's ``label``.
Label = Annotated[str, AfterValidator(_one_line)]
AxisName = Literal["workloads", "machines", "schedulers", "seeds"]
AXES: tuple[str, ...] = ("workloads", "machines", "schedulers", "seeds")

# Keys a filter may test, each read from a point's columns.
FILTER_KEYS = ("workload", "machine", "scheduler", "seed", "cores", "sockets")

#: Most names one brace pattern may expand to (a sweep of more machines is a mistake).
MAX_BRACE_NAMES = 4096


def _top_level(text: str, start: int, end: int, sep: str) -> list[int]:
    """Where ``sep`` stands in ``text[start:end]`` outside any nested brace group."""
    at, depth = [], 0
    for i in range(start, end):
        ch = text[i]
        depth += (ch == "{") - (ch == "}")
        if depth == 0 and ch == sep:
            at.append(i)
    return at


def _first_group(text: str) -> tuple[int, int] | None:
    """The first outermost ``{...}`` group of ``text``, whose braces are balanced (its
    braces' indices); None if it has none."""
    depth, start = 0, -1
    for i, ch in enumerate(text):
        if ch == "{":
            start = i if depth == 0 else start
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return start, i
    return None


def _group_items(text: str, start: int, end: int) -> list[str] | range:
    """The items of the group ``text[start:end + 1]``: a range's numbers (a ``range``, not
    built) or the texts between its top-level commas."""
    body = text[start + 1 : end]
    commas = _top_level(text, start + 1, end, ",")
    if commas or ".." not in body or "{" in body:
        cuts = [start, *commas, end]
        return [text[i + 1 : j] for i, j in zip(cuts, cuts[1:], strict=False)]
    try:
        nums = [int(p) for p in body.split("..")]
    except ValueError:
        raise ConfigError(f"range {{{body}}} needs integers") from None
    if len(nums) not in (2, 3) or (len(nums) == 3 and nums[2] <= 0):
        raise ConfigError("range must be {a..b} or {a..b..step} with step > 0")
    step = nums[2] if len(nums) == 3 else 1
    lo, hi = nums[0], nums[1]
    return range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)


def _count(text: str) -> int:
    """How many names ``text`` expands to, counted without building them: the product over
    its top-level groups of each group's count (a range's length, or its items' sum)."""
    total, rest = 1, text
    while (group := _first_group(rest)) is not None:
        start, end = group
        items = _group_items(rest, start, end)
        total *= len(items) if isinstance(items, range) else sum(_count(i) for i in items)
        rest = rest[end + 1 :]
    return total


def expand_braces(text: str, limit: int = MAX_BRACE_NAMES) -> list[str]:
    """Expand shell-like braces: ``a-{1,2,4}``, ``a-{2..8..2}`` (inclusive ranges) and
    groups inside groups (``a-{1,{2,4}}``: ``a-1``, ``a-2``, ``a-4``), as a shell does.

    Parameters
    ----------
    text
        A name with zero or more ``{...}`` groups.

    Returns
    -------
    list of str
        The names in order; ``[text]`` when there is no brace group.

    Raises
    ------
    ConfigError
        A brace has no partner, a range is malformed (``{1..}``, a zero step, non-integer
        bounds), or the pattern gives more than ``limit`` names (counted before any is
        built).
    """
    depth = 0
    for i, ch in enumerate(text):  # every brace has its partner, in the name as written
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            raise ConfigError(f"{text!r}: '}}' at {i} closes no '{{'")
    if depth:
        raise ConfigError(f"{text!r}: {depth} '{{' not closed")
    try:
        n = _count(text)
    except ConfigError as exc:
        raise ConfigError(f"{text!r}: {exc}") from None
    if n > limit:
        raise ConfigError(f"{text!r}: gives more than {limit} names")
    return _expand(text)


def _expand(text: str) -> list[str]:
    group = _first_group(text)
    if group is None:
        return [text]
    start, end = group
    head, tail = text[:start], text[end + 1 :]
    return [
        name for item in _group_items(text, start, end) for name in _expand(head + str(item) + tail)
    ]


def grid_product(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a ``{key: [values]}`` mapping, in key order as written."""
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def grid_size(grid: dict[str, list[Any]]) -> int:
    """Number of combinations of a grid, without building them."""
    return math.prod(len(v) for v in grid.values())


def format_params(params: dict[str, Any]) -> str:
    """``k=v,k=v``: what a label shows of an entry's grid values, overrides or parameters."""
    return ",".join(f"{k}={v}" for k, v in params.items())


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("grid", mode="after", check_fields=False)
    @classmethod
    def _no_empty_axis(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        # An empty axis would make the product empty: the entry would vanish silently.
        for key, values in grid.items():
            if not values:
                raise ValueError(f"axis {key!r} has no values (give at least one)")
        return grid


def _fixed_and_swept(fixed: dict[str, Any], grid: dict[str, Any], what: str) -> None:
    """Refuse a key both fixed and swept: the grid's values would replace the fixed one
    without a word."""
    both = [k for k in fixed if k in grid]
    if both:
        raise ValueError(f"{', '.join(both)}: given in both {what} and grid (keep one)")


class CaptureRecipe(_Strict):
    """Capture a real program on demand (``simsched capture``), cached by the recipe's hash."""

    program: list[str] = Field(min_length=1, description="argv of the program to capture")
    backend: Literal["gcc", "valgrind", "pin"] = "gcc"
    build: list[str] | None = Field(
        default=None, description="argv of a command run first (e.g. simsched cc ...)"
    )
    sources: list[str] = Field(
        default_factory=list,
        description="files whose content enters the cache key (edit one, recapture)",
    )


class WorkloadSpec(_Strict):
    """One workload: exactly one of ``trace``, ``generator``, ``capture`` or ``jobs``.

    ``jobs`` names a job-set file (docs/jobs.md): the point replays the whole set with
    :func:`simsched.run_jobs`, the point's scheduler as every job's scheduler (its
    parameters for all of them), under ``controller`` with ``quantum`` (default: the job
    set's), and the point's seed as the job set's seed.
    """

    name: Label | None = None
    trace: str | None = None
    generator: str | None = None
    capture: CaptureRecipe | None = None
    jobs: str | None = None
    controller: str | None = None
    quantum: StrictInt | None = Field(default=None, ge=0, le=MAX_QUANTUM)
    params: dict[str, Scalar] = Field(default_factory=dict)
    grid: dict[str, list[Scalar]] = Field(default_factory=dict)
    small: dict[str, Scalar] = Field(
        default_factory=dict, description="parameter values used when the sweep runs small"
    )

    @model_validator(mode="after")
    def _one_source(self) -> WorkloadSpec:
        kinds = ("trace", "generator", "capture", "jobs")
        given = [k for k in kinds if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of trace, generator, capture or jobs"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if (self.params or self.grid or self.small) and self.generator is None:
            raise ValueError("params, grid and small apply to generators only")
        if (self.controller is not None or self.quantum is not None) and self.jobs is None:
            raise ValueError("controller and quantum apply to job sets (jobs) only")
        _fixed_and_swept(self.params, self.grid, "params")
        return self


class MachineSpec(_Strict):
    """A machine: a preset ``name`` or a YAML ``file``, with dotted-key overrides."""

    name: str | None = None
    file: str | None = None
    label: Label | None = None
    overrides: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> MachineSpec:
        if (self.name is None) == (self.file is None):
            raise ValueError("give exactly one of name (a preset) or file")
        _fixed_and_swept(self.overrides, self.grid, "overrides")
        return self


class SchedulerSpec(_Strict):
    """A scheduler by registered name, with parameters and optionally its own seeds."""

    name: str
    label: Label | None = None
    params: dict[str, Scalar] = Field(default_factory=dict)
    grid: dict[str, list[Scalar]] = Field(default_factory=dict)
    seeds: list[Seed] | None = Field(
        default=None,
        min_length=1,
        description="seeds for this scheduler only (e.g. [0] for a deterministic one)",
    )

    @model_validator(mode="after")
    def _params_or_grid(self) -> SchedulerSpec:
        _fixed_and_swept(self.params, self.grid, "params")
        return self


def given_twice(values: list[Any]) -> Any:
    """The first value of ``values`` that an earlier one equals, or None."""
    return next((x for i, x in enumerate(values) if x in values[:i]), None)


class SeedRange(_Strict):
    """``count`` consecutive seeds from ``start``."""

    count: StrictInt = Field(ge=1, le=1_000_000)
    start: Seed = 0


class SmallSpec(_Strict):
    """What a small run keeps (CI): only these machine labels and seeds."""

    machines: list[str] | None = None
    seeds: list[Seed] | None = None

    @field_validator("machines", "seeds")
    @classmethod
    def _neither_empty_nor_twice(cls, kept: list[Any] | None, info: ValidationInfo) -> Any:
        # an empty list left a small run no points ("the sweep has no points") or its
        # first seed without a word; a repeated entry was taken, where seeds: refuses it
        if kept is None:
            return kept
        if not kept:
            raise ValueError(
                f"an empty list keeps nothing (leave {info.field_name} out to keep all)"
            )
        twice = given_twice(kept)
        if twice is not None:
            raise ValueError(f"{twice!r} is given twice")
        return kept


def _machine_items(item: object) -> list[object]:
    """The machines one entry of ``machines`` stands for: a bare string is a preset or a
    machine file, and a name (bare or ``name:``) with braces is one per expansion."""
    if isinstance(item, str):
        is_file = item.endswith((".yaml", ".yml"))
        return [{"file" if is_file else "name": n} for n in expand_braces(item)]
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        # a name of another type is the schema's to refuse: str() made name: [] or
        # name: null the preset '[]' or 'None', "no such preset or file"
        return [{**item, "name": n} for n in expand_braces(item["name"])]
    return [item]


class SweepSpec(_Strict):
    """The whole sweep file (see ``docs/sweeps.md``)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    # min_length: an empty string silently meant the default folder
    out: str | None = Field(
        default=None, min_length=1, description="output folder, relative to the spec"
    )
    trace_cache: str | None = Field(default=None, min_length=1, description="trace cache folder")
    workloads: list[WorkloadSpec] = Field(min_length=1)
    machines: list[MachineSpec] = Field(min_length=1)
    schedulers: list[SchedulerSpec] = Field(min_length=1)
    seeds: Annotated[list[Seed], Field(min_length=1)] | SeedRange = Field(
        default_factory=lambda: [0]
    )
    zip: list[list[AxisName]] = Field(default_factory=list)
    include: list[dict[str, Any]] = Field(default_factory=list)
    exclude: list[dict[str, Any]] = Field(default_factory=list)
    small: SmallSpec = Field(default_factory=SmallSpec)
    sample_iterations: StrictInt | None = Field(
        default=None,
        ge=2,
        le=1_000_000,
        description="steady-state sampling of every point (simsched run --sample-iterations)",
    )
    # strict: `true` and the text "1" passed as 1 %; nan was refused as "should be less
    # than or equal to 100"
    sample_precision: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=100,
        allow_inf_nan=False,
        description="with sample_iterations: the interval to reach, in percent (run's "
        "--sample-precision; default 0.5)",
    )
    # per machine of ``machines`` (names with braces expanded), the entry of the file it
    # came from: what messages and ``--set machines.N`` name
    _machine_entry: list[int] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_machine_entries(cls, data: Any, handler: Any) -> Any:
        spec = handler(data)
        raw = data.get("machines") if isinstance(data, dict) else None
        if isinstance(raw, list):
            for k, item in enumerate(raw):
                spec._machine_entry += [k] * len(_machine_items(item))
        return spec

    def machine_entry(self, i: int) -> int:
        """The entry of the file's ``machines`` that machine ``i`` (braces expanded) came
        from, which ``--set machines.N`` and messages count by."""
        entries = self._machine_entry
        return entries[i] if len(entries) == len(self.machines) else i

    @field_validator("name")
    @classmethod
    def _name_is_not_a_folder(cls, value: str) -> str:
        # the results go to results/<name>: ".." put them beside the spec itself
        if value in (".", ".."):
            raise ValueError(f"{value!r} names a folder (results/{value}), not a sweep")
        return value

    @field_validator("workloads", "machines", "schedulers", mode="before")
    @classmethod
    def _strings_are_names(cls, value: Any, info: Any) -> Any:
        # A bare string is shorthand: a preset or file for machines, a scheduler name, a
        # generator name or a trace path for workloads.
        if not isinstance(value, list):
            return value
        out: list[object] = []
        for item in value:
            if info.field_name == "machines":
                out.extend(_machine_items(item))
            elif not isinstance(item, str):
                out.append(item)
            elif info.field_name == "schedulers":
                out.append({"name": item})
            else:
                out.append({"trace": item} if item.endswith(".sst") else {"generator": item})
        return out

    @field_validator("seeds", mode="wrap")
    @classmethod
    def _seeds_in_one_form(cls, value: Any, handler: Any) -> Any:
        # pydantic reports every form of the union it tried, in its own type names:
        # `seeds: 3` said "seeds.list[constrained-int]: Input should be a valid list;
        # seeds.SeedRange: Input should be a valid dictionary or instance of SeedRange"
        try:
            return handler(value)
        except ValidationError as exc:
            form = "SeedRange" if isinstance(value, dict) else "list"
            errors = [e for e in exc.errors() if str(e["loc"][0]).startswith(form)]
            if not isinstance(value, list | dict) or not errors:
                raise PydanticCustomError(
                    "seeds_form",
                    "expected a list of seeds ([0, 1, 2]) or a range ({count: 3, start: 0}), "
                    "got {given}",
                    {"given": shown(value)},
                ) from None
            parts = []
            for e in errors:
                msg = field_message(e)
                if e["type"] in ("int_type", "int_parsing"):
                    given = e.get("input")
                    text = "the text " if isinstance(given, str) else ""
                    msg += f", got {text}{given!r}{exponent_hint(given)}"
                where = [f"item {p}" if isinstance(p, int) else str(p) for p in e["loc"][1:]]
                parts.append(f"{' '.join(where)}: {msg}" if where else msg)
            raise PydanticCustomError("seeds_form", "; ".join(parts)) from None

    @field_validator("include", "exclude")
    @classmethod
    def _filter_keys(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        scalar = (str, int, float, bool)
        for rule in value:
            bad = sorted(set(rule) - set(FILTER_KEYS))
            if bad:
                raise ValueError(f"unknown filter key {bad[0]!r}; use {', '.join(FILTER_KEYS)}")
            for key, want in rule.items():
                items = want if isinstance(want, list) else [want]
                if not all(isinstance(w, scalar) for w in items):
                    raise ValueError(f"{key}: a value or a list of values (not nested)")
                if not items:
                    # an include left "the sweep has no points", an exclude dropped none
                    raise ValueError(f"{key}: an empty list matches no point")
        return value

    @model_validator(mode="after")
    def _zip_groups(self) -> SweepSpec:
        seen: set[str] = set()
        for group in self.zip:
            if len(group) < 2:
                raise ValueError("zip: each group names at least two axes")
            for axis in group:
                if axis in seen:
                    raise ValueError(f"zip: axis {axis!r} appears in two groups")
                seen.add(axis)
        if "seeds" in seen and any(s.seeds is not None for s in self.schedulers):
            raise ValueError("zip: seeds cannot be zipped when a scheduler has its own seeds")
        if self.sample_iterations is not None and any(w.jobs for w in self.workloads):
            raise ValueError("sample_iterations applies to single programs, not to job sets")
        if self.sample_precision is not None and self.sample_iterations is None:
            raise ValueError("sample_precision applies with sample_iterations only")
        for where, seeds in (
            ("seeds", self.seeds),
            *((f"schedulers.{i}.seeds", s.seeds) for i, s in enumerate(self.schedulers)),
        ):
            if isinstance(seeds, list):
                # else "two entries resolve to the same point" named the same labels twice
                twice = given_twice(seeds)
                if twice is not None:
                    raise ValueError(f"{where}: seed {twice} is given twice")
        r = self.seeds
        if isinstance(r, SeedRange) and r.start + r.count - 1 > MAX_SEED:
            # the last seed, not only the first, must be one (else every point fails in run)
            raise ValueError(
                f"seeds: {r.start}..{r.start + r.count - 1} go past the largest seed, "
                f"{MAX_SEED} (2^63 - 1)"
            )
        return self
