"""CAB: cache-aware bi-tier task stealing, [CAB11] §III (Algorithms I and II).

Design
------
**Squads and pools** ([CAB11] §III-A, §IV-C).  The job's cores on one socket form a
*squad*; its *head worker* is the squad's lowest-numbered core (``ctx.head_core``).
Every squad has one *inter-socket pool* and every worker one *intra-socket pool*; both
are :class:`~simsched.schedulers.deques.WorkerDeques` (the intra pools one instance per
squad, so that "is there anything to steal in my squad?" is O(1); the inter pools one
instance indexed by socket).  The owner pushes and pops at the top, thieves take the
bottom.

**Tiers** ([CAB11] §III-B, §IV-B).  A frame's level is its depth below main (level 0).  A
spawn by a frame at level ``< BL`` creates an *inter-socket task* (levels ``1..BL``); the
tasks at level ``BL`` are the *leaf inter-socket tasks*; everything spawned below them is
an *intra-socket task*.  ``BL`` is Eq. 4 (:mod:`simsched.schedulers.boundary`) unless the
``bl`` parameter fixes it.

**Spawns** ([CAB11] §III-C, Algorithm II (a)).  Inter-socket tier: parent-first — the
spawned child is pushed into the inter-socket pool of the spawning worker's squad and the
worker continues the parent.  Intra-socket tier: child-first — the worker runs the child
and pushes the parent's continuation into its own intra-socket pool.  A continuation
released by a sync (the last child finished) is run by the worker that released it, as in
WS.

**Free workers** (Algorithm I).  Step 1: pop the own intra-socket pool.  Step 2: if the
squad is *busy* (a leaf inter-socket task is in flight in it), Step 3: steal an
intra-socket task from a random other worker of the squad.  A worker of a squad that is
not busy does not steal (there is nothing in its squad's intra pools then); only the
head goes on — Step 4: pop its squad's inter-socket pool; Step 5: steal an inter-socket
task from the pool of a random other squad (Step 6b retries Step 5 on a miss).  Only
head workers take tasks out of inter-socket pools; a spawning worker puts its
inter-socket children into its own squad's pool (Algorithm II (a)).

**Busy state** (§III-D).  The paper sets a squad's busy state when it obtains an
inter-socket task and clears it when an inter-socket task returns.  Taken literally for
every inter-socket task, a level-1 task suspended at its sync would keep its squad busy
for the whole run and forbid it every leaf; the paper's reason for the busy state is that
two inter-socket tasks' data must not share a socket's cache, and only leaf inter-socket
tasks carry data (the tasks above them only divide it, §III-E).  So the busy state of a
squad is set when its head obtains a *leaf* inter-socket task and cleared when that
task's frame finishes (its last strand); a non-leaf inter-socket task only occupies the
head while it runs.  Consequence (checked in tests): a squad never has two leaf
inter-socket tasks in flight, and every strand below a leaf runs on the leaf's socket.

**BL = 0** (Algorithm II step 2, §V-D): every task is intra-socket and CAB is MIT Cilk —
simsched then runs the ``ws`` policy itself (child-first), so ``cab`` with ``BL = 0`` is
bit-identical to ``ws`` with the same seed.  simsched charges no cost for keeping a
frame's level (the paper's 1–5 % CPU-bound overhead, §V-D, comes from that bookkeeping).

**Costs** (``machine.costs``).  Own intra pool push or pop: ``deque_op``; intra steal
attempt (hit or miss): ``steal_attempt``; push into or pop from the own squad's
inter-socket pool (a locked pool shared by the squad): ``queue_op``; an inter-socket steal
attempt on another squad's pool (hit or miss): the price of the distance between the two
sockets, ``ctx.steal_cost`` (``remote_pool_op``, plus ``remote_hop`` per further link), the
price every policy pays for a cross-socket steal.

**Sleeping.**  A worker with nothing it may take sleeps until work it may take appears
(intra pushes wake the squad, inter pushes wake the heads of squads that are not busy, a
finished leaf wakes its squad's head); the attempts it would have made spinning are
counted as in WS (:mod:`simsched.schedulers.deques`), intra ones in ``steal_attempts``,
inter ones in ``inter_steal_attempts``.

**Cores leaving the job** (multi-job controllers).  A departing core's released strands
go where they belong — inter-socket ones into its squad's inter pool, the others into its
own intra pool — and intra victims are all cores of the socket, in the job or not, so a
departed core's pool is still stolen by its squad.  A squad that loses every core in the
middle of a leaf keeps the leaf until one of its socket's cores rejoins the job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from simsched.errors import ConfigError
from simsched.machine.schema import UnknownUnit, parse_size
from simsched.params import MAX_SEED, coerce
from simsched.schedulers.base import (
    EDGE_SPAWN,
    WAIT,
    Decision,
    Param,
    ParamSchema,
    Scheduler,
    mean_cycles,
    retry,
    run,
)
from simsched.schedulers.boundary import (
    CPU_BOUND_MISS_INTENSITY,
    BranchingDegree,
    choose_boundary_level,
    intra_level,
    measure_branching,
    shared_cache_bytes,
)
from simsched.schedulers.deques import WorkerDeques
from simsched.schedulers.ws import ws_fallback


def _parse_bl(value: Any, where: str) -> str | int:
    """``bl``: ``auto`` or a level >= 0 (``where`` names it in messages)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        # as every integer parameter takes it (params.coerce): numpy integers, whole
        # floats (``bl=2.0``, as data_bytes takes them) and parse_int's spellings
        bl = coerce(value, int, where)
    except ConfigError:
        raise ConfigError(f"{where}={value!r} is not an integer level or auto") from None
    if bl < 0:
        raise ConfigError(f"{where}={bl} must be a level >= 0 or auto")
    if bl > MAX_SEED:  # a record holds 64-bit integers (results stores refuse more)
        raise ConfigError(f"{where}={bl} is beyond any level (at most 2^63 - 1)")
    return bl


def _parse_data_bytes(value: Any, where: str) -> int:
    """``data_bytes``: bytes as an integer (``209715200``, ``2^20``) or a size with a unit
    (``200MiB``, ``1.5 GB``), as machine files write cache sizes; 0 means the trace's
    footprint."""
    try:
        # as every integer parameter takes it: numpy integers (a grid computed with
        # numpy), whole floats, and the spellings of parse_int; not true or false
        n = coerce(value, int, where)
    except ConfigError:
        try:
            n = parse_size(value)  # refuses true and false too
        except UnknownUnit as exc:
            raise ConfigError(f"{where}: {exc}") from None
        except ValueError:
            # the words of every integer parameter's refusal (params.coerce), with units
            raise ConfigError(
                f"{where}: expected an integer number of bytes (e.g. 209715200, 2^20) or a "
                f"size such as 200MiB, got {value!r}"
            ) from None
    if n < 0:
        raise ConfigError(f"{where}={n} must be >= 0 (0: the trace's data footprint)")
    if n > MAX_SEED:  # a record holds 64-bit integers (results stores refuse more)
        raise ConfigError(f"{where}={n} must be <= {MAX_SEED} (2^63 - 1)")
    return n


def _branching(frames: Any) -> BranchingDegree | None:
    """``B`` measured from a frame table, or None when no frame below main spawns."""
    try:
        return measure_branching(frames.branching, frames.level, frames.parent)
    except ConfigError:
        return None


def _intra(frames: Any, cores_per_socket: int) -> int:
    """§III-B's third constraint measured on the trace's DAG (:func:`intra_level`)."""
    return intra_level(frames.parent, frames.level, cores_per_socket)


def _depth(frames: Any) -> int:
    """The DAG's depth: the deepest frame's level (main is 0)."""
    level = np.asarray(frames.level)
    return int(level.max()) if level.size else 0


def _measurements(
    params: dict[str, Any], br: BranchingDegree | None, sockets: int
) -> tuple[str, ...]:
    """The engine facts :func:`resolve_boundary` reads for these parameters and this DAG."""
    if br is None or br.B < 2:
        return ()  # no recursion to cut: BL = 0 (auto) and no Eq. 4 to compare (given)
    out: tuple[str, ...] = () if int(params["data_bytes"]) > 0 else ("footprint_bytes",)
    if params["bl"] == "auto" and params["cpu_bound"] == "auto" and sockets > 1:
        out += ("one_core_miss_intensity",)
    return out


def resolve_boundary(ctx: Any, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """CAB's boundary level for a run and the record of how it was chosen.

    Parameters
    ----------
    ctx
        The job's :class:`~simsched.schedulers.base.SchedContext` (machine, trace, frames;
        the footprint and the one-core miss intensity come from ``ctx.facts``).
    params
        Resolved ``cab`` parameters.

    Returns
    -------
    tuple
        ``(BL, fields)``; ``fields`` holds ``bl``, ``bl_source`` (``given`` or ``auto``),
        Eq. 4's inputs and terms (``bl_branching``, ``bl_sockets``, ``bl_shared_cache``,
        ``bl_data_bytes``, ``bl_level_sockets``, ``bl_level_cache``, ...), ``bl_reason``
        and ``bl_eq4`` (what Eq. 4 alone chooses), ``bl_depth`` and ``bl_level_intra`` (the
        third constraint's cap); for a given ``bl`` also ``bl_auto`` (what ``auto`` runs).
    """
    m = ctx.machine
    fields: dict[str, Any] = {}
    bl_param = params["bl"]
    br = _branching(ctx.trace.frames)
    data = int(params["data_bytes"])
    fields["bl_data_source"] = "given" if data > 0 else "footprint"
    if br is not None:
        fields.update({f"bl_{k}": v for k, v in br.as_record().items() if k != "branching"})
    if bl_param == "auto":
        fields["bl_source"] = "auto"
        if br is None or br.B < 2:
            # main spawns only leaves, or the recursion does not divide (B = 1): §III-B's
            # model has no second tier to cut (Eq. 4 takes log_B); plain task stealing.
            why = "no-recursion" if br is None else "no-division"
            fields.update({"bl": 0, "bl_reason": why, "bl_sockets": m.sockets})
            if br is not None:
                fields["bl_branching"] = br.B
            return 0, fields
        sd = data if data > 0 else ctx.facts.footprint_bytes()
        mode = params["cpu_bound"]
        intensity = None
        if mode == "auto" and m.sockets > 1:
            intensity = float(ctx.facts.one_core_miss_intensity()["intensity"])
        elif mode == "yes":
            intensity = 0.0
        choice = choose_boundary_level(
            br.B,
            m.sockets,
            shared_cache_bytes(m),
            max(sd, 1),
            miss_intensity=intensity,
            threshold=float(params["cpu_threshold"]),
            depth=_depth(ctx.trace.frames),
            cores_per_socket=m.cores_per_socket,
            level_intra=_intra(ctx.trace.frames, m.cores_per_socket),
        )
        fields.update(choice.as_record())
        fields["bl_cpu_bound"] = mode
        if mode == "yes":  # declared, not measured
            fields["bl_miss_intensity"] = None
        return choice.bl, fields
    bl = int(bl_param)
    fields.update({"bl": bl, "bl_source": "given", "bl_reason": "given"})
    fields["bl_depth"] = _depth(ctx.trace.frames)  # also without recursion: bl may pass it
    if br is not None and br.B >= 2:
        sd = data if data > 0 else ctx.facts.footprint_bytes()
        auto = choose_boundary_level(
            br.B,
            m.sockets,
            shared_cache_bytes(m),
            max(sd, 1),
            depth=_depth(ctx.trace.frames),
            cores_per_socket=m.cores_per_socket,
            level_intra=_intra(ctx.trace.frames, m.cores_per_socket),
        )
        rec = auto.as_record()  # bl_eq4: Eq. 4 alone; bl_auto: what auto would run
        rec.pop("bl_reason")
        fields.update(rec)
        fields["bl"] = bl
        fields["bl_auto"] = auto.bl
        # The leaf fields describe the level this run cuts at, not auto's: a DAG with no
        # frame at that level has no leaf inter-socket task.
        leaves = br.B ** (bl - 1) if 0 < bl <= _depth(ctx.trace.frames) else 0
        sd_model = fields["bl_data_bytes"]
        fields["bl_leaf_tasks"] = leaves
        fields["bl_leaf_bytes"] = sd_model / leaves if leaves else float(sd_model)
    return bl, fields


class CacheAwareBiTier(Scheduler):
    """Cache-aware bi-tier task stealing with squads per socket (``cab``)."""

    name: ClassVar[str] = "cab"
    aliases: ClassVar[tuple[str, ...]] = ("cache-aware-bi-tier",)
    randomized: ClassVar[bool] = True
    params_schema: ClassVar[ParamSchema] = ParamSchema(
        bl=Param(
            "auto",
            "boundary level: auto (Eq. 4, with Algorithm II's and §V-D's zeros) or a "
            "level >= 0 (0: every task intra-socket, i.e. WS)",
            parse=_parse_bl,
            kind_name="auto | int (>= 0)",
        ),
        data_bytes=Param(
            0,
            "Sd of Eq. 4 in bytes (or a size such as 200MiB); 0: the trace's data footprint",
            parse=_parse_data_bytes,
            kind_name="int (>= 0, < 2^63) | size",
        ),
        cpu_bound=Param(
            "auto",
            "CPU-bound rule (§IV-D, §V-D): auto measures the one-core miss intensity; "
            "yes sets BL = 0; no skips the rule",
            choices=("auto", "yes", "no"),
            synonyms={"yes": ("true", "1", "on"), "no": ("false", "0", "off")},
        ),
        cpu_threshold=Param(
            CPU_BOUND_MISS_INTENSITY,
            "private-cache misses per instruction below which a program is CPU-bound",
            gt=0,
        ),
    )

    @classmethod
    def idle_params(cls, params: dict[str, Any]) -> dict[str, str]:
        """What a given ``bl`` or a declared ``cpu_bound`` leaves unused."""
        idle = {}
        if params["bl"] != "auto":
            for name in ("data_bytes", "cpu_threshold", "cpu_bound"):
                if cls._changed(params, name):
                    idle[name] = (
                        f"bl={params['bl']} is given, so Eq. 4 and §V-D's rule are not applied"
                    )
        elif params["cpu_bound"] != "auto" and cls._changed(params, "cpu_threshold"):
            idle["cpu_threshold"] = (
                f"cpu_bound={params['cpu_bound']} decides without measuring the miss intensity"
            )
        return idle

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        """``cpu_bound=yes`` (BL = 0) with a given ``bl`` above 0 asks for two levels."""
        bl = params["bl"]
        if params["cpu_bound"] == "yes" and bl != "auto" and bl > 0:
            # a given bl skips the CPU-bound rule, so one of the two would be dropped
            raise ConfigError(
                f"scheduler {cls.name!r}: cpu_bound=yes sets BL = 0, which contradicts "
                f"bl={bl} (give one of them)"
            )

    @classmethod
    def wanted_facts(cls, params: dict[str, Any], trace: Any, machine: Any) -> tuple[str, ...]:
        """The footprint when ``data_bytes`` is 0 and Eq. 4 applies; the one-core miss
        intensity when ``bl`` and ``cpu_bound`` are ``auto`` on several sockets."""
        return _measurements(params, _branching(trace.frames), machine.sockets)

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.bl, self._fields = resolve_boundary(ctx, self.params)
        if ctx.sockets == 1 and self.bl:  # Algorithm II step 2, also for a given bl
            self.bl = 0
            self._fields.update({"bl": 0, "bl_reason": "single-socket"})
        if self.bl == 0:
            # Algorithm II: with BL = 0 every task is intra-socket and CAB is MIT Cilk.
            ws_fallback(self, forward=True)
            return
        P, M = ctx.n_cores_total, ctx.sockets
        self.counters = {
            "steal_attempts": 0,
            "steals": 0,
            "deque_pushes": 0,
            "inter_pushes": 0,
            "inter_pops": 0,
            "leaf_tasks": 0,
        }
        c = ctx.costs
        self._dq, self._sa, self._qo, self._ro = (
            c.deque_op,
            c.steal_attempt,
            c.queue_op,
            c.remote_pool_op,
        )
        #: Intra-socket pools: one WorkerDeques per squad (indexed by core).
        self.intra = [WorkerDeques(P, self._sa, self.counters) for _ in range(M)]
        #: Inter-socket pools, indexed by socket (squad).
        self.inter = WorkerDeques(M, self._ro, self.counters, prefix="inter_")
        #: Busy state per squad and the squad of every leaf in flight (by frame).
        self.busy = [False] * M
        self.leaf_squad: dict[int, int] = {}
        sock = ctx.socket_of.tolist()
        self._sock = sock
        self._mates = [[v for v in range(P) if sock[v] == sock[u] and v != u] for u in range(P)]
        self._other_squads = [[t for t in range(M) if t != s] for s in range(M)]
        self._sc = ctx.steal_cost
        # a head spinning over the other squads' pools attempts at their mean price
        self._inter_period = [
            mean_cycles([self._sc[s][t] for t in self._other_squads[s]], self._ro) for s in range(M)
        ]
        frame = ctx.strand_frame
        self._slevel = ctx.frame_level[frame].tolist()
        lvl = ctx.frame_level
        leaf = lvl == self.bl
        self._leaf_end = set(ctx.frame_last_strand[leaf].tolist())
        self._frame = frame
        self._heads: list[int | None] = [None] * M
        self._squad: list[tuple[int, ...]] = [()] * M

    # -- topology ---------------------------------------------------------------------
    def _topology(self) -> None:
        ctx = self.ctx
        for s in range(ctx.sockets):
            self._squad[s] = ctx.cores_of_socket(s)
            self._heads[s] = ctx.head_core(s)

    def _wake_heads(self) -> None:
        heads = [h for s, h in enumerate(self._heads) if h is not None and not self.busy[s]]
        if heads:
            self.ctx.wake(None, heads)

    def record_fields(self) -> dict[str, Any]:
        """``bl``, Eq. 4's inputs and terms, and how ``bl`` was chosen."""
        return dict(self._fields)

    # -- callbacks --------------------------------------------------------------------
    def on_start(self, strand: int, now: int) -> None:
        """Main goes to the inter-socket pool of core 0's squad (Algorithm II step 3)."""
        self._topology()
        s = self._sock[self.ctx.cores[0]]
        self.inter.push(s, strand)
        self.ctx.wake(None, [self._heads[s]])

    def _place(self, core: int, strands: Sequence[int], kinds: Sequence[int], run_one: bool):
        """Put released strands in their pools; returns (strand to run or -1, cost)."""
        s = self._sock[core]
        bl = self.bl
        lvl = self._slevel
        rest: list[int] = []
        pick = -1
        n_inter = 0
        for x, k in zip(strands, kinds, strict=True):
            if lvl[x] <= bl and (k == EDGE_SPAWN or lvl[x] < bl):
                if k == EDGE_SPAWN or not run_one:
                    # Inter-socket child (parent-first), or an inter-tier strand left
                    # behind by a departing core: the squad's inter-socket pool.
                    self.inter.push(s, x)
                    n_inter += 1
                    continue
            if run_one and pick < 0 and k == EDGE_SPAWN:
                pick = x  # intra-socket child: child-first
            else:
                rest.append(x)
        if run_one and pick < 0 and rest:
            pick = rest.pop(0)
        cost = 0
        if rest:
            self.intra[s].push_all(core, rest)
            self.counters["deque_pushes"] += len(rest)
            cost += self._dq * len(rest)
            self.ctx.wake(None, self._squad[s])
        if n_inter:
            self.counters["inter_pushes"] += n_inter
            cost += self._qo * n_inter
            self._wake_heads()
        return pick, cost

    def _leaf_done(self, strand: int, now: int) -> None:
        f = int(self._frame[strand])
        s = self.leaf_squad.pop(f)
        self.busy[s] = False
        # The squad's sleeping thieves stop spinning on intra pools now (Step 2 sends
        # them back to Step 1): count their attempts up to here.
        dq = self.intra[s]
        for c in self._squad[s]:
            dq.wake(c, now)
        h = self._heads[s]
        if h is not None:
            self.ctx.wake(None, [h])

    def on_finish(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> Decision:
        """Algorithm II (a)–(c): place the released strands by tier, run one, or look for work."""
        if strand in self._leaf_end:
            self._leaf_done(strand, now)
        nr = len(ready)
        if nr == 0:
            return self.on_idle(core, now)
        if nr == 1 and kinds[0] != EDGE_SPAWN:
            return run(ready[0], 0)
        pick, cost = self._place(core, ready, kinds, True)
        if pick < 0:
            return self.on_idle(core, now) if cost == 0 else retry(cost)
        return run(pick, cost)

    def on_depart(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> None:
        """Released strands stay with the job: inter-tier ones in the squad's inter pool,
        the others in the departing core's intra pool (its squad still steals them)."""
        if strand in self._leaf_end:
            self._leaf_done(strand, now)
        if ready:
            self._place(core, ready, kinds, False)

    def on_cores_changed(self, added: Sequence[int], removed: Sequence[int], now: int) -> None:
        """Squads and heads follow the job's cores; a removed sleeper stops spinning."""
        old = list(self._heads)
        self._topology()
        for c in removed:
            self.intra[self._sock[c]].wake(c, now)
            s = self._sock[c]
            if old[s] == c:
                self.inter.wake(s, now)

    def _obtained(self, x: int, s: int) -> None:
        self.counters["inter_pops"] += 1
        if self._slevel[x] == self.bl:
            self.busy[s] = True
            self.leaf_squad[int(self._frame[x])] = s
            self.counters["leaf_tasks"] += 1

    def on_idle(self, core: int, now: int) -> Decision:
        """Algorithm I for a free worker ``core``."""
        s = self._sock[core]
        dq = self.intra[s]
        dq.wake(core, now)
        x = dq.pop(core)  # Step 1
        if x >= 0:
            return run(x, self._dq)
        if self.busy[s]:  # Step 2 -> Step 3
            mates = self._mates[core]
            if dq.n_items == 0 or not mates:
                dq.sleep(core, now)
                return WAIT
            x = dq.attempt(mates[int(self.rng.integers(len(mates)))])  # Step 6a
            if x >= 0:
                return run(x, self._sa)
            return retry(self._sa)
        if core != self._heads[s]:  # not busy, not the head: back to Step 1
            return WAIT
        inter = self.inter
        inter.wake(s, now)
        x = inter.pop(s)  # Step 4
        if x >= 0:
            self._obtained(x, s)
            return run(x, self._qo)
        if inter.n_items == 0:  # Step 5 with nothing anywhere: sleep until a push
            inter.sleep(s, now, self._inter_period[s])
            return WAIT
        victims = self._other_squads[s]
        t = victims[int(self.rng.integers(len(victims)))]
        x = inter.attempt(t)  # Step 6b
        cost = self._sc[s][t]
        if x >= 0:
            self._obtained(x, s)
            return run(x, cost)
        return retry(cost)
