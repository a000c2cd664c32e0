"""The ``simsched`` command line.

Each command is a thin layer over a documented public function; the command modules
(``simsched/cli/<group>.py``) each expose ``register(app)``.  User errors
(:class:`simsched.errors.SimschedError`) become one line on stderr and exit status 2.
"""

from __future__ import annotations

import importlib
import sys

import typer

from simsched.errors import SimschedError

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
]

for _name in _COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def fail(message: str) -> None:
    """Print a one-line user error and exit with status 2."""
    print(f"simsched: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``simsched`` console script."""
    try:
        app(args=argv, standalone_mode=True)
    except SimschedError as exc:
        fail(str(exc))
    except FileNotFoundError as exc:
        fail(f"{exc.filename}: no such file")
    except IsADirectoryError as exc:
        fail(f"{exc.filename}: is a directory")
    except PermissionError as exc:
        fail(f"{exc.filename}: permission denied")
