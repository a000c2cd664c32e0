"""The memory model's multi-core entry point: the window loop the replay engine drives.

This module is the written half of the memory/engine contract (docs/architecture.md §4):
the names below are the only things the engine knows about the memory model's kernels,
and the generated code is filled in from them, never from literal numbers.

Every generated memory module (:mod:`simsched.memory._kernels`) ends with
``run_cores``, built from :data:`DRIVER_TEMPLATE`.  It advances the running cores of the
machine through their reference buffers in approximately global time order and returns
at the next *event*:

* Per-core state is one int64 array ``cs`` of shape ``(NF, cores)``, fields ``F_*``.
  References are read in place from the rows of five 2-D arrays (``saddr``, ``ssize``,
  ``swrite``, ``sdep``, ``sgap``: one row per decoded trace chunk, the engine's chunk
  slots): a
  core reads row ``F_SLOT`` from ``F_POS`` to ``F_LEN`` and adds ``F_OFF`` to every
  address.  The engine sets these when it starts a strand or when the core reaches the
  end of a chunk before the end of its strand (``R_REFILL``); nothing is copied.
* A running core's *key* is the issue time of its next reference (its clock plus the
  reference's gap); a core whose strand is over has its finishing time as key and rank
  0; the engine's next own event (``limit``) ranks 1; references rank 2.  Ties go by
  (key, rank, core).  The running cores sit in a binary heap on these keys, so choosing
  the next core costs O(log cores) per window, not a scan.
* The core at the top serves references through ``_serve`` (the fused loop with its
  statistics in registers) while their issue time stays at most ``window`` cycles past
  the second-smallest key.  With ``window = 0`` this is a strict
  smallest-issue-time-first interleaving, reference by reference; a core with nothing
  else pending anywhere (a serial phase, a one-core machine) serves its whole buffer in
  one call.
* Return codes (``code * CODE_MUL + core``): ``R_DONE`` a core finished its strand (its
  clock is the finishing time), ``R_REFILL`` a core's buffer is used up before the end of
  its strand (it read up to ``F_LEN``), ``R_LIMIT`` the engine's own event is next (or nothing runs), ``R_GROW``
  the first-touch page table needs to grow (:meth:`MemorySystem.page_limit`),
  ``R_INVALID`` a reference the model cannot serve was met (traces are validated before
  replay, so this is a bug guard; the core and the status are left for the message).

The private-cache miss counter ``F_PMISS`` counts references whose latency exceeded
``pthresh`` (the largest hit latency of the per-core levels): the per-strand profile
CATS and LAWS read ([LAWS15] §3.3).
"""

from __future__ import annotations

# Fields of the per-core state array ``cs`` (rows).
F_STATE = 0  # S_* below
F_CLOCK = 1  # completion time of the core's previous reference (or the strand's start)
F_POS = 2  # next position in the core's buffer
F_LEN = 3  # number of valid references in the buffer
F_LAST = 4  # 1 when the buffer holds the end of the strand
F_TAIL = 5  # tail instructions of the strand (after its last reference)
F_PMISS = 6  # private-cache misses of the current strand
F_REFS = 7  # references issued by the core (all strands)
F_KEY = 8  # event key (scratch of the loop)
F_RANK = 9  # event rank (scratch of the loop)
F_SLOT = 10  # row of the reference arrays the core reads (a decoded trace chunk)
F_OFF = 11  # added to every address the core issues (its job's address space)
NF = 12

S_IDLE = 0
S_RUN = 1
S_DONE = 2
S_REFILL = 3

CODE_MUL = 1 << 20
R_DONE = 1
R_REFILL = 2
R_LIMIT = 3
R_GROW = 4
R_INVALID = 5

#: Event key meaning "never".
INF = 1 << 62

#: Signature of the generated entry point (pinned by tests/memory/test_contract.py).
DRIVER_SIGNATURE = (
    "run_cores(st, cs, heap, saddr, ssize, swrite, sdep, sgap, limit, window, pthresh, page_limit)"
)

DRIVER_TEMPLATE = """

@_jit_inline
def _before(cs, a, b):
    ka = cs[{F_KEY}, a]
    kb = cs[{F_KEY}, b]
    if ka != kb:
        return ka < kb
    ra = cs[{F_RANK}, a]
    rb = cs[{F_RANK}, b]
    if ra != rb:
        return ra < rb
    return a < b


@_jit_inline
def _settle(st, cs, sgap, c):
    # Key of running core c: its next reference's issue time (rank 2), or, past the end
    # of its strand, its finishing time (rank 0).  False: the buffer needs a refill.
    p = cs[{F_POS}, c]
    if p < cs[{F_LEN}, c]:
        cs[{F_KEY}, c] = cs[{F_CLOCK}, c] + np.int64(sgap[cs[{F_SLOT}, c], p])
        cs[{F_RANK}, c] = 2
        return True
    if cs[{F_LAST}, c] == 1:
        cs[{F_CLOCK}, c] += cs[{F_TAIL}, c]
        if {OOO}:
            # The strand ends when its last miss in flight completes.
            d = _drain(st, c)
            if d > cs[{F_CLOCK}, c]:
                cs[{F_CLOCK}, c] = d
        cs[{F_STATE}, c] = {S_DONE}
        cs[{F_KEY}, c] = cs[{F_CLOCK}, c]
        cs[{F_RANK}, c] = 0
        return True
    cs[{F_STATE}, c] = {S_REFILL}
    return False


@_jit_inline
def _sift_down(cs, heap, nh, j):
    while True:
        l = 2 * j + 1
        if l >= nh:
            return
        m = l
        if l + 1 < nh and _before(cs, heap[l + 1], heap[l]):
            m = l + 1
        if _before(cs, heap[m], heap[j]):
            x = heap[m]
            heap[m] = heap[j]
            heap[j] = x
            j = m
        else:
            return


@_jit
def run_cores(st, cs, heap, saddr, ssize, swrite, sdep, sgap, limit, window, pthresh, page_limit):
    MISC = st[{ST_MISC}]
    ncores = cs.shape[1]
    nolat = heap[:0]
    # A run-time True: a literal would make Numba compile ``_serve`` a second time for
    # ``Literal[bool](True)``, beside the plain ``bool`` of ``access_batch``'s calls (as
    # long again as the first, about 20 s for a three-level NUMA machine).
    use_gaps = ncores > 0
    # Heap of the cores that run or have finished (keys computed here).
    nh = 0
    for c in range(ncores):
        s = cs[{F_STATE}, c]
        if s == {S_RUN}:
            if not _settle(st, cs, sgap, c):
                return {R_REFILL} * {CODE_MUL} + c
        elif s == {S_DONE}:
            cs[{F_KEY}, c] = cs[{F_CLOCK}, c]
            cs[{F_RANK}, c] = 0
        else:
            continue
        j = nh
        heap[j] = c
        nh += 1
        while j > 0:
            q = (j - 1) >> 1
            if _before(cs, heap[j], heap[q]):
                x = heap[q]
                heap[q] = heap[j]
                heap[j] = x
                j = q
            else:
                break
    while True:
        if nh == 0:
            return {R_LIMIT} * {CODE_MUL}
        c = heap[0]
        k1 = cs[{F_KEY}, c]
        r1 = cs[{F_RANK}, c]
        if unlikely(limit < k1 or (limit == k1 and r1 > 1)):
            return {R_LIMIT} * {CODE_MUL}
        if unlikely(r1 == 0):
            return {R_DONE} * {CODE_MUL} + c
        # The second-smallest key: a child of the root, or the engine's limit.
        c2 = -1
        if nh > 1:
            c2 = heap[1]
            if nh > 2 and _before(cs, heap[2], c2):
                c2 = heap[2]
        k2 = limit
        r2 = 1
        if c2 >= 0 and cs[{F_KEY}, c2] < limit:
            k2 = cs[{F_KEY}, c2]
            r2 = cs[{F_RANK}, c2]
        else:
            c2 = -1
        if {FIRST_TOUCH} and unlikely(MISC[{MISC_PAGES}] >= page_limit):
            return {R_GROW} * {CODE_MUL}
        p = cs[{F_POS}, c]
        n = cs[{F_LEN}, c]
        r = cs[{F_SLOT}, c]
        i = _serve(
            st, c, saddr[r], ssize[r], swrite[r], sdep[r], sgap[r], use_gaps, cs[{F_CLOCK}, c], nolat,
            p, n,
            k2 + window, r2 == 2 and c < c2, pthresh, page_limit, cs[{F_OFF}, c],
        )
        cs[{F_REFS}, c] += i - p
        cs[{F_PMISS}, c] += MISC[{MISC_PMISS}]
        cs[{F_POS}, c] = i
        cs[{F_CLOCK}, c] = MISC[{MISC_TIME}]
        if unlikely(MISC[{MISC_STATUS}] != 0):
            return {R_INVALID} * {CODE_MUL} + c
        if unlikely(not _settle(st, cs, sgap, c)):
            return {R_REFILL} * {CODE_MUL} + c
        _sift_down(cs, heap, nh, 0)
"""


def driver_source(st_misc: int, first_touch: bool, misc: dict[str, int], ooo: bool = False) -> str:
    """Source of ``run_cores`` for a module whose MISC array is ``st[st_misc]``.

    Parameters
    ----------
    st_misc
        Index of the MISC array in the state tuple.
    first_touch
        Whether the module has a first-touch page table (then the loop stops for growth).
    misc
        The MISC field indices (``MISC_PAGES``, ``MISC_TIME``, ``MISC_STATUS``,
        ``MISC_PMISS``) of the generator.
    ooo
        Whether cores are out-of-order (a strand then ends when its misses in flight have
        completed: the module's ``_drain``).

    Returns
    -------
    str
        Python source, to be appended to a generated memory module.
    """
    names = {k: v for k, v in globals().items() if k.isupper() and isinstance(v, int)}
    return DRIVER_TEMPLATE.format(
        ST_MISC=st_misc,
        FIRST_TOUCH="True" if first_touch else "False",
        OOO="True" if ooo else "False",
        **names,
        **misc,
    )
