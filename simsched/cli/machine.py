"""``simsched machine``: list and show machine presets and files."""

from __future__ import annotations

from typing import Annotated

import typer

from simsched.cli._common import parse_kv, print_json
from simsched.cli._presets import print_presets
from simsched.progress import plural

machine_app = typer.Typer(help="List and show simulated machines.", no_args_is_help=True)


@machine_app.command("list")
def list_cmd() -> None:
    """List the machine presets."""
    print_presets()


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
    # Left unset, coherence follows the core count: the file keeps it unset (a comment
    # says what it is), so that it loads back as the same machine as the one shown,
    # records and sweep point ids included; --json gives the effective value.
    unset = m.coherence is None
    if unset:
        d.pop("coherence", None)
    r = routes(m)
    prices = steal_costs(m)
    if json_:
        d["coherence"] = m.coherent
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
    if unset:
        state = "on" if m.coherent else "off"
        print(f"# coherence: {state} (unset: on when the machine has more than one core)")
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
