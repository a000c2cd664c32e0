"""The references of a :class:`~simsched.trace.builder.TraceBuilder`'s current strand:
:meth:`~simsched.trace.builder.TraceBuilder.ref`, ``refs``, ``refs_checked`` and
``instr``, and the region of interest that decides whether they are kept.

Apart from the builder's DAG rules because a reference changes no frame, strand or edge:
it is checked (address, size, gap, as a reader would name it) and appended to the chunk
buffer of the builder's :class:`~simsched.trace.writer.ChunkWriter`, the one hot path of a
capture.  The one seam on that path is :meth:`_References.ref`, which writes into the
writer's buffer in place rather than through a call per reference.
:class:`_References` is a mixin of :class:`~simsched.trace.builder.TraceBuilder` and holds
no state of its own: the builder's ``__init__`` makes every field, and the class body only
declares those used here, for the type checker.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from simsched.errors import ConfigError, TraceBuildError
from simsched.params import check_flag
from simsched.trace import format as fmt
from simsched.trace.builder_checks import flags, per_reference
from simsched.trace.writer import ChunkWriter


class _References:
    """References, instructions and the region of interest of a :class:`TraceBuilder`."""

    # TraceBuilder's fields used here (made by its __init__, which describes them)
    path: Path
    _w: ChunkWriter
    _roi_mode: bool
    _in_roi: bool
    _pending_gap: int
    _cur_instr: int

    if TYPE_CHECKING:  # for the type checker only: TraceBuilder's

        def _check_open(self) -> None: ...

    def roi_begin(self) -> None:
        """Start keeping references (region of interest)."""
        self._check_open()
        if not self._roi_mode:
            raise TraceBuildError(f"{self.path}: roi_begin() on a builder made without roi=True")
        self._in_roi = True

    def roi_end(self) -> None:
        """Stop keeping references."""
        self._check_open()
        if not self._roi_mode:
            raise TraceBuildError(f"{self.path}: roi_end() on a builder made without roi=True")
        self._in_roi = False

    # -- references --------------------------------------------------------------------
    def _where(self, i: int) -> str:
        """Name the ``i``-th reference of the current call by chunk and index, as a reader would."""
        cap = self._w.cap
        k, j = divmod(self._w.n_refs + i, cap)
        return f"{self.path}: chunk {k}, reference {j} (reference {k * cap + j} of the trace)"

    def _integer(self, what: str, v: Any) -> int:
        try:
            if isinstance(v, bool | np.bool_):  # instr(True) counted one instruction
                raise TypeError
            return operator.index(v)
        except TypeError:
            raise TraceBuildError(f"{self.path}: {what} {v!r} is not an integer") from None

    def _closed_or_outside_roi(self) -> bool:
        """Whether references are dropped (outside the ROI); raise once the builder is closed.

        ``close`` and ``abort`` leave the ROI, so an open builder in the ROI pays nothing.
        """
        self._check_open()
        return True

    def instr(self, n: int) -> None:
        """Account ``n`` non-memory instructions in the current strand.

        Raises
        ------
        TraceBuildError
            ``n`` is not an integer or is negative.
        ConfigError
            ``n`` is more than :data:`~simsched.trace.format.MAX_INSTRUCTIONS` (2^50), the
            instructions a whole trace may have (a trace over that limit in all is refused
            by :meth:`~simsched.trace.builder.TraceBuilder.close`).
        """
        self._check_open()
        if type(n) is not int:
            n = self._integer("instruction count", n)
        if n < 0:
            raise TraceBuildError(f"{self.path}: negative instruction count {n}")
        if n > fmt.MAX_INSTRUCTIONS:
            # more than a whole trace may hold: refused now, not by close() at the end
            raise ConfigError(f"n={n}: more than the 2^50 instructions a trace may have")
        if self._in_roi:
            self._pending_gap += n

    def ref(self, addr: int, size: int, is_write: bool, gap: int = 0, dep: bool = False) -> None:
        """Record one reference of ``size`` bytes at ``addr``, after ``gap`` other instructions.

        ``dep``: the reference's address depends on an earlier load (a pointer chase), so
        an out-of-order core cannot issue it before the loads in flight complete
        (docs/machine-model.md §6.1).

        Raises
        ------
        TraceFormatError
            The reference breaks the rule of :func:`simsched.trace.format.check_refs`.
        TraceBuildError
            The address, size or gap is not an integer.
        ConfigError
            ``is_write`` or ``dep`` is not True or False (a Python or numpy bool): ``"no"``
            was taken by its truth and recorded a write.
        """
        if is_write is not True and is_write is not False:
            is_write = check_flag(is_write, "is_write")
        if dep is not False and dep is not True:
            dep = check_flag(dep, "dep")
        if not self._in_roi and self._closed_or_outside_roi():
            return
        if type(addr) is not int:  # a float was truncated, a string failed in a comparison
            addr = self._integer("reference address", addr)
        if type(size) is not int:
            size = self._integer("reference size", size)
        fmt.check_ref(addr, size, self._where)
        if type(gap) is not int:
            gap = self._integer("instruction gap", gap)
        if gap < 0:
            raise TraceBuildError(f"{self.path}: negative instruction gap {gap}")
        g = gap + self._pending_gap
        self._pending_gap = 0
        if g >= 1 << 32:
            raise TraceBuildError(
                f"{self.path}: instruction gap {g} (instr() counts since the last reference "
                "included) does not fit 32 bits"
            )
        # Into the writer's buffer in place: a call per reference would cost more than the
        # rest of this function's bookkeeping.
        w = self._w
        k = w.fill
        if k == w.cap:
            w.flush()
            k = 0  # flush() empties the buffer
        w.addr[k] = addr
        w.sizew[k] = size | (0x80 if is_write else 0)
        w.gap[k] = g
        w.dep[k] = dep
        if dep:  # a test is cheaper than a call of bool() on every reference
            w.any_dep = True
        w.fill = k + 1
        self._cur_instr += g + 1

    def refs(
        self,
        addrs: ArrayLike,
        sizes: ArrayLike,
        writes: ArrayLike,
        gaps: ArrayLike = 0,
        deps: ArrayLike = False,
    ) -> None:
        """Record references in bulk; each argument is an array or a scalar (broadcast).

        ``deps`` marks references whose address depends on an earlier load (see
        :meth:`ref`); references are independent by default.

        Scalar sizes, write flags and gaps are written as scalars, so a call costs little
        more than copying the addresses.

        Raises
        ------
        TraceFormatError
            A reference breaks the rule of :func:`simsched.trace.format.check_refs`; the
            message names the chunk and index it would have had.
        TraceBuildError
            Addresses or sizes that are not integers, a negative gap, or a gap that does
            not fit 32 bits.
        ConfigError
            Addresses that are not one value or a 1-D array, another argument that is
            neither one value nor one value per address, or ``writes`` or ``deps`` that
            are not booleans (True, False or an array of them: ``"no"`` was taken by its
            truth, and 2 as a write).
        """
        if not self._in_roi and self._closed_or_outside_roi():
            return
        a = np.asarray(addrs)
        if a.ndim == 0:
            a = a.reshape(1)
        if a.ndim != 1:
            # the reference rule's kernel failed on it with a numba typing error
            raise ConfigError(
                f"addrs: an array of shape {a.shape}; expected one address or a 1-D array of them"
            )
        n = a.shape[0]
        if n == 0:
            return
        sz = per_reference("sizes", np.asarray(sizes), n)
        if a.dtype.kind not in "iu":
            self._integer_array("reference address", "reference addresses", a)
        if sz.dtype.kind not in "iu":
            self._integer_array("reference size", "reference sizes", sz)
        wr = per_reference("writes", flags("writes", writes), n)
        fmt.check_refs(a, sz, self._where)
        if a.dtype != np.uint64:
            a = a.astype(np.uint64)  # every address is below 2**48 now
        if sz.ndim == 0 and wr.ndim == 0:
            sw = np.asarray(int(sz) | (0x80 if bool(wr) else 0), np.uint8)  # 0-d: broadcast
        else:
            sw = np.broadcast_to(sz.astype(np.uint8) | (wr.astype(np.uint8) << 7), (n,))
        g = per_reference("gaps", np.asarray(gaps), n)
        if g.dtype.kind not in "iu":
            g = self._integer_gaps(g)
        if g.ndim == 0:
            gmin = gmax = int(g)
            gsum = gmin * n
        else:
            g = np.broadcast_to(g, (n,))
            gmin, gmax, gsum = int(g.min()), int(g.max()), int(g.sum())
        if gmin < 0:
            raise TraceBuildError(f"{self.path}: negative instruction gap")
        if self._pending_gap:
            g = np.array(np.broadcast_to(g, (n,)), dtype=np.int64)
            g[0] += self._pending_gap
            gmax = max(gmax, int(g[0]))
            gsum += self._pending_gap
            self._pending_gap = 0
        if gmax >= 1 << 32:
            raise TraceBuildError(f"{self.path}: instruction gap does not fit 32 bits")
        self._cur_instr += n + gsum
        d = per_reference("deps", flags("deps", deps), n)
        self._w.append(a, sw, g, d if d.ndim == 0 or d.any() else np.asarray(False))

    def refs_checked(self, addrs: np.ndarray, sizew: np.ndarray, gaps: np.ndarray) -> None:
        """Record references that already passed the reference rule, in chunk encoding.

        The importer's kernel (:mod:`simsched.trace._raw_kernels`) applies the rule of
        :func:`simsched.trace.format.check_refs` and the gap limit while it expands the raw
        records, so this skips both checks.

        Parameters
        ----------
        addrs
            ``uint64`` addresses.
        sizew
            ``uint8``: size in the low 7 bits, write flag in bit 7.
        gaps
            ``uint32`` instruction gaps (may be modified: the pending gap of :meth:`instr`
            is added to the first).
        """
        if not self._in_roi:
            return
        n = addrs.shape[0]
        if n == 0:
            return
        if self._pending_gap:
            g0 = int(gaps[0]) + self._pending_gap
            if g0 >= 1 << 32:
                raise TraceBuildError(f"{self.path}: instruction gap does not fit 32 bits")
            gaps[0] = g0
            self._pending_gap = 0
        self._cur_instr += n + int(gaps.sum(dtype=np.int64))
        self._w.append(addrs, sizew, gaps)

    def _integer_array(self, one: str, many: str, x: np.ndarray) -> None:
        """Refuse an array that does not hold integers (numpy would truncate floats and
        parse strings when converting it); Python integers in an object array pass."""
        if x.dtype.kind != "O":
            raise TraceBuildError(f"{self.path}: {many} of type {x.dtype} are not integers")
        for v in x.flat:
            self._integer(one, v)

    def _integer_gaps(self, g: np.ndarray) -> np.ndarray:
        """Gaps given as floats (whole and finite) or Python integers, as int64 or objects."""
        if g.dtype.kind == "f":
            bad = ~np.isfinite(g) | (g != np.floor(g))
            if np.any(bad):
                v = float(g.flat[int(np.flatnonzero(np.atleast_1d(bad))[0])])
                raise TraceBuildError(f"{self.path}: instruction gap {v!r} is not an integer")
            # clipped so that out-of-range values fail the 32-bit test below, not the cast
            return np.clip(g, -1, 1 << 32).astype(np.int64)
        if g.dtype.kind == "b":
            raise TraceBuildError(f"{self.path}: instruction gaps are booleans, not integers")
        if g.dtype.kind == "O":
            for v in g.flat:
                self._integer("instruction gap", v)
            return g
        raise TraceBuildError(f"{self.path}: instruction gaps of type {g.dtype} are not integers")
