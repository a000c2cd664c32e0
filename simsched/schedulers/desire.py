"""Processor desires of adaptive work stealing: SAWS Eq. 1 and A-Steal ([SAWS12] §3–4).

Design
------
What a job's thread scheduler observes during a scheduling quantum is one of two small
records, and the desire for the next quantum is a pure function of it:

* :class:`QuantumIntegrals` — the exact observation a simulator can make: the length ``L``
  of quantum ``q``, the allotment ``a(q)``, ``int sum_j X_j(t) dt`` (``X_j(t) = 1`` while
  processor ``j`` works or mugs, 0 while it steals, [SAWS12] §3.1) and
  ``int sum_j Q_j(t) dt`` over the job's active deques, muggable ones included.  A
  :class:`StepIntegral` accumulates each integral from the moments the integrand changes.
* :class:`QuantumSamples` — the counters of the sampled approximations of [SAWS12] §4.2:
  steal attempts, purely unsuccessful ones (the victim was itself stealing), the victims'
  deque lengths summed over the attempts, and the deques and their total length at the
  end of the quantum.

Both answer ``busy()`` (average number of processors not wasted, ``u(q) a(q)``),
``queued()`` (average total length of the active deques) and ``utilization()`` (``u(q)``):

* exact: ``busy = (1/L) int sum X_j``, ``queued = (1/L) int sum Q_j``,
  ``u = int sum X_j / (a L)`` ([SAWS12] §3.1–3.2);
* sampled, §4.2.1: ``u = 1 - sum purely_unsucc_steal_j / sum total_steal_j`` and
  ``busy = u a``; §4.2.2: ``Q = e(t_q+L) sum length_j / sum total_steal_j``, the end
  sample ``Q' = sum_j Q_j(t_q+L)``, and ``queued = alpha Q + (1 - alpha) Q'`` with ``alpha``
  the ratio of the steal attempts made to the most that fit in the quantum,
  ``a(q) L / c_steal`` (:func:`max_steal_attempts`).  With no steal attempt ``alpha = 0``
  and ``u = 1`` (no processor spent time stealing: every sample says "working").

**SAWS, Eq. 1**: ``d(q+1) = busy + beta * queued`` with ``beta >= 1``
(:func:`saws_desire`).  **A-Steal** ([SAWS12] §3.2, from Agrawal, He and Leiserson): quantum
``q`` is *efficient* if ``u(q) >= delta``, *satisfied* if ``a(q) >= d(q)``, and
``d(q+1) = rho d(q)`` if efficient and satisfied, ``d(q)/rho`` if inefficient,
``d(q)`` if efficient and deprived (:class:`ASteal`).  Both start with ``d(1) = 1``
(§3.2: "the job usually starts with a single thread").  A quantum in which the job held
no processor says nothing about efficiency; A-Steal keeps its desire then (it is deprived,
and no utilization exists), a simsched decision the paper does not need to make.  Nor does
the paper meet float underflow: an inefficient quantum that would take the desire below
the smallest normal double (:data:`MIN_DESIRE`) keeps it, so that it can grow again.

**Whole cores.**  Both desires are real numbers; a processor controller hands out cores.
:func:`desire_request` asks for ``ceil(d)`` cores, at least 1 (and at most
:data:`MAX_REQUEST`, more than any machine has): with whole allotments,
``a >= d`` holds exactly when ``a >= ceil(d)``, so "satisfied" means the same thing to the
job and to the controller, and DEQ, which never gives more than the request, can still
give a job all it desires.  A relative tolerance of 1e-9 absorbs the rounding of integrals
(``10.000000000001`` asks for 10).

**Stability** (Fig. 4, tested on a fluid model of the Fig. 3 program): for ``N`` equal
children spawned by one parent, SAWS' desire grows by ``beta`` per quantum (all workers
busy, the parent's continuation waiting in a deque) until it reaches ``N`` in about
``N/beta`` quanta, overshoots once while the parent reaches its sync, and stays at ``N``;
A-Steal multiplies its way past ``N`` and then oscillates between two powers of ``rho``
(8 and 16 for ``N = 10, rho = 2``: at 16 cores ``u = 10/16 < 0.8``, at 8 ``u = 1``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from simsched.errors import ConfigError
from simsched.params import check_int

#: Relative tolerance of :func:`desire_request` (floating-point error of the integrals).
REQUEST_TOLERANCE = 1e-9
#: Largest A-Steal ``rho`` (the paper uses 1 to 3).  Desires move between powers of rho,
#: and two quanta at 2^10 already take a desire of 1 past any machine's cores (2^14 at
#: most), so a larger factor shows nothing new; near float's range it broke the arithmetic
#: instead: ``1 / rho`` is subnormal for rho above 2^1022, where ``d / rho * rho`` is no
#: longer ``d`` (rho = 1.7e308 and 1e300 gave different runs).
MAX_RHO = 2.0**10
#: Smallest A-Steal desire: the smallest normal double.  An inefficient quantum that would
#: take the desire below it keeps the desire instead: past it ``d / rho`` loses precision
#: and then reaches 0, which ``d * rho`` never leaves (rho = 1024, a 100-cycle quantum and
#: 100 000-cycle core moves gave 860 inefficient quanta in a row, and the job asked for
#: one core for the rest of its run).  A desire below 1 asks for one core like 1 does; how
#: far below only decides how many efficient quanta it takes to grow back.
MIN_DESIRE = sys.float_info.min
#: Largest SAWS ``beta`` (the paper uses 2): at 10^6 a queue of one strand already asks for
#: more cores than any machine has, and ``beta * queued`` stays finite (beta = 1.7e308
#: made the desire infinite and stopped the run in the middle).
MAX_BETA = 1e6
#: Most cores :func:`desire_request` asks for: far more than any machine the schema allows
#: (64 sockets of 256 cores, 2^14), so a larger desire asks for all the cores just the
#: same; uncapped, ``ceil`` of a desire above 2^63 did not fit the controllers' int64.
MAX_REQUEST = 2**32


def _nonneg(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}={value!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise ConfigError(f"{name}={value!r} must be finite and >= 0")
    return v


def _check_beta(beta: float) -> float:
    b = _nonneg("beta", beta)
    if not 1 <= b <= MAX_BETA:
        raise ConfigError(f"beta={beta!r} must be >= 1 ([SAWS12] Eq. 1) and <= 1e6")
    return b


def max_steal_attempts(allotment: int, length: int, steal_cost: int) -> int:
    """Most steal attempts ``a(q)`` processors can make in a quantum, ``a(q) L // c_steal``.

    The denominator of ``alpha`` in [SAWS12] §4.2.2 ("the maximum possible steal
    attempts"): every processor stealing for the whole quantum, one attempt per
    ``steal_cost`` cycles.

    Parameters
    ----------
    allotment
        Processors of the job in the quantum.
    length
        Quantum length in cycles.
    steal_cost
        Cycles of one steal attempt (``machine.costs.steal_attempt``), at least 1.

    Returns
    -------
    int
    """
    a = check_int("allotment", allotment)
    n = check_int("quantum length", length)
    c = check_int("steal cost", steal_cost, 1)
    return a * n // c


@dataclass(frozen=True)
class QuantumIntegrals:
    """Exact observation of a quantum ([SAWS12] §3.1): integrals of ``X_j`` and ``Q_j``.

    Parameters
    ----------
    length
        Quantum length ``L`` (> 0, cycles).
    allotment
        Processors ``a(q)`` of the job during the quantum.
    busy_integral
        ``int_{t_q}^{t_q+L} sum_j X_j(t) dt``: processor-cycles spent working or mugging.
    deque_integral
        ``int_{t_q}^{t_q+L} sum_j Q_j(t) dt`` over every active deque, muggable included.
    """

    length: float
    allotment: int
    busy_integral: float
    deque_integral: float

    def __post_init__(self) -> None:
        if _nonneg("quantum length", self.length) == 0:
            raise ConfigError("quantum length must be > 0")
        a = check_int("allotment", self.allotment)
        busy = _nonneg("busy integral", self.busy_integral)
        _nonneg("deque integral", self.deque_integral)
        if busy > a * float(self.length) * (1 + REQUEST_TOLERANCE):
            raise ConfigError(
                f"busy integral {busy} exceeds allotment x length = {a * float(self.length)}"
            )

    def busy(self) -> float:
        """Average processors not wasted, ``(1/L) int sum_j X_j dt``."""
        return float(self.busy_integral) / float(self.length)

    def queued(self) -> float:
        """Average total length of the active deques, ``(1/L) int sum_j Q_j dt``."""
        return float(self.deque_integral) / float(self.length)

    def utilization(self) -> float | None:
        """``u(q) = w(q) / (a(q) L)`` ([SAWS12] §3.2); None without processors."""
        if self.allotment == 0:
            return None
        return min(1.0, self.busy() / self.allotment)


@dataclass(frozen=True)
class QuantumSamples:
    """Sampled observation of a quantum, the counters of [SAWS12] §4.2.

    Parameters
    ----------
    allotment
        Processors ``a(q)``.
    steal_attempts
        ``sum_j total_steal_j``: steal attempts of the job's processors in the quantum.
    purely_unsuccessful
        ``sum_j purely_unsucc_steal_j``: attempts whose victim was itself stealing.
    victim_length_sum
        ``sum_j length_j``: victims' deque lengths added up at every attempt.
    deques_at_end
        ``e(t_q + L)``: active deques (muggable included) when the quantum ends.
    length_at_end
        ``Q'(q) = sum_j Q_j(t_q + L)``: their total length then.
    max_attempts
        Most attempts possible in the quantum (:func:`max_steal_attempts`), for ``alpha``.
    """

    allotment: int
    steal_attempts: int
    purely_unsuccessful: int
    victim_length_sum: int
    deques_at_end: int
    length_at_end: int
    max_attempts: int

    def __post_init__(self) -> None:
        for name in (
            "allotment", "steal_attempts", "purely_unsuccessful", "victim_length_sum",
            "deques_at_end", "length_at_end", "max_attempts",
        ):  # fmt: skip
            check_int(name, getattr(self, name))
        if self.purely_unsuccessful > self.steal_attempts:
            raise ConfigError(
                f"purely unsuccessful steals ({self.purely_unsuccessful}) exceed steal "
                f"attempts ({self.steal_attempts})"
            )

    def utilization(self) -> float | None:
        """``u(q) = 1 - purely unsuccessful / all attempts`` ([SAWS12] §4.2.1); 1 if none."""
        if self.allotment == 0:
            return None
        if self.steal_attempts == 0:
            return 1.0
        return 1.0 - self.purely_unsuccessful / self.steal_attempts

    def busy(self) -> float:
        """``u(q) a(q)``, the sampled ``(1/L) int sum_j X_j dt`` ([SAWS12] §4.2.1)."""
        u = self.utilization()
        return 0.0 if u is None else u * self.allotment

    def alpha(self) -> float:
        """Weight of the steal samples: attempts made over attempts possible, at most 1."""
        if self.steal_attempts == 0 or self.max_attempts == 0:
            return 0.0
        return min(1.0, self.steal_attempts / self.max_attempts)

    def queued(self) -> float:
        """``alpha Q(q) + (1 - alpha) Q'(q)`` ([SAWS12] §4.2.2)."""
        q_end = float(self.length_at_end)
        al = self.alpha()
        if al == 0.0:
            return q_end
        q_steal = self.deques_at_end * self.victim_length_sum / self.steal_attempts
        return al * q_steal + (1.0 - al) * q_end


def saws_desire(obs: QuantumIntegrals | QuantumSamples, beta: float = 2.0) -> float:
    """SAWS desire for the next quantum, [SAWS12] §3.1, Eq. 1.

    ``d(q+1) = (1/L) int (sum_j X_j(t) + beta sum_j Q_j(t)) dt = busy + beta * queued``,
    from the exact integrals or from the §4.2 samples.

    Parameters
    ----------
    obs
        The quantum just ended, observed exactly or by sampling.
    beta
        Exploration parameter, ``>= 1`` (the paper's experiments use 2).

    Returns
    -------
    float
        The desire (real; :func:`desire_request` turns it into cores).
    """
    return obs.busy() + _check_beta(beta) * obs.queued()


def desire_request(desire: float) -> int:
    """Whole cores a job asks for: ``ceil(desire)``, at least 1 (see the module docstring).

    Parameters
    ----------
    desire
        Real desire (SAWS Eq. 1 or A-Steal), ``>= 0``.

    Returns
    -------
    int
        At most :data:`MAX_REQUEST`.
    """
    d = _nonneg("desire", desire)
    return max(1, min(MAX_REQUEST, math.ceil(d * (1 - REQUEST_TOLERANCE))))


@dataclass
class AStealStep:
    """One quantum of :class:`ASteal`: what it saw and what it decided."""

    desire: float
    allotment: int
    utilization: float | None
    efficient: bool | None
    satisfied: bool
    next_desire: float


@dataclass
class ASteal:
    """A-Steal's desire, multiplicative increase and decrease ([SAWS12] §3.2).

    Parameters
    ----------
    rho
        Responsiveness, ``> 1`` (the paper: 1 to 3; its experiments use 2).
    delta
        Utilization threshold in ``(0, 1]`` (the paper: 0.8 to 0.95; experiments 0.8).

    Attributes
    ----------
    desire
        Desire for the coming quantum (1 before the first, §3.2).
    history
        One :class:`AStealStep` per quantum observed.
    """

    rho: float = 2.0
    delta: float = 0.8
    desire: float = 1.0
    history: list[AStealStep] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 1 < _nonneg("rho", self.rho) <= MAX_RHO:
            raise ConfigError(f"rho={self.rho!r} must be > 1 and <= 2^10")
        if not 0 < _nonneg("delta", self.delta) <= 1:
            raise ConfigError(f"delta={self.delta!r} must be in (0, 1]")

    def update(self, allotment: int, utilization: float | None) -> float:
        """Classify the quantum just ended and return the desire for the next one.

        Parameters
        ----------
        allotment
            ``a(q)``, processors the job held.
        utilization
            ``u(q)`` (``obs.utilization()`` of either observation); None when the job held
            no processor.

        Returns
        -------
        float
            ``d(q+1)``.
        """
        a = check_int("allotment", allotment)
        d = self.desire
        satisfied = a >= d
        if utilization is None or a == 0:
            efficient, nxt = None, d  # no processor, no utilization: keep the desire
        else:
            u = _nonneg("utilization", utilization)
            efficient = u >= self.delta
            if not efficient:
                nxt = d / self.rho
                if nxt < MIN_DESIRE:
                    nxt = d  # no lower: see MIN_DESIRE
            elif satisfied:
                nxt = d * self.rho
            else:
                nxt = d
        self.history.append(AStealStep(d, a, utilization, efficient, satisfied, nxt))
        self.desire = nxt
        return nxt


class StepIntegral:
    """Integral over a quantum of a piecewise-constant function of time.

    Feed it ``set(t, value)`` whenever the function changes (e.g. the number of busy
    workers, or the total deque length of a job) and call :meth:`take` at the quantum's
    end: it returns the integral since the previous :meth:`take` and starts the next
    quantum with the current value.  Exact for step functions, in float64.

    Parameters
    ----------
    t0
        Start time.
    value
        Value from ``t0`` on.
    """

    def __init__(self, t0: float = 0.0, value: float = 0.0) -> None:
        self._t = float(t0)
        self._v = _nonneg("value", value)
        self._acc = 0.0

    @property
    def value(self) -> float:
        """The current value."""
        return self._v

    def _advance(self, t: float) -> None:
        t = float(t)
        if not t >= self._t:
            raise ConfigError(f"time {t} is before the last change at {self._t}")
        self._acc += self._v * (t - self._t)
        self._t = t

    def set(self, t: float, value: float) -> None:
        """The function takes ``value`` from time ``t`` on (``t`` never decreases)."""
        self._advance(t)
        self._v = _nonneg("value", value)

    def add(self, t: float, delta: float) -> None:
        """The function changes by ``delta`` at time ``t``."""
        self.set(t, self._v + float(delta))

    def take(self, t: float) -> float:
        """Integral from the previous :meth:`take` (or the start) to ``t``; restarts there."""
        self._advance(t)
        out, self._acc = self._acc, 0.0
        return out
