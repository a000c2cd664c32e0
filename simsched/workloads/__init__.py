"""Synthetic workload generators (``simsched trace gen NAME --param k=v -o OUT``).

Each generator is a module that models one fork/join C program as it runs serially (serial
elision, docs/architecture.md §4.1) and writes its DAG and memory references with
:class:`~simsched.trace.TraceBuilder`:

* :mod:`~simsched.workloads.mergesort` -- parallel mergesort with parallel merge (PDF paper
  §4.2), on real random keys;
* :mod:`~simsched.workloads.hashjoin` -- the join phase of a partitioned hash join (PDF
  paper §4.2);
* :mod:`~simsched.workloads.stencil` -- the iterative stencils ``heat``, ``sor``, ``9p``,
  ``6p`` and ``25p``, rows split down to a cut-off, regular or irregular ([CAB11] §II,
  Fig. 1; [LAWS15] §6.1);
* :mod:`~simsched.workloads.ge` -- Gaussian elimination, one iteration per pivot step;
* :mod:`~simsched.workloads.datapar` -- a parent spawning N equal children ([SAWS12] Fig. 3);
* :mod:`~simsched.workloads.fib` -- CPU-bound recursion with only stack references.

A generator module provides ``NAME``, ``SUMMARY``, ``PARAMS`` (a tuple of
:class:`~simsched.workloads._common.Param`), ``finish_params(params)`` (derived defaults),
``layout(params) -> Heap`` (where the program's arrays live) and
``emit(b, params, heap) -> dict`` (the program itself), and may say in
``MARKS_ITERATIONS`` whether its traces mark iterations (a sweep that samples iterations
refuses one that says False before running it).  A module that models several
programs with one code path (the stencils) lists them in ``VARIANTS`` and gives each its
table with ``params_for(variant)`` and its summary in ``KINDS[variant].summary``; each variant is registered under its own name and
receives ``params["kind"] = variant``.  Generators are deterministic: the
same parameters give the same trace, bit for bit.  The memory layout, the instruction-gap
model and the parameters of every generator are described in ``docs/workloads.md``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple

from simsched import host
from simsched.errors import ConfigError
from simsched.params import is_power_of_two
from simsched.registry import Registry
from simsched.trace.format import CHUNK_REFS
from simsched.workloads import datapar, fib, ge, hashjoin, mergesort, stencil
from simsched.workloads._common import Heap, Param, resolve_params

__all__ = [
    "WORKLOADS",
    "ParamDoc",
    "Workload",
    "WorkloadRun",
    "check_memory",
    "generate",
    "params_of",
]


@dataclass(frozen=True)
class WorkloadRun:
    """What running a generator into a builder produced.

    Attributes
    ----------
    params
        The resolved parameters (defaults and derived values filled in).
    heap
        The program's memory layout (``heap.regions``: name -> Region).
    result
        Generator-specific results (e.g. mergesort's sorted output).
    """

    params: dict[str, Any]
    heap: Heap
    result: dict[str, Any]


@dataclass(frozen=True)
class Workload:
    """One registered generator; calling it writes the program into a builder.

    ``variant`` names one program of a module that models several (``VARIANTS``).
    """

    module: ModuleType
    variant: str | None = None

    @property
    def name(self) -> str:
        """Registry name."""
        return self.variant or self.module.NAME

    @property
    def summary(self) -> str:
        """One line on what the program is."""
        if self.variant:
            return self.module.KINDS[self.variant].summary
        return self.module.SUMMARY

    @property
    def marks_iterations(self) -> bool | None:
        """Whether the program's traces mark iterations (None: the module does not say)."""
        marks = getattr(self.module, "MARKS_ITERATIONS", None)
        return marks if isinstance(marks, bool) else None

    @property
    def params(self) -> tuple[Param, ...]:
        """The parameter table."""
        if self.variant:
            return self.module.params_for(self.variant)
        return self.module.PARAMS

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Check, convert and complete parameters (strings from the CLI are accepted).

        Raises
        ------
        ConfigError
            Naming the parameter that is unknown, malformed or out of range.
        """
        p = resolve_params(self.name, self.params, params)
        if self.variant:
            p = {"kind": self.variant, **p}
        return self.module.finish_params(p)

    def layout(self, params: Mapping[str, Any]) -> Heap:
        """The memory layout for (resolved) ``params``."""
        return self.module.layout(dict(params))

    def __call__(self, b, **params: Any) -> WorkloadRun:
        """Write the program into builder ``b`` (a TraceBuilder or compatible object).

        Parameters
        ----------
        b
            Where the DAG and references go.
        **params
            Generator parameters (Python values or strings).

        Returns
        -------
        WorkloadRun
            Resolved parameters, layout and generator results.
        """
        p = self.resolve(params)
        heap = self.layout(p)
        return WorkloadRun(p, heap, self.module.emit(b, p, heap))


#: The functions and tables a generator module provides (the module docstring says what).
GENERATOR_API = ("NAME", "SUMMARY", "PARAMS", "finish_params", "layout", "emit", "memory")


def _adapt(module: object, name: str) -> Workload:
    """An outside generator module (entry-point group ``simsched.workloads``) as a
    :class:`Workload`; its ``NAME`` must be the entry point's name."""
    if not isinstance(module, ModuleType):
        raise ConfigError(f"{module!r} is not a generator module")
    missing = [a for a in GENERATOR_API if not hasattr(module, a)]
    if missing:
        raise ConfigError(f"generator module {module.__name__} lacks {', '.join(missing)}")
    if module.NAME != name:
        raise ConfigError(
            f"generator module {module.__name__} is called {module.NAME!r}, not {name!r}"
        )
    return Workload(module)


GENERATORS: Registry[Workload] = Registry(
    "workload", "simsched.workloads", lambda w: (w.name,), _adapt
)
for _w in (
    Workload(mergesort),
    Workload(hashjoin),
    *(Workload(stencil, v) for v in stencil.VARIANTS),
    Workload(ge),
    Workload(datapar),
    Workload(fib),
):
    GENERATORS.register(_w)

#: every generator by name (built in; plug-ins join it when a name is first looked up)
WORKLOADS: dict[str, Workload] = GENERATORS.entries


class ParamDoc(NamedTuple):
    """Default and meaning of one parameter (``doc`` starts with its type and bounds)."""

    default: Any
    doc: str


def get(name: object) -> Workload:
    """The generator called ``name`` (blanks and case do not matter).

    Raises
    ------
    ConfigError
        When there is no such generator (the message lists the known ones).
    """
    return GENERATORS.get(name)


def params_of(name: str) -> dict[str, ParamDoc]:
    """Parameters of a generator with their defaults and meaning.

    Parameters
    ----------
    name
        Generator name.

    Returns
    -------
    dict
        Parameter name -> :class:`ParamDoc` ``(default, doc)``; ``doc`` gives the type, the
        bounds or choices, then the meaning.  A default of ``None`` is derived from the
        other parameters as the meaning says.
    """
    out = {}
    for p in get(name).params:
        kind = p.kind.__name__
        if p.choices is not None:
            kind += " in {" + ", ".join(str(c) for c in p.choices) + "}"
        elif p.minimum is not None and p.maximum is not None:
            kind += f" in [{p.minimum}, {p.maximum}]"
        elif p.minimum is not None:
            kind += f" >= {p.minimum}"
        out[p.name] = ParamDoc(p.default, f"({kind}) {p.help}")
    return out


def _check_memory(w: Workload, p: dict[str, Any]) -> None:
    """Refuse in one line a generator run that needs more memory than this host has.

    Every generator declares ``memory(params)``, the bytes it needs as a function of its
    parameters (its DAG, its largest batch of references, its own data); this runs before
    the layout, which some generators compute from their data.
    """
    need = float(w.module.memory(p))
    have = host.available_bytes()
    if have is not None and need > have:
        shown = ", ".join(f"{k}={v}" for k, v in p.items() if k != "kind")
        raise ConfigError(
            f"{w.name} ({shown}): generating it needs about {need / 2**30:,.1f} GB of memory, "
            f"this host has {have / 2**30:,.1f} GB available (a smaller input?)"
        )


def check_memory(name: str, params: dict[str, Any]) -> None:
    """Refuse, as :func:`generate` would, a generator run this host has too little memory
    for, generating nothing (a sweep checks every trace it is to make before its first
    point, so that a too-large input does not fail every point alike).

    Parameters
    ----------
    name
        Generator name.
    params
        Its parameters, as :func:`generate` takes them (``chunk_refs`` too).

    Raises
    ------
    ConfigError
        An unknown generator, a bad parameter, or an input too large for this host.
    """
    w = get(name)
    _check_memory(w, w.resolve({k: v for k, v in params.items() if k != CHUNK_PARAM.name}))


#: The trace layout option every generator takes beside its own parameters: references
#: per chunk (the trace format's default, 2^20, unless given).  A replay decodes whole
#: chunks into rows of 14 bytes a reference, so a many-core replay of a trace with smaller
#: chunks keeps a row per core in place (docs/engine.md §5).
CHUNK_PARAM = Param(
    "chunk_refs",
    int,
    CHUNK_REFS,
    "references per trace chunk (a power of two)",
    1 << 12,
    CHUNK_REFS,
)


def generate(
    name: str,
    path: str | os.PathLike,
    *,
    progress: Callable[[int, int | None], None] | None = None,
    **params: Any,
):
    """Generate the trace of workload ``name`` into ``path``.

    Parameters
    ----------
    name
        Generator name (see :data:`WORKLOADS`).
    path
        Output trace (``.sst``), written atomically.
    progress
        Called as ``progress(references_written, None)`` as the trace grows.
    **params
        Generator parameters; Python values or strings such as ``"2^20"`` or ``"true"``;
        also ``chunk_refs`` (:data:`CHUNK_PARAM`).  A parameter left out takes its
        default; None is refused, as it is no value.

    Returns
    -------
    TraceHeader
        The written trace's header.  Its ``params`` hold the resolved parameters, the
        workload name and the memory layout (``regions``: name -> ``{"base", "bytes"}``).

    Raises
    ------
    ConfigError
        For an unknown workload, a bad parameter or an input too large for this host
        (nothing is written).
    """
    from simsched.trace import TraceBuilder

    w = get(name)
    name = w.name  # the canonical name (" Heat" is heat) in the header and its params
    layout = {k: params.pop(k) for k in [CHUNK_PARAM.name] if k in params}
    chunk_refs = resolve_params(name, (CHUNK_PARAM,), layout)[CHUNK_PARAM.name]
    if not is_power_of_two(chunk_refs):
        raise ConfigError(
            f"workload {name}: parameter chunk_refs: {chunk_refs} is not a power of two"
        )
    p = w.resolve(params)
    _check_memory(w, p)
    heap = w.layout(p)
    args = [f"{k}={v}" for k, v in p.items()]
    meta = {"workload": name, **p, "regions": heap.as_json()}
    b = TraceBuilder(
        path,
        program=name,
        args=args,
        backend="synthetic",
        gaps_exact=False,
        line_size_hint=64,
        params=meta,
        progress=progress,
        chunk_refs=chunk_refs,
    )
    try:
        w.module.emit(b, p, heap)
    except BaseException:
        b.abort()
        raise
    return b.close()
