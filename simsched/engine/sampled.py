"""What a sampled run reports: the extrapolated makespan, its interval, the record's fields.

:class:`~simsched.engine.sampling.IterationSampler` decides when a replay may stop (the
mechanism); this module turns what it saw into the run's answer (docs/engine.md §7):
:func:`sampled_makespan` extrapolates the remaining iterations at the samples' mean cycles
per reference, with a 95 % prediction interval that adds each remaining iteration's own
variation to the mean's, and :func:`sample_fields` writes the sampling fields of the
result record (docs/results.md, "Sampling").  :func:`make_sampler` builds the sampler of
a run from its options (``--sample-iterations``, ``--sample-precision``), so that
:func:`simsched.run` and the one-core baseline sample alike.  :func:`sample_drift` looks
for what the extrapolation cannot see, a steady trend in the samples' rate (a least-squares
line and its t test); it reports and does not correct, so that a run's answer does not
depend on a test that noise sometimes fails.
"""

from __future__ import annotations

import enum
import json
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.engine.record import dumps
from simsched.engine.sampling import (
    IterationSampler,
    SampleOutcome,
    iteration_ends,
    iteration_rates,
    untuned_settled_at,
)
from simsched.errors import ConfigError, spelled
from simsched.params import check_int, python_scalars
from simsched.stats import t_quantile

if TYPE_CHECKING:
    from simsched.engine.outcome import EngineResult
    from simsched.trace import Trace

__all__ = [
    "DEFAULT_SAMPLE_PRECISION",
    "MAX_SAMPLES",
    "MIN_SAMPLES",
    "DRIFT_CONFIDENCE",
    "PRECISION_UNSET",
    "SampleDrift",
    "SampledMakespan",
    "check_sampleable",
    "check_sampled_iterations",
    "check_sampling",
    "detailed_cpi",
    "make_sampler",
    "Resampled",
    "resample",
    "sample_drift",
    "sample_fields",
    "sampled_makespan",
    "stop_hook",
    "stop_points",
    "trace_iterations",
]


#: Fewest samples of a sampled run (an interval needs two).
MIN_SAMPLES = 2

#: Default ``sample_precision``: sampling goes on until the 95 % interval's half-width is
#: at most this share (%) of the extrapolated makespan.
DEFAULT_SAMPLE_PRECISION = 0.5


def check_sampled_iterations(iterations: str | None) -> None:
    """Refuse sampling a run whose ``--iterations none`` removes the iterations: else the
    trace "has no iterations" and the error suggests ``--iterations auto``."""
    if iterations == "none":
        raise ConfigError(
            spelled(
                "sample_iterations samples iterations, and iterations='none' removes them",
                "--sample-iterations samples iterations, and --iterations none removes them",
            )
        )


#: Most samples ``sample_iterations`` may ask for.
MAX_SAMPLES = 1_000_000


class Unset(enum.Enum):
    """Type of :data:`PRECISION_UNSET`."""

    PRECISION_UNSET = "unset"

    def __repr__(self) -> str:
        return f"<default: {DEFAULT_SAMPLE_PRECISION} % when sampling>"


#: Default ``sample_precision`` of :func:`simsched.run` and
#: :func:`simsched.baseline.baseline_makespan`: told apart
#: from a given value, so that a precision given without ``sample_iterations`` (which
#: would be ignored) is refused, as ``--sample-precision`` alone is.
PRECISION_UNSET = Unset.PRECISION_UNSET


def _check_precision(value: Any) -> float | None:
    """``sample_precision`` as a float in ``[0, 100]`` (None stays None), else a one-line
    :class:`ConfigError`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ConfigError(f"sample_precision={value!r}: expected a number (percent)")
    if not 0.0 <= float(value) <= 100.0:
        raise ConfigError(f"sample_precision={value}: must be between 0 and 100 (percent)")
    return float(value)


def check_sampling(
    sample_iterations: Any, sample_precision: Any
) -> tuple[int | None, float | None]:
    """``sample_iterations`` (None: no sampling) and ``sample_precision`` checked as
    :func:`simsched.run` and :func:`simsched.baseline.baseline_makespan` take them
    (:data:`PRECISION_UNSET`: the default, :data:`DEFAULT_SAMPLE_PRECISION`).  A precision
    given without ``sample_iterations`` is refused: it would be ignored without a word."""
    if sample_precision is PRECISION_UNSET:
        precision: float | None = DEFAULT_SAMPLE_PRECISION
    else:
        precision = _check_precision(sample_precision)
        if sample_iterations is None and precision is not None:
            given = python_scalars(sample_precision)
            raise ConfigError(
                f"sample_precision={given!r} applies with sample_iterations only "
                "(it would be ignored)"
            )
    if sample_iterations is None:
        return None, None
    return check_int("sample_iterations", sample_iterations, MIN_SAMPLES, MAX_SAMPLES), precision


def check_sampleable(t: Trace, name: str, iterations: str | None = None) -> int:
    """The number of iterations of ``t``, or a :class:`ConfigError` when it has none to
    sample (``name`` and ``iterations`` as :func:`make_sampler` takes them).

    :func:`simsched.compare` relabels the iterations once for all its runs and checks here,
    so that the remedy names the ``iterations`` mode the caller gave.
    """
    n = trace_iterations(t)
    if n == 0:
        # the usual remedy is --iterations auto: when that is what found none, say so
        auto = spelled("iterations='auto'", "--iterations auto")
        remedy = {
            None: f"mark them with SS_ITER or replay with {auto}",
            "markers": f"it has no SS_ITER marks; try {auto}",
            "auto": f"{auto} found none in its DAG either",
        }.get(iterations, "mark them with SS_ITER")
        option = spelled("sample_iterations", "--sample-iterations")
        raise ConfigError(
            f"{name}: the trace has no iterations, so {option} cannot sample it; " + remedy
        )
    return n


def leaves_none_out(k: int, n: int) -> bool:
    """Whether ``k`` samples of a trace of ``n`` iterations leave none out: the first
    iteration is never a sample, so such a run is replayed in detail and its policy never
    asked whether it settled."""
    return k + 1 >= n


def make_sampler(
    t: Trace, k: int, precision: float | None, name: str, iterations: str | None = None
) -> IterationSampler | None:
    """The sampler of a run of ``t`` with at least ``k`` samples.

    Parameters
    ----------
    t
        The trace, with the iterations the run replays.
    k
        Fewest samples (``--sample-iterations``).
    precision
        When given, sampling goes on until the 95 % interval's half-width is at most this
        share (%) of the extrapolated makespan (``--sample-precision``).
    name
        The trace as the user named it, for the error.
    iterations
        The run's ``--iterations`` relabelling (None: as the trace has them), for the
        error's remedy.

    Returns
    -------
    IterationSampler or None
        None when sampling could not leave an iteration out (the first iteration is never
        a sample).

    Raises
    ------
    ConfigError
        The trace has no iterations.
    """
    n = check_sampleable(t, name, iterations)
    if leaves_none_out(k, n):
        return None
    if not precision:
        return IterationSampler(t, k)
    share = float(precision) / 100.0
    return IterationSampler(t, k, lambda o: _narrow_enough(o, share))


def _narrow_enough(outcome: SampleOutcome, share: float) -> bool:
    """The precision test: the 95 % interval's half-width is at most ``share`` of the
    extrapolated makespan (the epilogue does not move the interval)."""
    est = sampled_makespan(outcome, 0.0)
    return est.hi - est.lo <= 2.0 * share * est.makespan


def stop_hook(sampler: IterationSampler | None) -> Any:
    """The replay's ``stop_when`` for job 0 of a sampled run (None: not sampled)."""
    if sampler is None:
        return None
    done = sampler.strand_done

    def stop_when(job: int, strand: int, now: int, sched: Any) -> bool:
        return job == 0 and done(strand, now, sched)

    return stop_when


def trace_iterations(t: Trace) -> int:
    """Number of distinct iterations marked in ``t``'s frame table (0: none)."""
    it = np.asarray(t.frames.iteration)
    return int(np.unique(it[it >= 0]).size)


def _detailed_instructions(res: EngineResult, t: Trace) -> int:
    """Instructions of the strands a (partial) replay ran."""
    ran = np.asarray(res.strand_end) >= 0
    return int(np.asarray(t.strands.instr, dtype=np.int64)[ran].sum())


def detailed_cpi(res: EngineResult, t: Trace) -> float:
    """Cycles per instruction of the strands a (partial) replay ran, summed over cores."""
    instr = _detailed_instructions(res, t)
    return float(res.busy_cycles.sum()) / instr if instr else 1.0


@dataclass(frozen=True)
class SampledMakespan:
    """The extrapolated makespan of a sampled run (docs/engine.md §7).

    Attributes
    ----------
    makespan
        End of the last detailed iteration + the remaining iterations' references × the
        samples' mean cycles per reference + the epilogue.
    lo, hi
        95 % prediction interval of the makespan a detailed replay would give (Student t
        over the samples): the uncertainty of the samples' mean rate and the remaining
        iterations' own variation (docs/engine.md §7); ``lo`` is never below the end of
        the last detailed iteration.
    epilogue_cycles
        The estimate of the strands after the last iteration.
    """

    makespan: int
    lo: int
    hi: int
    epilogue_cycles: int


def sampled_makespan(outcome: SampleOutcome, cpi: float) -> SampledMakespan:
    """Extrapolate a stopped replay to the whole run.

    Parameters
    ----------
    outcome
        What the sampler saw (:meth:`IterationSampler.outcome`, ``stopped`` True); its
        ``samples`` last detailed iterations are the samples.
    cpi
        Cycles per instruction of the detailed part, for the epilogue (the strands after
        the last iteration, costed as if serial on one core).

    Returns
    -------
    SampledMakespan
    """
    k = outcome.samples
    rates = outcome.sample_rates()
    mean = float(np.mean(rates))
    sd = statistics.stdev(rates.tolist()) if k > 1 else 0.0
    left = np.maximum(outcome.weights[outcome.detailed :], 1).astype(np.float64)
    rest = float(left.sum())
    epi = round(outcome.epilogue_instructions * cpi)
    est = outcome.end_cycle + mean * rest + epi
    half = 0.0
    if k > 1:
        # A remaining iteration of w references costs w x its own rate, not w x the mean:
        # the interval holds the detailed replay's makespan only if it adds each one's
        # variance (sum of w^2 s^2) to the mean's (rest^2 s^2 / k).  The mean's term alone
        # held 54-85 % of detailed makespans of WS heat windows (docs/engine.md §7).
        spread = math.sqrt(rest * rest / k + float(np.dot(left, left)))
        half = t_quantile(0.975, k - 1) * sd * spread
    # the cycles already replayed bound the makespan from below: two scattered samples'
    # t interval reached below them, even below zero ("-469–175,515" cycles)
    lo = max(math.floor(est - half), outcome.end_cycle)
    return SampledMakespan(round(est), lo, math.ceil(est + half), epi)


def stop_points(
    ends: np.ndarray, settled_at: int, k: int, weights: np.ndarray, epilogue: int = 0
) -> Iterator[SampleOutcome]:
    """The outcomes a sampler would see at each iteration end where it may stop, from the
    ``k``-th sample on and never at the last iteration (``IterationSampler``'s rule), for
    a run with iteration ends ``ends`` settled at ``settled_at`` (:func:`resample`'s
    arguments, checked there; ``epilogue`` goes in as the outcome's instructions)."""
    n = len(ends)
    for detailed in range(settled_at + k, n):
        yield SampleOutcome(
            stopped=True,
            settled_at=settled_at,
            settled_by="",
            detailed=detailed,
            samples=detailed - settled_at,
            iterations=n,
            ends=[int(e) for e in ends[:detailed]],
            weights=weights,
            end_cycle=int(ends[detailed - 1]),
            epilogue_instructions=epilogue,
        )


@dataclass(frozen=True)
class Resampled:
    """What a sampled run would have reported (:func:`resample`).

    Attributes
    ----------
    sampled
        Whether the rule left iterations out (False: it would have replayed them all).
    detailed
        Iterations it would have replayed in detail.
    estimate
        Its makespan and 95 % interval (the detailed makespan twice when not sampled).
    """

    sampled: bool
    detailed: int
    estimate: SampledMakespan


def resample(
    ends: Any,
    settled_at: int | None,
    k: int,
    precision: float | None = None,
    weights: Any = None,
    epilogue_cycles: int = 0,
) -> Resampled:
    """What ``--sample-iterations k --sample-precision precision`` would have given on a
    run whose every iteration was replayed in detail, from its iteration ends.

    A sampled replay is the detailed one, event for event, up to where it stops (the
    sampler only decides when to stop), so the rule applied to the detailed run's
    iteration ends gives the sampled run's makespan and interval to the cycle; this is how
    docs/engine.md §7 compares settings of the rule without replaying again.

    Parameters
    ----------
    ends
        End cycle of every iteration, in order (a record's ``iteration_ends``, a list or
        its JSON text).
    settled_at
        The first iteration under the settled policy: a sampled record's ``settled_at``
        (a policy that tunes itself, LAWS, LAWS-NC or CATS, says when it has settled,
        which cannot be read from the ends), or None for a policy without tuning (WS,
        PDF, CAB), whose settling the sampler reads from the iterations' cycles per
        reference (:func:`~simsched.engine.sampling.untuned_settled_at`).
    k
        Fewest samples (at least 2).
    precision
        Percent, as ``--sample-precision``; None or 0: exactly ``k`` samples.
    weights
        References of every iteration (None: all alike, as in the stencils).
    epilogue_cycles
        Cycles after the last iteration, taken as the detailed run's own (a sampled run
        estimates them from its cycles per instruction).

    Returns
    -------
    Resampled
    """
    what = "resample: ends must be a non-empty list of iteration end cycles, in order"
    try:
        # a record's field as it is: a list, or JSON text (a table's row)
        end = np.asarray(json.loads(ends) if isinstance(ends, str) else ends, dtype=np.int64)
    except (TypeError, ValueError):
        raise ConfigError(what) from None
    n = int(end.size)
    if n == 0 or end.ndim != 1 or bool((np.diff(end) < 0).any()):
        raise ConfigError(what)
    k = check_int("k", k, MIN_SAMPLES, MAX_SAMPLES)
    w = np.ones(n, dtype=np.int64) if weights is None else np.asarray(weights, dtype=np.int64)
    if w.shape != (n,):
        raise ConfigError(f"resample: {w.size} weights for {n} iterations")
    if settled_at is None:
        settled_at = untuned_settled_at(end, w)
        if settled_at < 0:  # never settled before the last iteration: replayed whole
            settled_at = n
    settled_at = check_int("settled_at", settled_at, 1, n)
    share = (_check_precision(precision) or 0.0) / 100.0
    epi = int(epilogue_cycles)
    for outcome in stop_points(end, settled_at, k, w, epi):
        if not share or _narrow_enough(outcome, share):
            # the epilogue in cycles: one cycle per "instruction"
            return Resampled(True, outcome.detailed, sampled_makespan(outcome, 1.0))
    whole = int(end[-1]) + epi
    return Resampled(False, n, SampledMakespan(whole, whole, whole, epi))


#: Two-sided confidence of :func:`sample_drift`'s test: samples of a steady rate with
#: independent noise are called drifting in one run of a hundred.  At 99.9 % five samples
#: (3 degrees of freedom) needed t > 12.9, and GE at the paper's Intel size under WS, its
#: rate rising with t = 7.8 and its detailed makespan outside the interval, went unsaid
#: (docs/engine.md §7).
DRIFT_CONFIDENCE = 0.99


@dataclass(frozen=True)
class SampleDrift:
    """The least-squares trend of a sampled run's cycles per reference (docs/engine.md §7).

    Attributes
    ----------
    first, last
        The first and last sample (dense iteration numbers).
    slope
        Change of cycles per reference per iteration, as a share of the samples' mean.
    t
        The slope over its standard error (Student t with ``samples - 2`` degrees of
        freedom; infinite when the samples lie exactly on a sloped line).
    significant
        ``|t|`` beyond the quantile of :data:`DRIFT_CONFIDENCE`.
    shift
        Cycles the extrapolation would gain if the trend went on, unchanged, through the
        iterations left out (negative: lose).
    """

    first: int
    last: int
    slope: float
    t: float
    significant: bool
    shift: int


def sample_drift(
    ends: Any, weights: np.ndarray, settled_at: int, detailed: int
) -> SampleDrift | None:
    """The trend of the samples of a sampled run, or None with fewer than three samples.

    Parameters
    ----------
    ends
        End cycle of every iteration replayed (the record's ``iteration_ends``).
    weights
        References of every iteration of the trace (dense order).
    settled_at, detailed
        The samples are iterations ``settled_at`` to ``detailed - 1`` (the record's
        ``settled_at`` and ``detailed_iterations``).

    Returns
    -------
    SampleDrift or None
    """
    k = detailed - settled_at
    if settled_at < 1 or k < 3:
        return None
    rates = iteration_rates(ends, weights, settled_at, detailed)
    mean = float(rates.mean())
    x = np.arange(settled_at, detailed, dtype=np.float64)
    xc = x - x.mean()
    b = float(np.dot(xc, rates - mean) / np.dot(xc, xc))
    resid = rates - mean - b * xc
    se = math.sqrt(float(np.dot(resid, resid)) / (k - 2) / float(np.dot(xc, xc)))
    t = b / se if se > 0 else (math.copysign(math.inf, b) if b else 0.0)
    left = np.maximum(np.asarray(weights[detailed:], dtype=np.float64), 1.0)
    # the extrapolation charges every remaining reference the samples' mean rate, the
    # line's value at the samples' middle iteration
    later = np.arange(detailed, detailed + left.size, dtype=np.float64) - x.mean()
    return SampleDrift(
        first=settled_at,
        last=detailed - 1,
        slope=b / mean if mean > 0 else 0.0,
        t=t,
        significant=abs(t) > t_quantile(1 - (1 - DRIFT_CONFIDENCE) / 2, k - 2),
        shift=round(b * float(np.dot(left, later))),
    )


def sample_fields(
    rec: dict[str, Any],
    k: int | None,
    sampler: IterationSampler | None,
    res: EngineResult,
    t: Trace,
) -> dict[str, Any]:
    """The sampling fields of a run's record (docs/results.md, "Sampling"); a sampled run's
    ``makespan_cycles`` becomes the extrapolation and its ``mpki`` counts the detailed
    part's instructions (its other counters are the detailed part's already)."""
    n_it = rec["trace_iterations"]
    makespan = int(rec["makespan_cycles"])
    fields: dict[str, Any] = {
        "sampled": False,
        "sample_iterations": int(k or 0),
        "detailed_iterations": n_it,
        "settled_at": -1,
        "detailed_cycles": makespan,
        "epilogue_cycles": 0,
        "makespan_ci95": dumps([makespan, makespan]),
        "iteration_ends": dumps([]),
    }
    if sampler is None:
        # a detailed run keeps its iterations' ends too, so that its per-iteration cost
        # can be read back (and set beside a sampled run's)
        fields["iteration_ends"] = dumps(iteration_ends(t, res.strand_end))
        return fields
    o = sampler.outcome()
    fields["settled_at"] = o.settled_at
    # every policy's iteration periods, so that a reader can judge the samples (WS and
    # other policies without tuning keep no per-iteration record of their own)
    fields["iteration_ends"] = dumps(o.ends)
    if not o.stopped:
        return fields
    assert k is not None
    est = sampled_makespan(o, detailed_cpi(res, t))
    instr = _detailed_instructions(res, t)
    last = str(rec["last_level"])
    fields.update(
        sampled=True,
        detailed_iterations=o.detailed,
        detailed_cycles=o.end_cycle,
        epilogue_cycles=est.epilogue_cycles,
        makespan_ci95=dumps([est.lo, est.hi]),
        makespan_cycles=est.makespan,
        # per detailed instruction and per detailed core-cycle: the counters are the
        # detailed part's
        mpki=1000.0 * int(rec[f"{last}_misses"]) / instr if instr else 0.0,
    )
    return fields
