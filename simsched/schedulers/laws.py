"""LAWS and LAWS-NC: locality-aware work stealing, [LAWS15] §3–4 and §6.3.

Design
------
One policy class, :class:`LocalityAware`, whose three switches (``PACK``, ``TUNE``,
``NUMA``) make ``laws`` (all on), ``laws-nc`` (no packing, §6.3) and — in
:mod:`simsched.schedulers.cats` — ``cats`` (packing once, no NUMA-aware allocation after
the first iteration, §6.1).  The pools are plain Python deques: per socket a *CF task
pool* (CF root tasks and the tasks above them, §3.4), per core a *socket-local* deque
(:class:`~simsched.schedulers.deques.SocketDeques`, shared with WS's deque code).

**Allocator** ([LAWS15] §3.2).  Every frame's share of the data is Eq. 1
(:meth:`SchedContext.data_ranges`); a frame whose range lies inside socket ``i``'s share
``[i/M, (i+1)/M)`` is allocated to socket ``i`` (and so are its children, whose ranges
lie inside it).  A frame whose range straddles shares — the tasks above the split, and
with irregular branching a few leaves — goes to the socket holding the largest part of
its range (lowest socket on ties: the root ``[0, 1)`` and main go to socket 0).
:func:`allocate` computes both for every frame at once.

**First iteration** (§3.4, §4).  Every task is spawned parent-first and pushed into the
CF pool of its socket; any core of a socket takes from that pool (the head core from the
top, the others from the bottom) and nothing crosses sockets, so first touch spreads the
data evenly over the memory nodes.  A post-sync strand released on another socket (its
last child ran there) goes back to its frame's pool.  Each strand's private-cache misses
and instructions are recorded (``on_profile``).  A trace without iteration marks is one
long first iteration.

**Packing** (§3.3).  When the first iteration ends: the §6.6 CPU-bound test
(:func:`~simsched.schedulers.packing.laws_cpu_bound`) — a CPU-bound program is scheduled
by WS from then on (``laws``, ``laws-nc``); otherwise SOSC by Eq. 2 on the first
iteration's tree, CF roots whose SOSC fits the socket's shared cache (the last level
shared by a socket), never above the allocator's split (a straddling frame cannot be a CF
root, [LAWS15] §3.3 packs "the tasks allocated to each socket"), then Algorithm 1
(:class:`~simsched.schedulers.packing.PackingTuner`) fed each later iteration's time.
Later iterations find "the same task" by the frames' position keys.

**Triple-level stealing** (§3.4, §4), from the second iteration on.  A CF root or a task
above the CF roots is spawned parent-first into the CF pool of its socket; a socket-local
task is spawned child-first, its parent's continuation pushed on the core's own deque.
A free core (1) pops its own deque, (2) steals from a random core of its socket, (3) if
it is the head core and no CF subtree is running on its socket, takes the newest entry of
its socket's CF pool, (4) if that pool is empty and every CF root allocated to its
socket in the current iteration has started ("after all the tasks in the CF task pool of
ρ are completed"), steals the oldest entry of the CF pool of a randomly chosen other
socket.  Only head cores run the free tier (§5.2.1), and a
socket runs one CF subtree at a time: a head core does not start a CF root while another
is unfinished on its socket (free-tier entries it may still take).

**DAGs that change between iterations** (GE, §6.6).  When an iteration has frames that
the profiled one does not (by position key) or a different number of frames, the packing
learnt from the first iteration does not describe it: packing and tuning stop and the
allocator alone places tasks (as ``laws-nc``) for the rest of the run.  The runtime can
see this only once such an iteration has ended, so the iteration after the profiled one
still runs under the initial packing, matched by position key.

**Costs** (``machine.costs``): a push or pop on a core's own deque ``deque_op``; a steal
attempt inside the socket ``steal_attempt``; an operation on the own socket's CF pool
``queue_op``; on another socket's pool (a push there, a cross-socket steal attempt) the
price of the distance between the sockets, ``ctx.steal_cost`` (``remote_pool_op``, plus
``remote_hop`` per further link), the price every policy pays for a cross-socket steal.  Cores with nothing to take sleep until work they may take appears
(the attempts a spinning thief would make are added as for WS).

**Record fields**: ``iteration_cycles`` (cycles from the spawn of an iteration's first
task to the end of its last strand), ``packing`` (per iteration: how its CF roots were
made, their number and mean level) and ``packing_mode``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from simsched.errors import ConfigError
from simsched.schedulers.base import (
    EDGE_JOIN,
    EDGE_SPAWN,
    WAIT,
    Decision,
    Param,
    ParamSchema,
    Scheduler,
    retry,
    run,
)
from simsched.schedulers.boundary import CPU_BOUND_MISS_INTENSITY
from simsched.schedulers.deques import SocketDeques
from simsched.schedulers.packing import (
    CF_ROOT,
    FREE,
    SOCKET_LOCAL,
    PackingTuner,
    cf_roots,
    iteration_tree,
    laws_cpu_bound,
    sosc,
    spread_roots,
    task_misses,
)
from simsched.schedulers.ws import ws_fallback

# Frame class while tasks are not packed: every task is a CF-pool task.
POOLED = -1


def allocate(ranges: Any, sockets: int) -> tuple[np.ndarray, np.ndarray]:
    """Socket of every frame by its Eq. 1 data range, [LAWS15] §3.2.

    Parameters
    ----------
    ranges
        ``(n_frames, 2)`` array of ``[lo, hi)`` fractions of the dataset.
    sockets
        Number of sockets ``M``; socket ``i`` holds ``[i/M, (i+1)/M)``.

    Returns
    -------
    home : numpy.ndarray
        int64 socket of each frame: the one whose share holds the largest part of its
        range (lowest on ties).
    straddles : numpy.ndarray
        bool, the range overlaps more than one share (the frame is above the split).
    """
    r = np.asarray(ranges, dtype=np.float64)
    m = int(sockets)
    if r.ndim != 2 or r.shape[1] != 2 or m < 1:
        raise ConfigError(f"data ranges of shape {r.shape} and {m} sockets are not usable")
    a, b = r[:, :1] * m, r[:, 1:] * m
    i = np.arange(m, dtype=np.float64)[None, :]
    # rounded so that equal overlaps (a range split evenly over sockets) tie exactly
    ov = np.round(np.clip(np.minimum(b, i + 1) - np.maximum(a, i), 0.0, None), 9)
    home = np.argmax(ov, axis=1).astype(np.int64)
    return home, (ov > 0).sum(axis=1) > 1


def allocator_fit(
    ranges: np.ndarray,
    home: np.ndarray,
    frames: np.ndarray,
    parent: np.ndarray,
    frame_refs: np.ndarray,
    sockets: int,
) -> tuple[list[float], float]:
    """How well the allocator's Eq. 1 shares fit where the references of ``frames`` are.

    The allocator ([LAWS15] §3.2) assumes that "a task divides its dataset into several
    parts evenly according to its branching degree", so that Eq. 1 gives each socket an
    even share of the data, hence of the work of a memory-bound program.  Two measures of
    that assumption on a trace:

    * the *shares*: the fraction of the references that the allocator gives each socket
      (``1/M`` each when the assumption holds and the leaves are many enough);
    * the *mismatch*: how much of the data Eq. 1 places wrongly.  Each frame owns the part
      of its Eq. 1 range that no child's range covers (a leaf: all of it); the mismatch is
      the total variation distance between those widths and the frames' shares of their
      root's references (``0.5 * sum |width - share|``), averaged over the roots by their
      references.  0 for an even division; a ``cilk_for`` split as OpenCilk splits it
      (children of 1/2, 1/4, ... of the range, the last part run by the frame itself)
      gives about 0.6.

    Parameters
    ----------
    ranges
        ``(n_frames, 2)`` Eq. 1 ranges (:meth:`SchedContext.data_ranges`).
    home
        Socket of every frame (:func:`allocate`).
    frames
        The frames measured, parents before children (LAWS: the first iteration's); a
        frame whose parent is not among them is a root and covers ``[0, 1)``.
    parent
        Parent of every frame (-1 for none).
    frame_refs
        References made by the strands of every frame.
    sockets
        Number of sockets ``M``.

    Returns
    -------
    shares : list of float
        ``M`` shares summing to 1, rounded to 4 digits; empty when ``frames`` make no
        reference.
    mismatch : float
        In ``[0, 1]``, rounded to 4 digits (0 without references).
    """
    n = len(home)
    refs = np.asarray(frame_refs, dtype=np.float64)
    f = np.asarray(frames, dtype=np.int64)
    total = float(refs[f].sum())
    if total <= 0:
        return [], 0.0
    per = np.bincount(np.asarray(home)[f], weights=refs[f], minlength=sockets)
    shares = [round(float(x) / total, 4) for x in per]
    inside = np.zeros(n, dtype=bool)
    inside[f] = True
    par = np.asarray(parent, dtype=np.int64)[f]
    up = np.where((par >= 0) & inside[np.maximum(par, 0)], par, f)
    # the root of each frame, by pointer jumping (log of the depth numpy steps)
    root = np.arange(n, dtype=np.int64)
    root[f] = up
    while True:
        nxt = root[root[f]]
        if np.array_equal(nxt, root[f]):
            break
        root[f] = nxt
    width = np.asarray(ranges, dtype=np.float64)
    width = width[:, 1] - width[:, 0]
    child = f[up != f]
    own = width.copy()
    own -= np.bincount(par[up != f], weights=width[child], minlength=n)
    root_refs = np.bincount(root[f], weights=refs[f], minlength=n)[root[f]]
    share = np.divide(refs[f], root_refs, out=np.zeros(f.size), where=root_refs > 0)
    mismatch = float((0.5 * np.abs(own[f] - share) * root_refs).sum() / total)
    return shares, round(mismatch, 4)


#: The parameters of LAWS and LAWS-NC; CATS and LAWS add ``cf_start`` (LAWS-NC has no CF
#: subtrees).
ALLOCATOR_PARAMS = ParamSchema(
    cpu_check=Param(
        True,
        "after the first iteration, schedule a CPU-bound program by work stealing (§6.5)",
    ),
    cpu_threshold=Param(
        CPU_BOUND_MISS_INTENSITY,
        "misses per instruction below which a task is CPU-bound (§6.6's measure)",
        gt=0,
    ),
)

#: When a socket may start its next CF subtree ([LAWS15] §3.4 read two ways).
CF_START = Param(
    "finished",
    "when a socket may start its next CF root (§3.4): its head core once the running "
    "CF subtree has finished (finished: one subtree at a time), or once no core of "
    "the socket has a socket-local task queued (pools-empty: the next subtree "
    "overlaps the last one's tail); any-core: as pools-empty, and every core of the "
    "socket takes CF roots as its head does (not the paper's rule: a sensitivity)",
    choices=("finished", "pools-empty", "any-core"),
)


class LocalityAware(Scheduler):
    """LAWS ([LAWS15] §3–4): allocator, adaptive DAG packer, triple-level stealing."""

    name: ClassVar[str] = "laws"
    numa_aware: ClassVar[bool] = True
    without_iterations: ClassVar[str | None] = (
        "the whole run is its first iteration ([LAWS15] §3.4): tasks spawned parent-first "
        "into their socket's pool, none crossing sockets, never packed; expect it slower "
        "than WS"
    )
    randomized: ClassVar[bool] = True
    wants_profile: bool = True
    params_schema: ClassVar[ParamSchema] = ALLOCATOR_PARAMS.extend(cf_start=CF_START)

    @classmethod
    def idle_params(cls, params: dict[str, Any]) -> dict[str, str]:
        """``cpu_threshold`` without the CPU-bound test; ``cf_start`` without packing."""
        idle = {}
        if not params.get("cpu_check", True) and cls._changed(params, "cpu_threshold"):
            idle["cpu_threshold"] = "cpu_check=false skips the CPU-bound test it sets"
        if params.get("pack", True) is False and cls._changed(params, "cf_start"):
            idle["cf_start"] = "pack=false makes no CF subtree to start"
        return idle

    #: Pack the DAG into CF subtrees after the first iteration.
    PACK: ClassVar[bool] = True
    #: Tune the packing across iterations (Algorithm 1); else it is fixed once.
    TUNE: ClassVar[bool] = True
    #: After the first iteration, push a task to its data's socket (else: the spawner's).
    NUMA: ClassVar[bool] = True
    #: Where the packing does not apply (nothing fits, the DAG changed), schedule the rest
    #: by work stealing (else: the allocator alone, as LAWS-NC).
    FALLBACK_WS: ClassVar[bool] = False

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        self.counters = {
            "steal_attempts": 0,
            "steals": 0,
            "deque_pushes": 0,
            "pool_pushes": 0,
            "remote_pool_pushes": 0,
            "pool_takes": 0,
            "pool_steal_attempts": 0,
            "pool_steals": 0,
            "cf_subtrees": 0,
            "cf_overlaps": 0,
        }
        costs = ctx.costs
        self._dq, self._sa = costs.deque_op, costs.steal_attempt
        self._qo, self._sc = costs.queue_op, ctx.steal_cost
        self.dq = SocketDeques(ctx.n_cores_total, self._sa, self.counters, ctx.socket_of)
        self.S = ctx.sockets
        self.pools: list[deque[int]] = [deque() for _ in range(self.S)]
        self.sock = ctx.socket_of.tolist()
        home, self.straddles = allocate(ctx.data_ranges(), self.S)
        self.home = home.tolist()
        self.frame_of = ctx.strand_frame.tolist()
        # per-strand copies of per-frame facts, so that the per-strand path indexes once
        self.shome = home[ctx.strand_frame].tolist()
        self.first_strand = ctx.frame_first_strand.tolist()
        self.last_strand = ctx.frame_last_strand.tolist()
        # Iterations renumbered densely (0, 1, ... in trace order): per-iteration lists are
        # as long as the number of iterations, whatever numbers the marks carry (a mark of
        # 2**40 would otherwise ask for terabytes).  ``it_label`` maps back for the record.
        it_trace = np.asarray(ctx.frame_iteration, dtype=np.int64)
        marked_f = it_trace >= 0
        self.it_label, dense = np.unique(it_trace[marked_f], return_inverse=True)
        it_f = np.full(it_trace.shape[0], -1, dtype=np.int64)
        it_f[marked_f] = dense
        self.it_dense = it_f
        it_s = it_f[ctx.strand_frame]
        self.it_of = it_s.tolist()
        # iteration of a frame's first strand (the only strands released by a spawn edge),
        # -1 for other strands and for frames without a parent (never spawned)
        first = np.zeros(ctx.n_strands, dtype=bool)
        spawned = np.flatnonzero(np.asarray(ctx.frame_parent) >= 0)
        first[np.asarray(ctx.frame_first_strand)[spawned]] = True
        self.spawn_it = np.where(first, it_s, -1).tolist()
        n_it = int(self.it_label.size)
        #: the first iteration: dense number (0, or -1 without marks) and trace number
        self.first_d = 0 if n_it else -1
        self.first_it = int(self.it_label[0]) if n_it else -1
        self.fit = allocator_fit(
            ctx.data_ranges(),
            home,
            np.flatnonzero(it_f == self.first_d),
            ctx.frame_parent,
            np.bincount(
                ctx.strand_frame,
                weights=np.asarray(ctx.trace.strands.n_refs, dtype=np.float64),
                minlength=home.size,
            ),
            self.S,
        )
        self.it_strands = np.bincount(it_s[it_s >= 0], minlength=n_it)
        self.it_left = self.it_strands.tolist()
        self.it_start = [-1] * n_it
        self.it_cycles = [-1] * n_it
        self.smiss = np.zeros(ctx.n_strands, dtype=np.int64)
        self.sinstr = np.zeros(ctx.n_strands, dtype=np.int64)
        # phase 0: the first iteration (profiling, no task crosses sockets)
        self.phase = 0
        self.pool_mode = True  # every core of a socket takes from its CF pool
        self.packed = False
        self.fclass: list[int] = []
        #: class of every strand's frame (POOLED while tasks are not packed)
        self.scls: list[int] = [POOLED] * ctx.n_strands
        #: last strand of each CF subtree running, and the socket that started it
        self.active_last: dict[int, int] = {}
        #: CF subtrees running per socket
        self.active = [0] * self.S
        start = self.params.get("cf_start", "finished")
        self.overlap = start != "finished"
        self.any_core = start == "any-core"
        #: CF roots allocated to each socket not yet started, per iteration (packed only)
        self.roots_left = [[0] * self.S for _ in range(n_it)]
        self.cur_it = -1  # the newest iteration started
        self.ws: Scheduler | None = None
        self.tuner: PackingTuner | None = None
        self.move = "profile"
        self.mode = "first iteration"
        self.packing_log: list[dict[str, Any]] = []
        #: CF roots (trace frames of the profiled iteration) each packed iteration ran under
        self.roots_by_iteration: dict[int, np.ndarray] = {}
        self._set_topology()

    # -- topology -------------------------------------------------------------------
    def _set_topology(self) -> None:
        ctx = self.ctx
        P = ctx.n_cores_total
        self.is_head = [False] * P
        self.peers: list[list[int]] = [[] for _ in range(P)]
        self.heads: list[int] = []
        self.orphans = [p for p in range(self.S) if not ctx.cores_of_socket(p)]
        for p in range(self.S):
            cs = ctx.cores_of_socket(p)
            if cs:
                self.is_head[cs[0]] = True
                self.heads.append(cs[0])
            for c in cs:
                self.peers[c] = [v for v in cs if v != c]

    # -- pools ------------------------------------------------------------------------
    def _wake_pool(self, p: int) -> None:
        ctx = self.ctx
        if self.pool_mode:
            ctx.wake(cores=ctx.cores_of_socket(p))
        else:
            h = ctx.head_core(p)
            if h is not None:
                ctx.wake(cores=(h,))
        if self.phase or self.orphans:
            ctx.wake(cores=self.heads)

    def _push_pool(self, core: int, p: int, s: int) -> int:
        """Push ``s`` into socket ``p``'s CF pool; returns the cost for ``core``."""
        self.pools[p].append(s)
        self._wake_pool(p)
        if p == self.sock[core]:
            self.counters["pool_pushes"] += 1
            return self._qo
        self.counters["remote_pool_pushes"] += 1
        return self._sc[self.sock[core]][p]

    def _is_root_start(self, s: int) -> bool:
        f = self.frame_of[s]
        return self.fclass[f] == CF_ROOT and self.first_strand[f] == s

    def _take(self, p: int, core: int, top: bool) -> int:
        """Take an entry of socket ``p``'s pool for ``core`` (newest if ``top``), or -1.

        Once tasks are packed, a CF root is taken only if no CF subtree runs on the
        core's socket; then the nearest free-tier entry is taken instead.
        """
        pool = self.pools[p]
        if not pool:
            return -1
        if not self.packed:
            return pool.pop() if top else pool.popleft()
        mine = self.sock[core]
        order = range(len(pool) - 1, -1, -1) if top else range(len(pool))
        blocked = self._cf_busy(mine)
        for j in order:
            s = pool[j]
            if self._is_root_start(s):
                if blocked:
                    continue
                if self.active[mine]:
                    self.counters["cf_overlaps"] += 1
                self.active_last[self.last_strand[self.frame_of[s]]] = mine
                self.active[mine] += 1
                self.counters["cf_subtrees"] += 1
                it = self.it_of[s]
                if it >= 0:
                    self.roots_left[it][self.shome[s]] -= 1
            del pool[j]
            return s
        return -1

    def _cf_busy(self, p: int) -> bool:
        """Whether socket ``p``'s head core must wait before starting a CF root: a CF
        subtree runs there and (``cf_start=finished``) it has not finished, or
        (``pools-empty``) a core of the socket still has socket-local tasks queued."""
        if not self.active[p]:
            return False
        return not self.overlap or self.dq.socket_items[p] > 0

    def _roots_pending(self, p: int) -> bool:
        """Whether socket ``p`` has CF roots of the current iteration still to start.

        [LAWS15] §3.4: the head core steals from other sockets' CF pools "after all the
        tasks in the CF task pool of ρ are completed".  At the start of an iteration the
        pool is empty only because the tasks above the CF roots have not pushed them yet;
        a head core stealing then takes another socket's CF root before that socket can
        (every socket idle at once: a permutation of the subtrees, all data remote).
        """
        it = self.cur_it
        return self.NUMA and self.packed and it >= 0 and self.roots_left[it][p] > 0

    # -- placement of released strands ----------------------------------------------------
    def _may_run_free(self, core: int, home: int) -> bool:
        """Whether ``core`` may run a strand of a CF-pool frame allocated to socket
        ``home`` itself."""
        if self.phase == 0:
            return self.sock[core] == home
        return self.pool_mode or self.is_head[core]

    def _place(self, core: int, ready: Sequence[int], kinds: Sequence[int]) -> tuple[int, int]:
        """Put released strands where they belong; returns (strand to run or -1, cost)."""
        cand: list[int] = []
        cost = 0
        scls = self.scls
        for s, k in zip(ready, kinds, strict=True):
            cls = scls[s]
            spawn = k == EDGE_SPAWN
            if cls == SOCKET_LOCAL or (cls == CF_ROOT and not spawn):
                # inside a CF subtree: child-first, the first released child runs
                if spawn:
                    cand.insert(0, s)
                else:
                    cand.append(s)
            elif spawn:
                p = self.shome[s] if self.phase == 0 or self.NUMA else self.sock[core]
                cost += self._push_pool(core, p, s)
            elif self._may_run_free(core, self.shome[s]):
                cand.append(s)
            else:
                p = self.shome[s] if self.phase == 0 else self.sock[core]
                cost += self._push_pool(core, p, s)
        if not cand:
            return -1, cost
        if len(cand) > 1:
            k = self.dq.push_all(core, cand[1:])
            self.counters["deque_pushes"] += k
            cost += self._dq * k
            self.ctx.wake(cores=self.peers[core])
        return cand[0], cost

    # -- callbacks --------------------------------------------------------------------
    def on_start(self, strand: int, now: int) -> None:
        """Main's first strand goes to the CF pool of its socket (socket 0)."""
        self._set_topology()  # the job's cores are known from now on
        p = self.shome[strand]
        self.pools[p].append(strand)
        self._wake_pool(p)

    def on_profile(
        self, strand: int, core: int, start: int, end: int, instructions: int, private_misses: int
    ) -> None:
        """First iteration: record each strand's private-cache misses and instructions."""
        self.smiss[strand] = private_misses
        self.sinstr[strand] = instructions

    def on_finish(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> Decision:
        """Account iterations and CF subtrees, then place the released strands."""
        it = self.it_of[strand]
        if it >= 0:
            left = self.it_left[it] - 1
            self.it_left[it] = left
            if left == 0:
                self._iteration_done(it, now)
        spawn_it = self.spawn_it
        for s in ready:
            i = spawn_it[s]
            if i >= 0 and self.it_start[i] < 0:
                self.it_start[i] = now
                self.cur_it = max(self.cur_it, i)
        if strand in self.active_last:
            # The subtree's last strand may end on another socket (a child of it that was
            # not matched to the template went through a CF pool and was stolen there):
            # free the socket that started the subtree, not the finishing core's.
            p = self.active_last.pop(strand)
            self.active[p] -= 1
            h = self.ctx.head_core(p)
            if h is not None and h != core:
                self.ctx.wake(cores=(h,))
        if self.ws is not None:
            return self.ws.on_finish(core, strand, now, ready, kinds)
        if not ready:
            return self.on_idle(core, now)
        if len(ready) == 1:
            # the common single release inside a CF subtree: the core runs it, no cost
            s = ready[0]
            cls = self.scls[s]
            if cls == SOCKET_LOCAL or (cls == CF_ROOT and kinds[0] != EDGE_SPAWN):
                return run(s, 0)
        s, cost = self._place(core, ready, kinds)
        if s >= 0:
            return run(s, cost)
        if cost:
            return retry(cost)
        return self.on_idle(core, now)

    def on_idle(self, core: int, now: int) -> Decision:
        """Own deque, a socket peer's deque, the socket's CF pool, another socket's."""
        if self.ws is not None:
            return self.ws.on_idle(core, now)
        dq = self.dq
        dq.wake(core, now)
        s = dq.pop(core)
        if s >= 0:
            return run(s, self._dq)
        p = self.sock[core]
        if dq.socket_items[p]:
            peers = self.peers[core]
            victim = peers[int(self.rng.integers(len(peers)))]
            s = dq.attempt(victim)
            if s >= 0:
                return run(s, self._sa)
            return retry(self._sa)
        # cf_start=any-core: once tasks are packed every core acts as its socket's head
        head = self.is_head[core] or (self.any_core and self.packed)
        if self.pool_mode or head:
            s = self._take(p, core, head)
            if s >= 0:
                self.counters["pool_takes"] += 1
                return run(s, self._qo)
        if head and not self._cf_busy(p):
            # a socket without cores has no head of its own: its pool is always stolen from
            roam = self.phase and not self._roots_pending(p)
            victims = [q for q in range(self.S) if q != p] if roam else self.orphans
            if any(self.pools[q] for q in victims):
                self.counters["pool_steal_attempts"] += 1
                q = victims[int(self.rng.integers(len(victims)))]
                s = self._take(q, core, False)
                cost = self._sc[p][q]
                if s >= 0:
                    self.counters["pool_steals"] += 1
                    return run(s, cost)
                return retry(cost)
        dq.sleep(core, now)
        return WAIT

    def on_depart(
        self, core: int, strand: int, now: int, ready: Sequence[int], kinds: Sequence[int]
    ) -> None:
        """Strands released by a departing core go to a CF pool (its socket's, or in the
        first iteration their frame's)."""
        if self.ws is not None:
            self.ws.on_depart(core, strand, now, ready, kinds)
            return
        for s in ready:
            self._push_pool(core, self.shome[s] if self.phase == 0 else self.sock[core], s)

    def on_cores_changed(self, added: Sequence[int], removed: Sequence[int], now: int) -> None:
        """Head cores and peers follow the job's cores; a removed core's deque moves to
        its socket's CF pool."""
        self._set_topology()
        if self.ws is not None:
            self.ws.on_cores_changed(added, removed, now)
            return
        for c in removed:
            self.dq.wake(c, now)
            items = self.dq.take_all(c)
            if items:
                self.pools[self.sock[c]].extend(items)
                self._wake_pool(self.sock[c])

    # -- iterations, profile, packing ---------------------------------------------------
    def _iteration_done(self, it: int, now: int) -> None:
        t = now - self.it_start[it]
        self.it_cycles[it] = t
        self._log(it)
        if it == self.first_d and self.phase == 0:
            self._end_first_iteration()
        elif self.packed and it > self.first_d:
            if self._dag_changed(it):
                self._unpack(f"DAG changed at iteration {int(self.it_label[it])}")
            elif self.tuner is not None and not self.tuner.done:
                self._apply(self.tuner.record(t))
                self.move = self.tuner.move

    def _log(self, it: int) -> None:
        """Record the packing iteration ``it`` (dense number) ran under."""
        label = int(self.it_label[it])
        if self.packed:
            move = self.move
            self.roots_by_iteration[label] = self.frames0[self.roots]
            lv = self.ctx.frame_level[self.frames0[self.roots]]
            n, level = int(self.roots.size), float(lv.mean())
        else:
            move = "profile" if self.phase == 0 else ("ws" if self.ws else "none")
            n, level = 0, 0.0
        self.packing_log.append(
            {"iteration": label, "move": move, "cf_roots": n, "cf_root_level": level}
        )

    def _end_first_iteration(self) -> None:
        ctx = self.ctx
        self.phase = 1
        self.wants_profile = False  # the engine stops calling on_profile
        self.frames0, lp = iteration_tree(ctx.frame_parent, self.it_dense, self.first_d)
        n_frames = len(ctx.frame_parent)
        misses = task_misses(ctx.strand_frame, self.smiss, n_frames)[self.frames0]
        if self.params["cpu_check"]:
            instr = task_misses(ctx.strand_frame, self.sinstr, n_frames)[self.frames0]
            if instr.any():
                v = laws_cpu_bound(misses, instr, self.params["cpu_threshold"])
                if v.cpu_bound:
                    # §6.5: a CPU-bound program is scheduled by traditional work stealing
                    self._to_ws(f"CPU-bound ({v.share:.0%} of tasks below the miss intensity): ws")
                    return
        if not self.PACK:
            self.mode = "allocator only"
            return
        veto = self._packing_veto()
        if veto is not None:
            self._no_packing(veto)
            return
        shared = [c for c in ctx.machine.caches if c.scope != "core"]
        private = [c for c in ctx.machine.caches if c.scope == "core"]
        if not shared or not private:
            self._no_packing("no shared or private cache")
            return
        line = private[-1].line
        s = sosc(lp, np.asarray(ctx.frame_level)[self.frames0], misses, line)
        tparent = lp
        if self.NUMA:
            # a frame above the allocator's split is never a CF root, nor grows into one
            st = self.straddles[self.frames0]
            s = np.where(st, np.iinfo(np.int64).max // 2, s)
            tparent = np.where((lp >= 0) & st[np.maximum(lp, 0)], -1, lp)
        roots = cf_roots(s, lp, shared[0].size)
        if roots.size == 0:
            self._no_packing("no subtree fits the shared cache")
            return
        if not self.NUMA:
            # no allocator cut: a procedure may fit one shared cache whole, and one CF
            # root would keep every other socket idle ([CAB11] §III-B, first constraint);
            # the sockets counted are those with the job's cores
            roots = spread_roots(lp, roots, max(1, len(self.heads)), self._join_targets())
        self.tparent = lp
        self._map_template()
        self.tuner = PackingTuner(tparent, roots) if self.TUNE else None
        self.packed = True
        self.pool_mode = False
        self.mode = "packed"
        self._apply(roots)
        self.move = "initial" if self.TUNE else "fixed"

    def _join_targets(self) -> np.ndarray | None:
        """Per template frame, the strand its join edge ends at: the tops of trees spawned
        before the same sync share it (they run at the same time); None without edges."""
        edges = getattr(self.ctx.trace, "edges", None)
        if edges is None:
            return None
        join = np.asarray(edges.kind) == EDGE_JOIN
        target = np.full(self.ctx.n_strands, -1, dtype=np.int64)
        target[np.asarray(edges.src)[join]] = np.asarray(edges.dst)[join]
        return target[self.ctx.frame_last_strand[self.frames0]]

    def _packing_veto(self) -> str | None:
        """Why this run skips packing after the first iteration (``None``: it packs).

        A hook, so a variant's own parameters stay in its class; LAWS never vetoes.
        """
        return None

    def _map_template(self) -> None:
        """Template position of every later frame, by position key (-1: not found)."""
        ctx = self.ctx
        keys0 = np.asarray(ctx.frame_key_hash)[self.frames0]
        order = np.argsort(keys0, kind="stable")
        sk = keys0[order]
        keys = np.asarray(ctx.frame_key_hash)
        pos = np.minimum(np.searchsorted(sk, keys), max(sk.size - 1, 0))
        it = self.it_dense
        hit = (sk.size > 0) & (sk[pos] == keys) & (it >= self.first_d)
        self.tmpl = np.where(hit, order[pos], -1)
        n_it = len(self.it_cycles)
        itm = np.where(it >= 0, it, n_it)
        self.it_frames = np.bincount(itm, minlength=n_it + 1)[:n_it]
        self.it_unmatched = np.bincount(itm[~hit], minlength=n_it + 1)[:n_it]

    def _dag_changed(self, it: int) -> bool:
        return bool(self.it_frames[it] != self.frames0.size or self.it_unmatched[it])

    def _apply(self, roots: np.ndarray) -> None:
        """Classify every frame by the CF roots (template positions)."""
        self.roots = np.asarray(roots, dtype=np.int64)
        n = self.tparent.size
        tcls = np.full(n, FREE, dtype=np.int64)
        tcls[self.roots] = CF_ROOT
        inside = tcls == CF_ROOT
        par = self.tparent
        for i in range(n):  # parents precede children
            q = par[i]
            if q >= 0 and inside[q]:
                inside[i] = True
                if tcls[i] != CF_ROOT:
                    tcls[i] = SOCKET_LOCAL
        fclass = np.where(self.tmpl >= 0, tcls[np.maximum(self.tmpl, 0)], FREE)
        self.fclass = fclass.tolist()
        self.scls = fclass[self.ctx.strand_frame].tolist()
        # iterations not started yet: their CF roots per home socket (a running one keeps
        # its count, and so the roots it has already started)
        n_it = len(self.roots_left)
        root = (fclass == CF_ROOT) & (self.it_dense > self.cur_it)
        per = np.zeros((n_it, self.S), dtype=np.int64)
        np.add.at(per, (self.it_dense[root], np.asarray(self.home)[root]), 1)
        for i in range(self.cur_it + 1, n_it):
            self.roots_left[i] = per[i].tolist()

    def _unpack(self, why: str) -> None:
        self.packed = False
        self.scls = [POOLED] * self.ctx.n_strands
        self.pool_mode = True
        self.tuner = None
        self._no_packing(why)

    def _no_packing(self, why: str) -> None:
        """The packing does not apply: allocator only (LAWS), or work stealing (CATS)."""
        if self.FALLBACK_WS:
            self._to_ws(f"{why}: ws")
        else:
            self.mode = f"{why}: allocator only"

    def _to_ws(self, mode: str) -> None:
        """Schedule the rest of the run by traditional work stealing (``mode`` says why)."""
        ws = ws_fallback(self, deques=self.dq)
        cores = self.ctx.cores
        for p, pool in enumerate(self.pools):
            # WS never reads the pools: a socket without a core of this job (only its CF
            # pool's stealers took from it) hands its pool to the job's first core
            h = self.ctx.head_core(p)
            if h is None and cores:
                h = cores[0]
            if pool and h is not None:
                self.dq.push_all(h, pool)
                pool.clear()
        self.ws = ws
        self.mode = mode

    def tuning_settled(self) -> bool:
        """Settled once the first (profiled) iteration has ended and Algorithm 1 is done
        ([LAWS15] §3.3.2: "the packing no longer changes"), or when nothing is tuned
        (LAWS-NC, CATS' single packing, a fallback to the allocator or to WS)."""
        if self.phase == 0:
            return False
        return self.tuner is None or self.tuner.done

    def record_fields(self) -> dict[str, Any]:
        """``iteration_cycles``, ``packing`` (per iteration), ``packing_mode``,
        ``allocator_shares`` and ``allocator_mismatch`` (:func:`allocator_fit`)."""
        its = [k for k in range(len(self.it_cycles)) if self.it_strands[k] > 0]
        return {
            "iteration_cycles": [int(self.it_cycles[k]) for k in its],
            "packing": self.packing_log,
            "packing_mode": self.mode,
            "allocator_shares": self.fit[0],
            "allocator_mismatch": self.fit[1],
        }


class LocalityAwareNC(LocalityAware):
    """LAWS-NC ([LAWS15] §6.3): the allocator and stealing without the DAG packer."""

    name: ClassVar[str] = "laws-nc"
    params_schema: ClassVar[ParamSchema] = ALLOCATOR_PARAMS
    PACK: ClassVar[bool] = False
    TUNE: ClassVar[bool] = False
