"""What the studies' figure scripts share: reading sweep folders as a command-line program.

``experiments/*/make_figures.py`` are small programs run by hand and by the notebooks.  A
results folder that does not exist (the sweep has not run yet, or a mistyped path) is the
user's mistake, so it ends the script with exit status 2 and one line naming the folder and
the sweep that fills it, as the ``simsched`` CLI does for bad input, never a traceback; so
does a folder with nothing to draw (no point finished yet, or every one failed).
Ctrl-C likewise ends in one line and status 130; the figures already saved are whole,
because every figure and table is written to a temporary file and renamed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from simsched.canonical import strict_json
from simsched.errors import ConfigError
from simsched.experiments.store import load_results
from simsched.interrupts import restore
from simsched.plotting.runfolder import TIMELINE_FILE, read_record, read_timeline

PROG = "make_figures.py"


def usage_error(message: str, prog: str = PROG) -> NoReturn:
    """Print ``prog: message`` to stderr and exit with status 2.

    Parameters
    ----------
    message
        What is wrong, naming the input.
    prog
        The script's name, the line's prefix.
    """
    print(f"{prog}: {message}", file=sys.stderr)
    raise SystemExit(2)


def json_line(obj: Any) -> str:
    """``obj`` as one line of strict JSON, keys in their order: a missing value (NaN,
    infinity) becomes ``null`` (:func:`simsched.canonical.strict_json`).

    Parameters
    ----------
    obj
        Dicts, lists, strings, numbers (numpy values included) and ``None``.

    Returns
    -------
    str
        JSON that every reader accepts (Python's ``json`` would write a bare ``NaN``).
    """
    return strict_json(obj, sort_keys=False)


def run_script(main: Callable[[], object], prog: str = PROG) -> None:
    """Run a figure script's ``main`` as the command line expects.

    Parameters
    ----------
    main
        The script's entry point.
    prog
        The script's name, the prefix of the line printed on Ctrl-C.

    Raises
    ------
    SystemExit
        Status 130, after one line on stderr, when the user interrupts the script; status
        2, after one line, on a :class:`ConfigError` (the figure functions' word for a
        table they cannot draw: a folder of another study, a column it lacks).
    """
    restore()  # Ctrl-C is a KeyboardInterrupt again (simsched.interrupts)
    try:
        main()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted (Ctrl-C); figures already written are whole", file=sys.stderr)
        raise SystemExit(130) from None
    except ConfigError as exc:  # a traceback, before, for what is the user's input
        usage_error(str(exc), prog)


#: What a replay on a chip with private L1s and a shared L2 (the ITRS machines of [PDF07])
#: counts, as a study's per-point table (:func:`write_points`) gives it.
CMP_COUNTS = ("instructions", "refs", "strands", "L1_misses", "L2_misses", "mpki", "steals")


def write_points(
    df: pd.DataFrame, path: str | Path, columns: Sequence[str], order: Sequence[str]
) -> Path:
    """Write a study's per-point table: ``df``'s ``columns`` (those it has), one row per
    point, sorted by ``order`` (those it has), as CSV through :func:`write_csv`.

    A sweep's rows carry everything its points recorded (a job set's allotments, hundreds
    of columns); the figures' numbers need a few of them, and this table, committed beside
    the figures, lets every number a study's documentation quotes be recomputed.

    Parameters
    ----------
    df
        The study's rows (one per point).
    path
        The CSV file.
    columns
        The columns to keep, in this order.
    order
        The columns to sort the rows by.

    Returns
    -------
    Path
        ``path``.
    """
    keep = [c for c in dict.fromkeys(columns) if c in df.columns]  # each once, in order
    by = [c for c in order if c in df.columns]
    table = df[keep].sort_values(by, kind="stable") if by else df[keep]
    return write_csv(table, path, index=False)


def write_csv(table: pd.DataFrame, path: str | Path, *, index: bool = True) -> Path:
    """Write ``table`` as CSV to ``path`` through a temporary file renamed over it
    (:func:`simsched.files.atomic_output`), so an interrupted script leaves the previous
    table, never half of one.

    Parameters
    ----------
    table
        The table.
    path
        The CSV file.
    index
        Whether the index is written as the first column (as ``DataFrame.to_csv``).

    Returns
    -------
    Path
        ``path``.
    """
    from simsched.files import atomic_output

    with atomic_output(path) as tmp:
        table.to_csv(tmp, index=index)
    return Path(path)


def default_figures(
    results: str | os.PathLike, study: str | os.PathLike, committed: str | os.PathLike
) -> Path:
    """Where a study's figure script writes the figures of ``results`` when not told (``-o``).

    Parameters
    ----------
    results
        The sweep folder (or results file) the figures are drawn from.
    study
        The study's folder (``experiments/<study>``).
    committed
        Where the study keeps the committed figures of ``results``.

    Returns
    -------
    Path
        ``committed`` for the study's own ``results/NAME`` of a full-size spec (the study
        holds ``NAME.yaml``, and NAME is not ``small``); ``figures/NAME`` beside any other
        folder, so a small run, or a copy drawn elsewhere, does not overwrite the committed
        figures of the full run.
    """
    # a str study failed at `study / "results"`
    results, study = Path(results), Path(study)
    name = results.name
    own = results.resolve() == (study / "results" / name).resolve()
    if own and name != "small" and (study / f"{name}.yaml").is_file():
        return Path(committed)
    return results.parent / "figures" / name


def load_figure_rows(
    folders: str | os.PathLike | Iterable[str | os.PathLike],
    study: str | os.PathLike | None = None,
    prog: str = PROG,
    schedulers: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The successful rows of one or more sweep folders as one table.

    Parameters
    ----------
    folders
        A sweep output folder (or results file), or several; their rows are concatenated.
    study
        The study's folder (``experiments/<study>``).  When a missing folder is the study's
        own ``results/NAME`` and the study holds ``NAME.yaml``, the error says to run it.
    prog
        The script's name, the error line's prefix.
    schedulers
        The policies the study is about (registry names): a folder none of whose
        successful rows ran one of them is another study's, and is refused by name.
        Without the check such a folder ended in a ``KeyError`` on a column its machines
        lack, or in empty figures and exit status 0.

    Returns
    -------
    pandas.DataFrame
        Rows whose ``status`` is ``ok``.

    Raises
    ------
    SystemExit
        Status 2, after one line on stderr, when a folder is not a results store or has
        no successful run (none finished yet, or all failed).
    """
    from simsched.plotting.figures import ok_rows

    paths = [folders] if isinstance(folders, str | os.PathLike) else list(folders)
    study = None if study is None else Path(study)  # a str failed in _study_command
    frames = []
    for p in paths:
        cmd = _study_command(p, study)
        try:
            df = load_results(p, warn=lambda m: print(f"{prog}: warning: {m}", file=sys.stderr))
        except ConfigError as e:
            usage_error(f"{e}; run `{cmd}` first" if cmd else str(e), prog)
        ok = ok_rows(df)
        if ok.empty:
            # every figure indexes the columns of successful runs: without one a script
            # ended in a KeyError traceback
            usage_error(f"{p}: {_no_successful_run(df, cmd)}", prog)
        if schedulers is not None:
            wanted = sorted(set(schedulers))
            ran = set(ok["scheduler_name"]) if "scheduler_name" in ok else set()
            if not ran & set(wanted):
                study_name = (
                    f"a {study.name} sweep" if study is not None else "a sweep of this study"
                )
                usage_error(
                    f"{p}: not {study_name}: no successful run of {', '.join(wanted)} "
                    f"(it ran {', '.join(sorted(map(str, ran))) or 'no scheduler'})",
                    prog,
                )
        frames.append(ok.copy())
    return pd.concat(frames, ignore_index=True)


def _study_command(folder: str | os.PathLike, study: Path | None) -> str:
    """``simsched sweep run experiments/STUDY/NAME.yaml`` when ``folder`` is the study's own
    ``results/NAME`` and the study holds ``NAME.yaml``, else ``""``: a folder elsewhere is
    more likely mistyped than not yet run."""
    if study is None:
        return ""
    name = Path(folder).name
    own = Path(folder).resolve() == (study / "results" / name).resolve()
    if own and (study / f"{name}.yaml").is_file():
        return f"simsched sweep run experiments/{study.name}/{name}.yaml"
    return ""


def _no_successful_run(df: pd.DataFrame, cmd: str) -> str:
    """Why a results table has no row to draw: no point has finished, or every one failed
    (the first error named), and the command that fills it."""
    if df.empty:
        return f"no point has finished yet; run `{cmd}`" if cmd else "no point has finished yet"
    errors = df["error"] if "error" in df else pd.Series(dtype=object)
    first = next((e.splitlines()[0] for e in errors if isinstance(e, str) and e.strip()), "")
    said = f" (the first: {first})" if first else ""
    return (
        "its one point" if len(df) == 1 else f"all {len(df)} of its points"
    ) + f" failed{said}; fix the cause and run `{cmd or 'simsched sweep run SPEC'} --retry-failed`"


def load_run(
    run: str | os.PathLike,
    digest: str,
    trace: str | os.PathLike,
    prog: str = PROG,
    *,
    sampled_ok: bool = False,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A ``simsched run --out`` folder's result record and timeline, checked to be a run of
    the trace whose digest is ``digest``.

    Parameters
    ----------
    run
        The folder (it holds ``result.json`` and ``timeline.npz``).
    digest
        The trace's digest (``Trace.header.digest``), which the record's ``trace_digest``
        must equal.
    trace
        The trace's path, named in the error line.
    prog
        The script's name, the error line's prefix.
    sampled_ok
        Take a sampled run too: for a script that reads only the iterations a run
        replayed in detail and compares only those (its timeline's other strands have end
        -1, :func:`~simsched.plotting.runfolder.not_replayed`).

    Returns
    -------
    tuple[dict, dict]
        The record and the timeline's arrays by name.

    Raises
    ------
    SystemExit
        Status 2, after one line on stderr, when the folder is not such a run, or is a
        sampled run and ``sampled_ok`` is False (its timeline lacks the strands of the
        iterations it extrapolated).
    """
    run = Path(run)  # a str failed at `run / TIMELINE_FILE`
    try:
        record = read_record(run)
        if record.get("trace_digest") != digest:
            usage_error(f"{run}: a run of another trace than {trace} (digests differ)", prog)
        if record.get("sampled") is True and not sampled_ok:
            # its timeline lacks the iterations it extrapolated: per-strand figures over
            # it would describe the detailed iterations only, as if they were the run
            usage_error(
                f"{run}: a sampled run (--sample-iterations), whose timeline has only the "
                "iterations it replayed; rerun it without sampling",
                prog,
            )
        timeline = read_timeline(run / TIMELINE_FILE, record)
    except ConfigError as exc:
        usage_error(str(exc), prog)
    return record, timeline
