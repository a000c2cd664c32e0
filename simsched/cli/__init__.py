"""The ``simsched`` command line.

Each command is a thin layer over a documented public function; the command modules
(``simsched/cli/<group>.py``) each expose ``register(app)``.  User errors
(:class:`simsched.errors.SimschedError`) become one line on stderr and exit status 2.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
from typing import NoReturn

import typer
from typer import TyperException

from simsched.errors import SimschedError
from simsched.files import describe_os_error

app = typer.Typer(
    name="simsched",
    help="Trace-driven CMP/NUMA task-scheduling simulator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One line per command module; the order is the order of --help.
_COMMAND_MODULES = [
    "simsched.cli.trace",
    "simsched.cli.machine",
    "simsched.cli.memsim",
    "simsched.cli.capture",
    "simsched.cli.sweep",
    "simsched.cli.profile",
    "simsched.cli.run",
    "simsched.cli.plot",
    "simsched.cli.export",
]


def _print_version(value: bool) -> None:
    if value:
        from simsched.identity import version

        print(f"simsched {version()}")
        raise typer.Exit()


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


for _name in _COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def fail(message: str, status: int = 2) -> NoReturn:
    """Print a one-line user error and exit with ``status`` (2 by default)."""
    print(f"simsched: error: {message}", file=sys.stderr)
    raise SystemExit(status)


def _silence_stdout() -> None:
    # stdout is broken (full device, closed pipe): point it at /dev/null so the
    # interpreter's final flush does not print a second error.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``simsched`` console script.

    A user error (:class:`simsched.errors.SimschedError`, a bad option, a file that
    cannot be read or written) ends in one line on stderr and exit status 2; Ctrl-C ends in
    one line and status 130.
    """
    interrupted = "interrupted; finished work is kept, run the command again to resume"
    try:
        try:
            status = app(args=argv, standalone_mode=False)
        finally:
            sys.stdout.flush()
        if status == 130:  # typer's answer to KeyboardInterrupt
            fail(interrupted, 130)
    except KeyboardInterrupt:
        fail(interrupted, 130)
    except typer.Abort:
        fail("aborted")
    except TyperException as exc:  # usage errors: typer's own (rich) one-paragraph message
        try:
            from typer import rich_utils

            rich_utils.rich_format_error(exc)  # type: ignore[arg-type]
        except (ImportError, AttributeError):
            exc.show()  # type: ignore[attr-defined]
        raise SystemExit(getattr(exc, "exit_code", 2)) from None
    except SimschedError as exc:
        fail(str(exc))
    except MemoryError as exc:
        # The up-front estimate (simsched.machine.resources) covers the caches; anything
        # else too large for this host (huge inputs, page tables) still ends in one line.
        detail = str(exc) or "an allocation failed"
        fail(f"not enough memory on this host: {detail} (a smaller machine or input?)")
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # `simsched ... | head`: the reader has enough
            _silence_stdout()
            raise SystemExit(0) from None
        where = exc.filename if exc.filename is not None else "standard output"
        if exc.filename is None:
            _silence_stdout()
        fail(f"{where}: {describe_os_error(exc)}")
    raise SystemExit(status if isinstance(status, int) else 0)
