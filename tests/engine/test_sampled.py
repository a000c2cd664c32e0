"""Tests of simsched.engine.sampled: the extrapolated makespan of a sampled run and its
interval, worked by hand."""

import numpy as np
import pytest

from simsched.engine.sampled import sampled_makespan
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
    assert est.makespan - est.lo == pytest.approx(492.1, abs=1.5)
