"""Source snippets of the generated memory kernels: indexing and the set operations.

Part of the source generator of :mod:`simsched.memory._kernels`.  Each function returns
Python source text specialised on a :class:`~simsched.memory._geometry.Geometry`: a cache
instance's index, a set's base, the set operations (find, move to MRU, insert at MRU,
remove) and the coherence filter's updates: calls of small functions generated once per
module (:func:`_sets_source`, :func:`_filter_source`).  Sets are stored MRU-first, ``W``
int64 entries ``line << 1 | dirty``, ``-1`` for an empty way.
"""

from __future__ import annotations

from simsched.memory._geometry import (
    _GOLDEN,
    NST,
    Geometry,
)


def _ind(lines: list[str], n: int) -> list[str]:
    return [("    " * n + s) if s else s for s in lines]


def _u(index: str) -> str:
    """``index`` as an unsigned array index.

    Every index the kernels compute is non-negative; Numba cannot tell, and guards each
    signed index against a negative value (Python's count from the end), which costs
    instructions and a register for the array's length on every access.  An unsigned index
    has no such guard; its value is the same."""
    return f"np.uint64({index})"


def _inst(g: Geometry, k: int, core: str = "core") -> str:
    """Expression for the instance of level k used by ``core``."""
    if g.cores == 1:
        return "0"
    if g.private[k]:
        return core
    if g.cores_per_socket == 1:
        return core
    return f"({core} // {g.cores_per_socket})"


def _base(g: Geometry, k: int, inst: str, line: str) -> str:
    # The set count is a run-time value (``S{k}``, :func:`_sets`): machines that differ
    # only in cache sizes share one compiled module.
    return f"(({inst}) * S{k} + (({line}) & (S{k} - 1))) * {g.ways[k]}"


def _sets(g: Geometry, levels: range | list[int]) -> list[str]:
    """``S{k}``, the sets of level k, from the length of its array (instances x sets x
    ways entries), for the levels a generated function indexes."""
    return [f"S{k} = T{k}.shape[0] // {g.instances(k) * g.ways[k]}" for k in levels]


def _lvl_idx(g: Geometry, k: int, inst: str, field: int) -> str:
    return f"(({k * g.max_instances} + {inst}) * {NST} + {field})"


def _s_find(g: Geometry, k: int, T: str, b: str, a: str, p: str = "p") -> list[str]:
    """Set ``p`` to the way holding line ``a`` in the set at ``T[b]``, or -1."""
    if g.ways[k] == 1:
        return [f"{p} = 0 if ({T}[{_u(b)}] >> 1) == {a} else -1"]
    return [f"{p} = _find_w{g.ways[k]}({T}, {b}, {a})"]


def _s_touch(g: Geometry, k: int, T: str, b: str, p: str, d: str) -> list[str]:
    """Move way ``p`` to MRU, OR-ing in dirty bit ``d``."""
    if g.ways[k] == 1:
        return [] if d == "0" else [f"{T}[{_u(b)}] |= {d}"]
    return [f"_touch_w{g.ways[k]}({T}, {b}, {p}, {d})"]


def _s_insert(g: Geometry, k: int, T: str, b: str, a: str, d: str, v: str = "v") -> list[str]:
    """Insert line ``a`` at MRU; ``v`` receives the evicted LRU entry (-1: none)."""
    if g.ways[k] == 1:
        return [f"{v} = {T}[{_u(b)}]", f"{T}[{_u(b)}] = ({a} << 1) | {d}"]
    return [f"{v} = _insert_w{g.ways[k]}({T}, {b}, {a}, {d})"]


def _s_remove(g: Geometry, k: int, T: str, b: str, p: str, v: str = "v_") -> list[str]:
    """Remove way ``p`` (later ways move up, an empty way enters at LRU); ``v`` = entry."""
    if g.ways[k] == 1:
        return [f"{v} = {T}[{_u(b)}]", f"{T}[{_u(b)}] = -1"]
    return [f"{v} = _remove_w{g.ways[k]}({T}, {b}, {p})"]


def _sets_source(g: Geometry) -> str:
    """The set operations of a ``w``-way set, for each associativity ``w`` > 1 of the
    machine's levels, as functions of the set's array ``T`` and first entry ``b``:
    ``_find_w{w}(T, b, a)`` (the way holding line ``a``, or -1), ``_touch_w{w}(T, b, p,
    d)`` (way ``p`` to MRU, OR-ing in dirty bit ``d``), ``_insert_w{w}(T, b, a, d)``
    (line ``a`` at MRU; returns the LRU entry it evicts, -1: none) and
    ``_remove_w{w}(T, b, p)`` (returns way ``p``'s entry; later ways move up, an empty
    way enters at LRU).  Levels of equal associativity share them.

    The ways are a constant of each function, so the compiler unrolls their loops as
    before, when each operation was emitted in place: ``_serve`` performs about thirty,
    and typing and lowering each of them there was a large part of a new machine's first
    compile.  Numba compiles only those a module calls."""
    src = ""
    for w in sorted(set(g.ways) - {1}):
        bodies = {
            f"_find_w{w}(T, b, a)": [
                f"for q in range({w}):",
                f"    if (T[{_u('b + q')}] >> 1) == a:",
                "        return q",
                "return -1",
            ],
            f"_touch_w{w}(T, b, p, d)": [
                f"v_ = T[{_u('b + p')}] | d",
                "for q in range(p, 0, -1):",
                f"    T[{_u('b + q')}] = T[{_u('b + q - 1')}]",
                f"T[{_u('b')}] = v_",
            ],
            f"_insert_w{w}(T, b, a, d)": [
                f"v = T[{_u(f'b + {w - 1}')}]",
                f"for q in range({w - 1}, 0, -1):",
                f"    T[{_u('b + q')}] = T[{_u('b + q - 1')}]",
                f"T[{_u('b')}] = (a << 1) | d",
                "return v",
            ],
            f"_remove_w{w}(T, b, p)": [
                f"v = T[{_u('b + p')}]",
                f"for q in range(p, {w - 1}):",
                f"    T[{_u('b + q')}] = T[{_u('b + q + 1')}]",
                f"T[{_u(f'b + {w - 1}')}] = -1",
                "return v",
            ],
        }
        for head, body in bodies.items():
            src += f"\n\n@_jit\ndef {head}:\n" + "\n".join(_ind(body, 1)) + "\n"
    return src


def _tlist(g: Geometry, n: int | None = None) -> str:
    return ", ".join(f"T{k}" for k in range(g.levels if n is None else n))


def _unpack(g: Geometry) -> str:
    return f"{_tlist(g)}, LS, CS, NS, CTRL, PT, FC, TIM, OO, PF, MISC = st"


def _fbase(g: Geometry, k: int, line: str) -> str:
    """First mask word of the filter bucket of level-k line ``line``.

    The filter (a directory by address region) counts, per *entity* (core ``c``: its
    private levels; socket ``s``, entity ``cores + s``: its shared levels), the lines it
    holds by address *region* (``2**region_shift`` bytes, whole lines of every level);
    bucket = Fibonacci hash of the region.  A bucket is a sharer mask of ``mask_words``
    64-bit words (bit ``e``: entity ``e``'s counter is non-zero) and ``cores + sockets``
    counters; the masks of all buckets come first, then the counters from
    ``filter_counts`` on.  A write reads the mask only and visits its set bits, so its
    cost grows with the sharers, not with the cores."""
    return _fbase_of_region(g, _region(g, k, line))


def _region(g: Geometry, k: int, line: str) -> str:
    """The address region (see _fbase) of level-k line ``line``."""
    return f"({line}) >> {g.region_shift - g.shifts[k]}"


def _fhash(g: Geometry, region: str) -> str:
    """Bucket number of address region ``region`` (see _fbase)."""
    return (
        f"np.int64((np.uint64({region}) * np.uint64({_GOLDEN})) >> np.uint64({64 - g.filter_bits}))"
    )


def _fbase_of_region(g: Geometry, region: str) -> str:
    """First mask word of the filter bucket of address region ``region`` (see _fbase)."""
    return _fmask(g, _fhash(g, region))


def _fmask(g: Geometry, h: str) -> str:
    """First mask word of filter bucket number ``h``."""
    return h if g.mask_words == 1 else f"{h} * {g.mask_words}"


def _mword(g: Geometry, e: str) -> str:
    """Offset in a bucket of the mask word holding entity ``e``'s bit."""
    return "0" if g.mask_words == 1 else f"(({e}) >> 6)"


def _entity(g: Geometry, k: int, inst: str) -> str:
    return f"({inst})" if g.private[k] else f"{g.cores} + ({inst})"


def _f_add(g: Geometry, k: int, inst: str, line: str, delta: int) -> list[str]:
    """Count a line entering (+1) or leaving (-1) instance ``inst`` of level k: a call of
    one of the functions :func:`_filter_source` generates."""
    if not g.filter_bits:
        return []
    name = "_f_in" if delta > 0 else "_f_out"
    return [f"{name}(FC, {_region(g, k, line)}, {_entity(g, k, inst)})"]


def _filter_source(g: Geometry) -> str:
    """``_f_in(FC, region, e)`` and ``_f_out(FC, region, e)``: entity ``e`` holds one line
    more (fewer) of ``region``.

    Functions for the reason the set operations are (:func:`_sets_source`): a fill or
    eviction of every level updates the filter, about twenty places in ``_serve``.  The
    compiler inlines them back (they are a few instructions), so the code that runs is
    the same, but Numba types and lowers them once instead of at each place."""
    if not g.filter_bits:
        return ""
    # The bit changes only when the counter leaves or reaches zero, rarely: a predicted
    # branch is cheaper than rewriting the mask word on every fill and eviction.
    one = "np.int64(1) << (e_ & 63)"
    mw = _mword(g, "e_")
    word = f"FC[{_u(f'fb_ + {mw}')}]"
    src = ""
    for name, delta, upd in (
        ("_f_in", 1, [f"if FC[{_u('n_')}] == 1:", f"    {word} |= {one}"]),
        ("_f_out", -1, [f"if FC[{_u('n_')}] == 0:", f"    {word} &= ~({one})"]),
    ):
        body = [
            f"h_ = {_fhash(g, 'r')}",
            f"fb_ = {_fmask(g, 'h_')}",
            f"n_ = {g.filter_counts} + h_ * {g.entities} + e_",
            f"FC[{_u('n_')}] += {delta}",
            *upd,
        ]
        src += f"\n\n@_jit\ndef {name}(FC, r, e_):\n" + "\n".join(_ind(body, 1)) + "\n"
    return src
