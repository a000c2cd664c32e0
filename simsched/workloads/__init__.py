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
:class:`~simsched.workloads.Param`), ``finish_params(params)`` (derived defaults),
``layout(params) -> Heap`` (where the program's arrays live),
``emit(b, params, heap) -> dict`` (the program itself), ``memory(params)`` (the bytes
generating needs), and may declare ``references(params)`` (the references its trace
file holds, exactly: checked against :data:`MAX_GENERATED_REFS` before anything is
written, the total of the progress it reports, and compared with what was written, a
difference being the generator's bug; one that stores a repeated part adds
``program_references(params)``, the whole program's, and may add ``program_rows(params)``,
its strands, frames and edges, both checked against a reader's limits; every built-in
generator declares ``references``, and a
plug-in without it generates with no total and no limit) and say in
``MARKS_ITERATIONS`` whether its traces mark iterations (a sweep that samples iterations
refuses one that says False before running it).  A module that models several
programs with one code path (the stencils) lists them in ``VARIANTS`` and gives each its
table with ``params_for(variant)`` and its summary in ``KINDS[variant].summary``; each variant is registered under its own name and
receives ``params["kind"] = variant``.  Generators are deterministic: the
same parameters give the same trace, bit for bit.  The memory layout, the instruction-gap
model and the parameters of every generator are described in ``docs/workloads.md``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple

from simsched import host
from simsched.errors import (
    ConfigError,
    SimschedError,
    contract_error,
    innermost,
    note_raised_by,
)
from simsched.params import check_callable, is_power_of_two
from simsched.registry import PLUGIN_GROUPS, Registry, name_key, set_source_lookup
from simsched.trace import repeat
from simsched.trace.format import CHUNK_REFS
from simsched.workloads import datapar, fib, ge, hashjoin, mergesort, stencil
from simsched.workloads._common import Heap, Param, Region, gen_memory, resolve_params

# Heap, Param, Region and gen_memory are re-exported from the private _common: the names a
# generator module of one's own imports (docs/workloads.md, "A generator of one's own").
__all__ = [
    "WORKLOADS",
    "Heap",
    "Param",
    "ParamDoc",
    "Region",
    "Workload",
    "WorkloadRun",
    "MAX_GENERATED_REFS",
    "check_size",
    "gen_memory",
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
        with _blamed(self):
            p = self.resolve(params)
            heap = self.layout(p)
            return WorkloadRun(p, heap, self.module.emit(b, p, heap))


@contextlib.contextmanager
def _blamed(w: Workload) -> Iterator[None]:
    """Add to an exception raised in generator ``w``'s own code (its module is on the
    traceback) a note naming the generator, as a replay does for a scheduler's: the bare
    traceback of a plug-in's bug did not say which plug-in it was.  A
    :class:`~simsched.errors.SimschedError` already says what is wrong in one line."""
    try:
        yield
    except SimschedError:
        raise
    except Exception as exc:
        home = w.module.__name__
        if innermost(exc, lambda frame: frame.f_globals.get("__name__") == home or None):
            note_raised_by(exc, "workload generator", w.name, home)
        raise


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
    "workload", PLUGIN_GROUPS["workload"], lambda w: (w.name,), _adapt
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


def _registered_source(name: str) -> str | None:
    """The source identity of a generator registered in this process from outside
    simsched (``GENERATORS.register``, an entry point's already loaded), for the cache key
    of the traces it makes; None for a built-in one or an unknown name.  Looks at what is
    registered only: an entry point not yet loaded is found by its group, without this."""
    from simsched.identity import outside_source_identity

    entry = GENERATORS.entries.get(name_key(name) or "")
    return None if entry is None else outside_source_identity(entry.module.__name__)


set_source_lookup("workload", _registered_source)


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


def _shown(p: dict[str, Any]) -> str:
    """A generator's parameters as a refusal names them."""
    return ", ".join(f"{k}={v}" for k, v in p.items() if k != "kind")


def _check_memory(w: Workload, p: dict[str, Any]) -> None:
    """Refuse in one line a generator run that needs more memory than this host has.

    Every generator declares ``memory(params)``, the bytes it needs as a function of its
    parameters (its DAG, its largest batch of references, its own data); this runs before
    the layout, which some generators compute from their data.
    """
    need = float(w.module.memory(p))
    have = host.available_bytes()
    if have is not None and need > have:
        raise ConfigError(
            f"{w.name} ({_shown(p)}): generating it needs about {need / 2**30:,.1f} GB of "
            f"memory, this host has {have / 2**30:,.1f} GB available (a smaller input?)"
        )


#: Most references a generated trace may hold (what the file holds: a repeated part
#: once).  The largest trace of the published-size studies is LAWS's GE on the Intel
#: machine (experiments/laws/published_intel.yaml: n = 8192, 200 pivot steps,
#: 39,293,514,800 references); a hundred times that, rounded, refuses no study nor any
#: input of a size one means to simulate, and refuses a mistyped one before a day of
#: work: ``datapar n=1000000 elems=1000000`` (9.0e12 references, two days) or ``ge
#: n=2^20 steps=1`` (4.4e12).
MAX_GENERATED_REFS = 4 * 10**12
#: References a second that :func:`generate` writes, for a refusal's rough duration: GE
#: n = 2048, cutoff 8, 200 steps, init false (2,279,601,200 references,
#: experiments/laws/published.yaml) took 49 s (44 s of CPU time), best of two, on a shared
#: 2-core host (2026-12-03).
GENERATED_REFS_PER_S = 45e6


def _roughly(seconds: float) -> str:
    """A long duration in the largest unit of which it is at least two."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}s"
    return f"{seconds:.0f} seconds"


def _check_references(w: Workload, p: dict[str, Any], chunk_refs: int) -> int | None:
    """Refuse in one line a generator run whose trace would hold more references than
    :data:`MAX_GENERATED_REFS`, or a repeat trace whose whole program a reader would
    refuse; else return the references the file will hold.

    Every built-in generator declares ``references(params)`` (optional for a plug-in):
    exactly what the file holds (a repeated part once), what the progress callback counts
    up to; :func:`generate` refuses a trace that holds another count.  One that stores a
    repeated part also declares ``program_references(params)``, the whole program, which
    a reader serves in :data:`simsched.trace.repeat.MAX_CHUNKS` chunks at most, and may
    declare ``program_rows(params)``, its strands, frames and edges, which a reader holds
    :data:`~simsched.trace.repeat.MAX_ROWS` of at most (and ``program_rows_at_most(params)``,
    a cheap upper bound that spares the exact count when it is within the limit).  The
    trace format's own limit, :data:`simsched.trace.format.MAX_INSTRUCTIONS` (every
    reference is an instruction), lies beyond both: the generators make a few
    instructions a reference, under 2^8 (tests/workloads/test_references.py), and 2^42
    references (either limit) times 2^8 is 2^50.
    """
    count = getattr(w.module, "references", None)
    if count is None:  # a plug-in without it: no total, no limit (it is optional)
        return None
    refs = int(count(p))
    if refs > MAX_GENERATED_REFS:
        took = _roughly(refs / GENERATED_REFS_PER_S)
        raise ConfigError(
            f"{w.name} ({_shown(p)}): its trace would hold {refs:,} references ({refs:.1e}), "
            f"more than the {MAX_GENERATED_REFS:.0e} a generated trace may have: about "
            f"{took} of generating at the {GENERATED_REFS_PER_S / 1e6:.0f} M references a "
            f"second measured on a 2-core host (smaller sizes: `simsched trace gen {w.name} "
            "--list`)"
        )
    whole = getattr(w.module, "program_references", None)
    program = refs if whole is None else int(whole(p))
    if program == refs:  # nothing repeated: the reader expands nothing
        return refs
    chunks = -(-program // chunk_refs)
    if chunks > repeat.MAX_CHUNKS:
        raise ConfigError(
            f"{w.name} ({_shown(p)}): its whole program would hold {program:,} references, "
            f"{chunks:,} chunks of {chunk_refs:,}, more than the {repeat.MAX_CHUNKS:,} a "
            "reader expands a repeated part into (fewer iterations, or a larger chunk_refs)"
        )
    count_rows = getattr(w.module, "program_rows", None)
    at_most = getattr(w.module, "program_rows_at_most", None)
    if at_most is not None and int(at_most(p)) <= repeat.MAX_ROWS:
        count_rows = None  # within the limit whatever the exact count (a cheap bound)
    rows = None if count_rows is None else int(count_rows(p))
    if rows is not None and rows > repeat.MAX_ROWS:
        raise ConfigError(
            f"{w.name} ({_shown(p)}): its whole program would have {rows:,} strands, "
            f"frames and edges, more than the {repeat.MAX_ROWS:,} table rows a reader "
            "expands a repeated part into (fewer iterations, or a larger cutoff)"
        )
    return refs


def _chunk_refs(name: str, params: dict[str, Any]) -> int:
    """Take ``chunk_refs`` (:data:`CHUNK_PARAM`) out of ``params`` and check it."""
    given = {k: params.pop(k) for k in [CHUNK_PARAM.name] if k in params}
    chunk_refs: int = resolve_params(name, (CHUNK_PARAM,), given)[CHUNK_PARAM.name]
    if not is_power_of_two(chunk_refs):
        raise ConfigError(
            f"workload {name}: parameter chunk_refs: {chunk_refs} is not a power of two"
        )
    return chunk_refs


def _check_size(w: Workload, p: dict[str, Any], chunk_refs: int) -> int | None:
    """Both up-front checks, the memory first (some generators count their references
    from their data, which needs it); the references the file will hold."""
    _check_memory(w, p)
    return _check_references(w, p, chunk_refs)


def check_size(name: str, params: dict[str, Any]) -> int | None:
    """Refuse, as :func:`generate` would, a generator run this host has too little memory
    for or whose trace would be too long, generating nothing (a sweep checks every trace
    it is to make before its first point, so that a too-large input does not fail every
    point alike).

    Parameters
    ----------
    name
        Generator name.
    params
        Its parameters, as :func:`generate` takes them (``chunk_refs`` too).

    Returns
    -------
    int or None
        The references the trace file would hold (a repeated part once); None for a
        plug-in generator that does not declare ``references``.

    Raises
    ------
    ConfigError
        An unknown generator, a bad parameter, an input too large for this host's
        memory, or one with more references than :data:`MAX_GENERATED_REFS` or its
        reader allows.
    """
    w = get(name)
    rest = dict(params)
    chunk_refs = _chunk_refs(w.name, rest)
    with _blamed(w):
        return _check_size(w, w.resolve(rest), chunk_refs)


#: The trace layout option every generator takes beside its own parameters: references
#: per chunk (the trace format's default, 2^20, unless given).  A replay decodes whole
#: chunks into rows of 15 bytes a reference, so a many-core replay of a trace with smaller
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
        Called as ``progress(references_written, total)`` after each chunk; ``total``
        is the references the file will hold (a repeated part once, as the generator's
        ``references(params)`` counts them), which the last call reaches.
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
        For an unknown workload, a bad parameter, an input too large for this host's
        memory, or one whose trace would hold more than :data:`MAX_GENERATED_REFS`
        references or more than its reader takes (:func:`check_size`; nothing is written).
    PluginError
        A plug-in generator wrote other than the references it declared (a built-in one:
        ``RuntimeError``, a bug in simsched); nothing is written.
    """
    from simsched.trace import TraceBuilder

    w = get(name)
    name = w.name  # the canonical name (" Heat" is heat) in the header and its params
    check_callable(progress, "progress")  # before it is wrapped into one that is
    chunk_refs = _chunk_refs(name, params)
    with _blamed(w):
        p = w.resolve(params)
        total = _check_size(w, p, chunk_refs)
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
        progress=progress if total is None else _counted(w, p, total, progress),
        chunk_refs=chunk_refs,
    )
    try:
        with _blamed(w):
            w.module.emit(b, p, heap)
        if total is not None and b.n_refs != total:
            raise _miscounted(w, p, total, f"it wrote {b.n_refs:,}")
    except BaseException:
        b.abort()
        raise
    return b.close()


def _miscounted(w: Workload, p: dict[str, Any], total: int, wrote: str) -> RuntimeError:
    """The error of a generator whose trace holds other than the references it declared:
    a bug of the generator (a :class:`~simsched.errors.PluginError` for a plug-in), since
    the limit :data:`MAX_GENERATED_REFS` was checked against the declared count."""
    return contract_error(
        w.module,
        f"workload generator {w.name!r} ({w.module.__name__}): references() declared "
        f"{total:,} references for {_shown(p) or 'its parameters'}, but {wrote}; it must "
        "count exactly the references the trace file holds (the limit on a generated "
        "trace's length is checked against it before generating)",
    )


def _counted(
    w: Workload, p: dict[str, Any], total: int, progress: Callable[[int, int | None], None] | None
) -> Callable[[int, int | None], None]:
    """The builder's ``progress(done, None)`` as ``progress(done, total)``, which also stops
    a generator that writes more references than it declared as soon as a chunk shows it
    (one declaring 4,096 could otherwise write past :data:`MAX_GENERATED_REFS`)."""

    def report(done: int, _unknown: int | None) -> None:
        if done > total:
            raise _miscounted(w, p, total, f"it wrote more ({done:,} so far)")
        if progress is not None:
            progress(done, total)

    return report
