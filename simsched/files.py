"""Output files and on-disk caches: the one place simsched writes a user's file.

Every file simsched writes — traces, profiles, tables, figures, records, sweep rows — goes
through :func:`atomic_output`: the writer fills a temporary file in the target's folder and
the file is renamed over the target only when the writer succeeded, so a reader never sees
half a file and a failed or interrupted write leaves the old file (or none) in place.  The
rules a user can rely on:

* a **symlink** is written through (its target is replaced, the link stays);
* a **device, FIFO or socket** (``-o /dev/null``, ``-o /dev/stdout``) is never replaced: the
  finished content is copied into it, so a full device reports its error;
* an **existing regular file** is replaced (``overwrite=False`` refuses with one line
  instead), keeping its permission bits; a new file gets the user's umask (``0666 & ~umask``),
  not the ``0600`` of a temporary file;
* any failure (full disk, read-only file system, permission) is an :class:`OutputError` that
  names the user's path, never the hidden temporary one;
* the temporary file is removed on any exception, Ctrl-C included: interrupts are held back
  while it is created and while it is removed, so no ``.name.*.tmp`` file is left behind
  (only kill -9 can: :func:`remove_orphan_temporaries` clears those of a writer that died,
  for callers that hold a lock every writer of the file takes).

Written by hand because no maintained library covers the device and symlink cases and the
umask (``atomicwrites`` is unmaintained and keeps ``0600``).

:func:`cache_dir` is the one lookup of simsched's cache root, :func:`read_user_text` the
one reader of a user's text file (YAML, CSV) that turns bad bytes into a one-line error
and opens nothing but a regular file (a named pipe would block, a device never end),
:func:`parse_yaml` / :func:`read_yaml` the one YAML reader (safe, and a key given twice in
a mapping is an error rather than silently the last one), :func:`parse_json` the one parser
of JSON embedded in a binary file (a trace's sections, a profile's metadata), and :func:`make_output_dir` the
one way an output folder is created.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simsched.canonical import plain
from simsched.errors import (
    ConfigError,
    OutputError,
    SimschedError,
    float_out_of_range,
    shown,
    spelled,
)

# Errors of the file system a user can act on; anything else is reported with its text too.
_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a parent is not a folder",
    errno.EISDIR: "is a folder",
    errno.ENOENT: "no such file or folder",
    errno.EFBIG: "file too large",
}


def describe_os_error(exc: OSError) -> str:
    """Short text of an ``OSError`` (``no space left on the device``...), and where its file
    comes from when that is ``$SIMSCHED_CACHE_DIR`` (:func:`from_cache_dir`)."""
    if exc.errno in _REASONS:
        text = _REASONS[exc.errno]
    else:
        text = exc.strerror or str(exc) or type(exc).__name__
    return text + from_cache_dir(exc.filename)


def cannot_write(path: Any, exc: OSError) -> OutputError:
    """The one-line error of a failed write of the user's ``path``: ``PATH: cannot write
    (no space left on the device)``, keeping the errno (a full disk is told apart)."""
    return OutputError(f"{path}: cannot write ({describe_os_error(exc)})", exc.errno)


def from_cache_dir(path: Any) -> str:
    """``"; the path comes from SIMSCHED_CACHE_DIR=..."`` when ``path`` is in the cache
    folder that variable names and that folder itself is at fault (a file, or a folder that
    cannot be made), else ``""``: an error about a folder in the cache
    ("existing.txt/kernels: a parent is not a folder") named a path the user never typed,
    and not the setting that chose it.  A user's own path that merely lies under the cache
    folder gets no such note: the folder is fine, the path was the user's.
    """
    env = os.environ.get("SIMSCHED_CACHE_DIR")
    if not env or not isinstance(path, str | os.PathLike):
        return ""
    p, root = Path(os.path.abspath(os.fsdecode(path))), Path(os.path.abspath(env))
    if root not in (p, *p.parents) or os.path.isdir(root):
        return ""
    return f"; the path comes from SIMSCHED_CACHE_DIR={env}"


def check_path(value: Any, name: str) -> Path:
    """``value`` (a ``str`` or ``os.PathLike``) as a :class:`Path`, else a one-line
    :class:`ConfigError` naming ``name``.  An empty string is refused too: ``Path("")`` is
    the current folder, where nobody meant to write."""
    if not isinstance(value, str | os.PathLike):
        raise ConfigError(f"{name}={shown(value)}: expected a path (str or os.PathLike)")
    text = os.fspath(value)
    if not isinstance(text, str):  # a PathLike of bytes
        raise ConfigError(f"{name}={shown(value)}: expected a path (str or os.PathLike)")
    if not text:
        raise ConfigError(f"{name}='': expected a path, got an empty string")
    return Path(text)


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (a link or another spelling counts)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they would be
        pass
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        # a symlink loop (RuntimeError before Python 3.13): the looping path is no file, so
        # it is no other path's, and the command's own open() names the loop in one line
        return os.path.abspath(a) == os.path.abspath(b)


def check_not_input(
    out: str | os.PathLike,
    option: str,
    inputs: dict[str, Any],
    *,
    keyword: str | None = None,
    outputs: dict[str, Any] | None = None,
) -> None:
    """Refuse, in one :class:`ConfigError`, an output that is one of the command's inputs.

    The output is written to a temporary file and renamed over its path, so ``simsched
    profile t.sst -o t.sst`` would replace the trace with a profile: the input is lost
    without a word.  A link or another spelling of the same file counts as the same.

    Parameters
    ----------
    out
        The output path.
    option
        The command line's option that took the output, for the message (``"--out"``:
        ``--out t.sst: is the trace this command reads``).
    inputs
        What each input is (``"the trace"``) and its path; None entries are skipped.
    keyword
        For a function that Python callers and the command line share: its parameter
        that takes the output (``"out"``).  A Python caller is then told of
        ``out='x.sst'`` and "this function", the command line of ``--out x.sst`` and
        "this command" (:func:`~simsched.errors.spelled`).
    outputs
        The other files the command writes, as ``inputs``: two outputs in one file would
        leave only the one written last.
    """
    given, who = f"{option} {out}", "this command"
    if keyword is not None:
        given = spelled(f"{keyword}={os.fspath(out)!r}", given)  # in full: it names a file
        who = spelled("this function", who)
    files = [(what, path, "reads") for what, path in inputs.items()]
    files += [(what, path, "writes too") for what, path in (outputs or {}).items()]
    for what, path, does in files:
        if path is not None and same_file(Path(out), Path(path)):
            raise ConfigError(
                f"{given}: is {what} {who} {does}; writing there would replace it (choose "
                "another file)"
            )


def cache_dir(*parts: str) -> Path:
    """simsched's cache folder, optionally a sub-folder of it (not created).

    ``$SIMSCHED_CACHE_DIR`` if set, else ``~/.cache/simsched``.
    """
    env = os.environ.get("SIMSCHED_CACHE_DIR")
    root = Path(env) if env else Path.home() / ".cache" / "simsched"
    return root.joinpath(*parts)


#: What an error about a folder or file of simsched's cache adds: the path is one simsched
#: chose, and the setting that moves it is the remedy.
CACHE_NOTE = "; it is in simsched's cache folder: set SIMSCHED_CACHE_DIR to a writable folder"


@contextmanager
def cache_output() -> Iterator[None]:
    """Writes to simsched's cache (:func:`cache_dir`) inside the block: an
    :class:`OutputError` raised there says that the path is in the cache, and how to move
    it (``.../kernels: cannot create the folder: ... is a file`` named a folder the user
    never chose; a sweep point recorded the bare ``NotADirectoryError``)."""
    try:
        yield
    except OutputError as exc:
        text = str(exc)
        if "SIMSCHED_CACHE_DIR" not in text:  # from_cache_dir's note says it already
            text += CACHE_NOTE
        raise OutputError(text, exc.errno) from None
    except OSError as exc:
        # a file of the cache opened directly (a lock file): the same one line; an error
        # about another file (the user's, read inside the block) is not the cache's
        name = exc.filename
        root = os.path.abspath(cache_dir())
        if not isinstance(name, str | os.PathLike) or not os.path.abspath(
            os.fsdecode(name)
        ).startswith(root + os.sep):
            raise
        text = f"{os.fsdecode(name)}: cannot use it ({describe_os_error(exc)})"
        if "SIMSCHED_CACHE_DIR" not in text:
            text += CACHE_NOTE
        raise OutputError(text, exc.errno) from None


def _umask() -> int:
    # /proc gives the umask without changing it (os.umask's set-and-restore races threads).
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _target(user: Path) -> Path:
    """The path actually written: symlinks (of the file and its folders) resolved."""
    return Path(os.path.realpath(user))


def _blocking_component(path: Path) -> tuple[Path, str | None]:
    """The first part of ``path`` that is not a folder, and why it cannot be one: it
    exists and is not a folder (None: it does not exist, yet could not be created)."""
    for part in (*reversed(path.parents), path):
        if os.path.isdir(part):
            continue
        if os.path.islink(part):
            link = os.readlink(part)
            if not os.path.exists(part):
                return part, f"{part} is a symbolic link to {link}, which does not exist"
            return part, f"{part} is a symbolic link to {link}, which is not a folder"
        if os.path.lexists(part):
            return part, f"{part} is a file, not a folder"
        return part, None
    return path, None


def folder_blocker(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot become a folder (a part of it is a file or a dangling link, or
    a name longer than its file system takes), or None: it is a folder, or
    :func:`make_output_dir` may make it.  Asked up front by checks that would otherwise
    fail once per run that writes there, or after all the runs."""
    p = Path(path)
    if os.path.isdir(p):
        return None
    part, why = _blocking_component(p)
    if why is None:
        why = _name_too_long(part, p)
    return why


def _name_too_long(first: Path, path: Path) -> str | None:
    """Whether a folder ``first`` up to ``path`` would make has a name longer than the
    file system of its nearest existing folder allows (NAME_MAX, 255 bytes on most)."""
    try:
        most = os.pathconf(first.parent if os.path.isdir(first.parent) else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        return None
    for part in (*reversed(path.parents), path):
        if part == first or first in part.parents:
            size = len(os.fsencode(part.name))
            if size > most:
                return (
                    f"the name {part.name[:40]}... is {size} bytes, more than the {most} "
                    "its file system takes"
                )
    return None


def make_output_dir(path: str | os.PathLike) -> Path:
    """Create the output folder ``path`` and its parents (nothing if it exists); returns it.

    The one way simsched creates a folder for a user's output.  Folders are made along the
    path as the user wrote it, never along a resolved one: a symbolic link to a folder is
    followed, but a *dangling* link (to a target that does not exist) is an error rather
    than a reason to create folders wherever it points.

    Raises
    ------
    OutputError
        A part of the path is a file or a dangling link, or the folder cannot be created
        (read-only file system, permission); the message names ``path``.
    """
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, FileNotFoundError, NotADirectoryError) as exc:
        # A part is a file, or a dangling link (mkdir does not follow one: it reports the
        # link as existing, or the folder beneath it as missing).
        part, blocking = _blocking_component(p)
        if blocking is not None:
            raise OutputError(
                f"{p}: cannot create the folder: {blocking}{from_cache_dir(p)}"
            ) from None
        # Nothing is in the way, yet the file system refused (/proc answers "no such file").
        raise OutputError(
            f"{p}: cannot create the folder {part} ({describe_os_error(exc)})", exc.errno
        ) from None
    except OSError as exc:
        raise OutputError(
            f"{p}: cannot create the folder ({describe_os_error(exc)})", exc.errno
        ) from None
    return p


def check_output_dir(path: str | os.PathLike) -> None:
    """Refuse, as :func:`make_output_dir` would and with its message, a folder that cannot
    be created, yet leave none created.

    An existing folder passes.  Otherwise the first missing folder along the path is made
    and removed again: only the file system knows that it refuses one (``/proc`` answers
    "no such file" to any new name), and asking it is what a command that only reads an
    output folder (``sweep status``) needs to refuse what the writing one refuses.

    Parameters
    ----------
    path
        The output folder.

    Raises
    ------
    OutputError
        As :func:`make_output_dir`.
    """
    p = Path(path)
    if p.is_dir():
        return
    first = next((q for q in (*reversed(p.parents), p) if not os.path.lexists(q)), None)
    if first is None or folder_blocker(p) is not None:
        make_output_dir(p)  # a part is a file or a dangling link: refused, nothing made
        return
    try:
        os.mkdir(first)
    except OSError:
        make_output_dir(p)  # fails as the first mkdir did, and says so as a run would
        return
    try:
        os.rmdir(first)
    except OSError:
        pass  # another process wrote there meanwhile: its folder stays


# Signals that interrupt a write (Ctrl-C; SIGTERM, which sweep workers turn into an
# interrupt): held back while a temporary file is created or removed.
_DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back for the block, then act on any that arrived.

    Python runs signal handlers between bytecodes, so an interrupt can land between two
    steps that must go together (a temporary created and its cleanup armed; a cleanup
    begun and finished).  Only the main thread runs handlers, so elsewhere this does
    nothing; a signal whose handler Python did not install is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old: dict[int, Any] = {}
    for sig in _DEFERRED_SIGNALS:
        handler = signal.getsignal(sig)
        if handler is None or handler == signal.SIG_IGN:
            continue
        old[sig] = signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for num, previous in old.items():
            signal.signal(num, previous)
        for num in dict.fromkeys(caught):  # delivered now, once each, as they would have been
            previous = old[num]
            if callable(previous):
                previous(num, None)
            elif previous == signal.SIG_DFL:
                os.kill(os.getpid(), num)


def check_output_file(path: str | os.PathLike, *, overwrite: bool = True) -> os.stat_result | None:
    """Refuse, as :func:`atomic_output` does and with its message, a path no output file
    can be written to: a folder, a path that cannot be looked at (a part of it is a file),
    or, unless ``overwrite``, an existing file.  Asked up front by a function that finds
    out its output only after long work (an import reads its whole input first: a folder
    given as the output was told as a fault of the input's records).

    Returns
    -------
    os.stat_result or None
        What the path is now (None: nothing is there yet).

    Raises
    ------
    OutputError
        The message names ``path``.
    """
    user = Path(path)
    try:
        # The user's path, not the resolved one: /dev/stdout on a pipe is a link to
        # /proc/self/fd/1, whose resolved name ("pipe:[...]") does not exist.
        st = os.stat(user)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise cannot_write(user, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{user}: is a folder, expected a file name")
    if not overwrite and stat.S_ISREG(st.st_mode):
        raise OutputError(f"{user}: exists; remove it or choose another name")
    return st


@contextmanager
def told_as(user: str | os.PathLike, staged: str | os.PathLike) -> Iterator[None]:
    """An :class:`OutputError` raised inside that names ``staged``, the hidden temporary
    file of an :func:`atomic_output` (a full disk while a writer fills it), names ``user``,
    the file the user asked for, instead; other errors pass as they are."""
    try:
        yield
    except OutputError as exc:
        text, prefix = str(exc), f"{staged}: "
        if not text.startswith(prefix):
            raise
        raise OutputError(f"{user}: {text.removeprefix(prefix)}", exc.errno) from None


@contextmanager
def atomic_output(path: str | os.PathLike, *, overwrite: bool = True) -> Iterator[Path]:
    """Context manager yielding a temporary path to write; it becomes ``path`` on success.

    Parameters
    ----------
    path
        The file the user asked for.
    overwrite
        Replace an existing file (default); ``False`` refuses with :class:`OutputError`.

    Yields
    ------
    Path
        A path in the same folder with the target's suffix (so writers that choose a format
        by suffix, such as matplotlib, do the right thing).  The writer may write it or
        replace it; it must not keep it open after the block.

    Raises
    ------
    OutputError
        The target is a folder, exists and ``overwrite`` is false, or writing failed; the
        message names ``path``.
    """
    user = Path(path)
    st = check_output_file(user, overwrite=overwrite)
    special = st is not None and not stat.S_ISREG(st.st_mode)
    target = user if special else _target(user)
    made: list[Path] = []  # the folders made for it, deepest first: removed if it fails
    if not special and not target.parent.is_dir():
        # The folders are made along the user's path (make_output_dir refuses a dangling
        # link there); a link *as the file* whose target's folder is missing is refused too.
        folder = user.parent
        while not os.path.lexists(folder) and folder != folder.parent:
            made.append(folder)
            folder = folder.parent
        try:
            make_output_dir(user.parent)
        except OutputError as exc:
            _remove_made(made)  # the part of the path made before the folder that failed
            raise OutputError(f"{user}: {str(exc).partition(': ')[2]}", exc.errno) from None
        target = _target(user)
        if not target.parent.is_dir():
            raise OutputError(
                f"{user}: is a symbolic link to {os.readlink(user)}, whose folder does not exist"
            )
    tmpdir: str | None = None
    tmp: Path | None = None
    try:
        try:
            # A Ctrl-C between creating the temporary and the cleanup below taking charge of
            # it would leave it behind: it is held back until ``tmp`` is known.
            with _signals_deferred():
                if special:
                    # Never rename over a device or FIFO: stage privately, then copy into it.
                    tmpdir = tempfile.mkdtemp(prefix="simsched-out-")
                    tmp = Path(tmpdir) / f"out{target.suffix}"
                    tmp.touch()
                else:
                    stem, suffix = _temp_parts(target)
                    fd, name = tempfile.mkstemp(
                        prefix=f".{stem}.", suffix=f".tmp{suffix}", dir=target.parent
                    )
                    tmp = Path(name)
                    os.close(fd)
        except OSError as exc:
            raise cannot_write(user, exc) from None
        yield tmp
        if special:
            with open(tmp, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        else:
            mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
            os.chmod(tmp, mode)
            with open(tmp, "rb+") as f:  # data on disk before the rename makes it visible
                os.fsync(f.fileno())
            os.replace(tmp, target)
        made.clear()
    except OSError as exc:
        if exc.filename not in (None, str(tmp), str(target), os.fspath(tmp or "")):
            raise  # an error of another file the writer touched: not ours to rename
        raise cannot_write(user, exc) from None
    finally:
        with _signals_deferred():  # a second Ctrl-C must not cut the cleanup short
            if tmpdir:
                shutil.rmtree(tmpdir, ignore_errors=True)
            elif tmp is not None:
                tmp.unlink(missing_ok=True)
            # An output refused or failed leaves no trace, not even an empty folder for it
            # (`trace gen` of an unknown generator into new/x.sst left new/).
            _remove_made(made)


def _remove_made(made: list[Path]) -> None:
    """Remove the folders ``made`` (deepest first) that are still empty: a folder that
    something else was put in meanwhile stays, and so do the folders above it."""
    for folder in made:
        if not os.path.lexists(folder):
            continue  # a make that failed part-way made only the upper ones
        try:
            folder.rmdir()
        except OSError:
            break


#: Most bytes of an output's name (and of its suffix) that its temporary file repeats:
#: with the dots, random letters and ".tmp" mkstemp adds, a name near the 255-byte limit
#: of a file name made a temporary name too long to create, and a valid output failed.
_TEMP_NAME_BYTES, _TEMP_SUFFIX_BYTES = 160, 32


def _temp_parts(target: Path) -> tuple[str, str]:
    """The part of ``target``'s name and the suffix that its temporary file's name keeps."""
    stem = target.name
    while len(os.fsencode(stem)) > _TEMP_NAME_BYTES:
        stem = stem[:-1]
    suffix = target.suffix if len(os.fsencode(target.suffix)) <= _TEMP_SUFFIX_BYTES else ""
    return stem, suffix


def remove_orphan_temporaries(path: str | os.PathLike) -> None:
    """Remove the temporary files of :func:`atomic_output` for ``path`` left by a writer
    that was killed (kill -9 skips every cleanup).

    Call it only while holding a lock that every writer of ``path`` takes: then no live
    writer owns one of them.  A writer that itself writes atomically to the temporary it
    was handed names its own after it, hence any number of leading dots.
    """
    target = Path(path)
    orphan = re.compile(r"\.+" + re.escape(_temp_parts(target)[0]) + r"\..*\.tmp.*")
    try:
        for entry in target.parent.iterdir():
            if orphan.fullmatch(entry.name):
                entry.unlink(missing_ok=True)
    except OSError:
        pass  # a cleanup: the write that follows reports a folder it cannot use


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a stream rather than a file of its own: a device, FIFO or socket
    (which :func:`atomic_output` writes into rather than replaces) or a ``/dev/`` name such
    as ``/dev/stdout``, even when that is redirected to a file.  A command writing its
    output there prints nothing else on stdout."""
    if Path(path).as_posix().startswith("/dev/"):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def named_for(path: str | os.PathLike, suffixes: tuple[str, ...]) -> bool:
    """Whether an output at ``path`` may hold a format whose files are named with one of
    ``suffixes`` (lower case, with the dot): its suffix is one of them in any case, or it
    has none, or it is a stream (:func:`is_stream`), which has no name of its own.  The
    commands that write one format refuse other names: a ``-o t.csv`` that got JSON was
    then refused by the CSV reader it was named for."""
    return Path(path).suffix.lower() in ("", *suffixes) or is_stream(path)


def write_bytes_atomic(path: str | os.PathLike, data: bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_output`; returns ``path``."""
    with atomic_output(path, overwrite=overwrite) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text_atomic(path: str | os.PathLike, text: str, *, overwrite: bool = True) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_output`; returns ``path``."""
    return write_bytes_atomic(path, text.encode("utf-8"), overwrite=overwrite)


def write_json_atomic(path: str | os.PathLike, obj: Any, *, sort_keys: bool = True) -> Path:
    """Write ``obj`` as indented JSON (numpy values converted) through :func:`atomic_output`."""
    text = json.dumps(obj, sort_keys=sort_keys, indent=1, default=plain) + "\n"
    return write_text_atomic(path, text)


def regular_file_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it is not a regular file (``"a folder"``, ``"a named pipe"``,
    ``"a device"``...), or None for a regular file; a symbolic link is followed.  Asked
    before opening: opening a named pipe blocks until something writes to it.

    Raises
    ------
    OSError
        ``path`` cannot be stat'ed (missing, no permission).
    """
    return file_kind(os.stat(path).st_mode)


def file_kind(mode: int) -> str | None:
    """What a path of ``mode`` (from ``stat``) is when it is not a regular file
    (``"a folder"``, ``"a named pipe"``, ``"a socket"``, ``"a device"``), or None: the one
    list of the readers that must not open a pipe or read a device without end."""
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    )
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in kinds if test(mode)), "a special file")


def read_user_text(path: str | os.PathLike, what: str = "text") -> str:
    """Read a user's UTF-8 text file (YAML, CSV), turning every failure into one line.

    Only a regular file (a symbolic link is followed) is read: a named pipe would block
    the command until something wrote to it, and a device such as ``/dev/zero`` was read
    until memory ran out.

    Parameters
    ----------
    path
        The file.
    what
        What the file should be, for the messages (``"YAML"``: "expected a YAML file").

    Returns
    -------
    str
        The file's text.

    Raises
    ------
    ConfigError
        An empty path, missing, unreadable, a folder, a device, named pipe or socket, or
        not UTF-8 text.
    """
    if isinstance(path, str) and not path:  # Path("") is the current folder
        raise ConfigError(f"an empty path, expected a {what} file")
    p = Path(path)
    try:
        kind = file_kind(os.stat(p).st_mode)  # before opening: opening a pipe blocks
        if kind is not None:
            raise ConfigError(f"{p}: is {kind}, expected a {what} file")
        # O_NONBLOCK: a pipe put in its place since the stat must not block the open either
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        try:
            kind = file_kind(os.fstat(fd).st_mode)  # what was opened, whatever it is now
            if kind is not None:
                raise ConfigError(f"{p}: is {kind}, expected a {what} file")
            f = open(fd, encoding="utf-8")  # noqa: SIM115 (it owns fd from here)
        except BaseException:
            os.close(fd)
            raise
        with f:
            return f.read()
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({describe_os_error(exc)})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not a {what} file (byte {exc.start} is not UTF-8 text)") from None


class NumberOutOfRange(ConfigError):
    """A number written beyond a float's range (:func:`float_out_of_range`): its own class,
    so that a reader that falls back to text on invalid YAML still reports it."""


@functools.cache
def _strict_loader() -> type:
    # Built on first use: PyYAML is imported only by the commands that read YAML.
    import yaml

    class _StrictLoader(yaml.SafeLoader):
        """``yaml.SafeLoader`` that refuses a mapping giving one key twice.

        PyYAML keeps the last value of a repeated key, so a spec or machine file with two
        ``seeds:`` (or two ``size:`` in a cache) silently runs something else than it reads.
        Keys brought in by a merge (``<<: *base``) may be overridden, as YAML intends.
        """

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:  # type: ignore[override]
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"duplicate key {key!r}",
                        key_node.start_mark,
                    )
            return super().construct_mapping(node, deep=deep)

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            # A scalar whose tag's conversion fails (``2020-13-45`` read as a date,
            # ``!!int abc``, an integer of more than 4300 digits) raises a plain Python
            # error from inside PyYAML; give it the node's position like any YAML error.
            try:
                return super().construct_object(node, deep=deep)
            except (ValueError, KeyError, AttributeError, TypeError, OverflowError) as exc:
                tag = node.tag.rsplit(":", 1)[-1]
                value = str(node.value) if isinstance(node, yaml.ScalarNode) else node.id
                text = repr(value) if len(value) <= 40 else f"{value[:37]!r}..."
                # ValueError's first clause says what is wrong ("month must be in 1..12");
                # the others are PyYAML's internals failing on the bad value
                why = str(exc).split(":")[0] if isinstance(exc, ValueError) else "invalid"
                raise yaml.constructor.ConstructorError(
                    None, None, f"cannot read {text} as {tag} ({why})", node.start_mark
                ) from None

    def construct_float(self: _StrictLoader, node: yaml.ScalarNode) -> float:
        value = float(self.construct_yaml_float(node))
        why = float_out_of_range(str(node.value), value)
        if why is not None:
            exc = yaml.constructor.ConstructorError(
                None, None, f"cannot read {node.value!r} as a number: {why}", node.start_mark
            )
            exc.out_of_range = True  # type: ignore[attr-defined]
            raise exc
        return value

    _StrictLoader.add_constructor("tag:yaml.org,2002:float", construct_float)
    return _StrictLoader


#: Most values a YAML document may stand for once its aliases are expanded.  Anchors and
#: aliases are shared, not copied, so ten lines of aliases of aliases ("a billion laughs")
#: parse at once and then cost minutes in whatever walks the values.
MAX_YAML_VALUES = 1_000_000


#: Deepest nesting of flow collections (``[[[...]]]``) a YAML document may have: PyYAML's
#: scanner takes time quadratic in it (seconds at 1000), and no configuration needs more.
MAX_YAML_DEPTH = 64

_QUOTED_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"|(?:^|(?<=\s))#[^\n]*")


def _flow_depth(text: str) -> int:
    """Deepest nesting of ``[`` and ``{`` outside quoted strings and comments."""
    if text.count("[") + text.count("{") <= MAX_YAML_DEPTH:
        return 0  # cannot be deeper than that: skip the scan
    depth = deepest = 0
    for ch in _QUOTED_OR_COMMENT.sub("", text):
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _expanded_size(root: Any) -> int | None:
    """Number of values the YAML node ``root`` stands for with every alias expanded
    (shared nodes are counted once per use), or None when a collection contains itself
    (``a: &a [*a]``)."""
    import yaml

    sizes: dict[int, int] = {}
    # Nodes whose children are being walked: the ancestors of the node at hand.  A child
    # among them is a cycle, which constructs a list inside itself, and every walk of the
    # values after parsing (overrides, canonical JSON, validation) recursed without end.
    walking: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes and not done:
            continue
        children: list[Any] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done:
            walking.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in children)
            continue
        walking.add(id(node))
        if any(id(c) in walking for c in children):
            return None
        sizes[id(node)] = 1
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text safely (no object tags), refusing duplicate mapping keys.

    Parameters
    ----------
    text
        The YAML document.
    source
        What to name in an error (a file name, ``--set seeds=...``).

    Raises
    ------
    ConfigError
        Not valid YAML, a key given twice, nesting too deep to parse, or aliases expanding
        to more than :data:`MAX_YAML_VALUES` values: one line with the position.
    """
    if _flow_depth(text) > MAX_YAML_DEPTH:
        raise ConfigError(
            f"{source}: invalid YAML: collections nested more than {MAX_YAML_DEPTH} deep"
        )
    import yaml

    loader = None
    try:
        # inside the try: the reader refuses control characters (a NUL) as it is built
        loader = _strict_loader()(text)
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node)
        if size is None:
            raise ConfigError(
                f"{source}: invalid YAML: an alias refers to a collection that contains it "
                "(a recursive alias)"
            )
        if size > MAX_YAML_VALUES:
            raise ConfigError(
                f"{source}: the YAML stands for more than {MAX_YAML_VALUES:,} values once "
                "its aliases are expanded (aliases of aliases?)"
            )
        return loader.construct_document(node)
    except yaml.reader.ReaderError as exc:
        ch = exc.character
        code = f"#x{ch:04x}" if isinstance(ch, int) else repr(ch)
        raise ConfigError(
            f"{source}: invalid YAML: character {code} at position {exc.position} is not "
            "allowed (no control characters but tab and newline)"
        ) from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if getattr(exc, "out_of_range", False):
            raise NumberOutOfRange(f"{source}{at.replace(' at', ',', 1)}: {problem}") from None
        raise ConfigError(f"{source}: invalid YAML{at}: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid YAML: nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()


def parse_json(data: bytes, source: str, error: type[SimschedError] = SimschedError) -> Any:
    """Parse UTF-8 JSON bytes read from a file, turning every way it can fail into one line.

    ``json.loads`` raises more than :class:`json.JSONDecodeError` on hostile input: a
    ``ValueError`` for an integer of more than 4300 digits and a ``RecursionError`` for
    arrays nested deeper than the interpreter's stack; both are a damaged file, not a bug.

    Parameters
    ----------
    data
        The encoded document.
    source
        What to name in an error (the file and the part of it).
    error
        The :class:`~simsched.errors.SimschedError` subclass to raise.

    Returns
    -------
    Any
        The decoded value (the caller checks its shape).

    Raises
    ------
    SimschedError
        ``error``: not UTF-8, not JSON, an integer too long or nesting too deep.
    """
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not valid JSON (byte {exc.start} is not UTF-8)") from None
    except RecursionError:
        raise error(f"{source}: not valid JSON (nested too deeply)") from None
    except json.JSONDecodeError as exc:
        raise error(f"{source}: not valid JSON ({exc})") from None
    except ValueError:  # Python's limit on the digits of an int (sys.get_int_max_str_digits)
        raise error(f"{source}: not valid JSON (an integer with too many digits)") from None


def read_yaml(path: str | os.PathLike) -> Any:
    """Read a user's YAML file with :func:`parse_yaml` (one-line errors, naming ``path``)."""
    return parse_yaml(read_user_text(path, "YAML"), str(path))
