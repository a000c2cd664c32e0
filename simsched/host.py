"""What this host can give a run: the memory a new allocation may take, and its speed.

:func:`available_bytes` is shared by the checks that refuse a run too large for the host
before it allocates anything (a machine's simulated state, the engine's chunk buffers, a
generated trace's memory) and by the trace reader, which keeps decoded references only
while they leave room.

:func:`speed_reference` times two fixed pieces of work, so that a wall or CPU time
measured here can be read beside how fast the host was at the time: the same host has run
the same code at a third of its usual speed on some days, whatever the load average said
(docs/performance.md, "Start-up").  The benchmarks print it at their start and end, the
sweep runner in every point's row.
"""

from __future__ import annotations

import os
import resource
import time
from typing import Any

#: Elements of the reference gather's array (32 MiB of 8-byte integers: larger than any
#: last-level cache this host is likely to have, so the gather waits on memory).
GATHER_ELEMENTS = 1 << 22
#: Random reads of one reference gather, and iterations of one reference loop.
GATHER_READS = 1 << 20
LOOP_ITERATIONS = 300_000

_GATHER: list[Any] = []  # (array, indices), made once per process


def available_bytes() -> int | None:
    """Bytes of memory this host can give a new allocation (Linux ``MemAvailable``, else
    free physical pages), or None when the host does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def process_cpu_s() -> float:
    """CPU seconds of this process (all its threads) and of its children that have ended
    (a capture's compiler and program, a benchmark's ``simsched`` child, pool workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def speed_reference(repeat: int = 1) -> tuple[float, float, float]:
    """CPU milliseconds of two fixed pieces of work on this host, the best of ``repeat``,
    and the CPU seconds the call took.

    ``python``: an interpreter loop of :data:`LOOP_ITERATIONS` integer operations, what
    the engine's Python control pays; ``gather``: :data:`GATHER_READS` random reads of a
    32 MiB array through numpy, bound by memory latency as the memory kernels' lookups
    are.  The array and its indices come from a fixed seed and are made once per process,
    so the work is the same in every call (about 25 ms of CPU on a fast day here).

    Returns
    -------
    (python_ms, gather_ms, spent_s)
    """
    spent = time.process_time()  # numpy's import and the array count as the reference's
    if not _GATHER:
        import numpy as np

        data = np.arange(GATHER_ELEMENTS, dtype=np.int64)
        _GATHER.extend((data, np.random.default_rng(0).integers(0, GATHER_ELEMENTS, GATHER_READS)))
        # Not timed: the first two passes in a process ran up to twice as long as the
        # later ones (29 ms, then 13 ms, on the same host a second apart), whatever the
        # host's speed.
        _reference_pass()
        _reference_pass()
    best = min((_reference_pass() for _ in range(max(1, repeat))), key=sum)
    return round(best[0] * 1e3, 2), round(best[1] * 1e3, 2), time.process_time() - spent


def _reference_pass() -> tuple[float, float]:
    """One timed pass of :func:`speed_reference`'s work: (loop, gather) CPU seconds."""
    data, idx = _GATHER
    t0 = time.process_time()
    acc = 0
    for i in range(LOOP_ITERATIONS):
        acc = (acc + i * 7) % 1_000_003
    t1 = time.process_time()
    int(data[idx].sum())
    return t1 - t0, time.process_time() - t1
