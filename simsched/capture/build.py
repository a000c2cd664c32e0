"""Building the capture runtimes on first use, into a content-addressed cache.

The C sources live in the repository's ``capture/`` folder (``SIMSCHED_CAPTURE_SRC``
overrides where).  Each build goes to ``$SIMSCHED_CACHE_DIR`` (default
``~/.cache/simsched``) under a folder named by a hash of everything that affects the
result -- the sources, the compiler's version, the toolchain files it links -- so a
changed source or an upgraded valgrind rebuilds, and concurrent first uses cannot see a
half-built folder: each build happens in a temporary folder that is renamed into place.

* gcc backend: ``gcc-<hash>/`` holds ``libtsan_preinit.o`` (the runtime, ``ss_rt.c``)
  and an empty ``libtsan.a``.  ``simsched cc`` passes ``-B`` and ``-L`` to that folder:
  gcc's ``-fsanitize=thread`` link line names ``libtsan_preinit.o`` (an object, so it
  is linked whole, ahead of the program's objects, and its strong ``simsched_marker``
  overrides the header's weak one) and ``-ltsan`` (which finds the empty archive
  instead of the real libtsan).
* valgrind backend: ``valgrind-<hash>/`` is a private ``VALGRIND_LIB``: links to every
  file of the installed valgrind's library folder plus the ``simsched-amd64-linux``
  tool, built from ``capture/valgrind/ss_main.c`` against the installed headers and
  static libraries (Debian's ``valgrind`` package ships both).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from simsched.errors import CaptureError
from simsched.files import cache_dir, describe_os_error

#: capture backends, in the order the docs present them (defined here, the lowest capture
#: module, because both the compiler wrapper and the runner check a backend name)
BACKENDS = ("gcc", "valgrind", "pin")

ZSTD_INSTALL = "apt-get install -y libzstd-dev"
GCC_INSTALL = "apt-get install -y gcc"
VALGRIND_INSTALL = "apt-get install -y valgrind"

_VG_INCLUDE = Path("/usr/include/valgrind")
_VG_LIB_DIRS = (
    Path("/usr/libexec/valgrind"),
    Path("/usr/lib/x86_64-linux-gnu/valgrind"),
    Path("/usr/lib/valgrind"),
    Path("/usr/local/libexec/valgrind"),
    Path("/usr/local/lib/valgrind"),
)
# The tool's link line follows valgrind's own build of its tools: static, no C
# library, loaded at the tools' fixed text address.
_VG_CFLAGS = [
    "-O2",
    "-m64",
    "-fno-stack-protector",
    "-fno-builtin",
    "-fno-strict-aliasing",
    "-fno-pic",
    "-fno-pie",
    "-DVGA_amd64=1",
    "-DVGO_linux=1",
    "-DVGP_amd64_linux=1",
    "-DVGPV_amd64_linux_vanilla=1",
]
_VG_LDFLAGS = [
    "-static",
    "-nodefaultlibs",
    "-nostartfiles",
    "-u",
    "_start",
    "-Wl,--build-id=none",
    "-Wl,-Ttext-segment=0x58000000",
]


def source_dir() -> Path:
    """Return the folder of simsched's C capture sources (``capture/``).

    Returns
    -------
    Path
        ``$SIMSCHED_CAPTURE_SRC`` if set, else the ``capture/`` folder beside the package.

    Raises
    ------
    CaptureError
        The folder or its ``simsched_raw.h`` is missing.
    """
    env = os.environ.get("SIMSCHED_CAPTURE_SRC")
    d = Path(env) if env else Path(__file__).resolve().parents[2] / "capture"
    if not (d / "simsched_raw.h").is_file():
        raise CaptureError(
            f"{d}: simsched's capture sources (simsched_raw.h) are not there; "
            "set SIMSCHED_CAPTURE_SRC to the capture/ folder of a simsched checkout"
        )
    return d


def compiler() -> str:
    """Return the C compiler ``simsched cc`` drives (``$SIMSCHED_CC``, default ``gcc``).

    Raises
    ------
    CaptureError
        The compiler is not on ``PATH``.
    """
    cc = os.environ.get("SIMSCHED_CC", "gcc")
    if shutil.which(cc) is None:
        raise CaptureError(f"the C compiler {cc!r} is not installed: {GCC_INSTALL}")
    return cc


def _run(cmd: list[str], what: str) -> str:
    # errors="replace": a compiler's diagnostics quote the source, which need not be UTF-8
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        tail = "; ".join(proc.stderr.strip().splitlines()[-3:])
        raise CaptureError(f"building {what} failed: {' '.join(cmd[:3])} ...: {tail}")
    return proc.stdout


def _digest(parts: list[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()[:16]


def _install(final: Path, build) -> Path:  # noqa: ANN001 - build: Callable[[Path], None]
    """Build into a temporary sibling of ``final`` and rename it into place."""
    if final.is_dir():
        return final
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=final.parent))
    except OSError as exc:
        # Said bare ("/x/fib.c: File exists"), the path did not tell what it was for.
        in_the_way = isinstance(exc, (FileExistsError, NotADirectoryError))
        why = "a file is in the way" if in_the_way else describe_os_error(exc)
        raise CaptureError(
            f"{final.parent}: cannot build the capture backend's native parts in simsched's "
            f"cache folder ({why}); set SIMSCHED_CACHE_DIR to a writable folder"
        ) from None
    try:
        build(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():  # someone else won the race only if final exists
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def have_zstd(cc: str) -> bool:
    """Tell whether ``cc`` can compile and link against libzstd (``zstd.h``, ``-lzstd``)."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "z.c"
        src.write_text("#include <zstd.h>\nint main(void){return (int)ZSTD_versionNumber()==0;}\n")
        proc = subprocess.run(
            [cc, str(src), "-o", str(Path(d) / "z"), "-lzstd"], capture_output=True
        )
        return proc.returncode == 0


RUNTIME = "the gcc capture runtime"
EXIT_LIB = "simsched_exit"  # the runtime's _exit and _Exit (capture/runtime/ss_exit.c)


def gcc_runtime() -> tuple[Path, bool]:
    """Build (once) and return the gcc backend's runtime folder.

    Returns
    -------
    (Path, bool)
        The folder to pass as ``-B``/``-L``, and whether the runtime compresses with
        zstd (it is built without compression when libzstd-dev is missing).
    """
    cc = compiler()
    src = source_dir()
    zstd = have_zstd(cc)
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    files = [src / "runtime" / "ss_rt.c", src / "runtime" / "ss_exit.c", src / "simsched_raw.h"]
    key = _digest([f.read_bytes() for f in files] + [version.encode(), bytes([zstd])])

    def build(tmp: Path) -> None:
        flags = [cc, "-x", "c", "-O2", "-fvisibility=hidden", "-fno-builtin", "-fno-sanitize=all"]
        flags += [f"-I{src}"] + ([] if zstd else ["-DSS_NO_ZSTD"])
        rt = src / "runtime"
        # gcc links libtsan_preinit.o into every -fsanitize=thread program (and an empty
        # libtsan.a); an archive's members go only into the programs that call them
        # (libsimsched_exit.a, linked after the program's objects: those that call _exit)
        _run([*flags, "-c", str(rt / "ss_rt.c"), "-o", str(tmp / "libtsan_preinit.o")], RUNTIME)
        _run(["ar", "rcs", str(tmp / "libtsan.a")], RUNTIME)
        _run([*flags, "-c", str(rt / "ss_exit.c"), "-o", str(tmp / "ss_exit.o")], RUNTIME)
        _run(["ar", "rcs", str(tmp / f"lib{EXIT_LIB}.a"), str(tmp / "ss_exit.o")], RUNTIME)

    return _install(cache_dir() / f"gcc-{key}", build), zstd


def valgrind_lib_dir() -> Path:
    """Return the installed valgrind's library folder (the one holding its tools).

    Raises
    ------
    CaptureError
        valgrind is not installed.
    """
    if shutil.which("valgrind") is None:
        raise CaptureError(f"valgrind is not installed: {VALGRIND_INSTALL}")
    for d in _VG_LIB_DIRS:
        if (d / "none-amd64-linux").exists():
            return d
    raise CaptureError(
        "valgrind's tool folder (with none-amd64-linux) was not found in "
        + ", ".join(map(str, _VG_LIB_DIRS))
        + f"; reinstall valgrind: {VALGRIND_INSTALL}"
    )


def _valgrind_static_dir() -> Path:
    for d in _VG_LIB_DIRS:
        if (d / "libcoregrind-amd64-linux.a").exists():
            return d
    raise CaptureError(
        "valgrind's static tool libraries (libcoregrind-amd64-linux.a) are missing; "
        f"they come with Debian's valgrind package: {VALGRIND_INSTALL}"
    )


def valgrind_tool() -> Path:
    """Build (once) the simsched valgrind tool and return its private ``VALGRIND_LIB``.

    Returns
    -------
    Path
        A folder to use as ``VALGRIND_LIB`` with ``valgrind --tool=simsched``.

    Raises
    ------
    CaptureError
        valgrind, its headers or static libraries, or the compiler are missing.
    """
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        raise CaptureError(
            f"the valgrind backend is built for amd64 Linux only (this is {platform.machine()})"
        )
    libdir = valgrind_lib_dir()
    static = _valgrind_static_dir()
    cc = compiler()
    if not (_VG_INCLUDE / "pub_tool_basics.h").is_file():
        raise CaptureError(
            f"valgrind's tool headers ({_VG_INCLUDE}/pub_tool_basics.h) are missing: "
            f"{VALGRIND_INSTALL}"
        )
    src = source_dir()
    files = [src / "valgrind" / "ss_main.c", src / "simsched_raw.h"]
    libs = [
        static / "libcoregrind-amd64-linux.a",
        static / "libvex-amd64-linux.a",
        static / "libgcc-sup-amd64-linux.a",
    ]
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout
    stamp = [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}".encode() for p in libs]
    key = _digest(
        [f.read_bytes() for f in files] + stamp + [version.encode(), str(libdir).encode()]
    )

    def build(tmp: Path) -> None:
        obj = tmp / "ss_main.o"
        _run(
            [cc, "-x", "c", *_VG_CFLAGS, f"-I{_VG_INCLUDE}", f"-I{src}", "-c"]
            + [str(src / "valgrind" / "ss_main.c"), "-o", str(obj)],
            "the valgrind tool",
        )
        _run(
            [cc, "-o", str(tmp / "simsched-amd64-linux"), str(obj), *_VG_LDFLAGS]
            + [str(libs[0]), str(libs[1]), "-lgcc", str(libs[2])],
            "the valgrind tool",
        )
        obj.unlink()
        # The private VALGRIND_LIB: the stock support files (preload objects,
        # suppressions, other tools) by link, plus the new tool.
        for f in libdir.iterdir():
            if not (tmp / f.name).exists():
                os.symlink(f, tmp / f.name)

    return _install(cache_dir() / f"valgrind-{key}", build)
