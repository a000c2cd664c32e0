"""Compiling programs for capture (``simsched cc``) and capturing them (``simsched capture``).

A capture runs the program once, serially, under a backend that writes the raw stream
of ``capture/simsched_raw.h``, then imports the stream with
:func:`simsched.trace.import_raw` and validates the trace.

* ``gcc``: the program was built by :func:`compile_program` and records itself; the
  runtime compresses the stream with zstd and writes it to ``$SIMSCHED_RAW_OUT``.
* ``valgrind``: ``valgrind --tool=simsched`` runs an ordinary build of the program; the
  tool writes plain records into a FIFO that a thread of this process compresses
  (zstandard releases the GIL), so the stream never sits uncompressed on disk.
* ``pin``: ``$PIN_ROOT/pin -t simsched.so`` the same way (untested: no Pin kit here).

The raw stream lives in a temporary folder beside the output (kept with ``raw=``), so the
trace is written next to where it goes and a failed capture leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import mmap
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import zstandard

from simsched.capture import build
from simsched.capture.bbtable import write_block_table
from simsched.capture.cilk import CilkOptions
from simsched.capture.cilkcc import rewrite_command, stdin_source
from simsched.errors import CaptureError, ConfigError, shown, spelled
from simsched.files import atomic_output, check_not_input, check_path, told_as
from simsched.params import check_arguments, check_callable, check_flag, name_text
from simsched.trace.iterations import check_iterations_mode

if TYPE_CHECKING:
    from simsched.trace import TraceHeader

BACKENDS = build.BACKENDS
GCC_IDENT = b"simsched-gcc-runtime-v1"
# A function of capture/simsched_cilk.h, in the symbol table of a program whose cilk_for
# loops simsched cc rewrote (unless the program was stripped).
CILK_FOR_SYMBOL = b"__ss_cilk_for_next"
PIN_INSTALL = (
    "Pin is not packaged: download a Pin 3.x kit from Intel, unpack it and set PIN_ROOT "
    "to its folder"
)

# The block operations whose calls from the program become range records.
_WRAPPED = (
    "memcpy", "memmove", "memset", "__memcpy_chk", "__memmove_chk", "__memset_chk",
    "strlen", "strnlen", "strcmp", "strncmp", "memcmp", "strcpy", "strncpy", "strcat",
    "strchr", "memchr", "__strcpy_chk", "__strncpy_chk", "__strcat_chk",
    # capture/runtime/ss_exit.c: the stream's end, the sampler's timer, threads
    "_exit", "_Exit", "execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle",
    "fexecve", "pthread_create",
)  # fmt: skip
_NO_LINK = {"-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"}

# personality(2) flag that turns off address-space layout randomisation for the process
# and what it executes (<sys/personality.h>); 0xFFFFFFFF queries the current persona.
ADDR_NO_RANDOMIZE = 0x0040000
_PER_QUERY = 0xFFFFFFFF


def _no_aslr() -> None:
    """``preexec_fn``: run the child (and what it executes) without ASLR.

    Called in the forked child before ``exec``; a failing ``personality`` (a kernel
    or seccomp policy that forbids it) leaves the layout randomised rather than failing
    the capture, and :func:`aslr_disabled` lets the caller say so.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    cur = libc.personality(_PER_QUERY)
    if cur != -1:
        libc.personality(cur | ADDR_NO_RANDOMIZE)


def aslr_disabled() -> bool:
    """Return whether this system lets a process turn off its own ASLR.

    Returns
    -------
    bool
        True when a child started with :func:`_no_aslr` runs with ``ADDR_NO_RANDOMIZE``
        (checked by reading ``/proc/self/personality`` in such a child).
    """
    try:
        out = subprocess.run(
            ["cat", "/proc/self/personality"],
            preexec_fn=_no_aslr,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return bool(int(out.strip(), 16) & ADDR_NO_RANDOMIZE)
    except (OSError, ValueError, subprocess.CalledProcessError):
        return False


Progress = Callable[[str, int], None]
"""``progress(phase, value)``: phase ``"run"`` with raw bytes written so far, then
``"import"`` with raw records imported so far."""


@dataclass
class CaptureResult:
    """What a capture produced: the trace header plus figures of the run."""

    header: TraceHeader
    backend: str
    out: Path
    run_seconds: float
    import_seconds: float
    raw_bytes: int
    tool_stats: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: with ``iterations="auto"``, when the program marked none and none were found: why
    #: (:func:`simsched.trace.iterations.no_iterations_reason`); else None
    no_iterations: str | None = None


def cc_command(args: Sequence[str], backend: str = "gcc") -> list[str]:
    """Return the compiler command line ``simsched cc ARGS`` runs.

    Parameters
    ----------
    args
        The user's compiler arguments, as for gcc.
    backend
        ``"gcc"``: the gcc backend's instrumented build; ``"valgrind"`` or ``"pin"``: a
        plain build that only adds simsched's include folder.

    Returns
    -------
    list[str]
        For the gcc backend: gcc with the thread-sanitizer and trace-pc instrumentation,
        simsched's include folder (for ``simsched.h``), and, when linking, simsched's
        runtime in place of libtsan, ``--wrap`` of the block operations, ``_exit`` and
        ``exec*`` (with the runtime's library of the last ones' wrappers) and ``-lzstd``.
    """
    cc = build.compiler()
    src = build.source_dir()
    if backend != "gcc":
        return [cc, f"-I{src}", *args]
    cmd = [cc, f"-I{src}", "-fsanitize=thread", "-fsanitize-coverage=trace-pc", *args]
    if not _NO_LINK.intersection(args):
        rt, zstd = build.gcc_runtime()  # built on first use, only when linking
        cmd += [f"-B{rt}{os.sep}", f"-L{rt}"]
        cmd += ["-Wl," + ",".join(f"--wrap={f}" for f in _WRAPPED), f"-l{build.EXIT_LIB}"]
        if zstd:
            cmd.append("-lzstd")
    return cmd


def compile_program(
    args: Sequence[str], *, backend: str = "gcc", cilk: CilkOptions | None = None
) -> int:
    """Run ``simsched cc``: compile (and link) a program for a capture backend.

    C sources that use Cilk keywords are compiled as their serial elision with
    simsched's markers (:mod:`simsched.capture.cilkcc`); others are compiled as given.

    Parameters
    ----------
    args
        gcc arguments (sources, ``-O2``, ``-o``, ...).
    backend
        ``"gcc"`` (instrumented build) or ``"valgrind"``/``"pin"`` (plain build).
    cilk
        How ``cilk_for`` loops are split (default: as OpenCilk does).

    Returns
    -------
    int
        The compiler's exit status.

    Raises
    ------
    ConfigError
        ``args`` is not a list of strings (a lone string gave gcc its characters), or
        ``cilk`` is not a :class:`~simsched.capture.cilk.CilkOptions`.
    CaptureError
        No arguments, an unknown backend, or a Cilk construct that cannot be rewritten.
    """
    args = check_arguments(args, "args", "compiler arguments")
    if cilk is not None and not isinstance(cilk, CilkOptions):
        raise ConfigError(f"cilk={shown(cilk)}: expected a CilkOptions (or None)")
    if not args:
        raise CaptureError(
            "simsched cc: no compiler arguments (try: simsched cc -O2 prog.c -o prog)"
        )
    if backend not in BACKENDS:
        raise CaptureError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    cmd = cc_command(args, backend)
    # a C source on standard input is read here: the rewrite needs it, and the compiler
    # gets it back through a pipe when it is not rewritten
    data = None if stdin_source(cmd) is None else sys.stdin.buffer.read()
    with tempfile.TemporaryDirectory(prefix="simsched-cc-") as work:
        cmd = rewrite_command(cmd, cilk or CilkOptions(), Path(work), data)
        rc = subprocess.run(cmd, input=data).returncode
    if rc == 0 and backend == "gcc" and not _NO_LINK.intersection(args):
        out = output_of(args)
        if out.is_file():
            write_block_table(out)
    return rc


def output_of(args: Sequence[str]) -> Path:
    """Return the program a gcc command line links (``-o X``, ``-oX``, ``--output X``,
    ``--output=X``; default ``a.out``).

    Parameters
    ----------
    args
        gcc arguments.

    Returns
    -------
    Path
        The last output given, or ``a.out``.
    """
    out = None
    for i, a in enumerate(args):
        if a in ("-o", "--output") and i + 1 < len(args):
            out = args[i + 1]
        elif a.startswith("--output="):
            out = a.removeprefix("--output=")
        elif a.startswith("-o") and len(a) > 2 and not a.startswith("--"):
            out = a[2:]
    return Path(out or "a.out")


def _resolve_program(program: str) -> Path:
    p = Path(program)
    if os.sep not in program:
        found = shutil.which(program)
        if found is None and not p.exists():
            raise CaptureError(f"{program}: no such program (not a file, not on PATH)")
        p = Path(found) if found else p
    if p.is_dir():
        raise CaptureError(f"{program}: is a folder, not a program")
    if not p.is_file():
        raise CaptureError(f"{program}: no such program")
    if not os.access(p, os.X_OK):
        raise CaptureError(f"{program}: not executable")
    return p.absolute()  # "./prog" must not turn into a PATH lookup of "prog"


def _contains(path: Path, needle: bytes) -> bool:
    with open(path, "rb") as f:
        try:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return m.find(needle) >= 0
        except ValueError:  # empty file
            return False


def _has_gcc_runtime(path: Path) -> bool:
    return _contains(path, GCC_IDENT)


def _tail(path: Path, lines: int = 4) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


_STAT = re.compile(r"simsched: ([a-z ]+): (\d+)")  # a backend's figure of the run
_VG_PREFIX = re.compile(r"^==\d+== ?")
# The figure each backend writes when the program's run ends (and with it the stream):
# the gcc runtime's at exit, the valgrind tool's at its end (not in a forked child).
_END_FIGURE = {"gcc": "samples", "valgrind": "guest_instructions"}


def _backend_reason(log: Path, lines: int = 3) -> str:
    """What the backend's log says about a failed run, without its figures of the run.

    valgrind's own account of a fatal signal ("Process terminating with default action
    of signal 11 (SIGSEGV)", the address, the place) when there is one; otherwise the last
    lines that are not the figures (``simsched: references: N``), which say nothing
    about the failure, nor valgrind's banner.
    """
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    text = [_VG_PREFIX.sub("", t).strip() for t in text]
    if "Parent PID:" in " ".join(text):  # valgrind's banner ends with it
        text = text[next(i for i, t in enumerate(text) if t.startswith("Parent PID:")) + 1 :]
    text = [t for t in text if t and not _STAT.fullmatch(t)]
    for i, t in enumerate(text):
        if t.startswith("Process terminating"):
            return " | ".join(text[i : i + lines])
    return " | ".join(text[-lines:])


_RUNTIME_FAILURE = "simsched runtime: "  # how ss_rt.c's ss_die() starts its one line


def _runtime_failure(out_log: Path) -> str:
    """The gcc runtime's own failure message in the program's output (or ``""``)."""
    try:
        with open(out_log, "rb") as f:
            for line in f:
                if line.startswith(_RUNTIME_FAILURE.encode()):
                    return line.decode(errors="replace").strip()[len(_RUNTIME_FAILURE) :]
    except OSError:
        pass
    return ""


def _ended(returncode: int) -> str:
    """How the program ended, from a negative (signal) or positive return code."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = f"{signal.Signals(-returncode).name} (signal {-returncode})"
    except ValueError:
        name = f"signal {-returncode}"
    if -returncode == getattr(signal, "SIGXFSZ", -1):
        name += ": its stream passed the file size limit (ulimit -f)"
    return f"was killed by {name}"


#: Free bytes below which a capture that ended without its end figures is put down to a
#: full disk: the raw stream is written in blocks of at most a few hundred KB.
_FULL_BELOW = 1 << 20


def _no_space(folder: Path) -> str:
    """Why a capture's stream beside its output stopped: the file system of ``folder``
    (the output's, which holds the capture's working folder) is full, or ``""``.  The runtime's own message said so,
    but in a log on the same full disk."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return ""
    free = st.f_bavail * st.f_frsize
    if free >= _FULL_BELOW:
        return ""
    return (
        f"{folder}: no space left on the device ({free:,} bytes free): the capture's raw "
        "stream and logs are written beside its output; free some space or capture to "
        "another folder"
    )


class _FifoCompressor:
    """Compress what a backend writes into a FIFO to ``dest`` (zstd), in a thread."""

    def __init__(self, fifo: Path, dest: Path, name: str | os.PathLike) -> None:
        self.fifo = fifo
        self.dest = dest
        self.name = name  # the program: ``dest`` is a temporary file the user never named
        self.error: BaseException | None = None
        os.mkfifo(fifo)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with open(self.fifo, "rb") as src, open(self.dest, "wb") as dst:
                # with a content checksum, as the gcc runtime writes: a raw stream kept
                # with --raw whose bytes change on disk is refused, not misread
                cctx = zstandard.ZstdCompressor(level=1, write_checksum=True)
                cctx.copy_stream(src, dst, read_size=1 << 20)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self) -> None:
        """Wait for the end of the stream; unblock the reader if no writer ever came."""
        while self.thread.is_alive():
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                # No reader yet (ENXIO): the thread has not reached its open(), and a writer
                # opened and closed before it does would leave it waiting for good.  Or the
                # reader has just finished.  Either way, look again.
                self.thread.join(0.01)
                continue
            os.close(fd)  # a reader waiting for a writer now sees the end of the stream
            break
        self.thread.join()
        if self.error is not None:
            raise CaptureError(f"{self.name}: compressing the raw stream failed: {self.error}")


def _pin_tool() -> tuple[Path, Path]:
    root = os.environ.get("PIN_ROOT")
    if not root or not (Path(root) / "pin").exists():
        raise CaptureError(f"the pin backend needs Pin ($PIN_ROOT/pin): {PIN_INSTALL}")
    src = build.source_dir().parent / "pintools"
    if not (src / "simsched_pin.cpp").is_file():
        raise CaptureError(f"{src}: the Pin tool's sources are missing")
    out = build.cache_dir() / "pin"
    out.mkdir(parents=True, exist_ok=True)
    for f in ("simsched_pin.cpp", "makefile", "makefile.rules"):
        shutil.copy2(src / f, out / f)
    shutil.copy2(build.source_dir() / "simsched_raw.h", out / "simsched_raw.h")
    proc = subprocess.run(
        ["make", "-C", str(out), f"PIN_ROOT={root}", "obj-intel64/simsched_pin.so"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise CaptureError(f"building the Pin tool failed: {tail}")
    return Path(root) / "pin", out / "obj-intel64" / "simsched_pin.so"


def _run_backend(
    backend: str,
    prog: Path,
    args: Sequence[str],
    work: Path,
    progress: Progress | None,
    verbose: bool,
    aslr: bool = False,
) -> tuple[Path, dict[str, int]]:
    """Run the program under ``backend``; return the raw stream's path and tool figures."""
    raw = work / "raw.zst"
    env = dict(os.environ)
    fifo: _FifoCompressor | None = None
    log = work / "backend.log"
    if backend == "gcc":
        if not _has_gcc_runtime(prog):
            # (a plain gcc build, or one made with `simsched cc --backend valgrind`, which
            # rewrites Cilk keywords but links no runtime: "not built with simsched cc" was
            # false for the latter)
            raise CaptureError(
                f"{prog}: not built for the gcc backend (its runtime is missing: a plain "
                "build, or one made with `simsched cc --backend valgrind`); rebuild it with "
                f"`simsched cc ...` (no --backend), or capture this build with "
                f"{_backend('valgrind')}"
            )
        _, zstd = build.gcc_runtime()
        if not zstd:
            raw = work / "raw"  # runtime without compression: libzstd-dev was missing
        env["SIMSCHED_RAW_OUT"] = str(raw)
        env["SIMSCHED_STATS_OUT"] = str(log)  # the runtime's samples of uninstrumented code
        cmd = [str(prog), *args]
    elif backend == "valgrind":
        if _has_gcc_runtime(prog):
            # plain gcc is right only for a program marked with simsched.h: a Cilk
            # program needs the keyword rewriting, and was sent in a circle by the
            # "no markers" error of a plain build
            raise CaptureError(
                f"{prog}: built with `simsched cc` for the gcc backend (its runtime would "
                f"replace valgrind's); for {_backend('valgrind')} rebuild it with "
                "`simsched cc --backend valgrind ...` (a program marked with simsched.h "
                f"alone may also be built with plain gcc), or capture this build with "
                f"{_backend('gcc')}"
            )
        env["VALGRIND_LIB"] = str(build.valgrind_tool())
        fifo = _FifoCompressor(work / "raw.fifo", raw, prog)
        cmd = ["valgrind", "--tool=simsched", f"--raw-out={fifo.fifo}", f"--log-file={log}"]
        cmd += ["--", str(prog), *args]
    elif backend == "pin":
        pin, tool = _pin_tool()
        fifo = _FifoCompressor(work / "raw.fifo", raw, prog)
        cmd = [str(pin), "-t", str(tool), "-o", str(fifo.fifo), "--", str(prog), *args]
    else:
        raise CaptureError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")

    out_log = work / "program.out"
    with open(out_log, "wb") as so:
        sink = None if verbose else so
        try:
            proc = subprocess.Popen(
                cmd, env=env, stdout=sink, stderr=sink, preexec_fn=None if aslr else _no_aslr
            )
        except OSError as exc:
            if fifo:
                fifo.finish()
            raise CaptureError(f"{prog}: cannot run: {exc.strerror}") from None
        try:
            while True:
                try:
                    proc.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if progress is not None:
                    try:
                        progress("run", raw.stat().st_size)
                    except FileNotFoundError:
                        progress("run", 0)
        except BaseException:
            # Ctrl-C, SIGTERM (raised as an exception by the CLI) or a failing callback:
            # the program must not outlive the capture, writing into a folder being removed.
            proc.kill()
            proc.wait()
            if fifo:
                with contextlib.suppress(CaptureError):
                    fifo.finish()
            raise
    if fifo:
        fifo.finish()
    stats: dict[str, int] = {}
    if log.exists():
        for m in _STAT.finditer(log.read_text(errors="replace")):
            stats[m.group(1).replace(" ", "_")] = int(m.group(2))
    if proc.returncode != 0:
        # the program's own last words are labelled as such: "...backend: 6" read as a
        # reason of the backend's
        said = _tail(out_log)
        why = f" (its last output: {said})" if said else ""
        if not said:
            reason = _backend_reason(log)
            why = f": {reason}" if reason else ""
        raise CaptureError(f"{prog} {_ended(proc.returncode)} under the {backend} backend{why}")
    failed = _runtime_failure(out_log)
    if failed:  # the gcc runtime stopped recording (it cannot write its stream, ...)
        raise CaptureError(f"{prog}: the {backend} backend stopped recording: {failed}")
    if backend in _END_FIGURE and _END_FIGURE[backend] not in stats:
        full = _no_space(work.parent)
        if full:  # the stream, and the runtime's log saying so, were cut short by it
            raise CaptureError(full)
        # The backend writes its figures where it ends the stream; a process image that
        # ended without it was replaced (the stream is cut short, or empty).
        why = _tail(out_log)
        raise CaptureError(
            f"{prog} exited with status 0 under the {backend} backend, but the run it "
            "recorded never ended: did the program replace itself with exec*()? A capture "
            "cannot follow it into another program" + (f" ({why})" if why else "")
        )
    if not raw.exists() or raw.stat().st_size == 0:
        raise CaptureError(f"{prog}: the {backend} backend wrote no raw stream")
    return raw, stats


def count_markers(raw: str | os.PathLike) -> int:
    """Count the marker records of a raw stream other than the final END marker.

    Parameters
    ----------
    raw
        A raw capture stream (plain or zstd).

    Returns
    -------
    int
        Number of the program's markers (the backend's END and STACK markers left out).
    """
    from simsched.trace.raw import M_END, M_STACK, REC_MARKER, iter_raw_blocks

    n = 0
    for _, recs in iter_raw_blocks(raw):
        mine = (recs["kind"] == REC_MARKER) & (recs["c"] != M_END) & (recs["c"] != M_STACK)
        n += int(mine.sum())
    return n


def capture(
    program: str | os.PathLike,
    args: Sequence[str],
    out: str | os.PathLike,
    *,
    backend: str = "gcc",
    raw: str | os.PathLike | None = None,
    progress: Progress | None = None,
    verbose: bool = False,
    aslr: bool = False,
    iterations: str = "auto",
) -> CaptureResult:
    """Capture one run of a program into a validated trace.

    Parameters
    ----------
    program
        The executable (a path, or a name on ``PATH``).
    args
        Its arguments: a list of strings (or paths), passed as they are.  A number is
        refused rather than turned into text, as the command line has only text to give.
    out
        The trace to write (``.sst``); written only when the capture succeeds, like
        ``raw``.  Neither may be the program, its block table or the other.
    backend
        ``"gcc"`` (the program was built with ``simsched cc``), ``"valgrind"`` (any
        build that includes ``simsched.h``) or ``"pin"``.
    raw
        If given, keep the (zstd-compressed) raw stream at this path.
    progress
        Optional ``progress(phase, value)`` callback (see :data:`Progress`).
    verbose
        Let the program's output through instead of keeping it for error messages.
    aslr
        Keep address-space layout randomisation.  By default the program runs with
        ``ADDR_NO_RANDOMIZE`` (personality(2)), so the same program and arguments give
        the same addresses and the same trace.
    iterations
        ``auto`` (the program's ``SS_ITER`` markers, or if it has none the iterations
        found from the DAG), ``markers`` or ``none``: see
        :func:`simsched.trace.import_raw`.

    Returns
    -------
    CaptureResult

    Raises
    ------
    ConfigError
        An argument of the wrong type, or ``out`` or ``raw`` that is an input of the
        capture (writing there would replace it).
    OutputError
        ``out`` or ``raw`` cannot be written (a folder, ...).
    CaptureError
        The backend is missing (the message names the command that installs it), the
        program fails, or it wrote no markers.
    TraceFormatError
        The raw stream is malformed (e.g. unbalanced markers).
    """
    from simsched.trace import import_raw, validate

    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ConfigError(f"unknown backend {shown(backend)}; choose one of {', '.join(BACKENDS)}")
    check_iterations_mode(iterations)
    verbose = check_flag(verbose, "verbose")
    aslr = check_flag(aslr, "aslr")
    check_callable(progress, "progress")
    args = check_arguments(args, "args", "the program's arguments")
    out = check_path(out, "out")
    raw = None if raw is None else check_path(raw, "raw")
    checked = check_path(program, "program")
    # As typed: a Path drops the "./" of "./sum", which then named coreutils' sum on PATH.
    # A name without a separator is looked up on PATH; a path object always names a file.
    prog = _resolve_program(
        program if isinstance(program, str) else os.path.join(os.curdir, checked)
    )
    # the gcc backend's program reads its block table as it starts
    inputs = {"the program": prog, "the program's block table": _block_table(prog)}
    check_not_input(out, "--out", inputs, keyword="out")
    if raw is not None:
        trace = spelled("the trace (out)", "the trace (--out)")
        check_not_input(raw, "--raw", inputs, keyword="raw", outputs={trace: out})
    with contextlib.ExitStack() as outputs:
        # Both files through temporaries: a failed or interrupted capture leaves neither
        # (nor a folder made for them), and a file that cannot be one (a folder) is
        # refused before the program runs.
        tmp_out = outputs.enter_context(atomic_output(out))
        tmp_raw = None if raw is None else outputs.enter_context(atomic_output(raw))
        # Absolute: the backend hands these paths to the program, which may chdir() before
        # it writes them (the gcc runtime writes its figures at exit).
        d = outputs.enter_context(
            tempfile.TemporaryDirectory(prefix=".simsched-capture-", dir=tmp_out.parent)
        )
        work = Path(d).absolute()
        t0 = time.perf_counter()
        raw_path, stats = _run_backend(backend, prog, args, work, progress, verbose, aslr)
        t1 = time.perf_counter()
        raw_bytes = raw_path.stat().st_size
        cb = None if progress is None else (lambda done, _b: progress("import", done))
        stack_warnings: list[str] = []
        refused: list[str] = []  # why iterations found in a called function stay unmarked
        with told_as(out, tmp_out):  # (a full disk) told of the trace's temporary file
            header = import_raw(
                raw_path,
                tmp_out,
                program=name_text(prog.name),
                args=args,
                progress=cb,
                iterations=iterations,
                warn=stack_warnings.append,
                source=prog.name,  # the raw stream is a temporary file
                iterations_refused=refused.append,
            )
        if header.n_frames == 1 and not header.roi and count_markers(raw_path) == 0:
            if _contains(prog, CILK_FOR_SYMBOL):
                # A rewritten Cilk program: telling its user to add markers or to build
                # it with simsched cc, as they did, names the wrong cause.
                grain = spelled("grain (CilkOptions(grain=...))", "--cilk-for-grain")
                raise CaptureError(
                    f"{prog}: wrote no simsched markers: its Cilk code spawned nothing in "
                    "this run (a cilk_for of no more iterations than its grain runs as one "
                    f"serial leaf); run it on a larger input, or build it with a smaller "
                    f"{grain} or #pragma cilk grainsize"
                )
            cc = "simsched cc" + ("" if backend == "gcc" else f" --backend {backend}")
            raise CaptureError(
                f"{prog}: wrote no simsched markers; include simsched.h and mark the "
                "program's tasks with SS_SPAWN/SS_SYNC, or, for a Cilk program, build it "
                f"from its source files with `{cc}` (docs/capture.md)"
            )
        validate(tmp_out)
        why = _no_iterations(tmp_out, *refused) if iterations == "auto" else None
        t2 = time.perf_counter()
        if tmp_raw is not None:
            shutil.move(raw_path, tmp_raw)
    return CaptureResult(
        header,
        backend,
        out,
        t1 - t0,
        t2 - t1,
        raw_bytes,
        stats,
        _block_table_warning(prog, backend) + _warnings(prog, stats) + stack_warnings,
        why,
    )


def _no_iterations(trace: Path, refused: str | None = None) -> str | None:
    """Why an ``auto`` import found no iterations, or None if the trace has some;
    ``refused``: why the import could not mark the ones it found inside a called function."""
    from simsched.trace import open_trace
    from simsched.trace.iterations import no_iterations_reason

    with open_trace(trace) as t:
        if int(t.frames.iteration.max(initial=-1)) >= 0:
            return None
        return no_iterations_reason(t, refused)


def _backend(name: str) -> str:
    """The backend ``name`` as the caller chose it: ``backend='gcc'`` in Python, ``--backend
    gcc`` on the command line (:func:`simsched.errors.spelled`)."""
    return spelled(f"backend={name!r}", f"--backend {name}")


def _block_table(prog: Path) -> Path:
    """The block table a gcc-backend program reads (``simsched cc`` writes it): where the
    runtime looks, beside the program's resolved path (/proc/self/exe)."""
    return Path(os.path.realpath(prog) + ".ssbb")


def _block_table_warning(prog: Path, backend: str) -> list[str]:
    """A gcc-backend program without its block table: its gaps are the cruder default."""
    if backend != "gcc":
        return []
    table = _block_table(prog)
    if table.is_file():
        return []
    return [
        f"{prog.name}: no block table {table} (simsched cc writes it beside the program it "
        "links), so every basic block counted SIMSCHED_BB_INSNS (default 5) instructions "
        "and the trace's instruction gaps are cruder estimates; keep the .ssbb file with "
        "the program, or build it again"
    ]


UNINSTRUMENTED_WARN = 0.05
"""Warn when the share of the gcc backend's samples in uninstrumented code is significantly
(one-sided binomial test at :data:`WARN_SIGNIFICANCE`) above this."""
MIN_SAMPLES = 10  # below this (about 0.1 s of CPU time) the share says nothing
WARN_SIGNIFICANCE = 0.05


def _significantly_above(out: int, n: int, share: float) -> bool:
    """Whether ``out`` of ``n`` samples is unlikely (p < WARN_SIGNIFICANCE) at ``share``.

    The samples are a timer's: a program that spends 5 % of its time in libraries shows 0
    to 5 of 41 samples there by chance, so a bare ``out > 0.05 n`` warns at random.
    """
    if out <= share * n:
        return False
    lq, lp = math.log(share), math.log1p(-share)

    def log_pmf(k: int) -> float:  # in logs: comb(n, k) overflows floats for long runs
        return (
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lq + (n - k) * lp
        )

    return sum(math.exp(log_pmf(k)) for k in range(out, n + 1)) < WARN_SIGNIFICANCE


def _warnings(prog: Path, stats: dict[str, int]) -> list[str]:
    """What the capture should tell the user about the trace's gaps."""
    n, out = stats.get("samples", 0), stats.get("uninstrumented_samples", 0)
    if n < MIN_SAMPLES or not _significantly_above(out, n, UNINSTRUMENTED_WARN):
        return []
    return [
        f"{prog.name}: {100 * out / n:.0f} % of the run's CPU time ({out} of {n} samples) was "
        "in uninstrumented code (libraries such as libm or the C library), whose memory "
        "references the gcc backend does not record; " + _backend("valgrind") + " records them"
    ]
