"""Comparing two schedulers across a sweep: the numbers studies quote.

The PDF paper ([PDF07] §5.1) reports, per benchmark and configuration, the
*relative speedup* of PDF over WS (WS's execution time divided by PDF's) and how many fewer
L2 misses per instruction PDF incurs (``1 − misses_PDF / misses_WS``).  :func:`scheduler_ratios`
computes both from a results table, averaging randomised schedulers over their seeds first
(mean execution time, mean misses), which is how a reader of the paper's bar charts compares
them; :func:`ratio_ranges` condenses them into the "1.03–1.19×" ranges the paper's text
quotes.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from simsched.errors import ConfigError, shown

#: the columns of :func:`scheduler_ratios` after the grouping keys
_RATIO_COLUMNS = (
    "time_a",
    "time_b",
    "speedup_a_over_b",
    "misses_a",
    "misses_b",
    "miss_reduction",
    "runs_a",
    "runs_b",
)


def scheduler_ratios(
    df: pd.DataFrame,
    *,
    a: str = "pdf",
    b: str = "ws",
    misses: str = "mpki",
    by: tuple[str, ...] = ("workload", "machine", "cores"),
) -> pd.DataFrame:
    """Per configuration: speedup of scheduler ``a`` over ``b`` and ``a``'s miss reduction.

    Parameters
    ----------
    df
        Results table (one row per run) with ``scheduler``, ``status``, ``makespan_cycles``
        and the ``misses`` column.
    a, b
        Scheduler labels; ratios are ``b / a`` for time (> 1: ``a`` is faster).
    misses
        Miss metric compared (default ``mpki``, last-level misses per 1000 instructions).
    by
        Columns that identify one configuration.

    Returns
    -------
    pandas.DataFrame
        One row per configuration run under both schedulers: ``by`` columns, ``time_a``,
        ``time_b`` (mean cycles), ``speedup_a_over_b``, ``misses_a``, ``misses_b``,
        ``miss_reduction`` (fraction, > 0: ``a`` misses less), ``runs_a``, ``runs_b``.

    Raises
    ------
    ConfigError
        A needed column is missing.
    """
    # matplotlib: only when it is asked for
    from simsched.plotting.figures import check_columns, check_given, check_numeric, ok_rows

    if isinstance(by, str) or not isinstance(by, Iterable):
        # a lone name was iterated letter by letter ("no column 'w'")
        raise ConfigError(f"by={shown(by)}: expected a list of column names, e.g. ['workload']")
    by = tuple(by)
    if not by:  # one configuration of everything: the grouping below needs a key
        raise ConfigError("by=(): give at least one column naming a configuration")
    for name, label in (("a", a), ("b", b)):
        if not isinstance(label, str):
            raise ConfigError(f"{name}={shown(label)}: expected a scheduler label, e.g. 'ws'")
    check_given(misses=misses, **{f"by[{i}]": c for i, c in enumerate(by)})
    need = ["scheduler", "makespan_cycles", misses, *by]
    try:
        check_columns(df, need)
    except ConfigError as exc:
        raise ConfigError(f"scheduler ratios: {exc}") from None
    data = ok_rows(df)
    for col, what in (("makespan_cycles", None), (misses, f"misses={shown(misses)}")):
        check_numeric(data, col, what, bools=False)
    keys = list(by)
    per = (
        data[data["scheduler"].isin([a, b])]
        .groupby([*keys, "scheduler"])
        .agg(
            time=("makespan_cycles", "mean"),
            miss=(misses, "mean"),
            runs=("makespan_cycles", "size"),
        )
        .unstack("scheduler")
    )
    if per.empty or a not in per["time"].columns or b not in per["time"].columns:
        return pd.DataFrame(columns=[*keys, *_RATIO_COLUMNS])
    out = pd.DataFrame(
        {
            "time_a": per["time"][a],
            "time_b": per["time"][b],
            "misses_a": per["miss"][a],
            "misses_b": per["miss"][b],
            "runs_a": per["runs"][a],
            "runs_b": per["runs"][b],
        }
    ).dropna(subset=["time_a", "time_b"])
    out["speedup_a_over_b"] = out["time_b"] / out["time_a"]
    out["miss_reduction"] = 1.0 - out["misses_a"] / out["misses_b"]
    return (
        out[list(_RATIO_COLUMNS)]
        .reset_index()
        .sort_values(keys, kind="stable")
        .reset_index(drop=True)
    )


def ratio_ranges(ratios: pd.DataFrame, *, min_cores: int = 2) -> pd.DataFrame:
    """Min and max of speedup and miss reduction per workload, over configurations with at
    least ``min_cores`` cores (the paper quotes 2–32 cores: one core has nothing to share).
    """
    part = ratios[ratios["cores"] >= min_cores]
    if part.empty:
        return pd.DataFrame(
            columns=[
                "workload",
                "speedup_min",
                "speedup_max",
                "miss_reduction_min",
                "miss_reduction_max",
                "configs",
            ]
        )
    agg = part.groupby("workload").agg(
        speedup_min=("speedup_a_over_b", "min"),
        speedup_max=("speedup_a_over_b", "max"),
        miss_reduction_min=("miss_reduction", "min"),
        miss_reduction_max=("miss_reduction", "max"),
        configs=("speedup_a_over_b", "size"),
    )
    return agg.reset_index()
