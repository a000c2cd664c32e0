"""Tests of simsched.engine.sampled: the extrapolated makespan of a sampled run and its
interval, and the samples' drift, worked by hand."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simsched.engine.sampled import sample_drift, sampled_makespan
from simsched.engine.sampling import SampleOutcome


def test_extrapolation_and_interval():
    ends = [100, 200, 300, 410, 500]  # samples: iterations 3, 4 (110 and 90 cycles)
    o = SampleOutcome(
        stopped=True,
        settled_at=3,
        settled_by="policy",
        detailed=5,
        samples=2,
        iterations=8,
        ends=ends,
        weights=np.full(8, 10),
        end_cycle=500,
        epilogue_instructions=4,
    )
    est = sampled_makespan(o, 2.0)
    # 3 iterations left at the samples' mean of 10 cycles per reference, epilogue 4 x 2
    assert est.makespan == 500 + 300 + 8 and est.epilogue_cycles == 8
    # t(0.975, 1) = 12.706; sd of (11, 9) = 1.414; three iterations of 10 references
    # left: the mean's share 30^2 / 2 and each iteration's own 3 x 10^2,
    # half = 12.706 x 1.414 x sqrt(450 + 300) = 492.1
    assert est.hi - est.makespan == pytest.approx(492.1, abs=1.5)
    # 808 - 492 would be below the 500 cycles replayed, which bound the makespan (the t
    # interval of two scattered samples reached below them, even below zero)
    assert est.lo == 500


#: t(0.975, df) from published tables (df = 1 .. 10)
T975 = [12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281]


@settings(max_examples=200, deadline=None)
@given(
    periods=st.lists(st.integers(1, 10_000), min_size=3, max_size=14),
    weights=st.lists(st.integers(0, 500), min_size=14, max_size=14),
    settled_at=st.integers(1, 3),
    samples=st.integers(2, 11),
    epilogue=st.integers(0, 50),
)
def test_makespan_and_interval_are_the_documented_formula(
    periods, weights, settled_at, samples, epilogue
):
    """docs/engine.md §7, worked the slow way: periods from the iteration ends, rates per
    reference over the samples only, the remaining iterations charged by their references
    at the samples' mean, and the prediction interval
    ``t(0.975, n-1) s sqrt(W^2 / n + sum w_j^2)``, never below the cycles replayed."""
    detailed = settled_at + samples
    assume(detailed <= len(periods) and detailed < len(weights))
    ends, now = [], 0
    for p in periods[:detailed]:
        now += p
        ends.append(now)
    o = SampleOutcome(
        stopped=True,
        settled_at=settled_at,
        settled_by="policy",
        detailed=detailed,
        samples=samples,
        iterations=len(weights),
        ends=ends,
        weights=np.array(weights),
        end_cycle=ends[-1],
        epilogue_instructions=epilogue,
    )
    est = sampled_makespan(o, 1.5)
    rates = [(ends[i] - ends[i - 1]) / max(weights[i], 1) for i in range(settled_at, detailed)]
    mean = sum(rates) / samples
    s = (sum((r - mean) ** 2 for r in rates) / (samples - 1)) ** 0.5
    left = [max(w, 1) for w in weights[detailed:]]
    big_w = sum(left)
    expect = ends[-1] + mean * big_w + round(epilogue * 1.5)
    half = T975[samples - 2] * s * (big_w**2 / samples + sum(w * w for w in left)) ** 0.5
    assert est.epilogue_cycles == round(epilogue * 1.5)
    assert abs(est.makespan - expect) <= 0.5 + 1e-9 * expect
    # the table's four decimals, and floor / ceil to whole cycles
    tol = 1e-4 * s * (big_w**2 / samples + sum(w * w for w in left)) ** 0.5 + 1 + 1e-9 * expect
    # the low end cut at the cycles replayed (the end of the last sample)
    assert abs(est.lo - max(expect - half, ends[-1])) <= tol
    assert abs((est.hi - expect) - half) <= tol
    assert est.lo <= est.makespan <= est.hi


def test_drift_of_samples_on_a_line():
    # iterations 2, 3, 4 are the samples, 10 references each: 100, 110, 120 cycles
    ends = [50, 100, 200, 310, 430]
    d = sample_drift(ends, np.full(8, 10), 2, 5)
    assert (d.first, d.last) == (2, 4)
    # 1 cycle per reference more each iteration over a mean of 11
    assert d.slope == pytest.approx(1 / 11) and d.t == np.inf and d.significant
    # iterations 5, 6, 7 at 13, 14, 15 cycles per reference against the mean's 11
    assert d.shift == (2 + 3 + 4) * 10


def test_samples_without_a_trend_do_not_drift():
    ends = [50, 100, 200, 310, 400, 510, 600]  # 100, 110, 90, 110, 90 cycles
    d = sample_drift(ends, np.full(9, 10), 2, 7)
    assert d.slope == pytest.approx(-0.2 / 10) and abs(d.t) < 1 and not d.significant
    flat = sample_drift([0, 10, 20, 30, 40], np.full(6, 1), 1, 5)
    assert flat.slope == 0 and flat.t == 0 and flat.shift == 0 and not flat.significant


def test_two_samples_have_no_drift():
    assert sample_drift([10, 20, 30], np.full(5, 1), 1, 3) is None


@settings(max_examples=200, deadline=None)
@given(
    periods=st.lists(st.integers(1, 10_000), min_size=5, max_size=14),
    weights=st.lists(st.integers(0, 500), min_size=15, max_size=15),
    settled_at=st.integers(1, 2),
)
def test_drift_is_the_least_squares_line(periods, weights, settled_at):
    """The slope and its t against numpy's least-squares fit, the shift summed the slow
    way: each left-out iteration's references x the line's rise above its value at the
    samples' middle."""
    ends = np.cumsum(periods).tolist()
    detailed = len(ends)
    d = sample_drift(ends, np.array(weights), settled_at, detailed)
    x = np.arange(settled_at, detailed)
    rates = [(ends[i] - ends[i - 1]) / max(weights[i], 1) for i in x]
    (slope, icpt), res, *_ = np.polyfit(x, rates, 1, full=True)
    mean = sum(rates) / len(rates)
    assert d.slope == pytest.approx(slope / mean, rel=1e-6, abs=1e-9)
    sse = float(res[0]) if len(res) else 0.0
    se = (sse / (len(x) - 2) / sum((xi - x.mean()) ** 2 for xi in x)) ** 0.5
    if se > 1e-9 * mean:
        assert d.t == pytest.approx(slope / se, rel=1e-4, abs=1e-6)
    shift = sum(max(weights[j], 1) * slope * (j - x.mean()) for j in range(detailed, len(weights)))
    assert abs(d.shift - shift) <= 0.5 + 1e-6 * abs(shift)
