"""The figures' contract with a notebook: an argument of the wrong kind is a one-line
ConfigError naming it, never an exception from deep inside matplotlib or pandas.

Each drawing function is called with valid arguments except one, which hypothesis
replaces by a value of another kind (a number, a text, None, a list, a mapping, a table,
an array, an object).  The call either draws or raises :class:`ConfigError`; any other
exception fails (an API fuzz of the same shape found about 40 such failures at once).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simsched import plotting as P  # noqa: E402
from simsched.errors import ConfigError  # noqa: E402
from simsched.experiments.analysis import scheduler_ratios  # noqa: E402
from simsched.plotting.iterations import plot_iterations  # noqa: E402
from simsched.plotting.timeline import plot_timeline  # noqa: E402
from tests.plotting.test_figures import results  # noqa: E402

TABLE = results()
AGG = P.aggregate(TABLE, "cores", "makespan_cycles", "scheduler")
TIMELINE = {
    "core": np.array([0, 1, 0]),
    "start": np.zeros(3, np.int64),
    "end": np.array([10, 20, 30], np.int64),
    "frame": np.array([0, 1, 2], np.int64),
    "socket_of_core": np.array([0, 1]),
}
RECORD = {"scheduler": "laws", "seed": 0, "iteration_cycles": [10, 12, 11]}

#: (function, valid arguments): each call draws when nothing is replaced
CALLS: list[tuple[Callable[..., Any], dict[str, Any]]] = [
    (P.aggregate, {"df": TABLE, "x": "cores", "y": "makespan_cycles", "hue": "scheduler"}),
    (P.line_plot, {"df": AGG, "x": "cores", "y": "mean", "hue": "scheduler", "title": "t"}),
    (P.bar_plot, {"df": TABLE, "x": "machine", "y": "mpki", "hue": "scheduler", "title": "t"}),
    (P.speedup_vs_cores, {"df": TABLE, "hue": "scheduler", "title": "t"}),
    (P.mpki_by_config, {"df": TABLE, "config": "machine", "metric": "mpki", "title": "t"}),
    (P.normalised_time, {"df": TABLE, "config": "machine", "baseline": "ws"}),
    (P.normalised_time_bars, {"df": TABLE, "baseline": "ws", "title": "t"}),
    (
        P.sweep_figure,
        {"df": TABLE, "x": "cores", "y": "speedup", "hue": "scheduler", "col": "workload"},
    ),
    (P.figure_speedup_misses, {"df": TABLE, "workloads": ["mergesort"]}),
    (P.figure_time_vs_cores, {"df": TABLE, "workloads": ["mergesort"], "zoom": (10, 26)}),
    (scheduler_ratios, {"df": TABLE, "a": "pdf", "b": "ws", "misses": "mpki"}),
    (plot_timeline, {"arrays": TIMELINE, "color_by": "socket", "title": "t"}),
    (plot_iterations, {"records": [RECORD], "title": "t"}),
]

WRONG = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            -1,
            2**70,
            float("nan"),
            "",
            "nosuch",
            b"x",
            [],
            [1, 2],
            {"a": 1},
            ("a", "b"),
            np.array([1, 2]),
            pd.DataFrame(),
            pd.DataFrame({"a": [1]}),
            object(),
        ]
    ),
    st.text(max_size=8),
    st.integers(),
)


def _names(fn: Callable[..., Any]) -> list[str]:
    sig = inspect.signature(fn)
    return [n for n, p in sig.parameters.items() if p.kind is not p.VAR_KEYWORD]


@pytest.mark.parametrize(("fn", "args"), CALLS, ids=[c[0].__name__ for c in CALLS])
@given(data=st.data())
def test_one_wrong_argument_draws_or_is_named(fn, args, data):
    name = data.draw(st.sampled_from(_names(fn)), label="parameter")
    value = data.draw(WRONG, label="value")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sweep_figure's note on mixed labels
            fn(**{**args, name: value})
    except ConfigError as exc:
        assert "\n" not in str(exc)
    finally:
        plt.close("all")


@pytest.mark.parametrize(("fn", "args"), CALLS, ids=[c[0].__name__ for c in CALLS])
def test_the_valid_calls_draw(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(**args)
    plt.close("all")
