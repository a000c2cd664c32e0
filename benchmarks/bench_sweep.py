"""Sweep runner benchmark: per-point overhead and Dask scaling; prints ONE JSON line.

* ``overhead_s_per_point``: a local sweep (1 worker process) of points whose "simulation"
  sleeps a fixed time; the overhead is (sweep wall time − Σ sleep) / points.  It includes
  starting the worker process, writing point.json and row.json, and rebuilding the Parquet
  table at the end.  Target ≤ 0.5 s.
* ``dask_speedup_2_over_1``: ≥ 8 equal CPU-bound points (a pure-Python loop, so no library
  threads blur the measurement) on a local Dask cluster of 1 worker, then of 2 workers, each
  cluster started before its timer, measured back to back in this run.  Target ≥ 1.7× on an
  otherwise idle 2-core host.

Run: ``python benchmarks/bench_sweep.py [--points 8] [--work 40] [--sleep 0.5]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from simsched.experiments import load_spec, run_sweep

SPEC = """
name: bench
out: out-{tag}
workloads: [{{name: w, generator: bench, params: {{work: {work}, sleep: {sleep}}}}}]
machines: [itrs-scaling-1]
schedulers: [ws]
seeds: {{count: {points}}}
"""


def sleep_point(point, run_dir):
    """Stand-in simulation of fixed duration."""
    time.sleep(float(point.workload["params"]["sleep"]))
    return {"status": "ok", "wall_s": float(point.workload["params"]["sleep"])}


def busy_point(point, run_dir):
    """Stand-in simulation of fixed CPU work (``work`` million loop steps)."""
    t0 = time.perf_counter()
    acc = 0
    for i in range(int(point.workload["params"]["work"]) * 1_000_000):
        acc ^= i
    return {"status": "ok", "acc": acc, "wall_s": time.perf_counter() - t0}


def _spec(tmp: Path, name: str, **kw) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(SPEC.format(**kw))
    return path


def main() -> None:
    from _bench import emit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=8)
    ap.add_argument("--work", type=int, default=40, help="million loop steps per Dask point")
    ap.add_argument("--sleep", type=float, default=0.5, help="seconds per overhead point")
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        loaded = load_spec(
            _spec(tmp, "o", tag="o", work=0, sleep=args.sleep, points=args.points), small=False
        )
        t0 = time.perf_counter()
        run_sweep(loaded, workers=1, point_fn=sleep_point, progress=False)
        wall = time.perf_counter() - t0
        overhead = (wall - args.points * args.sleep) / args.points

        times = {}
        for n in (1, 2):
            spec = _spec(tmp, f"d{n}", tag=f"d{n}", work=args.work, sleep=0, points=args.points)
            loaded = load_spec(spec, small=False)
            with (
                LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster,
                Client(cluster) as client,
            ):
                client.wait_for_workers(n, timeout=120)
                t0 = time.perf_counter()
                report = run_sweep(
                    loaded,
                    executor="dask",
                    address=cluster.scheduler_address,
                    point_fn=busy_point,
                    progress=False,
                )
                times[n] = time.perf_counter() - t0
                assert report.ran == args.points and report.failed == 0, report.failures[:2]

    emit(
        {
            "bench": "sweep",
            "points": args.points,
            "overhead_s_per_point": round(overhead, 4),
            "overhead_target_s": 0.5,
            "dask_1_worker_s": round(times[1], 3),
            "dask_2_workers_s": round(times[2], 3),
            "dask_speedup_2_over_1": round(times[1] / times[2], 3),
            "dask_speedup_target": 1.7,
            "host_cpus": os.cpu_count(),
            "load_avg_1min": round(os.getloadavg()[0], 2),
        }
    )


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
