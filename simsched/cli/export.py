"""``simsched export timeline``: a run's timeline for Perfetto (:mod:`simsched.export`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

export_app = typer.Typer(help="Export results to other tools' formats.", no_args_is_help=True)


@export_app.command("timeline")
def timeline(
    # str, not Path: typer turns "" into Path("."), the current folder
    result: Annotated[
        str,
        typer.Argument(help="result folder (run --out, run --jobs --out, a compare --out point)"),
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="output file (.json)")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="perfetto or chrome (both: trace-event JSON, opens in either)"
        ),
    ] = "perfetto",
    trace: Annotated[
        Path | None,
        typer.Option("--trace", help="the run's trace (default: the one its config names)"),
    ] = None,
) -> None:
    """Write a run's timeline as trace-event JSON: cores by socket, strands, steals, counters."""
    from simsched.export import export_timeline
    from simsched.files import check_not_input, is_stream
    from simsched.plotting.runfolder import run_path, timeline_inputs

    run = run_path(result)
    check_not_input(out, "--out", timeline_inputs(run, trace))
    doc = export_timeline(run, out, fmt, trace)
    other = doc["otherData"]
    slices = sum(1 for e in doc["traceEvents"] if e["ph"] == "X")
    # -o /dev/stdout: the JSON is the output, so the summary goes where it cannot mix in
    report = sys.stderr if is_stream(out) else sys.stdout
    skipped = other.get("not_replayed", 0)
    sampled = f" (and {skipped:,} the sampled run did not replay)" if skipped else ""
    print(
        f"{out}: {slices:,} strands{sampled}, {other['flows']:,} steal/migration flows; "
        "open in ui.perfetto.dev",
        file=report,
    )
    if other["traces_found"].startswith("none"):
        from simsched.plotting.runfolder import why_no_trace

        folder = run if run.is_dir() else run.parent
        print(
            f"note: the run's trace was not found ({why_no_trace(folder)}): no subtree names "
            "or flows (give --trace)",
            file=report,
        )


def register(app: typer.Typer) -> None:
    """Add the ``export`` group to the main app."""
    app.add_typer(export_app, name="export")
