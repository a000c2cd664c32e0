"""``simsched machine list`` on rich alone: the presets' rows, cached, and their table.

:func:`simsched.cli.main` runs ``simsched machine list`` through :func:`print_presets`
without building the typer application: typer imports pydantic, and the two cost most of
the command's CPU time (docs/performance.md, "Start-up"), while the rows come from a
cache and need neither.  ``simsched machine list`` with any option still goes through
typer (:mod:`simsched.cli.machine`), which calls the same function.
"""

from __future__ import annotations

import json


def _fmt_size(n: int) -> str:
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def preset_rows() -> list[list[str]]:
    """The rows of ``machine list``: name, cores, caches and memory of every preset.

    Loading the presets validates them with pydantic, which costs more CPU than the rest of
    the command, so the rows are cached under a hash of the machine package's source and of
    this module (:func:`simsched.identity.source_identity`): editing a preset, the schema or
    the formatting makes new rows.  The cache is optional; a folder that cannot be written
    only costs the time.

    Returns
    -------
    list of list of str
        One row per preset, in :func:`simsched.machine.preset_names` order.
    """
    from simsched.files import cache_dir, write_json_atomic
    from simsched.identity import source_identity

    key = source_identity(("machine", "cli/_presets.py"))[:20]
    path = cache_dir("machine-list", f"{key}.json")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(rows, list) and all(
            isinstance(r, list) and len(r) == 4 and all(isinstance(c, str) for c in r) for r in rows
        ):
            return rows
    except (OSError, ValueError):
        pass
    from simsched.machine import load_machine, preset_names

    rows = []
    for name in preset_names():
        m = load_machine(name)
        caches = ", ".join(f"{c.name} {_fmt_size(c.size)}/{c.scope}" for c in m.caches)
        rows.append(
            [
                name,
                f"{m.sockets}×{m.cores_per_socket}" if m.sockets > 1 else str(m.cores),
                caches,
                f"{m.memory.latency} cyc, 1 line/{m.memory.service_interval} cyc",
            ]
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, rows)
    except OSError:
        pass
    return rows


def print_presets() -> None:
    """Print the table of ``simsched machine list`` on standard output."""
    from rich.table import Table

    from simsched.cli._table import print_table

    table = Table("name", "cores", "caches", "memory")
    for row in preset_rows():
        table.add_row(*row)
    print_table(table)
