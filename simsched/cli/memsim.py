"""``simsched memsim``: replay a trace through a machine's memory model, no scheduler.

A thin layer over :func:`simsched.memory.replay.replay_trace`: the tool a user runs to
compare simsched's cache model with another cache simulator or with cachegrind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Column, Table

from simsched.cli._common import (
    JsonOpt,
    MachineOpt,
    MachineSetOpt,
    console,
    parse_kv,
    print_json,
    print_table,
)


def memsim(
    machine: MachineOpt,
    trace: Annotated[Path, typer.Option("--trace", "-t", help="trace file (.sst)")],
    core_of_strand: Annotated[
        str,
        typer.Option(
            "--core-of-strand",
            help="0: every strand on core 0; rr: strand s on core s mod cores",
        ),
    ] = "0",
    set_: MachineSetOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Replay TRACE's references in serial order and print per-level cache statistics."""
    from simsched.machine import load_machine
    from simsched.machine.resources import check_fits
    from simsched.memory.replay import replay_trace

    m = load_machine(machine, parse_kv(set_, "--set"))
    check_fits(m, machine)
    res = replay_trace(m, trace, core_of_strand)
    if json_:
        print_json(res)
        return
    console.print(
        f"{res['trace']} on {res['machine']} "
        f"(strands on core {'s mod ' + str(m.cores) if core_of_strand == 'rr' else '0'}): "
        f"{res['refs']:,} references, {res['extra_lines']:,} extra line accesses from "
        f"straddling references, {res['cycles']:,} cycles"
    )
    # One column per cache level: a deep hierarchy stays readable at 80 columns.
    levels = res["levels"]
    table = Table("per level", *[Column(lv["name"], justify="right") for lv in levels])
    rows = [
        ("scope", lambda lv: lv["scope"]),
        ("accesses", lambda lv: f"{lv['accesses']:,}"),
        ("hits", lambda lv: f"{lv['hits']:,}"),
        ("misses", lambda lv: f"{lv['misses']:,}"),
        (
            "miss ratio",
            lambda lv: f"{lv['misses'] / lv['accesses']:.4f}" if lv["accesses"] else "0.0000",
        ),
        ("write-backs", lambda lv: f"{lv['writebacks']:,}"),
        ("invalidations", lambda lv: f"{lv['invalidations']:,}"),
        ("back-invalidations", lambda lv: f"{lv['back_invalidations']:,}"),
    ]
    for label, cell in rows:
        table.add_row(label, *[cell(lv) for lv in levels])
    print_table(table)
    nodes = Table(
        "node",
        *[Column(h, justify="right") for h in ("local", "remote", "write-backs", "busy", "queue")],
        caption="DRAM lines per memory node; busy and queue delay in cycles",
    )
    for i, n in enumerate(res["nodes"]):
        nodes.add_row(
            str(i),
            f"{n['local']:,}",
            f"{n['remote']:,}",
            f"{n['writebacks']:,}",
            f"{n['busy_cycles']:,}",
            f"{n['queue_delay']:,}",
        )
    print_table(nodes)
    if "links" in res:
        # Remote fetches and write-backs cross these; without them a machine with links
        # showed remote lines but not where they waited.
        links = Table(
            *[Column(h, justify="right") for h in ("from", "to", "lines", "busy", "queue")],
            caption="lines carried per directed socket link; busy and queue delay in cycles",
        )
        for ln in res["links"]:
            links.add_row(
                str(ln["from"]),
                str(ln["to"]),
                f"{ln['lines']:,}",
                f"{ln['busy_cycles']:,}",
                f"{ln['queue_delay']:,}",
            )
        print_table(links)
    if "prefetch" in res:
        # The prefetcher's memory fetches count in the nodes' local and remote lines but
        # in no level's misses: without this line the nodes' DRAM lines exceeded the
        # last level's misses with no word why.
        pf = res["prefetch"]
        console.print(
            f"prefetcher at {pf['level']}: {pf['issued']:,} lines issued "
            f"({pf['beyond']:,} from beyond the per-core levels), {pf['useful']:,} useful "
            f"({pf['late']:,} of them late), {pf['useless']:,} useless; its memory fetches "
            "count in the nodes' local and remote lines, not in any level's misses"
        )
    console.print(f"off-chip traffic: {res['offchip_bytes']:,} bytes")


def register(app: typer.Typer) -> None:
    """Add the ``memsim`` command to ``app``."""
    app.command("memsim")(memsim)
