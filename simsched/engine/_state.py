"""The replay's state as the mixins of :class:`~simsched.engine.replay.Replay` read it.

``Replay`` is split by what its methods are about (the event loop in
:mod:`~simsched.engine.replay`, cores moving between jobs in :mod:`~simsched.engine._moves`,
what the replay reports in :mod:`~simsched.engine._report`), but its state is one: made in
``Replay.__init__`` and ``Replay._run``, read and written by all three.  This class only
declares it, once, for the type checker (bare annotations create nothing at run time), and
the methods of ``Replay`` the mixins call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simsched.engine.control import ControlPlane
    from simsched.engine.controllers import Controller
    from simsched.engine.cores import CoreDriver
    from simsched.engine.facts import TraceFacts
    from simsched.engine.job import Job, JobSpec


class ReplayState:
    """The state of a :class:`~simsched.engine.replay.Replay`, declared (see the module)."""

    machine: Any
    specs: list[JobSpec]
    P: int
    seed: int
    controller: Controller
    driver: CoreDriver
    facts: list[TraceFacts]
    alloc_socket_of: list[int]
    jobs: list[Job | None]
    active: list[Job]
    left: int
    now: int
    owner: list[int]
    pending: list[int | None]
    run_job: list[Job | None]
    gen: list[int]
    timer_live: list[bool]
    pmiss: list[int]
    series: list[tuple[int, list[int], list[int], list[int]]]
    reallocations: int
    served: list[set[int]]
    move_cost: int
    last_job: list[int]
    avail: list[int]
    core_moves: int
    warm: list[tuple[Job, int, int] | None]
    joins: int
    window: int
    control: ControlPlane
    n_running: int
    busy: list[int]
    schedc: list[int]
    events: int
    batched: int
    stopped: bool
    control_ns: int
    _cpu0: float
    _stall: int

    if TYPE_CHECKING:  # the replay's own methods, which the event loop calls too

        def _job(self, jid: int) -> Job: ...
        def _wake(self, job: Job, n: int | None, cores: Sequence[int] | None) -> None: ...
        def _timer(self, t: int, c: int) -> None: ...
        def _push_quantum(self, t: int, jid: int) -> None: ...
