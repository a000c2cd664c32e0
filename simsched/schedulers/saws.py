"""SAWS: stable adaptive work stealing, desire by [SAWS12] §3.1, Eq. 1.

Design
------
The worker loop, mugging, worker states and the observation of each quantum are the
adaptive runtime's (:class:`~simsched.schedulers.ws_equi.AdaptiveWorkStealing`); SAWS
only answers the desire for the next quantum,

    d(q+1) = (1/L) int (sum_j X_j(t) + beta sum_j Q_j(t)) dt,

from the busy processors and the queued strands of its active deques (muggable ones
included), computed with :func:`simsched.schedulers.desire.saws_desire` in one of two
ways (``measure``): ``exact`` from the integrals the simulator observes, or ``sampled``
by the approximations of [SAWS12] §4.2 (``u(q)`` from purely unsuccessful steal
attempts, the queue length from the victims' deque lengths and the end-of-quantum
sample, weighted by ``alpha``).  The first quantum's desire is 1 ([SAWS12] §3.2); the
controller is told ``ceil(d)`` cores (:func:`~simsched.schedulers.desire.desire_request`).
"""

from __future__ import annotations

from typing import ClassVar

from simsched.params import Param, ParamSchema
from simsched.schedulers.desire import MAX_BETA, saws_desire
from simsched.schedulers.ws_equi import AdaptiveWorkStealing

#: How a quantum is observed: the integrals of Eq. 1, or the samples of §4.2.
MEASURES = ("exact", "sampled")


#: ``measure``, shared by SAWS and A-Steal.
MEASURE = Param(
    "exact",
    "how a quantum is observed: exact (the simulator's integrals) or sampled (the "
    "approximations of §4.2)",
    choices=MEASURES,
)


class StableAdaptiveWorkStealing(AdaptiveWorkStealing):
    """SAWS ([SAWS12] §3.1): desire from busy processors and deque lengths (``saws``)."""

    name: ClassVar[str] = "saws"
    aliases: ClassVar[tuple[str, ...]] = ()
    initial_desire: ClassVar[int | None] = 1
    params_schema: ClassVar[ParamSchema] = AdaptiveWorkStealing.params_schema.extend(
        # at most MAX_BETA: beta * queued stays finite (desire.py)
        beta=Param(2.0, "weight of the queued strands in Eq. 1's desire", ge=1, le=MAX_BETA),
        measure=MEASURE,
    )

    def next_desire(self, exact, sampled, allotment):
        """Eq. 1 on the quantum just ended."""
        obs = exact if self.params["measure"] == "exact" else sampled
        return saws_desire(obs, self.params["beta"])
