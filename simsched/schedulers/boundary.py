"""CAB's boundary level: Eqs. 1–4 of [CAB11] §III-B, the branching degree B, the CPU-bound rule.

Design
------
Pure functions over plain numbers and frame arrays; the ``cab`` scheduler calls them once
per run and puts :meth:`BoundaryChoice.as_record` in the result record.

**The model** ([CAB11] §III-B).  Main (level 0) spawns the root of a recursive
divide-and-conquer procedure (level 1), and every task of that procedure divides its data
into ``B`` parts, so level ``L >= 1`` holds ``B**(L-1)`` tasks.  The tasks at the boundary
level ``BL`` are the *leaf inter-socket tasks*, and

* Eq. 1, at least one leaf inter-socket task per socket:  ``B**(BL-1) >= M``;
* Eq. 2, a leaf inter-socket task's data fits the socket's shared cache:
  ``Sd / B**(BL-1) <= Sc``;
* Eq. 3, both solved for ``BL``:  ``BL >= log_B M + 1`` and ``BL >= log_B(Sd/Sc) + 1``;
* Eq. 4, the smallest such level (a larger one starves a squad of intra-socket tasks):
  ``BL = max(ceil(log_B M + 1), ceil(log_B(Sd/Sc) + 1))``.

Algorithm II step 2 sets ``BL = 0`` on a single socket (every task is intra-socket: plain
work stealing), and §IV-D / §V-D set ``BL = 0`` for CPU-bound programs.

**Exact arithmetic.**  ``ceil(log_B x + 1) = ceil(log_B x) + 1``, and ``ceil(log_B x)`` is
the smallest integer ``k`` with ``B**k >= x``.  :func:`boundary_level` finds that ``k`` with
integers only (``x = Sd/Sc`` is compared as ``Sc * B**k >= Sd``), because a float
logarithm errs exactly where the ceiling is decided, at exact powers of ``B`` — and the
paper's own example (§V-C, ``48 MB / 6 MB = 2**3``) is one: ``math.log(125, 5)`` is
``3.0000000000000004``, so a float Eq. 4 puts the boundary a level too deep for
``Sd/Sc = 125, B = 5`` (and ``math.log(1000, 10)`` is ``2.9999999999999996``).
The cache term may be ``<= 0`` (the data fits one cache); the socket term is then the
larger one since ``M >= 2``.

**Measuring B from a trace** (:func:`measure_branching`).  The paper takes ``B`` from the
command line and says a compiler could find it "by analyzing the source code based on the
pattern of task generation" (§IV-D): it is the number of spawns one invocation of the
recursive procedure makes, an integer property of the program.  simsched recovers it as
the **mode**, over the frames below main, of the number of their children that spawn in
turn (main is excluded: the model's level 1 is main's single child, and an iterative main
spawns once per iteration, which says nothing about the recursion).

*Recursive children*, not all children: the trace's branching column counts every spawn of
a frame, across its syncs, and a divide-and-conquer step often spawns workers of another
kind after its recursive calls.  Measured on a generated mergesort (2**18 keys), whose
``psort`` spawns two ``psort`` halves, syncs, then spawns ``k`` ``merge`` tasks: the mode
of the branching column is 4 and its mean 9.06, while the data is divided in 2 — the
recursive children give 2.  Frames just above the leaves have no recursive children and
are left out; when the recursion is a single level (every child a leaf), the branching
column is all there is and is used (``basis`` says which).

The *mode*, not the mean, because

* it is the integer the paper's model and Eq. 4 take (the mean of a halving recursion with a
  few odd splits is not the program's ``B``);
* it is what "the pattern of task generation" gives: the spawn count most invocations make;
* it ignores the few frames at the edges of the recursion (a remainder split) that the mean
  would average in.

Ties go to the smaller degree: a smaller ``B`` gives a deeper (never shallower) boundary,
so Eq. 1 and Eq. 2 still hold on the real DAG if its true degree is the larger one.  The
mean, the share of spawning frames that have the mode and whether the DAG is regular are
reported beside it, so an irregular DAG (LAWS' ``-ir`` programs) is visible in the record.

**CPU-bound programs** (:func:`is_cpu_bound`).  [CAB11] §IV-D's rule of thumb ("a large
data size is memory-bound") names no measure; simsched uses the one [LAWS15] §6.6 uses, the
*cache miss intensity* — misses per instruction — with the misses counted as references
that missed every per-core cache (the last-level private-cache misses that ``on_profile``
reports) over a run on one core.  The program is CPU-bound when its intensity is below
:data:`CPU_BOUND_MISS_INTENSITY` = 1e-3 (one private miss per thousand instructions).  Why
that value: a private miss costs at least a shared-cache hit and up to a memory access
(45 and 200 cycles on ``opteron-8380-4x4``) against about one cycle per instruction, so
at 1e-3 misses per instruction misses already take a visible share of the time (up to
about a sixth at 200 cycles).  Measured with simsched (one-core ``opteron-8380-4x4``,
``ws``, generated traces): heat 1026 x 1026, 2 iterations, 128-row leaves: 2.03e-2 (20x
above); mergesort of 2**18 four-byte keys (1 MB, twice the L2): 1.90e-3 (about 2x above,
so a program whose data barely exceeds the private caches sits near the line); fib(20):
4.6e-5 (20x below).  The threshold is a parameter of every function that uses it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from simsched.errors import ConfigError

# The validators moved to simsched.params; imported here for existing callers.
from simsched.params import check_int, check_ints  # noqa: F401
from simsched.trace.structure import has_children

#: Private-cache misses per instruction below which a program is CPU-bound ([LAWS15] §6.6
#: names the measure, not the value; the value is simsched's, see the module docstring).
CPU_BOUND_MISS_INTENSITY = 1e-3


def _ceil_log(num: int, den: int, base: int) -> int:
    """Smallest integer ``k`` (possibly negative) with ``base**k >= num / den``, exactly."""
    if num > den:
        k, p = 1, base
        while den * p < num:
            k, p = k + 1, p * base
        return k
    # num/den <= 1: k <= 0; step down while base**(k-1) >= num/den, i.e. den >= num*base**(1-k)
    k, p = 0, 1
    while den >= num * p * base:
        k, p = k - 1, p * base
    return k


@dataclass(frozen=True)
class BoundaryChoice:
    """CAB's boundary level with its inputs and the reason it was chosen.

    Attributes
    ----------
    bl
        The boundary level (0 = every task is intra-socket, i.e. plain work stealing).
    reason
        ``"single-socket"`` (Algorithm II step 2), ``"cpu-bound"`` (§V-D), ``"sockets"``
        (Eq. 1's term decides), ``"cache"`` (Eq. 2's term decides) or ``"both"``.
    branching, sockets, shared_cache, data_bytes
        ``B``, ``M``, ``Sc`` and ``Sd`` of Eq. 4.
    level_sockets, level_cache
        The two terms of Eq. 4, ``ceil(log_B M + 1)`` and ``ceil(log_B(Sd/Sc) + 1)``,
        the latter at least 1 (data that fits in one shared cache fits at the root's
        level); ``None`` when ``BL`` was fixed by the single-socket or CPU-bound rule.
    leaf_tasks
        ``B**(BL-1)``, leaf inter-socket tasks the model predicts (0 when ``BL = 0``).
    leaf_bytes
        ``Sd / B**(BL-1)``, data per leaf inter-socket task (``Sd`` when ``BL = 0``).
    miss_intensity, threshold
        The measured miss intensity and the CPU-bound threshold, when the rule was applied.
    eq4
        What Eq. 4 alone gives (before the cap of the third constraint).
    depth, level_intra
        The DAG's depth (deepest frame level) and the deepest ``BL`` that still leaves every
        leaf inter-socket task ``B**(depth - BL) >= N/M`` frames below it, one per worker of
        its squad (§III-B's third constraint); ``None`` when no depth was given.
    """

    bl: int
    reason: str
    branching: int
    sockets: int
    shared_cache: int
    data_bytes: int
    level_sockets: int | None
    level_cache: int | None
    leaf_tasks: int
    leaf_bytes: float
    miss_intensity: float | None = None
    threshold: float | None = None
    eq4: int | None = None
    depth: int | None = None
    level_intra: int | None = None

    def as_record(self) -> dict[str, Any]:
        """Flat dict for a result record (keys prefixed ``bl_``, ``bl`` itself unprefixed)."""
        d = asdict(self)
        out: dict[str, Any] = {"bl": d.pop("bl")}
        out.update({f"bl_{k}": v for k, v in d.items()})
        return out


def choose_boundary_level(
    B: int,
    M: int,
    Sc: int,
    Sd: int,
    *,
    miss_intensity: float | None = None,
    threshold: float = CPU_BOUND_MISS_INTENSITY,
    depth: int | None = None,
    cores_per_socket: int = 1,
    level_intra: int | None = None,
) -> BoundaryChoice:
    """CAB's boundary level by [CAB11] §III-B Eq. 4, with Algorithm II's and §V-D's zeros.

    Parameters
    ----------
    B
        Branching degree of the recursive procedure (integer >= 2), e.g. from
        :func:`measure_branching`.
    M
        Number of sockets (squads).
    Sc
        Shared-cache size of one socket in bytes.
    Sd
        Input data size of the program in bytes.
    miss_intensity
        Measured misses per instruction; when given and below ``threshold`` the program is
        CPU-bound and ``BL = 0`` ([CAB11] §V-D, see :func:`is_cpu_bound`).
    threshold
        CPU-bound threshold in misses per instruction.
    depth
        The DAG's depth (its deepest frame's level, main is 0).  When given, ``BL`` is
        capped by §III-B's third constraint ("a leaf inter-socket task should be large
        enough to enable a squad to have sufficient intra-socket tasks"), read as: the
        subtree of a leaf inter-socket task holds at least one frame per worker of the
        squad, ``B**(depth - BL) >= cores_per_socket``.  Eq. 4 only approximates this
        constraint by taking the smallest ``BL`` of Eq. 3, which for data much larger than
        the shared cache puts ``BL`` at or below the leaves.  If the cap leaves fewer
        leaf inter-socket tasks than sockets (Eq. 1), the DAG is too shallow for two
        tiers and ``BL = 0`` (reason ``"too-shallow"``).
    cores_per_socket
        ``N/M``, workers per squad (used with ``depth``).
    level_intra
        The third constraint's cap measured on the DAG itself (:func:`intra_level`);
        when given it replaces ``depth``'s full-tree estimate, which holds only for a DAG
        whose every task at a level divides alike.

    Returns
    -------
    BoundaryChoice
        ``bl``, the two terms of Eq. 4, the predicted leaf inter-socket tasks and their data.

    Raises
    ------
    ConfigError
        A parameter is not a positive integer (``B`` must be >= 2: Eq. 4 takes ``log_B``).
    """
    B = check_int("branching degree B", B, 2)
    M = check_int("sockets M", M, 1)
    Sc = check_int("shared cache Sc", Sc, 1)
    Sd = check_int("data size Sd", Sd, 1)
    base: dict[str, Any] = {"branching": B, "sockets": M, "shared_cache": Sc, "data_bytes": Sd}
    zero: dict[str, Any] = {
        "level_sockets": None,
        "level_cache": None,
        "leaf_tasks": 0,
        "leaf_bytes": float(Sd),
    }
    if M == 1:  # Algorithm II step 2: one squad, every task intra-socket
        return BoundaryChoice(0, "single-socket", **base, **zero)
    if miss_intensity is not None and is_cpu_bound(miss_intensity, threshold):
        return BoundaryChoice(
            0,
            "cpu-bound",
            **base,
            **zero,
            miss_intensity=float(miss_intensity),
            threshold=float(threshold),
        )
    lv_s = _ceil_log(M, 1, B) + 1  # Eq. 1 / Eq. 3 first line
    # Eq. 2 / Eq. 3 second line.  Levels count from 1 (the root task): data that fits
    # in one shared cache already fits at level 1, so the cache term is at least 1 (the
    # bare formula gives 0, -1, ... for data B, B**2, ... times smaller than the cache).
    lv_c = max(_ceil_log(Sd, Sc, B) + 1, 1)
    eq4 = bl = max(lv_s, lv_c)  # Eq. 4
    reason = "both" if lv_s == lv_c else ("sockets" if lv_s > lv_c else "cache")
    if depth is not None:
        depth = check_int("DAG depth", depth, 0)
    if level_intra is not None:
        level_intra = check_int("third-constraint level", level_intra, 0)
    elif depth is not None:
        cores = check_int("cores per socket", cores_per_socket, 1)
        level_intra = depth - _ceil_log(cores, 1, B)  # B**(depth - BL) >= cores
    if level_intra is not None:
        if bl > level_intra:
            bl, reason = (level_intra, "intra-tasks") if level_intra >= lv_s else (0, "too-shallow")
    leaves = B ** (bl - 1) if bl > 0 else 0
    return BoundaryChoice(
        bl,
        reason,
        **base,
        level_sockets=lv_s,
        level_cache=lv_c,
        leaf_tasks=leaves,
        leaf_bytes=Sd / leaves if leaves else float(Sd),
        miss_intensity=None if miss_intensity is None else float(miss_intensity),
        threshold=None if miss_intensity is None else float(threshold),
        eq4=eq4,
        depth=depth,
        level_intra=level_intra,
    )


def intra_level(parent: Any, level: Any, cores_per_socket: int) -> int:
    """The deepest ``BL`` that §III-B's third constraint allows on this very DAG.

    "A leaf inter-socket task should be large enough to enable a squad to have sufficient
    intra-socket tasks" ([CAB11] §III-B), read on the DAG: every frame at level ``BL``
    (a leaf inter-socket task) has at least ``N/M`` leaf frames in its subtree (itself,
    if it spawns nothing), one per worker of its squad — and so has every frame at the
    levels above it down to level 1.  On a DAG whose tasks all divide alike this is the
    full-tree bound ``B**(depth - BL) >= N/M`` that :func:`choose_boundary_level` takes
    from the depth; on an uneven DAG (a captured Cholesky factorisation, whose main
    spawns 24 tasks of 1 to 49 frames) only the DAG itself tells.

    Parameters
    ----------
    parent, level
        The frame table's parent (``-1`` for main) and level columns.
    cores_per_socket
        ``N/M``, workers per squad.

    Returns
    -------
    int
        The largest ``L >= 0`` such that every frame at levels ``1 .. L`` has at least
        ``cores_per_socket`` leaf frames below it (0: not even level 1 does).

    Examples
    --------
    Main, one root, two children of which one spawns two leaves:

    >>> intra_level([-1, 0, 1, 1, 2, 2], [0, 1, 2, 2, 3, 3], 2)
    1
    """
    cores = check_int("cores per socket", cores_per_socket, 1)
    par = np.asarray(parent, dtype=np.int64)
    lev = np.asarray(level, dtype=np.int64)
    if par.size == 0:
        return 0
    leaves = (~has_children(par)).astype(np.int64)
    # Deepest level first, so a frame's count is complete before it is added to its parent.
    for lv in range(int(lev.max()), 0, -1):
        idx = np.flatnonzero(lev == lv)
        np.add.at(leaves, par[idx], leaves[idx])
    out = 0
    for lv in range(1, int(lev.max()) + 1):
        at = leaves[lev == lv]
        if at.size == 0 or int(at.min()) < cores:
            break
        out = lv
    return out


def boundary_level(B: int, M: int, Sc: int, Sd: int) -> int:
    """``BL`` of [CAB11] §III-B Eq. 4 (0 on one socket, Algorithm II step 2).

    ``BL = max(ceil(log_B M + 1), ceil(log_B(Sd/Sc) + 1))`` evaluated exactly; see
    :func:`choose_boundary_level` for the parameters and the record of the choice.

    Examples
    --------
    [CAB11] §V-C: heat on a 3k x 2k grid of doubles (48 MB), four sockets of 6 MB L3:

    >>> boundary_level(2, 4, 6 << 20, 3072 * 2048 * 8)
    4
    """
    return choose_boundary_level(B, M, Sc, Sd).bl


def miss_intensity(misses: Any, instructions: Any) -> Any:
    """Cache miss intensity, misses per instruction ([LAWS15] §6.6).

    Parameters
    ----------
    misses, instructions
        Counts (scalars or arrays of the same shape); ``instructions`` must be positive.

    Returns
    -------
    float or numpy.ndarray
        ``misses / instructions`` (a float for scalar inputs).

    Raises
    ------
    ConfigError
        A count is negative or an instruction count is not positive.
    """
    m = np.asarray(misses, dtype=np.float64)
    n = np.asarray(instructions, dtype=np.float64)
    if m.shape != n.shape:
        raise ConfigError(f"misses {m.shape} and instructions {n.shape} differ in shape")
    if np.any(m < 0) or not np.all(np.isfinite(m)):
        raise ConfigError("misses must be finite and non-negative")
    if np.any(n <= 0) or not np.all(np.isfinite(n)):
        raise ConfigError("instructions must be finite and positive")
    r = m / n
    return float(r) if r.ndim == 0 else r


def is_cpu_bound(miss_intensity: float, threshold: float = CPU_BOUND_MISS_INTENSITY) -> bool:
    """Whether a program is CPU-bound, so that CAB uses ``BL = 0`` ([CAB11] §IV-D, §V-D).

    Parameters
    ----------
    miss_intensity
        Misses per instruction of the program (last-level private-cache misses over
        instructions of a one-core run, :func:`miss_intensity`).
    threshold
        Intensity below which the program is CPU-bound (default
        :data:`CPU_BOUND_MISS_INTENSITY`; the module docstring says why).

    Returns
    -------
    bool
        ``miss_intensity < threshold``.

    Raises
    ------
    ConfigError
        The intensity is negative or not finite, or the threshold is not positive.
    """
    x, t = float(miss_intensity), float(threshold)
    if not np.isfinite(x) or x < 0:
        raise ConfigError(f"miss intensity {miss_intensity!r} must be finite and >= 0")
    if not np.isfinite(t) or t <= 0:
        raise ConfigError(f"CPU-bound threshold {threshold!r} must be finite and > 0")
    return x < t


@dataclass(frozen=True)
class BranchingDegree:
    """Branching degree ``B`` of a trace's recursive procedure (see :func:`measure_branching`).

    Attributes
    ----------
    B
        Mode of the branching degree over the frames measured (ties: the smaller).
    mean
        Mean branching degree over the same frames.
    spawning_frames
        Number of frames measured.
    share
        Fraction of those frames whose degree is ``B``.
    regular
        Every frame measured has degree ``B``.
    basis
        ``"recursive children"`` (children that spawn themselves) or ``"all children"``
        (the trace's branching column, when no child below main spawns).
    """

    B: int
    mean: float
    spawning_frames: int
    share: float
    regular: bool
    basis: str

    def as_record(self) -> dict[str, Any]:
        """Flat dict for a result record (``branching`` is ``B``, the rest prefixed)."""
        return {
            "branching": self.B,
            "branching_mean": self.mean,
            "branching_spawning_frames": self.spawning_frames,
            "branching_share": self.share,
            "branching_regular": self.regular,
            "branching_basis": self.basis,
        }


def frame_arrays(parent: Any, **columns: Any) -> tuple[np.ndarray, ...]:
    """Validate a frame table's ``parent`` array and columns of the same length.

    Parameters
    ----------
    parent
        Per frame, its parent frame; ``-1`` marks a root.  Frames are numbered parents
        before children (``parent[f] < f``), as a trace numbers them.
    **columns
        Further per-frame arrays, by name (the name is used in error messages).

    Returns
    -------
    tuple of numpy.ndarray
        ``parent`` as int64, then the columns in the order given.

    Raises
    ------
    ConfigError
        ``parent`` is not a 1-D integer array numbered parents first, or a column's shape
        differs from it.
    """
    p = np.asarray(parent)
    if p.ndim != 1 or (p.size and p.dtype.kind not in "iu"):
        raise ConfigError("frame parents must be a 1-D integer array")
    p = p.astype(np.int64, copy=False)
    n = p.shape[0]
    if np.any(p < -1) or np.any(p >= np.arange(n)):
        raise ConfigError("frame parents must be -1 or a smaller frame number")
    out = [p]
    for name, col in columns.items():
        c = np.asarray(col)
        if c.shape != (n,):
            raise ConfigError(f"frame {name} has shape {c.shape}, expected ({n},) like parents")
        out.append(c)
    return tuple(out)


def measure_branching(branching: Any, level: Any, parent: Any) -> BranchingDegree:
    """Branching degree ``B`` of [CAB11] §III-B, measured from a trace's frame table.

    ``B`` is the mode, over the frames below main (level >= 1), of their number of
    *recursive* children (children that spawn in turn), counted where it is positive;
    when no child below main spawns (one level of recursion) it is the mode of the
    branching column over the frames below main that spawn.  The module docstring says
    why the mode, why recursive children and why main is excluded.

    Parameters
    ----------
    branching
        Per frame, the branching degree of its *parent* (the trace stores the parent's
        ``b`` on every child, as LAWS Eq. 1 uses it).
    level
        Per frame, its level (main is 0).
    parent
        Per frame, its parent frame (-1 for main); parents precede children.

    Returns
    -------
    BranchingDegree

    Raises
    ------
    ConfigError
        The arrays are malformed, or no frame below main spawns (the DAG has no recursive
        procedure: give ``bl`` explicitly).
    """
    p, br, lv = frame_arrays(parent, branching=branching, level=level)
    n = p.shape[0]
    child = np.flatnonzero(p >= 0)
    child = child[lv[p[child]] >= 1]  # children of frames below main
    if child.size == 0:
        raise ConfigError(
            "no frame below main spawns, so CAB's branching degree B cannot be measured; "
            "give bl explicitly"
        )
    spawns = has_children(p)
    recursive = np.bincount(p[child], weights=spawns[child], minlength=n).astype(np.int64)
    if recursive.any():
        basis = "recursive children"
        b = recursive[recursive > 0]
    else:  # one level of recursion only: every child is a leaf
        basis = "all children"
        _, first = np.unique(p[child], return_index=True)
        b = br[child[first]].astype(np.int64)
        if np.any(b < 1):
            raise ConfigError("frame branching degrees of spawned frames must be >= 1")
    counts = np.bincount(b)
    mode = int(np.argmax(counts))  # argmax returns the smallest degree among ties
    return BranchingDegree(
        B=mode,
        mean=float(b.mean()),
        spawning_frames=int(b.size),
        share=float(counts[mode] / b.size),
        regular=bool(counts[mode] == b.size),
        basis=basis,
    )


# -- Eq. 4's machine input ------------------------------------------------------------
def shared_cache_bytes(machine: Any) -> int:
    """``Sc`` of Eq. 4: the size of one socket's last shared cache level.

    A machine without a socket-scope level (every cache private) gives its last level's
    size, the most one core's data can use.

    Parameters
    ----------
    machine
        A resolved :class:`simsched.machine.Machine`.

    Returns
    -------
    int
        Bytes.
    """
    shared = [c for c in machine.caches if c.scope == "socket"]
    return int((shared or list(machine.caches))[-1].size)
