"""A host-cache prefetch hint for the generated memory kernels.

The window loop (:mod:`simsched.memory.window`) hands each core a few tens of references
at a time (about 23 per call on a 16-core heat stencil at the default window of 100
cycles), then moves to the next core.  A core's references sit in five arrays of a
decoded trace chunk (address, size, write flag, dependence flag, gap), so 16 cores make
80 interleaved read streams, more than the host's hardware prefetchers follow: nearly
every call began with misses in the host's caches on the lines of its next references,
and these misses, not the simulation, were most of the cost of a call.  ``_serve``
therefore asks the host to fetch those lines when a core stops (:func:`host_prefetch`),
so that they arrive while the other cores run (:func:`host_prefetch_span`).

Numba offers no prefetch function, hence this small intrinsic: it emits LLVM's
``llvm.prefetch`` (a read, kept in all cache levels), which changes no value and cannot
fault, so the kernels' results are the same with or without it.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_I32 = ir.IntType(32)


@intrinsic
def host_prefetch(typingctx, arr, index):  # type: ignore[no-untyped-def]
    """Hint the host to bring the cache line of ``arr[index]`` into its caches.

    Parameters
    ----------
    arr
        A one-dimensional array.
    index
        An index; it is not checked, and an index outside ``arr`` is harmless (a prefetch
        never faults), but the kernels pass only indices inside it.
    """
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(index, types.Integer):
        return None
    sig = types.void(arr, index)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(
            context, builder, aryty, ary, [args[1]], wraparound=False, boundscheck=False
        )
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # (read, locality 3: keep in every level, data cache)
        builder.call(
            fn,
            [
                builder.bitcast(ptr, i8p),
                ir.Constant(_I32, 0),
                ir.Constant(_I32, 3),
                ir.Constant(_I32, 1),
            ],
        )
        return context.get_dummy_value()

    return sig, codegen


#: Bytes of a host cache line (x86-64 and AArch64 servers alike).
HOST_LINE = 64


@intrinsic
def _line_elements(typingctx, arr):  # type: ignore[no-untyped-def]
    """Elements of ``arr`` in one host cache line (at least 1), a compile-time constant.

    ``arr.itemsize`` is a run-time field of a Numba array: a step computed from it costs a
    division per span, and another for the loop's trip count, on every call of ``_serve``.
    """
    if not isinstance(arr, types.Array):
        return None
    sig = types.intp(arr)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        size = context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype))
        return context.get_constant(types.intp, max(HOST_LINE // size, 1))

    return sig, codegen


# Inlined where it is called, so the caller's compile options (no reference counting in
# the kernels) are the ones that apply.
@njit(nogil=True, inline="always")
def host_prefetch_span(arr, lo, hi):  # type: ignore[no-untyped-def]
    """Hint every host cache line of ``arr[lo]`` to ``arr[hi]`` (both inside ``arr``).

    One hint per line whatever the element size: the step is the number of elements a
    line holds, and ``arr[hi]`` gets its own hint, since ``lo`` need not start a line.
    """
    for q in range(lo, hi, _line_elements(arr)):  # type: ignore[call-arg]
        host_prefetch(arr, q)  # type: ignore[call-arg]  # (typingctx is Numba's)
    host_prefetch(arr, hi)  # type: ignore[call-arg]
