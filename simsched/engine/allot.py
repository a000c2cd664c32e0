"""Processor allotment: EQUI and DEQ ([SAWS12] §4.3, Algorithm 1) in whole cores.

Design
------
Two pure functions from job counts or desires to integer allotments (numpy int64 arrays in
job order); the processor controllers of the multi-job engine call them at every arrival,
completion or quantum boundary and then decide *which* cores move.  Nothing here knows
cores, sockets or time.

**EQUI** ([SAWS12] §4.3) divides the cores evenly among the running jobs, ignoring desires.
``P / n`` is rarely whole: every job gets ``floor(P / n)`` and the ``P mod n`` cores left
over go one each to the first jobs in job order (the oldest, when jobs are numbered by
arrival), so allotments differ by at most one and sum to ``P``.  With more jobs than cores
the first ``P`` jobs get one core and the rest none.

**DEQ** ([SAWS12] Algorithm 1, after McCann et al.): with the job set ``J`` and ``P``
cores, the jobs whose desire is at most the equal share, ``S = {J_i : d_i <= P/|J|}``, get
their desire, and DEQ recurses on the other jobs with the cores left; when ``S`` is empty
every job gets ``P/|J|``.  The paper's shares are real numbers; cores are not, so simsched
keeps the recursion exactly and rounds only in its last step:

* membership of ``S`` is decided with the exact share (``d_i <= P // |J|``, which for whole
  desires is ``d_i * |J| <= P`` without the product), so no job enters or leaves ``S`` by
  rounding, and any desire an int64 holds is served correctly;
* in the last step (``S`` empty) the ``P'`` cores left are split as EQUI splits them:
  ``floor(P'/n')`` each, the remainder one each to the first jobs in job order.

Properties (tested): every allotment is at most its job's desire (a job in ``S`` gets
exactly its desire; a job in the last step has an integer desire ``> P'/n'``, hence at
least ``floor(P'/n') + 1``); the allotments sum to at most ``P``, and to exactly ``P`` when
the desires add up to at least ``P``; and when no more than ``P`` jobs have a positive
desire, each of them gets at least one core (the cores left at each level are at least
the number of jobs still unserved, because a job served in ``S`` took at most the share).
A job with desire 0 gets nothing.  Desires are whole numbers of cores: a scheduler whose
desire is real (SAWS Eq. 1, A-Steal) converts it first
(:func:`simsched.schedulers.desire.desire_request`).

The recursion runs as a loop (each level removes ``S`` from ``J``; at most ``|J|`` levels).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.errors import ConfigError
from simsched.params import check_int, check_ints


def _equal_split(n: int, cores: int) -> np.ndarray:
    """``cores`` split over ``n`` jobs: floor share each, remainder to the first jobs."""
    out = np.full(n, cores // n if n else 0, dtype=np.int64)
    out[: cores % n if n else 0] += 1
    return out


def equi_allot(n_jobs: int, P: int) -> np.ndarray:
    """EQUI: ``P`` cores divided evenly among ``n_jobs`` jobs ([SAWS12] §4.3).

    Parameters
    ----------
    n_jobs
        Number of running jobs.
    P
        Number of cores.

    Returns
    -------
    numpy.ndarray
        int64 allotment per job (job order); shares differ by at most one, the first
        ``P mod n_jobs`` jobs get the larger one; the sum is ``P`` (0 without jobs).

    Raises
    ------
    ConfigError
        ``n_jobs`` or ``P`` is not a non-negative integer.

    Examples
    --------
    >>> equi_allot(3, 8).tolist()
    [3, 3, 2]
    """
    return _equal_split(check_int("jobs", n_jobs), check_int("cores P", P))


def deq_allot(desires: Any, P: int) -> np.ndarray:
    """DEQ: dynamic equipartitioning under desires, [SAWS12] §4.3, Algorithm 1.

    Parameters
    ----------
    desires
        Processor desire of every running job, whole numbers >= 0, in job order.
    P
        Number of cores.

    Returns
    -------
    numpy.ndarray
        int64 allotment per job: never more than the job's desire, summing to at most
        ``P``; the rounding of the last equal split is in the module docstring.

    Raises
    ------
    ConfigError
        A desire is negative or not a whole number, or ``P`` is not a non-negative integer.

    Examples
    --------
    Two jobs want little, two want much; 16 cores: the small ones get their desire
    (2 <= 16/4 and 3 <= 16/4), the other two split the 11 cores left (6 and 5):

    >>> deq_allot([2, 40, 3, 9], 16).tolist()
    [2, 6, 3, 5]
    """
    cores = check_int("cores P", P)
    d = check_ints("desires", desires)
    if d.ndim != 1:
        raise ConfigError(f"desires must be a 1-D sequence, got shape {d.shape}")
    out = np.zeros(d.shape[0], dtype=np.int64)
    active = np.arange(d.shape[0])
    while active.size:  # one level of Algorithm 1's recursion per pass
        n = active.size
        # line 3: d_i <= P/|J|, exactly: for whole d_i, d_i * n <= P is d_i <= P // n, which
        # cannot overflow int64 as the product does for a desire near 2^63 / n (a wrapped
        # product is negative, and the job was served billions of cores)
        in_s = d[active] <= cores // n
        if not in_s.any():  # lines 4-7: equal shares of what is left
            out[active] = _equal_split(n, cores)
            break
        served = active[in_s]  # lines 9-11: desires met, recurse on the rest
        out[served] = d[served]
        cores -= int(d[served].sum())
        active = active[~in_s]
    return out
