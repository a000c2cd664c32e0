"""The ``simsched`` command line.

Each command is a thin layer over a documented public function; the command modules
(``simsched/cli/<group>.py``) each expose ``register(app)``.  User errors
(:class:`simsched.errors.SimschedError`) become one line on stderr and exit status 2.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import importlib
import io
import itertools
import os
import re
import stat
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from simsched.errors import SimschedError, Terminated, command_line, interrupt_in, one_line
from simsched.files import describe_os_error

if TYPE_CHECKING:
    import typer

# One line per command module; the order is the order of --help.
_COMMAND_MODULES = [
    "simsched.cli.trace",
    "simsched.cli.machine",
    "simsched.cli.memsim",
    "simsched.cli.calibrate",
    "simsched.cli.capture",
    "simsched.cli.sweep",
    "simsched.cli.profile",
    "simsched.cli.run",
    "simsched.cli.plot",
    "simsched.cli.export",
    "simsched.cli.policies",
]
# The first word of a command line and the modules that register it: a command imports only
# its own module (and what that needs), so `simsched machine list` never loads the
# simulator.  tests/cli/test_startup.py checks this map against what the modules register.
COMMAND_HOMES: dict[str, tuple[str, ...]] = {
    "trace": ("simsched.cli.trace",),
    "machine": ("simsched.cli.machine",),
    "memsim": ("simsched.cli.memsim",),
    "calibrate": ("simsched.cli.calibrate",),
    "cc": ("simsched.cli.capture",),
    "capture": ("simsched.cli.capture",),
    "sweep": ("simsched.cli.sweep",),
    "results": ("simsched.cli.sweep",),
    "profile": ("simsched.cli.profile",),
    "coarsen": ("simsched.cli.profile",),
    "regrain": ("simsched.cli.profile",),
    "run": ("simsched.cli.run",),
    "compare": ("simsched.cli.run",),
    "plot": ("simsched.cli.sweep", "simsched.cli.plot"),
    "export": ("simsched.cli.export",),
    "schedulers": ("simsched.cli.policies",),
}

#: The first words that are groups of subcommands (`trace info`): an error names both words.
COMMAND_GROUPS = frozenset({"trace", "machine", "sweep", "results", "plot", "export"})

# Command lines run without typer: (module, function) printing their output.  Building the
# typer application imports typer and the pydantic it loads, which cost more than these
# commands' own work (docs/performance.md, "Start-up"); the same function is the typer
# command's body, so both give the same output.  Any other spelling (an option, --help)
# goes through typer.
_QUICK: dict[tuple[str, ...], tuple[str, str]] = {
    ("machine", "list"): ("simsched.cli._presets", "print_presets"),
}


class _NeverRaised(Exception):
    """Stands in for typer's exceptions in :func:`main` on a path that does not load typer."""


def _print_version(value: bool) -> None:
    if value:
        import typer

        from simsched.identity import version

        print(f"simsched {version()}")
        raise typer.Exit()


def build_app(command: str | None = None) -> typer.Typer:
    """The ``simsched`` typer application: every command, or only those ``command`` (the
    first word of a command line) needs when it is a known one."""
    return _build(COMMAND_HOMES.get(command or "", ()))


@functools.cache
def _build(homes: tuple[str, ...]) -> typer.Typer:
    # One application per set of modules: main() runs many times in one process (tests).
    import typer

    app = typer.Typer(
        name="simsched",
        help="Trace-driven CMP/NUMA task-scheduling simulator.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _options(
        version: bool = typer.Option(
            False,
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print simsched's version (from git) and exit.",
        ),
    ) -> None:
        """Trace-driven CMP/NUMA task-scheduling simulator."""

    for name in _COMMAND_MODULES:
        if not homes or name in homes:
            importlib.import_module(name).register(app)
    return app


def __getattr__(name: str) -> Any:
    # `simsched.cli.app`: the whole application (documentation tests walk its commands).
    if name == "app":
        app = build_app()
        globals()["app"] = app
        return app
    raise AttributeError(f"module 'simsched.cli' has no attribute {name!r}")


def fail(message: str, status: int = 2) -> NoReturn:
    """Print a one-line user error and exit with ``status`` (2 by default)."""
    print(f"simsched: error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(status)


def _silence_stdout() -> None:
    # stdout is broken (full device, closed pipe): point it at /dev/null so the
    # interpreter's final flush does not print a second error.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


#: Errors of a write to a regular file that a write of no bytes does not repeat: a full
#: device, a quota, the process's file-size limit.
_FILE_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _stdout_fails(exc: OSError) -> bool:
    """Whether an ``OSError`` that names no file may be standard output's: a write of no
    bytes fails there too (``/dev/full``, a closed descriptor), or standard output is a
    regular file and the error is one of a file growing (:data:`_FILE_FULL`), which only
    a file can raise (standard output to a terminal or a pipe cannot be blamed for it)."""
    try:
        fd = sys.stdout.fileno()
    except io.UnsupportedOperation:  # not a file (captured in a test): not its error
        return False
    except (OSError, ValueError, AttributeError):  # closed, or None
        return True
    try:
        os.write(fd, b"")
        return exc.errno in _FILE_FULL and stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return True


def _stdout_was_closed() -> bool:
    """Whether click met a closed stdout (EPIPE) inside a command and exits 1 for it.

    click answers a broken pipe inside a command with a silent ``exit(1)`` after wrapping
    the standard streams; ``simsched ... | head`` is a normal way to read output, so the
    wrappers are taken off and :func:`main` exits 0 quietly, as for a pipe closed later.
    """
    # By name: typer vendors its own copy of click, so the class has two homes.
    if type(sys.stdout).__name__ != "PacifyFlushWrapper":
        return False
    sys.stdout = getattr(sys.stdout, "wrapped", sys.__stdout__)
    if type(sys.stderr).__name__ == "PacifyFlushWrapper":
        sys.stderr = getattr(sys.stderr, "wrapped", sys.__stderr__)
    return True


def _stopped(resumes: bool, terminated: list[int]) -> NoReturn:
    """End an interrupted command: Ctrl-C (status 130) or SIGTERM (143)."""
    how, status = ("terminated (SIGTERM)", 143) if terminated else ("interrupted (Ctrl-C)", 130)
    if resumes:
        how += "; finished points are kept, run the command again to resume"
    fail(how, status)


def _unwind_on_sigterm() -> list[int]:
    """Make SIGTERM unwind the command like Ctrl-C; returns the list it notes arrivals in.

    A batch system stops a job that reaches its time limit with SIGTERM (SLURM, then
    SIGKILL after a grace period).  Python's default ends the process at once, leaving the
    temporary file of an output being written and no record of the run; raised as
    KeyboardInterrupt, the signal runs every ``finally`` (temporaries removed, a failed
    run's record written, a sweep's finished points kept) and the process ends with the
    conventional status 143.  A signal that arrives while Numba compiles is sent again
    once the compiler has returned (:func:`_in_llvm`).
    """
    import signal
    import threading

    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        return got  # signal handlers can only be set from the main thread

    def on_term(signum: int, frame: Any) -> None:
        got.append(signum)
        if _in_llvm(frame):
            # Numba compiling: an exception raised in one of llvmlite's ctypes callbacks is
            # printed and dropped, and the command ran on to its end (exit 0).  Ask again
            # once the compiler has returned to Python.
            timer = threading.Timer(0.05, os.kill, (os.getpid(), signum))
            timer.daemon = True
            timer.start()
            return
        raise Terminated

    signal.signal(signal.SIGTERM, on_term)
    return got


def _in_llvm(frame: Any) -> bool:
    """Whether ``frame`` (where a signal arrived) runs inside llvmlite, the compiler Numba
    calls through ctypes."""
    while frame is not None:
        if "llvmlite" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


_API_NAME = re.compile(r"([a-z][a-z0-9_]*)=(\S*?):")


def as_typed(message: str, args: Sequence[str]) -> str:
    """``message`` with a leading ``name=value:`` of the Python API spelled as the option
    the user typed (``sample_iterations=1:`` -> ``--sample-iterations 1:``).

    The API's checks name a value by its keyword, the one word that fits both callers;
    only the command line knows it was an option, and only an option present in ``args``
    is renamed, so a sweep spec's key or a scheduler's parameter keeps its own name.
    """
    m = _API_NAME.match(message)
    if m is None:
        return message
    flag = "--" + m.group(1).replace("_", "-")
    if not any(a == flag or a.startswith(flag + "=") for a in args):
        return message
    return f"{flag} {m.group(2)}:{message[m.end() :]}"


def usage_message(exc: BaseException) -> str:
    """click's message of a usage error, on one line (empty when it printed help instead)."""
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    if type(exc).__name__ == "NoSuchOption" and getattr(exc, "ctx", None) is not None:
        message = _no_such_option(exc)
    # a parser's ValueError (written_float's "'abc' is not a number") reaches click through
    # pydantic, which puts its own words in front of the reason
    message = str(message).replace(": Value error, ", ": ")
    return " ".join(message.split())


def _no_such_option(exc: Any) -> str:
    """click's "No such option" with suggestions compared without the leading dashes:
    every long option starts with ``--``, so click offered ``--out`` for ``--nosuchopt``."""
    import difflib

    name = str(exc.option_name)
    params = exc.ctx.command.get_params(exc.ctx)  # with --help, which .params lacks
    opts = [o for p in params for o in (*p.opts, *p.secondary_opts)]
    bare = {o.lstrip("-"): o for o in opts if o.startswith("--")}
    close = difflib.get_close_matches(name.lstrip("-"), list(bare), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(bare[c] for c in close)}?)" if close else ""
    return f"No such option: {name}{hint}"


def usage_line(exc: BaseException, command: str | None = None) -> str:
    """A command-line usage error (click's) as one line: the subcommand, what is wrong, and
    where the options are listed.

    click draws a box of five or more lines headed by a usage line that names the
    interpreter's ``argv[0]`` (``-c``, ``__main__.py``) when simsched runs through Python;
    every other user error is one ``simsched: error:`` line, and this is made like them.
    """
    message = usage_message(exc)
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        words: list[str] = []
        while ctx.parent is not None:  # the root's name is argv[0], whatever ran simsched
            words.insert(0, str(ctx.info_name))
            ctx = ctx.parent
    else:  # raised while parsing, before a context: the first word typed names the command
        words = [command] if command else []
    where = " ".join(["simsched", *words])
    return f"{' '.join(words) + ': ' if words else ''}{message.rstrip('.')}; see `{where} --help`"


#: Options whose value may be empty: a captured program's argument (``trace import --arg
#: ""`` restores one the program was given) and a figure without a title.
EMPTY_ALLOWED = frozenset({"--arg", "--title"})


def empty_argument(args: Sequence[str]) -> str | None:
    """The one-line error for an empty argument on the command line, or None.

    An empty string is what an unset shell variable gives (``-o "$OUT"``), and taken as a
    path it is the current folder: ``-o ""`` wrote a run's files there and ``trace info ""``
    said ``.: is a directory``.  It is refused but where it is a value:
    :data:`EMPTY_ALLOWED`'s options, a captured program's arguments (after ``capture``'s
    ``--``), and ``cc``'s, which are the compiler's.
    """
    if args[:1] == ["cc"]:
        return None
    for i, arg in enumerate(args):
        if arg == "--" and args[:1] == ["capture"]:
            return None
        option, eq, value = arg.partition("=")
        # --out= and -o= (click takes "-o=" as the value "=", and wrote a file of that name)
        long_empty = arg.startswith("--") and len(option) > 2
        short_empty = len(option) == 2 and option[0] == "-" and option[1] != "-"
        empty_option = bool(eq) and not value and (long_empty or short_empty)
        if arg != "" and not empty_option:
            continue
        previous = args[i - 1] if i else ""
        named = previous.startswith("-") and "=" not in previous and previous != "--"
        if option in EMPTY_ALLOWED or (arg == "" and named and previous in EMPTY_ALLOWED):
            continue
        words = list(itertools.takewhile(lambda a: a and not a.startswith("-"), args[:i]))
        words = words[: 2 if words and words[0] in COMMAND_GROUPS else 1]
        where = " ".join(words) + ": " if words else ""
        if arg:
            return f"{where}{option}: an empty value (an unset shell variable?)"
        after = f" after {previous}" if named else ""
        return f"{where}an empty argument{after} (an unset shell variable?)"
    return None


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``simsched`` console script.

    A user error (:class:`simsched.errors.SimschedError`, a bad option, a file that
    cannot be read or written) ends in one line on stderr and exit status 2; Ctrl-C ends in
    one line and status 130.
    """
    try:
        _main(argv)
    finally:
        if argv is None:  # the process is the command's own (not a caller's, or a test's)
            _after_the_command()


def _main(argv: list[str] | None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    empty = empty_argument(args)
    if empty is not None:
        fail(empty)
    # Only sweeps resume (their finished points are kept); elsewhere say no more.
    resumes = args[:2] == ["sweep", "run"]
    if args[:1] == ["--version"] and len(args) > 1:
        # typer printed the version and ignored the rest (exit 0)
        fail(f"--version takes nothing after it, got {' '.join(args[1:])!r}")
    if args == ["--version"]:
        # The most common quick question needs neither typer nor any command module.
        from simsched.errors import ConfigError
        from simsched.identity import version

        try:
            said = version()
        except ConfigError as exc:  # a SOURCE_DATE_EPOCH that is no date
            fail(str(exc))
        print(f"simsched {said}")
        raise SystemExit(0)
    quick = _QUICK.get(tuple(args))
    # typer's own exceptions cannot arise without typer: until it is loaded (inside the
    # try, so that Ctrl-C while it loads is one line too) no clause below may name them.
    abort: type[BaseException] = _NeverRaised
    usage: type[BaseException] = _NeverRaised
    command = next((a for a in args if not a.startswith("-")), None)
    terminated = _unwind_on_sigterm()
    try:
        if quick is None:
            import typer
            from typer import TyperException

            abort, usage = typer.Abort, TyperException
        try:
            # messages of the functions the command calls name its options (errors.spelled)
            with command_line():
                if quick is not None:
                    status = getattr(importlib.import_module(quick[0]), quick[1])()
                else:
                    status = build_app(command)(
                        args=args, standalone_mode=False, prog_name="simsched"
                    )
        except SystemExit:
            if _stdout_was_closed():
                raise BrokenPipeError(errno.EPIPE, "Broken pipe") from None
            raise
        finally:
            sys.stdout.flush()
        if status == 130:  # typer's answer to KeyboardInterrupt
            _stopped(resumes, terminated)
    except KeyboardInterrupt:
        _stopped(resumes, terminated)
    except SystemError as exc:
        if interrupt_in(exc) is None:
            raise
        _stopped(resumes, terminated)  # Ctrl-C inside a compiled kernel's call back
    except abort:
        if terminated:  # click turns an interrupt into Abort in some places
            _stopped(resumes, terminated)
        fail("aborted")
    except usage as exc:  # a misspelt option, a missing or ill-typed value
        status = getattr(exc, "exit_code", 2)
        if not usage_message(exc):
            # a command group run bare: click has printed its help, and that says it all
            raise SystemExit(status) from None
        fail(usage_line(exc, command), status)
    except SimschedError as exc:
        if getattr(exc, "errno", None) == errno.EPIPE:
            # `-o /dev/stdout | head`: the output file is the pipe, its reader has enough
            _silence_stdout()
            raise SystemExit(0) from None
        fail(as_typed(str(exc), args))
    except MemoryError as exc:
        # The up-front estimate (simsched.machine.resources) covers the caches; anything
        # else too large for this host (huge inputs, page tables) still ends in one line.
        detail = str(exc) or "an allocation failed"
        fail(f"not enough memory on this host: {detail} (a smaller machine or input?)")
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # `simsched ... | head`: the reader has enough
            _silence_stdout()
            raise SystemExit(0) from None
        if exc.filename is not None:
            fail(f"{exc.filename}: {describe_os_error(exc)}")
        if _stdout_fails(exc):
            _silence_stdout()
            fail(f"standard output: {describe_os_error(exc)}")
        # No file named and standard output works: the error came from elsewhere (a write
        # to a file already open), and blaming standard output sent the user astray.
        fail(describe_os_error(exc))
    raise SystemExit(status if isinstance(status, int) else 0)


def _after_the_command() -> None:
    """The command has ended, its outputs whole and its status decided: ignore Ctrl-C from
    now on, and let SIGTERM end the process at once.

    The interpreter still shuts down (its threads joined, its ``atexit`` handlers run):
    a Ctrl-C then was a traceback from inside the shutdown, or, once Python had given the
    signal back its default action, the end of the process with status 130 and no word,
    after a run whose table was printed and whose ``result.json`` said ``ok``.  SIGTERM
    keeps its default action (status 143), so a shutdown that hangs can still be ended
    as a batch system ends a job; so can Ctrl-\\ (SIGQUIT).
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
