"""``simsched cc`` and ``simsched capture``: build and capture real programs.

``simsched cc [options] [gcc arguments]`` compiles for a capture backend (C sources
that use Cilk keywords are rewritten into markers first; ``--show-rewrite FILE`` prints
the rewritten source) and exits with the compiler's status; ``simsched capture [--backend B] -o OUT -- PROGRAM ARGS`` runs the
program under a backend, imports and validates the trace, and prints its counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from simsched.cli._common import err_console, print_warning

_PASS = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}

CC_HELP = """\
Usage: simsched cc [OPTIONS] [GCC ARGUMENTS]...

Compile and link a fork/join C program for capture (docs/capture.md). Every argument that
is not one of the options below goes to the compiler (gcc, or $SIMSCHED_CC). C sources that
use Cilk keywords (cilk_spawn, cilk_sync, cilk_for, cilk_scope) are rewritten into
simsched's markers first; the exit status is the compiler's.

Options:
  --backend gcc|valgrind|pin      capture backend to build for [default: gcc]
  --cilk-for-grain N              iterations per cilk_for leaf [default: OpenCilk's
                                  min(2048, n / (8 P)), at least 1]
  --cilk-workers P                the P of that rule [default: 1]
  --cilk-for-split opencilk|binary
                                  how cilk_for splits its range [default: opencilk]
  --show-rewrite FILE             print FILE as rewritten for capture and exit
  --gcc-help                      show the compiler's own help
  -h, --help                      show this message and exit

Example:
  simsched cc -O2 -o fib fib.c && simsched capture -o fib.sst -- ./fib 20
"""


def register(app: typer.Typer) -> None:
    """Add the ``cc`` and ``capture`` commands to ``app``."""

    @app.command("cc", context_settings=_PASS, add_help_option=False)
    def cc(ctx: typer.Context) -> None:
        """Compile and link a program for capture (gcc arguments; Cilk C is rewritten).

        Own options: --backend gcc|valgrind|pin, --cilk-for-grain N, --cilk-workers P,
        --cilk-for-split opencilk|binary, --show-rewrite FILE.
        """
        import tempfile

        from simsched.capture import compile_program, run
        from simsched.capture.cilkcc import parse_cc_options, show_rewrite

        args = list(ctx.args)
        if "--help" in args or "-h" in args:
            typer.echo(CC_HELP, nl=False)
            raise typer.Exit(0)
        # gcc's own help, on request: the user asked the compiler, not simsched
        args = ["--help" if a == "--gcc-help" else a for a in args]
        opts, rest = parse_cc_options(args)
        if opts.show is not None:
            with tempfile.TemporaryDirectory(prefix="simsched-cc-") as work:
                cmd = run.cc_command([*rest, "-c"], opts.backend)
                text = show_rewrite(cmd, opts.show, opts.cilk, Path(work))
            typer.echo(text, nl=False)
            raise typer.Exit(0)
        raise typer.Exit(compile_program(rest, backend=opts.backend, cilk=opts.cilk))

    @app.command(
        "capture",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        options_metavar="[OPTIONS] -- PROGRAM [ARGS]...",
    )
    def capture_cmd(
        ctx: typer.Context,
        out: Annotated[Path, typer.Option("-o", "--out", help="trace to write (.sst)")],
        backend: Annotated[
            str, typer.Option("--backend", "-b", help="gcc | valgrind | pin")
        ] = "gcc",
        raw: Annotated[
            Path | None, typer.Option("--raw", help="also keep the raw stream (zstd) here")
        ] = None,
        verbose: Annotated[
            bool, typer.Option("--verbose", "-v", help="show the program's output")
        ] = False,
        aslr: Annotated[
            bool,
            typer.Option(
                "--aslr", help="keep address-space randomisation (default: off, reproducible)"
            ),
        ] = False,
        iterations: Annotated[
            str,
            typer.Option(
                "--iterations",
                help="auto (SS_ITER markers, else found from the DAG) | markers | none",
            ),
        ] = "auto",
    ) -> None:
        """Run PROGRAM ARGS (after --) under a capture backend and write a trace."""
        from simsched.capture import capture
        from simsched.errors import CaptureError

        argv = list(ctx.args)
        if not argv:
            raise CaptureError(
                "simsched capture: no program (usage: simsched capture -o OUT -- PROGRAM ARGS)"
            )
        if not argv[0]:
            raise CaptureError("simsched capture: an empty program name after --")
        if argv[0].startswith("-"):
            # An option this command does not know lands here, where `--` has been dropped;
            # taken as the program, it was reported as "no such program".
            raise CaptureError(
                f"simsched capture: no such option: {argv[0]} (options come before --, the "
                "program and its arguments after it; see simsched capture --help)"
            )
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[what]}"),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
            # away from a terminal the bar is never drawn, yet rich still ends it with
            # an empty line, before the counts or the error
            disable=not err_console.is_terminal,
        ) as bar:
            task = bar.add_task(f"running ({backend})", what="")

            def progress(phase: str, value: int) -> None:
                if phase == "run":
                    bar.update(task, what=f"{value / 1e6:,.1f} MB raw")
                else:
                    bar.update(task, description="importing", what=f"{value:,} records")

            res = capture(
                argv[0],
                argv[1:],
                out,
                backend=backend,
                raw=raw,
                progress=progress,
                verbose=verbose,
                aslr=aslr,
                iterations=iterations,
            )
        h = res.header
        err_console.print(
            f"{out}: {h.n_strands:,} strands, {h.n_frames:,} frames, {h.n_refs:,} references, "
            f"{h.n_instructions:,} instructions ({'exact' if h.gaps_exact else 'estimated'} gaps); "
            f"run {res.run_seconds:.2f} s, import {res.import_seconds:.2f} s, "
            f"raw {res.raw_bytes / 1e6:,.1f} MB"
        )
        for w in res.warnings:
            print_warning(w)
        found = h.params.get("iterations_found")
        if found:
            err_console.print(
                f"{out}: {found} iterations found without SS_ITER markers "
                "(repeated phases of main, or of the Cilk function main calls; --iterations "
                "markers turns this off)"
            )
        elif res.no_iterations is not None:
            err_console.print(
                f"{out}: no iterations found without SS_ITER markers: {res.no_iterations}"
            )
