"""The marks every figure is made of: means over seeds, drawn as lines or grouped bars.

:func:`aggregate` reduces the successful runs of a results table to a mean with a min-max
range per mark, and :func:`line_plot` and :func:`bar_plot` draw those on given or new axes
with error bars from the min to the max over seeds, widened to a sampled run's 95 %
interval where its record keeps one (``makespan_ci95``, ``speedup_ci95``: an extrapolated
value is drawn with its uncertainty, not as if exact).  They are the building blocks that the named figures of
:mod:`simsched.plotting.figures` compose into panels, and are apart from those because they
know nothing of workloads, machines or baselines, only of the columns they are given.
:mod:`simsched.plotting.figures` re-exports the public ones.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes

from simsched.errors import ConfigError, shown
from simsched.params import check_flag
from simsched.plotting._checks import (
    _all_failed,
    _check_hashable,
    _check_log_x,
    _drop_missing,
    check_columns,
    check_given,
    check_numeric,
    check_title,
)
from simsched.plotting._style import literal
from simsched.stats import interval_ends

# Readable axis labels for the record's fields (others are shown as they are named).
LABELS = {
    "cores": "cores",
    "speedup": "speedup over one core",
    "makespan_cycles": "execution time (cycles)",
    "mpki": "last-level misses per 1000 instructions",
    "L2_misses": "L2 misses",
    "norm_time": "execution time normalised to baseline",
}


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of successful runs (all rows if there is no ``status`` column)."""
    if "status" in df.columns:
        return df[df["status"] == "ok"]
    return df


#: Columns whose value a sampled run extrapolates, and the column of its 95 % interval.
INTERVALS = {"makespan_cycles": "makespan_ci95", "speedup": "speedup_ci95"}


def _interval_end(cell: Any, end: int) -> float:
    """End ``end`` (0: low, 1: high) of a record's interval cell (a list, or JSON text in a
    CSV table); NaN where there is none (no interval kept, or no upper bound)."""
    got = interval_ends(cell)
    return math.nan if got is None or math.isinf(got[end]) else got[end]


def _is_true(value: Any) -> bool:
    """A ``sampled`` cell: a bool (NumPy's too), 0/1, or its text in a CSV table; missing
    (NaN, None) is not sampled."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1")
    try:
        return not math.isnan(value) and bool(value)
    except (TypeError, OverflowError):  # not a number, or an int past float's range
        return False


def _bounds(data: pd.DataFrame, y: str) -> tuple[pd.Series, pd.Series]:
    """Each row's lowest and highest value of ``y``: its sampled interval's ends where it is
    sampled and keeps one, else ``y`` itself (an interval with no upper bound widens the
    bar downward only)."""
    values = data[y].astype(float)
    col = INTERVALS.get(y)
    if col is None or col not in data.columns or "sampled" not in data.columns:
        return values, values
    sampled = data["sampled"].map(_is_true)
    lo = data[col].map(lambda c: _interval_end(c, 0)).where(sampled)
    hi = data[col].map(lambda c: _interval_end(c, 1)).where(sampled)
    return lo.fillna(values).clip(upper=values), hi.fillna(values).clip(lower=values)


def sampled_widenings(data: pd.DataFrame, y: str) -> int:
    """How many rows of ``data`` (successful runs with a value of ``y``) have a sampled
    95 % interval that reaches beyond their value of ``y``: the rows whose interval widens
    an error bar, which a figure's caption then says."""
    values = data[y].astype(float)
    lo, hi = _bounds(data, y)
    return int(((lo < values) | (hi > values)).sum())


def aggregate(df: pd.DataFrame, x: str, y: str, hue: str | None = None) -> pd.DataFrame:
    """Mean, min, max and count of ``y`` per (``hue``, ``x``) over successful runs, and the
    range its error bars span.

    Parameters
    ----------
    df
        Results table.
    x, y, hue
        Column names; ``hue`` may be ``None``.

    Returns
    -------
    pandas.DataFrame
        Columns ``hue`` (if given), ``x``, ``mean``, ``min``, ``max``, ``n``, sorted, and
        ``lo``, ``hi``: ``min`` and ``max`` widened to the 95 % intervals of the sampled
        runs among them (``makespan_cycles`` and ``speedup``, :data:`INTERVALS`).
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
    lo, hi = _bounds(data, y)
    data = data.assign(_lo=lo, _hi=hi)
    grouped = data.groupby(keys, sort=True)
    agg = grouped[y].agg(["mean", "min", "max", "count"])
    agg["lo"], agg["hi"] = grouped["_lo"].min(), grouped["_hi"].max()
    return agg.reset_index().rename(columns={"count": "n"})


def _marks(df: pd.DataFrame, x: str, y: str, hue: str | None) -> pd.DataFrame:
    """:func:`aggregate` of a line or bar plot, which draws a mark per row: a table of no
    row is a one-line :class:`ConfigError` (empty axes were drawn without a word, or the
    bar width was divided by no hues)."""
    agg = aggregate(df, x, y, hue)
    if agg.empty:
        why = f": {_all_failed(df)}" if len(df) and ok_rows(df).empty else ""
        raise ConfigError(f"no rows to plot (no run with a value of {shown(y)}){why}")
    return agg


def _yerr(g: pd.DataFrame) -> list[pd.Series]:
    """Error bars from ``lo`` to ``hi`` (min to max, widened to sampled runs' intervals);
    clipped at 0 because a mean of equal floats can round past them."""
    return [(g["mean"] - g["lo"]).clip(lower=0), (g["hi"] - g["mean"]).clip(lower=0)]


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
    """``y`` against numeric ``x``, one line per ``hue`` value, min–max bars over seeds
    (widened to sampled runs' 95 % intervals)."""
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
    """Grouped bars of mean ``y`` per category ``x`` and ``hue``, min–max over seeds
    (widened to sampled runs' 95 % intervals)."""
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
