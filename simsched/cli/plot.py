"""``simsched plot``: figures of results.  ``plot timeline`` draws one run's timeline,
``plot iterations`` the per-iteration time of iterative runs.

The ``plot`` group is the typer app :data:`plot_app`; other command modules add their
sub-commands to it (e.g. ``plot sweep``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from simsched.files import check_not_input
from simsched.plotting.runfolder import run_files, run_path, timeline_inputs

plot_app = typer.Typer(help="Draw figures of results.", no_args_is_help=True)


@plot_app.command("timeline")
def timeline(
    # str, not Path: typer turns "" into Path("."), the current folder
    result: Annotated[
        str, typer.Argument(help="result folder (simsched run --out) or result.json")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="figure file (.png, .pdf, .svg)")],
    color_by: Annotated[
        str,
        typer.Option("--color-by", help="subtree or socket, or job (a job set's default)"),
    ] = "subtree",
    trace: Annotated[
        Path | None,
        typer.Option("--trace", help="the run's trace (for subtree colours; default: from config)"),
    ] = None,
    level: Annotated[
        int | None,
        typer.Option("--level", help="subtree level (default: first level with >= cores frames)"),
    ] = None,
) -> None:
    """Draw per-core strand timelines of one run, coloured by subtree, socket or job."""
    from simsched.errors import ConfigError
    from simsched.plotting.figures import figure_format, save
    from simsched.plotting.runfolder import (
        TIMELINE_FILE,
        check_frames,
        not_replayed,
        run_trace_paths,
        why_no_trace,
    )
    from simsched.plotting.timeline import (
        COLOR_BY,
        load_timeline,
        plot_timeline,
        subtree_of_frames,
    )

    if color_by not in COLOR_BY:
        raise ConfigError(f"--color-by {color_by!r}: use subtree, socket or job")
    run = run_path(result)
    check_not_input(out, "--out", timeline_inputs(run, trace))
    figure_format(out)
    arrays, record = load_timeline(run)
    jobs = record.get("kind") == "jobs"
    if jobs and trace is not None:
        # one trace cannot be every job's; it was compared with the set's record, which
        # names no digest: "digest ... is not the run's trace (None...)"
        raise ConfigError("--trace applies to single runs; a job set's config names its traces")
    if jobs and level is not None:
        # it asked for --trace, which the check above refuses for a job set
        raise ConfigError("--level applies to single runs: a job set's frames are each job's")
    if color_by != "subtree" and (trace is not None or level is not None):
        # they choose the subtrees, which no other colouring draws: ignored without a word
        given = "--trace" if trace is not None else "--level"
        raise ConfigError(f"{given} applies to --color-by subtree, not {color_by}")
    if color_by == "job" and not jobs:
        raise ConfigError(f"--color-by job: {result} is not a job-set run (simsched run --jobs)")
    if jobs and color_by == "subtree" and trace is None and level is None:
        # Frame numbers are each job's own: coloured by frame, the jobs' strands mixed
        # under shared colours (and a legend counting frames of different jobs as one).
        color_by = "job"
    folder = run if run.is_dir() else run.parent
    subtree = None
    if color_by == "subtree":
        tpath = trace
        if tpath is None and not jobs:  # a job set has a trace per job
            tpath = run_trace_paths(folder)[0]
        if tpath is not None:
            from simsched.trace import open_trace

            with open_trace(tpath) as t:
                if t.header.digest != record.get("trace_digest"):
                    if trace is not None:
                        raise ConfigError(
                            f"--trace {trace}: digest {t.header.digest[:16]}... is not the "
                            f"run's trace ({str(record.get('trace_digest'))[:16]}...)"
                        )
                else:
                    levels = t.frames.level
                    deepest = int(levels.max()) if len(levels) else 0
                    if level is not None and not 1 <= level <= max(deepest, 1):
                        raise ConfigError(
                            f"--level {level}: the trace's frames have levels 1 to {deepest}"
                        )
                    check_frames(folder / TIMELINE_FILE, arrays["frame"], len(levels), tpath)
                    subtree = subtree_of_frames(
                        t.frames.parent, levels, level, len(arrays["socket_of_core"])
                    )
        elif level is not None:
            raise ConfigError("--level needs the run's trace (--trace)")
        else:
            print(
                f"note: {why_no_trace(folder)}: strands are coloured one per frame, not per "
                "subtree (give --trace)",
                file=sys.stderr,
            )
    if jobs:  # no one program or scheduler: the set and its controller
        title = (
            f"{_jobs(record.get('n_jobs', ''))}, controller {record.get('controller', '')} on "
            f"{record.get('machine', '')} (seed {record.get('seed', '')})"
        )
    else:
        title = (
            f"{record.get('trace_program', '')} — {record.get('scheduler', '')} on "
            f"{record.get('machine', '')} (seed {record.get('seed', '')})"
        )
    skipped = int(not_replayed(arrays).sum())
    if skipped:
        title += f", {len(arrays['core']) - skipped:,} of {len(arrays['core']):,} strands replayed"
    fig = plot_timeline(arrays, color_by=color_by, subtree=subtree, title=title)
    save(fig, out)
    print(out)


@plot_app.command("allotment")
def allotment(
    result: Annotated[
        str, typer.Argument(help="result folder (simsched run --jobs --out) or result.json")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="figure file (.png, .pdf, .svg)")],
) -> None:
    """Draw the cores each job of a multi-job run held over time (desires dashed)."""
    from simsched.plotting.allotment import load_jobs_record, plot_allotment
    from simsched.plotting.figures import save

    run = run_path(result)
    check_not_input(out, "--out", run_files(run))
    save(plot_allotment(load_jobs_record(run)), out)
    print(out)


@plot_app.command("iterations")
def iterations(
    results: Annotated[
        list[str], typer.Argument(help="result folders (simsched run --out) or result.json files")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="figure file (.png, .pdf, .svg)")],
    title: Annotated[str, typer.Option("--title", help="figure title")] = "",
) -> None:
    """Draw the time of every iteration (and LAWS' CF roots per iteration) of runs."""
    from simsched.errors import ConfigError
    from simsched.plotting.figures import save
    from simsched.plotting.iterations import (
        NO_TIMES_WHY,
        has_iterations,
        load_records,
        plot_iterations,
    )

    runs = [run_path(r) for r in results]
    check_not_input(out, "--out", {k: v for r in runs for k, v in run_files(r, f"{r}'s").items()})
    records = load_records(runs)
    without = [r for r, rec in zip(runs, records, strict=True) if not has_iterations(rec)]
    if without:
        # plot_iterations knows the records, not the paths they came from; a run it would
        # leave out of the figure without a word is named too
        which = (
            f"{without[0]}: the run recorded no iteration times"
            if len(runs) == 1 or len(without) == 1
            else f"none of the {len(runs)} runs recorded iteration times"
            if len(without) == len(runs)
            else f"{len(without)} of the {len(runs)} runs recorded no iteration times "
            f"({', '.join(map(str, without))})"
        )
        raise ConfigError(f"{which} ({NO_TIMES_WHY})")
    save(plot_iterations(records, title=title), out)
    print(out)


def _jobs(count: object) -> str:
    """``1 job``, ``3 jobs``; a record without the count gives ``jobs``."""
    from simsched.progress import plural

    return plural(count, "job") if isinstance(count, int) else f"{count} jobs".strip()


def register(app: typer.Typer) -> None:
    """Add the ``plot`` group to the main app."""
    app.add_typer(plot_app, name="plot")
