"""``simsched trace``: generate, import, inspect and validate traces."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from simsched.cli._common import (
    ProgressOpt,
    check_line,
    console,
    err_console,
    parse_kv,
    plugin_warnings,
    print_json,
    print_table,
    print_warning,
    want_progress,
)
from simsched.errors import ConfigError
from simsched.files import atomic_output
from simsched.params import name_text
from simsched.progress import plural

trace_app = typer.Typer(help="Generate, import, inspect and validate traces.", no_args_is_help=True)


@trace_app.command("gen")
def gen(
    name: Annotated[str, typer.Argument(help="workload: see `simsched trace gen --list`")] = "",
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="generator parameter key=value")
    ] = None,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="output trace (.sst)")] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="list the workloads (or the one named) and parameters")
    ] = False,
    progress: ProgressOpt = None,
) -> None:
    """Generate a synthetic workload trace."""
    from simsched.workloads import CHUNK_PARAM, GENERATORS, generate, params_of

    if list_:
        # `--list` makes no trace: an output or parameters given beside it were ignored
        # without a word, and the user waited for a file that never came.
        if out is not None or param:
            extra = " and ".join(x for x, v in (("-o", out is not None), ("-p", bool(param))) if v)
            raise ConfigError(f"trace gen --list makes no trace: drop {extra}, or drop --list")
        plugin_warnings(GENERATORS)
        # with a name, that workload alone: `trace gen heat --list` asks for heat's parameters
        names = [GENERATORS.get(name).name] if name else GENERATORS.names()
        for wname in names:
            console.print(Text.assemble((wname, "bold"), f"  {GENERATORS.get(wname).summary}"))
            for pname, (default, doc) in params_of(wname).items():
                console.print(f"  {pname} = {default!r}  {doc}")
        # taken by every workload but in no one's table: the listing never showed it
        c = CHUNK_PARAM
        console.print(Text.assemble(("every workload", "bold"), "  also takes"))
        console.print(f"  {c.name} = {c.default!r}  (int in [{c.minimum}, {c.maximum}]) {c.help}")
        return
    if not name:
        raise ConfigError(
            f"trace gen: no workload given (one of {', '.join(GENERATORS.names())}; --list shows "
            "their parameters)"
        )
    if out is None:
        raise ConfigError("trace gen: no output given (-o OUT.sst)")
    params = parse_kv(param, "--param")
    with atomic_output(out) as tmp, _reporter(progress, f"generating {name}", "references") as bar:
        h = generate(name, tmp, progress=bar, **params)
    err_console.print(
        f"{out}: {h.n_strands:,} strands, {h.n_frames:,} frames, {h.n_refs:,} references, "
        f"{h.n_instructions:,} instructions"
    )


@trace_app.command("info")
def info(
    trace: Annotated[Path, typer.Argument(help="trace file (.sst)")],
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    line: Annotated[int | None, typer.Option(help="line size for the footprint")] = None,
    progress: ProgressOpt = None,
) -> None:
    """Print a trace's counts, footprint, work, span, parallelism and DAG shape."""
    from simsched.trace import summary

    with _reporter(progress, f"{trace.name}: footprint", "references") as bar:
        s = summary(trace, line=check_line(line), progress=bar)
    if json_:
        print_json(s)
        return
    table = Table(title=str(trace), show_header=False)
    for k, v in s.items():
        table.add_row(k, _cell(k, v))
    print_table(table)


def _cell(key: str, v) -> str:
    """One value of ``trace info``'s table; the DAG-shape statistics on one line each."""
    if isinstance(v, float):
        return f"{v:,.3f}"
    if key == "branching":
        hist = ", ".join(f"{d}: {c}" for d, c in v["histogram"])
        return f"{v['min']}-{v['max']}, mean {v['mean']:.3f} (degree: groups  {hist})"
    if key == "branching_by_level":
        return "\n".join(
            f"level {r['level']}: {plural(r['groups'], 'group')}, {r['min']}-{r['max']}, "
            f"mean {r['mean']:.3f}"
            for r in v
        )
    if key == "repeat":
        s0, s1 = v["strands"]
        return (
            f"strands {s0}-{s1 - 1} run {plural(v['count'], 'time')} "
            f"(iterations +{v['iteration_stride']} "
            f"each); the file stores {v['stored_strands']} strands, {v['stored_refs']} "
            f"references in {plural(v['stored_chunks'], 'chunk')}"
        )
    if key == "frames_per_iteration":
        return f"{v['min']}-{v['max']}, mean {v['mean']:.3f}"
    return str(v)


@trace_app.command("validate")
def validate_cmd(trace: Annotated[Path, typer.Argument(help="trace file (.sst)")]) -> None:
    """Check a trace completely: digest, every chunk, DAG structure and counts."""
    from simsched.trace import validate

    r = validate(trace)
    console.print(
        f"{trace}: ok ({r['strands']:,} strands, {r['frames']:,} frames, {r['refs']:,} "
        f"references, {r['chunks']:,} chunks)"
    )


@trace_app.command("import")
def import_cmd(
    raw: Annotated[Path, typer.Argument(help="raw capture stream (plain or .zst)")],
    out: Annotated[Path, typer.Option("-o", "--out", help="output trace (.sst)")],
    program: Annotated[
        str,
        typer.Option(
            help="program name for the header; a capture records the program's file name "
            "(msort for ./msort)"
        ),
    ] = "",
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            help="an argument of the program for the header (repeatable): with --program, "
            "re-importing `capture --raw`'s stream gives the capture's trace",
        ),
    ] = None,
    iterations: Annotated[
        str,
        typer.Option(
            "--iterations", help="auto (SS_ITER markers, else found from the DAG) | markers | none"
        ),
    ] = "auto",
    progress: ProgressOpt = None,
) -> None:
    """Convert a raw capture stream into a trace."""
    from simsched.trace.iterations import check_iterations_mode

    check_iterations_mode(iterations)
    from simsched.trace import import_raw

    warnings: list[str] = []
    refused: list[str] = []
    with _reporter(progress, f"importing {raw.name}", "records") as bar:
        h = import_raw(
            raw,
            out,
            program=program or name_text(raw.stem),
            args=list(arg or []),
            progress=bar,
            iterations=iterations,
            warn=warnings.append,
            iterations_refused=refused.append,
        )
    for w in warnings:
        print_warning(w)
    for why in refused:
        err_console.print(
            f"{out}: no iterations: the steps of the time loop in the Cilk function main "
            f"calls repeat, but marking them there was refused: {why}"
        )
    err_console.print(
        f"{out}: {h.n_strands:,} strands, {h.n_refs:,} references, {h.n_instructions:,} instructions "
        f"(from {raw.stat().st_size:,} raw bytes)"
    )


def _reporter(flag: bool | None, label: str, unit: str) -> Any:
    """A progress reporter for a long step (a callback), or a no-op when not asked for."""
    if not want_progress(flag):
        return contextlib.nullcontext(None)
    from simsched.progress import Progress

    return Progress(label, unit=unit)


def register(app: typer.Typer) -> None:
    """Add the ``trace`` group."""
    app.add_typer(trace_app, name="trace")
