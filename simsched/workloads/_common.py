"""Shared machinery of the synthetic workload generators: parameters, memory layout, helpers.

Parameters
    Every generator declares its parameters as :class:`Param` records (type, default, lower
    bound, meaning).  :func:`resolve_params` turns what a user passed -- Python values or the
    strings the command line hands over (``--param n=2^20``) -- into checked values, and
    raises :class:`~simsched.errors.ConfigError` naming the workload and the parameter when a
    value is missing, malformed or out of range.

Memory layout
    The generators place their arrays where a C program linked against glibc on x86-64 Linux
    would find them (ASLR off, so every run gives the same addresses).  :class:`Heap` is a
    bump allocator that mimics ``malloc``: a request of at least ``MMAP_THRESHOLD`` bytes
    (128 KiB, glibc's default ``M_MMAP_THRESHOLD``) gets its own page-aligned mapping carved
    downwards from ``MMAP_TOP``, and the pointer returned is 16 bytes past the mapping start
    (the chunk header), so large arrays start at ``0x...010`` exactly as glibc's do; smaller
    requests are carved upwards from the ``brk`` heap at ``BRK_BASE`` with a 16-byte header
    and 16-byte granularity.  Nothing is ever freed: every array a generator uses lives for
    the whole run, so addresses never alias between tasks that a scheduler may run at the
    same time.  ``STACK_TOP`` is where the main thread's stack starts (only ``fib`` models
    stack references; the other generators keep their locals in registers, as an optimising
    compiler does for their inner loops).

Helpers
    :func:`first_touch` writes main's initialisation loop over one or more arrays (the
    first touch that places pages on NUMA nodes).  :func:`concat_ranges` is the vectorised ``concatenate([arange(s, s + n) ...])`` that the
    vectorised generators use to lay out variable-length reference runs without a Python loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simsched.errors import ConfigError
from simsched.params import coerce, is_power_of_two

#: glibc's default ``M_MMAP_THRESHOLD``: requests at least this large are ``mmap``-ed
MMAP_THRESHOLD = 128 * 1024
#: bytes of glibc chunk header before the pointer ``malloc`` returns (x86-64)
MALLOC_HEADER = 16
#: x86-64 Linux base page
PAGE = 4096
#: start of the ``brk`` heap of a PIE executable with ASLR disabled
BRK_BASE = 0x0000_5555_5555_9000
#: top of the ``mmap`` area below the shared libraries (ASLR disabled)
MMAP_TOP = 0x0000_7FFF_F7C0_0000
#: top of the main thread's stack (ASLR disabled), 16-byte aligned
STACK_TOP = 0x0000_7FFF_FFFF_E000
#: size of the main thread's stack region (Linux's default ``RLIMIT_STACK``, 8 MiB)
STACK_SIZE = 8 << 20


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass(frozen=True)
class Region:
    """One array of the modelled program.

    Attributes
    ----------
    name
        Name of the array in the program (``A``, ``tmp``, ``buckets``, ...).
    base
        Address of its first byte.
    nbytes
        Its size in bytes.
    """

    name: str
    base: int
    nbytes: int

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.base + self.nbytes

    def as_json(self) -> dict[str, int]:
        """JSON-able form stored in the trace header (``params["regions"]``)."""
        return {"base": self.base, "bytes": self.nbytes}


@dataclass
class Heap:
    """Deterministic model of glibc ``malloc`` (see the module docstring).

    Attributes
    ----------
    regions
        Every allocation so far, in allocation order, by name.
    context
        Data the layout was derived from, kept for the generator's ``emit`` (hash join's
        partitioned keys), so it is computed once.
    """

    brk: int = BRK_BASE
    mmap_top: int = MMAP_TOP
    regions: dict[str, Region] = field(default_factory=dict)
    context: Any = None

    def malloc(self, name: str, nbytes: int, align: int = 16) -> Region:
        """Allocate ``nbytes`` bytes as ``malloc`` (``align`` 16) or ``aligned_alloc`` would.

        Parameters
        ----------
        name
            Name of the array (unique within one heap).
        nbytes
            Requested size; at least 1.
        align
            Alignment of the returned address, a power of two (16 is ``malloc``'s).

        Returns
        -------
        Region
            The allocation.
        """
        if name in self.regions:
            raise ValueError(f"array {name!r} allocated twice")
        if nbytes < 1 or align < 16 or not is_power_of_two(align):
            raise ValueError(f"bad allocation of {nbytes} bytes aligned to {align}")
        if nbytes >= MMAP_THRESHOLD:
            # own mapping: header, then the data aligned as asked; whole pages
            span = _align_up(MALLOC_HEADER + (align - 16) + nbytes, PAGE)
            self.mmap_top -= span
            base = _align_up(self.mmap_top + MALLOC_HEADER, align)
        else:
            base = _align_up(self.brk + MALLOC_HEADER, align)
            self.brk = base + _align_up(nbytes, 16)
        region = Region(name, base, int(nbytes))
        self.regions[name] = region
        return region

    def as_json(self) -> dict[str, dict[str, int]]:
        """Every region as ``{name: {"base": ..., "bytes": ...}}``."""
        return {name: r.as_json() for name, r in self.regions.items()}


def concat_ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenate ``arange(s, s + n)`` for every pair, without a Python loop.

    Parameters
    ----------
    starts, lens
        Integer arrays of equal length; ``lens`` non-negative.

    Returns
    -------
    numpy.ndarray
        int64 array of length ``lens.sum()``.
    """
    starts = np.asarray(starts, np.int64)
    lens = np.asarray(lens, np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    # each element is its index plus the shift of the run it belongs to
    off = np.zeros(len(lens), np.int64)
    np.cumsum(lens[:-1], out=off[1:])
    shift = starts - off
    return np.arange(total, dtype=np.int64) + np.repeat(shift, lens)


def first_touch(b, bases: list[int], cells: int, elem: int, gaps: tuple[int, ...]) -> None:
    """Main's initialisation loop: for every cell, one store into each array of ``bases``.

    Parameters
    ----------
    b
        The builder.
    bases
        Start addresses of the arrays written in the same loop (``A[x] = B[x] = ...``).
    cells
        Elements per array.
    elem
        Bytes per element.
    gaps
        Non-memory instructions before each array's store (one per base).
    """
    step = 1 << 19  # bounded memory whatever the array size
    for c0 in range(0, cells, step):
        idx = np.arange(c0, min(cells, c0 + step), dtype=np.int64)
        a = np.empty((len(idx), len(bases)), np.int64)
        for k, base in enumerate(bases):
            a[:, k] = base + idx * elem
        g = np.empty((len(idx), len(bases)), np.uint32)
        g[:] = gaps[: len(bases)]
        b.refs(a.ravel().astype(np.uint64), elem, True, g.ravel())


def exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    """``[0, x0, x0 + x1, ...]`` of length ``len(x) + 1`` (int64)."""
    out = np.zeros(len(x) + 1, np.int64)
    np.cumsum(x, out=out[1:])
    return out


# -- parameters -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One parameter of a generator.

    Attributes
    ----------
    name
        Parameter name (as given with ``--param name=value``).
    kind
        ``int``, ``float`` or ``bool``.
    default
        Value used when the parameter is not given; ``None`` means "derived from the other
        parameters" (the help says how).
    help
        What the parameter means, with its unit.
    minimum, maximum
        Inclusive bounds of numeric parameters (``None``: unbounded).
    choices
        Allowed values, if restricted.
    """

    name: str
    kind: type
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None

    def describe(self) -> dict[str, Any]:
        """JSON-able description (type, default, meaning, bounds)."""
        d: dict[str, Any] = {"type": self.kind.__name__, "default": self.default, "help": self.help}
        if self.minimum is not None:
            d["minimum"] = self.minimum
        if self.maximum is not None:
            d["maximum"] = self.maximum
        if self.choices is not None:
            d["choices"] = list(self.choices)
        return d


def _convert(workload: str, p: Param, value: Any) -> Any:
    return coerce(value, p.kind, f"workload {workload}: parameter {p.name}")


def resolve_params(
    workload: str, spec: tuple[Param, ...], given: Mapping[str, Any]
) -> dict[str, Any]:
    """Check and convert the parameters given for a workload; fill in the defaults.

    Parameters
    ----------
    workload
        Workload name (for messages).
    spec
        The workload's parameter table.
    given
        Parameters as passed (Python values or strings).

    Returns
    -------
    dict
        Every parameter of ``spec`` with its checked value, in table order (derived
        parameters the user left out are ``None``; the generator fills them in).

    Raises
    ------
    ConfigError
        On an unknown parameter, a value of the wrong type or out of range, or None (a
        parameter left out takes its default; None is no value).
    """
    known = {p.name: p for p in spec}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(
            f"workload {workload}: unknown parameter {unknown[0]!r} (known: {', '.join(known)})"
        )
    out: dict[str, Any] = {}
    for p in spec:
        if p.name in given:
            if given[p.name] is None:
                # None (YAML's null, `-p n=none`) took the default without a word, even
                # where the value was computed and came out None by mistake
                default = "derived from the others" if p.default is None else repr(p.default)
                raise ConfigError(
                    f"workload {workload}: parameter {p.name} is None; leave it out for its "
                    f"default ({default})"
                )
            v = _convert(workload, p, given[p.name])
        else:
            v = p.default
        if v is not None:
            where = f"workload {workload}: parameter {p.name}"
            if p.minimum is not None and v < p.minimum:
                raise ConfigError(f"{where}: must be at least {p.minimum}, got {v}")
            if p.maximum is not None and v > p.maximum:
                raise ConfigError(f"{where}: must be at most {p.maximum}, got {v}")
            if p.choices is not None and v not in p.choices:
                allowed = ", ".join(str(c) for c in p.choices)
                raise ConfigError(f"{where}: must be one of {allowed}, got {v}")
        out[p.name] = v
    return out


def seed_param(help_extra: str = "") -> Param:
    """The ``seed`` parameter every randomised generator takes."""
    return Param(
        "seed",
        int,
        1,
        "seed of the input data (numpy PCG64); same seed, same trace" + help_extra,
        minimum=0,
        maximum=2**63 - 1,
    )


def rng(seed: int, stream: int) -> np.random.Generator:
    """An independent generator for one purpose (``stream``) of one seeded run."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), int(stream)])))


# -- generator memory, declared by every generator for the up-front check -----------------------

#: generator memory whatever the trace: the builder's chunk buffers and the compressor
#: (measured 70 MB peak for small traces)
GEN_MEMORY_BASE = 64 << 20
#: generator memory per frame of the trace: the builder's tables with the strands and edges
#: a frame brings (measured 1,830 bytes per frame for fib, whose position keys are deepest)
GEN_MEMORY_PER_FRAME = 2000
#: generator memory per table row (strand, frame or edge) of a repeat trace's whole program,
#: which the builder expands and checks as a reader would before the file is in place
#: (measured 72 bytes: 1.37 GB peak for a heat of 16.8 M rows against 0.15 GB for 3,578)
GEN_MEMORY_PER_EXPANDED_ROW = 80
#: generator memory per reference of the largest batch emitted at once: addresses,
#: size/write bytes, gaps and their temporaries (measured 29 bytes with datapar, 48 with heat)
GEN_MEMORY_PER_REF = 64


def pfor_frames(items: int, cutoff: int) -> int:
    """Frames of a parallel loop over ``items`` split 2-4 ways down to ``cutoff`` or fewer.

    An upper estimate: at most about ``2 * items / cutoff`` leaves, at most as many inner
    nodes, and the root.
    """
    return 4 * -(-max(items, 0) // max(cutoff, 1)) + 2


def gen_memory(frames: int, batch_refs: int = 0, data: float = 0.0) -> float:
    """Bytes a generator needs: its trace's ``frames``, the largest batch of references it
    emits at once, and its own ``data`` (e.g. mergesort's keys)."""
    return GEN_MEMORY_BASE + GEN_MEMORY_PER_FRAME * frames + GEN_MEMORY_PER_REF * batch_refs + data
