"""CATS as the LAWS evaluation runs it, [LAWS15] §6.1 (and §3.3.2, §7).

CATS (Chen, Guo, Huang, ICS 2012) packs the execution DAG into subtrees whose data fit a
socket's shared cache, from counts profiled online, and schedules them with the bi-tier
stealing of CAB: head workers steal subtrees across sockets, the cores of a socket
share one subtree.  [LAWS15] runs an improved CATS: "it also allocates the data evenly
to all the memory nodes in the first iteration as LAWS does" (§6.1); "once an execution
DAG is packed in CATS, the packing cannot be adjusted at runtime" (§6.1, §3.3.2); "CATS
did not consider the underlying NUMA memory system" (§6.1).

So ``cats`` is :class:`~simsched.schedulers.laws.LocalityAware` with:

* the same first iteration (allocator by Eq. 1, parent-first, no task crosses sockets,
  per-task private-cache misses profiled);
* the initial packing of [LAWS15] §3.3.1 (Eq. 2 SOSC, subtrees that fit the shared
  cache), computed once and never tuned; the packer does not know the allocator, so a
  subtree may straddle two sockets' data;
* after the first iteration, no NUMA-aware placement: a subtree or a task above the
  subtrees goes to the CF pool of the socket that spawned it, and head cores steal them
  across sockets at random — the bi-tier stealing of [CAB11] §III with subtrees as the
  inter-socket tasks;
* at least one CF root per socket in every group of procedures the iteration runs at
  the same time (those spawned before one sync): where a group has fewer, as when a
  procedure fits one shared cache whole, its roots move down together until each of the
  job's sockets can take one ([CAB11] §III-B's first constraint, Eq. 1, and §IV's
  boundary level per procedure; :func:`~simsched.schedulers.packing.spread_roots`);
* no CPU-bound test (the seeds give it to LAWS only, §6.5–6.6); ``cpu_check=true``
  enables it;
* where its packing does not apply (no subtree fits the shared cache, the DAG changes
  between iterations, as in GE) CATS schedules the rest of the run by work stealing —
  CATS is CAB's bi-tier stealing over packed subtrees, and without subtrees CAB's rule is
  plain task stealing ([CAB11] Algorithm II step 2).  Frames of a packed run that the
  packing's template does not cover still go to the spawner's CF pool (head cores steal
  them): a per-task fallback is not built (docs/schedulers.md, CATS).
* ``pack=false`` takes that fallback right after the first iteration: what remains of
  CATS is the first iteration's data placement, so a run beside WS's measures what that
  placement costs work stealing (GE-ir on the Xeon, docs/experiments.md).

docs/schedulers.md lists which of these details come from the seeds and which are
simsched's reading of the CATS paper.
"""

from __future__ import annotations

from typing import ClassVar

from simsched.params import Param, ParamSchema
from simsched.schedulers.laws import LocalityAware


class CacheAwareTaskStealing(LocalityAware):
    """CATS as in [LAWS15] §6.1: packing once, no NUMA awareness after iteration one."""

    name: ClassVar[str] = "cats"
    params_schema: ClassVar[ParamSchema] = LocalityAware.params_schema.extend(
        cpu_check=Param(
            False,
            "schedule a CPU-bound program by work stealing after the first iteration "
            "(LAWS §6.5; off: CATS has no such rule)",
        ),
        pack=Param(
            True,
            "pack the DAG after the first iteration (false: keep the first iteration's "
            "data placement and schedule the rest by work stealing, to measure what that "
            "placement alone costs)",
        ),
    )
    PACK: ClassVar[bool] = True
    TUNE: ClassVar[bool] = False
    NUMA: ClassVar[bool] = False
    FALLBACK_WS: ClassVar[bool] = True

    def _packing_veto(self) -> str | None:
        # pack=false: measure what the first iteration's placement alone costs
        return None if self.params["pack"] else "pack=false"
