"""Standard figures of sweep results, drawn from the results table (one row per run).

Every function takes a :class:`pandas.DataFrame` as :func:`simsched.experiments.load_results`
returns it, aggregates repeated runs (seeds) of the same configuration into a mean with a
min–max range, and draws on a given or new matplotlib axes in the packaged style.  Failed
runs (``status != "ok"``) are left out and counted in the returned summary, never drawn as
zeros.  The figures of the PDF paper's §5 ([PDF07] Figs. 2 and 3) are
:func:`figure_speedup_misses` and :func:`figure_time_vs_cores`.

This module holds the named figures, which know workloads, machines and baselines.  What
they are built from has modules of its own, re-exported here under their old names: the
checks of arguments and tables (``_checks``), aggregation and the line and bar plots
(``_primitives``), the packaged style (``_style``) and saving to a file (``_saving``).
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simsched.errors import ConfigError, shown, spelled
from simsched.params import check_flag
from simsched.plotting._checks import (
    _all_failed,
    _check_hashable,
    _check_label,
    _check_log_x,
    _drop_missing,
    _real_dtype,
    _unhashable,
    _warn_caller,
    _workload_names,
    check_columns,
    check_given,
    check_numeric,
)
from simsched.plotting._primitives import (
    _natural,
    bar_plot,
    line_plot,
    ok_rows,
    sampled_widenings,
)
from simsched.plotting._style import literal, style

# isort: split
# Kept importable from here, where the rest of simsched, the studies' scripts and the
# notebooks import them (simsched.plotting re-exports some).
from simsched.plotting._checks import check_title  # noqa: F401
from simsched.plotting._primitives import LABELS, aggregate, axes_or_none  # noqa: F401
from simsched.plotting._saving import MAX_DPI, check_tex, figure_format, save  # noqa: F401
from simsched.plotting._style import style_path, use_style  # noqa: F401


def _styled(fn: Callable[..., Figure]) -> Callable[..., Figure]:
    """Draw a whole figure inside :func:`style` (rc parameters apply when artists are made)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with style():
            return fn(*args, **kwargs)

    return wrapper


def _column_option(name: str, column: Any) -> str:
    """A column argument of :func:`sweep_figure` as a message names it: ``x='cores'``, or
    on the command line the option typed, ``--x cores``."""
    return spelled(f"{name}={shown(column)}", f"--{name} {column}")


def speedup_vs_cores(
    df: pd.DataFrame, ax: Axes | None = None, *, hue: str = "scheduler", title: str | None = None
) -> Axes:
    """Speedup over one core against the number of cores, one line per ``hue`` value.

    Each point is the mean over the successful rows at its core count and ``hue`` value,
    with a min-max bar.  Those rows should differ only in their seed: when they come from
    several workloads, machines or schedulers (a label that ``hue`` leaves out), a
    ``UserWarning`` names them, as for :func:`sweep_figure`, since the mean and the bar
    then span different runs.

    Parameters
    ----------
    df
        Results table with columns ``cores``, ``speedup`` and ``hue`` (and ``status``:
        failed runs are left out).
    ax
        Axes to draw on; None draws on new axes.
    hue
        Column whose values get a line each.
    title
        Title of the axes, or None.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on, with a logarithmic cores axis.
    """
    ax = line_plot(df, "cores", "speedup", hue, ax, logx=True, title=title)
    _warn_mixed(df, [k for k in ("cores", hue) if k], _warn_caller, f"give them hue=, {_KEEP_ONE}")
    return ax


def mpki_by_config(
    df: pd.DataFrame,
    ax: Axes | None = None,
    *,
    config: str = "machine",
    hue: str = "scheduler",
    metric: str = "mpki",
    title: str | None = None,
) -> Axes:
    """Misses per 1000 instructions (or ``metric``) per configuration, bars per ``hue``.

    Each bar is the mean over the successful rows of its configuration and ``hue`` value,
    with a min-max bar.  Those rows should differ only in their seed: when they come from
    several workloads, machines or schedulers (a label that ``config`` and ``hue`` leave
    out), a ``UserWarning`` names them, as for :func:`sweep_figure`, since the mean and the
    bar then span different runs.

    Parameters
    ----------
    df
        Results table with columns ``config``, ``metric`` and ``hue`` (and ``status``:
        failed runs are left out).
    ax
        Axes to draw on; None draws on new axes.
    config
        Column of the configurations, one group of bars each.
    hue
        Column whose values get a bar in each group.
    metric
        Column drawn as the bars' height.
    title
        Title of the axes, or None.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    ax = bar_plot(df, config, metric, hue, ax, title=title)
    remedy = f"give them config= or hue=, {_KEEP_ONE}"
    _warn_mixed(df, [k for k in (config, hue) if k], _warn_caller, remedy)
    return ax


#: how :func:`speedup_vs_cores` and :func:`mpki_by_config` end their note on a mixed mark
_KEEP_ONE = "or keep one with filter_frame(df, wheres)"


def normalised_time(
    df: pd.DataFrame, *, config: str = "machine", hue: str = "scheduler", baseline: str = "ws"
) -> pd.DataFrame:
    """Execution time of every run divided by the baseline's mean at the same configuration.

    Parameters
    ----------
    df
        Results table with ``makespan_cycles``.
    config
        Column naming a configuration (the baseline is averaged within it, and within the
        workload when there is a ``workload`` column).
    hue
        Column naming the scheduler.
    baseline
        The ``hue`` value everything is divided by.

    Returns
    -------
    pandas.DataFrame
        The successful rows with a new ``norm_time`` column.  Rows that cannot have one
        (no ``makespan_cycles``, or no successful baseline run at their configuration)
        are left out, and a ``UserWarning`` says how many and why.

    Raises
    ------
    ConfigError
        No run of the baseline exists.
    """
    check_given(config=config, hue=hue)
    check_columns(df, [config, hue, "makespan_cycles"])
    _check_label(baseline, "baseline")
    data = ok_rows(df).copy()
    check_numeric(data, "makespan_cycles")
    keys = [k for k in ("workload", config) if k in data.columns]
    _check_hashable(data, [*keys, hue])
    base = data[data[hue] == baseline].groupby(keys)["makespan_cycles"].mean()
    if base.empty:
        raise ConfigError(f"normalised time: no successful run with {hue}={baseline!r}")
    data = data.join(base.rename("_base"), on=keys)
    data["norm_time"] = data["makespan_cycles"] / data["_base"]
    lost = data["norm_time"].isna()
    if lost.any():
        # They vanished from the table and its bars without a word: a configuration
        # without a baseline run (it failed, or the filter left it out) read as absent.
        no_time = lost & data["makespan_cycles"].isna()
        no_base = lost & ~no_time
        why = []
        if no_time.any():
            why.append(f"{int(no_time.sum())} without makespan_cycles")
        if no_base.any():
            first = data[no_base].iloc[0]
            at = ", ".join(f"{k} {first[k]}" for k in keys)
            why.append(
                f"{int(no_base.sum())} at a {' and '.join(keys)} with no successful run of "
                f"{hue}={baseline!r} (e.g. {at})"
            )
        _warn_caller(
            f"normalised time: {int(lost.sum())} of {len(data)} rows left out: " + "; ".join(why)
        )
    return data.drop(columns="_base")[~lost]


def normalised_time_bars(
    df: pd.DataFrame,
    ax: Axes | None = None,
    *,
    config: str = "machine",
    hue: str = "scheduler",
    baseline: str = "ws",
    title: str | None = None,
) -> Axes:
    """Bars of execution time normalised to ``baseline`` per configuration (1 = baseline)."""
    ax = bar_plot(
        normalised_time(df, config=config, hue=hue, baseline=baseline),
        config,
        "norm_time",
        hue,
        ax,
        title=title,
    )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel(f"execution time / {baseline}")
    return ax


def _missing_as_text(values: pd.Series) -> pd.Series:
    """``values`` with missing ones as ``n/a`` (and whole floats, which a column of
    integers with gaps holds, as integers): labels of panels and lines."""
    return values.map(
        lambda v: "n/a" if pd.isna(v) else int(v) if isinstance(v, float) and v.is_integer() else v
    )


@_styled
def sweep_figure(
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = None,
    *,
    kind: str = "auto",
    col: str | None = None,
    logx: bool = False,
    warn: Callable[[str], None] | None = None,
) -> Figure:
    """One figure of ``y`` against ``x`` by ``hue``; one panel per ``col`` value.

    ``kind`` is ``line`` (numeric ``x``), ``bar`` (categorical ``x``) or ``auto``.  Each
    mark is the mean over the rows it stands for; when those rows differ in a workload,
    machine or scheduler label that ``x``, ``hue`` and ``col`` leave out, ``warn`` (default:
    :func:`warnings.warn`) is told which, since the mean then mixes different runs, not
    only seeds.
    """
    logx = check_flag(logx, "logx")
    if warn is not None and not callable(warn):
        raise ConfigError(f"warn={shown(warn)}: expected a function of one message, or None")
    if not isinstance(kind, str) or kind not in ("line", "bar", "auto"):
        given = spelled(f"kind={shown(kind)}", f"--kind {shown(kind)}")
        raise ConfigError(f"{given}: use line, bar or auto")
    check_columns(df, [])  # not a table at all is said as such, not as an --x error
    if df.empty and not len(df.columns):
        # the table of a sweep with no finished point: "no column 'seed' in the results
        # (have: )" blamed the option
        raise ConfigError("no runs to plot: the results have no rows (no point has finished)")
    if not df.empty and ok_rows(df).empty:
        # a sweep whose every point failed has no metric columns: "no column
        # 'makespan_cycles' in the results" blamed --y
        raise ConfigError(f"no successful runs to plot: {_all_failed(df)}")
    check_given(x=x, y=y)
    columns = {"x": x, "y": y, "hue": hue, "col": col}
    for name, column in columns.items():
        try:  # the column alone did not say which of four arguments named it
            check_columns(df, [column])
        except ConfigError as exc:
            given = spelled(f"{name}={shown(column)}", f"--{name} {shown(column)}")
            raise ConfigError(f"{given}: {exc}") from None
    data = ok_rows(df)
    if data.empty:
        raise ConfigError("no successful runs to plot")
    _check_hashable(data, [c for c in (x, hue, col) if c is not None])
    for name, column in (("x", x), ("y", y)):
        if data[column].isna().all():
            # a field these runs do not record (sample_iterations of job sets): the figure
            # was drawn empty, and the command said nothing
            raise ConfigError(
                f"{_column_option(name, column)}: the column has no values in the selected "
                f"rows ({len(data)} successful run{'s' if len(data) != 1 else ''})"
            )
    for key in dict.fromkeys(k for k in (hue, col) if k and k != x):
        if data[key].isna().any():
            # Rows without a value (a parameter that other workloads of the sweep lack) are
            # a group of their own: NaN equals nothing, so they vanished from the figure
            # under an empty "nan" panel.
            data = data.assign(**{key: _missing_as_text(data[key])})
    panels = _natural(data[col]) if col else [None]
    if kind == "auto":
        kind = "line" if _real_dtype(data[x]) else "bar"
    check_numeric(data, y, _column_option("y", y), bools=False)
    if kind == "line" and not _real_dtype(data[x]):
        raise ConfigError(
            f"{_column_option('x', x)}: a line plot needs a numeric column; use "
            + spelled("kind='bar'", "--kind bar")
        )
    logx_given = spelled("logx=True", "--logx")
    if logx and kind == "bar":  # bars stand at categories: it was ignored without a word
        raise ConfigError(
            f"{logx_given}: applies to line plots; {_column_option('x', x)} is drawn as bars"
        )
    if logx and kind == "line":
        _check_log_x(data, x)
    # told once the figure will be drawn: before a refusal, it made two lines of one error
    _warn_mixed(
        data,
        [k for k in (x, hue, col) if k],
        warn or _warn_caller,
        spelled(
            "give them hue= or col=, or keep one with filter_frame(df, wheres)",
            "give them --hue or --col, or keep one with --where",
        ),
    )
    # once for the figure, not once per panel (line_plot and bar_plot would tell it too)
    data = _drop_missing(data, [x, y], warn)
    width = 5.0 + (1.5 if hue else 0.0)  # room for the legend beside the plot
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), 3.8), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        part = data if col is None else data[data[col] == panel]
        title = None if col is None else f"{col} = {panel}"
        if kind == "line":
            line_plot(part, x, y, hue, ax, logx=logx, title=title)
        else:
            bar_plot(part, x, y, hue, ax, title=title)
    widened = sampled_widenings(data, y)
    if widened:
        # a bar that also spans sampled runs' intervals would read as a spread over seeds
        fig.text(
            0.01,
            0.01,
            f"bars: min–max over seeds, widened to the 95 % intervals of {widened} "
            f"sampled run{'s' if widened != 1 else ''}",
            fontsize=7,
            ha="left",
            va="bottom",
        )
        fig.tight_layout(rect=(0.0, 0.05, 1.0, 1.0))
    else:
        fig.tight_layout()
    return fig


def _mixed_labels(data: pd.DataFrame, keys: list[str]) -> dict[str, list[Any]]:
    """The label columns (workload, machine, scheduler) outside ``keys`` that take several
    values within one group of ``keys``, with their values."""
    labels = [
        c
        for c in ("workload", "machine", "scheduler")
        if c not in keys and c in data and _unhashable(data[c]) is None
    ]
    if not labels:
        return {}
    groups = data.groupby([data[k].astype(str) for k in dict.fromkeys(keys)], sort=False)
    several = (groups[labels].nunique(dropna=False) > 1).any()
    return {label: _natural(data[label]) for label in labels if several[label]}


def _warn_mixed(
    data: pd.DataFrame, keys: list[str], warn: Callable[[str], None], remedy: str
) -> None:
    """Tell ``warn`` when a mark (a group of ``keys`` in the successful rows of ``data``)
    averages rows of several workloads, machines or schedulers, naming them and ending with
    ``remedy``: the min-max bar then spans different runs, not only seeds."""
    mixed = _mixed_labels(ok_rows(data), keys)
    if mixed:
        warn(
            "each mark averages rows of several "
            + ", ".join(
                f"{k}s ({', '.join(map(str, v[:3]))}{', ...' if len(v) > 3 else ''})"
                for k, v in mixed.items()
            )
            + "; "
            + remedy
        )


def _family(df: pd.DataFrame, prefix: str) -> pd.DataFrame:
    if not isinstance(prefix, str):
        raise ConfigError(f"machine_prefix={shown(prefix)}: expected a text, e.g. 'itrs-45nm-'")
    check_columns(df, ["machine", "workload"])
    return df[df["machine"].astype(str).str.startswith(prefix)]


@_styled
def figure_speedup_misses(
    df: pd.DataFrame,
    workloads: Sequence[str],
    *,
    machine_prefix: str = "itrs-scaling-",
    misses: str = "mpki",
) -> Figure:
    """The PDF paper's Fig. 2: per workload, speedup and L2 misses against cores.

    Left column: speedup over one core of the same machine; right column: last-level
    misses per 1000 instructions (the paper plots misses per instruction), for the
    machines whose label starts with ``machine_prefix`` (the ITRS default configurations).
    """
    data = _family(df, machine_prefix)
    workloads = _workload_names(workloads)
    fig, axes = plt.subplots(len(workloads), 2, figsize=(9.0, 3.0 * len(workloads)), squeeze=False)
    for row, wl in zip(axes, workloads, strict=True):
        part = data[data["workload"] == wl]
        if ok_rows(part).empty:
            for ax in row:
                ax.text(0.5, 0.5, literal(f"no runs of {wl}"), ha="center", transform=ax.transAxes)
            continue
        speedup_vs_cores(part, row[0], title=f"{wl}: speedup")
        line_plot(part, "cores", misses, "scheduler", row[1], logx=True, title=f"{wl}: L2 misses")
    fig.tight_layout()
    return fig


@_styled
def figure_time_vs_cores(
    df: pd.DataFrame,
    workloads: Sequence[str],
    *,
    machine_prefix: str = "itrs-45nm-",
    zoom: tuple[int, int] | None = (10, 26),
) -> Figure:
    """The PDF paper's Fig. 3: execution time against cores under one technology (45 nm),
    per workload, with a second panel zoomed on ``zoom`` cores."""
    data = _family(df, machine_prefix)
    workloads = _workload_names(workloads)
    # None or an empty sequence: no zoomed panel (a table's truth was asked, inside pandas)
    if zoom is not None and not (
        isinstance(zoom, Sequence)
        and len(zoom) in (0, 2)
        and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in zoom)
    ):
        raise ConfigError(f"zoom={shown(zoom)}: expected (lowest, highest) cores, or None")
    ncols = 2 if zoom else 1
    fig, axes = plt.subplots(
        len(workloads), ncols, figsize=(4.6 * ncols, 3.0 * len(workloads)), squeeze=False
    )
    for row, wl in zip(axes, workloads, strict=True):
        part = data[data["workload"] == wl]
        if ok_rows(part).empty:
            for ax in row:
                ax.text(0.5, 0.5, literal(f"no runs of {wl}"), ha="center", transform=ax.transAxes)
            continue
        line_plot(
            part, "cores", "makespan_cycles", "scheduler", row[0], title=f"{wl}: execution time"
        )
        if zoom:
            lo, hi = zoom
            sub = part[(part["cores"] >= lo) & (part["cores"] <= hi)]
            if ok_rows(sub).empty:
                row[1].text(
                    0.5,
                    0.5,
                    f"no runs with {lo}-{hi} cores",
                    ha="center",
                    transform=row[1].transAxes,
                )
            else:
                line_plot(
                    sub,
                    "cores",
                    "makespan_cycles",
                    "scheduler",
                    row[1],
                    title=f"{wl}: {lo}-{hi} cores",
                )
    fig.tight_layout()
    return fig
