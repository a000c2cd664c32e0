"""Student's t quantile for the confidence intervals of comparisons and sampled runs, and
the one reader of a record's interval field.

Written here rather than taken from SciPy: it is the only statistical function simsched
needs (for the paired-ratio intervals of :mod:`simsched.comparison` and the extrapolated
makespan of a sampled run, :mod:`simsched.engine.sampled`), and SciPy is not otherwise a
dependency.  The finite series is exact; tests compare it with published tables.
"""

from __future__ import annotations

import json
import math
from statistics import NormalDist
from typing import Any

__all__ = ["interval_ends", "log_half_width", "t_quantile"]


def _t_two_sided(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` degrees of freedom (exact finite series,
    Abramowitz & Stegun 26.7.3–4)."""
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if df % 2:
        term, acc = c, c if df > 1 else 0.0
        for k in range(1, (df - 3) // 2 + 1):
            term *= c2 * (2 * k) / (2 * k + 1)
            acc += term
        return 2.0 / math.pi * (theta + s * acc)
    term, acc = 1.0, 1.0
    for k in range(1, (df - 2) // 2 + 1):
        term *= c2 * (2 * k - 1) / (2 * k)
        acc += term
    return s * acc


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (``p`` > 0.5) of Student's t with ``df`` >= 1 degrees of freedom.

    Exact series inverted by bisection up to 400 degrees of freedom; beyond, the
    Cornish–Fisher expansion around the normal quantile (error below 1e-7 there).
    """
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t_quantile: need 0.5 < p < 1 and df >= 1, got p={p}, df={df}")
    if df > 400:
        z = NormalDist().inv_cdf(p)
        g1 = (z**3 + z) / 4
        g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
        g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
        return z + g1 / df + g2 / df**2 + g3 / df**3
    target = 2 * p - 1
    lo, hi = 0.0, 1.0
    while _t_two_sided(hi, df) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_two_sided(mid, df) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return (lo + hi) / 2


def log_half_width(lo: float, hi: float) -> float:
    """Half-width on the log scale of the interval ``[lo, hi]`` of a positive estimate.

    Intervals of independent estimates combine on this scale: the half-width of a ratio
    (or product) of two estimates is the root of the sum of their squares, the normal
    approximation, which adds variances.  An interval reaching zero bounds no ratio:
    infinite.
    """
    if lo <= 0 or hi <= 0:
        return math.inf
    return (math.log(hi) - math.log(lo)) / 2


def interval_ends(cell: Any) -> tuple[float, float] | None:
    """The ends ``(lo, hi)`` of an interval field of a record (``makespan_ci95``,
    ``speedup_ci95``): a pair, or its JSON text (a table's row, a CSV cell).

    A ``null`` upper end (a speedup whose makespan interval reaches zero; JSON has no
    infinity) is ``inf``.  None where the cell holds no interval: missing (None, NaN, an
    empty list), or text or values that are not a pair of numbers (a hand-edited CSV).
    """
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            return None
    if not isinstance(cell, (list, tuple)) and not hasattr(cell, "tolist"):
        return None
    ends = list(cell)
    if len(ends) != 2 or ends[0] is None:
        return None
    try:
        lo = float(ends[0])
        hi = math.inf if ends[1] is None else float(ends[1])
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past float's range
        return None
    return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)
