"""``simsched cc`` for Cilk sources: preprocess, rewrite, compile the rewritten unit.

The compiler command ``simsched cc`` builds (:func:`simsched.capture.run.cc_command`) is
used as it is, except that each C source whose preprocessed text uses Cilk is replaced
by its rewritten unit:

1. the source is preprocessed with the command's own flags (so ``-D``, ``-I``, ``-O``
   and the sanitizer's predefined macros are the same), plus ``-DSIMSCHED_CILK`` and
   ``-include simsched_cilk.h`` (the run-time support the rewritten code calls);
2. :func:`simsched.capture.cilk.rewrite` rewrites the unit;
3. the unit is compiled in the source's place as ``-x cpp-output``, from a temporary
   folder, under the source's own file name so that ``-c`` names the object as before;
   ``-MD``/``-MMD`` dependency files are written from the original source (the unit
   includes nothing).

Sources without Cilk keywords are compiled untouched, and C++ sources that use Cilk
are rejected (the rewriter speaks C).  Quoted includes still resolve: they were
resolved while preprocessing, next to the original source.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from simsched.capture import build
from simsched.capture.cilk import LINE_MARKER, CilkOptions, find_keyword, mentions_cilk, rewrite
from simsched.errors import CaptureError
from simsched.files import regular_file_kind

CXX_SUFFIXES = (".cc", ".cp", ".cpp", ".cxx", ".c++", ".C", ".CPP", ".ii")
# Options whose value is the next argument.
_WITH_VALUE = {
    "-o", "-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter",
    "-iprefix", "-iwithprefix", "-isysroot", "-x", "-MF", "-MT", "-MQ", "-L", "-l",
    "-Xlinker", "-Xassembler", "-Xpreprocessor", "-u", "-T", "-e", "--param", "-z", "-G",
    "-aux-info", "-wrapper", "-specs",
}  # fmt: skip
# Arguments that only matter to the compile or link stage, not to the preprocessor.
_NOT_FOR_CPP = {"-o", "-c", "-S", "-E", "-M", "-MM", "-MD", "-MMD", "-MP", "-MG", "-MF",
                "-MT", "-MQ", "-L", "-l", "-Xlinker", "-static", "-shared", "-rdynamic",
                "-pie", "-no-pie", "-u", "-T", "-e", "-z"}  # fmt: skip
_NOT_FOR_CPP_PREFIX = ("-Wl,", "-l", "-L", "-B", "-o")
_OUR_OPTIONS = {
    "--backend": "backend",
    "--cilk-for-grain": "grain",
    "--cilk-workers": "workers",
    "--cilk-for-split": "split",
    "--show-rewrite": "show",
}


@dataclass
class CcOptions:
    """``simsched cc``'s own options, taken out of the compiler arguments."""

    backend: str = "gcc"
    cilk: CilkOptions = field(default_factory=CilkOptions)
    show: str | None = None


def _positive(opt: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise CaptureError(f"{opt} {value}: must be a positive integer") from None
    if n < 1:
        raise CaptureError(f"{opt} {value}: must be a positive integer")
    return n


def parse_cc_options(args: Sequence[str]) -> tuple[CcOptions, list[str]]:
    """Split ``simsched cc``'s own options from the compiler's arguments.

    Parameters
    ----------
    args
        The command line after ``simsched cc``: ``--backend B``, ``--cilk-for-grain N``,
        ``--cilk-workers P``, ``--cilk-for-split opencilk|binary``, ``--show-rewrite FILE``
        (each also as ``--opt=value``), mixed with gcc arguments.

    Returns
    -------
    (CcOptions, list[str])
        The options and the remaining gcc arguments.

    Raises
    ------
    CaptureError
        An option without a value or with a bad one.
    """
    found: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if name in _OUR_OPTIONS:
            if not eq:
                if i + 1 >= len(args):
                    raise CaptureError(f"simsched cc: {name} needs a value")
                value = args[i + 1]
                i += 1
            found[_OUR_OPTIONS[name]] = value
        else:
            rest.append(a)
        i += 1
    backend = found.get("backend", "gcc")
    if backend not in build.BACKENDS:
        raise CaptureError(f"--backend {backend}: choose one of {', '.join(build.BACKENDS)}")
    cilk = CilkOptions(
        grain=_positive("--cilk-for-grain", found["grain"]) if "grain" in found else None,
        workers=_positive("--cilk-workers", found.get("workers", "1")),
        split=found.get("split", "opencilk"),
    )
    return CcOptions(backend, cilk, found.get("show")), rest


def sources(cmd: Sequence[str]) -> list[int]:
    """Indices of the C and C++ source files in a compiler command (``cmd[0]`` = compiler)."""
    out = []
    i = 1
    while i < len(cmd):
        a = cmd[i]
        if a in _WITH_VALUE:
            i += 2
            continue
        if not a.startswith("-") and (a.endswith(".c") or a.endswith(CXX_SUFFIXES)):
            out.append(i)
        i += 1
    return out


def cpp_command(cmd: Sequence[str], index: int, out: Path) -> list[str]:
    """The preprocessing command of source ``cmd[index]`` under ``cmd``'s flags."""
    keep = [cmd[0]]
    i = 1
    while i < len(cmd):
        a = cmd[i]
        n = 2 if a in _WITH_VALUE else 1
        drop = (
            i == index
            or not a.startswith("-")
            or a == "-"
            or a in _NOT_FOR_CPP
            or (a.startswith(_NOT_FOR_CPP_PREFIX) and a not in _WITH_VALUE)
        )
        if not drop:
            keep += cmd[i : i + n]
        i += n
    cilk_h = build.source_dir() / "simsched_cilk.h"
    # the rewritten unit is compiled as C (-x cpp-output), so it is preprocessed as C: a
    # C++ driver ($SIMSCHED_CC=g++) read a .c source as C++ and the unit did not compile
    lang = [] if cmd[index] == "-" else ["-x", "c"]
    return [
        *keep, "-E", "-DSIMSCHED_CILK=1", "-include", str(cilk_h), *lang, cmd[index],
        "-o", str(out),
    ]  # fmt: skip


def preprocess(
    cmd: Sequence[str], index: int, work: Path, data: bytes | None = None
) -> bytes | None:
    """Preprocess source ``cmd[index]`` (``data``: the text of ``-``); None when it fails.

    A failure is left for the real compilation to report with the compiler's own
    messages.
    """
    out = work / (Path(cmd[index]).stem + ".cpp.i")
    proc = subprocess.run(cpp_command(cmd, index, out), input=data, capture_output=True)
    if proc.returncode != 0 or not out.is_file():
        return None
    return out.read_bytes()


STDIN_NAME = "<stdin>"


def stdin_source(cmd: Sequence[str]) -> int | None:
    """The index of a C source read from standard input (``-x c -``) in ``cmd``, if any."""
    lang, i = "none", 1
    while i < len(cmd):
        a = cmd[i]
        if a == "-x" and i + 1 < len(cmd):
            lang = cmd[i + 1]
            i += 1
        elif a.startswith("-x") and len(a) > 2:
            lang = a[2:]
        elif a in _WITH_VALUE:
            i += 1
        elif a == "-" and lang == "c":
            return i
        i += 1
    return None


def _reject_cilk_cxx(path: str) -> None:
    try:
        where = find_keyword(Path(path).read_bytes(), path)
    except OSError:
        return  # a missing source is the compiler's to report
    if where is not None:
        raise CaptureError(
            f"{where}: C++ sources cannot be rewritten (simsched rewrites Cilk in C only)"
        )


def rewrite_command(
    cmd: Sequence[str], options: CilkOptions, work: Path, stdin: bytes | None = None
) -> list[str]:
    """Return ``cmd`` with every Cilk C source replaced by its rewritten unit in ``work``.

    Parameters
    ----------
    cmd
        A compiler command (``cmd[0]`` is the compiler).
    options
        How ``cilk_for`` loops are split.
    work
        A folder that outlives the compilation, for the rewritten units.
    stdin
        The text of a C source given as ``-`` (``-x c -``, :func:`stdin_source`), read
        by the caller, who passes it on to the compiler when it is not rewritten; it is
        rewritten like a file and named ``<stdin>`` in messages.  None: not rewritten.

    Returns
    -------
    list[str]
        The command to run.

    Raises
    ------
    CaptureError
        A C++ source uses Cilk, or a Cilk construct cannot be rewritten.
    """
    if "-M" in cmd or "-MM" in cmd:
        return list(cmd)  # only the dependencies are written: those of the sources as written
    new = list(cmd)
    rewritten = False
    piped = stdin_source(cmd) if stdin is not None else None
    srcs = sorted(sources(cmd) + ([] if piped is None else [piped]))
    for index in reversed(srcs):
        path = cmd[index]
        if path.endswith(CXX_SUFFIXES):
            _reject_cilk_cxx(path)
            continue
        data = stdin if index == piped else None
        pre = preprocess(cmd, index, work, data)
        if pre is None or not mentions_cilk(pre):
            continue
        out = rewrite(pre, STDIN_NAME if index == piped else path, options)
        if out is pre:
            continue
        sub = work / str(index)
        sub.mkdir()
        unit = sub / (Path(path).stem + ".i")
        unit.write_bytes(out)
        _write_dependencies(cmd, index, sub, data)
        new[index : index + 1] = ["-x", "cpp-output", str(unit), "-x", "none"]
        rewritten = True
    if rewritten and "-E" in cmd:
        # gcc -E does nothing with a unit already preprocessed (-x cpp-output): it wrote an
        # empty output.  Read as C under -fpreprocessed (no macro expansion: the option holds
        # for every input), the rewritten units are copied out as the compiler would see them.
        if new.count("cpp-output") != len(srcs):
            return list(cmd)  # some sources were not rewritten: their plain preprocessing
        new = ["c" if a == "cpp-output" else a for a in new]
        new.insert(1, "-fpreprocessed")
    return _without_dependency_flags(new) if rewritten else new


_DEP_SWITCHES = {"-MD", "-MMD", "-MP"}
_DEP_WITH_VALUE = {"-MF", "-MT", "-MQ"}


def _write_dependencies(
    cmd: Sequence[str], index: int, work: Path, data: bytes | None = None
) -> None:
    """Honour ``-MD``/``-MMD`` for a rewritten source: its rewritten unit includes nothing,
    so the dependency file is written by a preprocessor run on the original source,
    with the file and target names gcc would use."""
    if not _DEP_SWITCHES.intersection(cmd) or not {"-MD", "-MMD"}.intersection(cmd):
        return
    src = Path(cmd[index])
    obj = str(src.with_suffix(".o").name)
    if "-c" in cmd and "-o" in cmd[:-1] and len(sources(cmd)) == 1:
        obj = cmd[list(cmd).index("-o") + 1]
    flags = [a for a in cmd if a in _DEP_SWITCHES]
    for i, a in enumerate(cmd[:-1]):
        if a in _DEP_WITH_VALUE:
            flags += [a, cmd[i + 1]]
    if "-MF" not in flags:
        flags += ["-MF", str(Path(obj).with_suffix(".d"))]
    if "-MT" not in flags and "-MQ" not in flags:
        flags += ["-MT", obj]
    cpp = cpp_command(cmd, index, work / "deps.i")
    subprocess.run([*cpp[:-3], *flags, *cpp[-3:]], input=data, capture_output=True, check=False)


def _without_dependency_flags(cmd: list[str]) -> list[str]:
    out, skip = [], False
    for a in cmd:
        if skip:
            skip = False
        elif a in _DEP_WITH_VALUE:
            skip = True
        elif a not in _DEP_SWITCHES:
            out.append(a)
    return out


def show_rewrite(cmd: Sequence[str], path: str, options: CilkOptions, work: Path) -> str:
    """The rewritten text of one source, line for line, for inspection.

    Parameters
    ----------
    cmd
        A compiler command whose flags (``-D``, ``-I``...) preprocess the source.
    path
        The source.
    options
        How ``cilk_for`` loops are split.
    work
        A scratch folder.

    Returns
    -------
    str
        The source's own lines after preprocessing and rewriting -- headers left out,
        macros expanded, directives shown as written -- with the source's line numbers;
        the source itself when it uses no Cilk.

    Raises
    ------
    CaptureError
        The source is missing, does not preprocess, or cannot be rewritten.
    """
    p = Path(path)
    try:
        kind = regular_file_kind(p)
    except FileNotFoundError:
        raise CaptureError(f"{path}: no such source file") from None
    if kind is not None:  # a named pipe was said not to exist, and reading one waits
        raise CaptureError(f"{path}: is {kind}, not a source file")
    original = p.read_text(errors="replace").split("\n")
    if path.endswith(CXX_SUFFIXES):
        _reject_cilk_cxx(path)
        return "\n".join(original)
    full = [*cmd, path]
    # errors="replace": the diagnostics quote the source, which need not be UTF-8
    proc = subprocess.run(
        cpp_command(full, len(full) - 1, work / "show.i"),
        capture_output=True,
        text=True,
        errors="replace",
    )
    if proc.returncode != 0:
        # the first error line names the place and the cause; the last lines are gcc's
        # quote of the source, its caret and "compilation terminated."
        lines = proc.stderr.strip().splitlines()
        errors = [ln for ln in lines if re.search(r": (fatal )?error: ", ln)]
        why = errors[0] if errors else "; ".join(lines[-2:])
        raise CaptureError(f"{path}: preprocessing failed: {why}")
    pre = (work / "show.i").read_bytes()
    out = rewrite(pre, path, options) if mentions_cilk(pre) else pre
    if out is pre:
        return "\n".join(original)
    return _main_file_lines(out.decode("utf-8", "replace"), path, original)


def _main_file_lines(unit: str, path: str, original: list[str]) -> str:
    target = os.path.normpath(path)
    lines: dict[int, str] = {}
    current, line = None, 0
    for text in unit.split("\n"):
        m = LINE_MARKER.match(text.encode()) if text.startswith("#") else None
        if m is not None:
            current = os.path.normpath(m.group(2).decode())
            line = int(m.group(1))
            continue
        if current == target:
            if text.strip():
                # a macro expansion may span several lines of the unit, each marked with
                # the same source line: join them
                lines[line] = lines[line] + " " + text.strip() if line in lines else text
            line += 1
        elif text.startswith("#"):
            continue
    out = []
    for n, orig in enumerate(original, start=1):
        out.append(lines.get(n, orig if orig.lstrip().startswith("#") else ""))
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"
