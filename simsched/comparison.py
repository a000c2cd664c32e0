"""What a comparison of schedulers needs explained: the notes under ``simsched compare``.

A table of makespans and misses says *what* happened; some of the most common outcomes
have a cause the table cannot show.  :func:`run_notes` finds those of one run (from its
record, the trace and the machine), :func:`compare_notes` those of a whole comparison
(one line per cause, the schedulers it concerns named once).  ``simsched run`` and
``simsched compare`` print them; the record of every run keeps its warnings in the field
``warnings`` (docs/results.md).

The causes:

* ``compulsory-misses``: every scheduler took the same last-level misses (within 2 %)
  and the trace's footprint fits one last-level cache: they are cold misses, which no
  schedule can reduce;
* ``no-references``, ``serial-trace``, ``one-core``: a trace without memory references,
  one that spawns no task, a machine with one core: what the comparison can show is
  scheduling alone, no parallelism, or the schedulers' own costs;
* ``small-inclusive``: an inclusive level smaller than a level above it over the cores
  it serves, whose evictions keep the levels above below their size;
* ``one-socket``: a NUMA-aware policy (:attr:`Scheduler.numa_aware`) on a machine with
  one socket, where it has no nodes to place data and tasks on;
* ``no-iterations``: a policy that learns from its first iteration
  (:attr:`Scheduler.without_iterations`) on a trace without iteration marks or with a
  single iteration;
* ``data-one-node``: a NUMA-aware policy on a multi-socket machine whose memory traffic
  all went to one node: the data was first-touched there (e.g. by a serial
  initialisation, the heat generator's ``init=true``), so no placement can make it local;
* ``cab-bl``: CAB's boundary level and why ([CAB11] §III-B Eq. 4); ``bl = 0`` makes every
  task intra-socket, i.e. CAB is WS;
* ``no-controller``: a policy that reports a processor desire ([SAWS12]'s SAWS and
  A-Steal: :attr:`Scheduler.initial_desire`) in a single run, where no processor
  controller asks for it, so its desire parameters change nothing;
* ``uneven-allocation``: LAWS's allocator (also LAWS-NC's and CATS') gave one socket at
  least :data:`UNEVEN_ALLOCATION` times its even share of the first iteration's references
  (the record's ``allocator_shares``) because the trace's tasks do not divide their data
  evenly among their children, as [LAWS15] §3.2 assumes (``allocator_mismatch`` at least
  :data:`UNEVEN_MISMATCH`), e.g. a ``cilk_for`` split as OpenCilk splits it;
* ``socket-imbalance``: one socket's cores did at least :data:`SOCKET_IMBALANCE` times
  their even share of the busy cycles, or a socket ran nothing (a warning then), with the
  likely cause: PDF's wake order, the LAWS family's first iteration or allocation, or too
  little parallelism;
* ``packing-search``: LAWS's Algorithm 1 spent a quarter or more of the iterations after
  the profiled one measuring packings (a short trace);
* ``sampled-drift``: a sampled run whose samples' cycles per reference rise or fall
  steadily (:func:`simsched.engine.sampled.sample_drift`), so far that the trend, if it
  went on, would put the makespan outside its interval: the extrapolation assumes a
  steady rate (docs/engine.md §7);
* ``sampled-unlike``: a sampled run whose left-out iterations hold on average
  :data:`UNLIKE_ITERATIONS` or more references more or fewer than its samples (GE's
  pivot steps shrink): the extrapolation charges them the samples' cycles per reference,
  which no test of the samples can check for iterations that change (docs/engine.md §7,
  "A drift no test on the samples can see").
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any, Literal

from simsched.engine.sampled import sample_drift, trace_iterations
from simsched.engine.sampling import iteration_weights
from simsched.schedulers import get_scheduler
from simsched.stats import interval_ends, log_half_width, t_quantile

__all__ = [
    "Note",
    "Ratio",
    "baseline_ratios",
    "compare_notes",
    "footprint_bytes",
    "paired_ratio",
    "run_notes",
    "sampled_ratio",
]

#: ``uneven-allocation`` is noted when a socket's share of the allocator's references is
#: at least this many times the even share ``1/M`` ...
UNEVEN_ALLOCATION = 1.25
#: ... and the record's ``allocator_mismatch`` is at least this (so that the imbalance
#: comes from tasks dividing their data unevenly, not from fewer leaves than sockets).
#: Measured on the first iteration: the LAWS study's workloads (``medium.yaml``) 0.004-0.034
#: but GE-ir 0.098, their shares within 1.035 of even on 2, 4 and 8 sockets; the iterative
#: sample traces up to 0.03 but the smallest 25P and 6P ones (24 planes, 0.08-0.17: 5
#: planes split 2 + 3); the generators' ``uneven=true`` 0.33-0.36, shares up to 2x even on
#: 4 sockets; a Cilk heat captured with OpenCilk's ``cilk_for`` split 0.59, 2.6x.
UNEVEN_MISMATCH = 0.1

#: ``socket-imbalance`` is noted when a socket's cores were busy at least this many times
#: the even share of the run's busy cycles (or a socket ran nothing).
SOCKET_IMBALANCE = 1.5
#: ``packing-search`` is noted when Algorithm 1 spent at least this share of the
#: iterations after the profiled one measuring packings (``initial``, ``smaller``,
#: ``larger`` in the record's ``packing``).
SEARCH_SHARE = 0.25
SEARCH_MOVES = frozenset({"initial", "smaller", "larger"})
#: ``sampled-unlike`` is noted when the iterations a sampled run left out hold on average
#: at least this share more or fewer references than its samples.  Iterations of the
#: stencils are alike to the reference; GE's differ by 9.3-9.9 % on the LAWS study's AMD
#: size, where the sampled LAWS makespans were 3.30-4.32 % low, and by 2.4 % on its Intel
#: size, where LAWS's was 1.28 % low (the level is set below that).
UNLIKE_ITERATIONS = 0.02
#: Notes whose text carries a run's own figures: one per scheduler in a comparison.
PER_SCHEDULER = frozenset({"socket-imbalance", "packing-search", "sampled-drift", "sampled-unlike"})

#: Last-level misses of the runs within this factor of each other count as "the same"
#: for the compulsory-misses note.
SAME_MISSES = 1.02


@dataclass(frozen=True)
class Note:
    """One explanation of an outcome.

    Attributes
    ----------
    code
        Stable name of the cause (``compulsory-misses``, ``sampled-counters``,
        ``one-socket``, ``no-iterations``, ``data-one-node``, ``cab-bl``, ``no-controller``,
        ``uneven-allocation``, ``socket-imbalance``, ``packing-search``,
        ``sampled-drift``, ``sampled-unlike``).
    text
        One line for a person.
    level
        ``warning`` (the comparison does not show what the policy is for; kept in the
        record's ``warnings``) or ``info`` (context, printed only).
    schedulers
        The schedulers concerned (empty: the whole comparison).
    """

    code: str
    text: str
    level: Literal["warning", "info"] = "warning"
    schedulers: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, str]:
        """``{"code", "message"}``, the form kept in a record's ``warnings``."""
        return {"code": self.code, "message": self.text}


def _mb(n: float) -> str:
    return f"{n / 2**20:.3g} MB" if n >= 2**20 else f"{n / 2**10:.3g} KB"


def has_iterations(trace: Any) -> bool:
    """Whether any frame of ``trace`` carries an iteration mark."""
    return bool((trace.frames.iteration >= 0).any())


def _field(record: dict[str, Any], key: str) -> Any:
    """A nested record field, whether JSON text (a table's row) or an object."""
    raw = record.get(key, "[]")
    return json.loads(raw) if isinstance(raw, str) else raw


def _allocator_shares(record: dict[str, Any]) -> list[float]:
    """The record's ``allocator_shares``: the share of the references [LAWS15] Eq. 1 gave
    each socket (empty for a policy without the allocator)."""
    return [float(x) for x in _field(record, "allocator_shares")]


def _nodes_used(record: dict[str, Any]) -> list[int]:
    """Memory nodes that served at least one line fetch in a run."""
    nodes = _field(record, "dram_by_node")
    return [i for i, nd in enumerate(nodes) if int(nd["local"]) + int(nd["remote"]) > 0]


def _uneven_allocation(name: str, record: dict[str, Any], trace: Any) -> Note | None:
    """``uneven-allocation`` when the record's ``allocator_shares`` are far from even
    because Eq. 1 does not fit the trace (``allocator_mismatch``)."""
    shares = _allocator_shares(record)
    mismatch = float(record.get("allocator_mismatch", 0.0))
    if len(shares) < 2:
        return None
    top = max(shares)
    if top * len(shares) < UNEVEN_ALLOCATION or mismatch < UNEVEN_MISMATCH:
        return None
    k = shares.index(top)
    # without iterations the whole run is the first one: the allocation holds throughout
    what = (
        "the first iteration's references"
        if has_iterations(trace)
        else "the references (the whole run is its first iteration)"
    )
    return Note(
        "uneven-allocation",
        f"{name}: the allocator ([LAWS15] Eq. 1) gave socket {k} {top:.0%} of {what} "
        f"(an even division: {1 / len(shares):.0%} each), so its "
        "cores do most of the work: this trace's tasks do not divide their data evenly "
        f"among their children as §3.2 assumes (Eq. 1 misplaces {mismatch:.0%} of it). "
        "A cilk_for split as OpenCilk splits it (simsched cc's default) spawns ever "
        "smaller halves from one frame; build it with simsched cc --cilk-for-split binary",
        schedulers=(name,),
    )


def _concentrated(shares: list[float]) -> int | None:
    """The socket given at least :data:`UNEVEN_ALLOCATION` times its even share, if any."""
    top = max(shares)
    return shares.index(top) if top * len(shares) >= UNEVEN_ALLOCATION else None


#: ``data-one-node`` names the allocator, not a serial initialisation, when it gave the
#: node's socket at least this share: under first-touch a socket given less still touches
#: its own pages, so one node alone means nearly all the work was there.
ALL_ON_ONE = 0.9


def _socket_imbalance(cls: Any, record: dict[str, Any], trace: Any) -> Note | None:
    """``socket-imbalance``: one socket's cores were busy at least :data:`SOCKET_IMBALANCE`
    times the even share of the run's busy cycles, or a socket ran nothing while others
    did (a warning then; context otherwise), with the cause the policy makes likely."""
    name = cls.name
    busy = [float(x) for x in _field(record, "busy_by_socket")]
    shares = _allocator_shares(record) or [0.0]
    total = sum(busy)
    if len(busy) < 2 or total <= 0:
        return None
    top = max(busy)
    k = busy.index(top)
    idle = [i for i, b in enumerate(busy) if b == 0]
    if top * len(busy) < SOCKET_IMBALANCE * total and not idle:
        return None
    if name == "pdf":
        why = (
            "PDF gives ready strands to idle cores lowest-numbered first (docs/schedulers.md "
            "§4), so with fewer ready strands than cores its work stays on the first sockets"
        )
    elif cls.without_iterations is not None and trace_iterations(trace) < 2:
        why = (
            "the whole run is the profiled first iteration, in which no task leaves the "
            "socket the allocator gave it ([LAWS15] §3.4)"
        )
    elif getattr(cls, "NUMA", False) and _concentrated(shares) == k:
        # only a policy that keeps placing by the allocation after the first iteration
        why = f"the allocator ([LAWS15] Eq. 1) gave that socket {shares[k]:.0%} of the data"
    else:
        util = float(record.get("utilization", 1.0))
        why = (
            f"the program kept few cores busy (utilization {util:.0%})"
            if util < 0.5
            else "the schedule placed most of the work there"
        )
    none = (
        f"; socket{'s' if len(idle) > 1 else ''} {', '.join(map(str, idle))} ran nothing"
        if idle
        else ""
    )
    return Note(
        "socket-imbalance",
        f"{name}: socket {k}'s cores did {top / total:.0%} of the busy cycles (an even "
        f"division: {1 / len(busy):.0%} each){none}: {why}",
        level="warning" if idle else "info",
        schedulers=(name,),
    )


def _tuning_share(name: str, record: dict[str, Any]) -> Note | None:
    """``packing-search``: Algorithm 1 spent at least :data:`SEARCH_SHARE` of the
    iterations after the profiled one measuring packings (the initial one included)."""
    log = _field(record, "packing")
    if not isinstance(log, list) or not log:
        return None
    moves = [str(p.get("move")) for p in log if isinstance(p, dict)]
    after = [m for m in moves if m != "profile"]
    tried = sum(m in SEARCH_MOVES for m in after)
    if tried == 0 or tried < SEARCH_SHARE * len(after):
        return None
    return Note(
        "packing-search",
        f"{name}: Algorithm 1 ([LAWS15] §3.3.2) measured packings in {tried} of the "
        f"{len(after)} iterations after the profiled one, so the search weighs on the "
        "makespan as it would not over the paper's 200 iterations; compare on a trace "
        "with more iterations, or the iteration times after the search (iteration_cycles)",
        level="info",
        schedulers=(name,),
    )


def _sampled_weights(record: dict[str, Any], trace: Any) -> Any:
    """References of every iteration of the trace a sampled run replayed (what the two
    sampling notes weigh its iterations by), else None: the run was not sampled, or its
    record counts other iterations than the trace has."""
    if not record.get("sampled") or "settled_at" not in record:
        return None
    weights = iteration_weights(trace)
    return weights if weights.size == int(record["trace_iterations"]) else None


def _sampled_unlike(name: str, record: dict[str, Any], weights: Any) -> Note | None:
    """``sampled-unlike`` (see the module docstring) of a sampled run whose iterations
    hold ``weights`` references, else None."""
    first, detailed = int(record["settled_at"]), int(record["detailed_iterations"])
    if not 0 <= first < detailed < weights.size:
        return None
    samples = float(weights[first:detailed].mean())
    change = float(weights[detailed:].mean()) / samples - 1 if samples > 0 else 0.0
    if abs(change) < UNLIKE_ITERATIONS:
        return None
    left = weights.size - detailed
    return Note(
        "sampled-unlike",
        f"{name}: sampled, but the {left} iteration{'s' if left > 1 else ''} left out "
        f"hold{'s' if left == 1 else ''} {abs(change):.1%} "
        f"{'more' if change > 0 else 'fewer'} references on average "
        "than the samples: the extrapolation charges them the samples' cycles per "
        "reference, which iterations that change need not keep and the samples cannot "
        "show (docs/engine.md §7: on GE at the LAWS paper's sizes the cost per reference "
        "rose after the samples and the intervals missed); replay the run in detail "
        "where its number matters",
        schedulers=(name,),
    )


def _sampled_drift(name: str, record: dict[str, Any], weights: Any) -> Note | None:
    """``sampled-drift`` (see the module docstring) of a sampled run whose iterations hold
    ``weights`` references, else None."""
    ends = _field(record, "iteration_ends")
    detailed = int(record["detailed_iterations"])
    if len(ends) < detailed:  # a record of a version that kept no iteration ends
        return None
    d = sample_drift(ends, weights, int(record["settled_at"]), detailed)
    if d is None or not d.significant:
        return None
    makespan = int(record["makespan_cycles"])
    lo, hi = (int(v) for v in _field(record, "makespan_ci95"))
    if lo <= makespan + d.shift <= hi:
        return None
    way = "rise" if d.slope > 0 else "fall"
    return Note(
        "sampled-drift",
        f"{name}: sampled, but the samples' cycles per reference {way} "
        f"{abs(d.slope):.2%} per iteration (iterations {d.first}–{d.last}, t = {d.t:.1f}) "
        "where the extrapolation assumes a steady rate, so the interval may not hold a "
        "detailed replay's makespan (the line through the samples, continued to the end, "
        f"would make it {abs(d.shift) / makespan:.1%} {'higher' if d.shift > 0 else 'lower'}; "
        "a trend that levels off moves it less); replay the run in detail, or with more "
        "samples",
        schedulers=(name,),
    )


_BL_REASONS = {
    "given": "given as a parameter",
    "single-socket": "one socket: a single squad (Algorithm II step 2)",
    "cpu-bound": "the program is CPU-bound ([CAB11] §V-D)",
    "no-recursion": "no task below main spawns: no tier to cut",
    "no-division": (
        "the measured branching degree is 1: most frames that spawn have one child that "
        "spawns in turn, a chain, not the B-ary division of §III-B (a cilk_for split as "
        "OpenCilk splits it spawns 1/2, 1/4, ... of its range from one frame; "
        "--cilk-for-split binary builds halves)"
    ),
    "sockets": "Eq. 4's socket term decides",
    "cache": "Eq. 4's cache term decides (data / shared cache)",
    "both": "Eq. 4's two terms agree",
    "intra-tasks": (
        "lowered from Eq. 4's by §III-B's third constraint: each leaf inter-socket task keeps "
        "a task for every worker of its squad"
    ),
    "too-shallow": (
        "the DAG is too shallow for two tiers: §III-B's third constraint, a task for every "
        "worker of a squad below each leaf inter-socket task, leaves fewer of them than sockets"
    ),
}


def run_notes(record: dict[str, Any], trace: Any, machine: Any) -> list[Note]:
    """The notes of one finished run.

    Parameters
    ----------
    record
        The run's flat result record (``scheduler``, ``dram_by_node``, CAB's ``bl``...).
    trace
        The open trace it replayed.
    machine
        The resolved machine.

    Returns
    -------
    list of Note
        Per-run causes (all but ``compulsory-misses``, which needs the footprint).
    """
    cls = get_scheduler(str(record["scheduler"]))
    name = cls.name
    notes: list[Note] = []
    if cls.numa_aware and machine.sockets == 1:
        notes.append(
            Note(
                "one-socket",
                f"{name}: NUMA-aware, but {machine.name} has one socket: with one memory "
                "node there is nothing to place, so the run shows only the policy's costs",
                schedulers=(name,),
            )
        )
    # one iteration is the profiled one: nothing runs after it, as with none
    n_iterations = trace_iterations(trace) if cls.without_iterations else 2
    if n_iterations < 2:
        has = "has no iteration marks" if n_iterations == 0 else "has a single iteration"
        notes.append(
            Note(
                "no-iterations",
                f"{name}: the trace {has}, so {cls.without_iterations}",
                schedulers=(name,),
            )
        )
    if cls.numa_aware and machine.sockets > 1:
        used = _nodes_used(record)
        shares = _allocator_shares(record)
        if len(used) == 1 and len(shares) > 1 and shares[used[0]] >= ALL_ON_ONE:
            # the policy's own allocation, not a serial initialisation, put it there
            notes.append(
                Note(
                    "data-one-node",
                    f"{name}: every DRAM access went to node {used[0]}, the node of the "
                    f"socket the allocator ([LAWS15] Eq. 1) gave {max(shares):.0%} of the "
                    "references (uneven-allocation): its tasks first-touched the data there",
                    schedulers=(name,),
                )
            )
        elif len(used) == 1:
            notes.append(
                Note(
                    "data-one-node",
                    f"{name}: every DRAM access went to node {used[0]} (the data was "
                    "first-touched there, e.g. by a serial initialisation such as the "
                    "heat generator's init=true), so no placement can make it local; "
                    "generate with init=false or use placement: interleave",
                    schedulers=(name,),
                )
            )
    if "bl" in record and "bl_reason" in record:
        bl = int(record["bl"])
        why = _BL_REASONS.get(str(record["bl_reason"]), str(record["bl_reason"]))
        depth = record.get("bl_depth")
        # a level at or below the DAG's leaves leaves no task to the intra-socket tier
        too_deep = bl > 0 and depth is not None and bl >= int(depth)
        if bl == 0:
            text = f"{name}: BL = 0 ({why}): every task is intra-socket, so {name} is WS"
        elif too_deep:
            text = (
                f"{name}: boundary level BL = {bl} ({why}) is at or below the DAG's "
                f"deepest level ({depth}): no task is intra-socket, so only the head "
                "worker of each socket runs tasks"
            )
        else:
            text = f"{name}: boundary level BL = {bl} ({why})"
            leaves, sockets = record.get("bl_leaf_tasks"), record.get("bl_sockets")
            if leaves is not None and sockets is not None and int(leaves) == int(sockets) > 1:
                # Eq. 4 takes the smallest BL: no leaf inter-socket task to spare
                text += (
                    f"; its {int(leaves)} leaf inter-socket tasks are one per socket, so a "
                    "squad that finishes its own first has none to take over"
                )
        level: Literal["warning", "info"] = "warning" if bl == 0 or too_deep else "info"
        notes.append(Note("cab-bl", text, level=level, schedulers=(name,)))
    if cls.initial_desire is not None:
        notes.append(
            Note(
                "no-controller",
                f"{name}: a single run has no processor controller to ask for its "
                "desire, so its desire parameters change nothing: it schedules as "
                "ws-equi (work stealing with mugging) on every core; run it in a job set "
                "under --controller deq with a quantum (docs/jobs.md)",
                schedulers=(name,),
            )
        )
    uneven = _uneven_allocation(name, record, trace)
    if uneven is not None:
        notes.append(uneven)
    imbalance = _socket_imbalance(cls, record, trace)
    if imbalance is not None:
        notes.append(imbalance)
    search = _tuning_share(name, record)
    if search is not None and machine.cores > 1:  # one core: trace_notes' one-core says why
        notes.append(search)
    weights = _sampled_weights(record, trace)
    if weights is not None:
        for note in (
            _sampled_drift(name, record, weights),
            _sampled_unlike(name, record, weights),
        ):
            if note is not None:
                notes.append(note)
    given = _field(record, "params")
    params: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    idle = cls.idle_params(params) if params else {}
    if idle:
        said = "; ".join(f"{k}={params[k]!r} ({why})" for k, why in idle.items())
        notes.append(
            Note(
                "idle-params",
                f"{name}: these parameters have no effect in this run: {said}",
                schedulers=(name,),
            )
        )
    return notes


def jobs_notes(schedulers: list[str], controller: str) -> list[Note]:
    """The warnings of a job set: ``no-controller`` for each policy that reports a
    processor desire ([SAWS12]'s SAWS and A-Steal) under a controller that reads none.

    Parameters
    ----------
    schedulers
        The jobs' scheduler names (aliases allowed).
    controller
        The processor controller's name.

    Returns
    -------
    list of Note
        One per such policy, in order of first appearance.
    """
    from simsched.engine.controllers import get_controller

    ctl = get_controller(controller)
    if ctl.uses_desire:
        return []
    out = []
    for name in dict.fromkeys(get_scheduler(s).name for s in schedulers):
        if get_scheduler(name).initial_desire is not None:
            out.append(
                Note(
                    "no-controller",
                    f"{name}: controller {ctl.name} does not read the jobs' desires, so "
                    f"its desire parameters change nothing: {name}'s jobs schedule as "
                    "ws-equi (work stealing with mugging); use --controller deq with a "
                    "quantum (docs/jobs.md)",
                    schedulers=(name,),
                )
            )
    return out


def footprint_bytes(trace: Any) -> int:
    """The trace's footprint in bytes (distinct lines × line-size hint), cached per digest."""
    from simsched.engine.facts import trace_footprint_bytes

    return int(trace_footprint_bytes(trace))


def sampled_note(records: list[dict[str, Any]]) -> Note | None:
    """``sampled-counters`` when sampled runs replayed different numbers of iterations in
    detail, else None.

    Parameters
    ----------
    records
        The comparison's run records.

    Returns
    -------
    Note or None
        An ``info`` note naming each scheduler's detailed iterations.
    """
    if not any(r.get("sampled") for r in records):
        return None
    counts: dict[str, list[int]] = {}
    for r in records:
        counts.setdefault(str(r["scheduler"]), []).append(int(r["detailed_iterations"]))
    if len({c for cs in counts.values() for c in cs}) == 1:
        return None  # the same iterations everywhere: the counters compare as they are
    each = ", ".join(
        f"{name} {min(cs)}" if min(cs) == max(cs) else f"{name} {min(cs)}–{max(cs)}"
        for name, cs in counts.items()
    )
    total = int(records[0]["trace_iterations"])
    return Note(
        "sampled-counters",
        "sampled: makespan_cycles and speedup are extrapolated, but every other count "
        f"covers only the iterations replayed in detail ({each} of {total}), so counts "
        "do not compare across these runs; compare rates (mpki) or run in detail",
        level="info",
    )


def trace_notes(trace: Any, machine: Any) -> list[Note]:
    """What the trace or the machine alone leaves for a comparison to show: a trace without
    memory references (``no-references``), one that spawns no task (``serial-trace``), a
    machine with one core (``one-core``)."""
    out = []
    if int(trace.header.n_refs) == 0:
        out.append(
            Note(
                "no-references",
                "the trace makes no memory references, so no cache or memory count can "
                "differ: the runs compare scheduling alone",
            )
        )
    if int(trace.header.n_frames) == 1:
        out.append(
            Note(
                "serial-trace",
                "the trace spawns no task: one core runs it under any scheduler, so the "
                "runs differ only by the schedulers' own costs",
            )
        )
    if machine.cores == 1:
        out.append(
            Note(
                "one-core",
                f"{machine.name} has one core: nothing runs in parallel, so the runs "
                "differ only by the schedulers' own costs",
            )
        )
    small = _small_inclusive(machine)
    if small is not None:
        out.append(small)
    return out


def _small_inclusive(machine: Any) -> Note | None:
    """``small-inclusive``: an inclusive level holds less than a level above it does over
    the cores it serves, so its evictions take lines the levels above still use (a scaled
    machine may shrink it so on purpose: context, not a refusal)."""
    for i, c in enumerate(machine.caches):
        if not c.inclusive:
            continue
        for above in machine.caches[:i]:
            served = machine.cores_per_socket if above.scope == "core" != c.scope else 1
            if above.size * served > c.size:
                each = f"{served} × " if served > 1 else ""
                return Note(
                    "small-inclusive",
                    f"{machine.name}: {c.name} is inclusive but holds {c.size:,} bytes, "
                    f"less than the {each}{above.size:,} of the {above.name} above it: "
                    f"each {c.name} eviction removes the line from the {above.name} too, "
                    f"so the {above.name} holds less than its size",
                    level="info",
                )
    return None


def compulsory_note(records: list[dict[str, Any]], trace: Any, machine: Any) -> Note | None:
    """``compulsory-misses`` when the footprint fits one last-level cache, else None (also
    for a trace without references: ``no-references`` says more)."""
    if int(trace.header.n_refs) == 0:
        return None
    last = machine.caches[-1]
    misses = sorted({int(r.get(f"{last.name}_misses", 0)) for r in records})
    # Only when the schedules do not differ: with shared data written by several sockets,
    # coherence misses make a fitting footprint miss more, and differently per schedule.
    if not misses or misses[-1] > SAME_MISSES * misses[0]:
        return None
    fp = footprint_bytes(trace)
    if fp > last.size:
        return None
    seen = f"{misses[0]:,}" if len(misses) == 1 else f"{misses[0]:,}–{misses[-1]:,}"
    once = "once" if machine.sockets == 1 or last.scope == "core" else "once per socket"
    return Note(
        "compulsory-misses",
        f"{last.name} misses ({seen}) are compulsory: the trace's footprint "
        f"({_mb(fp)}) fits one {last.name} ({_mb(last.size)}), so every line is fetched "
        f"{once} under any schedule; use a larger input or a smaller "
        f"{last.name} (--set caches.{last.name}.size=...) to compare "
        "cache behaviour",
    )


def compare_notes(records: list[dict[str, Any]], trace: Any, machine: Any) -> list[Note]:
    """The notes under a comparison: one per cause, per-run notes merged over seeds.

    Parameters
    ----------
    records
        The comparison's successful run records.
    trace
        The open trace.
    machine
        The resolved machine.

    Returns
    -------
    list of Note
        The trace's and the machine's (:func:`trace_notes`), ``compulsory-misses`` and
        ``sampled-counters`` first, then the per-run causes in order of first
        appearance; a cause shared by several schedulers with the same text (after the
        scheduler's name) is one note naming them all.
    """
    out: list[Note] = trace_notes(trace, machine)
    note = compulsory_note(records, trace, machine)
    if note is not None:
        out.append(note)
    note = sampled_note(records)
    if note is not None:
        out.append(note)
    seen: dict[tuple[str, str], int] = {}
    once: dict[tuple[str, str], int] = {}
    for rec in records:
        for n in run_notes(rec, trace, machine):
            name = n.schedulers[0] if n.schedulers else ""
            if n.code in PER_SCHEDULER:
                # its figures differ from seed to seed: one run's stands for the rest, the
                # first warning's if any run's is one
                at = once.get((n.code, name))
                if at is not None:
                    if n.level == "warning" and out[at].level != "warning":
                        out[at] = n
                    continue
                once[(n.code, name)] = len(out)
                out.append(n)
                continue
            key = (n.code, n.text.replace(name, "{}", 1) if name else n.text)
            if key not in seen:
                seen[key] = len(out)
                out.append(n)
                continue
            old = out[seen[key]]
            if name and name not in old.schedulers:
                names = (*old.schedulers, name)
                text = key[1].replace("{}", ", ".join(names), 1)
                out[seen[key]] = Note(old.code, text, old.level, names)
    return out


# ------------------------------------------------------------------ baseline ratios

#: The test behind ``compare --baseline``, as printed under the table.
RATIO_TEST = (
    "paired t interval on the log-ratios, seeds paired; a sampled makespan's and speedup's "
    "at least as wide as the runs' own 95 % intervals combined"
)

#: The fields of a sampled record that are extrapolated, not counted over its detailed
#: iterations: the makespan and the speedup (the one-core baseline over it, with the same
#: interval on the log scale).
EXTRAPOLATED = ("makespan_cycles", "speedup")


@dataclass(frozen=True)
class Ratio:
    """One metric of one scheduler as a ratio to the baseline.

    Attributes
    ----------
    ratio
        Geometric mean over the paired seeds of ``value / baseline value``.
    lo, hi
        95 % confidence interval of the ratio (paired t on the log-ratios); equal to
        ``ratio`` when ``n`` is 1 or every pair has the same ratio.
    n
        Pairs (seeds).
    sampled
        The interval holds the sampled makespans' (or speedups') own uncertainty
        (:func:`sampled_ratio`):
        wider than the seeds' alone, or the only interval of a single pair.
    """

    ratio: float
    lo: float
    hi: float
    n: int
    sampled: bool = False

    def as_dict(self) -> dict[str, float | int | bool]:
        """Plain dict for JSON."""
        return {
            "ratio": self.ratio,
            "lo": self.lo,
            "hi": self.hi,
            "n": self.n,
            "sampled": self.sampled,
        }


def paired_ratio(values: list[float], base: list[float], level: float = 0.95) -> Ratio | None:
    """Ratio of paired samples with its confidence interval; None if a value is <= 0.

    Parameters
    ----------
    values, base
        The scheduler's and the baseline's values, one pair per seed.
    level
        Confidence level of the two-sided interval.
    """
    if len(values) != len(base) or not values:
        raise ValueError("paired_ratio: need as many values as baseline values, at least one")
    if any(v <= 0 for v in values) or any(b <= 0 for b in base):
        return None  # a ratio to or of zero has no logarithm
    d = [math.log(v / b) for v, b in zip(values, base, strict=True)]
    n = len(d)
    mean = statistics.fmean(d)
    if n == 1:
        r = math.exp(mean)
        return Ratio(r, r, r, 1)
    half = t_quantile(0.5 + level / 2, n - 1) * statistics.stdev(d) / math.sqrt(n)
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)


def sampled_interval(record: dict[str, Any], name: str = "makespan") -> tuple[float, float] | None:
    """A sampled run's 95 % interval of its makespan (cycles) or, with ``name`` "speedup",
    of its speedup, ``(lo, hi)``, from its record (a result record or a table's row); None
    for a detailed run, whose ``makespan_ci95`` is the makespan twice, and for a record
    that keeps no such interval (``speedup_ci95`` came with simsched 0.1.1.dev1400's
    records).  A speedup with no upper bound (the makespan's interval reaching zero) has
    ``hi`` infinite."""
    if not record.get("sampled"):
        return None
    return interval_ends(record.get(f"{name}_ci95"))


def _log_half(record: dict[str, Any]) -> float:
    """Half-width, on the log scale, of a record's makespan interval (0 where
    :func:`sampled_interval` has none: nothing to add to the seeds')."""
    got = sampled_interval(record)
    return 0.0 if got is None else log_half_width(*got)


def sampled_ratio(ratio: Ratio, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> Ratio:
    """Widen a makespan ratio, or a speedup ratio, to hold the sampled runs' own
    uncertainty (a speedup is the one-core baseline over the makespan: its interval has the
    makespan's half-width on the log scale, and a baseline both runs share cancels).

    The geometric mean of ``n`` log-ratios, each the difference of two independent
    estimates whose 95 % half-widths on the log scale are ``a_i`` and ``b_i``, has the
    half-width ``sqrt(sum(a_i^2 + b_i^2)) / n`` from sampling alone (the normal
    approximation, which adds variances).  A record in several pairs (a deterministic
    scheduler's one run, paired with every seed of the other side) is one estimate whose
    error moves every pair's log-ratio alike: it counts once, at weight ``c / n`` for the
    ``c`` pairs it is in (1 for all of them), not as ``c`` independent ones.  The seeds'
    paired t interval already holds the sampling noise of runs that differ by seed when
    there are enough seeds (never a run shared by every pair); with one pair it has no
    width at all, so the ratio keeps the wider of the two.

    Parameters
    ----------
    ratio
        :func:`paired_ratio` of the pairs' makespans.
    pairs
        ``(record, baseline record)`` per seed, in the ratio's order.

    Returns
    -------
    Ratio
        ``ratio`` itself when no record of the pairs is sampled.
    """
    # each distinct record once, with the number of pairs it is in: a shared record's
    # half-width counted once per pair made it shrink by sqrt(n) with the other side's seeds
    uses: dict[int, tuple[dict[str, Any], int]] = {}
    for pair in pairs:
        for r in pair:
            uses[id(r)] = (r, uses[id(r)][1] + 1 if id(r) in uses else 1)
    squares = [(c * _log_half(r)) ** 2 for r, c in uses.values()]
    if not any(squares):
        return ratio
    half = math.sqrt(sum(squares)) / len(pairs)
    mean = math.log(ratio.ratio)
    lo = min(ratio.lo, math.exp(mean - half))
    hi = max(ratio.hi, math.exp(mean + half))
    return Ratio(ratio.ratio, lo, hi, ratio.n, sampled=True)


def baseline_ratios(
    records: list[dict[str, Any]], baseline: str, metrics: list[str]
) -> dict[str, dict[str, Ratio | None]]:
    """Every scheduler's metrics as ratios to ``baseline``'s, paired by seed.

    A deterministic scheduler (run once) is paired with every seed of the other side: its
    one value is what it gives under any seed.

    Parameters
    ----------
    records
        The comparison's records (``scheduler``, ``seed`` and the metrics).
    baseline
        Canonical name of the baseline scheduler (one of the records').
    metrics
        Record fields to compare.

    Returns
    -------
    dict
        ``{scheduler: {metric: Ratio or None}}`` for every scheduler but the baseline;
        None where a value is zero (no ratio).
    """
    by: dict[str, dict[int, dict[str, Any]]] = {}
    for r in records:
        by.setdefault(str(r["scheduler"]), {})[int(r["seed"])] = r
    if baseline not in by:
        raise ValueError(f"baseline {baseline!r} is not among the records' schedulers")
    base = by[baseline]
    out: dict[str, dict[str, Ratio | None]] = {}
    for name, runs in by.items():
        if name == baseline:
            continue
        if len(runs) == 1 or len(base) == 1:
            seeds = sorted(base if len(runs) == 1 else runs)
        else:
            seeds = sorted(set(runs) & set(base))
        pick = lambda d, s: d[s] if len(d) > 1 else next(iter(d.values()))  # noqa: E731
        pairs = [(pick(runs, s), pick(base, s)) for s in seeds]
        per: dict[str, Ratio | None] = {}
        for k in metrics:
            got = paired_ratio([float(a[k]) for a, _ in pairs], [float(b[k]) for _, b in pairs])
            # only the makespan of a sampled run is an estimate, and its speedup (the
            # one-core baseline over it); its other counters are its detailed iterations'
            if got is not None and k in EXTRAPOLATED:
                got = sampled_ratio(got, pairs)
            per[k] = got
        out[name] = per
    return out
