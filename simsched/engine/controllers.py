"""Processor controllers: how the machine's cores are divided among the jobs of a run.

A controller is a policy, like a scheduler: it is asked, at every arrival and completion
of a job and at the boundaries of its quantum (when it has one), how many cores each
active job gets — or exactly which cores.  The engine owns the cores: it turns counts
into core sets that move as few cores as possible (:func:`assign_cores`), takes idle
cores away before busy ones, and moves a core that is running a strand only when the
strand ends.

* ``all`` — one job at a time on every core, in arrival order (a single-job run is one
  job under ``all``);
* ``static`` — a fixed partition: job ``i`` of the job set always holds the same block
  of cores (``shares`` cores each, or an equal split of the machine);
* ``equi`` — EQUI: the active jobs share the cores equally (the remainder goes to the
  earliest arrivals), changed only at arrivals and completions;
* ``deq`` — DEQ, dynamic equipartitioning under the jobs' desires ([SAWS12] §4.3,
  Algorithm 1): no job gets more than it desires, the others share what is left equally.

EQUI and DEQ are the pure functions of :mod:`simsched.engine.allot` (one implementation,
rounding documented there).  DEQ needs desires, hence a quantum: a job that has not yet
ended a quantum desires its scheduler's ``initial_desire`` (1 for SAWS and A-Steal,
[SAWS12] §3.2), and a job whose scheduler reports no desire (WS, WS-EQUI) is taken to
desire the whole machine, so that DEQ gives it an equal share as EQUI would.

**What a controller sees.**  Each active job as a :class:`JobView`: a frozen copy of its
number, arrival, cores and desire, made by the engine for the call.  A controller cannot
change the engine's jobs; the initial desire is put into the job (and so into the
record's allotment series) by the engine, for controllers that use desires.

**Quantum in milliseconds.**  Every controller accepts the parameter ``quantum_ms``
(the job set's ``quantum_ms`` field puts it there): the quantum becomes
``round(quantum_ms * clock_ghz * 1e6)`` cycles of the machine's clock
(:func:`quantum_cycles`); a quantum given in cycles (``--quantum``) takes precedence.
Either way a quantum below :data:`MIN_QUANTUM` cycles is refused (:func:`check_quantum`).

**Placement.**  Every controller also accepts ``placement``: ``sockets`` (default) lets
:func:`assign_cores` keep each job on few sockets; ``any`` ignores sockets — a job gives up
its highest-numbered cores (idle ones first) and takes the lowest-numbered free ones — as
[SAWS12]'s runtime allots processors without regard to sockets (§5: its controller counts
processors only).

``REGISTRY`` maps names and aliases to classes; outside packages add controllers through
the ``simsched.controllers`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from simsched.engine.allot import deq_allot, equi_allot
from simsched.errors import ConfigError
from simsched.params import (
    MAX_QUANTUM,
    Param,
    ParamSchema,
    check_int,
    check_mapping,
    coerce,
    settle_plugin_class,
)
from simsched.registry import PLUGIN_GROUPS, Registry, class_registry

if TYPE_CHECKING:
    from simsched.machine import Machine


#: Shortest quantum accepted, in cycles (controllers' and job schedulers' own): one steal
#: attempt of the preset machines.  A shorter quantum sees no whole steal attempt, so
#: the desire of SAWS and A-Steal ([SAWS12] §3) has nothing to measure, and the run
#: would record one allotment entry every few cycles (``--quantum 1`` ran for minutes
#: with its memory growing).
MIN_QUANTUM = 100


#: values of every controller's ``placement`` parameter (module docstring)
PLACEMENTS = ("sockets", "any")
#: ``placement``, read as a declared parameter's choices are (any case, spaces around)
_PLACEMENT = Param("sockets", "keep each job on few sockets, or ignore sockets", PLACEMENTS)


def check_quantum(quantum: int, what: str) -> int:
    """``quantum`` (cycles) when it is 0 (none) or from :data:`MIN_QUANTUM` to
    :data:`~simsched.params.MAX_QUANTUM`.

    Raises
    ------
    ConfigError
        ``quantum`` is not an integer (a float was truncated, 2000.5 ran as 2000, and NaN
        raised ValueError), is negative, between 1 and ``MIN_QUANTUM - 1``, or above
        ``MAX_QUANTUM``.
    """
    q = check_int(f"{what}: quantum", quantum)
    if q > MAX_QUANTUM:
        raise ConfigError(f"{what}: quantum {q} cycles is above the limit of 2^40 cycles")
    if 0 < q < MIN_QUANTUM:
        raise ConfigError(
            f"{what}: quantum {q} cycles is below the floor of {MIN_QUANTUM} "
            "(min_quantum: one steal attempt; a quantum this short measures nothing and "
            "records one allotment entry every few cycles)"
        )
    return q


def quantum_cycles(machine: Machine, quantum_ms: float, *, name: str = "quantum_ms") -> int:
    """A quantum of ``quantum_ms`` milliseconds in cycles of ``machine``'s clock.

    Parameters
    ----------
    machine
        The machine; it must give ``clock_ghz``.
    quantum_ms
        Quantum length in milliseconds, > 0.
    name
        How errors name the value: a keyword (``quantum_ms=-1.0``) or, when it starts
        with ``--``, a command-line option (``--quantum-ms -1.0``).

    Returns
    -------
    int
        ``round(quantum_ms * clock_ghz * 1e6)``, at least 1.

    Raises
    ------
    ConfigError
        The machine has no clock rate, ``quantum_ms`` is not a positive number, or it
        is more than :data:`~simsched.params.MAX_QUANTUM` cycles.
    """
    given = f"{name} {quantum_ms}" if name.startswith("--") else f"{name}={quantum_ms!r}"
    try:
        ms = float(quantum_ms)
    except (TypeError, ValueError):
        raise ConfigError(f"{given}: not a number") from None
    if not ms > 0 or ms == float("inf"):
        raise ConfigError(f"{given}: must be a positive number of milliseconds")
    ghz = getattr(machine, "clock_ghz", None)
    if ghz is None:
        raise ConfigError(
            f"machine {machine.name!r} gives no clock_ghz: give the quantum in cycles"
        )
    # Bounded before rounding, as a float: 1.7e308 ms is an infinite number of cycles,
    # which round() turned into an OverflowError, and 1e300 ms a 300-digit quantum.
    cycles = ms * float(ghz) * 1e6
    if not cycles <= MAX_QUANTUM:
        raise ConfigError(
            f"{given}: {cycles:.3g} cycles at {ghz} GHz, above the limit "
            f"of 2^40 cycles (give at most {MAX_QUANTUM / (float(ghz) * 1e6):.6g} ms)"
        )
    return max(1, round(cycles))


@dataclass(frozen=True)
class JobView:
    """What a processor controller may know of one active job (read-only).

    Attributes
    ----------
    jid
        Job number (index in the job set).
    arrival
        Arrival cycle.
    cores
        Cores the job holds now.
    desire
        Its last reported desire, or its scheduler's initial desire before its first
        quantum ends when the controller uses desires; None: the job reports none.
    """

    jid: int
    arrival: int
    cores: frozenset[int]
    desire: int | None


class Controller:
    """Base class of processor controllers.

    Parameters
    ----------
    machine
        The machine.
    n_jobs
        Number of jobs in the job set.
    params
        Controller parameters, resolved by :attr:`params_schema` (every controller also
        accepts ``quantum_ms``, see the module docstring).
    quantum
        Cycles between reallocations (0: only at arrivals and completions).
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    #: The parameters, declared once (:class:`~simsched.params.ParamSchema`).
    params_schema: ClassVar[ParamSchema] = ParamSchema()
    #: ``{name: default}`` of :attr:`params_schema`.
    param_defaults: ClassVar[dict[str, Any]] = {}
    #: Whether the controller uses the jobs' desires (then quanta ask schedulers for them).
    uses_desire: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        settle_plugin_class(cls, "controller")

    def __init__(
        self, machine: Any, n_jobs: int, params: Mapping[str, Any] | None = None, quantum: int = 0
    ) -> None:
        params = check_mapping(params, f"controller {self.name!r}: parameters")
        ms = params.pop("quantum_ms", None)
        placement = _PLACEMENT.check(
            params.pop("placement", "sockets"), f"controller {self.name!r}", "placement"
        )
        resolved = self.params_schema.resolve(f"controller {self.name!r}", params)
        quantum = check_quantum(quantum, f"controller {self.name!r}")
        self.machine = machine
        self.P = machine.cores
        self.n_jobs = n_jobs
        self.params = resolved
        #: ``sockets``: keep each job on few sockets; ``any``: ignore sockets
        self.placement = placement
        if placement != "sockets":
            self.params["placement"] = placement
        self.quantum = int(quantum)
        if ms is not None:
            self.params["quantum_ms"] = ms
            if self.quantum == 0:
                self.quantum = check_quantum(
                    quantum_cycles(machine, ms), f"controller {self.name!r}: quantum_ms={ms}"
                )

    def may_take_cores(self) -> bool:
        """Whether this controller may take a core from a job that is running, which the
        job's scheduler then hears of in :meth:`~simsched.schedulers.base.Scheduler.on_depart`.

        The default answers True, as a controller's allotments are not known before the
        run; one that never shrinks a running job's cores answers False, so that a
        scheduler without ``on_depart`` may run under it (:func:`check_departures`).
        """
        return True

    def allot(self, now: int, jobs: Sequence[Any]) -> dict[int, int | tuple[int, ...]]:
        """Cores for each active job: a count, or an explicit tuple of cores.

        Parameters
        ----------
        now
            Current cycle.
        jobs
            The active jobs (arrived, not finished), in arrival order, as
            :class:`JobView` s (``jid``, ``arrival``, ``cores``, ``desire``).

        Returns
        -------
        dict
            ``{jid: count or cores}``; jobs left out get no core.
        """
        raise NotImplementedError


class AllCores(Controller):
    """Every core to the earliest active job; the others wait (``all``)."""

    name: ClassVar[str] = "all"
    aliases: ClassVar[tuple[str, ...]] = ("fifo",)

    def may_take_cores(self) -> bool:
        """False: a job keeps every core until it ends (a later arrival waits)."""
        return False

    def allot(self, now, jobs):
        """All ``P`` cores to the earliest active job."""
        return {jobs[0].jid: self.P} if jobs else {}


def _parse_shares(value: Any, where: str) -> list[int] | None:
    """``shares``: a list of integers or a comma-separated string of them (or None)."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        # iterated as its byte values: b"4" was the share 52
        raise ConfigError(f"{where}={value!r} is not a list of integers")
    items = value.split(",") if isinstance(value, str) else value
    try:
        return [coerce(x, int, where) for x in items if not isinstance(x, str) or x.strip()]
    except (ConfigError, TypeError):
        raise ConfigError(f"{where}={value!r} is not a list of integers") from None


class Static(Controller):
    """A fixed partition of the cores by job index (``static``)."""

    name: ClassVar[str] = "static"
    params_schema: ClassVar[ParamSchema] = ParamSchema(
        shares=Param(
            None,
            "cores of each job, in job-set order (a list, or comma-separated); "
            "default: an equal split",
            parse=_parse_shares,
            kind_name="list of int",
        ),
    )

    def __init__(self, machine, n_jobs, params=None, quantum=0):
        super().__init__(machine, n_jobs, params, quantum)
        shares = self.params["shares"]
        if shares is None:
            shares = equi_allot(n_jobs, self.P).tolist()
        if len(shares) != n_jobs:
            # "must give each ... 16 in all at most" hid that the count was wrong
            raise ConfigError(
                f"controller 'static': shares {shares} give {len(shares)} job(s) cores; "
                f"the job set has {n_jobs} (one share per job, in job-set order)"
            )
        if any(x < 0 for x in shares) or sum(shares) > self.P:
            raise ConfigError(
                f"controller 'static': shares {shares} must give each of the {n_jobs} jobs "
                f"a non-negative number of cores, {self.P} in all at most"
            )
        if 0 in shares:
            # A job without a core never runs: the replay could only end in a deadlock.
            zero = [j for j, x in enumerate(shares) if x == 0]
            raise ConfigError(
                f"controller 'static': shares {shares} give job(s) "
                f"{', '.join(map(str, zero))} no core, so they would never run"
                + (f" (the {self.P} cores split among {n_jobs} jobs)" if n_jobs > self.P else "")
            )
        self.blocks: list[tuple[int, ...]] = []
        first = 0
        for k in shares:
            self.blocks.append(tuple(range(first, first + k)))
            first += k

    def may_take_cores(self) -> bool:
        """False: a job's block of cores is its own for the whole run."""
        return False

    def allot(self, now, jobs):
        """Each job its fixed block of cores."""
        return {j.jid: self.blocks[j.jid] for j in jobs}


class Equi(Controller):
    """Equal shares of the cores among the active jobs (``equi``)."""

    name: ClassVar[str] = "equi"
    aliases: ClassVar[tuple[str, ...]] = ("equipartition",)

    def may_take_cores(self) -> bool:
        """Only with several jobs: a job arriving while another runs takes its share."""
        return self.n_jobs > 1

    def allot(self, now, jobs):
        """Equal shares; the first ``P mod n`` jobs get one core more."""
        shares = equi_allot(len(jobs), self.P).tolist()
        return {j.jid: k for j, k in zip(jobs, shares, strict=True)}


class Deq(Controller):
    """Dynamic equipartitioning under the jobs' desires (``deq``, [SAWS12] Algorithm 1).

    Needs a quantum (in cycles, or ``quantum_ms``): desires change only at its
    boundaries.  Which desire each job has is in the module docstring.
    """

    name: ClassVar[str] = "deq"
    aliases: ClassVar[tuple[str, ...]] = ("dynamic-equipartition",)
    uses_desire: ClassVar[bool] = True

    def __init__(self, machine, n_jobs, params=None, quantum=0):
        super().__init__(machine, n_jobs, params, quantum)
        if self.quantum <= 0:
            raise ConfigError(
                "controller 'deq' needs a quantum: give quantum (cycles) or quantum_ms"
            )

    def desire(self, job: JobView) -> int:
        """The desire DEQ uses for ``job``: its own, or the whole machine when it has none."""
        return self.P if job.desire is None else int(job.desire)

    def allot(self, now, jobs):
        """DEQ's shares of the jobs' desires ([SAWS12] Algorithm 1)."""
        shares = deq_allot([self.desire(j) for j in jobs], self.P).tolist()
        return {j.jid: k for j, k in zip(jobs, shares, strict=True)}


CONTROLLERS: Registry[type[Controller]] = class_registry(
    "controller", PLUGIN_GROUPS["controller"], Controller
)

#: Names and aliases of every known controller class.
REGISTRY: dict[str, type[Controller]] = CONTROLLERS.entries


def register(cls: type[Controller], *, replace: bool = False) -> type[Controller]:
    """Add a controller class to :data:`REGISTRY` under its name and aliases."""
    return CONTROLLERS.register(cls, replace=replace)


for _cls in (AllCores, Static, Equi, Deq):
    register(_cls)


def check_departures(controller: Controller, schedulers: Iterable[Any]) -> None:
    """Refuse, before the run, a scheduler class that cannot lose cores (it has no
    ``on_depart``) under a controller that may take them (:meth:`Controller.may_take_cores`).

    Such a run failed in its middle, at a cycle that depends on the arrivals, with a
    traceback from the scheduler protocol's default ``on_depart``.

    Raises
    ------
    ConfigError
        One line naming the scheduler and the controller.
    """
    # an object that only quacks like a controller (a wrapper in a test) may take cores
    may_take = getattr(controller, "may_take_cores", None)
    if may_take is not None and not may_take():
        return
    for cls in dict.fromkeys(schedulers):
        if not cls.supports_departures():
            raise ConfigError(
                f"scheduler {cls.name!r} cannot lose cores while its job runs (it has no "
                f"on_depart), and controller {getattr(controller, 'name', '?')!r} may take "
                "them: run it under a controller that keeps a job's cores (all, static)"
            )


def get_controller(name: str) -> type[Controller]:
    """The controller class called ``name`` (or an alias; blanks and case do not matter);
    a clear error if unknown."""
    return CONTROLLERS.get(name)


def assign_cores(
    current: Mapping[int, frozenset[int] | set[int]],
    targets: Mapping[int, int | tuple[int, ...]],
    socket_of: Sequence[int],
    busy: Collection[int] = (),
) -> dict[int, set[int]]:
    """Concrete core sets for the target allotments, moving as few cores as possible.

    A job above its count gives up its idle cores before its ``busy`` ones (a core
    running a strand leaves only when the strand ends, so giving up an idle core is what
    brings the job down to its count now); among equals, first from the sockets where it
    holds fewest (keeping each job on few sockets, so that it keeps sharing its caches),
    highest core first.  A job below its count takes free cores from the sockets where it already holds
    most, then from the sockets with most free cores, lowest core first.  Jobs are served
    in ``jid`` order; everything is deterministic.

    Parameters
    ----------
    current
        Cores each job holds now.
    targets
        Count or explicit cores per job (jobs missing from it get none).
    socket_of
        Socket of every core.
    busy
        Cores running a strand now.

    Returns
    -------
    dict
        ``{jid: set of cores}`` for every job in ``current`` or ``targets``.
    """
    P = len(socket_of)
    out: dict[int, set[int]] = {j: set(c) for j, c in current.items()}
    for j in targets:
        out.setdefault(j, set())
    explicit = {j: set(v) for j, v in targets.items() if isinstance(v, tuple)}
    counts = {j: v for j, v in targets.items() if isinstance(v, int)}
    for j in out:
        if j in explicit:
            out[j] = set(explicit[j])
            continue
        want = counts.get(j, 0)
        have = out[j]
        if len(have) > want:
            per = _per_socket(have, socket_of)
            order = sorted(have, key=lambda c: (c in busy, per[socket_of[c]], -c))
            for c in order[: len(have) - want]:
                have.discard(c)
    taken = set().union(*out.values()) if out else set()
    # The free cores by socket, lowest first.  A job's next core is the one that
    # minimizes (-its cores on the socket, -free cores on the socket, core): the lowest
    # free core of the best socket, so a choice looks at the sockets, not at every free
    # core (which made a 16,384-core allotment take 27 s).
    free: dict[int, list[int]] = {}
    for c in range(P):
        if c not in taken:
            free.setdefault(socket_of[c], []).append(c)
    for cores in free.values():
        cores.reverse()  # the lowest at the end, where pop() takes it
    for j in sorted(out):
        if j in explicit:
            continue
        want = counts.get(j, 0)
        have = out[j]
        mine = _per_socket(have, socket_of)
        while len(have) < want and free:
            s = min(free, key=lambda s: (-mine.get(s, 0), -len(free[s]), free[s][-1]))
            c = free[s].pop()
            if not free[s]:
                del free[s]
            mine[s] = mine.get(s, 0) + 1
            have.add(c)
            taken.add(c)
    return out


def _per_socket(cores: Any, socket_of: Sequence[int]) -> dict[int, int]:
    d: dict[int, int] = {}
    for c in cores:
        d[socket_of[c]] = d.get(socket_of[c], 0) + 1
    return d
