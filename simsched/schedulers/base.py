"""The scheduler protocol: what the engine tells a scheduler and what it answers.

A scheduler is a policy object.  It keeps its own pools (deques, ready sets, per-socket
pools) and never touches engine internals; the engine never looks inside a scheduler.
The conversation is event driven and happens in global simulated time order
(docs/architecture.md §4.3):

* :meth:`Scheduler.on_start` — the job's first strand is ready; the scheduler puts it in
  a pool (or pins it to a core).
* :meth:`Scheduler.on_finish` — a core finished a strand at ``now``; the engine passes the
  strands that this completion made ready, with the kind of the edge that released each
  (``EDGE_SPAWN`` for a spawned child's first strand, ``EDGE_CONT`` for the continuation
  after a spawn or a sync, ``EDGE_JOIN`` for a post-sync strand released by its last
  child).  Sync semantics follow from the DAG: the post-sync strand is released by the
  completion of whichever of its predecessors finishes last, so the worker that finishes
  the last child (or the parent's pre-sync strand, if it finishes last) receives it and,
  under every policy here, continues the frame.
* :meth:`Scheduler.on_idle` — a core has nothing to run at ``now`` (after a failed
  steal attempt, after being woken, or when it joins the job).
* :meth:`Scheduler.on_depart` — a core finished a strand and leaves the job (the
  processor controller gave it to another job; cores change jobs only between strands):
  the strands this completion released must stay where the job's other cores find them.

Both answer a *decision*, a plain tuple ``(kind, strand, cost)`` built with
:func:`run`, :func:`retry` and :data:`WAIT`:

* ``run(s, cost)`` — the core runs strand ``s``; it starts ``cost`` cycles from now
  (the deque, queue or steal operations that produced ``s``, from ``machine.costs``).
* ``retry(cost)`` — the core spent ``cost`` cycles (e.g. a failed steal attempt) and asks
  again at ``now + cost``.
* ``WAIT`` — the core sleeps until the scheduler calls :meth:`SchedContext.wake` (after
  it made work available), then :meth:`on_idle` is called again at the waking time.

Tuples instead of objects because a decision is made for every strand and the engine's
bookkeeping budget is a few microseconds per strand.

Information the policies need is in :class:`SchedContext`:

* topology: cores of the job, socket of every core, head core of every socket (CAB's head
  workers, LAWS' head cores), machine costs, and the price of a steal attempt or pool
  operation by distance (:attr:`SchedContext.steal_cost`, by socket; the same for every
  policy, :func:`simsched.machine.topology.steal_costs`);
* strand metadata: frame, level (CAB's boundary level), spawn index and branching degree,
  iteration and position-key hash (CATS/LAWS find "the same task" in every iteration),
  and the LAWS Eq. 1 data range of every frame (:meth:`SchedContext.data_range`);
* profiling: a scheduler that sets ``wants_profile = True`` receives
  :meth:`Scheduler.on_profile` after every strand with its cycles, instructions and its
  private-cache misses (references that missed every per-core cache level), the
  counter CATS and LAWS read from hardware (LAWS §3.3, Eq. 2);
* quanta and changing core sets ([SAWS12]): a scheduler whose class sets ``quantum``
  (cycles, 0 = none) is called at :meth:`Scheduler.on_quantum` every ``quantum`` cycles
  of its job's life; under a processor controller with a quantum it is called at the
  controller's boundaries instead, and the integer it returns is its processor desire
  for the next quantum.  :meth:`Scheduler.on_cores_changed` tells the scheduler that
  cores joined or left its job (``ctx.cores`` is already updated; cores leave only
  between strands, so a removed core's deque stays with the job — "muggable" in SAWS
  terms); a joining core then gets :meth:`Scheduler.on_idle`.
* waking: :meth:`SchedContext.wake` wakes sleeping cores of the job — up to ``n`` of them,
  or the chosen ``cores`` (CAB and LAWS wake a socket's head core), lowest first.

Counters a scheduler wants in the result record go into ``self.counters`` (a dict of
ints; ``steal_attempts`` and ``steals`` are expected from stealing schedulers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np

from simsched.errors import ConfigError
from simsched.machine.topology import steal_costs
from simsched.params import Param, ParamSchema, settle_plugin_class
from simsched.schedulers._kernels import _eq1_ranges

# Edge kinds are defined once, with the trace format: spawn, continuation, join.
from simsched.trace.format import EDGE_CONT, EDGE_JOIN, EDGE_SPAWN

#: Decision kinds.
RUN = 0
RETRY = 1
SLEEP = 2

__all__ = [
    "Param",
    "ParamSchema",
    "EDGE_CONT",
    "EDGE_JOIN",
    "EDGE_SPAWN",
    "RETRY",
    "RUN",
    "SLEEP",
    "WAIT",
    "Decision",
    "mean_cycles",
    "mean_of_total",
    "Facts",
    "SchedContext",
    "Scheduler",
    "SpinPlan",
    "Victims",
    "retry",
    "run",
]

Decision = tuple[int, int, int]

#: The core sleeps until :meth:`SchedContext.wake` is called.
WAIT: Decision = (SLEEP, -1, 0)


def run(strand: int, cost: int = 0) -> Decision:
    """Decision: run ``strand`` after ``cost`` cycles of scheduling work."""
    return (RUN, strand, cost)


def retry(cost: int) -> Decision:
    """Decision: spend ``cost`` cycles (at least 1) and ask again."""
    return (RETRY, -1, max(int(cost), 1))


def mean_cycles(prices: Sequence[int], default: int) -> int:
    """Mean of ``prices`` rounded half up (``default`` when empty): the attempt period
    of a thief spinning over victims drawn uniformly at these prices."""
    return mean_of_total(sum(prices), len(prices), default)


def mean_of_total(total: int, n: int, default: int) -> int:
    """:func:`mean_cycles` of ``n`` prices that add up to ``total``."""
    if not n:
        return int(default)
    return (2 * int(total) + n) // (2 * n)


class Victims(Sequence[int]):
    """``pool`` without its entry ``skip``, as a sequence, without copying it.

    A thief's victims are the job's other cores (then, for WS, the deques departed cores
    left): one list per core made a 16,384-core run hold 16,384 lists of 16,383 cores
    (2 GB, and most of its time was spent building them).  Every core of a job shares one
    ``pool`` instead and skips its own place in it.

    Parameters
    ----------
    pool
        The victims shared by the job's cores (not copied: it must not change while the
        view is in use).
    skip
        The position in ``pool`` left out (the thief's own); ``len(pool)`` or more: none.

    Attributes
    ----------
    n
        The number of victims, ``len(self)`` (read without a call in the engine's loop
        over idle thieves).
    """

    __slots__ = ("pool", "skip", "n")

    def __init__(self, pool: Sequence[int], skip: int) -> None:
        self.pool = pool
        self.skip = skip if 0 <= skip < len(pool) else len(pool)
        self.n = len(pool) - (self.skip < len(pool))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:  # type: ignore[override]
        # draws are non-negative ints below len(self): no slices, no negative indices
        if not 0 <= i < self.n:
            raise IndexError(f"victim {i} of {self.n}")
        return self.pool[i + (i >= self.skip)]

    def position(self, i: int) -> int:
        """Where victim ``i`` is in :attr:`pool`."""
        return i + (i >= self.skip)

    def __repr__(self) -> str:
        return f"Victims({len(self.pool)} in the pool, skipping position {self.skip})"


class SpinPlan(NamedTuple):
    """How a thief's next idle call goes, for the engine to replay it in a batch.

    A policy returns one from :meth:`Scheduler.spin_plan` when its next :meth:`~Scheduler.on_idle`
    for the core, at any time ``now`` until the job's pools next change, would be exactly:
    draw ``i = rng.integers(len(victims))``; if ``deques[victims[i]]`` is empty, account
    the attempts of a thief woken from sleep (when ``asleep[core] >= 0``: add
    ``(now - asleep[core]) // periods[core]`` to ``counters[key]`` if ``periods[core] > 0``,
    then set ``asleep[core] = -1``), add 1 to ``counters[key]`` and return
    ``retry(prices[victims.position(i)])``, with no other effect.  (When the victim's deque is not empty
    the engine makes the same accounting, then calls ``attempt(core, i)``, which must
    do what ``on_idle`` does after its draw.)  A plan with ``sleep >= 0`` says instead that
    the call would put the core to sleep: the same accounting of a woken thief, then
    ``asleep[core] = now``, ``periods[core] = sleep`` and ``WAIT`` (no draw).

    Attributes
    ----------
    victims
        The cores the thief draws from, in draw order: a :class:`Victims` view of a pool
        the job's cores share, or any sequence (taken as a pool that skips no one).
    prices
        Cycles of an attempt on each core of the pool, by position in the pool (one list
        per socket of thieves serves all of them); for a plain sequence of victims, by
        position in it.
    deques
        Every core's deque, indexed by core (only emptiness is read).
    counters, key
        Where the failed attempt is counted.
    asleep, periods
        Per core: the cycle it went to sleep at (-1: awake) and its attempt period then
        (:class:`~simsched.schedulers.deques.WorkerDeques`' sleep accounting).
    sleep
        -1: the core attempts a steal; otherwise it goes to sleep, attempting (in the
        accounting) every ``sleep`` cycles.
    rng
        The generator the draw is made from.
    attempt
        ``attempt(core, i)``: the rest of ``on_idle`` once ``i`` is drawn (the engine
        calls it when the victim's deque is not empty).
    """

    victims: Victims
    prices: Sequence[int]
    deques: Sequence[Any]
    counters: dict[str, int]
    key: str
    asleep: list[int]
    periods: list[int]
    sleep: int
    rng: np.random.Generator
    attempt: Callable[[int, int], Decision]


class Facts(Protocol):
    """Whole-program measurements the engine makes for a scheduler (``ctx.facts``).

    A scheduler names the ones it needs in :meth:`Scheduler.wanted_facts`; the engine
    computes them before its event loop (:class:`simsched.engine.facts.TraceFacts`).
    """

    def footprint_bytes(self) -> int:
        """The trace's data footprint in bytes."""
        ...

    def one_core_miss_intensity(self) -> dict[str, Any]:
        """``misses``, ``instructions`` and ``intensity`` of a serial one-core replay."""
        ...


class _NoFacts:
    """``ctx.facts`` of a context built without the engine: every fact is refused."""

    def _refuse(self) -> Any:
        raise ConfigError(
            "this scheduler context has no facts service: build it with "
            "facts=simsched.engine.facts.TraceFacts(trace, machine)"
        )

    def footprint_bytes(self) -> int:
        return int(self._refuse())

    def one_core_miss_intensity(self) -> dict[str, Any]:
        return dict(self._refuse())


class SchedContext:
    """What a scheduler may know about the machine, the job and its DAG.

    Parameters
    ----------
    machine
        The resolved :class:`simsched.machine.Machine`.
    cores
        Cores currently given to the job (sorted); the engine keeps :attr:`cores` up to
        date when the processor controller changes them.
    trace
        The open trace (its ``strands`` and ``frames`` tables are used read-only).
    wake
        Engine callback ``wake(n, cores)``: wake up to ``n`` sleeping cores of the job
        (all when ``n`` is None), or the sleeping ones among ``cores``, so that they call
        :meth:`Scheduler.on_idle` now.
    job
        Job number (0 for single-job runs).
    facts
        The engine's measurements of the job's trace (:class:`Facts`; those the scheduler
        class names in :meth:`Scheduler.wanted_facts` are ready before it is built).
    """

    def __init__(
        self,
        machine: Any,
        cores: Sequence[int],
        trace: Any,
        wake: Callable[[int | None, Sequence[int] | None], None],
        job: int = 0,
        facts: Facts | None = None,
    ) -> None:
        self.machine = machine
        self.job = job
        self.facts: Facts = facts if facts is not None else _NoFacts()
        self.costs = machine.costs
        self.n_cores_total = machine.cores
        self.sockets = machine.sockets
        self.socket_of = np.array(
            [machine.socket_of(c) for c in range(machine.cores)], dtype=np.int64
        )
        #: ``steal_cost[s][t]``: cycles of a steal attempt or pool operation by a core
        #: of socket ``s`` on a deque or pool of socket ``t`` (same socket:
        #: ``costs.steal_attempt``; further: ``remote_pool_op`` plus ``remote_hop`` per
        #: extra link).
        self.steal_cost: list[list[int]] = steal_costs(machine)
        self._sock = self.socket_of.tolist()
        self._wake = wake
        self.trace = trace
        st, fr = trace.strands, trace.frames
        self.n_strands = int(trace.header.n_strands)
        self.strand_frame = np.asarray(st.frame)
        self.strand_instr = np.asarray(st.instr)
        self.frame_parent = np.asarray(fr.parent)
        self.frame_level = np.asarray(fr.level)
        self.frame_spawn_index = np.asarray(fr.spawn_index)
        self.frame_branching = np.asarray(fr.branching)
        self.frame_iteration = np.asarray(fr.iteration)
        self.frame_key_hash = np.asarray(fr.key_hash)
        self.frame_first_strand = np.asarray(fr.first_strand)
        self.frame_last_strand = np.asarray(fr.last_strand)
        self._ranges: np.ndarray | None = None
        self.set_cores(cores)

    # -- topology -------------------------------------------------------------------
    def set_cores(self, cores: Iterable[int]) -> None:
        """Replace the job's cores (engine use; schedulers are told by
        :meth:`Scheduler.on_cores_changed`)."""
        self.cores: tuple[int, ...] = tuple(sorted(int(c) for c in cores))
        self.core_set: frozenset[int] = frozenset(self.cores)
        by_socket: list[list[int]] = [[] for _ in range(self.sockets)]
        for c in self.cores:
            by_socket[int(self.socket_of[c])].append(c)
        self._by_socket = tuple(tuple(x) for x in by_socket)

    def cores_of_socket(self, socket: int) -> tuple[int, ...]:
        """Cores of the job on ``socket``."""
        return self._by_socket[socket]

    def head_core(self, socket: int) -> int | None:
        """Head worker of ``socket``: the lowest-numbered job core on it (CAB §III, LAWS §3.4)."""
        cs = self.cores_of_socket(socket)
        return cs[0] if cs else None

    def steal_cycles(self, thief: int, victim: int) -> int:
        """Cycles of one steal attempt by core ``thief`` on core ``victim``'s deque
        (:attr:`steal_cost` of their sockets)."""
        return self.steal_cost[self._sock[thief]][self._sock[victim]]

    def mean_steal_cycles(self, thief: int, victims: Sequence[int]) -> int:
        """Mean cycles of a steal attempt by ``thief`` on a victim drawn uniformly from
        ``victims`` (rounded half up; ``costs.steal_attempt`` when there is none): the
        period of a thief spinning over them, for the sleep accounting of
        :class:`~simsched.schedulers.deques.WorkerDeques`."""
        row = self.steal_cost[self._sock[thief]]
        return mean_cycles([row[self._sock[v]] for v in victims], self.costs.steal_attempt)

    # -- strand metadata ----------------------------------------------------------------
    def level(self, strand: int) -> int:
        """Level of the frame of ``strand`` (main is level 0, CAB §II)."""
        return int(self.frame_level[self.strand_frame[strand]])

    def iteration(self, strand: int) -> int:
        """Iteration number of the frame of ``strand``."""
        return int(self.frame_iteration[self.strand_frame[strand]])

    def key_hash(self, strand: int) -> int:
        """Hash of the position key of the frame of ``strand`` (same task across iterations)."""
        return int(self.frame_key_hash[self.strand_frame[strand]])

    def data_range(self, frame: int) -> tuple[float, float]:
        """Fraction ``[lo, hi)`` of the dataset a frame processes, LAWS Eq. 1.

        LAWS ([LAWS15] §3.2, Eq. 1): the i-th of ``b`` children of a task
        processing ``[Ds, De)`` processes ``[(i-1)(De-Ds)/b + Ds, i(De-Ds)/b + Ds)``
        (``i`` 1-based; simsched's spawn indices are 0-based).  Frames with no parent and
        the roots of iterations (frames whose parent is in another iteration) process the
        whole dataset ``[0, 1)``.
        """
        lo, hi = self.data_ranges()[frame]
        return float(lo), float(hi)

    def data_ranges(self) -> np.ndarray:
        """:meth:`data_range` of every frame at once: float64 array ``(n_frames, 2)``
        (computed once; read-only for schedulers)."""
        if self._ranges is None:
            self._ranges = self._compute_ranges()
            self._ranges.setflags(write=False)
        return self._ranges

    def _compute_ranges(self) -> np.ndarray:
        n = len(self.frame_parent)
        out = np.empty((n, 2), dtype=np.float64)
        # Parents precede children in frame numbering (frames are created in serial
        # order); the trace stores the parent's b on each child.
        _eq1_ranges(
            np.ascontiguousarray(self.frame_parent, dtype=np.int64),
            np.ascontiguousarray(self.frame_iteration, dtype=np.int64),
            np.ascontiguousarray(self.frame_spawn_index, dtype=np.int64),
            np.ascontiguousarray(self.frame_branching, dtype=np.int64),
            out,
        )
        return out

    # -- engine services ----------------------------------------------------------------
    def wake(self, n: int | None = None, cores: Sequence[int] | None = None) -> None:
        """Wake sleeping cores of the job so that they call :meth:`Scheduler.on_idle` now.

        Parameters
        ----------
        n
            Wake at most ``n`` of them, lowest core first (all when None).
        cores
            Wake only these cores (those of them that sleep); ``n`` then limits how many.
        """
        self._wake(n, cores)


class Scheduler:
    """Base class of scheduling policies; every callback has a no-op default.

    Subclasses set ``name`` (registry key), optionally ``aliases``, ``randomized`` (the
    policy uses its random generator, so comparisons average over seeds), ``numa_aware``
    (it places tasks by the memory node of their data) and
    ``params_schema`` (a :class:`~simsched.params.ParamSchema`: the accepted parameters
    with their types, defaults, bounds and documentation; unknown parameters are a
    :class:`ConfigError`).  ``param_defaults`` is derived from it (a plug-in that sets
    only ``param_defaults`` gets a schema of those names and types).

    Parameters
    ----------
    ctx
        The job's :class:`SchedContext`.
    params
        Scheduler parameters (validated against ``param_defaults``).
    rng
        The run's random generator (the only source of randomness a policy may use).
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    randomized: ClassVar[bool] = False
    #: The policy places tasks by socket according to where their data lives in NUMA
    #: memory: its advantage needs several sockets and data spread over their nodes
    #: (``simsched compare`` says so when a run has neither, simsched.comparison).
    numa_aware: ClassVar[bool] = False
    #: For a policy that learns from the first iteration of an iterative program: what it
    #: does on a trace without iteration marks (completes "the trace has no iteration
    #: marks, so ..."); None for policies that do not look at iterations.
    without_iterations: ClassVar[str | None] = None
    #: Whether the engine calls :meth:`on_profile` after every strand (a scheduler may
    #: turn it off during the run, e.g. after profiling its first iteration).
    wants_profile: bool = False
    #: Cycles between :meth:`on_quantum` calls of a job on its own (0 = never).
    quantum: ClassVar[int] = 0
    #: Processor desire before the first quantum ends (None: the policy reports none;
    #: SAWS and A-Steal start at 1, [SAWS12] §3.2).  Read by desire-based controllers.
    initial_desire: ClassVar[int | None] = None
    #: The parameters, declared once (see the class docstring).
    params_schema: ClassVar[ParamSchema] = ParamSchema()
    #: ``{name: default}`` of :attr:`params_schema`.
    param_defaults: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        settle_plugin_class(cls, "scheduler")

    @classmethod
    def idle_params(cls, params: dict[str, Any]) -> dict[str, str]:
        """Parameters given a value other than their default that the other parameters
        leave without effect, each with the reason (resolved ``params``).

        A sweep may grid over such a parameter beside a setting that idles it, so they
        are told (the record's ``idle-params`` warning), not refused.  The default: none.
        """
        return {}

    @classmethod
    def _changed(cls, params: dict[str, Any], name: str) -> bool:
        """Whether ``params`` gives ``name`` a value other than its declared default."""
        return name in params and params[name] != cls.param_defaults.get(name)

    def __init__(self, ctx: SchedContext, params: dict[str, Any], rng: np.random.Generator):
        self.ctx = ctx
        self.rng = rng
        self.params = self.resolve_params(params)
        self.counters: dict[str, int] = {}

    @classmethod
    def resolve_params(cls, params: dict[str, Any] | None) -> dict[str, Any]:
        """Defaults updated with ``params``, resolved by :attr:`params_schema`; unknown
        names, wrong types and values out of bounds are errors."""
        out = cls.params_schema.resolve(f"scheduler {cls.name!r}", params)
        cls.check_params(out)
        return out

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        """Checks across parameters, after the schema's (raise :class:`ConfigError`)."""

    @classmethod
    def wanted_facts(cls, params: dict[str, Any], trace: Any, machine: Any) -> tuple[str, ...]:
        """Names of the :class:`Facts` this policy will read from ``ctx.facts``.

        Called by the engine with the resolved parameters before its event loop, so the
        measurements are made there and not when the job arrives.  Default: none.
        """
        return ()

    # -- callbacks ----------------------------------------------------------------------
    def on_start(self, strand: int, now: int) -> None:
        """The job's first strand is ready at ``now``; put it where a core will find it."""

    def on_finish(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> Decision:
        """``core`` finished ``strand`` at ``now``; ``ready`` strands were released by it.

        Returns the core's next decision.
        """
        return WAIT

    def on_idle(self, core: int, now: int) -> Decision:
        """``core`` has nothing to run at ``now``; returns its next decision."""
        return WAIT

    def spin_plan(self, core: int) -> SpinPlan | None:
        """The :class:`SpinPlan` of ``core``'s next :meth:`on_idle`, when that call would be
        a plain random steal attempt (the engine then replays the failing ones itself,
        docs/engine.md "Idle thieves in batches"); None (the default) otherwise."""
        return None

    def on_profile(
        self, strand: int, core: int, start: int, end: int, instructions: int, private_misses: int
    ) -> None:
        """Per-strand profile (only when ``wants_profile``): cycles and private-cache misses."""

    def on_quantum(self, now: int) -> int | None:
        """A scheduling quantum ended; return the processor desire for the next one.

        Called every ``quantum`` cycles when the class sets ``quantum``, or at the
        boundaries of the processor controller's quantum.  ``None`` (the default): the
        job reports no desire.
        """
        return None

    def on_depart(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> None:
        """``core`` finished ``strand`` at ``now`` and leaves the job.

        ``ready`` are the strands the completion released; they must stay where the job's
        remaining cores find them (``ctx.cores`` no longer holds ``core``).  The default
        refuses: a scheduler that can lose cores overrides this.
        """
        raise NotImplementedError(
            f"scheduler {self.name!r} does not support cores leaving its job; run it under "
            "a processor controller that keeps its cores (all, static)"
        )

    @classmethod
    def supports_departures(cls) -> bool:
        """Whether the class overrides :meth:`on_depart`, so that its jobs may lose cores
        while they run (checked before a run under a controller that moves cores,
        :func:`simsched.engine.controllers.check_departures`)."""
        return cls.on_depart is not Scheduler.on_depart

    def on_cores_changed(self, added: Sequence[int], removed: Sequence[int], now: int) -> None:
        """Cores joined or left the job (``ctx.cores`` is already updated)."""

    def tuning_settled(self) -> bool | None:
        """Whether the policy has stopped changing how it schedules the iterations.

        Asked by steady-state sampling (:mod:`simsched.engine.sampling`) after each
        iteration of the job ends, once the scheduler has seen the completion.  A policy
        that tunes itself across iterations (LAWS' Algorithm 1) answers False until its
        tuning is over, then True; the default ``None`` says the policy does not tune
        itself, and the engine then waits for two iterations that cost alike.
        """
        return None

    def record_fields(self) -> dict[str, Any]:
        """Fields this scheduler adds to the result record after the replay.

        For what a reader of the record needs to interpret the run — CAB's boundary level
        and its inputs, LAWS' packing per iteration.  Keys must not clash with the
        record's own fields; values are numbers, strings, or lists/dicts of them (nested
        values are stored as JSON text in the flat record).
        """
        return {}
