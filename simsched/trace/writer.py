"""ChunkWriter: the output side of :class:`~simsched.trace.TraceBuilder`.

Writing a trace is two jobs that share little more than a count of references: keeping the
DAG that a program's serial execution draws (frames, strands, edges, iterations: the
builder, :mod:`simsched.trace.builder`), and streaming the program's references into a file
in the layout of :mod:`simsched.trace.format` (this module).  Kept apart, each can be read
and changed without the other: the rules of well-formedness do not interleave with file
offsets, and the order in which chunks, sections and the header reach the file (which the
digest depends on) is decided in one place.

The builder holds one :class:`ChunkWriter` (composition, not a mixin: the writer knows
nothing of frames or strands).  :meth:`~simsched.trace.TraceBuilder.ref` runs once per
reference, so it writes into the writer's chunk buffer in place (the arrays and the
``fill`` counter are public attributes here) and calls :meth:`ChunkWriter.flush` only when
the buffer is full; every other use goes through methods.

References are buffered into chunks of ``chunk_refs``; a full chunk is encoded and
zstd-compressed in a background thread (zstandard releases the GIL) while the program goes
on generating, and at most two chunks are in flight.  The file is written under a
temporary name (:func:`simsched.files.atomic_output`) and renamed into place only when the
header is written, so a reader never sees a partial trace.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from simsched.errors import OutputError
from simsched.files import atomic_output, cannot_write
from simsched.trace import format as fmt

#: chunks handed to the compression thread but not yet written that
#: :meth:`ChunkWriter.flush` leaves in flight: the thread encodes them while the program
#: fills the next buffer, and the memory they hold stays bounded
_IN_FLIGHT = 2


class _Aborted(Exception):
    """Raised into the output block to discard an unfinished trace."""


class ChunkWriter:
    """The staged output file of one trace, its chunk buffer and its compression thread.

    Parameters
    ----------
    path
        The trace to write; a temporary file beside it is written and renamed into place
        by :meth:`finish` (removed by :meth:`abort`).
    chunk_refs
        References per chunk (already checked by the caller).
    progress
        Called as ``progress(references_written, None)`` after each chunk.

    Attributes
    ----------
    cap
        References per chunk.
    addr, sizew, gap, dep
        The chunk buffer: ``uint64`` addresses, ``uint8`` size and write bit (bit 7),
        ``uint32`` instruction gaps, ``bool`` dependence flags; entries ``0..fill-1`` hold
        the chunk being filled.
    fill
        References in the buffer.
    any_dep
        Whether a reference in the buffer is dependent (else the chunk keeps no column).

    Raises
    ------
    OSError
        The staging file cannot be created (nothing is left behind).
    """

    # Slots: the builder's ref() reads and writes these once per reference.
    __slots__ = (
        "cap",
        "addr",
        "sizew",
        "gap",
        "dep",
        "any_dep",
        "fill",
        "_flushed",
        "_cctx",
        "_output",
        "_staged",
        "_tmp",
        "_f",
        "_hash",
        "_pos",
        "_pool",
        "_pending",
        "_index",
        "_progress",
        "_path",
    )

    def __init__(
        self,
        path: str | os.PathLike,
        chunk_refs: int,
        progress: Callable[[int, int | None], None] | None = None,
    ):
        self._cctx = fmt.compressor()
        self._path = os.fspath(path)
        # The file is the staging file of simsched.files.atomic_output: renamed over the
        # user's path (or copied into a device) by finish(), removed by abort().
        self._output = atomic_output(path)
        self._staged = True
        self._tmp = self._output.__enter__()
        try:
            self._f = open(self._tmp, "wb")  # noqa: SIM115 - closed by finish() / abort()
        except OSError:
            self._discard()
            raise
        # The header goes last, when its counts, offsets and digest are known.
        try:
            self._put(b"\0" * fmt.HEADER_SIZE)
        except OutputError:
            with contextlib.suppress(OSError):
                self._f.close()
            self._discard()
            raise
        self._hash = hashlib.blake2b(digest_size=32)
        self._pos = fmt.HEADER_SIZE
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sst-compress")
        # (future of the encoded chunk, its first reference, its references), in file order
        self._pending: list[tuple[Future, int, int]] = []
        # one row of the index section per written chunk, as fmt.INDEX_DTYPE less its padding
        self._index: list[tuple[int, int, int, int, int, int, int]] = []
        self.cap = int(chunk_refs)
        self.addr = np.empty(self.cap, np.uint64)
        self.sizew = np.empty(self.cap, np.uint8)
        self.gap = np.empty(self.cap, np.uint32)
        self.dep = np.zeros(self.cap, np.bool_)
        self.any_dep = False
        self.fill = 0
        self._flushed = 0  # references handed to the compression thread, before the buffer
        self._progress = progress

    @property
    def n_refs(self) -> int:
        """References taken so far: handed on, and in the buffer."""
        return self._flushed + self.fill

    @property
    def n_chunks(self) -> int:
        """Chunks written to the file so far."""
        return len(self._index)

    def append(
        self, a: np.ndarray, sw: np.ndarray, g: np.ndarray, d: np.ndarray | None = None
    ) -> None:
        """Copy references into the chunk buffer, flushing it whenever it is full.

        Parameters
        ----------
        a
            ``uint64`` addresses.
        sw, g, d
            Sizes with the write bit, gaps and dependence flags: one per address, or 0-d
            (one value for all); ``d`` None: every reference is independent.
        """
        n = a.shape[0]
        scalar_sw = sw.ndim == 0
        scalar_g = g.ndim == 0
        if d is None:
            d = np.asarray(False)
        scalar_d = d.ndim == 0
        pos = 0
        while pos < n:
            if self.fill == self.cap:
                self.flush()
            k = min(n - pos, self.cap - self.fill)
            lo, hi = self.fill, self.fill + k
            self.addr[lo:hi] = a[pos : pos + k]
            self.sizew[lo:hi] = sw if scalar_sw else sw[pos : pos + k]
            self.gap[lo:hi] = g if scalar_g else g[pos : pos + k]
            self.dep[lo:hi] = d if scalar_d else d[pos : pos + k]
            if not self.any_dep and bool(d.any() if scalar_d else d[pos : pos + k].any()):
                self.any_dep = True
            self.fill = hi
            pos += k

    def _put(self, data: bytes) -> None:
        """Write ``data`` at the file's position; a failed write names the user's file (an
        OSError of a write names none: the command blamed standard output, or said only
        "file too large")."""
        try:
            self._f.write(data)
        except OSError as exc:
            raise cannot_write(self._path, exc) from None

    def _write(self, data: bytes) -> int:
        """Append ``data`` to the file and the digest; returns its offset."""
        off = self._pos
        self._put(data)
        self._hash.update(data)
        self._pos += len(data)
        return off

    def drain(self, keep: int) -> None:
        """Write compressed chunks, oldest first, until at most ``keep`` are in flight."""
        while len(self._pending) > keep:
            fut, first, n = self._pending.pop(0)
            frame, wa, wg, wd = fut.result()
            off = self._write(frame)
            self._index.append((off, len(frame), first, n, wa, wg, wd))

    def flush(self) -> None:
        """Hand the buffer, if not empty, to the compression thread as the next chunk."""
        n = self.fill
        if n == 0:
            return
        # Copies: the buffer is filled again while the thread encodes these.
        dep = self.dep[:n].copy() if self.any_dep else None
        args = (self.addr[:n].copy(), self.sizew[:n].copy(), self.gap[:n].copy(), dep)
        self.any_dep = False
        fut = self._pool.submit(fmt.encode_chunk, *args, self._cctx)
        self._pending.append((fut, self._flushed, n))
        self._flushed += n
        self.fill = 0
        self.drain(keep=_IN_FLIGHT)
        if self._progress is not None:
            self._progress(self._flushed, None)

    def finish(
        self,
        meta: fmt.TraceMeta,
        tables: dict[str, np.ndarray],
        counts: tuple[int, int, int, int, int, int],
    ) -> bytes:
        """Write the meta, tables and index sections and the header; rename into place.

        Called once every chunk is written (:meth:`flush`, then ``drain(keep=0)``).

        Parameters
        ----------
        meta
            The meta section; its ``gaps_exact``, ``stack`` and ``repeat`` set the
            header's flags.
        tables
            The strand, frame and edge tables (:func:`simsched.trace.format.encode_tables`).
        counts
            The header's counts, in its order.

        Returns
        -------
        bytes
            The digest of everything after the header, as the header holds it.
        """
        meta_off = self._write(fmt.encode_json(meta, self._cctx))
        meta_len = self._pos - meta_off
        tab_off = self._write(fmt.encode_tables(tables, self._cctx))
        tab_len = self._pos - tab_off
        index = np.array(
            [(o, ln, first, n, wa, wg, wd, 0) for (o, ln, first, n, wa, wg, wd) in self._index],
            dtype=fmt.INDEX_DTYPE,
        )
        idx_off = self._write(self._cctx.compress(index.tobytes()))
        idx_len = self._pos - idx_off
        digest = self._hash.digest()
        flags = fmt.FLAG_GAPS_EXACT if meta["gaps_exact"] else 0
        if "stack" in meta:
            flags |= fmt.FLAG_STACK
        if "repeat" in meta:
            flags |= fmt.FLAG_REPEAT
        header = fmt.pack_header(
            flags=flags,
            counts=counts,
            sections=(meta_off, meta_len, tab_off, tab_len, idx_off, idx_len),
            digest=digest,
        )
        self._f.seek(0)
        self._put(header)
        try:
            self._f.close()  # flushes what is buffered
        except OSError as exc:
            raise cannot_write(self._path, exc) from None
        self._pool.shutdown()
        self._staged = False
        self._output.__exit__(None, None, None)  # fsync, then rename into place
        return digest

    def abort(self) -> None:
        """Stop the compression thread and remove the staging file (safe to repeat)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        try:
            # closing flushes the buffer: on a full disk it fails again, and the file is
            # being thrown away, so the error that made us abort is the one to report
            with contextlib.suppress(OSError):
                self._f.close()
        finally:
            self._discard()

    def _discard(self) -> None:
        if self._staged:
            self._staged = False
            # Leaving the atomic_output block by an exception removes the staging file.
            self._output.__exit__(_Aborted, _Aborted(), None)
