"""Microbenchmarks on the memory model, beside the real machines' published figures.

``simsched calibrate`` runs, on a fresh :class:`MemorySystem` per benchmark:

* a **pointer chase**: one core reads :data:`CHASE_LINES` distinct lines in a random order,
  one 8-byte load per line, each issued when the previous one completed (each is marked
  dependent, so an out-of-order core cannot overlap them) (every line is a
  compulsory miss, so the mean latency is the memory latency the core sees); to the local
  node and to every remote node (the pages are placed there by first touch from a core
  of that node, which reads one line per page beforehand), and on a machine with socket
  links the mean per hop distance from socket 0;
* **STREAM-like kernels** (copy ``b[i] = a[i]``, triad ``a[i] = b[i] + s * c[i]``) with
  16-byte (SSE2) loads and stores and no other instructions between them, on one core,
  on every core of socket 0, and on every core of the machine; each core works on its own
  arrays (first touch puts them on its node).  A core first sweeps as many bytes as its
  share of the caches holds (warm-up: from then on every new line evicts an old, dirty
  one) and then an eighth as much more (at least
  :data:`MIN_LINES` lines per array), measured; bandwidth counts STREAM's bytes (copy 16,
  triad 24 per element, no write-allocate traffic) per core over its measured part,
  summed over the cores; for a socket and the machine, the **DRAM traffic** of the triad
  run too (every line fetched or written back, write-allocate included, over the run):
  the figure a controller's *peak* rate bounds, where STREAM's count of a triad can
  reach at most 24 / 32 of it;
* a **remote read**: every core of socket 0 sums arrays that live on node 1.

Cores are interleaved reference by reference in global time order by the replay
engine's window loop with window 0 (:data:`WINDOW`).  Nothing here
depends on a scheduler.  Results are deterministic for a machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.errors import ConfigError
from simsched.machine import Machine
from simsched.machine.published import PUBLISHED
from simsched.machine.topology import routes
from simsched.memory import window as W
from simsched.memory.system import MemorySystem

#: Lines read by one pointer chase.
CHASE_LINES = 4096
#: Interleaving window in cycles: 0, strict global order.  With the engine's default
#: window (100 cycles) a core may run ahead of the others and reach a controller first,
#: which costs four cores of one socket 20 % of their bandwidth on opteron-8380-4x4.
WINDOW = 0
#: Bytes per load or store of the STREAM kernels (one SSE2 register).
VEC = 16
#: Fewest lines per array a bandwidth run measures (small caches).
MIN_LINES = 256
#: Each core's arrays start at a multiple of this (no two cores share a page).
REGION = 1 << 32


def _first_touch(machine: Machine) -> Machine:
    mem = machine.memory.model_copy(update={"placement": "first-touch"})
    return machine.model_copy(update={"memory": mem})


def _cache_share(machine: Machine, sharers: int) -> int:
    """Bytes of cache one core owns when ``sharers`` cores of its socket are busy."""
    share = 0
    for c in machine.caches:
        share += c.size if c.scope == "core" else c.size // sharers
    return share


Stream = tuple[np.ndarray, np.ndarray, np.ndarray]


def _run(ms: MemorySystem, streams: dict[int, Stream], warm: int, start: int):
    """Serve each core's ``(addrs, writes, sizes)`` in global time order (the engine's
    window loop); return per-core clocks after its first ``warm`` references (the end of
    its warm-up) and at its end."""
    cores = ms.machine.cores
    width = max(s[0].shape[0] for s in streams.values())
    addr = np.zeros((cores, width), np.int64)
    write = np.zeros((cores, width), np.bool_)
    size = np.ones((cores, width), np.uint8)
    gap = np.zeros((cores, width), np.uint32)
    cs = np.zeros((W.NF, cores), np.int64)
    for c, (a, w, z) in streams.items():
        addr[c, : a.shape[0]] = a
        write[c, : w.shape[0]] = w
        size[c, : z.shape[0]] = z
        cs[W.F_SLOT, c] = c
        cs[W.F_CLOCK, c] = start
        cs[W.F_LEN, c] = warm  # the warm-up first: a refill marks its end
        cs[W.F_STATE, c] = W.S_RUN
    heap = np.zeros(cores, np.int64)
    mid: dict[int, int] = {}
    end: dict[int, int] = {}
    while True:
        code = ms.run_cores(
            ms.state,
            cs,
            heap,
            addr,
            size,
            write,
            np.zeros_like(write),
            gap,
            np.int64(W.INF),
            np.int64(WINDOW),
            np.int64(0),
            np.int64(ms.page_limit()),
        )
        kind, c = divmod(int(code), W.CODE_MUL)
        if kind == W.R_REFILL:
            mid[c] = int(cs[W.F_CLOCK, c])
            cs[W.F_LEN, c] = streams[c][0].shape[0]
            cs[W.F_LAST, c] = 1
            cs[W.F_STATE, c] = W.S_RUN
        elif kind == W.R_DONE:
            end[c] = int(cs[W.F_CLOCK, c])
            cs[W.F_STATE, c] = W.S_IDLE
        elif kind == W.R_GROW:
            ms.grow()
        elif kind == W.R_LIMIT:
            return mid, end
        else:  # pragma: no cover - the benchmarks' addresses are valid
            raise RuntimeError(f"calibration stream rejected by the memory model: {code}")


#: STREAM's bytes per element of each kernel (no write-allocate traffic).
STREAM_BYTES = {"copy": 16, "triad": 24, "read": 8}


def _kernel(kind: str, base: int, total: int, lo: int, hi: int, width: int) -> Stream:
    """References of elements ``lo..hi`` (doubles) of a STREAM kernel whose arrays hold
    ``total`` elements from ``base``, ``width`` bytes per load or store."""
    idx = np.arange(lo, hi, width // 8, dtype=np.int64) * 8
    span = total * 8 + 4096
    a, b, c = base, base + span, base + 2 * span
    if kind == "copy":  # b[i] = a[i]
        cols, flags = [a + idx, b + idx], [False, True]
    elif kind == "triad":  # a[i] = b[i] + s * c[i]
        cols, flags = [b + idx, c + idx, a + idx], [False, False, True]
    else:  # read: s += a[i]
        cols, flags = [a + idx], [False]
    addrs = np.stack(cols, axis=1).ravel()
    writes = np.tile(np.array(flags), idx.shape[0])
    return addrs, writes, np.full(addrs.shape[0], width, np.uint8)


def _bandwidth(
    machine: Machine, kind: str, cores: list[int], remote_node: int | None
) -> tuple[float, float]:
    """STREAM bandwidth in GB/s of ``kind`` run by ``cores`` together, and the DRAM
    traffic of the whole run in GB/s (lines fetched and written back, over the time from
    the start to the last core's end): what a controller's peak rate bounds."""
    ms = MemorySystem(machine)
    cps = machine.cores_per_socket
    busy = {machine.socket_of(c) for c in cores}
    sharers = max(sum(1 for c in cores if machine.socket_of(c) == s) for s in busy)
    arrays = STREAM_BYTES[kind] // 8
    # The warm-up sweeps the core's cache share over all its arrays, the measurement a
    # eighth as much more.  The warm-up moves whole lines (one reference per line): it
    # leaves the caches as the kernel would, with a quarter of the references.
    line = machine.caches[0].line
    per_line = max(min(line, 128) // 8, VEC // 8)
    warm_el = _cache_share(machine, sharers) // (arrays * 8) // per_line * per_line
    meas_el = max(warm_el // 8, MIN_LINES * per_line) // per_line * per_line
    total = warm_el + meas_el
    streams: dict[int, Stream] = {}
    warm = 0
    for c in cores:
        base = (c + 1) * REGION
        w = _kernel(kind, base, total, 0, warm_el, per_line * 8)
        m = _kernel(kind, base, total, warm_el, total, VEC)
        warm = w[0].shape[0]
        streams[c] = (
            np.concatenate([w[0], m[0]]),
            np.concatenate([w[1], m[1]]),
            np.concatenate([w[2], m[2]]),
        )
    measured = STREAM_BYTES[kind] * meas_el
    start = 0
    if remote_node is not None:
        # A core of the remote node reads one line of every page first: first touch puts
        # the pages there, and the line it caches is not in the readers' caches.
        page = machine.memory.page_size
        pages = np.unique(np.concatenate([s[0] for s in streams.values()]) // page) * page
        ms.access_batch(remote_node * cps, pages, 8, False, 0)
        start = ms.last_time
    before = _dram_lines(ms)
    mid, end = _run(ms, streams, warm, start)
    assert machine.clock_ghz is not None
    moved = (_dram_lines(ms) - before) * machine.caches[-1].line
    traffic = moved * machine.clock_ghz / (max(end.values()) - start)
    # The cores run side by side, so the machine's rate is the sum of theirs.
    return sum(measured * machine.clock_ghz / (end[c] - mid[c]) for c in cores), traffic


def _dram_lines(ms: MemorySystem) -> int:
    return sum(n["local"] + n["remote"] + n["writebacks"] for n in ms.stats()["nodes"])


def _chase_ns(machine: Machine, node: int) -> float:
    """Mean latency in ns of a pointer chase by core 0 through lines on ``node``."""
    ms = MemorySystem(machine)
    line = machine.caches[-1].line
    order = np.random.default_rng(0).permutation(CHASE_LINES).astype(np.int64)
    addrs = REGION + order * line
    if node:
        page = machine.memory.page_size
        pages = np.unique(addrs // page) * page
        ms.access_batch(node * machine.cores_per_socket, pages + line // 2, 8, False, 0)
    # Each load's address comes from the previous one: an out-of-order core cannot
    # overlap them.
    lat = ms.access_batch(0, addrs, 8, False, ms.last_time if node else 0, deps=True)
    assert machine.clock_ghz is not None
    return float(lat.mean()) / machine.clock_ghz


def calibrate(machine: Machine) -> dict[str, Any]:
    """Run the microbenchmarks on ``machine``'s memory model (module docstring).

    Parameters
    ----------
    machine
        The machine; it must give ``clock_ghz``.  Its placement is replaced by
        first-touch (the benchmarks place their data by touching it).

    Returns
    -------
    dict
        ``{"machine": name, "rows": [{"metric", "unit", "simulated", "published",
        "source"}]}``; ``published`` is None (and ``source`` says so) where no figure
        was found.

    Raises
    ------
    ConfigError
        The machine has no ``clock_ghz``.
    """
    if machine.clock_ghz is None:
        raise ConfigError(
            f"machine {machine.name!r}: clock_ghz is not set (calibrate reports ns and GB/s)"
        )
    m = _first_touch(machine)
    cps = m.cores_per_socket
    sim: dict[str, float] = {"latency_local_ns": _chase_ns(m, 0)}
    if m.sockets > 1:
        remote = {n: _chase_ns(m, n) for n in range(1, m.sockets)}
        sim["latency_remote_ns"] = sum(remote.values()) / len(remote)
        r = routes(m)
        if r is not None:
            # One row per hop distance from socket 0 (mean over the nodes that far).
            for h in sorted(set(r.hops[0]) - {0}):
                far = [remote[n] for n in remote if r.hops[0][n] == h]
                sim[f"latency_{h}hop_ns"] = sum(far) / len(far)
    socket0 = list(range(cps))
    everyone = list(range(m.cores))
    for label, cores in (("core", [0]), ("socket", socket0), ("machine", everyone)):
        sim[f"bandwidth_{label}_GBps"], traffic = _bandwidth(m, "triad", cores, None)
        sim[f"bandwidth_{label}_copy_GBps"] = _bandwidth(m, "copy", cores, None)[0]
        if label != "core":
            sim[f"dram_{label}_GBps"] = traffic
    if m.sockets > 1:
        sim["bandwidth_socket_remote_GBps"] = _bandwidth(m, "read", socket0, 1)[0]
    published = {p.metric: p for p in PUBLISHED.get(machine.name, ())}
    rows = []
    for metric, value in sim.items():
        p = published.get(metric)
        rows.append(
            {
                "metric": metric,
                "unit": "ns" if metric.endswith("_ns") else "GB/s",
                "simulated": round(value, 2),
                "published": None if p is None else p.value,
                "source": "no published figure recorded" if p is None else p.source,
            }
        )
    return {"machine": machine.name, "rows": rows}
