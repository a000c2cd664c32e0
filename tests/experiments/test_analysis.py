"""Scheduler ratios: relative speedup and miss reduction, seeds averaged first."""

from __future__ import annotations

import pandas as pd
import pytest

from simsched.errors import ConfigError
from simsched.experiments.analysis import ratio_ranges, scheduler_ratios


def table() -> pd.DataFrame:
    rows = []
    for cores, pdf_t, ws_ts, pdf_m, ws_ms in (
        (1, 100.0, (100.0, 100.0), 2.0, (2.0, 2.0)),
        (4, 30.0, (33.0, 36.0), 1.0, (1.5, 1.7)),
        (16, 10.0, (11.0, 11.0), 0.6, (1.0, 1.0)),
    ):
        m = f"itrs-scaling-{cores}"
        rows.append(
            {
                "workload": "ms",
                "machine": m,
                "cores": cores,
                "scheduler": "pdf",
                "seed": 0,
                "status": "ok",
                "makespan_cycles": pdf_t,
                "mpki": pdf_m,
            }
        )
        for seed, (t, mm) in enumerate(zip(ws_ts, ws_ms, strict=True)):
            rows.append(
                {
                    "workload": "ms",
                    "machine": m,
                    "cores": cores,
                    "scheduler": "ws",
                    "seed": seed,
                    "status": "ok",
                    "makespan_cycles": t,
                    "mpki": mm,
                }
            )
    rows.append(
        {
            "workload": "ms",
            "machine": "itrs-scaling-4",
            "cores": 4,
            "scheduler": "ws",
            "seed": 7,
            "status": "error",
            "makespan_cycles": 1.0,
            "mpki": 99.0,
        }
    )
    return pd.DataFrame(rows)


def test_ratios_average_seeds_and_skip_failures():
    r = scheduler_ratios(table())
    four = r[r["cores"] == 4].iloc[0]
    assert four["time_b"] == pytest.approx(34.5)
    assert four["speedup_a_over_b"] == pytest.approx(34.5 / 30.0)
    assert four["miss_reduction"] == pytest.approx(1 - 1.0 / 1.6)
    assert (four["runs_a"], four["runs_b"]) == (1, 2)
    ranges = ratio_ranges(r).iloc[0]
    assert ranges["configs"] == 2  # the 1-core machine is left out
    assert ranges["speedup_min"] == pytest.approx(1.1)
    assert ranges["speedup_max"] == pytest.approx(1.15)
    assert ranges["miss_reduction_max"] == pytest.approx(0.4)


def test_missing_scheduler_gives_empty_table_and_missing_column_an_error():
    assert scheduler_ratios(table(), a="cab").empty
    with pytest.raises(ConfigError, match="no column 'L3_misses'"):
        scheduler_ratios(table(), misses="L3_misses")


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"df": 3}, "df: expected a pandas DataFrame"),
        ({"by": "workload"}, "by='workload': expected a list of column names"),
        ({"by": ()}, "by=(): give at least one column"),
        ({"by": ["workload", None]}, "by[1]=None: give the name"),
        ({"misses": None}, "misses=None: give the name"),
        ({"misses": ["mpki"]}, "no column ['mpki']"),
        ({"misses": "scheduler"}, "misses='scheduler': not a numeric column"),
        ({"b": 2**70}, "b=1180591620717411303424: expected a scheduler label"),
    ],
)
def test_a_wrong_argument_is_named(kwargs, says):
    """Before: AttributeError ('int' object has no attribute 'columns'), TypeError
    (unhashable type, a mean of text), OverflowError, or a lone name iterated letter by
    letter ("no column 'w'")."""
    args = {"df": table(), **kwargs}
    df = args.pop("df")
    with pytest.raises(ConfigError) as info:
        scheduler_ratios(df, **args)
    assert says in str(info.value)
