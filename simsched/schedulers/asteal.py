"""A-Steal: adaptive work stealing with multiplicative desire ([SAWS12] §3.2).

Design
------
The worker loop, mugging, worker states and the observation of each quantum are the
adaptive runtime's (:class:`~simsched.schedulers.ws_equi.AdaptiveWorkStealing`);
A-Steal classifies the quantum just ended with the state machine
:class:`simsched.schedulers.desire.ASteal`: *efficient* if the utilization of its
processors ``u(q) >= delta``, *satisfied* if its allotment ``a(q) >= d(q)``, and
``d(q+1) = rho d(q)`` (efficient and satisfied), ``d(q)/rho`` (inefficient) or ``d(q)``
(efficient and deprived); ``d(1) = 1``.

``u(q)`` is observed ``exact`` (cycles working or mugging over the core-cycles the job
held in the quantum) or ``sampled`` (``1 - purely unsuccessful / all steal attempts``,
[SAWS12] §4.2.1), parameter ``measure``.  ``a(q)`` is the allotment at the quantum's end:
cores move between jobs only between strands, so that is when the controller's decision
has taken effect; with whole cores, ``a >= d`` exactly when the controller granted the
``ceil(d)`` cores asked for.
"""

from __future__ import annotations

from typing import ClassVar

from simsched.params import Param, ParamSchema
from simsched.schedulers.desire import MAX_RHO, ASteal
from simsched.schedulers.saws import MEASURE
from simsched.schedulers.ws_equi import AdaptiveWorkStealing


class AdaptiveSteal(AdaptiveWorkStealing):
    """A-Steal ([SAWS12] §3.2, after Agrawal, He and Leiserson) (``asteal``)."""

    name: ClassVar[str] = "asteal"
    aliases: ClassVar[tuple[str, ...]] = ("a-steal",)
    initial_desire: ClassVar[int | None] = 1
    params_schema: ClassVar[ParamSchema] = AdaptiveWorkStealing.params_schema.extend(
        # at most MAX_RHO: the float desire stays far from underflow (desire.py)
        rho=Param(2.0, "responsiveness: the factor d(q) grows or shrinks by", gt=1, le=MAX_RHO),
        delta=Param(
            0.8, "utilization threshold: a quantum with u(q) >= delta is efficient", gt=0, le=1
        ),
        measure=MEASURE,
    )

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.asteal = ASteal(rho=self.params["rho"], delta=self.params["delta"])

    def next_desire(self, exact, sampled, allotment):
        """Classify the quantum and step the state machine."""
        if self.params["measure"] == "exact":
            held = self.last_held
            u = min(1.0, exact.busy_integral / held) if held else None
        else:
            u = sampled.utilization()
        return self.asteal.update(allotment, u)
