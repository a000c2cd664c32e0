"""Steady-state sampling benchmark: a 60-iteration heat under LAWS, detailed and sampled.

Prints one JSON line: the sampled makespan's error against the detailed one (%), whether
the detailed makespan lies in the sampled run's 95 % interval, the CPU seconds of both
runs (``time.process_time``: every thread of this process, so the chunk decoder counts)
and their ratio, wall seconds and the load average.  Targets (issue 23): within 2 % of the
detailed makespan and at least 3x cheaper in CPU time.  Both runs are in one process,
after a small warm-up run that loads the memory model's compiled kernels, and neither
computes the one-core baseline (``speedup=False``).

The workload is the medium LAWS study's heat (``experiments/laws/medium.yaml``: 8096
interior rows of 16 cells, leaves of 8 rows, on ``opteron-8380-4x4`` with caches / 64),
with 60 iterations instead of 20.

    python benchmarks/bench_sampling.py [--iters 60] [--samples 5] [--scheduler laws]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

MACHINE = "opteron-8380-4x4"
OVERRIDES = {"caches.L1.size": "1KB", "caches.L2.size": "8KB", "caches.L3.size": "96KB"}
HEAT = {"nx": 8098, "ny": 18, "cutoff": 8, "init": False}
TARGET_ERROR_PCT = 2.0
TARGET_CPU_SPEEDUP = 3.0


def _timed(fn):  # type: ignore[no-untyped-def]
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - t0


def main() -> None:
    """Run the benchmark and print its JSON line."""
    import simsched
    from simsched.workloads import generate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=60, help="iterations of the heat trace")
    ap.add_argument("--samples", type=int, default=5, help="--sample-iterations K")
    ap.add_argument("--scheduler", default="laws")
    a = ap.parse_args()
    load = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "warm.sst"
        trace = Path(tmp) / "heat.sst"
        generate("heat", small, **{**HEAT, "nx": 258, "iters": 2})
        generate("heat", trace, **{**HEAT, "iters": a.iters})

        def run(k: int | None) -> dict:
            return simsched.run(
                trace,
                MACHINE,
                a.scheduler,
                overrides=OVERRIDES,
                speedup=False,
                sample_iterations=k,
            ).record

        simsched.run(small, MACHINE, a.scheduler, overrides=OVERRIDES, speedup=False)
        full, cpu_full, wall_full = _timed(lambda: run(None))
        samp, cpu_samp, wall_samp = _timed(lambda: run(a.samples))
    lo, hi = json.loads(samp["makespan_ci95"])
    err = 100.0 * (samp["makespan_cycles"] / full["makespan_cycles"] - 1.0)
    out = {
        "benchmark": "sampling",
        "workload": f"heat nx={HEAT['nx']} ny={HEAT['ny']} iters={a.iters}",
        "machine": f"{MACHINE} caches/64",
        "scheduler": a.scheduler,
        "samples": a.samples,
        "sampled": samp["sampled"],
        "settled_at": samp["settled_at"],
        "detailed_iterations": samp["detailed_iterations"],
        "makespan_detailed": full["makespan_cycles"],
        "makespan_sampled": samp["makespan_cycles"],
        "error_pct": round(err, 3),
        "detailed_in_ci95": bool(lo <= full["makespan_cycles"] <= hi),
        "cpu_detailed_s": round(cpu_full, 2),
        "cpu_sampled_s": round(cpu_samp, 2),
        "cpu_speedup": round(cpu_full / cpu_samp, 2),
        "wall_detailed_s": round(wall_full, 2),
        "wall_sampled_s": round(wall_samp, 2),
        "loadavg_1m": load,
        "target_error_pct": TARGET_ERROR_PCT,
        "target_cpu_speedup": TARGET_CPU_SPEEDUP,
        "ok": bool(abs(err) <= TARGET_ERROR_PCT and cpu_full / cpu_samp >= TARGET_CPU_SPEEDUP),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
