"""``simsched calibrate``: microbenchmarks on a machine's memory model beside published
figures (a thin layer over :func:`simsched.memory.calibrate.calibrate`)."""

from __future__ import annotations

import typer
from rich.table import Column, Table

from simsched.cli._common import (
    JsonOpt,
    MachineOpt,
    MachineSetOpt,
    parse_kv,
    print_json,
    print_table,
)


def calibrate(
    machine: MachineOpt,
    set_: MachineSetOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Measure latency and STREAM bandwidth on the model and print the published figures."""
    from simsched.errors import ConfigError
    from simsched.machine import load_machine
    from simsched.machine.resources import check_fits
    from simsched.memory.calibrate import calibrate as run_calibration

    m = load_machine(machine, parse_kv(set_, "--set"))
    if m.clock_ghz is None:
        # named as given: a file's machine name need not say which file it is
        raise ConfigError(
            f"{machine}: clock_ghz is not set (calibrate reports ns and GB/s; give it, e.g. "
            "--set clock_ghz=2.5)"
        )
    check_fits(m, machine)
    res = run_calibration(m)
    if json_:
        print_json(res)
        return
    # A machine without published figures (one's own file) gets the simulated column
    # only: three columns of dashes beside it said nothing.
    compared = any(r["published"] is not None for r in res["rows"])
    extra = (
        [
            Column("published", justify="right"),
            Column("sim/pub", justify="right"),
            Column("source"),
        ]
        if compared
        else []
    )
    table = Table(
        "metric",
        Column("unit"),
        Column("simulated", justify="right"),
        *extra,
        caption=f"{res['machine']}: the memory model's microbenchmarks (docs/machine-model.md §11)",
    )
    for r in res["rows"]:
        pub = r["published"]
        cells = [r["metric"], r["unit"], f"{r['simulated']:.2f}"]
        if compared:
            cells += [
                "—" if pub is None else f"{pub:.2f}",
                "—" if pub is None else f"{r['simulated'] / pub:.2f}",
                r["source"],
            ]
        table.add_row(*cells)
    print_table(table)


def register(app: typer.Typer) -> None:
    """Add the ``calibrate`` command to ``app``."""
    app.command("calibrate")(calibrate)
