"""The machine schema: sockets, cores, caches, NUMA memory and scheduling costs.

One strict pydantic model per part (unknown keys are errors, every default is declared
here once).  Sizes accept integers (bytes) or strings with a unit; ``KB``/``MB``/``GB``
are binary (1 KB = 1024 bytes), as cache sizes are quoted in the papers and data sheets.
See ``docs/machine-model.md`` for the meaning of every field.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from simsched.errors import ConfigError
from simsched.params import check_label, is_power_of_two

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
    # MAX_SIZE is 1 TB: a unit that can state the cap itself
    "t": 1024**4,
    "tb": 1024**4,
    "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
#: A number in exponent form that YAML 1.1 reads as text: without a dot (``1e9``), or
#: with an exponent without its sign (``1.0e300``).
_EXPONENT_TEXT = re.compile(r"\s*[-+]?(?:\d+[eE][-+]?\d+|\d*\.\d*[eE]\d+)\s*")


def exponent_hint(value: object) -> str:
    """A note for a text that YAML would have read as a number written another way, else
    ``""``: the common way to get a string where a number belongs."""
    if isinstance(value, str) and _EXPONENT_TEXT.fullmatch(value):
        return (
            " (YAML reads a number in exponent form as text unless it has a dot and a "
            "signed exponent: 1.0e+9, or 1000000000)"
        )
    return ""


class SizeError(ConfigError, ValueError):
    """A value :func:`parse_size` cannot read as a size.

    A :class:`ConfigError`, as every refused input of the Python API is; and a
    ``ValueError``, which pydantic's validators turn into an error naming the field (a
    machine file's ``caches.0.size``), and which callers catching one still catch.
    """


class UnknownUnit(SizeError):
    """A size written as a number and a unit :func:`parse_size` does not know (``7EiB``)."""


def parse_size(value: object) -> int:
    """Parse a byte size such as ``65536``, ``"64KB"`` or ``"1.5 MB"`` into bytes.

    Parameters
    ----------
    value
        An integer number of bytes or a string with a binary unit (KB, MB, GB, KiB, ...).

    Returns
    -------
    int
        The size in bytes.

    Raises
    ------
    SizeError
        A :class:`~simsched.errors.ConfigError` (and a ``ValueError``): not a size, or a
        unit it does not know (:class:`UnknownUnit`).
    """
    if isinstance(value, bool):
        raise SizeError(f"{value!r}: a size must be a number of bytes or a string such as '64KB'")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        # More digits than any size needs: Python refuses past 4300 with advice on
        # sys.set_int_max_str_digits, which is no answer to a typo.
        if m and m.group(2).lower() in _UNITS and len(m.group(1)) <= 4000:
            # Exact: in floats "9007199254740993" read as ...992 (and the bound's message
            # then quoted a number nobody gave), and "1.0000000000000001 KB" as 1024.
            nbytes = Fraction(m.group(1)) * _UNITS[m.group(2).lower()]
            if nbytes.denominator == 1:
                return int(nbytes)
    shown = repr(value)
    if isinstance(value, str) and len(value) > 60:
        shown = f"{value[:40]!r}... ({len(value):,} characters)"
    if isinstance(value, str) and m and m.group(2).lower() not in _UNITS:
        # '7EiB' was "not a size", naming neither the unit nor the ones there are
        raise UnknownUnit(
            f"{shown}: unknown unit {m.group(2)!r} (B, K/KB/KiB, M/MB/MiB, G/GB/GiB or "
            "T/TB/TiB, all binary)"
        )
    raise SizeError(f"{shown} is not a size (use bytes or a string such as '64KB', '20MB')")


#: Largest size the model represents: 1 TB (a cache of more lines than that is a typo).
MAX_SIZE = 1 << 40
#: Largest latency, service interval or cost in cycles (the engine's clock is int64; this
#: keeps sums over billions of references far from overflow).
MAX_CYCLES = 1 << 24
#: Most cache levels a machine may have.  Chips have at most four; the generated memory
#: kernel nests a block per level, and Python compiles no more than about thirty nested
#: blocks (32 levels ended in an IndentationError with a traceback, and 16 made a kernel
#: of about 230 KB of source).
MAX_LEVELS = 8

Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0, le=MAX_SIZE)]
# Counts and cycle numbers are exact integers: ``true`` or ``2.5`` is an error, not 1 or 2.
Cycles = Annotated[StrictInt, Field(ge=0, le=MAX_CYCLES)]


def link_interval(line: int, clock_ghz: float, bandwidth: float) -> int:
    """Cycles a link is busy per line: ``line`` bytes at ``bandwidth`` GB/s, ``clock_ghz`` GHz.

    The one conversion of a link's bandwidth into the engine's service interval
    (``topology.routes``).  :meth:`Machine._check_links` bounds the same quotient before it
    is rounded, as a float, so that a bandwidth small enough to make it infinite is refused
    rather than overflowing ``round``.

    Parameters
    ----------
    line
        Line size in bytes (the outermost cache's).
    clock_ghz
        Core clock in GHz.
    bandwidth
        Link bandwidth in GB/s in each direction.

    Returns
    -------
    int
        ``max(1, round(line * clock_ghz / bandwidth))``.
    """
    return max(1, round(line * clock_ghz / bandwidth))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class Prefetch(_Strict):
    """A per-core stream prefetcher filling a private level (docs/machine-model.md §6.2)."""

    streams: StrictInt = Field(
        default=16, ge=1, le=64, description="streams each core's prefetcher tracks"
    )
    distance: StrictInt = Field(
        default=4, ge=1, le=64, description="lines ahead of the access that triggers it"
    )
    degree: StrictInt = Field(default=2, ge=1, le=16, description="lines prefetched per trigger")


class CacheLevel(_Strict):
    """One level of the cache hierarchy (true LRU, write-back, write-allocate)."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", description="e.g. L1, L2, L3")
    scope: Literal["core", "socket"] = Field(description="private per core or shared per socket")
    size: Size = Field(description="capacity in bytes")
    assoc: StrictInt = Field(gt=0, le=256, description="ways per set")
    line: Size = Field(description="line size in bytes")
    hit_latency: Cycles = Field(description="cycles for a hit at this level")
    inclusion: Literal["non-inclusive", "inclusive", "exclusive"] = Field(
        default="non-inclusive",
        description=(
            "inclusive: holds every line of the levels above, an eviction here "
            "back-invalidates them; exclusive: a victim level, filled only by the "
            "evictions of the level above, a hit moves the line up and out of it; "
            "non-inclusive: filled by demand fills, no back-invalidation"
        ),
    )
    prefetch: Prefetch | None = Field(
        default=None, description="a stream prefetcher per core filling this private level"
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_inclusive(cls, data: object) -> object:
        # ``inclusive: true|false`` (machine files before ``inclusion``) stays accepted.
        if not isinstance(data, dict) or "inclusive" not in data:
            return data
        if "inclusion" in data:
            raise ValueError(
                "inclusive: give inclusion (inclusive | non-inclusive | exclusive) only"
            )
        flag = data["inclusive"]
        if not isinstance(flag, bool):
            raise ValueError(f"inclusive: {flag!r} is not true or false (or use inclusion)")
        out = {k: v for k, v in data.items() if k != "inclusive"}
        out["inclusion"] = "inclusive" if flag else "non-inclusive"
        return out

    @property
    def inclusive(self) -> bool:
        """Whether the level is inclusive of the levels above it."""
        return self.inclusion == "inclusive"

    @property
    def exclusive(self) -> bool:
        """Whether the level is an exclusive (victim) level of the level above it."""
        return self.inclusion == "exclusive"

    @model_validator(mode="after")
    def _geometry(self) -> CacheLevel:
        if not is_power_of_two(self.line):
            raise ValueError(f"line: {self.line} is not a power of two")
        if self.size % (self.line * self.assoc):
            raise ValueError(
                f"size: {self.size} bytes is not a multiple of line × assoc = "
                f"{self.line * self.assoc}"
            )
        if not is_power_of_two(self.sets):
            raise ValueError(
                f"size: {self.size} bytes / ({self.line} B × {self.assoc} ways) = "
                f"{self.sets} sets, not a power of two"
            )
        return self

    @property
    def sets(self) -> int:
        """Number of sets."""
        return self.size // (self.line * self.assoc)


class Memory(_Strict):
    """One memory node per socket, each behind its own controller."""

    latency: Cycles = Field(description="cycles to fetch a line from the local node")
    remote_latency: Cycles = Field(
        default=0, description="extra cycles when the line's page lives on another node"
    )
    service_interval: Cycles = Field(
        description="cycles a node's controller is busy per line transferred (bandwidth)"
    )
    page_size: Size = Field(default=4096, description="NUMA placement granularity in bytes")
    placement: str = Field(
        default="first-touch",
        description="first-touch | interleave | node:N (every page on node N)",
    )

    @model_validator(mode="after")
    def _check(self) -> Memory:
        if not is_power_of_two(self.page_size):
            raise ValueError(f"page_size: {self.page_size} is not a power of two")
        if self.placement not in ("first-touch", "interleave") and not re.fullmatch(
            r"node:\d+", self.placement
        ):
            raise ValueError(
                f"placement: {self.placement!r} is not one of first-touch, interleave, node:N"
            )
        return self

    @property
    def fixed_node(self) -> int | None:
        """The node of ``placement: node:N``, else None."""
        if self.placement.startswith("node:"):
            return int(self.placement[5:])
        return None


class Costs(_Strict):
    """Cycles charged for scheduler operations (docs/machine-model.md)."""

    steal_attempt: Cycles = Field(
        default=50, description="one steal attempt, hit or miss, on a deque of the same socket"
    )
    deque_op: Cycles = Field(default=5, description="push or pop on a worker's own deque")
    queue_op: Cycles = Field(default=20, description="an operation on a shared ready pool")
    remote_pool_op: Cycles = Field(
        default=100,
        description="a steal attempt on, or an operation on, a deque or pool of a socket "
        "one hop away (any other socket without links): the lock and head cross the "
        "interconnect",
    )
    remote_hop: Cycles = Field(
        default=0,
        description="extra cycles of such an operation per link beyond the first (the "
        "hop matrix of the links); 0 keeps every remote socket at remote_pool_op",
    )
    core_move: Cycles = Field(
        default=10_000,
        description="cycles a core is unavailable when the processor controller moves it "
        "from one job to another (context switch and thread wake-up)",
    )


class Core(_Strict):
    """How a core overlaps its cache misses (docs/machine-model.md §6.1).

    ``blocking`` (the default, and the model of every machine without a ``core`` key): a
    reference issues when the previous one has completed.  ``out-of-order``: a reference
    that misses the first level leaves up to ``mshrs`` misses in flight while later
    independent references within ``rob`` instructions issue, as interval simulation
    models an out-of-order core.
    """

    model: Literal["blocking", "out-of-order"] = Field(
        default="blocking", description="blocking (one miss at a time) or out-of-order"
    )
    mshrs: StrictInt | None = Field(
        default=None,
        ge=1,
        le=64,
        description="first-level misses a core may have in flight (miss status holding "
        "registers / fill buffers); out-of-order only",
    )
    rob: StrictInt | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="reorder-buffer entries: how many instructions past an outstanding miss "
        "a core may run before it waits for it; out-of-order only",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: object) -> object:
        # ``core: blocking`` is the whole section of a blocking core.
        if isinstance(data, str):
            return {"model": data}
        return data

    @model_validator(mode="after")
    def _check(self) -> Core:
        if self.model == "out-of-order":
            missing = [k for k in ("mshrs", "rob") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"an out-of-order core needs {' and '.join(missing)}")
        else:
            given = [k for k in ("mshrs", "rob") if getattr(self, k) is not None]
            if given:
                # --set core.model=blocking on an out-of-order preset ends here, and the
                # way to a blocking core (the whole section as one word) was nowhere said
                raise ValueError(
                    f"{' and '.join(given)} apply to model: out-of-order, not to a blocking "
                    "core (core: blocking alone, or --set core=blocking, makes the cores "
                    "blocking)"
                )
        return self

    @property
    def blocking(self) -> bool:
        """Whether the core waits for every reference."""
        return self.model == "blocking"


class Link(_Strict):
    """A point-to-point link between two sockets (HyperTransport, QPI), full duplex."""

    a: StrictInt = Field(ge=0, description="socket at one end")
    b: StrictInt = Field(ge=0, description="socket at the other end")
    bandwidth: StrictFloat | StrictInt = Field(
        gt=0, le=10_000, description="GB/s in each direction (needs clock_ghz)"
    )
    latency: Cycles = Field(
        default=0, description="cycles a remote access pays for crossing this link"
    )

    @field_validator("bandwidth", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        # Checked before the union, whose two failures read "bandwidth.float: ... ;
        # bandwidth.int: ...".  YAML reads 1e9 (no dot) as text, a common way to get here.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{value!r} is not a number of GB/s{exponent_hint(value)}")
        if not math.isfinite(value):
            # .nan was refused as "Input should be greater than 0"
            raise ValueError("Input should be a finite number")
        return value


class Machine(_Strict):
    """A simulated multi-socket chip multiprocessor."""

    name: str = Field(description="short identifier, used in results")
    description: str = ""
    sockets: StrictInt = Field(default=1, gt=0, le=64)
    cores_per_socket: StrictInt = Field(gt=0, le=256)
    caches: tuple[CacheLevel, ...] = Field(
        min_length=1, max_length=MAX_LEVELS, description="from the core outwards"
    )
    memory: Memory
    costs: Costs = Costs()
    coherence: StrictBool | None = Field(
        default=None,
        description="write-invalidate coherence; default: on when the machine has >1 core",
    )
    # Strict: ``clock_ghz: true`` is an error, not 1.0 GHz (an integer such as 2 is fine).
    clock_ghz: StrictFloat | None = Field(
        default=None,
        ge=0.001,
        le=100,
        # .nan was refused as "Input should be less than or equal to 100"
        allow_inf_nan=False,
        description="core clock in GHz: converts milliseconds to cycles (quantum_ms)",
    )

    links: tuple[Link, ...] | None = Field(
        default=None,
        description="socket-to-socket links; remote accesses take shortest routes over them",
    )
    core: Core | None = Field(
        default=None,
        description="how a core overlaps its misses; default (and None): blocking",
    )

    @field_validator("name")
    @classmethod
    def _one_line(cls, value: str) -> str:
        # The name heads one-line messages and the comment line of ``machine show``,
        # whose output must load back: a newline in it broke that file.
        return check_label(value, "a machine")

    @model_validator(mode="after")
    def _check(self) -> Machine:
        self._check_links()
        names = [c.name for c in self.caches]
        if len(set(names)) != len(names):
            raise ValueError(f"caches: level names {names} are not unique")
        seen_socket = False
        for i, c in enumerate(self.caches):
            if c.scope == "socket":
                seen_socket = True
            elif seen_socket:
                raise ValueError(
                    f"caches.{i} ({c.name}): a per-core level cannot sit below a per-socket level"
                )
            if i and c.line < self.caches[i - 1].line:
                raise ValueError(
                    f"caches.{i} ({c.name}): line {c.line} is smaller than the level above "
                    f"({self.caches[i - 1].line})"
                )
            if c.exclusive and i == 0:
                raise ValueError(
                    f"caches.{i}.inclusion ({c.name}): the first level cannot be exclusive "
                    "(it has no level above to take victims from)"
                )
            if c.exclusive and c.line != self.caches[i - 1].line:
                raise ValueError(
                    f"caches.{i}.inclusion ({c.name}): an exclusive level needs the line of the "
                    f"level above ({self.caches[i - 1].line}), not {c.line}"
                )
        fetching = [i for i, c in enumerate(self.caches) if c.prefetch is not None]
        for i in fetching:
            c = self.caches[i]
            if c.scope != "core" or c.exclusive:
                raise ValueError(
                    f"caches.{i}.prefetch ({c.name}): a prefetcher fills a private level that "
                    "demand fills (scope: core, not exclusive)"
                )
        if len(fetching) > 1:
            raise ValueError(
                f"caches.{fetching[1]}.prefetch: one prefetching level per machine "
                f"(caches.{fetching[0]} has one already)"
            )
        widest = max(range(len(self.caches)), key=lambda i: self.caches[i].line)
        if self.memory.page_size < self.caches[widest].line:
            # a page is the unit of NUMA placement: a line over several pages has no one node
            raise ValueError(
                f"memory.page_size: {self.memory.page_size} is smaller than the line of "
                f"caches.{widest} ({self.caches[widest].name}, {self.caches[widest].line}); "
                "a line would lie on several pages"
            )
        node = self.memory.fixed_node
        if node is not None and node >= self.sockets:
            raise ValueError(
                f"memory.placement: node {node} does not exist (the machine has "
                f"{self.sockets} socket(s))"
            )
        return self

    def _check_links(self) -> None:
        if self.links is None:
            return
        if self.clock_ghz is None:
            raise ValueError("links: need clock_ghz to turn link bandwidth into cycles per line")
        seen: set[tuple[int, int]] = set()
        adj: dict[int, set[int]] = {s: set() for s in range(self.sockets)}
        for i, ln in enumerate(self.links):
            for end in ("a", "b"):
                if getattr(ln, end) >= self.sockets:
                    raise ValueError(
                        f"links.{i}.{end}: socket {getattr(ln, end)} does not exist (the "
                        f"machine has {self.sockets} socket(s))"
                    )
            if ln.a == ln.b:
                raise ValueError(f"links.{i}: joins socket {ln.a} to itself")
            # A link's bandwidth becomes a service interval in cycles per line, which the
            # engine adds to int64 clocks like memory.service_interval: bound it the same way
            # (MAX_CYCLES).  The bound on the bandwidth depends on the line and the clock,
            # line * clock_ghz / MAX_CYCLES GB/s (7.6 KB/s for 64 B lines at 2 GHz); below it
            # the interval overflowed int64 or stalled every transfer for ever.
            line = self.caches[-1].line
            cycles = line * self.clock_ghz / ln.bandwidth
            if not cycles < MAX_CYCLES:  # also catches inf from a denormal bandwidth
                least = line * self.clock_ghz / MAX_CYCLES
                raise ValueError(
                    f"links.{i}.bandwidth: {ln.bandwidth} GB/s is too low: a {line}-byte line "
                    f"would take more than {MAX_CYCLES} cycles at {self.clock_ghz} GHz "
                    f"(give at least {least:.3g} GB/s)"
                )
            pair = (min(ln.a, ln.b), max(ln.a, ln.b))
            if pair in seen:
                raise ValueError(f"links.{i}: sockets {pair[0]} and {pair[1]} are linked twice")
            seen.add(pair)
            adj[ln.a].add(ln.b)
            adj[ln.b].add(ln.a)
        reached, todo = {0}, [0]
        while todo:
            for t in adj[todo.pop()]:
                if t not in reached:
                    reached.add(t)
                    todo.append(t)
        cut = sorted(set(range(self.sockets)) - reached)
        if cut:
            raise ValueError(f"links: socket {cut[0]} is unreachable from socket 0")

    def as_dict(self) -> dict:
        """The machine as JSON-able data; ``links`` and ``core`` only when given (and the
        core not blocking), so machines without them dump (and hash, and record) exactly as
        before they existed."""
        d = self.model_dump(mode="json")
        if d["links"] is None:
            del d["links"]
        for c in d["caches"]:
            if c["prefetch"] is None:
                del c["prefetch"]
        if self.core is None or self.core.blocking:
            del d["core"]
        return d

    @property
    def out_of_order(self) -> Core | None:
        """The core section when cores are out-of-order, else None (blocking)."""
        return None if self.core is None or self.core.blocking else self.core

    @property
    def cores(self) -> int:
        """Total number of cores."""
        return self.sockets * self.cores_per_socket

    @property
    def coherent(self) -> bool:
        """Whether write-invalidate coherence is modelled."""
        return self.coherence if self.coherence is not None else self.cores > 1

    def socket_of(self, core: int) -> int:
        """Socket of a core (cores are numbered socket-major)."""
        return core // self.cores_per_socket

    def level(self, name: str) -> CacheLevel:
        """The cache level called ``name``."""
        for c in self.caches:
            if c.name == name:
                return c
        raise KeyError(name)
