"""``simsched memsim``: replay a trace through a machine's memory model, no scheduler.

A thin layer over :func:`simsched.memory.replay.replay_trace`: the tool a user runs to
compare simsched's cache model with another cache simulator or with cachegrind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from simsched.cli._common import console, parse_kv, print_json


def memsim(
    machine: Annotated[str, typer.Option("--machine", "-m", help="preset name or YAML file")],
    trace: Annotated[Path, typer.Option("--trace", "-t", help="trace file (.sst)")],
    core_of_strand: Annotated[
        str,
        typer.Option(
            "--core-of-strand",
            help="0: every strand on core 0; rr: strand s on core s mod cores",
        ),
    ] = "0",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="override a machine field: key=value")
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Replay TRACE's references in serial order and print per-level cache statistics."""
    from simsched.machine import load_machine
    from simsched.memory.replay import replay_trace

    m = load_machine(machine, parse_kv(set_, "--set"))
    res = replay_trace(m, trace, core_of_strand)
    if json_:
        print_json(res)
        return
    console.print(
        f"[bold]{res['trace']}[/] on [bold]{res['machine']}[/] "
        f"(strands on core {'s mod ' + str(m.cores) if core_of_strand == 'rr' else '0'}): "
        f"{res['refs']:,} references, {res['extra_lines']:,} extra line accesses from "
        f"straddling references, {res['cycles']:,} cycles"
    )
    table = Table(
        "level",
        "scope",
        "accesses",
        "hits",
        "misses",
        "miss ratio",
        "write-backs",
        "invalidations",
        "back-inval.",
    )
    for lvl in res["levels"]:
        ratio = lvl["misses"] / lvl["accesses"] if lvl["accesses"] else 0.0
        table.add_row(
            lvl["name"],
            lvl["scope"],
            f"{lvl['accesses']:,}",
            f"{lvl['hits']:,}",
            f"{lvl['misses']:,}",
            f"{ratio:.4f}",
            f"{lvl['writebacks']:,}",
            f"{lvl['invalidations']:,}",
            f"{lvl['back_invalidations']:,}",
        )
    console.print(table)
    nodes = Table("node", "local", "remote", "write-backs", "busy cycles", "queue delay")
    for i, n in enumerate(res["nodes"]):
        nodes.add_row(
            str(i),
            f"{n['local']:,}",
            f"{n['remote']:,}",
            f"{n['writebacks']:,}",
            f"{n['busy_cycles']:,}",
            f"{n['queue_delay']:,}",
        )
    console.print(nodes)
    console.print(f"off-chip traffic: {res['offchip_bytes']:,} bytes")


def register(app: typer.Typer) -> None:
    """Add the ``memsim`` command to ``app``."""
    app.command("memsim")(memsim)
