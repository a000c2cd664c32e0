"""``simsched sweep`` (run, status) and ``simsched results`` (show, export).

Thin layers over :mod:`simsched.experiments`: :func:`~simsched.experiments.run_sweep`,
:func:`~simsched.experiments.sweep_status`, :func:`~simsched.experiments.load_results` and
:func:`~simsched.experiments.export_results`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from simsched.cli._common import print_table, print_warning
from simsched.progress import duration, plural

if TYPE_CHECKING:
    from simsched.experiments.spec import LoadedSpec

sweep_app = typer.Typer(help="Run sweeps of simulations from a YAML spec.", no_args_is_help=True)
results_app = typer.Typer(help="Show and export the results of sweeps.", no_args_is_help=True)

_SMALL = typer.Option("--small", help="run the spec's small variant (also SIMSCHED_SMALL=1)")
# `sweep status` runs nothing: its --small says which points it checks and counts
_SMALL_STATUS = typer.Option(
    "--small", help="check and count the points of the spec's small variant (also SIMSCHED_SMALL=1)"
)
_SET = typer.Option("--set", help="edit the spec before validation: key.path=value (YAML value)")

# Columns ``results show`` prints when --columns is not given (those that exist).
DEFAULT_COLUMNS = [
    "point_id",
    "workload",
    "machine",
    "cores",
    "scheduler",
    "seed",
    "status",
    "makespan_cycles",
    "speedup",
    "mpki",
    "L2_misses",
    "error",
]


def _small_checked(loaded: LoadedSpec, small: bool) -> LoadedSpec:
    """``loaded``, after a warning when ``--small`` was given for a spec it changes nothing
    in: `sweep run experiments/laws/published.yaml --small` started the full-size study
    without a word."""
    spec = loaded.spec
    if small and spec.small.machines is None and spec.small.seeds is None:
        if not any(w.small for w in spec.workloads):
            _warn(
                f"--small: {loaded.shown} has no small variant (no small section, no "
                "workload's small values): it runs as written"
            )
    return loaded


@sweep_app.command("run")
def run_cmd(
    spec: Annotated[Path, typer.Argument(help="sweep spec (YAML)")],
    executor: Annotated[str, typer.Option(help="local or dask")] = "local",
    workers: Annotated[
        int,
        # max: runner.MAX_WORKERS (not imported: the command module loads without it); the
        # runner's own check named the option workers=5000, not --workers
        typer.Option(
            min=0, max=1024, help="worker processes (local; 0 = in this process) or Dask size"
        ),
    ] = 2,
    address: Annotated[
        str | None, typer.Option(help="tcp://HOST:PORT of a running Dask scheduler")
    ] = None,
    small: Annotated[bool, _SMALL] = False,
    set_: Annotated[list[str] | None, _SET] = None,
    retry_failed: Annotated[bool, typer.Option(help="rerun points that failed")] = False,
    rerun_stale: Annotated[
        bool,
        typer.Option(help="rerun finished points that other simsched or plug-in code simulated"),
    ] = False,
    progress: Annotated[
        bool,
        typer.Option(
            help="report progress on stderr: a bar at a terminal, else a plain line when "
            "points have finished, at most one every 10 s"
        ),
    ] = True,
    point_fn: Annotated[
        str | None,
        typer.Option("--point-fn", help="MODULE:FUNCTION run per point instead of the simulation"),
    ] = None,
) -> None:
    """Run every unfinished point of SPEC; finished points are skipped."""
    from simsched.experiments import load_spec, run_sweep
    from simsched.experiments.point import resolve_point_function

    loaded = _small_checked(load_spec(spec, small=True if small else None, sets=set_), small)
    report = run_sweep(
        loaded,
        point_fn=resolve_point_function(point_fn),
        executor=executor,  # type: ignore[arg-type]
        workers=workers,
        address=address,
        retry_failed=retry_failed,
        rerun_stale=rerun_stale,
        progress=progress,
    )
    # A point that failed in an earlier run is skipped and still failed: "skipped 14
    # (already done), failed 2" of 14 points read as 16 points, two of them not done.
    skipped = (
        f"already run: {report.skipped - report.failed_before} done, {report.failed_before} failed"
        if report.failed_before
        else "already done"
    )
    print(
        f"{loaded.spec.name}: {plural(report.total, 'point')}, ran {report.ran}, "
        f"skipped {report.skipped} ({skipped}), failed {report.failed}, "
        f"{report.wall_s:.1f} s; results in {report.out_dir}",
        file=sys.stderr,
    )
    for pid, msg in report.failures[:10]:
        print(f"  failed {pid}: {msg}", file=sys.stderr)
    if len(report.failures) > 10:
        print(f"  ... and {len(report.failures) - 10} more", file=sys.stderr)
    if report.elsewhere:
        print(
            f"  {plural(report.elsewhere, 'point')} {_were(report.elsewhere)} run by another "
            "`sweep run` of this sweep",
            file=sys.stderr,
        )
    if report.stale:
        print(
            f"  {plural(report.stale, 'finished point')} {_were(report.stale)} simulated by "
            f"other simsched or plug-in code (changed since); --rerun-stale runs {_them(report.stale)} "
            "again",
            file=sys.stderr,
        )
    if report.interrupted:
        pid, msg = report.interrupted[0]
        print(
            f"{plural(len(report.interrupted), 'point')} could not finish for want of disk "
            f"space ({pid}: {msg}); "
            + ("it stays" if len(report.interrupted) == 1 else "they stay")
            + " pending: free space and run the command again",
            file=sys.stderr,
        )
    if report.table_error:
        print(
            f"{report.table_error}; the table is rebuilt from the points' rows by the next "
            "`sweep run` or `results show` once there is space",
            file=sys.stderr,
        )
    if report.failed and retry_failed:
        # "run again with --retry-failed" after --retry-failed sent the user round in a loop
        out = report.out_dir
        print(
            f"{plural(report.failed, 'point')} failed, with --retry-failed; each error and "
            f"its traceback are in the point's {out}/points/ID/row.json (`simsched results "
            f"show {out} --where 'status!=ok' --columns point_id,error`): fix the cause "
            f"before retrying {_them(report.failed)}",
            file=sys.stderr,
        )
    elif report.failed:
        print(
            f"{plural(report.failed, 'point')} failed; run again with --retry-failed to "
            f"retry {_them(report.failed)}",
            file=sys.stderr,
        )
    if report.failed or report.interrupted or report.table_error:
        raise typer.Exit(1)


@sweep_app.command("status")
def status_cmd(
    spec: Annotated[Path, typer.Argument(help="sweep spec (YAML)")],
    small: Annotated[bool, _SMALL_STATUS] = False,
    set_: Annotated[list[str] | None, _SET] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    point_fn: Annotated[
        str | None,
        typer.Option("--point-fn", help="as for `sweep run` (its workloads are not checked)"),
    ] = None,
) -> None:
    """Check SPEC whole, then count its points that are done, failed and missing."""
    from simsched.cli._common import print_json
    from simsched.experiments import load_spec, sweep_status
    from simsched.experiments.point import resolve_point_function
    from simsched.experiments.spec import check_spec

    loaded = _small_checked(load_spec(spec, small=True if small else None, sets=set_), small)
    resolve_point_function(point_fn)  # as `sweep run` would, so that status does not pass it
    check_spec(loaded, generators=point_fn is None)
    status = sweep_status(loaded)
    if json_:
        print_json(status)
        return
    print(
        f"{status['sweep']}: {plural(status['total'], 'point')}: {status['ok']} done, "
        f"{status['failed']} failed, {status['missing']} missing"
        + (
            f"; {status['stale']} done by other simsched or plug-in code (sweep run --rerun-stale)"
            if status["stale"]
            else ""
        )
        + (
            f"; {plural(status['orphans'], 'row')} of points no longer in the spec"
            if status["orphans"]
            else ""
        )
        + (
            f"; {status['trace_changed']} of the missing {_were(status['trace_changed'])} run "
            "on a trace file that holds another trace since (sweep run runs "
            f"{_them(status['trace_changed'])} again)"
            if status["trace_changed"]
            else ""
        )
        + (f"; {len(status['running'])} running" if status["running"] else "")
        + f" ({status['out']})"
    )
    now = time.time()
    for r in status["running"]:
        where = "this host" if r["alive"] else r["host"]
        print(
            f"  running for {duration(now - r['since'])}: {r['workload']}, {r['machine']}, "
            f"{r['scheduler']}, seed {r['seed']} (pid {r['pid']} on {where})"
        )


@results_app.command("show")
def show_cmd(
    path: Annotated[Path, typer.Argument(help="sweep output folder or results file")],
    where: Annotated[
        list[str] | None,
        typer.Option("--where", help="filter COLUMN OP VALUE (= != < <= > >=; a|b), repeatable"),
    ] = None,
    columns: Annotated[
        str | None, typer.Option("--columns", help="comma-separated columns to print")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json")] = "table",
    list_columns: Annotated[
        bool,
        typer.Option(
            help="print the column names (one a line) and exit; takes no --where, --columns "
            "or --format"
        ),
    ] = False,
) -> None:
    """Print a sweep's results, one row per point."""
    from simsched.errors import ConfigError
    from simsched.experiments.store import filter_frame, load_results, select_columns

    if list_columns:
        # the names are the table's whatever the rows: a filter or format given with it
        # was ignored without a word
        given = [
            opt for opt, on in (("--where", where), ("--columns", columns is not None)) if on
        ] + (["--format"] if fmt != "table" else [])
        if given:
            raise ConfigError(
                f"--list-columns prints every column's name and takes no {given[0]} "
                "(drop one of them)"
            )
    if fmt not in ("table", "csv", "json"):  # asked before the table is read and filtered
        raise ConfigError(f"--format {fmt!r}: use table, csv or json")
    df = load_results(path, warn=_warn, nullable_int=True)
    if list_columns:
        print("\n".join(df.columns))
        return
    # a --where that matches no row is told once the other options have passed: before
    # an error of --columns, it made two lines of one refusal
    told: list[str] = []
    df = filter_frame(df, where or [], told.append)
    if columns is not None:
        names = [c.strip() for c in columns.split(",") if c.strip()]
        if not names:  # select_columns([]) keeps every column: all 90 of them were printed
            raise ConfigError(
                f"--columns {columns!r}: no column name (e.g. --columns workload,makespan_cycles)"
            )
        df = select_columns(df, names)
    hidden: list[str] = []
    if columns is None:
        hidden = [str(c) for c in df.columns if c not in DEFAULT_COLUMNS]
        df = df[[c for c in DEFAULT_COLUMNS if c in df.columns]]
    for message in told:
        _warn(message)
    if fmt == "csv":
        print(df.to_csv(index=False), end="")
    elif fmt == "json":
        import json

        from simsched.engine.record import nest_fields

        rows = json.loads(df.to_json(orient="records"))
        print(json.dumps([nest_fields(r) for r in rows]))
    else:
        table = Table(*[str(c) for c in df.columns])
        for row in df.itertuples(index=False):
            # Text cells: a label such as heat[iters=2] is data, not rich markup.
            table.add_row(*[Text("" if _isna(v) else _fmt(v)) for v in row])
        print_table(table)
        print(plural(len(df), "row") + _hidden_note(hidden))


def _hidden_note(hidden: list[str]) -> str:
    """What the table leaves out of the columns it has: a table's other columns were not
    shown and not mentioned (a CSV of ``seed,value`` showed its seeds alone)."""
    if not hidden:
        return ""
    if len(hidden) <= 3:
        names = ", ".join(hidden)
        return f" ({plural(len(hidden), 'more column')}: {names}; choose with --columns)"
    return f" ({plural(len(hidden), 'more column')}: --list-columns names them)"


def _were(count: int) -> str:
    return "was" if count == 1 else "were"


def _them(count: int) -> str:
    return "it" if count == 1 else "them"


def _warn(message: str) -> None:
    """Report a damaged row of a results store on stderr (the command goes on without it)."""
    print_warning(message)


def _isna(v: object) -> bool:
    from pandas import NA  # loaded already by the table this cell comes from

    # pd.NA: a missing value of a nullable integer column (a failed point's count)
    return v is None or v is NA or (isinstance(v, float) and v != v)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        # A count column holding a failed point's NaN is float: 27834 cycles showed as
        # 2.783e+04.  A whole number is shown whole (exactly, below 2^53).
        if v.is_integer() and abs(v) < 2**53:
            return str(int(v))
        return f"{v:.4g}"
    return str(v)


@results_app.command("export")
def export_cmd(
    path: Annotated[Path, typer.Argument(help="sweep output folder or results file")],
    out: Annotated[Path, typer.Option("-o", "--out", help="target .csv or .parquet")],
    where: Annotated[
        list[str] | None, typer.Option("--where", help="filter COLUMN OP VALUE, repeatable")
    ] = None,
) -> None:
    """Write a sweep's results to a CSV or Parquet file (CSV to -o /dev/stdout)."""
    from simsched.experiments import export_results
    from simsched.files import check_not_input, is_stream

    check_not_input(out, "--out", {"the results": path})
    told: list[str] = []  # told once written: before an error of -o, two lines of one
    target = export_results(path, out, where, warn=told.append)
    for message in told:
        _warn(message)
    if not is_stream(target):  # -o /dev/stdout: the table is the output
        print(target)


def plot_sweep(
    path: Annotated[Path, typer.Argument(help="sweep output folder or results file")],
    x: Annotated[str, typer.Option("--x", help="column on the x axis")],
    y: Annotated[str, typer.Option("--y", help="column on the y axis")],
    out: Annotated[Path, typer.Option("-o", "--out", help="figure file (.png, .pdf, .svg)")],
    hue: Annotated[str | None, typer.Option("--hue", help="one line or bar per value")] = None,
    col: Annotated[str | None, typer.Option("--col", help="one panel per value")] = None,
    where: Annotated[
        list[str] | None, typer.Option("--where", help="filter COLUMN OP VALUE, repeatable")
    ] = None,
    kind: Annotated[str, typer.Option(help="line, bar or auto")] = "auto",
    logx: Annotated[bool, typer.Option(help="log2 x axis")] = False,
) -> None:
    """Plot Y against X from a sweep's results (mean over seeds, min-max bars widened to
    sampled runs' 95 % intervals; a warning when a mark also averages several workloads,
    machines or schedulers)."""
    from simsched.errors import ConfigError
    from simsched.experiments.store import filter_frame, load_results
    from simsched.files import check_not_input
    from simsched.plotting import figure_format, save, sweep_figure

    check_not_input(out, "--out", {"the results": path})
    figure_format(out)  # before the table is read and the figure drawn
    every = load_results(path, warn=_warn)
    absent: list[str] = []  # the filter's values that no row has, with the nearest
    df = filter_frame(every, where or [], absent.append)
    if where and df.empty and not every.empty:
        # sweep_figure would say "no successful runs to plot" of runs that all succeeded
        shown = " ".join(f"--where {w!r}" for w in where)
        why = f"; {absent[0][absent[0].index('no row has') :]}" if absent else ""
        raise ConfigError(f"{path}: no row matches {shown} (of {plural(len(every), 'row')}){why}")
    # told once the figure is written: before an error of another option, two lines of one
    fig = sweep_figure(df, x, y, hue, kind=kind, col=col, logx=logx, warn=absent.append)
    written = save(fig, out)
    for message in absent:
        _warn(message)
    print(written)


def register_plot(plot_app: typer.Typer) -> None:
    """Add ``sweep`` to the ``simsched plot`` group (once, however many applications are built)."""
    if all(c.callback is not plot_sweep for c in plot_app.registered_commands):
        plot_app.command("sweep")(plot_sweep)


def register(app: typer.Typer) -> None:
    """Add the ``sweep`` and ``results`` groups, and ``plot sweep`` to the ``plot`` group."""
    app.add_typer(sweep_app, name="sweep")
    app.add_typer(results_app, name="results")
    try:
        from simsched.cli.plot import plot_app
    except ImportError:  # an installation without the plot group: no `plot sweep`
        return
    register_plot(plot_app)
