"""A test-only scheduler that keeps every level-1 subtree on one socket.

It exercises the multi-socket parts of the protocol: per-socket pools, the socket of
every core, frame levels and parents.  Each child of main (a level-1 frame) is given a
socket round robin by its spawn index; every strand of that subtree goes to that
socket's pool or to the deque of a core of that socket, and cores steal only inside their
socket.  Main's own strands (level 0) belong to socket 0.
"""

from __future__ import annotations

from collections import deque

from simsched.schedulers.base import WAIT, Scheduler, retry, run


class SubtreePerSocket(Scheduler):
    name = "test-subtree-socket"
    randomized = True

    def __init__(self, ctx, params, rng):
        super().__init__(ctx, params, rng)
        P = ctx.n_cores_total
        self.deques = [deque() for _ in range(P)]
        self.pool = [deque() for _ in range(ctx.sockets)]
        self.counters = {"steal_attempts": 0, "steals": 0}
        # Socket of every frame: that of its level-1 ancestor (main: socket 0).
        parent, level, idx = ctx.frame_parent, ctx.frame_level, ctx.frame_spawn_index
        self.frame_socket = [0] * len(parent)
        for f in range(len(parent)):
            if level[f] == 0:
                self.frame_socket[f] = 0
            elif level[f] == 1:
                self.frame_socket[f] = int(idx[f]) % ctx.sockets
            else:
                self.frame_socket[f] = self.frame_socket[int(parent[f])]

    def socket_of_strand(self, s):
        return self.frame_socket[int(self.ctx.strand_frame[s])]

    def _push(self, core, s):
        sock = self.socket_of_strand(s)
        if self.ctx.socket_of[core] == sock:
            self.deques[core].append(s)
        else:
            self.pool[sock].append(s)
        self.ctx.wake(None)

    def on_start(self, strand, now):
        self.pool[0].append(strand)
        self.ctx.wake(None)

    def on_finish(self, core, strand, now, ready, kinds):
        mine = [s for s in ready if self.socket_of_strand(s) == self.ctx.socket_of[core]]
        for s in ready:
            if not mine or s != mine[0]:
                self._push(core, s)
        if mine:
            return run(mine[0], 0)
        return self.on_idle(core, now)

    def on_idle(self, core, now):
        sock = int(self.ctx.socket_of[core])
        if self.deques[core]:
            return run(self.deques[core].pop(), 1)
        if self.pool[sock]:
            return run(self.pool[sock].popleft(), 2)
        victims = [v for v in self.ctx.cores_of_socket(sock) if v != core and self.deques[v]]
        if not victims:
            return WAIT
        self.counters["steal_attempts"] += 1
        v = victims[int(self.rng.integers(len(victims)))]
        self.counters["steals"] += 1
        return run(self.deques[v].popleft(), 3) if self.deques[v] else retry(3)
