"""Per-core stacks: the replay gives every core its own copy of the captured stack region.

A trace captured from one thread names that thread's stack region (``TraceHeader.stack``,
bytes ``lo .. hi-1``).  A Cilk runtime gives each worker a stack of its own, so the
replay does not let every core touch the serial run's stack lines: core ``c`` sees each
stack reference ``a`` at ``a + c * step``, the same offset in a region of its own.
``step`` is the region's size rounded up to a power of two, so every copy keeps the
serial addresses' offsets within lines, pages and cache sets, and core 0's copy *is* the
serial region (a one-core replay is unchanged).  The copies go above the serial stack
(below it when there is no room under ``2**ADDRESS_BITS``); a capture's data never lie
just above its stack on the platforms simsched captures on (docs/capture.md,
"Per-worker stacks").

``simsched memsim --core-of-strand rr`` moves the references of the strands it places on
other cores the same way (:meth:`StackLayout.moved`).  In the replay engine the remapping
is done as the core driver hands a core its next segment of references
(:class:`simsched.engine.cores.CoreDriver`): for a core other than 0 the segment is
copied from the shared decoded chunk into the core's private stretch of the slot arrays
by :func:`copy_segment`, stack references moved; the cache kernels never see the
difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from simsched.errors import ConfigError
from simsched.trace.format import ADDRESS_LIMIT


@dataclass(frozen=True)
class StackLayout:
    """Where each core's copy of a trace's stack region lies.

    Attributes
    ----------
    lo, hi
        The serial run's stack region (bytes ``lo .. hi-1``).
    step
        Signed distance between the copies of consecutive cores (a power of two at least
        ``hi - lo``, negative when the copies go below the region).
    """

    lo: int
    hi: int
    step: int

    def shift(self, core: int) -> int:
        """Distance from the serial region to core ``core``'s copy."""
        return core * self.step

    def moved(self, addr: np.ndarray, core: int) -> np.ndarray:
        """The addresses (uint64) as core ``core`` issues them: stack references moved to
        its copy (a new array; ``addr`` itself when nothing moves)."""
        if core == 0 or addr.shape[0] == 0:
            return addr
        a = addr.view(np.int64)
        return np.where((a >= self.lo) & (a < self.hi), a + self.shift(core), a).view(np.uint64)


@njit(cache=True, nogil=True)
def copy_segment(addr, size, write, gap, dep, r, i, pr, at, n, lo, hi, shift):  # pragma: no cover
    """Copy references ``i .. i+n-1`` of slot row ``r`` to positions ``at ..`` of row ``pr``,
    adding ``shift`` to the addresses in ``[lo, hi)`` (``addr``: the int64 view; addresses
    are below 2**48).  One call per segment: a core with short strands starts many."""
    for k in range(n):
        a = addr[r, i + k]
        if lo <= a < hi:
            a += shift
        addr[pr, at + k] = a
        size[pr, at + k] = size[r, i + k]
        write[pr, at + k] = write[r, i + k]
        gap[pr, at + k] = gap[r, i + k]
        dep[pr, at + k] = dep[r, i + k]


def stack_layout(stack: tuple[int, int] | None, cores: int) -> StackLayout | None:
    """The per-core stack copies of a trace with stack region ``stack`` on ``cores`` cores.

    Parameters
    ----------
    stack
        ``(lo, hi)`` from the trace header, or None (the trace names no stack: its
        references are replayed as captured).
    cores
        Cores of the machine.

    Returns
    -------
    StackLayout or None
        None when there is no stack region or only one core.

    Raises
    ------
    ConfigError
        The copies fit neither above nor below the region under ``2**ADDRESS_BITS``.
    """
    if stack is None or cores <= 1:
        return None
    lo, hi = stack
    step = 1 << max(int(hi - lo - 1).bit_length(), 12)
    if hi + (cores - 1) * step <= ADDRESS_LIMIT:
        return StackLayout(lo, hi, step)
    if lo - (cores - 1) * step >= 0:
        return StackLayout(lo, hi, -step)
    raise ConfigError(
        f"the trace's stack region {lo:#x}-{hi:#x} ({hi - lo} bytes) cannot be copied for {cores} "
        "cores inside the address space"
    )
