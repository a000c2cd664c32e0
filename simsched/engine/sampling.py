"""Steady-state sampling: when a replay of an iterative program may stop (docs/engine.md §7).

A long iterative run spends most of its time repeating an iteration whose cost no longer
changes.  :class:`IterationSampler` watches the iterations of one job end, in the engine's
event order, and tells the replay to stop once

1. the policy has *settled*: a scheduler that tunes itself across iterations says so
   (:meth:`simsched.schedulers.base.Scheduler.tuning_settled`, e.g. LAWS once Algorithm 1
   of [LAWS15] §3.3.2 has ended); for a policy without tuning (it answers ``None``), its
   iterations have stopped getting cheaper: from the third iteration on, one whose cycles
   per reference are not :data:`STABLE_TOLERANCE` below the previous one's (warming
   caches and first-touch placement make the first iterations dearer; a policy's own
   noise, such as work stealing's random victims, goes both ways and does not delay
   this), or :data:`MAX_WARMUP` iterations have ended, whichever is first;
2. then ``K`` more iterations have ended (the samples) — and, when the caller gives a
   precision test (``enough``), further ones until the samples pass it (a noisy policy
   needs more samples for the same interval),

provided iterations are left after them.  The engine stops at the end of the last
sample without decoding later iterations' references (chunks are decoded per strand as
cores reach them).  This module is mechanism only: it measures the iterations and asks
the scheduler through the protocol; the extrapolation from the samples is
:func:`simsched.engine.sampled.sampled_makespan`'s.

An iteration's *period* is the cycles between the end of the previous iteration and its
own end (so main's serial strands between iterations count in it); its *weight* is its
number of references, read from the strand table (no reference is decoded): iterations
that shrink (Gaussian elimination's pivot steps) are extrapolated at the samples' cycles
per reference, identical ones at their mean period.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: How much cheaper (relative cycles per reference) than the previous iteration an
#: iteration may be for a policy without tuning to count as settled.
STABLE_TOLERANCE = 0.02

#: Iterations (counting the first) after which a policy without tuning counts as settled
#: even if its iterations still differ by more than :data:`STABLE_TOLERANCE`.
MAX_WARMUP = 10


@dataclass
class SampleOutcome:
    """What :class:`IterationSampler` saw of a replay.

    Attributes
    ----------
    stopped
        Whether the replay stopped early (the run is sampled).
    settled_at
        First iteration (dense number, 0 = the trace's first) run under the settled
        policy; -1 when the policy never settled.
    settled_by
        ``"policy"`` (the scheduler said so), ``"stable"`` (two iterations alike),
        ``"cap"`` (:data:`MAX_WARMUP` reached) or ``""``.
    detailed
        Iterations replayed in detail (all of them when not stopped).
    samples
        Detailed iterations run under the settled policy (``detailed - settled_at``;
        0 when the policy never settled).
    iterations
        Iterations of the trace.
    ends
        End cycle of every iteration replayed (dense order).
    weights
        References of every iteration (dense order, all iterations).
    end_cycle
        Cycle at which the last detailed iteration ended (-1: none).
    epilogue_instructions
        Instructions of the strands after the last iteration's last strand (serial order).
    """

    stopped: bool
    settled_at: int
    settled_by: str
    detailed: int
    samples: int
    iterations: int
    ends: list[int]
    weights: np.ndarray
    end_cycle: int
    epilogue_instructions: int

    def sample_rates(self) -> np.ndarray:
        """Cycles per reference of the samples (the last ``samples`` detailed iterations)."""
        return iteration_rates(self.ends, self.weights, self.detailed - self.samples, self.detailed)


def iteration_rates(ends: Any, weights: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Cycles per reference of iterations ``lo`` to ``hi - 1`` (dense numbers, ``lo >= 1``)
    from the iterations' end cycles and references."""
    e = np.asarray(ends, dtype=np.float64)
    periods = e[lo:hi] - e[lo - 1 : hi - 1]
    w = np.maximum(np.asarray(weights[lo:hi], dtype=np.float64), 1.0)
    return np.asarray(periods / w, dtype=np.float64)


def _dense_iterations(trace: Any) -> tuple[np.ndarray, int]:
    """Each strand's iteration as a dense number (-1: none) and the number of iterations."""
    it_f = np.asarray(trace.frames.iteration, dtype=np.int64)
    labels, dense = np.unique(it_f[it_f >= 0], return_inverse=True)
    it_dense = np.full(it_f.shape[0], -1, dtype=np.int64)
    it_dense[it_f >= 0] = dense
    return it_dense[np.asarray(trace.strands.frame, dtype=np.int64)], int(labels.size)


def _weights(trace: Any, it_s: np.ndarray, n: int) -> np.ndarray:
    marked = it_s >= 0
    rs = np.asarray(trace.strands.ref_start, dtype=np.int64)
    refs = rs[1:] - rs[:-1]
    return np.bincount(it_s[marked], weights=refs[marked], minlength=n).astype(np.int64)


def iteration_weights(trace: Any) -> np.ndarray:
    """References of every iteration of ``trace`` (dense order), read from its strand
    table (no reference is decoded)."""
    return _weights(trace, *_dense_iterations(trace))


def iteration_ends(trace: Any, strand_end: Any) -> list[int]:
    """End cycle of every iteration of a replay that ran them all, in trace order.

    The same ends as :class:`IterationSampler` records while it watches, read afterwards
    from the replay's strand end cycles: an iteration ends with its last strand, and one
    that ends before an earlier one counts as ending with it (iterations count in trace
    order).  Empty when the trace has no iterations or a strand of one did not run.

    Parameters
    ----------
    trace
        The replayed trace (with the iterations the run used).
    strand_end
        End cycle of every strand of the replay (-1: did not run).
    """
    it_s, n = _dense_iterations(trace)
    end = np.asarray(strand_end, dtype=np.int64)
    marked = it_s >= 0
    if n == 0 or bool((end[marked] < 0).any()):
        return []
    last = np.zeros(n, dtype=np.int64)
    np.maximum.at(last, it_s[marked], end[marked])
    return [int(e) for e in np.maximum.accumulate(last)]


def _settles_untuned(i: int, rate: Callable[[int], float]) -> str:
    """Whether iteration ``i`` (dense, 0 = the first) settles a policy without tuning, given
    each iteration's cycles per reference ``rate(j)``: ``"stable"`` (from the third
    iteration on, not :data:`STABLE_TOLERANCE` cheaper than the one before), ``"cap"``
    (:data:`MAX_WARMUP` iterations ended) or ``""``."""
    if i >= 2 and rate(i) >= (1.0 - STABLE_TOLERANCE) * rate(i - 1):
        return "stable"
    return "cap" if i + 1 >= MAX_WARMUP else ""


def untuned_settled_at(ends: Any, weights: np.ndarray) -> int:
    """Where :class:`IterationSampler` finds a policy without tuning (WS, PDF, CAB)
    settled, from a replay's iteration ends and the iterations' references: the first
    iteration run settled (its ``settled_at``), or -1 when none is left after the one that
    settles it."""
    e = np.asarray(ends, dtype=np.float64)
    w = np.maximum(np.asarray(weights, dtype=np.float64), 1.0)

    def rate(j: int) -> float:  # asked from the second iteration on (_settles_untuned)
        return float((e[j] - e[j - 1]) / w[j])

    for i in range(len(e) - 1):
        if _settles_untuned(i, rate):
            return i + 1
    return -1


class IterationSampler:
    """Decides when a replay of one iterative job may stop (see the module docstring).

    Parameters
    ----------
    trace
        The job's open trace; its frames must carry iterations.
    k
        Iterations to replay in detail once the policy has settled (at least 2).
    enough
        Optional test of the samples so far (an outcome as if the replay stopped now):
        while it answers False, further iterations are replayed in detail.
    """

    def __init__(
        self, trace: Any, k: int, enough: Callable[[SampleOutcome], bool] | None = None
    ) -> None:
        self.k = int(k)
        self.enough = enough
        it_s, n = _dense_iterations(trace)
        self.n = n
        if n == 0:
            raise ValueError("IterationSampler needs a trace with iterations")
        marked = it_s >= 0
        self.weights = _weights(trace, it_s, n)
        self.left = np.bincount(it_s[marked], minlength=n).tolist()
        self.it_of = it_s.tolist()
        last = int(np.flatnonzero(marked).max())
        instr = np.asarray(trace.strands.instr, dtype=np.int64)
        self.epilogue_instructions = int(instr[last + 1 :].sum())
        self.ends: list[int] = []
        self.settled_at = -1
        self.settled_by = ""
        self.stopped = False

    def strand_done(self, strand: int, now: int, sched: Any) -> bool:
        """Strand ``strand`` of the job finished at ``now`` (its scheduler ``sched`` has
        seen it); returns whether the replay should stop now."""
        it = self.it_of[strand]
        if it < 0:
            return False
        left = self.left[it] - 1
        self.left[it] = left
        if left:
            return False
        stop = False
        # Iterations count in trace order: one that ends before an earlier one waits.
        # Those that end together are one decision, the last one's: an earlier one's stop
        # would otherwise hold even when the last one ended is the trace's last, and the
        # replay stopped with no iteration left out.
        while len(self.ends) < self.n and self.left[len(self.ends)] == 0:
            self.ends.append(now)
            stop = self._iteration_ended(len(self.ends) - 1, sched)
        self.stopped = stop
        return stop

    def _rate(self, i: int) -> float:
        return (self.ends[i] - self.ends[i - 1]) / max(int(self.weights[i]), 1)

    def _iteration_ended(self, i: int, sched: Any) -> bool:
        if self.settled_at < 0:
            flag = sched.tuning_settled()
            if flag is True:
                self.settled_at, self.settled_by = i + 1, "policy"
            elif flag is None:
                by = _settles_untuned(i, self._rate)
                if by:
                    self.settled_at, self.settled_by = i + 1, by
            return False
        if i + 1 < self.settled_at + self.k or i + 1 >= self.n:
            return False
        return self.enough is None or self.enough(self._outcome(True))

    def outcome(self) -> SampleOutcome:
        """What the replay saw (call after it ended or stopped)."""
        return self._outcome(self.stopped)

    def _outcome(self, stopped: bool) -> SampleOutcome:
        settled = 0 <= self.settled_at < self.n
        detailed = len(self.ends) if stopped else self.n
        return SampleOutcome(
            stopped=stopped,
            settled_at=self.settled_at if settled else -1,
            settled_by=self.settled_by if settled else "",
            detailed=detailed,
            samples=max(detailed - self.settled_at, 0) if settled else 0,
            iterations=self.n,
            ends=list(self.ends),
            weights=self.weights,
            end_cycle=self.ends[-1] if self.ends else -1,
            epilogue_instructions=self.epilogue_instructions,
        )
