"""Standard figures of sweep results, drawn from the results table (one row per run).

Every function takes a :class:`pandas.DataFrame` as :func:`simsched.experiments.load_results`
returns it, aggregates repeated runs (seeds) of the same configuration into a mean with a
min–max range, and draws on a given or new matplotlib axes in the packaged style.  Failed
runs (``status != "ok"``) are left out and counted in the returned summary, never drawn as
zeros.  The figures of the PDF paper's §5 ([PDF07] Figs. 2 and 3) are
:func:`figure_speedup_misses` and :func:`figure_time_vs_cores`.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import numbers
import os
import sys
import types
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from glob import escape as glob_escape
from importlib import resources
from pathlib import Path
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simsched.errors import ConfigError, shown, spelled
from simsched.params import check_flag, check_frame, column_hint

# Readable axis labels for the record's fields (others are shown as they are named).
LABELS = {
    "cores": "cores",
    "speedup": "speedup over one core",
    "makespan_cycles": "execution time (cycles)",
    "mpki": "last-level misses per 1000 instructions",
    "L2_misses": "L2 misses",
    "norm_time": "execution time normalised to baseline",
}


def literal(text: object) -> str:
    """``text`` as a string matplotlib draws as it is.

    Matplotlib reads text between two ``$`` as mathtext and fails on what does not parse
    (``$$``, ``p$\\frac{$``); titles, labels and legend entries made from user data (trace
    and job names, column values, ``--title``) escape every ``$`` instead.  (The style
    file's ``text.parse_math: False`` would also turn off the mathtext of log-axis tick
    labels.)

    Parameters
    ----------
    text
        Any value; it is converted with ``str``.

    Returns
    -------
    str
        The text with each ``$`` as ``\\$``.
    """
    return str(text).replace("$", r"\$")


def style_path() -> Path:
    """Path of the packaged matplotlib style file (``simsched.mplstyle``)."""
    return Path(str(resources.files("simsched.plotting") / "simsched.mplstyle"))


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Context manager applying simsched's style to figures made inside it.

    Only the style's parameters are undone at the end.  Leaving the context restores every
    rc parameter, ``interactive`` among them, and a notebook's inline backend, set up when
    the first figure is made (inside the context, if the first figure is one of ours),
    turns ``interactive`` on: undone, no later figure of the kernel was displayed.
    """
    interactive = mpl.is_interactive()
    try:
        with plt.style.context(str(style_path())):
            try:
                yield
            finally:
                interactive = mpl.is_interactive()
    finally:
        mpl.interactive(interactive)


def use_style() -> None:
    """Apply simsched's style globally (for notebooks)."""
    plt.style.use(str(style_path()))


def _styled(fn: Callable[..., Figure]) -> Callable[..., Figure]:
    """Draw a whole figure inside :func:`style` (rc parameters apply when artists are made)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with style():
            return fn(*args, **kwargs)

    return wrapper


def check_columns(df: pd.DataFrame, cols: Sequence[str | None]) -> None:
    """``df`` is a results table (:func:`simsched.params.check_frame`) with every column
    of ``cols`` (``None`` entries skipped), else a one-line :class:`ConfigError`.

    A table whose columns have several levels (a pivot, a ``groupby().agg`` of several
    functions) is refused as such: its columns are pairs, and a figure failed inside
    pandas with a ``KeyError``, a ``MergeError`` or a ``TypeError``.
    """
    check_frame(df)
    if isinstance(df.columns, pd.MultiIndex):
        raise ConfigError(
            f"df: its columns have {df.columns.nlevels} levels (a pandas MultiIndex, e.g. "
            f"{shown(df.columns[0])}); the figures take a table of named columns, as "
            "load_results returns: flatten them first (df.columns = ['_'.join(map(str, c)) "
            "for c in df.columns])"
        )
    twice = df.columns[df.columns.duplicated()]
    if len(twice):  # df[name] is then a table: "'DataFrame' object has no attribute 'dtype'"
        times = int((df.columns == twice[0]).sum())
        raise ConfigError(
            f"df: column {shown(twice[0])} appears {'twice' if times == 2 else f'{times} times'}"
        )
    missing = [
        c for c in cols if c is not None and not (isinstance(c, Hashable) and c in df.columns)
    ]
    if missing:
        hint = column_hint(missing[0], df.columns, 20)
        raise ConfigError(f"no column {shown(missing[0])} in the results ({hint})")


def _column_option(name: str, column: Any) -> str:
    """A column argument of :func:`sweep_figure` as a message names it: ``x='cores'``, or
    on the command line the option typed, ``--x cores``."""
    return spelled(f"{name}={shown(column)}", f"--{name} {column}")


def _check_hashable(data: pd.DataFrame, cols: Iterable[str]) -> None:
    """The columns ``cols`` of ``data``, by which a figure groups its rows, hold single
    values, else a one-line :class:`ConfigError`: a column of lists (a record's nested
    field read back as Python lists) failed inside pandas with "unhashable type: 'list'"."""
    for col in dict.fromkeys(cols):
        bad = _unhashable(data[col])
        if bad is not None:
            raise ConfigError(
                f"column {col!r} holds values of type {type(bad).__name__} (e.g. "
                f"{shown(bad)}); a figure groups rows by single values (numbers or text)"
            )


def _unhashable(series: pd.Series) -> Any:
    """The first value of ``series`` that cannot be a group's key (a list, a dict, an
    array), or None."""
    if series.dtype != object:
        return None
    return next((v for v in series if not isinstance(v, Hashable)), None)


def _warn_caller(message: str) -> None:
    """``warnings.warn(message)`` (a ``UserWarning``) attributed to the first caller
    outside this module: the figure function a user called, however deep the call that
    warns."""
    level = 1
    frame: types.FrameType | None = sys._getframe(0)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _drop_missing(
    data: pd.DataFrame, cols: Iterable[str], warn: Callable[[str], None] | None = None
) -> pd.DataFrame:
    """``data`` without its rows that have no value (NaN, None) in one of ``cols``.

    A figure cannot place such a row, and pandas left it out without a word (a mean
    over some seeds read as a mean over all); ``warn`` (default: a ``UserWarning`` at
    the caller's line) is told how many rows and of which columns.
    """
    cols = list(dict.fromkeys(cols))
    missing = data[cols].isna()
    lost = missing.any(axis=1)
    if not lost.any():
        return data
    counts = ", ".join(f"{c} ({int(n)})" for c, n in missing.sum().items() if n)
    rows = "row" if len(data) == 1 else "rows"
    (warn or _warn_caller)(
        f"{int(lost.sum())} of {len(data)} {rows} left out of the figure: no value of {counts}"
    )
    return data[~lost]


def _all_failed(df: pd.DataFrame) -> str:
    """What a table of failed runs says: how many, and the first error."""
    errors = df["error"] if "error" in df.columns else pd.Series(dtype=object)
    first = next((e.splitlines()[0] for e in errors if isinstance(e, str) and e.strip()), "")
    runs = "its one run" if len(df) == 1 else f"all {len(df)} runs"
    return f"{runs} failed" + (f" (the first: {first})" if first else "")


def check_given(**columns: Any) -> None:
    """Columns a figure cannot do without are named (``None`` means "no column" only
    where a parameter is optional, such as ``hue``)."""
    for name, col in columns.items():
        if col is None:
            raise ConfigError(f"{name}=None: give the name of a column of the results")


def check_title(title: Any) -> str | None:
    """A figure's or panel's ``title``: text or None (a table given as a title failed
    inside pandas when its truth was asked)."""
    if title is not None and not isinstance(title, str):
        raise ConfigError(f"title={shown(title)}: expected a text or None")
    return title


def _check_label(value: Any, name: str, example: str = "'ws'") -> Any:
    """A value a column is compared with (a scheduler label, a baseline): one number or
    text, not a list, mapping or table, which pandas compared element by element."""
    fits = isinstance(value, str) or (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and (not isinstance(value, numbers.Integral) or -(2**63) <= int(value) < 2**63)
    )
    if not fits:  # a number past int64 failed inside pyarrow
        raise ConfigError(f"{name}={shown(value)}: expected one label, e.g. {example}")
    return value


def check_numeric(
    data: pd.DataFrame, col: str, what: str | None = None, bools: bool = True
) -> None:
    """Column ``col`` of ``data`` holds numbers (booleans too unless ``bools`` is false),
    else a one-line :class:`ConfigError` naming it (``what``: how the caller names it) and
    some numeric columns: a mean of text fails deep inside pandas."""
    series = data[col]
    if pd.api.types.is_bool_dtype(series):
        ok = bools
    elif pd.api.types.is_numeric_dtype(series):
        ok = _real_dtype(series)
    else:  # an object column may still hold only numbers (e.g. ints beside None)
        ok = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in series.dropna())
    if not ok:
        numeric = [c for c in data.columns if _real_dtype(data[c])][:8]
        raise ConfigError(
            f"{what or f'column {col!r}'}: not a numeric column "
            f"(e.g. {', '.join(map(str, numeric))})"
        )


def _real_dtype(series: pd.Series) -> bool:
    """Whether ``series`` has a dtype of real numbers (or booleans): pandas counts complex
    numbers as numeric, and a mean or an axis of them failed with a ``TypeError``."""
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_complex_dtype(series)


def _check_log_x(data: pd.DataFrame, x: str) -> None:
    """Column ``x`` of ``data`` can be drawn on a log axis: numbers, each > 0, else a
    one-line :class:`ConfigError`.  Matplotlib dropped the others without a word, failed
    when all were (at save time), or failed on text ("could not convert string to
    float")."""
    given = spelled("logx=True", "--logx")
    check_numeric(data, x, f"{given}: column {x!r}", bools=False)
    values = data[x].dropna()
    if (values <= 0).any():
        low = values[values <= 0].iloc[0]
        raise ConfigError(
            f"{given}: column {x!r} has values <= 0 (e.g. {low}); a log axis needs x > 0"
        )


def _marks(df: pd.DataFrame, x: str, y: str, hue: str | None) -> pd.DataFrame:
    """:func:`aggregate` of a line or bar plot, which draws a mark per row: a table of no
    row is a one-line :class:`ConfigError` (empty axes were drawn without a word, or the
    bar width was divided by no hues)."""
    agg = aggregate(df, x, y, hue)
    if agg.empty:
        why = f": {_all_failed(df)}" if len(df) and ok_rows(df).empty else ""
        raise ConfigError(f"no rows to plot (no run with a value of {shown(y)}){why}")
    return agg


def _workload_names(workloads: Any) -> list[Any]:
    """The figures' rows: a list (or any iterable, such as ``df["workload"].unique()``) of
    workload names; a lone name is refused, as iterating it would draw a row per letter."""
    if isinstance(workloads, str | bytes) or not isinstance(workloads, Iterable):
        raise ConfigError(
            f"workloads={workloads!r}: expected a list of workload names, e.g. ['mergesort']"
        )
    names = list(workloads)
    if not names:  # a figure of no rows: matplotlib's own error named no argument
        raise ConfigError("workloads=[]: give at least one workload name, e.g. ['mergesort']")
    for i, name in enumerate(names):  # a list was compared element by element
        _check_label(name, f"workloads[{i}]", "'mergesort'")
    return names


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of successful runs (all rows if there is no ``status`` column)."""
    if "status" in df.columns:
        return df[df["status"] == "ok"]
    return df


def aggregate(df: pd.DataFrame, x: str, y: str, hue: str | None = None) -> pd.DataFrame:
    """Mean, min, max and count of ``y`` per (``hue``, ``x``) over successful runs.

    Parameters
    ----------
    df
        Results table.
    x, y, hue
        Column names; ``hue`` may be ``None``.

    Returns
    -------
    pandas.DataFrame
        Columns ``hue`` (if given), ``x``, ``mean``, ``min``, ``max``, ``n``, sorted.
    """
    check_given(x=x, y=y)
    check_columns(df, [x, y, hue])
    # hue may be x itself (a colour per x value): group by that column once.
    keys = [hue, x] if hue and hue != x else [x]
    data = ok_rows(df)
    _check_hashable(data, keys)
    # rows without a value of y, x or hue: groupby and the mean left them out silently
    data = _drop_missing(data, [*keys, y])
    check_numeric(data, y)
    agg = data.groupby(keys, sort=True)[y].agg(["mean", "min", "max", "count"]).reset_index()
    return agg.rename(columns={"count": "n"})


def _yerr(g: pd.DataFrame) -> list[pd.Series]:
    """Min-max error bars; clipped at 0 because a mean of equal floats can round past them."""
    return [(g["mean"] - g["min"]).clip(lower=0), (g["max"] - g["mean"]).clip(lower=0)]


def axes_or_none(ax: Any) -> Axes | None:
    """``ax`` if it is matplotlib axes or None; anything else is a one-line ConfigError (it
    failed inside matplotlib as "'str' object has no attribute 'bar'")."""
    if ax is not None and not isinstance(ax, Axes):
        raise ConfigError(f"ax={shown(ax)}: expected matplotlib axes (from plt.subplots()) or None")
    return ax


def _axes(ax: Axes | None, figsize: tuple[float, float] | None = None) -> Axes:
    """``ax`` (:func:`axes_or_none`), or new axes when it is None."""
    given = axes_or_none(ax)
    if given is not None:
        return given
    _, ax = plt.subplots(figsize=figsize)
    return ax


def line_plot(
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = "scheduler",
    ax: Axes | None = None,
    *,
    logx: bool = False,
    title: str | None = None,
) -> Axes:
    """``y`` against numeric ``x``, one line per ``hue`` value, min–max bars over seeds."""
    logx = check_flag(logx, "logx")
    title = check_title(title)
    agg = _marks(df, x, y, hue)
    if logx:
        _check_log_x(ok_rows(df), x)
    ax = _axes(ax)
    names = _natural(agg[hue]) if hue else [None]
    for name in names:
        g = (agg[agg[hue] == name] if hue else agg).sort_values(x)
        err = _yerr(g)
        ax.errorbar(
            g[x], g["mean"], yerr=err, marker="o", label=None if name is None else literal(name)
        )
    if logx:
        ax.set_xscale("log", base=2)
        ticks = sorted(agg[x].unique())
        ax.set_xticks(ticks, [str(int(t)) if float(t).is_integer() else str(t) for t in ticks])
    ax.set_xlabel(literal(LABELS.get(x, x)))
    ax.set_ylabel(literal(LABELS.get(y, y)))
    if hue:
        ax.legend(title=literal(hue))
    if title:
        ax.set_title(literal(title))
    return ax


def bar_plot(
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = "scheduler",
    ax: Axes | None = None,
    *,
    title: str | None = None,
) -> Axes:
    """Grouped bars of mean ``y`` per category ``x`` and ``hue``, min–max over seeds."""
    title = check_title(title)
    agg = _marks(df, x, y, hue)
    ax = _axes(ax)
    cats = list(dict.fromkeys(_natural(agg[x])))
    hues = _natural(agg[hue]) if hue else [None]
    width = 0.8 / len(hues)
    for i, h in enumerate(hues):
        g = agg[agg[hue] == h] if hue else agg
        g = g.set_index(x).reindex(cats)
        pos = [j + (i - (len(hues) - 1) / 2) * width for j in range(len(cats))]
        err = _yerr(g)
        ax.bar(pos, g["mean"], width, yerr=err, label=None if h is None else literal(h))
    ax.set_xticks(
        range(len(cats)),
        [literal(c) for c in cats],
        rotation=30 if len(cats) > 6 else 0,
        ha="right" if len(cats) > 6 else "center",
    )
    ax.set_xlabel(literal(LABELS.get(x, x)))
    ax.set_ylabel(literal(LABELS.get(y, y)))
    if hue:
        _legend_outside(ax, literal(hue))
    if title:
        ax.set_title(literal(title))
    return ax


def _legend_outside(ax: Axes, title: str) -> None:
    """The legend to the right of the axes, where it never hides a bar or a point."""
    ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _natural(values: pd.Series) -> list[Any]:
    """Sort labels such as ``itrs-45nm-2 < itrs-45nm-10`` by their numbers."""
    import re

    def key(v: Any) -> tuple:
        parts = re.split(r"(\d+)", str(v))
        return tuple(int(p) if p.isdigit() else p for p in parts)

    return sorted(values.unique(), key=key)


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
    _warn_mixed(
        data,
        [k for k in (x, hue, col) if k],
        warn or _warn_user,
        spelled(
            "give them hue= or col=, or keep one with filter_frame(df, wheres)",
            "give them --hue or --col, or keep one with --where",
        ),
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


def _warn_user(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=4)  # the caller of sweep_figure


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


def figure_format(path: str | Path) -> str:
    """The figure format of ``path`` from its suffix (``png`` when it has none).

    Raises
    ------
    ConfigError
        The suffix is not a format matplotlib writes; the message lists those it does.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    from simsched.files import check_path

    fmt = check_path(path, "path").suffix.lstrip(".").lower() or "png"
    supported = sorted(FigureCanvasBase.get_supported_filetypes())
    if fmt not in supported:
        raise ConfigError(
            f"{path}: unsupported figure format {fmt!r} (use one of {', '.join(supported)})"
        )
    return fmt


#: savefig metadata that leaves out the formats' creation dates
_UNDATED: dict[str, dict[str, None]] = {
    "pdf": {"CreationDate": None},
    "svg": {"Date": None},
}


@contextlib.contextmanager
def _source_date_epoch(value: str) -> Iterator[None]:
    """Set ``SOURCE_DATE_EPOCH`` to ``value`` for the block, then restore it."""
    before = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = before


def check_tex(path: str | os.PathLike) -> None:
    """Refuse a PGF figure at ``path`` when its TeX program is not installed.

    PGF lays text out with TeX (``pgf.texsystem``, xelatex by default): without it
    matplotlib ended in a traceback after the figure was drawn.

    Parameters
    ----------
    path
        The figure file (named in the message).

    Raises
    ------
    ConfigError
        The TeX program is not on ``PATH``.
    """
    import shutil

    tex = plt.rcParams["pgf.texsystem"]
    if shutil.which(tex) is None:
        raise ConfigError(
            f"{path}: a PGF figure needs {tex} (TeX) to lay out its text, and {tex} is not "
            f"installed; install TeX or save as .pdf or .svg"
        )


def _save_pgf(fig: Figure, path: Path, tmp: Path, dots: dict[str, Any]) -> None:
    """Write ``fig`` as PGF into ``tmp``, which becomes ``path``.

    PGF keeps a raster image in a PNG beside the file, named after the file and named so
    inside it: written to the temporary it was ``.<name>.<random>.tmp-img0.png``, left
    behind and referenced by a name that the rename to ``path`` left dangling.  So the
    figure is drawn under its own name in a private folder, its images moved beside
    ``path`` first (each atomically), the PGF last.  PGF takes no metadata at all (even
    None is a TypeError).
    """
    import tempfile

    from simsched.files import atomic_output

    with tempfile.TemporaryDirectory(prefix=".simsched-pgf-", dir=tmp.parent) as d:
        drawn = Path(d) / path.name
        fig.savefig(drawn, format="pgf", **dots)
        for img in sorted(Path(d).glob(f"{glob_escape(path.stem)}-img*.png")):
            with atomic_output(path.with_name(img.name)) as out:
                os.replace(img, out)
        os.replace(drawn, tmp)


#: the largest resolution :func:`save` draws at (a figure of 10^6 dots per inch needs
#: terabytes of memory)
MAX_DPI = 2400


def _check_dpi(dpi: Any) -> float:
    """``dpi`` as a float in ``(0, MAX_DPI]``, else a one-line :class:`ConfigError`."""
    ok = isinstance(dpi, numbers.Real) and not isinstance(dpi, bool)
    if not ok or not 0 < float(dpi) <= MAX_DPI:  # nan fails the comparison too
        raise ConfigError(
            f"dpi={shown(dpi)}: expected a number of dots per inch, more than 0 and at most "
            f"{MAX_DPI} (None: the style's)"
        )
    return float(dpi)


def save(fig: Figure, path: str | os.PathLike, *, dpi: float | None = None) -> Path:
    """Save ``fig`` atomically (:func:`simsched.files.atomic_output`) and close it.

    The format comes from the suffix (see :func:`figure_format`); ``dpi`` is the resolution
    of a raster format (None: the style's).

    Raises
    ------
    ConfigError
        ``fig`` is not a matplotlib figure, ``path`` not a path, ``dpi`` not a number from
        more than 0 to :data:`MAX_DPI`, the suffix is not a figure format, or the format is
        PGF and TeX is not installed.
    """
    from simsched.files import atomic_output, check_path

    if not isinstance(fig, Figure):
        hint = "; pass its .figure" if isinstance(fig, Axes) else ""
        got = "None" if fig is None else type(fig).__name__
        raise ConfigError(f"fig: expected a matplotlib Figure, got {got}{hint}")
    try:
        path = check_path(path, "path")
        dots: dict[str, Any] = {} if dpi is None else {"dpi": _check_dpi(dpi)}
        fmt = figure_format(path)
        if fmt == "pgf" and (fig.axes or fig.texts or fig.legends or fig.images):
            # an image is placed with a TeX command matplotlib asks TeX for
            check_tex(path)
        # a PDF, SVG or PostScript file dated by the clock, with SVG ids salted at random,
        # differed on every save of the same figure
        # every format undated: matplotlib's PDF writer read SOURCE_DATE_EPOCH even so, and
        # a value that is no date ended the save in a traceback
        with (
            atomic_output(path) as tmp,
            plt.rc_context({"svg.hashsalt": "simsched"}),
            _source_date_epoch("0"),
        ):
            if fmt == "svgz":
                # matplotlib's gzip stream carries the clock's time and the temporary's name
                buf = io.BytesIO()
                fig.savefig(buf, format="svg", metadata=_UNDATED["svg"], **dots)
                tmp.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
            elif fmt in ("ps", "eps"):
                # PostScript takes no date from metadata, only from SOURCE_DATE_EPOCH (0, set
                # above), and
                # titles a file it is given by name with that name (here the temporary's)
                buf = io.BytesIO()
                fig.savefig(buf, format=fmt, **dots)
                tmp.write_bytes(buf.getvalue())
            elif fmt == "pgf":
                _save_pgf(fig, path, tmp, dots)
            else:
                undated: dict[str, Any] = {"metadata": _UNDATED[fmt]} if fmt in _UNDATED else {}
                fig.savefig(tmp, format=fmt, **dots, **undated)
    finally:
        plt.close(fig)
    return path
