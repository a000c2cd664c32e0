"""Checks of a figure's arguments and of the results table it is given.

A figure refuses a bad argument or column up front with a one-line :class:`ConfigError`
that names it, where pandas or matplotlib failed deep inside with a message that named
neither (``KeyError``, "unhashable type: 'list'", a mean of text); rows it cannot place are
left out with a warning at the user's line, never silently.  The checks are apart from the
drawing because they read the table only (pandas, no matplotlib) and are shared: by every
figure of the package and by :mod:`simsched.experiments.analysis`, through
:mod:`simsched.plotting.figures`, which re-exports the public ones.
"""

from __future__ import annotations

import numbers
import sys
import types
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simsched.errors import ConfigError, shown, spelled
from simsched.params import check_frame, column_hint


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


#: the package whose frames stand between a user's call of a figure function and a warning
#: about its rows: a figure, :func:`~simsched.plotting._primitives.aggregate`, these checks,
#: call each other across its modules (a prefix, so that a module split out of another
#: needs no list kept by hand)
_PLOTTING = "simsched.plotting"


def _in_plotting(module: object) -> bool:
    return isinstance(module, str) and (module == _PLOTTING or module.startswith(_PLOTTING + "."))


def _warn_caller(message: str) -> None:
    """``warnings.warn(message)`` (a ``UserWarning``) attributed to the first caller
    outside :mod:`simsched.plotting` (:data:`_PLOTTING`): the figure function a user
    called, however deep the call that warns."""
    level = 1
    frame: types.FrameType | None = sys._getframe(0)
    while frame is not None and _in_plotting(frame.f_globals.get("__name__")):
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
    if "status" in df.columns and df["status"].isna().all():
        # a table whose status column lost its values: no run failed
        rows = "its one row" if len(df) == 1 else f"all {len(df)} rows"
        return f"the status column is empty in {rows} (a run that ended well says 'ok')"
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
    try:
        values = series.astype(float)
    except OverflowError:  # Python ints past float's range (a damaged table)
        raise ConfigError(
            f"{what or f'column {col!r}'}: holds a number too large to plot"
        ) from None
    if not pd.api.types.is_bool_dtype(series) and np.isinf(values).any():
        # drawn without a word (or with matplotlib's warnings), and a log axis failed
        bad = series[np.isinf(values)].iloc[0]
        raise ConfigError(f"{what or f'column {col!r}'}: holds an infinite value ({bad})")


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
