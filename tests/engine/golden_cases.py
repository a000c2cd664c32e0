"""Golden results of WS and PDF: the replay engine must keep reproducing them bit for bit.

``golden.json`` was written by the single-job engine before the multi-job restructure
(``python -m tests.engine.golden_cases``); the test replays the same cases through today's
engine and through the job-set path and compares every field.  Regenerate it only on a
deliberate change of the timing model, and say so in the commit.

The cases run the presets with blocking cores and no prefetcher, the timing model they
were written with, so they still pin it bit for bit now that the server presets have
out-of-order cores and prefetchers; a machine named ``<preset>+ooo`` runs the preset as
it is (docs/machine-model.md §6.1-6.2).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

SAMPLES = Path(__file__).resolve().parents[2] / "traces" / "samples"
GOLDEN = Path(__file__).with_name("golden") / "golden.json"

#: (trace file, machine, scheduler, params, seed, window)
CASES = [
    ("mergesort-16384-1024.valgrind.sst", "itrs-scaling-4", "ws", {}, 0, None),
    ("mergesort-16384-1024.valgrind.sst", "itrs-scaling-4", "ws", {}, 1, 0),
    ("mergesort-16384-1024.valgrind.sst", "itrs-scaling-4", "pdf", {}, 0, None),
    ("mergesort-16384-1024.valgrind.sst", "opteron-8380-4x4", "ws", {}, 2, None),
    ("mergesort-16384-1024.valgrind.sst", "opteron-8380-4x4", "pdf", {}, 0, 0),
    (
        "heat-128-4-8.valgrind.sst",
        "opteron-8380-4x4",
        "ws",
        {"spawn_policy": "parent-first"},
        0,
        None,
    ),
    ("heat-128-4-8.valgrind.sst", "itrs-scaling-1", "pdf", {}, 0, None),
    ("fib-16-6.valgrind.sst", "sunfire-x4600-8x4", "ws", {}, 3, None),
    ("mergesort-16384-1024.valgrind.sst", "opteron-8380-4x4+ooo", "ws", {}, 2, None),
    ("heat-128-4-8.valgrind.sst", "xeon-x7560-4x8+ooo", "pdf", {}, 0, 0),
]

#: suffix of a machine name that keeps the preset's own core model
OOO = "+ooo"

_FIELDS = (
    "makespan_cycles",
    "steal_attempts",
    "steals",
    "scheduler_counters",
    "busy_cycles",
    "sched_cycles",
    "idle_cycles",
    "private_misses",
    "dram_local",
    "dram_remote",
    "dram_writebacks",
    "queue_delay_cycles",
    "offchip_bytes",
)


def case_id(case: tuple) -> str:
    """Stable name of a golden case."""
    trace, machine, sched, params, seed, window = case
    p = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{trace.split('.')[0]}/{machine}/{sched}[{p}]/s{seed}/w{window}"


def digest(result) -> dict:
    """The compared content of one :class:`simsched.RunResult`."""
    rec = result.record
    out = {k: rec[k] for k in _FIELDS}
    for lv in result.mem_stats["levels"]:
        for f in ("accesses", "hits", "misses", "writebacks", "invalidations"):
            out[f"{lv['name']}_{f}"] = rec[f"{lv['name']}_{f}"]
    r = result.engine_result
    h = hashlib.sha256()
    for a in (r.strand_core, r.strand_start, r.strand_end):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    out["schedule_sha256"] = h.hexdigest()
    if isinstance(out["scheduler_counters"], str):
        out["scheduler_counters"] = json.loads(out["scheduler_counters"])
    return out


def run_case(case: tuple):
    """Replay one golden case with :func:`simsched.run`."""
    import simsched
    from simsched.machine import load_machine

    trace, machine, sched, params, seed, window = case
    if machine.endswith(OOO):
        m = load_machine(machine.removesuffix(OOO))
    else:
        m = blocking(load_machine(machine))
    return simsched.run(SAMPLES / trace, m, sched, params, seed, window=window, speedup=False)


def blocking(machine):
    """``machine`` with blocking cores and no prefetcher: the timing model before §6."""
    caches = tuple(c.model_copy(update={"prefetch": None}) for c in machine.caches)
    return machine.model_copy(update={"core": None, "caches": caches})


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    data = {case_id(c): digest(run_case(c)) for c in CASES}
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(data)} cases to {GOLDEN}")
