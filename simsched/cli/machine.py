"""``simsched machine``: list and show machine presets and files."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from simsched.cli._common import parse_kv, print_json, print_table
from simsched.progress import plural

machine_app = typer.Typer(help="List and show simulated machines.", no_args_is_help=True)


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
    """
    from simsched.files import cache_dir, write_json_atomic
    from simsched.identity import source_identity

    key = source_identity(("machine", "cli/machine.py"))[:20]
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


@machine_app.command("list")
def list_cmd() -> None:
    """List the machine presets."""
    table = Table("name", "cores", "caches", "memory")
    for row in preset_rows():
        table.add_row(*row)
    print_table(table)


@machine_app.command("show")
def show(
    machine: Annotated[str, typer.Argument(help="preset name or YAML file")],
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="override a field: key=value (dotted)")
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Show a machine fully resolved (defaults filled in, sizes in bytes).

    The YAML is a machine file (``simsched run -m`` loads it back); derived values (cores,
    sets per cache) are comments in it and fields of the ``--json`` output.
    """
    import yaml

    from simsched.machine import load_machine
    from simsched.machine.topology import routes, steal_costs

    m = load_machine(machine, parse_kv(set_, "--set"))
    d = m.as_dict()
    d["coherence"] = m.coherent
    r = routes(m)
    prices = steal_costs(m)
    if json_:
        d["cores"] = m.cores
        if r is not None:
            d["hops"] = r.hops
        d["steal_costs"] = prices
        for c, cd in zip(m.caches, d["caches"], strict=True):
            cd["sets"] = c.sets
        print_json(d)
        return
    sets = ", ".join(f"{c.name} {c.sets} sets" for c in m.caches)
    # Plain print: a console would wrap long lines and break the YAML.
    cores = plural(m.cores, "core")
    print(f"# {m.name}: {cores} ({m.sockets} × {m.cores_per_socket}); {sets}")
    if r is not None:
        print("# hops between sockets (row: from, column: to):")
        for row in r.hops:
            print("#   " + " ".join(str(h) for h in row))
    if m.sockets > 1:
        print("# cycles of a steal or pool operation by socket (row: thief, column: victim):")
        for row in prices:
            print("#   " + " ".join(str(x) for x in row))
    print(yaml.safe_dump(d, sort_keys=False, width=10_000, allow_unicode=True), end="")


def register(app: typer.Typer) -> None:
    """Add the ``machine`` group."""
    app.add_typer(machine_app, name="machine")
