"""The engine's per-reference loop, as source appended to the generated memory module.

The memory model is generated per cache geometry (``simsched.memory``); the engine's
window loop is Python source (:data:`WINDOW_SOURCE`) handed to
``MemorySystem(machine, extra_source=WINDOW_SOURCE, extra_name=KERNEL_NAME)``, which
appends it to the generated module, so that ``engine_run`` calls the geometry's
``access`` directly, is compiled with the geometry's constants and cached on disk with it.

``engine_run`` advances the running cores through their reference buffers in
approximately global time order and returns to Python at the next *event* (a core that
finished its strand, a core whose buffer needs the next segment of its strand, or a
Python timer):

* Per-core state lives in one int64 array ``cs`` of shape ``(NF, cores)`` (fields
  ``F_*`` below) so that a call passes few arguments (dispatch cost is per argument).
* A running core's *key* is the issue time of its next reference (its clock plus the
  reference's gap of non-memory instructions, 1 cycle each); a finished core's key is its
  finishing time; the Python timer is ``limit``.  Ties are broken by (rank, core):
  finished cores (rank 0) before the timer (rank 1) before references (rank 2), lower core
  first.  The smallest key is the next event.
* Window scheme: the core with the smallest key issues references, one at a time
  through ``access``, while their issue time stays at most ``window`` cycles past the
  second-smallest key.  With ``window = 0`` the replay is a strict
  smallest-issue-time-first interleaving, reference by reference (the oracle's order);
  with ``window = W`` shared caches and memory controllers see references whose issue
  times are out of global order by at most ``W`` cycles.  (Serving windows through the
  memory model's faster batch loop was tried and dropped: a batch cannot stop at a time
  bound, and any overshoot past the bound is turned by the controllers' next-free-time
  model into queueing for every other core — docs/engine.md.)  The one exception is a
  core with nothing else pending anywhere (no other running core, no timer: a serial
  phase, a one-core run): its whole buffer goes through ``_batch``, the memory model's
  batch loop, which performs the same ``access`` sequence with its statistics in
  registers (about 8× faster).
* The memory model's first-touch page table grows between kernel calls
  (``MemorySystem.reserve``): the loop returns ``R_GROW`` before a window when the pages
  mapped (``st[-1][0]``, the memory model's MISC array) reach ``page_limit``, which Python
  keeps at least one window's worth of pages below the table's capacity.
* A reference costs the latency ``access`` returns; a strand's tail instructions are
  added when its last reference is done.  References whose latency exceeds ``pthresh``
  (the largest hit latency of the per-core levels) count as private-cache misses of the
  core (the per-strand profile CATS and LAWS read).
"""

from __future__ import annotations

KERNEL_NAME = "engine-window-v1"

# Fields of the per-core state array ``cs`` (rows).
F_STATE = 0  # 0 idle, 1 running, 2 finished (waiting for Python), 3 needs refill
F_CLOCK = 1  # time the core's previous reference completed (or the strand started)
F_POS = 2  # next position in the core's buffer
F_LEN = 3  # number of valid references in the buffer
F_LAST = 4  # 1 when the buffer holds the end of the strand
F_TAIL = 5  # tail instructions of the strand (after its last reference)
F_PMISS = 6  # private-cache misses of the current strand
F_REFS = 7  # references issued by the core (all strands)
NF = 8

S_IDLE = 0
S_RUN = 1
S_DONE = 2
S_REFILL = 3

# Return codes: code * CODE_MUL + core.
CODE_MUL = 1 << 20
R_DONE = 1
R_REFILL = 2
R_LIMIT = 3
R_GROW = 4

WINDOW_SOURCE = """

# ---- simsched.engine window loop (appended to the generated memory module) ----

@njit(cache=True, nogil=True)
def engine_run(
    st, cs, baddr, bsize, bwrite, bgap, lat, limit, window, pthresh, page_limit
):
    ncores = cs.shape[1]
    misc = st[len(st) - 1]
    while True:
        if misc[0] >= page_limit:
            return 4 * 1048576
        # The smallest and second-smallest event keys, ordered by (key, rank, core).
        k1 = limit
        r1 = 1
        c1 = -1
        k2 = limit
        r2 = 1
        c2 = -1
        for c in range(ncores):
            s = cs[0, c]
            if s == 1:
                p = cs[2, c]
                if p >= cs[3, c]:
                    if cs[4, c] == 1:
                        cs[1, c] += cs[5, c]
                        cs[0, c] = 2
                        key = cs[1, c]
                        rank = 0
                    else:
                        cs[0, c] = 3
                        return 2 * 1048576 + c
                else:
                    key = cs[1, c] + np.int64(bgap[c, p])
                    rank = 2
            elif s == 2:
                key = cs[1, c]
                rank = 0
            else:
                continue
            if key < k1 or (key == k1 and (rank < r1 or (rank == r1 and c < c1))):
                k2 = k1
                r2 = r1
                c2 = c1
                k1 = key
                r1 = rank
                c1 = c
            elif key < k2 or (key == k2 and (rank < r2 or (rank == r2 and c < c2))):
                k2 = key
                r2 = rank
                c2 = c
        if c1 < 0:
            return 3 * 1048576
        if r1 == 0:
            return 1 * 1048576 + c1
        # c1 issues references while their issue time stays within the window.
        c = c1
        bound = k2 + window
        wins_tie = r2 == 2 and c < c2
        p = cs[2, c]
        n = cs[3, c]
        clk = cs[1, c]
        pm = 0
        start = p
        if c2 < 0 and k2 >= 4611686018427387904:
            # Nothing else can happen before this core's buffer ends (no other running
            # core, no event): serve it with the memory model's batch loop, which makes
            # the same ``access`` sequence with its statistics kept in registers.
            i = _batch(
                st, c, baddr[c, :n], bsize[c, :n], bwrite[c, :n], bgap[c, :n], True, clk,
                lat, p, page_limit,
            )
            for j in range(p, i):
                if lat[j] > pthresh:
                    pm += 1
            clk = misc[2]
            cs[7, c] += i - start
            cs[6, c] += pm
            cs[2, c] = i
            cs[1, c] = clk
            if i < n:
                return 4 * 1048576
            continue
        while p < n:
            t = clk + np.int64(bgap[c, p])
            if t > bound or (t == bound and not wins_tie and p > start):
                break
            d = access(st, c, baddr[c, p], np.int64(bsize[c, p]), bwrite[c, p], t)
            if d > pthresh:
                pm += 1
            clk = t + d
            p += 1
        cs[7, c] += p - start
        cs[6, c] += pm
        cs[2, c] = p
        cs[1, c] = clk
"""
