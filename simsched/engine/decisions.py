"""Checks of a policy's answers: a scheduler's decisions and a controller's allotments.

The engine acts on what schedulers and controllers answer, and decides nothing itself
(docs/architecture.md §3), so an answer it cannot act on must fail where it is given,
naming the policy and what is wrong with it: a plug-in's nonsense otherwise ended in an
``IndexError``, in a deadlock message blaming the jobs, or was taken silently.  These
checks are apart from the event loop (:mod:`simsched.engine.replay`) because they are
the contract, not the mechanism; the loop calls them off its fast path (a decision whose
fields are not plain ints, a decision it cannot take, a controller's answer at a
reallocation).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.errors import contract_error

if TYPE_CHECKING:
    from simsched.engine.job import Job


def bad_decision(job: Job, c: int, now: int, dec: Any, why: str) -> RuntimeError:
    """The error of a scheduler that answered ``dec`` for core ``c``: the scheduler's fault,
    named with its job, like a strand that is not ready (:meth:`Job.check_runnable`)."""
    return contract_error(
        job.sched,
        f"scheduler {job.sched.name!r} of job {job.name!r} answered {dec!r} for core {c} at "
        f"{now}: {why} (build decisions with run(strand, cost), retry(cost) or WAIT, "
        "simsched.schedulers.base)",
    )


def checked_allotment(
    controller: Any, now: int, targets: Any, jids: Sequence[int], P: int
) -> dict[int, int | tuple[int, ...]]:
    """Controller ``controller``'s answer ``targets`` at ``now``, normalised (ints, tuples of
    cores), or the error naming what is wrong with it.

    An answer the engine cannot take otherwise ended in an ``IndexError``, or in a
    deadlock message blaming the jobs (a count of -1, 2.5 or "4"), or was taken silently
    (two jobs given the same core: the later took it).
    """
    where = f"controller {getattr(controller, 'name', type(controller).__name__)!r} at cycle {now}"
    if not isinstance(targets, Mapping):
        raise contract_error(controller, f"{where} answered {targets!r}, not a dict by job")
    out: dict[int, int | tuple[int, ...]] = {}
    owner: dict[int, int] = {}
    for jid, v in targets.items():
        if isinstance(jid, bool) or not isinstance(jid, int | np.integer) or jid not in jids:
            raise contract_error(
                controller,
                f"{where} gave cores to {jid!r}, which is no active job (active: {list(jids)})",
            )
        what = f"{where} gave job {int(jid)}"
        if isinstance(v, tuple | list):
            cores = tuple(v)
            if any(
                isinstance(c, bool) or not isinstance(c, int | np.integer) or not 0 <= c < P
                for c in cores
            ):
                raise contract_error(
                    controller, f"{what} cores {v!r}: cores are integers 0..{P - 1}"
                )
            for c in cores:
                if int(c) in owner:
                    raise contract_error(
                        controller, f"{what} core {int(c)}, also given to job {owner[int(c)]}"
                    )
                owner[int(c)] = int(jid)
            out[int(jid)] = tuple(int(c) for c in cores)
        elif isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise contract_error(
                controller, f"{what} {v!r}: a count of cores >= 0 or a tuple of cores"
            )
        else:
            # a count above P is as many cores as are free: a controller that passes on
            # the jobs' desires (which may exceed P) is a fair one to write
            out[int(jid)] = int(v)
    return out


def decision_int(job: Job, c: int, now: int, dec: tuple[int, int, int], what: str) -> int:
    """Decision ``dec``'s ``what`` (``strand`` or ``cost``) as an int (numpy integers are
    fine), else the error."""
    try:
        return int(operator.index(dec[1 if what == "strand" else 2]))
    except TypeError:
        raise bad_decision(job, c, now, dec, f"its {what} is not an integer") from None
