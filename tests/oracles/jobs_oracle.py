"""A slow, obviously correct replay of job sets: the oracle of the engine's multi-job path.

Pure Python, one reference at a time, strictly in global order, like
``engine_oracle.OracleEngine``, with several jobs: each job has its own DAG state, its
scheduler and the cores a processor controller gives it; a core changes jobs only
between strands.  At every step the earliest thing happens; ties go by (time, rank):

* rank 0: a core that finished its strand (lower core first);
* rank 1: arrivals, then the controller's quanta, then job schedulers' quanta, then core
  timers in the order they were set;
* rank 2: a running core issuing its next reference (lower core first).

A core that joins a job other than the last one it held is away for
``machine.costs.core_move`` cycles: no timer of it fires before then.  A finished strand
is reported to its job's scheduler by ``on_profile`` (its private-cache misses) before
anything else, as in ``engine_oracle``.  Cores are blocking or out-of-order as the
machine says (``engine_oracle.CoreTiming``); a strand ends after its last miss in flight,
so no miss follows a core to another job.

Controllers and the core-assignment rule are policy and shared with the engine
(``simsched.engine.controllers``); everything else here is written independently.
"""

from __future__ import annotations

import numpy as np

from simsched.engine.controllers import assign_cores
from simsched.engine.facts import TraceFacts
from simsched.engine.job import addr_offset
from simsched.memory.stacks import stack_layout
from simsched.schedulers.base import RETRY, RUN, SchedContext
from tests.oracles.engine_oracle import CoreTiming, prefetch_fills


class _Job:
    def __init__(self, jid, spec, machine, seed, wake):
        self.jid = jid
        self.arrival = spec.arrival
        tr = spec.trace
        n = tr.header.n_strands
        self.n = n
        self.off = addr_offset(jid)
        # Every core's own copy of the trace's stack region (docs/engine.md, per-core
        # stacks): moved by the issuing core, then placed in the job's address space.
        self.stacks = stack_layout(tr.header.stack, machine.cores)
        self.refs = []
        for s in range(n):
            ch = tr.strand_refs(s)
            self.refs.append(
                [
                    (int(a), int(z), bool(w), int(g), bool(d))
                    for a, z, w, g, d in zip(
                        ch.addr, ch.size, ch.write, ch.gap, ch.dep, strict=True
                    )
                ]
            )
        self.tail = [int(x) for x in tr.strands.tail]
        self.instr = [int(x) for x in tr.strands.instr]
        self.spmiss = [0] * n  # private-cache misses of every strand (the profile)
        self.preds = [0] * n
        self.succs = [[] for _ in range(n)]
        for a, b, k in zip(
            tr.edges.src.tolist(), tr.edges.dst.tolist(), tr.edges.kind.tolist(), strict=True
        ):
            self.succs[a].append((b, k))
            self.preds[b] += 1
        self.core = [-1] * n
        self.start = [-1] * n
        self.end = [-1] * n
        self.finished = 0
        self.cores = set()
        self.sleeping = set()
        self.started = -1
        self.finish = -1
        self.desire = None
        self.ctx = SchedContext(
            machine,
            (),
            tr,
            lambda n=None, cores=None: wake(self, n, cores),
            job=jid,
            facts=TraceFacts(tr, machine),
        )
        rng = np.random.default_rng(seed if jid == 0 else [seed, jid])
        self.sched = spec.scheduler(self.ctx, spec.params, rng)


class OracleJobs:
    """Replay ``specs`` (``simsched.engine.JobSpec``) on ``machine`` with ``memory``
    (the memory oracle) under ``controller``; :meth:`run` returns per-job records."""

    def __init__(self, machine, specs, controller, seed, memory):
        self.m = machine
        self.specs = specs
        self.ctl = controller
        self.seed = seed
        self.mem = memory
        self.P = machine.cores
        lat = [c.hit_latency for c in machine.caches if c.scope == "core"]
        self.pthresh = max(lat) if lat else -1
        self.socket_of = [machine.socket_of(c) for c in range(self.P)]

    def run(self):
        P = self.P
        jobs = [None] * len(self.specs)
        active = []
        owner = [-1] * P
        pending = [None] * P
        state = ["idle"] * P
        clock = [0] * P
        timing = CoreTiming(self.m)  # blocking or out-of-order cores
        cur = [None] * P  # (job, strand)
        pos = [0] * P
        timers = []  # [time, seq, core, generation]
        gen = [0] * P
        jq = []  # [time, seq, jid]
        seq = [0]
        now = [0]
        arrivals = sorted((int(s.arrival), j) for j, s in enumerate(self.specs))
        q = self.ctl.quantum
        next_q = [q if q > 0 else None]
        last = [-1] * P  # the last job each core held
        back = [0] * P  # a core that moved acts again from here
        moves = [0] * len(self.specs)

        def timer(t, c):
            timers.append((max(t, back[c]), seq[0], c, gen[c]))
            seq[0] += 1

        def wake(job, n, only):
            cand = sorted(job.sleeping if only is None else job.sleeping & set(only))
            if n is not None:
                cand = cand[: max(n, 0)]
            for c in cand:
                job.sleeping.discard(c)
                timer(now[0], c)

        def decide(job, c, t, dec):
            kind, s, cost = dec
            if kind == RUN:
                assert job.preds[s] == 0 and job.core[s] == -1
                job.core[s] = c
                job.start[s] = t + cost
                clock[c] = t + cost
                cur[c] = (job, s)
                pos[c] = 0
                state[c] = "run"
            elif kind == RETRY:
                timer(t + cost, c)
            else:
                job.sleeping.add(c)

        def leave(c, job):
            job.cores.discard(c)
            job.sleeping.discard(c)
            owner[c] = -1
            gen[c] += 1

        def join(c, job):
            if last[c] >= 0 and last[c] != job.jid:
                back[c] = now[0] + self.m.costs.core_move
                moves[job.jid] += 1
            last[c] = job.jid
            job.cores.add(c)
            owner[c] = job.jid
            gen[c] += 1

        def start_job(job, t):
            job.started = t
            job.ctx.set_cores(job.cores)
            job.sleeping = set(job.cores)
            job.sched.on_start(0, t)

        def reallocate(t):
            if self.ctl.uses_desire:  # before its first quantum a job desires its initial desire
                for j in active:
                    if j.desire is None and j.sched.initial_desire is not None:
                        j.desire = int(j.sched.initial_desire)
            targets = self.ctl.allot(t, active)
            by_socket = getattr(self.ctl, "placement", "sockets") == "sockets"
            want = assign_cores(
                {j.jid: frozenset(j.cores) for j in active},
                targets,
                self.socket_of if by_socket else [0] * P,
                {c for c in range(P) if state[c] != "idle"},
            )
            dest_of = [-1] * P
            for jid, cs in want.items():
                for c in cs:
                    dest_of[c] = jid
            added, removed = {}, {}
            for c in range(P):
                d, s = dest_of[c], owner[c]
                if state[c] != "idle":
                    pending[c] = None if d == s else d
                    continue
                if d == s:
                    continue
                if s >= 0:
                    leave(c, jobs[s])
                    removed.setdefault(s, []).append(c)
                if d >= 0:
                    join(c, jobs[d])
                    added.setdefault(d, []).append(c)
            for jid in sorted(set(added) | set(removed)):
                job = jobs[jid]
                if job.started < 0:
                    start_job(job, t)
                    continue
                job.ctx.set_cores(job.cores)
                job.sched.on_cores_changed(added.get(jid, []), removed.get(jid, []), t)
                for c in added.get(jid, []):
                    timer(t, c)

        left = len(self.specs)
        while left:
            cands = []
            for c in range(P):
                if state[c] == "run":
                    job, s = cur[c]
                    if pos[c] >= len(job.refs[s]):
                        clock[c] = timing.end(c, clock[c] + job.tail[s])
                        state[c] = "done"
                    else:
                        gap, dep = job.refs[s][pos[c]][3:]
                        cands.append((timing.issue(c, clock[c], gap, dep)[0], 2, c, "ref", c))
                if state[c] == "done":
                    cands.append((clock[c], 0, c, "done", c))
            if arrivals:
                cands.append((arrivals[0][0], 1, -4, "arrive", 0))
            if next_q[0] is not None:
                cands.append((next_q[0], 1, -3, "cquantum", 0))
            for t, sq, jid in jq:
                cands.append((t, 1, -2, "jquantum", (t, sq, jid)))
            for tm in timers:
                cands.append((tm[0], 1, tm[1], "timer", tm))
            assert cands, "deadlock"
            t, _, _, what, x = min(cands)
            if what == "ref":
                c = x
                job, s = cur[c]
                addr, size, write, gap, dep = job.refs[s][pos[c]]
                waited = timing.issue(c, clock[c], gap, dep)[1]
                st = job.stacks
                if st is not None and st.lo <= addr < st.hi:
                    addr += c * st.step
                fills = prefetch_fills(self.mem, c)
                lat = self.mem.access(c, addr + job.off, size, write, t)
                job.spmiss[s] += (lat > self.pthresh) + prefetch_fills(self.mem, c) - fills
                clock[c] = timing.served(c, gap, waited, t, lat)
                pos[c] += 1
                continue
            now[0] = t
            if what == "arrive":
                group = [j for tt, j in arrivals if tt == t]
                arrivals = [a for a in arrivals if a[0] != t]
                for j in group:
                    job = _Job(j, self.specs[j], self.m, self.seed, wake)
                    jobs[j] = job
                    if job.n == 0:
                        left -= 1
                        continue
                    active.append(job)
                    if job.sched.quantum > 0 and q == 0:
                        jq.append((t + job.sched.quantum, seq[0], j))
                        seq[0] += 1
                reallocate(t)
            elif what == "cquantum":
                next_q[0] = t + q
                for job in active:
                    if job.started >= 0:
                        job.desire = job.sched.on_quantum(t)
                reallocate(t)
            elif what == "jquantum":
                jq.remove(x)
                job = jobs[x[2]]
                if job.finished < job.n:
                    job.desire = job.sched.on_quantum(t)
                    jq.append((t + job.sched.quantum, seq[0], x[2]))
                    seq[0] += 1
            elif what == "timer":
                timers.remove(x)
                _, _, c, g = x
                if g == gen[c]:
                    job = jobs[owner[c]]
                    decide(job, c, t, job.sched.on_idle(c, t))
            else:  # a core finished its strand
                c = x
                job, s = cur[c]
                cur[c] = None
                state[c] = "idle"
                job.end[s] = t
                job.finished += 1
                ready, kinds = [], []
                for d, k in job.succs[s]:
                    job.preds[d] -= 1
                    if job.preds[d] == 0:
                        ready.append(d)
                        kinds.append(k)
                if job.sched.wants_profile:
                    job.sched.on_profile(s, c, job.start[s], t, job.instr[s], job.spmiss[s])
                if job.finished == job.n:
                    job.finish = t
                    for cc in sorted(job.cores):
                        owner[cc] = -1
                        gen[cc] += 1
                        pending[cc] = None
                    job.cores.clear()
                    job.sleeping.clear()
                    active.remove(job)
                    left -= 1
                    for cc in range(P):
                        if pending[cc] == job.jid:
                            pending[cc] = -1
                    if left:
                        reallocate(t)
                elif pending[c] is not None:
                    d = pending[c]
                    pending[c] = None
                    leave(c, job)
                    job.ctx.set_cores(job.cores)
                    job.sched.on_depart(c, s, t, ready, kinds)
                    job.sched.on_cores_changed((), (c,), t)
                    if d >= 0 and jobs[d] is not None and jobs[d].finished < jobs[d].n:
                        dj = jobs[d]
                        join(c, dj)
                        if dj.started < 0:
                            start_job(dj, t)
                        else:
                            dj.ctx.set_cores(dj.cores)
                            dj.sched.on_cores_changed((c,), (), t)
                            timer(t, c)
                else:
                    decide(job, c, t, job.sched.on_finish(c, s, t, ready, kinds))
        return [
            {
                "strand_core": np.array(j.core, dtype=np.int64),
                "strand_start": np.array(j.start, dtype=np.int64),
                "strand_end": np.array(j.end, dtype=np.int64),
                "start": j.started,
                "finish": j.finish,
                "counters": dict(j.sched.counters),
                "core_moves": moves[j.jid],
            }
            for j in jobs
        ]
