"""The command line's consoles and tables, on rich alone.

Kept apart from :mod:`simsched.cli._common` (which needs typer for its option types) so a
command that only prints a table, ``simsched machine list``, can run without importing
typer: typer loads pydantic, and the two cost about three times the command's own work
(docs/performance.md, "Start-up").

The consoles print text as it is (no rich markup, so a label such as ``heat[iters=2]`` or a
path with brackets is never eaten) and never wrap a message; tables go through
:func:`print_table`, which keeps every cell whole at any terminal width and when piped.
"""

from __future__ import annotations

import errno

from rich.console import Console
from rich.table import Table

from simsched.errors import one_line


class _Console(Console):
    """A rich console that reports a closed pipe as ``BrokenPipeError``: rich's own answer
    is a silent ``exit(1)``, while ``simsched ... | head`` is a normal way to read output
    (:func:`simsched.cli.main` ends it quietly with status 0)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


console = _Console(markup=False, highlight=False, soft_wrap=True)
err_console = _Console(stderr=True, markup=False, highlight=False, soft_wrap=True)


def print_warning(message: str) -> None:
    """One ``warning:`` line on stderr, written out as an error's line is
    (:func:`simsched.errors.one_line`): a warning names a file or a label as given, and a
    newline or an escape sequence in it split the line or ran on the terminal."""
    err_console.print(f"warning: {one_line(message)}")


def print_table(table: Table, target: Console | None = None) -> None:
    """Print ``table`` with every cell whole.

    At a terminal, cells that do not fit wrap inside their column instead of being cut
    (``36,6…``); piped or redirected, the table is as wide as its content needs, so a file
    or ``grep`` sees every number on one line.

    Parameters
    ----------
    table
        The table; its columns are set to fold.
    target
        The console to print on (default: standard output's).
    """
    target = target or console
    for col in table.columns:
        col.overflow = "fold"
    if target.is_terminal:
        target.print(table)
        return
    wide = _Console(file=target.file, width=10_000, markup=False, highlight=False)
    need = wide.measure(table).maximum
    _Console(file=target.file, width=max(need, 40), markup=False, highlight=False).print(table)
