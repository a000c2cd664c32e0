"""Branch-expectation hints for the generated memory kernels.

Numba gives LLVM no branch probabilities, so LLVM weighs both sides of every ``if`` in
``_serve`` alike: the rare paths (a first-level miss, a prefetch, the end of a call, an
invalid reference) count as much as a first-level hit, and the register allocator
spilled the hit path's values to the stack to keep registers for them.  On
``opteron-8380-4x4`` a first-level hit cost about 32 ns of host time, 27 ns with these
hints.  :func:`likely` and :func:`unlikely` mark the few conditions whose outcome is
known (a hit at the first level is the common case of every program simsched replays;
the others are rare by construction): they emit LLVM's ``llvm.expect``, which only sets
the branch weights the optimiser lays out and allocates by.  They return their argument
unchanged, so the kernels' results are the same with or without them
(docs/performance.md, "Branch hints in the kernel").

Numba has no such function, hence these two small intrinsics, written as
:mod:`simsched.memory._hostcache` writes its prefetch hint.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_I1 = ir.IntType(1)


def _expect(typingctx, cond, expected: int):  # type: ignore[no-untyped-def]
    """Signature and code of ``llvm.expect.i1(cond, expected)`` for a boolean ``cond``."""
    if not isinstance(cond, types.Boolean):
        return None
    sig = types.boolean(cond)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        fnty = ir.FunctionType(_I1, [_I1, _I1])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.expect.i1")
        return builder.call(fn, [args[0], ir.Constant(_I1, expected)])

    return sig, codegen


@intrinsic
def likely(typingctx, cond):  # type: ignore[no-untyped-def]
    """``cond``, with the hint that it is almost always true.

    Parameters
    ----------
    cond
        A boolean.
    """
    return _expect(typingctx, cond, 1)


@intrinsic
def unlikely(typingctx, cond):  # type: ignore[no-untyped-def]
    """``cond``, with the hint that it is almost always false.

    Parameters
    ----------
    cond
        A boolean.
    """
    return _expect(typingctx, cond, 0)
