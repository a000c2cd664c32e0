"""``simsched profile``, ``simsched coarsen`` and ``simsched regrain`` (PDF paper §6).

Thin layers over :func:`simsched.profile.profile_trace`, :func:`simsched.profile.coarsen`
and :func:`simsched.profile.regrain_from_table`.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated

import typer

from simsched.canonical import strict_json
from simsched.cli._common import (
    as_written,
    console,
    err_console,
    print_json,
    print_table,
    written_float,
)
from simsched.errors import ConfigError
from simsched.files import check_not_input, folder_blocker, is_stream, named_for, same_file
from simsched.progress import plural


def _parse_sizes(text: str | None) -> list[int] | None:
    if text is None:
        return None
    from simsched.machine import parse_size

    if not text.strip():
        raise ConfigError("--sizes: no sizes given")
    out = []
    for i, item in enumerate(text.split(","), 1):
        item = item.strip()
        if not item:
            # a size left out by mistake ('16K,,64K') was skipped without a word
            raise ConfigError(f"--sizes {text!r}: item {i} is empty")
        try:
            out.append(int(parse_size(item)))
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"--sizes: {exc}") from None
    return out


def _human(n: int) -> str:
    for unit, f in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def profile_cmd(
    trace: Annotated[Path, typer.Argument(help="trace file (.sst)")],
    out: Annotated[Path | None, typer.Option("-o", "--out", help="profile file to write")] = None,
    sizes: Annotated[
        str | None,
        typer.Option(help="cache sizes of interest, comma separated (default 16K,32K,...,64M)"),
    ] = None,
    line: Annotated[
        int | None, typer.Option(help="line size in bytes (default: machine's, else the trace's)")
    ] = None,
    machine: Annotated[
        str | None,
        typer.Option(
            "--machine", "-m", help="take the line size from this machine's outermost cache"
        ),
    ] = None,
    json_: Annotated[
        bool, typer.Option("--json", help="print the whole program's misses per size as JSON")
    ] = False,
    verify: Annotated[
        bool,
        typer.Option(help="check the whole program's misses against a SetAssoc LRU replay"),
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(help="draw working set against group depth and the miss-ratio curve"),
    ] = None,
) -> None:
    """Profile the working set of every task group in one pass (LruTree, PDF paper §6.1)."""
    from simsched.profile import profile_trace
    from simsched.trace import open_trace

    sz = _parse_sizes(sizes)
    if out is not None and plot is not None and same_file(out, plot):
        # both are written at the end, the figure last: the profile would be lost
        raise ConfigError(
            f"--plot {plot}: is also the --out file; the figure would replace the profile "
            "(choose another file)"
        )
    for option, target in (("--out", out), ("--plot", plot)):
        if target is not None:
            check_not_input(target, option, {"the trace": trace})
            # both are written after the long pass, which a folder that cannot be made
            # would waste
            blocker = folder_blocker(target.parent)
            if blocker is not None:
                raise ConfigError(f"{option} {target}: {blocker}")
    if out is not None and not named_for(out, (".npz", ".prof")):
        # `-o prof.txt` or `-o prof.csv` wrote a compressed NumPy archive under that name
        raise ConfigError(f"--out {out}: a profile is a NumPy .npz archive; name it .npz or .prof")
    if plot is not None:
        from simsched.plotting import figure_format

        if figure_format(plot) == "pgf":  # refuse what cannot be written before the long pass
            from simsched.plotting.figures import check_tex

            check_tex(plot)
    # the line, the machine and the sizes are checked by profile_trace, before the pass
    with open_trace(trace) as t:
        if sys.stderr.isatty() and t.header.n_refs >= 10_000_000:
            from rich.progress import Progress

            with Progress(console=err_console, transient=True) as bar:
                task = bar.add_task("LruTree", total=t.header.n_refs)
                p = profile_trace(
                    t,
                    sizes=sz,
                    line=line,
                    machine=machine,
                    progress=lambda done, _n: bar.update(task, completed=done),
                )
        else:
            p = profile_trace(t, sizes=sz, line=line, machine=machine)
        result = p.program_misses()
        if verify:
            from simsched.profile import setassoc_misses

            which = p.groups.depth == 0
            ref = setassoc_misses(t, sizes=list(p.sizes), line=p.line, groups=p.groups, which=which)
            ok = bool((ref[0] == p.misses[0]).all())
            result["verified_against_setassoc"] = ok
            if not ok:
                raise ConfigError(
                    f"{trace}: LruTree and the SetAssoc replay disagree: "
                    f"{p.misses[0].tolist()} vs {ref[0].tolist()}"
                )
    if out is not None:
        p.save(out)
    if plot is not None:
        from simsched.profile.plots import plot_profile

        plot_profile(p, plot)
    if json_:
        print_json(result)
        return
    from rich.table import Table

    table = Table(title=f"{trace}: {result['accesses']:,} line accesses, {len(p.groups)} groups")
    table.add_column("cache size", justify="right")
    table.add_column("misses", justify="right")
    table.add_column("miss ratio", justify="right")
    for s in p.sizes:
        k = str(int(s))
        table.add_row(_human(int(s)), f"{result['misses'][k]:,}", f"{result['miss_ratio'][k]:.4f}")
    print_table(table)
    if verify:
        # --json carries the flag; without this line a passed check left no trace at all
        err_console.print("verified: the SetAssoc replay gives the same misses at every size")
    for written in (out, plot):
        if written is not None:
            err_console.print(f"wrote {written}")


def coarsen_cmd(
    profile: Annotated[Path, typer.Argument(help="profile written by `simsched profile -o`")],
    machine: Annotated[
        str, typer.Option("--machine", "-m", help="machine preset name or YAML file")
    ],
    factor: Annotated[
        float,
        typer.Option(
            "-K",
            "--factor",
            parser=written_float,
            metavar="<float>",
            help="multiplier of Eq. 3's right-hand side (> 0)",
        ),
    ] = 1.0,
    level: Annotated[
        str | None, typer.Option(help="cache level to divide (default: the outermost)")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="parallelization table (CSV) to write")
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="print a JSON summary")] = False,
) -> None:
    """Choose task groups to run sequentially on a machine (PDF paper §6.2, Eq. 3)."""
    from simsched.machine import load_machine
    from simsched.profile import Profile, cache_share, coarsen, write_table
    from simsched.profile.coarsen import MAX_FACTOR

    if not (math.isfinite(factor) and 0 < factor <= MAX_FACTOR):
        raise ConfigError(f"-K {as_written(factor)}: the factor is a finite number in (0, 1e6]")
    factor = float(factor)  # the summary prints a number, not the text
    if out is not None:
        if not named_for(out, (".csv",)):
            # `-o t.parquet` wrote CSV under that name, which a Parquet reader then refused
            raise ConfigError(f"--out {out}: the parallelization table is CSV; name it .csv")
        check_not_input(out, "--out", {"the profile": profile})
    p = Profile.load(profile)
    m = load_machine(machine)
    r = coarsen(p, m, factor=factor, level=level)
    share = cache_share(m, level)
    if out is not None:
        write_table(r.rows, out)
    summary = {
        "profile": str(profile),
        "machine": m.name,
        "cache": share.name,
        "cache_bytes": share.size,
        "cores": share.cores,
        "factor": factor,
        "strands": p.groups.n_strands,
        "chosen_groups": len(r.chosen),
        "merged_groups": len(r.rows),
        "tasks": r.tasks,
    }
    # -o /dev/stdout: the table is the output, so the summary goes where it cannot mix in
    to_stream = out is not None and is_stream(out)
    if json_:
        if to_stream:
            print(strict_json(summary), file=sys.stderr)
        else:
            print_json(summary)
        return
    (err_console if to_stream else console).print(
        f"{m.name}: {share.name} {_human(share.size)} shared by {plural(share.cores, 'core')}; "
        f"{plural(len(r.rows), 'group')} merged, {p.groups.n_strands} strands -> "
        f"{plural(r.tasks, 'task')}"
    )
    if out is not None and not to_stream:
        err_console.print(f"wrote {out}")


def regrain_cmd(
    trace: Annotated[Path, typer.Argument(help="fine-grained trace (.sst)")],
    table: Annotated[Path, typer.Option(help="parallelization table from `simsched coarsen`")],
    out: Annotated[Path, typer.Option("-o", "--out", help="coarse trace to write")],
    machine: Annotated[
        str | None,
        typer.Option(
            "--machine",
            "-m",
            help="use this machine's rows (if the table has several): preset name or YAML "
            "file, as coarsen takes it, or a machine name of the table",
        ),
    ] = None,
) -> None:
    """Write a trace in which every group of the table runs as one strand."""
    from simsched.profile import read_table, regrain_from_table
    from simsched.trace import open_trace

    rows = read_table(table)
    with open_trace(trace) as t:
        before = t.header.n_strands
        # refuses an --out that is the trace or the table before writing anything
        h = regrain_from_table(t, out, rows, machine=machine, table=table)
    merged = h.params.get("merged_groups", 0)
    if not merged:
        # an empty table: the rule chose no group of more than one strand
        err_console.print(
            f"{out}: the table chose no group to merge; {plural(before, 'strand')}, as in the trace"
        )
        return
    err_console.print(
        f"{out}: {plural(before, 'strand')} -> {plural(h.n_strands, 'strand')} "
        f"({plural(merged, 'group')} merged)"
    )


def register(app: typer.Typer) -> None:
    """Add ``profile``, ``coarsen`` and ``regrain`` to the ``simsched`` app."""
    app.command("profile")(profile_cmd)
    app.command("coarsen")(coarsen_cmd)
    app.command("regrain")(regrain_cmd)
