"""Reading traces: header and tables up front, references streamed chunk by chunk.

:func:`open_trace` checks the fixed header (magic, version, CRC), that every section lies
inside the file, that each section decompresses with a good checksum, and then the whole
structure the consumers rely on (:func:`simsched.trace.structure.check`: layout, tables,
frame tree, edges); anything wrong raises :class:`TraceFormatError` naming the file and the
place, so no engine, scheduler or profiler ever indexes a table with a bad value.  Every
decoded chunk passes the reference rule (:func:`simsched.trace.format.check_refs`).  The
content digest over every byte after the header is checked too, once per file version and
process (a few milliseconds per megabyte), so no command replays a file that changed after
it was written.  Only regular files are opened: a named pipe or device would block.

References are never loaded whole: :meth:`Trace.iter_chunks` decodes chunk after chunk (the
next chunk is read and decompressed in a background thread while the caller works on the
current one), and :meth:`Trace.refs` decodes only the chunks a range touches, keeping a few
recently decoded chunks in a small LRU cache for engines that revisit them.

A trace that stores a repeated part once (:mod:`simsched.trace.repeat`) is presented as the
whole program: its tables expanded when it is opened, its chunks those of the program
written out in full, each copied together from the stored chunks it covers.  The stored
chunks of the repeated part are kept decoded once decoded, up to :data:`KEEP_BYTES` (the
environment variable ``SIMSCHED_KEEP_MB`` sets another limit) and half of the memory the
host has available when the trace is opened: the part is read again
for every copy, and copying a decoded chunk costs about a tenth of decompressing and
decoding it again (1.1 against 10.6 ms for a million references of the published heat).
What is kept changes only the time a replay takes, never what it reads.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict, deque
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.errors import ConfigError, TraceFormatError, shown
from simsched.files import check_path, file_kind
from simsched.host import available_bytes
from simsched.params import check_int
from simsched.trace import format as fmt
from simsched.trace import repeat, structure
from simsched.trace.format import RefChunk, TraceHeader
from simsched.trace.repeat import Repeat

#: stored chunks of a trace with a repeated part kept decoded (each up to about 14 MB)
_STORED_CACHE = 3
#: Bytes of a repeated part's decoded stored chunks a reader keeps by default, beyond the
#: few of :data:`_STORED_CACHE` (7 bytes a reference for the stencils, :func:`_compact`).
#: The published AMD stencils' parts: SOR, heat and 9P fit, 6P (3.7 GB) in part and
#: 25P (12 GB) a small part; the rest is decoded again per copy.
KEEP_BYTES = 1536 << 20
#: Environment variable that sets another limit, in MiB (0: keep none beyond the few).
KEEP_ENV = "SIMSCHED_KEEP_MB"


def keep_bytes() -> int:
    """The bytes of decoded stored chunks a reader keeps: ``SIMSCHED_KEEP_MB`` MiB when
    the variable is set, else :data:`KEEP_BYTES`.

    Raises
    ------
    ConfigError
        The variable is not a whole number of MiB from 0 to 2^40.
    """
    raw = os.environ.get(KEEP_ENV)
    if raw is None or raw.strip() == "":
        return KEEP_BYTES
    try:
        mb = int(raw.strip())
    except ValueError:
        mb = -1
    if not 0 <= mb <= 1 << 40:
        raise ConfigError(
            f"{KEEP_ENV}={raw!r}: not a whole number of MiB from 0 to {1 << 40} (the decoded "
            f"references a trace reader keeps; unset it for {KEEP_BYTES >> 20})"
        )
    return mb << 20


_GAP_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32}


#: a kept chunk whose addresses span less than this keeps them as 4-byte offsets
_OFFSET_SPAN = 1 << 32


@dataclass(frozen=True)
class _Kept(RefChunk):
    """A stored chunk kept decoded (:func:`_compact`): ``addr`` may hold uint32 offsets
    from ``base``, the chunk's lowest address."""

    base: int = 0


def _kept_bytes(row: np.void, wide: bool) -> int:
    """Bytes a stored chunk takes kept decoded (:func:`_compact`); ``wide``: its
    addresses span 4 GiB or more, so they are kept whole."""
    return int(row["n"]) * ((8 if wide else 4) + 1 + 1 + int(row["wg"]) + int(row["wd"]))


def _offset_base(c: RefChunk) -> int | None:
    """The address a chunk's addresses are kept as offsets from: its lowest, or None when
    they span 4 GiB or more (kept whole)."""
    if len(c) == 0:
        return 0
    lo = int(c.addr.min())
    return lo if int(c.addr.max()) - lo < _OFFSET_SPAN else None


def _compact(c: RefChunk, row: np.void, base: int | None) -> _Kept:
    """A decoded stored chunk in the least memory its index row allows: addresses as
    4-byte offsets from ``base`` (:func:`_offset_base`; None: kept whole, as a chunk
    spanning 4 GiB or more must be; a stencil's chunk spans a few hundred MB), gaps as
    wide as stored, no dependence column when the chunk has none.  Only
    :meth:`Trace._assemble` reads it, adding the base back while it copies (as fast as a
    plain copy), and never slices it (a slice would lose the base): 7 bytes a reference
    instead of 15 for the stencils."""
    gap = c.gap.astype(_GAP_DTYPES[int(row["wg"])])
    dep = c.dep if int(row["wd"]) else np.broadcast_to(np.False_, c.dep.shape)
    if base is None:
        return _Kept(c.start, c.addr, c.size, c.write, gap, dep)
    addr = np.empty(len(c), np.uint32)
    np.subtract(c.addr, np.uint64(base), out=addr, casting="unsafe")
    return _Kept(c.start, addr, c.size, c.write, gap, dep, base)


def _chunk_rows(n_refs: int, chunk_refs: int) -> np.ndarray:
    """Index rows of ``n_refs`` references in chunks of ``chunk_refs`` (the program's
    chunks of a trace with a repeated part: no file offset, no column widths)."""
    first = np.arange(0, n_refs, chunk_refs, dtype=np.int64)
    rows = np.zeros(first.shape[0], fmt.INDEX_DTYPE)
    rows["first"] = first
    rows["n"] = np.minimum(chunk_refs, n_refs - first)
    return rows


@dataclass(frozen=True)
class StrandTable:
    """Per-strand columns; strand ids are serial (1DF) order."""

    frame: np.ndarray
    ref_start: np.ndarray  # length n+1
    instr: np.ndarray
    tail: np.ndarray

    def __len__(self) -> int:
        return int(self.frame.shape[0])

    @property
    def n_refs(self) -> np.ndarray:
        """References of each strand."""
        return np.diff(self.ref_start)


@dataclass(frozen=True)
class FrameTable:
    """Per-frame columns (a frame is one instance of a spawned function; frame 0 is main)."""

    parent: np.ndarray
    spawn_index: np.ndarray
    branching: np.ndarray
    level: np.ndarray
    iteration: np.ndarray
    first_strand: np.ndarray
    last_strand: np.ndarray
    key_hash: np.ndarray

    def __len__(self) -> int:
        return int(self.parent.shape[0])

    def key(self, f: int) -> tuple[int, ...]:
        """Position key of frame ``f``: its spawn indices from the iteration root."""
        return fmt.position_key(self.parent, self.spawn_index, f)


@dataclass(frozen=True)
class EdgeTable:
    """DAG edges sorted by source; ``kind`` is EDGE_SPAWN, EDGE_CONT or EDGE_JOIN."""

    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray

    def __len__(self) -> int:
        return int(self.src.shape[0])


#: files whose content digest this process checked: (device, inode, size, mtime, digest)
_VERIFIED: set[tuple[int, int, int, int, bytes]] = set()
_VERIFIED_LOCK = threading.Lock()


def _file_kind(mode: int) -> str | None:
    """What a file that is not regular (and not a directory, reported on open) is."""
    return None if stat.S_ISDIR(mode) else file_kind(mode)


def _named(exc: OSError, name: str) -> OSError:
    """``exc`` with the trace's file name when it has none: a failed read names no file,
    and a message without one ("standard output: Input/output error") blamed another."""
    if exc.filename is None:
        exc.filename = name
    return exc


class Trace:
    """An open trace file.  Use :func:`open_trace`."""

    def __init__(self, path: str | os.PathLike, *, cache_chunks: int = 8):
        self.path = check_path(path, "trace")
        cache_chunks = check_int("cache_chunks", cache_chunks, 1)
        self._name = str(path)
        # A named pipe or a device would block open() or read() forever, or never end.
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            # a FileNotFoundError from os.stat, where run() said it in one line
            raise ConfigError(f"{self._name}: no such trace file") from None
        kind = _file_kind(mode)
        if kind is not None:
            raise TraceFormatError(f"{self._name}: is {kind}, not a trace (a regular file)")
        try:
            self._f = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        except IsADirectoryError:
            raise TraceFormatError(f"{self._name}: is a directory, not a trace") from None
        except PermissionError:
            raise ConfigError(f"{self._name}: permission denied") from None
        self._lock = threading.Lock()
        try:
            self._open(cache_chunks)
        except BaseException:
            self._f.close()
            raise

    def _read_at(self, off: int, n: int) -> bytes:
        if self._f.closed:
            raise _closed(self._name)  # "seek of closed file", from a chunk read
        with self._lock:
            try:
                self._f.seek(off)
                return self._f.read(n)
            except OSError as exc:
                raise _named(exc, self._name) from None

    def _section(self, name: str, off_len: tuple[int, int]) -> bytes:
        off, ln = off_len
        if not fmt.section_within(off_len, self._size):
            raise TraceFormatError(
                f"{self._name}: truncated or corrupt: the {name} section (bytes {off}-{off + ln}) "
                f"lies outside the file ({self._size} bytes)"
            )
        return self._read_at(off, ln)

    def _open(self, cache_chunks: int) -> None:
        st = os.fstat(self._f.fileno())
        if _file_kind(st.st_mode) is not None:  # replaced since the check in __init__
            raise TraceFormatError(f"{self._name}: is not a regular file")
        self._size = st.st_size
        h = fmt.unpack_header(self._read_at(0, fmt.HEADER_SIZE), self._name)
        self._h = h
        meta = fmt.decode_json(self._section("meta", h["meta"]), f"{self._name}: meta section")
        tabs = fmt.decode_tables(
            self._section("tables", h["tables"]), f"{self._name}: tables section", h["version"]
        )
        raw_index = fmt.decompress(
            self._section("index", h["index"]), f"{self._name}: index section"
        )
        if len(raw_index) % fmt.INDEX_DTYPE.itemsize:
            raise TraceFormatError(f"{self._name}: index section has a partial row")
        stored_index = np.frombuffer(raw_index, dtype=fmt.INDEX_DTYPE)
        structure.check(self._name, h, meta, tabs, stored_index, self._size)
        self._verify_digest(st, h["digest"])
        # A repeated part is expanded here: every consumer sees the whole program.
        self._repeat, hw, tabs = structure.whole_program(self._name, h, meta, tabs)
        if self._repeat is not None:
            repeat.check_chunks(self._name, self._repeat, stored_index)
        self._stored_index = stored_index
        self._stored_first = stored_index["first"].astype(np.int64)
        self._stored_cache: OrderedDict[int, RefChunk] = OrderedDict()
        self._stored_busy: dict[int, threading.Event] = {}
        #: stored chunks of the repeated part kept decoded for the reader's life, and
        #: their bytes (at most ``self._keep``)
        self._kept: dict[int, _Kept] = {}
        self.kept_bytes = 0
        # a limit, not a reservation: never more than half of what the host has free now
        have = available_bytes()
        self._keep = keep_bytes() if have is None else min(keep_bytes(), have // 2)
        #: stored chunks decoded to assemble the program's chunks (a repeated part only)
        self.stored_decodes = 0
        if self._repeat is None:
            self.index = stored_index
            repeat_info = None
        else:
            self.index = _chunk_rows(hw["n_refs"], self._repeat.chunk_refs)
            repeat_info = self._repeat.describe(h)
        self.header = TraceHeader(
            version=int(h["version"]),
            backend=str(meta.get("backend", "")),
            program=str(meta.get("program", "")),
            args=tuple(meta.get("args", [])),
            gaps_exact=bool(h["flags"] & fmt.FLAG_GAPS_EXACT),
            line_size_hint=int(meta.get("line_size_hint", 64)),
            n_strands=hw["n_strands"],
            n_frames=hw["n_frames"],
            n_edges=hw["n_edges"],
            n_refs=hw["n_refs"],
            n_chunks=hw["n_chunks"],
            n_instructions=hw["n_instructions"],
            digest=h["digest"].hex(),
            params=dict(meta.get("params", {})),
            roi=bool(meta.get("roi", False)),
            stack=(int(meta["stack"][0]), int(meta["stack"][1])) if "stack" in meta else None,
            repeat=repeat_info,
        )
        self.strands = StrandTable(
            tabs["strand_frame"],
            tabs["strand_ref_start"],
            tabs["strand_instr"],
            tabs["strand_tail"],
        )
        self.frames = FrameTable(
            tabs["frame_parent"],
            tabs["frame_spawn_index"],
            tabs["frame_branching"],
            tabs["frame_level"],
            tabs["frame_iteration"],
            tabs["frame_first_strand"],
            tabs["frame_last_strand"],
            tabs["frame_key_hash"],
        )
        self.edges = EdgeTable(tabs["edge_src"], tabs["edge_dst"], tabs["edge_kind"])
        n = hw["n_strands"]
        counts = np.bincount(self.edges.src, minlength=n) if n else np.zeros(0, np.int64)
        self.succ_offsets = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=self.succ_offsets[1:])
        self.succ = self.edges.dst
        self.pred_count = (
            np.bincount(self.edges.dst, minlength=n).astype(np.int64)
            if n
            else np.zeros(0, np.int64)
        )
        self._chunk_first = self.index["first"].astype(np.int64)
        self._cache: OrderedDict[int, RefChunk] = OrderedDict()
        self._cache_max = max(1, cache_chunks)

    def _verify_digest(self, st: os.stat_result, digest: bytes) -> None:
        """The content digest, once per file version and process (docs/trace-format.md).

        One BLAKE2b pass over the file (the 2.5 MB mergesort sample of traces/samples: 4.7 ms
        of CPU time to open without it, 9.4 ms with it); a file already verified (same
        device, inode, size and modification time) is not read again.
        """
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, digest)
        if key in _VERIFIED:
            return
        h = hashlib.blake2b(digest_size=32)
        off = fmt.HEADER_SIZE
        while off < self._size:
            b = self._read_at(off, min(1 << 22, self._size - off))
            if not b:
                break
            h.update(b)
            off += len(b)
        if h.digest() != digest:
            raise TraceFormatError(
                f"{self._name}: content digest mismatch (file changed after it was written)"
            )
        with _VERIFIED_LOCK:
            if len(_VERIFIED) > 1024:
                _VERIFIED.clear()
            _VERIFIED.add(key)

    # -- references --------------------------------------------------------------------
    def load_chunk(self, k: int, out: tuple[np.ndarray, ...] | None = None) -> RefChunk:
        """Read, check and decode chunk ``k`` without the cache (safe from any thread).

        ``out``: five arrays (uint64, uint8, bool, uint32, bool) of at least the chunk's length
        to decode into (see :func:`simsched.trace.format.decode_chunk`).

        Raises
        ------
        ConfigError
            ``k`` is not the index of one of the trace's chunks.
        """
        return self._load_chunk(self._chunk_index(k), out)

    def _chunk_index(self, k: Any) -> int:
        """``k`` as the index of one of the trace's chunks, else a :class:`ConfigError`:
        -1 read the last chunk, and an index past the end failed with numpy's IndexError."""
        n = int(self.index.shape[0])
        if type(k) is int and 0 <= k < n:
            return k
        if not n:
            raise ConfigError(f"k={shown(k)}: the trace has no chunks")
        return check_int("k", k, 0, n - 1)

    def _load_chunk(self, k: int, out: tuple[np.ndarray, ...] | None = None) -> RefChunk:
        if self._repeat is None:
            return self._decode_stored(k, out)
        return self._assemble(k, out)

    def _decode_stored(self, k: int, out: tuple[np.ndarray, ...] | None = None) -> RefChunk:
        """Stored chunk ``k`` (the file's own chunk, whatever the program's chunks are)."""
        row = self._stored_index[k]
        frame = self._read_at(int(row["offset"]), int(row["length"]))
        if len(frame) != int(row["length"]):
            raise TraceFormatError(f"{self._name}: chunk {k} is truncated")
        where = f"{self._name}: chunk {k} at byte {int(row['offset'])}"
        return fmt.decode_chunk(frame, row, where, out)

    def _stored_chunk(self, k: int) -> RefChunk:
        """Stored chunk ``k`` through a small cache shared by every thread: the program's
        consecutive chunks mostly come from the same stored ones.

        A chunk already being decoded by another thread is waited for, not decoded again:
        the two prefetch threads assemble neighbouring program chunks, which straddle the
        same stored chunk whenever the repeated part is not a whole number of chunks, and
        without this both decoded it (1.64 stored decodes per program chunk on the
        published heat, where one suffices).
        """
        while True:
            with self._lock:
                held = self._kept.get(k)
                if held is not None:
                    return held
                cached = self._stored_cache.get(k)
                if cached is not None:
                    self._stored_cache.move_to_end(k)
                    return cached
                busy = self._stored_busy.get(k)
                if busy is None:
                    busy = self._stored_busy[k] = threading.Event()
                    break
            # Another thread decodes it; if that thread failed, the loop decodes it here
            # and raises the same error.
            busy.wait()
        try:
            c = self._decode_stored(k)
            row = self._stored_index[k]
            # Compacted outside the lock (it copies the columns), kept if it still fits:
            # for good, as a cyclic walk over a part larger than any LRU would push every
            # chunk out before its next use.  The span is looked at only when even the
            # narrow form would fit.
            fits = self._in_body(k) and self.kept_bytes + _kept_bytes(row, False) <= self._keep
            base = _offset_base(c) if fits else 0
            nbytes = _kept_bytes(row, base is None)
            fits = fits and self.kept_bytes + nbytes <= self._keep
            kept = _compact(c, row, base) if fits else None
            with self._lock:
                self.stored_decodes += 1
                if kept is not None and self.kept_bytes + nbytes <= self._keep:
                    c = self._kept[k] = kept
                    self.kept_bytes += nbytes
                else:
                    self._stored_cache[k] = c
                    if len(self._stored_cache) > _STORED_CACHE:
                        self._stored_cache.popitem(last=False)
        finally:
            with self._lock:
                del self._stored_busy[k]
            busy.set()
        return c

    def _in_body(self, k: int) -> bool:
        """Whether stored chunk ``k`` holds references of the repeated part."""
        spec = self._repeat
        if spec is None:
            return False
        first = int(self._stored_first[k])
        return first < spec.r1 and first + int(self._stored_index[k]["n"]) > spec.r0

    def _assemble(self, k: int, out: tuple[np.ndarray, ...] | None = None) -> RefChunk:
        """Chunk ``k`` of a trace with a repeated part, copied from the stored references."""
        spec = self._repeat
        assert spec is not None
        first, n = int(self.index[k]["first"]), int(self.index[k]["n"])
        if out is None:
            cols = (np.empty(n, np.uint64), np.empty(n, np.uint8), np.empty(n, np.bool_))
            addr, size, write, gap, dep = (*cols, np.empty(n, np.uint32), np.empty(n, np.bool_))
        else:
            addr, size, write, gap, dep = (x[:n] for x in out)
        pos = 0
        for at, length in repeat.pieces(spec, first, first + n):
            while length:
                j = int(np.searchsorted(self._stored_first, at, side="right")) - 1
                c = self._stored_chunk(j)
                lo = at - c.start
                m = min(length, len(c) - lo)
                if c.addr.dtype == np.uint32:
                    assert isinstance(c, _Kept)
                    np.add(c.addr[lo : lo + m], np.uint64(c.base), out=addr[pos : pos + m])
                else:
                    addr[pos : pos + m] = c.addr[lo : lo + m]
                size[pos : pos + m] = c.size[lo : lo + m]
                write[pos : pos + m] = c.write[lo : lo + m]
                gap[pos : pos + m] = c.gap[lo : lo + m]
                dep[pos : pos + m] = c.dep[lo : lo + m]
                pos, at, length = pos + m, at + m, length - m
        return RefChunk(first, addr, size, write, gap, dep)

    @property
    def repeat(self) -> Repeat | None:
        """The repeated part the file stores once (None: the file holds the whole program)."""
        return self._repeat

    def stored_chunks(self) -> Iterator[RefChunk]:
        """The references as the file stores them, chunk by chunk: a repeated part once
        (numbered as stored: ``start`` is the position in the file's references).  For
        summaries that need every distinct reference, not every executed one."""
        for k in range(int(self._stored_index.shape[0])):
            yield self._decode_stored(k)

    def chunk(self, k: int) -> RefChunk:
        """Decoded chunk ``k`` (cached).

        Raises
        ------
        ConfigError
            ``k`` is not the index of one of the trace's chunks (0 to ``len(index) - 1``).
        """
        k = self._chunk_index(k)
        c = self._cache.get(k)
        if c is not None:
            self._cache.move_to_end(k)
            return c
        c = self._load_chunk(k)
        self._cache[k] = c
        if len(self._cache) > self._cache_max:
            self._cache.popitem(last=False)
        return c

    def iter_chunks(
        self, prefetch: bool = True, *, first: int = 0
    ) -> Generator[RefChunk, None, None]:
        """Stream every reference, one decoded chunk at a time, in order.

        With ``prefetch`` the next chunks are read, decompressed and decoded by two
        background threads (all three steps release the GIL) while the caller works.
        ``first``: the chunk to start with.
        """
        n = int(self.index.shape[0])
        if (
            isinstance(first, bool)
            or not isinstance(first, int | np.integer)
            or not 0 <= first <= n
        ):
            # -1 yielded the last chunk, then every chunk from the first again
            raise ConfigError(f"first={shown(first)}: expected a chunk index from 0 to {n}")
        if not prefetch or n - first < 2:
            for k in range(first, n):
                yield self._load_chunk(k)
            return
        depth = 3
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="sst-read") as pool:
            futs = deque(
                pool.submit(self._load_chunk, k) for k in range(first, min(first + depth, n))
            )
            nxt = first + len(futs)
            try:
                while futs:
                    cur = futs.popleft().result()
                    if nxt < n:
                        futs.append(pool.submit(self._load_chunk, nxt))
                        nxt += 1
                    yield cur
            finally:
                for f in futs:
                    f.cancel()

    def refs(self, start: int, stop: int) -> RefChunk:
        """References ``[start, stop)`` as one :class:`RefChunk`.

        Raises
        ------
        ConfigError
            ``start`` or ``stop`` is not an integer, or not ``0 <= start <= stop <= n_refs``.
        """
        nrefs = self.header.n_refs
        if not (type(start) is int and type(stop) is int and 0 <= start <= stop <= nrefs):
            # the Python API's one-line error naming the argument, not a bare IndexError
            start = check_int("start", start, 0, nrefs)
            stop = check_int("stop", stop, 0, nrefs)
            if stop < start:
                raise ConfigError(
                    f"stop={stop}: below start={start} (refs(start, stop) reads references "
                    "start to stop - 1)"
                )
        if start == stop:
            return RefChunk(
                start,
                np.empty(0, np.uint64),
                np.empty(0, np.uint8),
                np.empty(0, np.bool_),
                np.empty(0, np.uint32),
                np.empty(0, np.bool_),
            )
        k0 = int(np.searchsorted(self._chunk_first, start, side="right")) - 1
        k1 = int(np.searchsorted(self._chunk_first, stop - 1, side="right")) - 1
        parts = []
        for k in range(k0, k1 + 1):
            c = self.chunk(k)
            lo = max(start, c.start) - c.start
            hi = min(stop, c.start + len(c)) - c.start
            parts.append(c.slice(lo, hi))
        out = RefChunk.concat(parts)
        return out

    def strand_refs(self, s: int) -> RefChunk:
        """The references of strand ``s``."""
        n = self.header.n_strands
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or not 0 <= s < n:
            # numpy's IndexError or TypeError, or a negative strand read from the end
            raise ConfigError(f"strand {s!r}: the trace has strands 0 to {n - 1}")
        return self.refs(int(self.strands.ref_start[s]), int(self.strands.ref_start[s + 1]))

    def chunk_of_ref(self, i: int) -> int:
        """Index of the chunk that holds reference ``i``."""
        if not 0 <= i < self.header.n_refs:
            # -5 gave -1, and any index past the end the last chunk
            raise ConfigError(f"reference {i}: the trace has {self.header.n_refs} references")
        return int(np.searchsorted(self._chunk_first, i, side="right")) - 1

    # -- life cycle --------------------------------------------------------------------
    def read_all_bytes_digest(self) -> str:
        """BLAKE2b-256 of every byte after the fixed header (what the header's digest covers)."""
        h = hashlib.blake2b(digest_size=32)
        with open(self.path, "rb") as f:
            f.seek(fmt.HEADER_SIZE)
            while True:
                try:
                    b = f.read(1 << 22)
                except OSError as exc:
                    raise _named(exc, self._name) from None
                if not b:
                    break
                h.update(b)
        return h.hexdigest()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (a closed trace reads nothing)."""
        return self._f.closed

    def close(self) -> None:
        """Close the file."""
        self._f.close()
        self._cache.clear()
        self._stored_cache.clear()
        self._kept.clear()
        self.kept_bytes = 0

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        h = self.header
        return (
            f"<Trace {self._name}: {h.program!r} {h.n_strands} strands, {h.n_frames} frames, "
            f"{h.n_refs} refs>"
        )


def _closed(path: str | os.PathLike) -> ConfigError:
    """The error of a read from a closed :class:`Trace` (it was "seek of closed file")."""
    return ConfigError(f"{path}: this Trace is closed; open it again (open_trace)")


def open_trace(path: str | os.PathLike, *, cache_chunks: int = 8) -> Trace:
    """Open a trace file, checking its header, sections and tables.

    Parameters
    ----------
    path
        The ``.sst`` file.
    cache_chunks
        Decoded chunks kept for :meth:`Trace.refs` (each up to about 14 MB).

    Returns
    -------
    Trace

    Raises
    ------
    TraceFormatError
        The file is not a trace, is of another version, truncated, corrupt, or its tables
        do not form a well-formed fork/join DAG (see :mod:`simsched.trace.structure`).
    FileNotFoundError
        The file does not exist.
    """
    return Trace(path, cache_chunks=cache_chunks)


@contextmanager
def opened_trace(trace: Trace | str | os.PathLike) -> Iterator[Trace]:
    """The open trace of ``trace`` (:func:`as_trace`) for a ``with`` block, closed after it
    only when this call opened it: one place for the open-or-use-and-close of every
    function that takes either an open :class:`Trace` or the path of one."""
    t, owned = as_trace(trace)
    try:
        yield t
    finally:
        if owned:
            t.close()


def as_trace(trace: Trace | str | os.PathLike, cache_chunks: int = 8) -> tuple[Trace, bool]:
    """An open trace, and whether this call opened it (then the caller closes it).

    For functions that take either an open :class:`Trace` or the path of one
    (``cache_chunks``: as :func:`open_trace` takes it, for a path).

    Raises
    ------
    ConfigError
        ``trace`` is neither a path nor a :class:`Trace`, or names no file.
    TraceFormatError
        ``trace`` is closed, or its file is not a trace (:func:`open_trace`).
    """
    if isinstance(trace, Trace):
        if trace.closed:
            raise _closed(trace.path)  # before any work, not at its first chunk read
        return trace, False
    if not isinstance(trace, str | os.PathLike):
        # check_path's "expected a path" hid that an open Trace is taken too
        raise ConfigError(f"trace={shown(trace)}: expected a path or an open Trace")
    return open_trace(trace, cache_chunks=cache_chunks), True


#: an alias matching the public API name of docs/architecture.md §4.1
load_trace = open_trace
