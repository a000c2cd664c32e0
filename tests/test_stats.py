"""Tests of simsched.stats: Student's t quantile against published tables; log-scale
half-widths; the reader of a record's interval field."""

import math

import numpy as np
import pytest

from simsched.stats import interval_ends, log_half_width, t_quantile


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452), (1000, 1.9623)],
)
def test_t_quantile_matches_tables(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def _t_cdf_above_half(q, df, steps=4000):
    """``P(0 <= T <= q)`` by Simpson's rule on Student's density (the slow, obvious way)."""
    import math

    def pdf(x):
        return math.exp(
            math.lgamma((df + 1) / 2)
            - math.lgamma(df / 2)
            - 0.5 * math.log(df * math.pi)
            - (df + 1) / 2 * math.log1p(x * x / df)
        )

    h = q / steps
    acc = pdf(0.0) + pdf(q) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, steps))
    return acc * h / 3


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
@pytest.mark.parametrize("df", [1, 2, 3, 5, 8, 33, 400, 401, 2000])
def test_t_quantile_inverts_the_distribution(p, df):
    """Every degree of freedom the series and the Cornish-Fisher branch serve (both
    parities, either side of 400): the quantile's probability is ``p``."""
    assert 0.5 + _t_cdf_above_half(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


def test_log_half_width():
    assert log_half_width(100.0, 100.0) == 0.0
    assert log_half_width(50.0, 200.0) == pytest.approx(math.log(2))
    assert log_half_width(0.0, 1.0) == math.inf and log_half_width(-1.0, 1.0) == math.inf


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ([1.0, 2.0], (1.0, 2.0)),
        ((3, 4), (3.0, 4.0)),
        (np.array([5.0, 6.0]), (5.0, 6.0)),
        ("[7.5, 8.5]", (7.5, 8.5)),
        # JSON has no infinity: a speedup whose makespan interval reaches zero
        ("[9.0, null]", (9.0, math.inf)),
        ([9.0, None], (9.0, math.inf)),
    ],
)
def test_interval_ends_reads_a_record_or_a_table_cell(cell, expected):
    assert interval_ends(cell) == expected


@pytest.mark.parametrize(
    "cell",
    [
        None,
        math.nan,
        [],
        "[]",
        "",
        "not json",
        "[1]",
        "[1, 2, 3]",
        "[null, 2]",
        '["a", 2]',
        {"lo": 1},
        3.0,
        [math.nan, 1.0],
        # a damaged table: an int past float's range, JSON nested past the parser's depth
        [10**400, 1],
        "[1, " + "9" * 400 + "]",
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=lambda c: repr(c)[:20],
)
def test_interval_ends_is_none_where_a_cell_holds_no_interval(cell):
    assert interval_ends(cell) is None
